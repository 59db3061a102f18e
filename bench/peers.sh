#!/usr/bin/env bash
# Benchmark of HTTP load generators (barrage and its peers) against a local server, and of
# Redis load generators against a local redis-server (127.0.0.1 only). bench/run.sh is the
# usual entry point (installs, builds, then this).
#
#   bench/peers.sh                      # peers + barrage, all cases, 10 s each, vs nginx
#   TOOLS="wrk oha" CASES="small" DURATION=5 bench/peers.sh
#   SERVER="nginx barrage" bench/peers.sh   # also wrk against `barrage serve`, interleaved
#   SERVER=redis REPEAT=3 bench/peers.sh    # redis-benchmark and barrage vs redis-server only
#
# Env knobs: TOOLS, CASES (small large-c1 large-c4 large body-16k-c1 body-16k body-64k
#   body-256k body-8m body-64m rate rate20k noka tls h2-m10 h2-m100; large-cN is 1 MiB at N
#   connections, body-Nk an N KiB body and body-Nm an N MiB one at CONNS (bench/nginx.sh
#   makes 16, 64 and 256 KiB and 8 and 64 MiB), body-Nk-cM at M connections), DURATION (s,
#   default 10), CONNS (50), RATE (5000), RATE2 (20000, the rate20k case), H2_CONNS (10:
#   the HTTP/2 connections of an h2-mN case, each with N streams), GEN_CPU (1), SRV_CPU (0),
#   COOLDOWN (s between runs, 2), TCP_CC (cubic: the congestion control the run sets, `keep`
#   for the machine's), REPEAT (1; >1 repeats each case with rotated tool order,
#   report = medians), LABEL (suffix for the result file names),
#   SERVER (targets, any of "nginx barrage redis"; default nginx),
#   SERVE_TOOLS (generators run against `barrage serve`; default wrk),
#   SERVE_CASES (cases run against `barrage serve`; default "small large noka"),
#   REDIS_TOOLS (generators run against redis-server; default "redis_benchmark barrage"),
#   REDIS_CASES (default "set-p1 set-p16 get-p1 get-p16": OP-pDEPTH, SET or GET with DEPTH
#   commands pipelined per connection, CONNS connections), REDIS_REQUESTS (commands per run,
#   2000000), REDIS_KEYS (ids 0..N-1, 1000000), REDIS_DATA (value bytes, 32),
#   REDIS_BOUND (s, hard limit of one Redis run, 300).
# Each tool is a function tool_<name> in tools.d/<name>.sh (see tools.d/TEMPLATE.sh.example).
# Every generator run is: /usr/bin/time -v timeout <bound> taskset -c GEN_CPU <cmd>.
# Output: results/<date>[-LABEL].json and .md; raw tool output in results/raw/<date>/.
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
# shellcheck source=lib/env.sh
source "$HERE/lib/env.sh"
PY="${PYTHON:-python3}"

DUR="${DURATION:-10}"
CONNS="${CONNS:-50}"
RATE="${RATE:-5000}"
RATE2="${RATE2:-20000}"
GEN_CPU="${GEN_CPU:-1}"
SRV_CPU="${SRV_CPU:-0}"
COOLDOWN="${COOLDOWN:-2}"
REPEAT="${REPEAT:-1}"
TOOLS="${TOOLS:-wrk ab hey vegeta oha k6 h2load barrage}"
CASES="${CASES:-small large-c1 large-c4 large body-16k-c1 body-16k body-64k body-256k body-8m body-64m rate rate20k noka tls h2-m10 h2-m100}"
export H2_CONNS="${H2_CONNS:-10}"
SERVER="${SERVER:-nginx}"
SERVE_TOOLS="${SERVE_TOOLS:-wrk}"
SERVE_CASES="${SERVE_CASES:-small large noka}"
REDIS_TOOLS="${REDIS_TOOLS:-redis_benchmark barrage}"
REDIS_CASES="${REDIS_CASES:-set-p1 set-p16 get-p1 get-p16}"
export REDIS_REQUESTS="${REDIS_REQUESTS:-2000000}" REDIS_KEYS="${REDIS_KEYS:-1000000}" REDIS_DATA="${REDIS_DATA:-32}"
REDIS_BOUND="${REDIS_BOUND:-300}"
export BARRAGE_BIN="${BARRAGE_BIN:-${CARGO_TARGET_DIR:-$ROOT/target}/release/barrage}"
HOST=127.0.0.1          # loopback only, by design; not configurable
BOUND=$(( DUR + 30 ))   # hard wall-clock limit per generator run (s); REDIS_BOUND for Redis runs

