# hey (go install github.com/rakyll/hey). -q is per worker, so rate = CONNS * (RATE/CONNS).
# Cases: small, large, rate, rate20k (RATE2), noka (-disable-keepalive).
tool_hey() {
    local op="$1"; shift
    case "$op" in
    bin) command -v hey ;;
    version) go version -m "$(command -v hey)" 2>/dev/null | awk '$1=="mod"{print "hey "$3}' ;;
    cmd)
        local c="$1" url="$2" pfx="$3"
        local base=(hey -z "${DUR}s" -c "$CONNS" -t 10)
        case "$c" in
        small|large|large-c*|body-*|tls) CMD=("${base[@]}" "$url") ;;
        rate|rate20k) CMD=("${base[@]}" -q "$(( $(case_rate "$c") / CONNS ))" "$url") ;;
        noka) CMD=("${base[@]}" -disable-keepalive "$url") ;;
        *) REASON="unknown case"; return 3 ;;
        esac ;;
    parse)
        local c="$1" pfx="$2"
        "$PY" - "$pfx.out" <<'PY'
import json, re, sys
txt = open(sys.argv[1]).read()
def num(pat, default=None):
    m = re.search(pat, txt, re.M)
    return float(m.group(1)) if m else default
ok = sum(int(n) for code, n in re.findall(r"^\s+\[(\d+)\]\s+(\d+) responses", txt, re.M)
         if code.startswith("2"))
codes = sum(int(n) for _, n in re.findall(r"^\s+\[(\d+)\]\s+(\d+) responses", txt, re.M))
err_sec = txt.split("Error distribution:")[1] if "Error distribution:" in txt else ""
errs = sum(int(n) for n in re.findall(r"^\s+\[(\d+)\]\s", err_sec, re.M))
dur = num(r"^\s+Total:\s+([\d.]+) secs")
p50 = num(r"^\s+50%+ in ([\d.]+) secs")
p99 = num(r"^\s+99%+ in ([\d.]+) secs")
print(json.dumps({
    "requests": codes, "ok": ok, "errors": errs + codes - ok,
    "duration_s": dur, "rps": num(r"^\s+Requests/sec:\s+([\d.]+)"),
    "p50_ms": p50 * 1e3 if p50 is not None else None,
    "p99_ms": p99 * 1e3 if p99 is not None else None}))
PY
        ;;
    esac
}
