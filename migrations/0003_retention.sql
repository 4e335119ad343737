-- filewatchd schema, version 3: retention.

-- Small facts about the store: `horizon` is the oldest sequence number whose state is still
-- exact after garbage collection (boundaries before it expired); `last_gc` its time (ms).
CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value INTEGER NOT NULL
) WITHOUT ROWID;

-- Garbage collection finds blobs no version names any more.
CREATE INDEX versions_hash ON versions(hash) WHERE hash IS NOT NULL;
