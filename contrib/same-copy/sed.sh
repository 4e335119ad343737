#!/bin/bash
# sed.sh BIN TREE STATE [ROUNDS]: the 2,000-file `sed -i` of the cost bench in ONE copy of a
# tree, with the daemon watching it and stopped, in turn (the order swaps every round), so
# that no difference between copies enters the ratio (the cost bench itself works so since
# 5c58ea7; this is its sed alone, by hand). TREE and STATE are a cost bench's kept tree
# (`cargo bench --bench cost -- --only sed --pairs 1 --dir D`: D/tree, D/state); its
# `.git/bench-sed` lists the files. Every run rewrites every listed file with content never
# seen before (`s/fk[0-9]*/fkN/`, N the run's number; the first run turns each line's first
# `f` and letter into `fk0`). A stopped daemon is restarted after its run (untimed: it
# records that run's changes as made while it was stopped). A watched run is a turn, as an
# agent's command is: started before the clock starts, ended after it stops (the end marker
# timed on its own). Prints each run and the medians.
set -eu
BIN=$1 R=$2 S=$3 ROUNDS=${4:-9}
start() {
  rm -f "$S/daemon.json"
  "$BIN" serve --root "$R" --state-dir "$S" >> "$S/../same-copy.log" 2>&1 &
  until [ -s "$S/daemon.json" ]; do kill -0 $! 2>/dev/null || { tail "$S/../same-copy.log"; exit 1; }; sleep 0.05; done
  "$BIN" --state-dir "$S" status > /dev/null
}
stop() { "$BIN" --state-dir "$S" stop > /dev/null; }
fw() { "$BIN" --state-dir "$S" "$@" > /dev/null; }
ms_since() { echo $((($(date +%s%N) - $1) / 1000000)); }
n=0
run() {  # sets `took`: the sed's wall time in ms
  local script
  if [ $n = 0 ]; then script='s/f[a-z]/fk0/'; else script="s/fk[0-9]*/fk$n/"; fi
  n=$((n + 1))
  sync
  local t0
  t0=$(date +%s%N)
  (cd "$R" && xargs -0 sed -i -e "$script" -- < .git/bench-sed)
  took=$(ms_since "$t0")
}
watched_run() {  # sets `w` and `marker`
  fw turn start --session same-copy --label sed
  run
  w=$took
  local t0
  t0=$(date +%s%N)
  fw turn end --session same-copy
  marker=$(ms_since "$t0")
}
stopped_run() { stop; run; s=$took; start; }
start
watched=() stopped=() markers=()
for ((i = 0; i < ROUNDS; i++)); do
  if ((i % 2 == 0)); then
    watched_run; stopped_run
  else
    stopped_run; watched_run
  fi
  watched+=("$w") stopped+=("$s") markers+=("$marker")
  echo "round $((i + 1)): watched $w ms (turn end $marker ms, the CLI's start included), stopped $s ms"
done
stop
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
mw=$(median "${watched[@]}") ms=$(median "${stopped[@]}") mm=$(median "${markers[@]}")
echo "median: watched $mw ms, stopped $ms ms, ratio $(echo "scale=3; $mw / $ms" | bc); turn end $mm ms"
