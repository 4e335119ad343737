#!/bin/bash
# restart.sh BIN TREE STATE [verify]: spawn `BIN serve` on TREE with the state (an index made
# before, e.g. by a first run of this script) in STATE, time spawn → `GET /v1/status` 200,
# and print the daemon's peak RSS (VmHWM) and CPU at that moment; with `verify`, then run
# `POST /v1/verify` and print its time and the peak RSS after it. The daemon is stopped at the
# end (SIGTERM). LOG=filewatchd=debug puts the survey's timings in $STATE/../restart.log.
set -eu
BIN=$1 R=$2 S=$3
mkdir -p "$S"
. "$(dirname "$0")/spawn.sh"
t0=$(date +%s.%N)
spawn_ready restart
t1=$(date +%s.%N)
cpu=$(awk '{print ($14 + $15) / 100}' /proc/$pid/stat)
out="ready_s=$(echo "$t1 - $t0" | bc) peak_rss_kb=$(hwm) cpu_s=$cpu"
if [ "${4:-}" = verify ]; then
  v0=$(date +%s.%N)
  changed=$(curl -s -X POST -H "Authorization: Bearer $tok" -H 'Content-Type: application/json' \
    -d '{}' "$url/v1/verify" | python3 -c "import json,sys;print(json.load(sys.stdin).get('changed'))")
  v1=$(date +%s.%N)
  out="$out verify_s=$(echo "$v1 - $v0" | bc) peak_rss_after_verify_kb=$(hwm) changed=$changed"
fi
kill -TERM $pid
wait $pid || true
echo "$out"
