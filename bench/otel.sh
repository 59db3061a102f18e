#!/usr/bin/env bash
# Trace context and OTLP export at 20,000 req/s (issue 38), on loopback against `barrage serve`
# (pinned to CPU 0, the generator to CPU 1), the OTLP receiver tests/otlp_receiver.py beside:
#   1. CPU per request, medians of RUNS runs of SECONDS each, side by side in one session:
#      the previous build (PREV_BIN) and this one without tracing (the hot path unchanged),
#      this one with --trace-context --trace-sample 0.01, and with --otlp added.
#   2. A LONG run (600 s) at 20,000/s with --trace-sample 0.01 and --otlp: barrage's resident
#      memory sampled every 10 s must stay flat, and what the receiver got is counted.
#   bench/otel.sh                      # results in bench/results/<date>-otel.md
# Env: BARRAGE_BIN (default <repo>/target/release/barrage), PREV_BIN (none: part 1 without
#   it), RUNS (3), SECONDS (20), LONG (600), TAG. Needs python3 with opentelemetry-proto and
#   grpcio (see .ci/run).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
BIN="${BARRAGE_BIN:-${CARGO_TARGET_DIR:-$ROOT/target}/release/barrage}"
PREV="${PREV_BIN:-}"
RUNS="${RUNS:-3}"
SECS="${SECONDS_EACH:-${SECONDS:-20}}"
LONG="${LONG:-600}"
RATE=20000
STAMP="$(date -u +%Y-%m-%d_%H%M%S)"
OUT="$HERE/results/${STAMP}-otel${TAG:+-$TAG}.md"
[ -x "$BIN" ] || { echo "no barrage binary at $BIN (cargo build --release)" >&2; exit 1; }
WORK="$(mktemp -d /tmp/barrage-otel-bench.XXXXXX)"
cleanup() {
    for p in serve receiver; do kill "$(cat "$WORK/$p.pid" 2>/dev/null)" 2>/dev/null || true; done
    rm -rf "$WORK"
}
trap cleanup EXIT

taskset -c 0 "$BIN" serve --listen 127.0.0.1:0 --threads 1 > "$WORK/serve.out" 2>&1 &
echo $! > "$WORK/serve.pid"
for _ in $(seq 1 50); do grep -q listening "$WORK/serve.out" && break; sleep 0.1; done
URL="$(grep -o 'http://[0-9.:]*' "$WORK/serve.out" | head -1)/"
# The receiver keeps stdin open (a pipe from sleep) for as long as the bench runs.
sleep 100000 | python3 "$ROOT/tests/otlp_receiver.py" "$WORK/received.jsonl" > "$WORK/receiver.out" 2>&1 &
echo $! > "$WORK/receiver.pid"
for _ in $(seq 1 100); do grep -q '^http' "$WORK/receiver.out" && break; sleep 0.1; done
OTLP="http://127.0.0.1:$(awk '/^http/{print $2}' "$WORK/receiver.out")"

