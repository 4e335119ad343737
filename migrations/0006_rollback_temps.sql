-- filewatchd schema, version 6: a rollback's temp files carry a random tag of its own.
--
-- A temp file is named `.filewatchd-tmp-<temp_tag>-<ord>` (a revert's `...-<ord>r`): the
-- journal names every one before it is created, so the daemon only ever removes files it
-- made, and never takes one for a user's file. `temps_left` = 1 while some could not be
-- removed (a read-only file system): they are removed at the next start.
--
-- Statuses: 'prepared' (journaled, being applied), 'committed', 'recovered' (finished at
-- start-up), 'reverting' (failed, putting back what it changed: finished at start-up),
-- 'reverted' (failed, everything it changed put back; it did not happen).
ALTER TABLE rollbacks ADD COLUMN temp_tag TEXT;
ALTER TABLE rollbacks ADD COLUMN temps_left INTEGER NOT NULL DEFAULT 0;
