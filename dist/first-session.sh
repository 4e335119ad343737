#!/usr/bin/env bash
# README's first session against an installed filewatchd, in a new project under DIR:
# `start`, a turn whose bash-like commands change and remove a file, the turn's end marker,
# `undo` (which must put both back exactly), `stop`. Used by dist/test.sh on the host, inside
# a Debian chroot and under qemu-user, so it needs only bash, coreutils and sed.
#
#   dist/first-session.sh DIR
#
# FW: the command (default `filewatchd` from PATH; e.g. "qemu-aarch64-static ./filewatchd").
# FW_SERVE=1: run `serve` in the background and poll `status` instead of `start` (under
# qemu-user, where the binary cannot exec itself without binfmt_misc).
# FW_STARTED_AT: a file that gets the time (date +%s.%N) at which the daemon first answered.
set -euo pipefail
dir=${1:?usage: first-session.sh DIR}
read -r -a fw <<<"${FW:-filewatchd}"
fail() {
  echo "first session: $*" >&2
  exit 1
}

project=$dir/project
mkdir -p "$project/src"
cd "$project"
printf 'fn main() {}\nfn helper() {}\n' >src/main.rs
printf 'obsolete\n' >old.txt

if [ "${FW_SERVE:-0}" = 1 ]; then
  "${fw[@]}" serve >"$dir/serve.log" 2>&1 &
  serve_pid=$!
  # A session that fails leaves no daemon behind.
  trap 'kill "$serve_pid" 2>/dev/null || true' EXIT
  deadline=$((SECONDS + 120))
  # Until the daemon itself answers (`status` also answers while it is still indexing).
  until "${fw[@]}" status --json 2>/dev/null | grep -q '"tracked_files"'; do
    kill -0 "$serve_pid" 2>/dev/null || fail "serve exited: $(cat "$dir/serve.log")"
    [ $SECONDS -lt $deadline ] || fail "the daemon did not answer within 120 s"
  done
else
  "${fw[@]}" start
fi
[ -z "${FW_STARTED_AT:-}" ] || date +%s.%N >"$FW_STARTED_AT"

"${fw[@]}" turn start --session demo --label "rename fn to fx"
sed -i 's/fn/fx/' src/main.rs
rm old.txt
ended=$("${fw[@]}" turn end --session demo)
echo "$ended"
case "$ended" in
  *"+0 ~1 -1"*) ;;
  *) fail "the turn's end marker does not count one change and one removal: $ended" ;;
esac
"${fw[@]}" undo </dev/null
[ "$(cat src/main.rs)" = "$(printf 'fn main() {}\nfn helper() {}')" ] || fail "undo did not restore src/main.rs"
[ "$(cat old.txt)" = obsolete ] || fail "undo did not bring back old.txt"
"${fw[@]}" stop
if [ "${FW_SERVE:-0}" = 1 ]; then
  wait "$serve_pid" || fail "serve exited with status $? after stop"
fi
echo "first session: ok"
