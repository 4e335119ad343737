-- filewatchd schema, version 13: each rollback's brief, kept beside its answer (issue 19.3).
--
-- `GET /v1/sessions/S/turns` lists the session's rollbacks with their target and how many
-- paths each did and skipped. Reading those from each stored answer parsed every action line
-- (780 kB of JSON for a 10,000-file rollback: 7.8 MB a call for ten of them). SQLite derives
-- the brief from the answer whenever the answer is written, so every writer (the journal, the
-- finish, a put-back, a start-up recovery) keeps it true without knowing of it. An answer that
-- is not JSON gives no brief (all NULL), as it gives no stored `Outcome`.
ALTER TABLE rollbacks ADD COLUMN brief_target TEXT;     -- the answer's target, as JSON
ALTER TABLE rollbacks ADD COLUMN brief_done INTEGER;    -- its actions with status done
ALTER TABLE rollbacks ADD COLUMN brief_skipped INTEGER; -- its skipped paths
ALTER TABLE rollbacks ADD COLUMN brief_recovery TEXT;   -- its recovery note

CREATE TRIGGER rollbacks_brief AFTER UPDATE OF outcome ON rollbacks
BEGIN
    UPDATE rollbacks
       SET brief_target = NULL, brief_done = NULL, brief_skipped = NULL, brief_recovery = NULL
     WHERE id = NEW.id;
    UPDATE rollbacks
       SET brief_target = json_extract(NEW.outcome, '$.target'),
           brief_done = (SELECT count(*) FROM json_each(NEW.outcome, '$.actions')
                          WHERE json_extract(value, '$.status') = 'done'),
           brief_skipped = coalesce(json_array_length(NEW.outcome, '$.skipped'), 0),
           brief_recovery = json_extract(NEW.outcome, '$.recovery')
     WHERE id = NEW.id AND json_valid(NEW.outcome);
END;

-- The rollbacks recorded before this version get theirs once, here.
UPDATE rollbacks
   SET brief_target = json_extract(outcome, '$.target'),
       brief_done = (SELECT count(*) FROM json_each(outcome, '$.actions')
                      WHERE json_extract(value, '$.status') = 'done'),
       brief_skipped = coalesce(json_array_length(outcome, '$.skipped'), 0),
       brief_recovery = json_extract(outcome, '$.recovery')
 WHERE outcome IS NOT NULL AND json_valid(outcome);
