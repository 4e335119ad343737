-- filewatchd schema, version 9: pins (issue 17), named checkpoints.
--
-- A pin names one point of the history: the workspace as it was at `seq` (every path's latest
-- version with a sequence number at or below it). It was made at the end of a turn
-- (`session_id` and the turn's number in that session), at a time (`at`, unix milliseconds:
-- the time asked for), or at the moment it was made (neither). Retention keeps every version
-- a pin needs, whatever keep_days, keep_turns and max_store_bytes say; a rollback to a pin is
-- exact for as long as the pin exists. Deleting a pin lets the next collection go.
CREATE TABLE pins (
    id          INTEGER PRIMARY KEY,
    name        TEXT NOT NULL UNIQUE,
    seq         INTEGER NOT NULL,
    session_id  INTEGER REFERENCES sessions(id),
    turn        INTEGER,
    at          INTEGER,
    created_at  INTEGER NOT NULL           -- unix milliseconds
);
CREATE INDEX pins_seq ON pins(seq);