for s in $SERVER; do
    case "$s" in nginx|barrage|redis) ;; *) echo "unknown SERVER '$s' (nginx, barrage, redis)" >&2; exit 2 ;; esac
done

# TCP congestion control: every connection of the run is opened under TCP_CC (default cubic,
# Linux's own default), set for the run and put back after it; TCP_CC=keep leaves the
# machine's. On loopback the choice decides the large-body cases: under bbr, which paces
# each connection, nginx spent 116-118 µs a 256 KiB response under wrk and barrage (53
# under oha) against 25-29 µs under cubic, and the generators ranked differently
# (bench/results/2026-11-29_1440-i36-congestion-control.txt). Checked before anything is
# written; set once the log exists (see set_cc). The setting is the machine's: a run killed
# with SIGKILL leaves it set, as its log says, and of two overlapping runs the first to end
# puts the machine's back under the other.
CC_FILE=/proc/sys/net/ipv4/tcp_congestion_control
CC_WAS="$(cat "$CC_FILE")"
TCP_CC="${TCP_CC:-cubic}"
if [ "$TCP_CC" != keep ] && [ "$TCP_CC" != "$CC_WAS" ]; then
    if ! [ -w "$CC_FILE" ] || ! grep -qw -- "$TCP_CC" /proc/sys/net/ipv4/tcp_available_congestion_control; then
        echo "TCP_CC=$TCP_CC: cannot set $CC_FILE (not root, or not one of: $(cat /proc/sys/net/ipv4/tcp_available_congestion_control)); TCP_CC=keep runs under $CC_WAS" >&2
        exit 2
    fi
fi
CC_SET=
set_cc() {
    [ "$TCP_CC" = keep ] || [ "$TCP_CC" = "$CC_WAS" ] && return 0
    echo "$TCP_CC" > "$CC_FILE" || { log "could not set tcp_congestion_control to $TCP_CC"; exit 2; }
    CC_SET=1
    log "tcp_congestion_control: $CC_WAS -> $TCP_CC for this run (put back on exit)"
}

STAMP="$(date +%Y-%m-%d_%H%M%S)"
NAME="${STAMP}${LABEL:+-$LABEL}"
RAW="$HERE/results/raw/$NAME"
mkdir -p "$RAW"
T_START=$(date +%s.%N)
grep -E '^cpu[0-9]+ ' /proc/stat > "$RAW/host.stat0"

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" | tee -a "$RAW/harness.log" >&2; }

