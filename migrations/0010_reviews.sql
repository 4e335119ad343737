-- filewatchd schema, version 10: reviewed marks (issue 18).
--
-- A user marks a turn reviewed (`path` empty) or one file of it (`path`: the path as the
-- turn's changes name it). A mark is a row; unmarking deletes it. Turns are never deleted, so
-- a mark stays as long as its turn.
CREATE TABLE reviews (
    turn_id      INTEGER NOT NULL REFERENCES turns(id),
    path         BLOB NOT NULL,
    reviewed_at  INTEGER NOT NULL,        -- unix milliseconds
    PRIMARY KEY (turn_id, path)
) WITHOUT ROWID;
