-- filewatchd schema, version 12: each ended turn's counts, stored, and gc in steps (issue 19.3).
--
-- `GET /v1/sessions/S/turns` lists every turn with its counts: computing 5,000 turns' net
-- changes on each call cost seconds. The engine stores a turn's counts (history's net
-- changes, as the answer gives them) when the turn ends; a turn without a row (ended before
-- this migration, or made stale below) is computed on read as before, and the engine fills
-- the missing rows in the background, a few turns per transaction.
CREATE TABLE turn_counts (
    turn_id   INTEGER PRIMARY KEY REFERENCES turns(id),
    added     INTEGER NOT NULL,
    modified  INTEGER NOT NULL,
    deleted   INTEGER NOT NULL,
    renamed   INTEGER NOT NULL,
    ambiguous INTEGER NOT NULL
);

-- A version attributed to a turn after its counts were stored (the verification pass
-- attributes what it finds by the time it changed, possibly to a turn already ended) makes
-- them stale. Retention drops the rows of the turns its collapse touches itself (store::gc).
CREATE TRIGGER turn_counts_stale AFTER INSERT ON versions WHEN NEW.turn_id IS NOT NULL
BEGIN
    DELETE FROM turn_counts WHERE turn_id = NEW.turn_id;
END;

-- A collection collapses the history a range of path ids at a time (retention::collection),
-- with the foreign-key checks of its deletions off (each deleted version cost a scan of
-- path_state and rollback_steps, whose seq columns have no index: minutes for 100,000
-- versions) and its own check of the range instead, which finds the journal rows by path.
CREATE INDEX rollback_steps_path ON rollback_steps(path_id);
