-- filewatchd schema, version 1. Never edit a released migration: add the next file.

-- Every tracked path ever seen, as raw bytes relative to the root (non-UTF-8 names work).
CREATE TABLE paths (
    id   INTEGER PRIMARY KEY,
    path BLOB NOT NULL UNIQUE
);

-- Content-addressed blobs: blake3 of the raw bytes. Small blobs live inline in `data`;
-- larger ones are files in the blob directory (`data` is NULL).
CREATE TABLE blobs (
    hash        BLOB PRIMARY KEY,
    size        INTEGER NOT NULL,
    stored_size INTEGER NOT NULL,
    codec       INTEGER NOT NULL,          -- 0 raw, 1 zstd
    data        BLOB
) WITHOUT ROWID;

CREATE TABLE sessions (
    id          INTEGER PRIMARY KEY,
    name        TEXT NOT NULL UNIQUE,
    parent_id   INTEGER REFERENCES sessions(id),
    fork_turn   INTEGER,
    created_at  INTEGER NOT NULL           -- unix milliseconds
);

-- A turn's boundaries are sequence numbers: `before N` is the state of every path at
-- start_seq, `after N` the state at end_seq.
CREATE TABLE turns (
    id          INTEGER PRIMARY KEY,
    session_id  INTEGER NOT NULL REFERENCES sessions(id),
    number      INTEGER NOT NULL,
    ref         TEXT,
    label       TEXT,
    start_seq   INTEGER NOT NULL,
    end_seq     INTEGER,
    started_at  INTEGER NOT NULL,
    ended_at    INTEGER,
    UNIQUE (session_id, number)
);
CREATE INDEX turns_ref ON turns(session_id, ref);

-- The history: one row per recorded state of one path, numbered by one global sequence.
CREATE TABLE versions (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    path_id      INTEGER NOT NULL REFERENCES paths(id),
    kind         INTEGER NOT NULL,         -- 0 absent, 1 file, 2 symlink, 3 dir
    hash         BLOB,                     -- file content (also when too large)
    size         INTEGER,
    executable   INTEGER NOT NULL DEFAULT 0,
    link_target  BLOB,
    too_large    INTEGER NOT NULL DEFAULT 0,
    origin       INTEGER NOT NULL,         -- 0 turn, 1 ambiguous, 2 outside, 3 offline, 4 rollback
    turn_id      INTEGER REFERENCES turns(id),
    recorded_at  INTEGER NOT NULL          -- unix milliseconds
);
CREATE INDEX versions_path_seq ON versions(path_id, seq);
CREATE INDEX versions_turn ON versions(turn_id) WHERE turn_id IS NOT NULL;

-- The latest known state of every tracked path present on disk, with the stat data it was
-- read with: the stat cache that lets a restart re-hash only what changed.
CREATE TABLE path_state (
    path_id     INTEGER PRIMARY KEY REFERENCES paths(id),
    seq         INTEGER NOT NULL REFERENCES versions(seq),
    dev         INTEGER NOT NULL,
    ino         INTEGER NOT NULL,
    size        INTEGER NOT NULL,
    mtime_ns    INTEGER NOT NULL,
    ctime_ns    INTEGER NOT NULL,
    mode        INTEGER NOT NULL,
    checked_ns  INTEGER NOT NULL           -- when the stat was taken (racy-entry check)
);
