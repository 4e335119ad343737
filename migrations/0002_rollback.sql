-- filewatchd schema, version 2: rollbacks and their journal.

-- One rollback (a rollback to a boundary, an undo, a redo). Its plan is written durably
-- (status 'prepared') before the first file is touched; recovery at start-up finishes it.
CREATE TABLE rollbacks (
    id            INTEGER PRIMARY KEY,
    session_id    INTEGER REFERENCES sessions(id),   -- NULL for a time rollback
    op_id         TEXT UNIQUE,                       -- the client's operation id
    kind          TEXT NOT NULL,                     -- 'rollback', 'undo', 'redo'
    target_seq    INTEGER NOT NULL,                  -- the boundary rolled back to
    from_seq      INTEGER NOT NULL,                  -- latest seq when applied: what redo returns to
    position      INTEGER,                           -- the session's turn position after it
    prev_position INTEGER,                           -- ... and before it
    redo_of       INTEGER REFERENCES rollbacks(id),
    status        TEXT NOT NULL,                     -- 'prepared', 'committed', 'recovered'
    outcome       TEXT,                              -- the JSON answer, for op_id retries
    created_at    INTEGER NOT NULL,
    finished_at   INTEGER
);
CREATE INDEX rollbacks_session ON rollbacks(session_id, id);

-- The plan of a rollback: one row per path, applied in `ord` order.
CREATE TABLE rollback_steps (
    rollback_id   INTEGER NOT NULL REFERENCES rollbacks(id),
    ord           INTEGER NOT NULL,
    path_id       INTEGER NOT NULL REFERENCES paths(id),
    current_seq   INTEGER NOT NULL REFERENCES versions(seq),  -- the state expected on disk
    target_seq    INTEGER REFERENCES versions(seq),           -- NULL: the path must be absent
    done          INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (rollback_id, ord)
) WITHOUT ROWID;

-- Versions written by a rollback name it, so a session's own rollbacks are never its conflicts.
ALTER TABLE versions ADD COLUMN rollback_id INTEGER REFERENCES rollbacks(id);
