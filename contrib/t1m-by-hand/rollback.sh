#!/bin/bash
# rollback.sh BIN TREE STATE [collect]: spawn `BIN serve` on TREE (state in STATE), then a turn
# that appends a line to the first 10,000 files `find` lists, its end, its undo and a
# collection, printing the time of each and the daemon's peak RSS (VmHWM) after it. With
# `collect`, the workspace keeps no history (`keep_days = 0`, `keep_turns = 0` in its
# .filewatchd.toml for the run), so the collection removes the 10,000 versions the undo
# superseded.
set -eu
BIN=$1 R=$2 S=$3
if [ "${4:-}" = collect ]; then
  printf 'keep_days = 0\nkeep_turns = 0\n' > "$R/.filewatchd.toml"
  trap 'rm -f "$R/.filewatchd.toml"' EXIT
fi
. "$(dirname "$0")/spawn.sh"
spawn_ready rollback
post() { curl -s -X POST -H "Authorization: Bearer $tok" -H 'Content-Type: application/json' -d "$2" "$url$1"; }
timed() { local t0 t1; t0=$(date +%s.%N); post "$1" "$2" > "$S/../answer.json"; t1=$(date +%s.%N); echo "$(echo "$t1 - $t0" | bc)"; }
echo "ready peak_rss_kb=$(hwm)"
post /v1/sessions/bench/turns '{"label":"ten thousand"}' > /dev/null
(cd "$R" && find . -type f -name '*.rs' | head -10000 | xargs sed -i '$ a // edited')
echo "turn end s=$(timed /v1/sessions/bench/turns/current/end '{}') peak_rss_kb=$(hwm)"
echo "undo s=$(timed /v1/sessions/bench/undo '{}') peak_rss_kb=$(hwm)"
echo "gc s=$(timed /v1/gc '{}') peak_rss_kb=$(hwm) $(python3 -c "import json;a=json.load(open('$S/../answer.json'));print('versions_removed=%s' % a.get('versions_removed'))")"
kill -TERM $pid
wait $pid || true
