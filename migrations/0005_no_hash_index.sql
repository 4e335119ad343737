-- Every version inserted a random 32-byte key into this index, and every commit rewrote the
-- index pages those keys landed on: a large share of a first index's writes. Only garbage
-- collection used it, and it now builds one transient index per run instead.
DROP INDEX versions_hash;
