-- filewatchd schema, version 13: the store's size kept as a counter beside the blob rows
-- (issue 19.3). Reading it (status, a collection's start and end) summed `stored_size` over
-- every blob row: 86 ms at a million versions, with the writer held. Triggers keep the
-- counter in the transaction that inserts or deletes a blob, so it is as durable as the rows;
-- the start-up integrity check compares it with the sum and corrects it if it ever drifts.
CREATE TABLE store_size (
    id    INTEGER PRIMARY KEY CHECK (id = 0),
    bytes INTEGER NOT NULL
);
INSERT INTO store_size (id, bytes) SELECT 0, coalesce(sum(stored_size), 0) FROM blobs;

CREATE TRIGGER store_size_insert AFTER INSERT ON blobs
BEGIN
    UPDATE store_size SET bytes = bytes + NEW.stored_size WHERE id = 0;
END;

CREATE TRIGGER store_size_delete AFTER DELETE ON blobs
BEGIN
    UPDATE store_size SET bytes = bytes - OLD.stored_size WHERE id = 0;
END;

CREATE TRIGGER store_size_update AFTER UPDATE OF stored_size ON blobs
BEGIN
    UPDATE store_size SET bytes = bytes - OLD.stored_size + NEW.stored_size WHERE id = 0;
END;
