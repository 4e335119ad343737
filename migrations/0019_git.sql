-- filewatchd schema, version 19: the repository's state beside the files (issue 49).
--
-- What git keeps outside the work tree (HEAD, the branches and tags, the stash, the index) is
-- recorded whenever it changed at a marker, numbered from the versions' own sequence, so a
-- boundary (a turn's start_seq or end_seq, a rollback's target) sees the latest state at or
-- before it exactly as it sees each path's latest version. `refs` is JSON (`git::Refs`); the
-- index file's bytes are a blob (`index_hash`), compared by the digest of its entries
-- (`index_digest`: its stat data aside), with how its entries changed from the state before,
-- counted when it was recorded. Who moved it is decided as for a version.
CREATE TABLE git_states (
    seq          INTEGER PRIMARY KEY,
    refs         TEXT NOT NULL,
    index_hash   BLOB,
    index_digest BLOB,
    index_staged  INTEGER,  -- when the index changed: paths staged since the state before ...
    index_removed INTEGER,  -- ... and paths removed from it (NULL: not counted, or no change)
    origin       INTEGER NOT NULL,
    turn_id      INTEGER REFERENCES turns(id),
    rollback_id  INTEGER REFERENCES rollbacks(id),
    decided      INTEGER,
    recorded_at  INTEGER NOT NULL
);

-- The moves a rollback makes in git (JSON, `git::change::Move`), journaled with its steps so
-- that recovery finishes (or puts back) them with the files.
ALTER TABLE rollbacks ADD COLUMN git_moves TEXT;
