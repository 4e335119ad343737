-- filewatchd schema, version 11: the timeline's writes outside any turn (issue 18).
--
-- The timeline looks, between each two turn boundaries, for the first and last version made
-- outside any turn (origin 2) or found by a scan (origin 3): two index probes per gap, so a
-- page costs what the turns cost, not what the history holds. Queries name the origin as a
-- literal (`origin = 2`), which is what lets SQLite use this partial index.
CREATE INDEX versions_unattributed ON versions(origin, seq) WHERE origin = 2 OR origin = 3;
