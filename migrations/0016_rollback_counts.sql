-- filewatchd schema, version 16: a rollback's brief says all a timeline entry shows of it.
--
-- The timeline showed each rollback's counts (paths added, modified, deleted, skipped, kept)
-- and who asked for it by parsing its whole stored answer, beside the brief SQLite keeps of the
-- same answer for the listing: two places deriving one fact. Now the brief holds the counts
-- too, and the trigger is their one rule; the answer itself is read only for the timeline's
-- paths. A path is added by a `create`, modified by a `restore`, `set_mode` or `relink`, and
-- deleted by a `delete` or `remove_dir`, each counted when its status is `done`.
ALTER TABLE rollbacks ADD COLUMN brief_added INTEGER;
ALTER TABLE rollbacks ADD COLUMN brief_modified INTEGER;
ALTER TABLE rollbacks ADD COLUMN brief_deleted INTEGER;
ALTER TABLE rollbacks ADD COLUMN brief_kept INTEGER;
ALTER TABLE rollbacks ADD COLUMN brief_actor TEXT;

DROP TRIGGER rollbacks_brief;
-- `brief_done` was the count of done actions: it is the sum of the three counts now.
ALTER TABLE rollbacks DROP COLUMN brief_done;

CREATE TRIGGER rollbacks_brief AFTER UPDATE OF outcome ON rollbacks
BEGIN
    UPDATE rollbacks
       SET brief_target = NULL, brief_added = NULL, brief_modified = NULL,
           brief_deleted = NULL, brief_skipped = NULL, brief_kept = NULL,
           brief_recovery = NULL, brief_actor = NULL
     WHERE id = NEW.id;
    UPDATE rollbacks
       SET brief_target = json_extract(NEW.outcome, '$.target'),
           (brief_added, brief_modified, brief_deleted) = (
               SELECT coalesce(sum(action = 'create'), 0),
                      coalesce(sum(action IN ('restore', 'set_mode', 'relink')), 0),
                      coalesce(sum(action IN ('delete', 'remove_dir')), 0)
                 FROM (SELECT json_extract(value, '$.action') AS action
                         FROM json_each(NEW.outcome, '$.actions')
                        WHERE json_extract(value, '$.status') = 'done')),
           brief_skipped = coalesce(json_array_length(NEW.outcome, '$.skipped'), 0),
           brief_kept = coalesce(json_array_length(NEW.outcome, '$.kept'), 0),
           brief_recovery = json_extract(NEW.outcome, '$.recovery'),
           brief_actor = json_extract(NEW.outcome, '$.actor')
     WHERE id = NEW.id AND json_valid(NEW.outcome);
END;

-- The rollbacks recorded before this version: writing each answer again runs the rule above.
UPDATE rollbacks SET outcome = outcome WHERE outcome IS NOT NULL;
