-- filewatchd schema, version 4: blobs become a rowid table with a unique index on the hash.
-- A WITHOUT ROWID table keeps whole rows in its B-tree, and inline blobs of up to 64 KiB made
-- every insert move large cells (SQLite advises against WITHOUT ROWID for rows over ~1/20 of a
-- page); with a rowid the index stays small and the content lives in overflow pages.
CREATE TABLE blobs_v4 (
    id          INTEGER PRIMARY KEY,
    hash        BLOB NOT NULL UNIQUE,
    size        INTEGER NOT NULL,
    stored_size INTEGER NOT NULL,
    codec       INTEGER NOT NULL,          -- 0 raw, 1 zstd
    data        BLOB                       -- NULL: the blob is a file in the blob directory
);
INSERT INTO blobs_v4 (hash, size, stored_size, codec, data)
    SELECT hash, size, stored_size, codec, data FROM blobs;
DROP TABLE blobs;
ALTER TABLE blobs_v4 RENAME TO blobs;
