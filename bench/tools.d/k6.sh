# k6 (go install go.k6.io/k6). Script: tools.d/k6.js; summary via handleSummary().
# small/large/noka: constant-vus (CONNS VUs); rate, rate20k: constant-arrival-rate.
# noka uses noConnectionReuse. Bodies discarded (discardResponseBodies).
tool_k6() {
    local op="$1"; shift
    case "$op" in
    bin) command -v k6 ;;
    version) k6 version 2>/dev/null | head -1 | awk '{print $1" "$2}' ;;
    cmd)
        local c="$1" url="$2" pfx="$3"
        case "$c" in small|large|large-c*|body-*|rate|rate20k|noka|tls) ;; *) REASON="unknown case"; return 3 ;; esac
        CMD=(k6 run --quiet --no-color --no-usage-report --no-thresholds
             -e CASE="$c" -e URL="$url" -e DUR="$DUR" -e CONNS="$CONNS" -e RATE="$(case_rate "$c")"
             -e SUMMARY_OUT="$pfx.summary.json" "$HERE/tools.d/k6.js") ;;
    parse)
        local c="$1" pfx="$2"
        "$PY" - "$pfx.summary.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
m = d["metrics"]
v = lambda name: (m.get(name) or {}).get("values", {})
n = int(v("http_reqs").get("count", 0))
failed = int(v("http_req_failed").get("passes", 0))
dur = d["state"]["testRunDurationMs"] / 1e3
lat = v("http_req_duration")
print(json.dumps({
    "requests": n, "ok": n - failed, "errors": failed, "duration_s": dur,
    "rps": v("http_reqs").get("rate"), "achieved_rate": v("http_reqs").get("rate"),
    "p50_ms": lat.get("med"), "p99_ms": lat.get("p(99)"),
    "dropped_iterations": int(v("dropped_iterations").get("count", 0))}))
PY
        ;;
    esac
}
