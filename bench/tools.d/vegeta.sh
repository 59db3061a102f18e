# vegeta (go install github.com/tsenart/vegeta/v12). Results are written to a file
# (part of the measured work, as in normal use) and summarised afterwards with
# `vegeta report` outside the measurement. -max-body=0: bodies are read but not stored.
# Max-throughput cases use -rate=0 with a fixed pool of CONNS workers; rate cases (rate,
# rate20k) cap workers at 4*CONNS.
tool_vegeta() {
    local op="$1"; shift
    case "$op" in
    bin) command -v vegeta ;;
    version) go version -m "$(command -v vegeta)" 2>/dev/null | awk '$1=="mod"{print "vegeta "$3}' ;;
    cmd)
        local c="$1" url="$2" pfx="$3"
        echo "GET $url" > "$pfx.targets"
        local base=(vegeta attack -targets="$pfx.targets" -duration="${DUR}s" -timeout=10s
                    -max-body=0 -output="$pfx.bin")
        case "$c" in
        small|large|large-c*|body-*) CMD=("${base[@]}" -rate=0 -workers="$CONNS" -max-workers="$CONNS" -keepalive=true) ;;
        tls) CMD=("${base[@]}" -rate=0 -workers="$CONNS" -max-workers="$CONNS" -keepalive=true -insecure) ;;
        # Workers capped at 4*CONNS (k6 gets maxVUs=4*CONNS, oha/hey CONNS): with the default
        # (unbounded) a short stall made vegeta spawn >4k workers/connections and spiral.
        rate|rate20k) CMD=("${base[@]}" -rate="$(case_rate "$c")/1s" -workers="$CONNS" -max-workers="$(( CONNS * 4 ))" -keepalive=true) ;;
        noka) CMD=("${base[@]}" -rate=0 -workers="$CONNS" -max-workers="$CONNS" -keepalive=false) ;;
        *) REASON="unknown case"; return 3 ;;
        esac ;;
    parse)
        local c="$1" pfx="$2"
        vegeta report -type=json "$pfx.bin" > "$pfx.report.json" || return 1
        rm -f "$pfx.bin"
        "$PY" - "$pfx.report.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
n = d["requests"]
ok = sum(v for k, v in (d.get("status_codes") or {}).items() if k.startswith("2"))
dur = (d["duration"] + d["wait"]) / 1e9
lat = d["latencies"]
print(json.dumps({
    "requests": n, "ok": ok, "errors": n - ok, "duration_s": dur,
    "rps": d["throughput"], "achieved_rate": d["rate"],
    "p50_ms": lat["50th"] / 1e6, "p99_ms": lat["99th"] / 1e6,
    "error_samples": (d.get("errors") or [])[:3]}))
PY
        ;;
    esac
}
