#!/usr/bin/env bash
# The run history at scale (issue 37): 10,000 runs kept, then how long `history` takes to
# answer and how big the file is. Targets: `history trend` under 200 ms, the file under
# 200 MB.
#   bench/history.sh                  # results in bench/results/<date>-history.md
# Env: BARRAGE_BIN (default <repo>/target/release/barrage), RUNS (10000), SECONDS_PER_RUN
#   (10: each run kept has that many intervals' histograms, as a 10 s run has), TAG.
# Each kept run is a real results file: one run of SECONDS_PER_RUN against `barrage serve`
# on loopback, imported RUNS times (each import is a run of its own in one series).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
BIN="${BARRAGE_BIN:-${CARGO_TARGET_DIR:-$ROOT/target}/release/barrage}"
RUNS="${RUNS:-10000}"
SECONDS_PER_RUN="${SECONDS_PER_RUN:-10}"
STAMP="$(date -u +%Y-%m-%d_%H%M%S)"
OUT="$HERE/results/${STAMP}-history${TAG:+-$TAG}.md"
[ -x "$BIN" ] || { echo "no barrage binary at $BIN (cargo build --release)" >&2; exit 1; }
WORK="$(mktemp -d /tmp/barrage-history-bench.XXXXXX)"
trap 'kill "$(cat "$WORK/serve.pid" 2>/dev/null)" 2>/dev/null || true; rm -rf "$WORK"' EXIT

"$BIN" serve --listen 127.0.0.1:0 --threads 1 > "$WORK/serve.out" 2>&1 &
echo $! > "$WORK/serve.pid"
for _ in $(seq 1 50); do grep -q listening "$WORK/serve.out" && break; sleep 0.1; done
URL="$(grep -o 'http://[0-9.:]*' "$WORK/serve.out" | head -1)/delay/1"
"$BIN" run "$URL" --rate 200 -d "${SECONDS_PER_RUN}s" -o "$WORK/run.brg" --no-history > /dev/null
DB="$WORK/history.db"
# Imported in batches of 1,000 (each file given 1,000 times): each a run of its own.
start=$(date +%s.%N)
for _ in $(seq 1 $((RUNS / 1000))); do
    mapfile -t files < <(yes "$WORK/run.brg" | head -1000)
    "$BIN" history import --history "$DB" "${files[@]}" > /dev/null
done
import_s=$(echo "$(date +%s.%N) - $start" | bc)

# Milliseconds of the best of 5 runs of a command (the first warms the page cache).
best_ms() {
    local best=999999
    for _ in 1 2 3 4 5; do
        local t0 t1 ms
        t0=$(date +%s%N)
        "$@" > /dev/null
        t1=$(date +%s%N)
        ms=$(( (t1 - t0) / 1000000 ))
        [ "$ms" -lt "$best" ] && best=$ms
    done
    echo "$best"
}
trend_ms=$(best_ms "$BIN" history trend p99 --history "$DB")
trend_all_ms=$(best_ms "$BIN" history trend p99 --last "$RUNS" --history "$DB")
check_ms=$(best_ms "$BIN" history check --history "$DB")
list_ms=$(best_ms "$BIN" history list --history "$DB")
show_ms=$(best_ms "$BIN" history show 1 --history "$DB")
bytes=$(stat -c %s "$DB")
runs=$("$BIN" history list --series --format json --history "$DB" | python3 -c 'import json,sys; print(sum(s["runs"] for s in json.load(sys.stdin)))')
mib() { echo "scale=1; $1 / 1048576" | bc; }
verdict() { [ "$1" -lt "$2" ] && echo "yes" || echo "NO"; }
{
    echo "# The run history at $runs runs: $STAMP"
    echo
    echo '```'
    echo "host=$(hostname) cpus=$(nproc) cpu='$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)' kernel=$(uname -r)"
    echo "commit=$(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet || echo +dirty)"
    echo "each run: ${SECONDS_PER_RUN} intervals of a ${SECONDS_PER_RUN}s run at 200/s; imported in ${import_s}s"
    echo '```'
    echo
    echo "| what | measured | target | met |"
    echo "|---|---:|---:|---|"
    echo "| \`history trend p99\` (last 100 of the series) | ${trend_ms} ms | 200 ms | $(verdict "$trend_ms" 200) |"
    echo "| \`history trend p99 --last $RUNS\` | ${trend_all_ms} ms | 200 ms | $(verdict "$trend_all_ms" 200) |"
    echo "| \`history check\` (p99, throughput, error ratio) | ${check_ms} ms | | |"
    echo "| \`history list\` | ${list_ms} ms | | |"
    echo "| \`history show 1\` (percentiles from its histograms) | ${show_ms} ms | | |"
    echo "| the file | $(mib "$bytes") MiB ($((bytes / runs)) bytes a run) | 200 MB | $(verdict "$bytes" 200000000) |"
    echo
    echo "Best of 5 of each command, the process's start included."
} > "$OUT"
cat "$OUT"
