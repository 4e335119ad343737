#!/usr/bin/env bash
# The agent's own `sed -i` over 2,000 files on LazyFS (FUSE): the daemon running against it
# SIGSTOPped, alternating, for each build given; then the end marker after it.
#   contrib/fuse-cost/sed.sh PAIRS BIN...      (needs root, /dev/fuse, ../shared/tools/lazyfs.sh)
set -euo pipefail
pairs=$1; shift
here=$(cd "$(dirname "$0")/../.." && pwd)
lazyfs=${FILEWATCHD_SHARED:-$here/../shared}/tools/lazyfs.sh
dir=$(mktemp -d /tmp/fuse-cost.XXXXXX)
bash "$lazyfs" build "$here/target/lazyfs" >/dev/null
bash "$lazyfs" mount "$here/target/lazyfs" "$dir/mnt" "$dir/backing" >/dev/null
trap 'bash "$lazyfs" umount "$dir/mnt"; rm -rf "$dir"' EXIT
ws=$dir/mnt/ws
for d in $(seq -w 0 19); do mkdir -p "$ws/d$d"; for f in $(seq -w 0 99); do head -c 2000 /dev/urandom | base64 -w 100 | tr -d '/+' > "$ws/d$d/f$f.txt"; done; done
now() { date +%s%N; }
for bin in "$@"; do
  export FILEWATCHD_HOME=$dir/home-$(basename "$bin")
  (cd "$ws" && "$bin" start >/dev/null)
  dpid=$(cd "$ws" && "$bin" status --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["pid"])')
  run=(); stopped=(); marker=()
  for i in $(seq 1 "$pairs"); do
    for side in running stopped; do
      if [ $side = stopped ]; then kill -STOP "$dpid"; else (cd "$ws" && "$bin" turn start --session s --label sed >/dev/null); fi
      sync; t0=$(now); sed -i 's/a/A/g; s/e/a/g; s/A/e/g' "$ws"/d*/f*.txt; t1=$(now)
      if [ $side = stopped ]; then
        kill -CONT "$dpid"; stopped+=($(( (t1-t0)/1000000 )))
      else
        run+=($(( (t1-t0)/1000000 )))
        t2=$(now); (cd "$ws" && "$bin" turn end --session s >/dev/null); t3=$(now)
        marker+=($(( (t3-t2)/1000000 )))
      fi
    done
  done
  med() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
  echo "$(basename "$bin"): sed running $(med "${run[@]}") ms, stopped $(med "${stopped[@]}") ms, marker $(med "${marker[@]}") ms (medians of $pairs; running: ${run[*]}; stopped: ${stopped[*]})"
  (cd "$ws" && "$bin" stop >/dev/null)
done
