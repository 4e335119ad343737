#!/bin/bash
# Runs one scenario against two filewatchd binaries and compares what they answer: the CLI
# (human and --json), the HTTP routes, and the MCP tools (with target/mcp-venv, which .ci/run
# makes). Times, pids, ports, cursors, login codes and the store's byte counts (git's index,
# which the store keeps, holds the files' times) are normalised; anything else that
# differs is printed as a diff, and the exit status is 1.
#
#   contrib/wire-compare/wire-compare.sh OLD_BIN NEW_BIN
#
# Used to show that a redesign changes no byte on the wire (issue 30).
set -u
for bin in "$@"; do
    # `stop` asks the API first; its fallback signals only a process named filewatchd.
    if [ "$(basename "$bin")" != filewatchd ]; then
        echo "wire-compare: $bin: give each build as a path ending in /filewatchd" >&2
        exit 2
    fi
done
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
work=$(mktemp -d /tmp/wire-compare.XXXXXX)

scenario() {
    local bin=$1 name=$2
    export FILEWATCHD_HOME=$work/home-$name NO_COLOR=1
    unset FILEWATCHD_SESSION FILEWATCHD_URL FILEWATCHD_TOKEN
    local ws=$work/ws-$name
    mkdir -p "$ws" && cd "$ws" || return 1
    r() { echo "\$ $*"; "$bin" "$@"; echo "[exit $?]"; }
    r log
    r start
    r turn start --session demo --label $'first prompt\nsecond line'
    printf '1\n2\n3\n' > bl.txt; printf '\0bin' > bin.dat; echo hello > a.txt
    mkdir d; echo b > d/b; printf 'x\ny\n' > lines.txt; ln -s a.txt link
    r turn end --session demo
    echo outside > c.txt
    r turn start --session demo --label t2
    printf '1\nTWO\n3\n' > bl.txt; echo changed > a.txt; rm d/b; mv lines.txt moved.txt; chmod +x moved.txt
    r turn end --session demo
    r turn start --session other --label "other's turn"
    echo o > o.txt
    r turn end --session other
    echo mine > a.txt; echo 4 >> bl.txt
    r undo --session demo
    r undo --session demo --skip-conflicts
    r redo --session demo
    r restore c.txt --before 1 --session demo --force
    r pin p1
    echo later > later.txt
    r rollback --pin p1 --force
    echo q > q.txt
    r turn start --session demo --label "  "
    r turn end --session demo
    # Git as part of the workspace (issue 49): a commit in a turn, then an ignored secret.
    export GIT_AUTHOR_DATE=2026-01-01T00:00:00Z GIT_COMMITTER_DATE=2026-01-01T00:00:00Z
    git init -q -b main . && printf '.env\nbuild/\n' > .gitignore
    git -c user.name=w -c user.email=w@x add -A && git -c user.name=w -c user.email=w@x commit -qm one
    r turn start --session demo --label git
    echo more >> a.txt; git -c user.name=w -c user.email=w@x commit -qam two; git checkout -qb topic
    echo SECRET=1 > .env
    r turn end --session demo
    r show 4 --no-pager
    r undo --session demo --dry-run
    r purge .env --yes
    r turn start --session demo
    r review --session demo --turn 1
    r stop
    echo found > found.txt; rm -f c.txt
    r start
    local a
    for a in "log" "log --all" "log --paths" "log --stat" "log --all --stat" "log -n 2" "log --all -n 3" \
        "log --unreviewed" "log --json" "log --all --json --paths" "log --all --json -n 2" \
        "log --session other" "log --session nope" "log --since 1h"; do
        r $a --no-pager
    done
    for a in 'blame bl.txt' 'blame bl.txt --json' 'blame bin.dat' 'blame bl.txt --seq 3' 'blame nope.txt' \
        'fork f1 --session demo --turn 1' 'fork f2 --session demo --turn 2 --json' 'fork f1 --session demo --turn 1' \
        'fork f3 --session demo --turn 99' 'review --session demo --turn 2 bl.txt' \
        'review --session demo --turn 2 a.txt --json' 'review --session demo --turn 2 nope.txt' \
        'review --session demo --turn 2 --json' 'review --session demo --turn 2 --undo' \
        'review --session demo --turn 2 --undo --json' 'ui --print-url' 'history bl.txt' 'history link --json' \
        'show 2 --no-pager' 'show 2 --json' 'status' 'pins' 'sessions'; do
        r $a
    done
    if [ -x "$repo/target/mcp-venv/bin/python" ]; then
        "$repo/target/mcp-venv/bin/python" "$here/mcp_calls.py" "$repo/target/mcp-venv/bin/python" \
            "$repo/tests/mcp/driver.py" "$bin"
    else
        echo "MCP skipped: no target/mcp-venv" >&2
    fi
    local url token
    url=$(grep -o 'http://127.0.0.1:[0-9]*' "$work/$name.out" | tail -1)
    token=$(cat "$FILEWATCHD_HOME"/projects/*/token)
    h() {
        echo "HTTP $1 $2 ${3:-}"
        curl -s -X "$1" -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
            ${3:+-d "$3"} "$url$2"
        echo
    }
    h GET /v1/status; h GET /v1/sessions; h GET /v1/sessions/demo/turns
    h GET '/v1/sessions/demo/turns/1?diff=true'; h GET /v1/sessions/demo/turns/2
    h GET '/v1/history?path=a.txt'; h GET '/v1/history?path=moved.txt'; h GET '/v1/history?path=link'
    h GET '/v1/timeline?paths=true'; h GET '/v1/timeline?limit=2'; h GET '/v1/timeline?limit=bad'
    h GET '/v1/blame?path=bl.txt'; h GET '/v1/blame?path=d'; h GET /v1/pins; h GET '/v1/content?path=bl.txt'
    h POST /v1/rollback '{"seq":5,"dry_run":true}'
    h POST /v1/gc '{"dry_run":true}'; h POST /v1/verify '{}'
    h PUT /v1/sessions/demo/turns/1/review '{"reviewed":true}'
    h POST /v1/sessions/demo/fork '{"new_session":"f9","turn":1}'; h POST /v1/sessions/demo/fork '{"new_session":"f9"}'
    r turn end --session demo
    h POST /v1/sessions/demo/undo '{"dry_run":true,"diff":true}'
    h POST /v1/sessions/demo/turns/2/revert '{"path":"bl.txt","dry_run":true}'
    h POST /v1/sessions/demo/rollback '{"to":"before","turn":2,"dry_run":true}'
    h GET /v1/nope
    h POST /v1/sessions/demo/rollback '{"to":"before","turn":"last","dry_run":true}'
    h POST /v1/sessions/demo/rollback '{"to":"before","turn":"2","dry_run":true}'
    h POST /v1/sessions/demo/rollback '{"to":"before","turn":1.5,"dry_run":true}'
    h POST /v1/sessions/demo/rollback '{"to":"before","turn":true,"dry_run":true}'
    h POST /v1/sessions/demo/rollback '{"to":"before","turn":"git","dry_run":true}'
    h POST /v1/sessions/demo/rollback '{"to":"before","turn":-1,"dry_run":true}'
    h POST /v1/sessions/demo/rollback '{"to":"before","dry_run":true}'
    h POST /v1/sessions/demo/undo 'not json'
    h POST /v1/purge '{"path":"nope"}'
    h POST /v1/purge '{}'
    h GET '/v1/sessions/demo/turns/4'
    for a in "turn end --session demo" "undo --session demo" "show 4 --json" "log --all --json --paths --no-pager"; do
        r $a
    done
    r stop
}

normalise() {
    sed -E 's/[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9:.]+(Z|[+-][0-9]{2}:[0-9]{2})?/TIME/g;
        s/pid [0-9]+/pid P/g; s/127\.0\.0\.1:[0-9]+/ADDR/g; s/(ws|home)-(old|new)/\1-X/g;
        s#/tmp/wire-compare\.[A-Za-z0-9]+#WORK#g;
        s/"cursor": ?"[^"]*"/"cursor": C/g; s/"next_before": ?"[^"]*"/"next_before": C/g;
        s/\\"cursor\\": ?\\"[^"]*\\"/CURSOR/g; s/code=[0-9a-f]+/code=K/g;
        s/"(duration|elapsed)_ms": ?[0-9]+/"\1_ms": T/g;
        s/(ws-X)-[0-9a-f]{12}/\1-H/g; s/"pid": ?[0-9]+/"pid": P/g;
        s/[0-9]+ ms/N ms/g; s/"(survey|total)_ms": ?[0-9]+/"\1_ms": T/g
        s/"(store_bytes|store_bytes_before|bytes_freed)": ?[0-9]+/"\1": B/g
        s/^store: +[0-9.]+ [KMG]?i?B of content/store: B of content/' "$1"
}

scenario "$1" old > "$work/old.out" 2>&1
scenario "$2" new > "$work/new.out" 2>&1
normalise "$work/old.out" > "$work/old.n"
normalise "$work/new.out" > "$work/new.n"
# The order in which one burst's files are recorded varies from run to run (the same binary
# against itself too), and with it their sequence numbers and what a request by number names.
seq_blind() {
    sed -E 's/"[a-z_]*seq": ?[0-9]+/"seq": N/g; s/(seq|#)[ ]?[0-9]+/\1N/g' "$1"
}
if diff "$work/old.n" "$work/new.n"; then
    echo "same: $(grep -c '^\$ ' "$work/new.n") commands, $(grep -c '^HTTP ' "$work/new.n") routes, $(grep -c '^MCP ' "$work/new.n") MCP calls ($work)"
elif diff -q <(seq_blind "$work/old.n") <(seq_blind "$work/new.n") >/dev/null; then
    echo "same but for sequence numbers: a burst was recorded in another order; run again ($work)"
    exit 3
else
    echo "differs ($work)"
    exit 1
fi
