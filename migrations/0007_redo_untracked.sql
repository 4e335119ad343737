-- filewatchd schema, version 7: redo by the rollback's own versions.
--
-- A redo undoes exactly the rollback it names: the paths that rollback wrote a version for
-- (issue 15.3). Retention removes journal steps whose versions it collapses, never the
-- versions a pending redo comes back from; this index finds one rollback's versions.
CREATE INDEX versions_rollback ON versions(rollback_id) WHERE rollback_id IS NOT NULL;
