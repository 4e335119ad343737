-- filewatchd schema, version 8: the timeline (issue 17).
--
-- The agent whose hooks drive a session (`claude-code`, `codex`, ...), from the turn-start
-- body's `agent`; NULL for sessions marked by hand, and for every session before this version.
ALTER TABLE sessions ADD COLUMN agent TEXT;

-- The paths a rollback was restricted to (a one-path `restore`, `rollback PATHS...`): a JSON
-- array of their text forms (docs/api.md, Paths). NULL when it covered the whole workspace,
-- and for every rollback made before this version (the timeline shows those as whole ones).
ALTER TABLE rollbacks ADD COLUMN paths TEXT;

-- The timeline of every session pages through the turns by start time.
CREATE INDEX turns_started ON turns(started_at);
