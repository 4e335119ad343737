#!/bin/bash
# undo-marker.sh BIN TREE STATE: spawn `BIN serve` on TREE (state in STATE), then a turn that
# appends a line to the first 10,000 files `find` lists, its end, its undo, and the next turn's
# start and end, printing the time of the undo and of that marker pair, and the watcher's
# overflows and rescans after it (a rollback whose own events overflow the kernel's queue
# costs a rescan of the whole workspace, which the next marker waits for).
set -eu
BIN=$1 R=$2 S=$3
. "$(dirname "$0")/spawn.sh"
spawn_ready undo-marker
post() { curl -s -X POST -H "Authorization: Bearer $tok" -H 'Content-Type: application/json' -d "$2" "$url$1"; }
secs() { echo "$(date +%s.%N) - $1" | bc; }
post /v1/sessions/bench/turns '{"label":"ten thousand"}' > /dev/null
(cd "$R" && find . -type f -name '*.rs' | head -10000 | xargs sed -i '$ a // edited')
post /v1/sessions/bench/turns/current/end '{}' > /dev/null
t0=$(date +%s.%N); post /v1/sessions/bench/undo '{}' > /dev/null; echo "undo s=$(secs "$t0")"
t0=$(date +%s.%N)
post /v1/sessions/bench/turns '{}' > /dev/null
post /v1/sessions/bench/turns/current/end '{}' > /dev/null
echo "next turn start+end s=$(secs "$t0")"
curl -s -H "Authorization: Bearer $tok" "$url/v1/status" \
  | python3 -c "import json,sys;w=json.load(sys.stdin)['watcher'];print('overflows=%s rescans=%s' % (w['overflows'], w['rescans']))"
kill -TERM $pid
wait $pid || true
