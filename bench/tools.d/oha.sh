# oha (cargo install oha --locked). JSON summary on stdout (--output-format json).
# rate, rate20k: -q is the total rate (no latency correction, the tool's default).
# noka: --disable-keepalive. h2-mN: --http2 -c H2_CONNS -p N.
tool_oha() {
    local op="$1"; shift
    case "$op" in
    bin) command -v oha ;;
    version) oha --version 2>/dev/null | head -1 ;;
    cmd)
        local c="$1" url="$2" pfx="$3"
        local base=(oha -z "${DUR}s" -c "$CONNS" -t 10s --no-tui --output-format json)
        case "$c" in
        small|large|large-c*|body-*) CMD=("${base[@]}" "$url") ;;
        tls) CMD=("${base[@]}" --insecure "$url") ;;
        rate|rate20k) CMD=("${base[@]}" -q "$(case_rate "$c")" "$url") ;;
        noka) CMD=("${base[@]}" --disable-keepalive "$url") ;;
        # HTTP/2 (prior knowledge over http://): H2_CONNS connections, -p streams on each.
        h2-m*) CMD=(oha -z "${DUR}s" -c "$H2_CONNS" -p "$(h2_streams "$c")" --http2 -t 10s --no-tui --output-format json "$url") ;;
        *) REASON="unknown case"; return 3 ;;
        esac ;;
    parse)
        local c="$1" pfx="$2"
        "$PY" - "$pfx.out" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
s = d["summary"]
codes = d.get("statusCodeDistribution") or {}
ok = sum(v for k, v in codes.items() if k.startswith("2"))
n = sum(codes.values())
# "aborted due to deadline" = requests in flight when -z expired (cancelled, not failed).
errd = dict(d.get("errorDistribution") or {})
aborted = errd.pop("aborted due to deadline", 0)
errs = sum(errd.values())
pct = d.get("latencyPercentiles") or {}
f = lambda x: x * 1e3 if x is not None else None
print(json.dumps({
    "requests": n, "ok": ok, "errors": errs + n - ok, "duration_s": s["total"],
    "rps": n / s["total"] if s["total"] else None, "tool_rps": s.get("requestsPerSec"),
    "achieved_rate": n / s["total"] if s["total"] else None,
    "p50_ms": f(pct.get("p50")), "p99_ms": f(pct.get("p99")),
    "aborted_at_deadline": aborted, "error_samples": list(errd.items())[:3]}))
PY
        ;;
    esac
}
