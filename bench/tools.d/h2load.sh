# h2load (Debian nghttp2-client): HTTP/2 only, so the h2-mN cases only: H2_CONNS
# connections (-c) each with N streams (-m), for DUR seconds (-D), one thread (-t 1, the
# generator has one CPU), over cleartext by prior knowledge (h2c, what an http:// URL means
# to h2load). Its summary gives the mean time per request, not percentiles: p50 and p99
# are left empty.
tool_h2load() {
    local op="$1"; shift
    case "$op" in
    bin) command -v "${H2LOAD_BIN:-h2load}" ;;
    version) "${H2LOAD_BIN:-h2load}" --version 2>/dev/null | head -1 ;;
    cmd)
        local c="$1" url="$2" pfx="$3"
        h2_case "$c" || { REASON="h2load is an HTTP/2 tool: the h2-mN cases only"; return 3; }
        CMD=("${H2LOAD_BIN:-h2load}" -t 1 -c "$H2_CONNS" -m "$(h2_streams "$c")" -D "$DUR" "$url") ;;
    parse)
        local c="$1" pfx="$2"
        "$PY" - "$pfx.out" <<'PY'
import json, re, sys
text = open(sys.argv[1]).read()
fin = re.search(r"finished in ([\d.]+)(m?s), ([\d.]+) req/s", text)
req = re.search(r"requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, (\d+) errored, (\d+) timeout", text)
if not (fin and req):
    sys.exit("no h2load summary in the output")
dur = float(fin.group(1)) / (1e3 if fin.group(2) == "ms" else 1)
# "succeeded": done with a 2xx or 3xx (its status code counts also include responses whose
# head came before the end of the run but not their end).
done, ok = int(req.group(3)), int(req.group(4))
print(json.dumps({"requests": done, "ok": ok, "errors": done - ok, "duration_s": dur,
                  "rps": ok / dur if dur else None, "tool_rps": float(fin.group(3)),
                  "p50_ms": None, "p99_ms": None}))
PY
        ;;
    esac
}