for f in "$HERE"/tools.d/*.sh; do
    # shellcheck source=/dev/null
    source "$f"
done

# Target rate of a rate case (tools call this from their cmd).
case_rate() {
    case "$1" in
    rate) echo "$RATE" ;;
    rate20k) echo "$RATE2" ;;
    *) echo 0 ;;
    esac
}
is_rate_case() { [ "$(case_rate "$1")" != 0 ]; }

# 1 MiB at N connections is large-cN (large itself is at CONNS); body-Nk and body-Nm are
# N KiB and N MiB bodies at CONNS (the body-size sweep), body-Nk-cM at M connections.
# run_one sets CONNS for the case (tools read it).
case_conns() { if [[ "$1" =~ ^(large|body-[0-9]+[km])-c([1-9][0-9]*)$ ]]; then echo "${BASH_REMATCH[2]}"; else echo "$CONNS"; fi; }
case_body() { local b="${1%-c[0-9]*}"; echo "${b#body-}"; }   # body-16k-c1 -> 16k

# HTTP/2 cases are h2-mN: H2_CONNS connections, N streams in flight on each (h2load's
# -c H2_CONNS -m N), against nginx's h2c listener (tools call these from their cmd).
h2_case() { [[ "$1" =~ ^h2-m[1-9][0-9]*$ ]]; }
h2_streams() { echo "${1#h2-m}"; }

# Redis cases are OP-pDEPTH: SET or GET, DEPTH commands pipelined on each connection
# (tools call these from their cmd).
redis_case() { [[ "$1" =~ ^(set|get)-p[1-9][0-9]*$ ]]; }
redis_op() { echo "${1%%-p*}"; }
redis_pipeline() { echo "${1##*-p}"; }

# --- targets ----------------------------------------------------------------
# nginx: bench/nginx.sh, :18080, /small (1 KiB) and /large (1 MiB), 1 worker on SRV_CPU;
#   HTTP/2 (h2c, prior knowledge) on :18082 for the h2-mN cases.
# barrage: bench/bserve.sh, `barrage serve --threads 1` on :18081, /bytes/1k and /bytes/1m
#   (BSERVE_LARGE_PATH), on SRV_CPU.
# redis: bench/redis.sh, one redis-server without persistence on a free port
#   (REDIS_PREFIX/port), on SRV_CPU; its keyspace prefilled before the first run (GETs hit).
NGINX_PREFIX="${NGINX_PREFIX:-/tmp/bench-nginx}"
BSERVE_PREFIX="${BSERVE_PREFIX:-/tmp/bench-bserve}"
REDIS_PREFIX="${REDIS_PREFIX:-/tmp/bench-redis}"
export NGINX_PREFIX NGINX_CPU="$SRV_CPU" BSERVE_PREFIX BSERVE_CPU="$SRV_CPU" REDIS_PREFIX REDIS_CPU="$SRV_CPU"
declare -A STARTED=()

cleanup() {
    [ -n "$CC_SET" ] && echo "$CC_WAS" > "$CC_FILE"
    [ -n "${STARTED[nginx]:-}" ] && "$HERE/nginx.sh" stop >/dev/null 2>&1
    [ -n "${STARTED[barrage]:-}" ] && "$HERE/bserve.sh" stop >/dev/null 2>&1
    [ -n "${STARTED[redis]:-}" ] && "$HERE/redis.sh" stop >/dev/null 2>&1
}
trap cleanup EXIT
trap 'log "interrupted"; exit 130' INT TERM
set_cc

server_port() { case "$1" in nginx) echo 18080 ;; barrage) echo 18081 ;; redis) "$HERE/redis.sh" port ;; esac; }
server_up() {
    case "$1" in
    nginx) curl -fsS --max-time 2 -o /dev/null "http://$HOST:18080/health" >/dev/null 2>&1 ;;
    barrage) curl -fsS --max-time 2 -o /dev/null "http://$HOST:18081/bytes/1k" >/dev/null 2>&1 ;;
    redis) "$HERE/redis.sh" status >/dev/null 2>&1 &&
           [ "$(redis-cli -h "$HOST" -p "$(server_port redis)" ping 2>/dev/null)" = PONG ] ;;
    esac
}
server_script() {
    case "$1" in nginx) echo "$HERE/nginx.sh" ;; barrage) echo "$HERE/bserve.sh" ;; redis) echo "$HERE/redis.sh" ;; esac
}
server_pids() {   # the processes whose CPU time counts as the server's
    local master
    case "$1" in
    nginx) master="$(cat "$NGINX_PREFIX/nginx.pid" 2>/dev/null)" || return 0
           echo "$master" $(pgrep -P "$master") ;;
    barrage) cat "$BSERVE_PREFIX/bserve.pid" 2>/dev/null ;;
    redis) cat "$REDIS_PREFIX/redis.pid" 2>/dev/null ;;
    esac
}
ensure_server() {
    if ! server_up "$1"; then
        "$(server_script "$1")" start >&2 || { log "cannot start $1 server"; exit 1; }
        STARTED[$1]=1
        [ "$1" = redis ] && PREFILLED=""
    fi
    # Every key either Redis generator reads, set once per server start (a no-op when a
    # running server already has them).
    if [ "$1" = redis ] && [ -z "$PREFILLED" ] && [[ " $REDIS_CASES " == *" get-"* ]]; then
        "$HERE/redis.sh" prefill >&2 || { log "cannot prefill redis-server"; exit 1; }
        PREFILLED=1
    fi
}
PREFILLED=""
# The server's own counts of what it was asked (Redis: SET and GET calls, GET hits and
# misses), one "name value" a line; the run's record gets the differences as srv_<name>.
srv_counters() {
    [ "$1" = redis ] || return 0
    local cli=(redis-cli -h "$HOST" -p "$(server_port redis)")
    { "${cli[@]}" info commandstats; "${cli[@]}" info stats; } | tr -d '\r' |
        sed -n 's/^cmdstat_\(set\|get\):calls=\([0-9]*\),.*/\1_calls \2/p; s/^\(keyspace_hits\|keyspace_misses\):\([0-9]*\)$/\1 \2/p'
}
srv_ticks() {   # utime+stime (clock ticks) of all server processes (all threads included)
    local total=0 p
    for p in $(server_pids "$1"); do
        [ -r "/proc/$p/stat" ] || continue
        total=$(( total + $(sed 's/.*) //' "/proc/$p/stat" | awk '{print $12 + $13}') ))
    done
    echo "$total"
}
srv_hwm_kb() {   # peak RSS so far (VmHWM, kB) summed over the server processes
    local total=0 p v
    for p in $(server_pids "$1"); do
        v=$(awk '/^VmHWM:/{print $2}' "/proc/$p/status" 2>/dev/null)
        total=$(( total + ${v:-0} ))
    done
    echo "$total"
}

