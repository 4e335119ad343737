-- filewatchd schema, version 15: a file version records its permission bits (issue 27.6).
--
-- Until now a version kept only the executable bit, so a chmod 600 was "no change" and an undo
-- brought a 0600 secret back 0644. `mode` is `st_mode & 0o7777` of a file version; NULL for
-- other kinds, and for the file versions recorded before this migration, of which only the
-- executable bit is known: such a version equals any file of its content with the same
-- executable bit, and a rollback to it keeps the bits the file has, setting or clearing only the
-- executable ones (what every rollback did before).
ALTER TABLE versions ADD COLUMN mode INTEGER;

-- The latest version of every path present on disk is the one its stat-cache entry vouches
-- for, and that entry holds the `st_mode` the path was last seen with, equal to the version
-- by the rule of its time: it is what the version's bits are taken to be. Without them, a
-- chmod of any file recorded before the upgrade would go unseen until its content changed.
-- (Driven by path_state, each version found by its seq: linear in the paths.)
UPDATE versions
   SET mode = s.mode & 4095
  FROM path_state s
 WHERE versions.seq = s.seq AND versions.kind = 1;
