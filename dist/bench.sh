#!/usr/bin/env bash
# Two or more filewatchd binaries on the same benches, alternating, in one run (issue 52: the static
# musl build against the glibc build; docs/benchmarks.md, "Issue 52"):
#
#   dist/bench.sh [--rounds N] [--benches cost,scenarios] LABEL_A BIN_A LABEL_B BIN_B [...]
#
# Each round runs, for each binary in turn (the order rotating by one each round), the cost
# bench's `sed -i` over 2,000 files (G11: the command's ratio watched / unwatched and the end
# marker after it) and the scenarios bench at t100k (W6 first index, W1 turn end, W2 sed exit →
# end marker). Every run's Markdown goes to target/dist-bench/RUN/, and the rows compared are
# printed at the end, one line per run. The benches build nothing: `cargo bench --no-run
# --bench cost --bench scenarios` first.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=2
benches=cost,scenarios
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) rounds=$2 ;;
    --benches) benches=$2 ;;
    *) break ;;
  esac
  shift 2
done
if [ $# -lt 4 ] || [ $(($# % 2)) != 0 ]; then
  awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
  exit 2
fi
labels=()
bins=()
while [ $# -gt 0 ]; do
  [ -x "$2" ] || { echo "bench: $2 is not an executable" >&2; exit 2; }
  labels+=("$1")
  bins+=("$(realpath "$2")")
  shift 2
done
run=target/dist-bench/$(date -u +%Y%m%dT%H%M%S)
mkdir -p "$run"
{
  echo "# dist/bench.sh, $(date -u '+%Y-%m-%d %H:%M UTC'), $(git rev-parse --short HEAD)"
  for i in "${!labels[@]}"; do echo "- ${labels[i]}: ${bins[i]} ($(stat -c %s "${bins[i]}") bytes)"; done
  echo "- $(nproc) CPUs, $(uname -r), load at start: $(cut -d ' ' -f 1-3 /proc/loadavg)"
} | tee "$run/README.md"

n=${#labels[@]}
for ((r = 1; r <= rounds; r++)); do
  for ((k = 0; k < n; k++)); do
    i=$(((k + r - 1) % n))
    label=${labels[i]}
    bin=${bins[i]}
    echo "round $r: $label (load $(cut -d ' ' -f 1 /proc/loadavg))" >&2
    if [[ ,$benches, == *,cost,* ]]; then
      cargo bench --locked --bench cost -- --only sed --pairs 5 --bin "$bin" \
        >"$run/cost-$r-$label.md" 2>"$run/cost-$r-$label.log"
    fi
    if [[ ,$benches, == *,scenarios,* ]]; then
      cargo bench --locked --bench scenarios -- --only t100k --reps 10 --sed-reps 3 \
        --skip codex,w3a,w3b,w4,w5,w7,w8,verify,restart,au,w1d --bin "$bin" \
        >"$run/scenarios-$r-$label.md" 2>"$run/scenarios-$r-$label.log"
    fi
  done
done

echo "## rows compared (one line per run)"
for ((r = 1; r <= rounds; r++)); do
  for label in "${labels[@]}"; do
    echo "### round $r, $label"
    grep -hF "| \`sed -i\`" "$run/cost-$r-$label.md" 2>/dev/null || true
    grep -hE '^\| (W1|W2|W6)' "$run/scenarios-$r-$label.md" 2>/dev/null || true
  done
done | tee "$run/summary.md"
echo "runs in $run" >&2