cpu_snap() {   # /proc/stat lines of the generator and server CPUs (steal/softirq noise check)
    grep -E "^cpu($GEN_CPU|$SRV_CPU) " /proc/stat > "$1"
}

case_url() {   # case_url SERVER CASE
    local port; port="$(server_port "$1")"
    case "$1:$2" in
    nginx:large | nginx:large-c*) echo "http://$HOST:$port/large" ;;
    nginx:body-*) echo "http://$HOST:$port/body-$(case_body "$2")" ;;
    nginx:h2-m*) echo "http://$HOST:18082/small" ;;
    nginx:tls) echo "https://$HOST:18443/small" ;;
    nginx:*) echo "http://$HOST:$port/small" ;;
    barrage:large | barrage:large-c*) echo "http://$HOST:$port${BSERVE_LARGE_PATH:-/bytes/1m}" ;;
    barrage:body-*) echo "http://$HOST:$port/bytes/$(case_body "$2")" ;;
    barrage:*) echo "http://$HOST:$port/bytes/1k" ;;
    redis:*) echo "redis://$HOST:$port" ;;
    esac
}
run_bound() { if [ "$1" = redis ]; then echo "$REDIS_BOUND"; else echo "$BOUND"; fi; }

# --- one measurement ----------------------------------------------------------
emit() { "$PY" "$HERE/lib/merge.py" --server "$srv" --tool "$t" --case "$c" "$@" "${extra[@]}" >> "$RAW/results.jsonl"; }
run_one() {
    local srv="$1" t="$2" c="$3" rep="${4:-1}" url rc s0 s1 w0 w1 status reason=""
    # The case's connections, for the tools (bash's dynamic scope); worked out before the
    # local hides the global.
    local conns; conns="$(case_conns "$c")"
    local CONNS="$conns"
    local pfx="$RAW/$srv.$t.$c"
    [ "$REPEAT" -gt 1 ] && pfx="$pfx.r$rep"
    url="$(case_url "$srv" "$c")"
    local -a extra=(--rep "$rep")
    if [ "$srv:$c" = barrage:tls ]; then
        emit --status unsupported --reason "barrage serve has no TLS listener"
        log "$srv/$t/$c: unsupported (no TLS listener)"
        return
    fi
    is_rate_case "$c" && extra+=(--target-rate "$(case_rate "$c")")
    if ! declare -F "tool_$t" >/dev/null; then
        emit --status missing --reason "no tool_$t function (tools.d/$t.sh)"
        log "$srv/$t/$c: no tool_$t function"
        return
    fi
    if [ -z "$(tool_"$t" bin 2>/dev/null)" ]; then
        emit --status missing --reason "binary not installed"
        log "$srv/$t/$c: missing"
        return
    fi
    CMD=(); REASON=""
    tool_"$t" cmd "$c" "$url" "$pfx"; rc=$?
    if [ "$rc" = 3 ]; then
        emit --status unsupported --reason "$REASON"
        log "$srv/$t/$c: unsupported ($REASON)"
        return
    fi
    case "$url" in "http://127.0.0.1:"*|"https://127.0.0.1:"*|"redis://127.0.0.1:"*) ;; *) log "refusing non-loopback URL $url"; exit 1 ;; esac
    printf '%q ' "${CMD[@]}" > "$pfx.cmd"
    ensure_server "$srv"
    log "$srv/$t/$c#$rep: $(cat "$pfx.cmd")"
    local bound; bound="$(run_bound "$srv")"
    srv_counters "$srv" > "$pfx.srv0"
    cpu_snap "$pfx.stat0"; s0=$(srv_ticks "$srv"); w0=$(date +%s.%N)
    /usr/bin/time -v -o "$pfx.time" \
        timeout -k 5 "$bound" taskset -c "$GEN_CPU" "${CMD[@]}" > "$pfx.out" 2> "$pfx.err"
    rc=$?
    w1=$(date +%s.%N); s1=$(srv_ticks "$srv"); cpu_snap "$pfx.stat1"
    srv_counters "$srv" > "$pfx.srv1"
    status=ok
    if ! tool_"$t" parse "$c" "$pfx" > "$pfx.parsed.json" 2> "$pfx.parse.err"; then
        status=failed; reason="parse failed (tool rc=$rc): $(tail -c 300 "$pfx.parse.err" "$pfx.err" | tr '\n' ' ')"
        : > "$pfx.parsed.json"
    fi
    { [ "$rc" = 124 ] || [ "$rc" = 137 ]; } && { status=failed; reason="killed after ${bound}s bound"; }
    emit --status "$status" --reason "$reason" \
        --rc "$rc" --time "$pfx.time" --parsed "$pfx.parsed.json" \
        --wall "$(echo "$w1 - $w0" | bc)" --srv-ticks "$(( s1 - s0 ))" --srv-hwm-kb "$(srv_hwm_kb "$srv")" \
        --cmd-file "$pfx.cmd" --stat0 "$pfx.stat0" --stat1 "$pfx.stat1" \
        --srv-counts0 "$pfx.srv0" --srv-counts1 "$pfx.srv1" \
        --gen-cpu "$GEN_CPU" --srv-cpu "$SRV_CPU"
    log "$srv/$t/$c#$rep: $(tail -1 "$RAW/results.jsonl" | "$PY" -c 'import json,sys; r=json.load(sys.stdin); print(r["status"], "rps=%s" % (round(r["rps"]) if r.get("rps") else None), "us/req=%s" % r.get("cpu_us_per_req"), "srv%%=%s" % r.get("srv_cpu_pct"), "steal%%=%s/%s" % (r.get("gen_steal_pct"), r.get("srv_steal_pct")), r.get("reason",""))')"
    sleep "$COOLDOWN"
}