# CPU µs per request of one run (barrage's user and system time, as the kernel counted
# them for the whole process, over the requests it sent), requests, corrected p99 µs.
cpu_per_request() {
    local bin="$1"; shift
    /usr/bin/time -f "%U %S" -o "$WORK/time" taskset -c 1 "$bin" run "$URL" --rate "$RATE" -d "${SECS}s" \
        --no-history --format json "$@" > "$WORK/one.json" 2>/dev/null
    python3 - "$WORK/one.json" "$WORK/time" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
user, system = map(float, open(sys.argv[2]).read().split()[-2:])
n = max(d["requests"]["total"], 1)
print("%.2f %d %d" % ((user + system) * 1e6 / n, n, d["latency"]["corrected"]["p99_us"]))
PY
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

declare -A CASE
cases=()
[ -n "$PREV" ] && { CASE[prev]="$PREV|"; cases+=(prev); }
CASE[off]="$BIN|"; cases+=(off)
CASE[trace]="$BIN|--trace-context --trace-sample 0.01"; cases+=(trace)
CASE[otlp]="$BIN|--trace-context --trace-sample 0.01 --otlp $OTLP"; cases+=(otlp)
declare -A CPU P99
for c in "${cases[@]}"; do : > "$WORK/$c.runs"; done
# Interleaved, so a slow minute of the machine falls on every case alike.
for _ in $(seq 1 "$RUNS"); do
    for c in "${cases[@]}"; do
        IFS='|' read -r bin flags <<< "${CASE[$c]}"
        # shellcheck disable=SC2086
        cpu_per_request "$bin" $flags >> "$WORK/$c.runs"
    done
done
for c in "${cases[@]}"; do
    CPU[$c]=$(cut -d' ' -f1 "$WORK/$c.runs" | median)
    P99[$c]=$(cut -d' ' -f3 "$WORK/$c.runs" | median)
done

# The long run (LONG=0: none), its memory sampled every 10 s; what the receiver got before
# it is not its.
if [ "$LONG" -gt 0 ]; then
before=$(wc -l < "$WORK/received.jsonl" 2>/dev/null || echo 0)
taskset -c 1 "$BIN" run "$URL" --rate "$RATE" -d "${LONG}s" --trace-context --trace-sample 0.01 --otlp "$OTLP" \
    --no-history --format json > "$WORK/long.json" 2> "$WORK/long.err" &
pid=$!
: > "$WORK/rss"
while kill -0 "$pid" 2>/dev/null; do
    rss=$(awk '/VmRSS/{print $2}' "/proc/$pid/status" 2>/dev/null || true)
    [ -n "$rss" ] && echo "$(date +%s) $rss" >> "$WORK/rss"
    sleep 10
done
wait "$pid"
read -r sent sampled long_p99 < <(python3 -c 'import json; d=json.load(open("'"$WORK/long.json"'")); print(d["requests"]["total"], d["trace_context"]["requests_sampled"], d["latency"]["corrected"]["p99_us"])')
spans=$(python3 - "$WORK/received.jsonl" "$before" <<'EOF'
import json, sys
n = 0
for line in open(sys.argv[1]).readlines()[int(sys.argv[2]):]:
    r = json.loads(line)
    if r["signal"] == "traces":
        n += sum(len(ss.get("spans", [])) for rs in r["body"].get("resourceSpans", []) for ss in rs.get("scopeSpans", []))
print(n)
EOF
)
read -r first_min last_min peak < <(python3 - "$WORK/rss" <<'EOF'
import sys
rows = [tuple(map(int, l.split())) for l in open(sys.argv[1]) if l.strip()]
t0 = rows[0][0]
first = [r for t, r in rows if t - t0 <= 60]
last = [r for t, r in rows if rows[-1][0] - t <= 60]
print(max(first) // 1024, max(last) // 1024, max(r for _, r in rows) // 1024)
EOF
)
fi
{
    echo "# Trace context and OTLP export at ${RATE}/s: $STAMP"
    echo
    echo '```'
    echo "host=$(hostname) cpus=$(nproc) cpu='$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)' kernel=$(uname -r)"
    echo "commit=$(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet || echo +dirty) prev=${PREV:-none}"
    echo "barrage serve on CPU 0, the generator on CPU 1; runs of ${SECS}s, medians of $RUNS, interleaved"
    echo '```'
    echo
    echo "| case | CPU µs/request | ÷ off | corrected p99 µs |"
    echo "|---|---:|---:|---:|"
    for c in "${cases[@]}"; do
        echo "| $c: ${CASE[$c]#*|} | ${CPU[$c]} | $(echo "scale=3; ${CPU[$c]} / ${CPU[off]}" | bc) | ${P99[$c]} |"
    done
    if [ "$LONG" -gt 0 ]; then
    echo
    echo "## ${LONG}s at ${RATE}/s, --trace-sample 0.01, --otlp"
    echo
    echo "| what | measured |"
    echo "|---|---:|"
    echo "| requests sent | $sent |"
    echo "| sampled (traceparent flag) | $sampled |"
    echo "| client spans received by the collector | $spans |"
    echo "| resident memory, peak of the first minute | ${first_min} MiB |"
    echo "| resident memory, peak of the last minute | ${last_min} MiB |"
    echo "| resident memory, peak | ${peak} MiB |"
    echo "| corrected p99 | ${long_p99} µs |"
    echo
    echo "stderr of the long run: $(tr '\n' ' ' < "$WORK/long.err")"
    fi
} > "$OUT"
cat "$OUT"
