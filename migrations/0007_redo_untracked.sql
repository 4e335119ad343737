-- filewatchd schema, version 7: redo by the rollback's own versions, and the tracked set.
--
-- A redo undoes exactly the rollback it names: the paths that rollback wrote a version for
-- (issue 15.3). Retention removes journal steps whose versions it collapses, never the
-- versions a pending redo comes back from; this index finds one rollback's versions.
CREATE INDEX versions_rollback ON versions(rollback_id) WHERE rollback_id IS NOT NULL;

-- versions.kind 4 is 'untracked' (issue 15.4): from this version on the path is hidden by an
-- ignore rule and what it holds is not recorded. A path that leaves the tracked set gets one;
-- a path coming into view that history has as absent (or never saw) gets one right before its
-- first version, meaning "untracked, not absent, until then". A rollback to a moment a path
-- was untracked leaves it alone. (No column changes: the new schema version keeps an older
-- filewatchd, which would read kind 4 as absent, from opening this index.)
