-- filewatchd schema, version 17: whose a write is, and how that was decided (issue 48).
--
-- An agent whose hooks report its tool calls makes its turns `windowed`: a write inside one of
-- its calls is its own, a write between them (the turn open, no call open) is the person's. A
-- version keeps how its owner was decided (`model::Decided`: 0 the turn window, 1 a tool call,
-- 2 the file an edit tool names, 3 between tool calls, 4 the writing process by fanotify); NULL for versions older than this
-- schema, and for those no open turn could own (offline, rollback).
ALTER TABLE turns ADD COLUMN windowed INTEGER NOT NULL DEFAULT 0;
ALTER TABLE versions ADD COLUMN decided INTEGER;