# --- main ---------------------------------------------------------------------
command -v bc >/dev/null || { echo "need bc (bench/install-peers.sh)" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "need /usr/bin/time (bench/install-peers.sh)" >&2; exit 1; }
for s in $SERVER; do ensure_server "$s"; done
LOAD0="$(cut -d' ' -f1-3 /proc/loadavg)"
log "run $NAME: servers=[$SERVER] repeat=$REPEAT conns=$CONNS gen_cpu=$GEN_CPU srv_cpu=$SRV_CPU"
[[ " $SERVER " == *" nginx "* ]] && log "nginx: tools=[$TOOLS] cases=[$CASES] dur=${DUR}s rate=$RATE rate2=$RATE2 h2_conns=$H2_CONNS"
[[ " $SERVER " == *" barrage "* ]] && log "barrage serve: tools=[$SERVE_TOOLS] cases=[$SERVE_CASES]"
[[ " $SERVER " == *" redis "* ]] && log "redis-server: tools=[$REDIS_TOOLS] cases=[$REDIS_CASES] requests=$REDIS_REQUESTS keys=$REDIS_KEYS data=${REDIS_DATA}B bound=${REDIS_BOUND}s"

# Case-major order: all tools (and servers) measure a case close together in time (fairer
# under noise). With REPEAT>1 each case is repeated, rotating the tool order every
# repetition; the report shows medians (and the req/s range) over the repetitions.
# Each target has its own generators and cases.
server_tools() { case "$1" in nginx) echo "$TOOLS" ;; barrage) echo "$SERVE_TOOLS" ;; redis) echo "$REDIS_TOOLS" ;; esac; }
server_cases() { case "$1" in nginx) echo "$CASES" ;; barrage) echo "$SERVE_CASES" ;; redis) echo "$REDIS_CASES" ;; esac; }
ALL_TOOLS=()
ALL_CASES=""
for s in $SERVER; do
    for t in $(server_tools "$s"); do [[ " ${ALL_TOOLS[*]} " == *" $t "* ]] || ALL_TOOLS+=("$t"); done
    for c in $(server_cases "$s"); do [[ " $ALL_CASES " == *" $c "* ]] || ALL_CASES+=" $c"; done
