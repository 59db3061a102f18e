# wrk (Debian package). One thread: the generator is pinned to a single CPU.
# Cases: small, large, noka (via "Connection: close"; wrk reconnects). No rate mode
# (that is wrk2's -R, which is not packaged for Debian).
tool_wrk() {
    local op="$1"; shift
    case "$op" in
    bin) command -v wrk ;;
    version) wrk -v 2>&1 | head -1 | awk '{print $1" "$2}' ;;
    cmd)
        local c="$1" url="$2" pfx="$3"
        local base=(wrk -t1 -c"$CONNS" -d"${DUR}s" --timeout 10s -s "$HERE/tools.d/wrk-json.lua")
        case "$c" in
        small|large|large-c*|body-*|tls) CMD=("${base[@]}" "$url") ;;
        noka) CMD=("${base[@]}" -H "Connection: close" "$url") ;;
        rate|rate20k) REASON="no rate limiting in wrk 4.x (wrk2 -R not packaged)"; return 3 ;;
        *) REASON="unknown case"; return 3 ;;
        esac ;;
    parse)
        local c="$1" pfx="$2"
        "$PY" - "$pfx.out" <<'PY'
import json, sys
line = next(l for l in open(sys.argv[1]) if l.startswith("WRKJSON "))
d = json.loads(line[8:])
dur = d["duration_us"] / 1e6
errs = d["err_connect"] + d["err_read"] + d["err_write"] + d["err_timeout"] + d["err_status"]
print(json.dumps({
    "requests": d["requests"], "ok": d["requests"] - d["err_status"], "errors": errs,
    "duration_s": dur, "rps": d["requests"] / dur,
    "p50_ms": d["p50_us"] / 1e3, "p99_ms": d["p99_us"] / 1e3,
    "raw": d}))
PY
        ;;
    esac
}
