# ApacheBench (apache2-utils). Single-threaded, HTTP/1.0.
# -t with a large -n: stop on time, not on count. -r: keep going on socket errors.
# Cases: small, large (with -k keep-alive), noka (without -k). No rate mode.
tool_ab() {
    local op="$1"; shift
    case "$op" in
    bin) command -v ab ;;
    version) ab -V 2>&1 | head -1 | sed 's/^This is //; s/ <\$Revision\$>//' ;;
    cmd)
        local c="$1" url="$2" pfx="$3"
        local base=(ab -q -r -c "$CONNS" -t "$DUR" -n 10000000 -s 10 -e "$pfx.csv")
        case "$c" in
        small|large|large-c*|body-*|tls) CMD=("${base[@]}" -k "$url") ;;
        noka) CMD=("${base[@]}" "$url") ;;
        rate|rate20k) REASON="ab has no rate limiting"; return 3 ;;
        *) REASON="unknown case"; return 3 ;;
        esac ;;
    parse)
        local c="$1" pfx="$2"
        "$PY" - "$pfx.out" "$pfx.csv" <<'PY'
import json, re, sys
txt = open(sys.argv[1]).read()
def num(pat, default=None):
    m = re.search(pat, txt, re.M)
    return float(m.group(1)) if m else default
done = int(num(r"^Complete requests:\s+(\d+)"))
failed = int(num(r"^Failed requests:\s+(\d+)", 0))
non2xx = int(num(r"^Non-2xx responses:\s+(\d+)", 0))
dur = num(r"^Time taken for tests:\s+([\d.]+)")
pct = {}
for line in open(sys.argv[2]):
    p, _, v = line.strip().partition(",")
    if p.isdigit():
        pct[int(p)] = float(v)
print(json.dumps({
    "requests": done, "ok": done - failed - non2xx, "errors": failed + non2xx,
    "duration_s": dur, "rps": num(r"^Requests per second:\s+([\d.]+)"),
    "p50_ms": pct.get(50), "p99_ms": pct.get(99)}))
PY
        ;;
    esac
}
