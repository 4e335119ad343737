# Sourced by restart.sh and rollback.sh: spawn "$BIN" serve on "$R" (state in "$S", its log in
# "$S/../$1.log") and wait until `GET /v1/status` answers 200; sets pid, url and tok.
spawn_ready() {
  rm -f "$S/daemon.json"
  RUST_LOG=${LOG:-info} "$BIN" serve --root "$R" --state-dir "$S" > "$S/../$1.log" 2>&1 &
  pid=$!
  while :; do
    if [ -s "$S/daemon.json" ] && [ -s "$S/token" ]; then
      url=$(python3 -c "import json,sys;print(json.load(open(sys.argv[1]))['url'].rstrip('/'))" "$S/daemon.json")
      tok=$(cat "$S/token")
      code=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $tok" "$url/v1/status" || true)
      [ "$code" = 200 ] && return 0
    fi
    kill -0 $pid 2>/dev/null || { echo "the daemon exited:"; tail "$S/../$1.log"; exit 1; }
    sleep 0.005
  done
}
hwm() { awk '/VmHWM/ {print $2}' /proc/$pid/status; }