done
for c in $ALL_CASES; do
    for (( rep = 1; rep <= REPEAT; rep++ )); do
        for s in $SERVER; do
            [[ " $(server_cases "$s") " == *" $c "* ]] || continue
            read -r -a TOOL_ARR <<< "$(server_tools "$s")"
            n=${#TOOL_ARR[@]}
            for (( i = 0; i < n; i++ )); do
                run_one "$s" "${TOOL_ARR[$(( (i + rep - 1) % n ))]}" "$c" "$rep"
            done
        done
    done
done

LOAD1="$(cut -d' ' -f1-3 /proc/loadavg)"
T_END=$(date +%s.%N)
grep -E '^cpu[0-9]+ ' /proc/stat > "$RAW/host.stat1"

# versions
jstr() { "$PY" -c 'import json,sys; print(json.dumps(sys.stdin.read().strip()))'; }
{
    echo "{"
    printf '"nginx": %s' "$(nginx -v 2>&1 | sed 's/^nginx version: //' | jstr)"
    [[ " $SERVER " == *" redis "* ]] &&
        printf ',\n"redis-server": %s' "$(redis-server --version | awk '{print $3}' | sed 's/^v=//' | jstr)"
    VTOOLS=("${ALL_TOOLS[@]}")
    [[ " $SERVER " == *" barrage "* ]] && [[ " ${ALL_TOOLS[*]} " != *" barrage "* ]] && VTOOLS+=(barrage)
    for t in "${VTOOLS[@]}"; do
        if declare -F "tool_$t" >/dev/null && [ -n "$(tool_"$t" bin 2>/dev/null)" ]; then
            printf ',\n"%s": %s' "$t" "$(tool_"$t" version 2>/dev/null | jstr)"
        fi
    done
    echo "}"
} > "$RAW/versions.json"

export NAME STAMP RAW DUR CONNS H2_CONNS RATE RATE2 GEN_CPU SRV_CPU COOLDOWN BOUND REPEAT TOOLS CASES \
    SERVER SERVE_TOOLS SERVE_CASES REDIS_TOOLS REDIS_CASES REDIS_BOUND HOST LOAD0 LOAD1 T_START T_END
"$PY" - "$RAW/meta.json" <<'PY'
import json, os, platform, subprocess, sys
e = os.environ
def cpu_model():
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.machine()
def steal(f0, f1):
    """Whole-run busy and steal % per CPU from two /proc/stat snapshots."""
    def load(p):
        return {l.split()[0]: [int(x) for x in l.split()[1:9]] for l in open(p)}
    a, b = load(f0), load(f1)
    out = {}
    for cpu in a:
        d = [y - x for x, y in zip(a[cpu], b.get(cpu, a[cpu]))]
        t = sum(d) or 1
        out[cpu[3:]] = {"steal_pct": round(100 * d[7] / t, 1),
                        "busy_pct": round(100 * (t - d[3] - d[4] - d[7]) / t, 1)}
    return out
def os_name():
    try:
        for l in open("/etc/os-release"):
            if l.startswith("PRETTY_NAME="):
                return l.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return platform.system()
def git_rev():
    try:
        r = subprocess.run(["git", "-C", os.path.dirname(e["RAW"]), "rev-parse", "--short", "HEAD"],
                           capture_output=True, text=True, timeout=5)
        return r.stdout.strip() or None
    except Exception:
        return None
raw = e["RAW"]
meta = {
  "name": e["NAME"], "started": e["STAMP"], "raw_dir": raw,
  "host": {"nproc": os.cpu_count(), "kernel": platform.release(), "os": os_name(),
           "cpu_model": cpu_model(),
           "mem_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
           "steal": steal(raw + "/host.stat0", raw + "/host.stat1"),
           "tcp_tw_reuse": open("/proc/sys/net/ipv4/tcp_tw_reuse").read().strip(),
           "tcp_congestion_control": open("/proc/sys/net/ipv4/tcp_congestion_control").read().strip(),
           "ip_local_port_range": open("/proc/sys/net/ipv4/ip_local_port_range").read().split()},
  "settings": {"duration_s": int(e["DUR"]), "conns": int(e["CONNS"]), "h2_conns": int(e["H2_CONNS"]),
               "rate": int(e["RATE"]),
               "rate2": int(e["RATE2"]), "gen_cpu": int(e["GEN_CPU"]), "srv_cpu": int(e["SRV_CPU"]),
               "cooldown_s": float(e["COOLDOWN"]), "bound_s": int(e["BOUND"]), "repeat": int(e["REPEAT"]),
               "tools": e["TOOLS"].split(), "cases": e["CASES"].split(),
               "servers": e["SERVER"].split(), "serve_tools": e["SERVE_TOOLS"].split(),
               "serve_cases": e["SERVE_CASES"].split(),
               "redis_tools": e["REDIS_TOOLS"].split(), "redis_cases": e["REDIS_CASES"].split(),
               "redis_requests": int(e["REDIS_REQUESTS"]), "redis_keys": int(e["REDIS_KEYS"]),
               "redis_data": int(e["REDIS_DATA"]), "redis_bound_s": int(e["REDIS_BOUND"]),
               "targets": {"nginx": "http://%s:18080 (/small, /large); h2c :18082 (/small); https :18443 (/small)" % e["HOST"],
                           "barrage": "http://%s:18081 (/bytes/1k)" % e["HOST"],
                           "redis": "redis://%s (free port, no persistence, keyspace prefilled)" % e["HOST"]}},
  "loadavg_before": e["LOAD0"], "loadavg_after": e["LOAD1"],
  "harness_wall_s": round(float(e["T_END"]) - float(e["T_START"]), 1),
  "git_rev": git_rev(),
  "versions": json.load(open(raw + "/versions.json")),
}
json.dump(meta, open(sys.argv[1], "w"), indent=1)
PY

"$PY" "$HERE/lib/report.py" build --meta "$RAW/meta.json" --results "$RAW/results.jsonl" \
    --json "$HERE/results/$NAME.json" --md "$HERE/results/$NAME.md"
log "wrote bench/results/$NAME.json and bench/results/$NAME.md ($(printf '%.0f' "$(echo "$T_END - $T_START" | bc)") s)"
