# redis-benchmark (Debian redis-tools), the Redis peer. Single-threaded as shipped (no
# --threads), so it uses the one CPU it is pinned to, like every generator here.
# Cases: the Redis cases OP-pDEPTH (set-p1, set-p16, get-p1, get-p16; see peers.sh):
#   redis-benchmark -h 127.0.0.1 -p PORT -t OP -c CONNS -P DEPTH -n REDIS_REQUESTS
#                   -d REDIS_DATA -r REDIS_KEYS
# Keys are `key:%012d` of a random id in 0..REDIS_KEYS-1 (its -r); redis.sh prefill set them
# all, so GETs hit. It exits on the first error reply (7.x: "-e has no effect"), so a run
# that ends with rc 0 had no errors.
# Report: its plain output (not --csv, which lacks the request count): "N requests completed
# in S seconds", "throughput summary: X requests per second" and the "latency summary
# (msec)" line (avg min p50 p95 p99 max). Pipelined, its latency is per batch: the time from
# writing the batch of DEPTH commands to the first bytes of the first reply, recorded once
# for every command of the batch; barrage's is per command, to the end of its own reply.
tool_redis_benchmark() {
    local op="$1"; shift
    case "$op" in
    bin) command -v redis-benchmark ;;
    version) redis-benchmark --version 2>/dev/null | awk '{print "redis-benchmark " $2}' ;;
    cmd)
        local c="$1" url="$2" pfx="$3"
        redis_case "$c" || { REASON="HTTP case: redis-benchmark only speaks Redis"; return 3; }
        local port="${url##*:}"
        CMD=(redis-benchmark -h 127.0.0.1 -p "${port%%/*}" -t "$(redis_op "$c")" -c "$CONNS"
             -P "$(redis_pipeline "$c")" -n "$REDIS_REQUESTS" -d "$REDIS_DATA" -r "$REDIS_KEYS") ;;
    parse)
        local c="$1" pfx="$2"
        "$PY" - "$pfx.out" <<'PY'
import json, re, sys
# Progress lines end in \r; the summary is at the end.
text = open(sys.argv[1]).read().replace("\r", "\n")
done = re.search(r"^\s*(\d+) requests completed in ([\d.]+) seconds", text, re.M)
rps = re.search(r"throughput summary: ([\d.]+) requests per second", text)
lat = re.search(r"latency summary \(msec\):\s*\n\s*avg\s+min\s+p50\s+p95\s+p99\s+max\s*\n\s*([\d.\s]+)\n", text)
if not (done and rps and lat):
    sys.exit("no summary in redis-benchmark's output")
avg, lo, p50, p95, p99, hi = (float(v) for v in lat.group(1).split())
n, r = int(done.group(1)), float(rps.group(1))
print(json.dumps({
    # It stops on an error reply, so every completed request succeeded.
    "requests": n, "ok": n, "errors": 0,
    # Its duration is printed to 10 ms; requests / rate is the same, to more digits.
    "duration_s": n / r, "rps": r,
    "p50_ms": p50, "p99_ms": p99, "max_ms": hi,
}))
PY
        ;;
    esac
}
