#!/usr/bin/env bash
# A killed undo's retry, by hand (not part of `cargo test`: its kill lands at a random moment):
# TRIALS times, a 2,000-file undo is killed with kill -9 at a random moment (up to MAXDELAY s),
# the daemon restarted, and the same undo retried with its op id: it must succeed (no conflict
# with the killed undo's own writes) and leave every file as before the turn.
# Usage: cargo build && tests/trials/undo_kill9.sh   (TRIALS=20 MAXDELAY=0.6 by default)
set -u
BIN=${BIN:-$(cd "$(dirname "$0")/../.." && pwd)/target/debug/filewatchd}
ok=0; bad=0
for t in $(seq 1 ${TRIALS:-20}); do
  base=$(mktemp -d /tmp/kt-XXXX); export HOME=$base/home FILEWATCHD_HOME=$base/home; mkdir -p $HOME
  ws=$base/ws; mkdir -p $ws; cd $ws
  for d in $(seq 0 19); do mkdir d$d; for i in $(seq 0 99); do echo "before $d $i" > d$d/f$i.txt; done; done
  $BIN start >/dev/null 2>&1 || { echo "start failed"; exit 1; }
  $BIN turn start --session s --label edit >/dev/null
  for d in $(seq 0 19); do for i in $(seq 0 99); do echo "after $d $i" > d$d/f$i.txt; done; done
  $BIN turn end --session s >/dev/null
  pid=$($BIN status --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["pid"])')
  $BIN undo --session s --op-id trial >/dev/null 2>&1 &
  upid=$!
  delay=$(python3 -c "import random; print(random.uniform(0.0, ${MAXDELAY:-0.6}))")
  sleep $delay
  kill -9 $pid; wait $upid 2>/dev/null
  while kill -0 $pid 2>/dev/null; do :; done
  $BIN start >/dev/null 2>&1 || { echo "trial $t: restart failed"; bad=$((bad+1)); continue; }
  # The restart may still be indexing (the CLI then says so): wait until it answers.
  for w in $(seq 1 600); do $BIN status >/dev/null 2>&1 && break; sleep 0.1; done
  out=$($BIN undo --session s --op-id trial 2>&1); rc=$?
  wrong=$(grep -L "^before" d*/f*.txt | wc -l)
  if [ $rc -eq 0 ] && [ $wrong -eq 0 ]; then ok=$((ok+1)); echo "trial $t (kill at ${delay}s): ok"
  else bad=$((bad+1)); echo "trial $t (kill at ${delay}s): rc=$rc wrong=$wrong"; echo "$out" | head -5; fi
  $BIN stop >/dev/null 2>&1; cd /; rm -rf $base
done
echo "ok $ok bad $bad"
