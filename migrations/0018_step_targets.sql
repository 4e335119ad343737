-- filewatchd schema, version 18: a rollback step whose target no version holds yet.
--
-- A session's undo that keeps someone's later change by a merge of lines, and a hunk's revert,
-- write content no version holds: the step has no target_seq, which recovery read as "the
-- path must be absent". The target file's content hash, size and permission bits are kept on
-- the step instead (its blob is stored before the journal is written), so a crash mid-way
-- finishes (or puts back) the file as planned.
ALTER TABLE rollback_steps ADD COLUMN target_hash BLOB;
ALTER TABLE rollback_steps ADD COLUMN target_size INTEGER;
ALTER TABLE rollback_steps ADD COLUMN target_executable INTEGER;
ALTER TABLE rollback_steps ADD COLUMN target_mode INTEGER;
