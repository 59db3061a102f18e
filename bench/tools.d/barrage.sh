# barrage (this project). BARRAGE_BIN overrides the path (default
# <repo>/target/release/barrage; bench/run.sh builds it with `cargo build --release`).
# No --threads: barrage sizes its runtime from the CPU affinity (taskset => one core),
# as tokio does.
# Cases: small, large (--concurrency CONNS: closed loop, one keep-alive connection per
# worker), rate, rate20k (--rate: open loop), noka (--concurrency CONNS --no-keepalive),
# h2-mN (--concurrency H2_CONNS --streams N: HTTP/2, h2load's -c H2_CONNS -m N).
# Redis cases (set-p1 … get-p16, against redis://127.0.0.1:PORT): barrage_redis_args below,
# the same workload as redis-benchmark's: CONNS connections each with DEPTH commands in
# flight, REDIS_REQUESTS commands, REDIS_DATA-byte values, ids 0..REDIS_KEYS-1 drawn at
# random (redis-benchmark's own keys, which redis.sh prefill set, so GETs hit).
# Report: `--format json` on stdout (RunSummary, crates/metrics/src/summary.rs); fields
# read exactly (a missing one fails the parse):
#   requests.{total,ok,errors}, duration.{total_s,attack_s,wait_s}, throughput_per_sec, rate_per_sec,
#   latency.corrected.{p50_us,p99_us} (from the intended start time: in open loop it
#   includes queueing behind a late send; in closed loop it equals latency.service),
#   latency.service.{p50_us,p99_us} (kept as service_p50_ms/service_p99_ms);
#   optional: requests.{late,unfinished,connections}, generator.{threads,lag_p99_us,bound_reached}.
tool_barrage() {
    local op="$1"; shift
    local b="${BARRAGE_BIN:-$(cd "$HERE/.." && pwd)/target/release/barrage}"
    case "$op" in
    bin) [ -x "$b" ] && echo "$b" ;;
    version) "$b" --version 2>/dev/null | head -1 ;;
    cmd)
        local c="$1" url="$2" pfx="$3"
        local base=("$b" run "$url" --duration "${DUR}s" --timeout 10s --format json)
        case "$c" in
        small|large|large-c*|body-*) CMD=("${base[@]}" --concurrency "$CONNS") ;;
        tls) CMD=("${base[@]}" --concurrency "$CONNS" --insecure) ;;
        rate|rate20k) CMD=("${base[@]}" --rate "$(case_rate "$c")") ;;
        noka) CMD=("${base[@]}" --concurrency "$CONNS" --no-keepalive) ;;
        h2-m*) CMD=("${base[@]}" --concurrency "$H2_CONNS" --streams "$(h2_streams "$c")") ;;
        set-p*|get-p*) barrage_redis_args "$c" "$url" "$pfx"; CMD=("$b" "${BARRAGE_REDIS_ARGS[@]}") ;;
        *) REASON="unknown case"; return 3 ;;
        esac ;;
    parse)
        local c="$1" pfx="$2"
        "$PY" - "$pfx.out" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
req, dur, lat = d["requests"], d["duration"], d["latency"]
cor, svc = lat["corrected"], lat["service"]
ms = lambda us: us / 1e3
gen = d.get("generator") or {}
out = {
    # total = finished requests; ok = 2xx/3xx; requests.errors counts only transport
    # failures (4xx/5xx are requests.http_errors), so errors here = total - ok, the same
    # meaning as for the other tools (every finished request that was not a success).
    "requests": req["total"], "ok": req["ok"], "errors": req["total"] - req["ok"],
    "transport_errors": req["errors"],
    "duration_s": dur["total_s"], "attack_s": dur["attack_s"], "wait_s": dur["wait_s"],
    # rps = successes per second of the whole run (vegeta's "throughput");
    # achieved_rate = requests sent per second of attack (vegeta's "rate").
    "rps": d["throughput_per_sec"], "achieved_rate": d["rate_per_sec"],
    "p50_ms": ms(cor["p50_us"]), "p99_ms": ms(cor["p99_us"]),
    "service_p50_ms": ms(svc["p50_us"]), "service_p99_ms": ms(svc["p99_us"]),
}
# Key-value runs: the GET hit ratio (cache table), checked against redis's keyspace_hits.
if (d.get("cache") or {}).get("hit_ratio") is not None:
    out["hit_pct"] = 100 * d["cache"]["hit_ratio"]
# Open-loop diagnostics, shown in the report's notes when present.
for k, v in (("late", req.get("late")), ("unfinished", req.get("unfinished")),
             ("connections", req.get("connections")), ("gen_threads", gen.get("threads")),
             ("streams_max", (d.get("streams") or {}).get("streams_max")),
             ("stream_retries", req.get("stream_retries") or None),
             ("lag_p99_ms", ms(gen["lag_p99_us"]) if "lag_p99_us" in gen else None),
             ("bound_reached", gen.get("bound_reached"))):
    if v is not None:
        out[k] = v
print(json.dumps(out))
PY
        ;;
    esac
}

# barrage's command line for a Redis case, in one place to adjust: memtier's flags (docs/protocols.md,
# "Redis and memcached"). --ratio 1:0 sends SETs only, 0:1 GETs only; -c CONNS connections
# each keep --pipeline DEPTH commands in flight (a closed loop of CONNS × DEPTH); -n counts
# commands; the keys are redis-benchmark's `key:%012d` (a key's length and format change
# redis's CPU per command by a few percent): the ids with as many digits as REDIS_KEYS-1,
# after a prefix of `key:` and the zeros that make 12 digits (key:000000100000 …
# key:000000999999 for 1,000,000 keys, 90% of redis-benchmark's -r ids);
# --threads 1 as the generator has one CPU; -o keeps the results file in the raw directory
# (`barrage report RAW/redis.barrage.get-p16.brg` shows the full report afterwards).
barrage_redis_args() {
    local c="$1" url="$2" pfx="$3" ratio last="$(( REDIS_KEYS - 1 ))"
    case "$(redis_op "$c")" in set) ratio=1:0 ;; get) ratio=0:1 ;; esac
    local digits="${#last}" first=0
    [ "$digits" -gt 1 ] && first="1$(printf '%*s' "$(( digits - 1 ))" '' | tr ' ' 0)"
    local zeros; zeros="$(printf '%*s' "$(( 12 - digits ))" '' | tr ' ' 0)"
    BARRAGE_REDIS_ARGS=(run "$url" --ratio "$ratio" -c "$CONNS" --pipeline "$(redis_pipeline "$c")"
        -n "$REDIS_REQUESTS" --data-size "$REDIS_DATA"
        --key-prefix "key:$zeros" --key-minimum "$first" --key-maximum "$last"
        --pick random --threads 1 --timeout 10s -o "$pfx.brg" --format json)
}
