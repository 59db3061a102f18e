#!/usr/bin/env bash
# Reruns of `barrage capacity` against fixed targets: does the search give the same answer
# twice? (issue 32, finding 6: two identical runs against nginx gave 188 and 700 req/s.)
#   bench/capacity.sh                 # 5 reruns per target, results in bench/results/
# Env: BARRAGE_BIN (default <repo>/target/release/barrage), RUNS (5), TARGETS
#   ("known nginx varnish"), STEP (2s, the finding's), PRECISION (2%), SLOS
#   ("p99<100ms success>=99.9%"), SERVER_CPU (0) and GEN_CPU (1): the servers are pinned to
#   one core and barrage to the other, NICE (-20: ahead of the machine's other tenants, a
#   compiler of a colleague, without starving them as a real-time class would), TAG (a
#   suffix of the results' name), QUIET (0.3) and QUIET_WAIT (600): before each run, wait up
#   to QUIET_WAIT seconds for the machine's other tenants to use under QUIET cores over 5 s
#   (the run starts anyway then, and its row says how busy the machine was). REF_CONNS (256)
#   and REF_TIME (3): wrk's reference runs around each search (see reference() below).
# Targets, all on loopback, free ports:
#   known    barrage serve --max-concurrency 10 --latency 10ms: 10 requests at a time of
#            about 11 ms, about 900 req/s, whatever the CPU does
#   pool     nginx balancing four origins of 10 requests at a time of 10 ms each (barrage
#            testbed up nginx-lb --backends 4 --shape latency=10ms,capacity=10+1000): four
#            times known's capacity, set by the origins' slots, not by a CPU; /bytes/1k
#   miss     varnishd in front of one origin of 40 slots of 10 ms, every request a new object
#            (/obj/{id} --hit-ratio 0): the cache-miss case of a cache study, its capacity the
#            origin's; varnishstat's hits and misses are kept for each run
#   nginx    nginx in front of one barrage origin (barrage testbed up nginx-lb), /bytes/1k:
#            nginx's own CPU is the limit, so its capacity moves with the machine's speed
#   varnish  varnishd in front of one barrage origin (barrage testbed up varnish), /bytes/1k
#            (one URL: hits after the first): the same, varnish's CPU
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
BIN="${BARRAGE_BIN:-${CARGO_TARGET_DIR:-$ROOT/target}/release/barrage}"
RUNS="${RUNS:-5}"
TARGETS="${TARGETS:-known pool miss nginx varnish}"
STEP="${STEP:-2s}"
PRECISION="${PRECISION:-2%}"
SLOS="${SLOS:-p99<100ms success>=99.9%}"
SERVER_CPU="${SERVER_CPU:-0}"
GEN_CPU="${GEN_CPU:-1}"
NICE="${NICE:--20}"
STAMP="$(date -u +%Y-%m-%d_%H%M%S)"
NAME="${STAMP}-capacity${TAG:+-$TAG}"
OUT="$HERE/results/raw/$NAME"
mkdir -p "$OUT"
[ -x "$BIN" ] || { echo "no barrage binary at $BIN (cargo build --release)" >&2; exit 1; }

WORK="$(mktemp -d /tmp/barrage-capacity-bench.XXXXXX)"
# start() runs in a command substitution's subshell: the origin's PID goes through a file.
cleanup() {
    [ -f "$WORK/serve.pid" ] && kill "$(cat "$WORK/serve.pid")" 2>/dev/null || true
    for bed in "$WORK"/bed-*; do
        [ -d "$bed" ] && "$BIN" testbed down --dir "$bed" >/dev/null 2>&1 || true
    done
    rm -rf "$WORK"
}
trap cleanup EXIT

# The URL of a target, with its servers started and pinned to SERVER_CPU.
start() {
    case "$1" in
        known)
            nice -n "$NICE" taskset -c "$SERVER_CPU" "$BIN" serve --listen 127.0.0.1:0 --threads 1 \
                --max-concurrency 10 --latency 10ms > "$WORK/serve.out" 2>&1 &
            echo $! > "$WORK/serve.pid"
            for _ in $(seq 1 50); do grep -q listening "$WORK/serve.out" && break; sleep 0.1; done
            echo "$(grep -o 'http://[0-9.:]*' "$WORK/serve.out" | head -1)/"
            ;;
        nginx | varnish | pool | miss)
            local topology front path=/bytes/1k args=()
            case "$1" in
                nginx) topology=nginx-lb front=nginx-lb args=(--backends 1) ;;
                varnish) topology=varnish front=varnish ;;
                pool) topology=nginx-lb front=nginx-lb args=(--backends 4 --shape latency=10ms,capacity=10+1000) ;;
                miss) topology=varnish front=varnish path='/obj/{id}' args=(--shape latency=10ms,capacity=40+1000) ;;
            esac
            nice -n "$NICE" taskset -c "$SERVER_CPU" "$BIN" testbed up "$topology" "${args[@]}" --dir "$WORK/bed-$1" \
                > "$WORK/bed-$1.out"
            local url
            url="$(awk -v f="$front" '$1 == f { for (i = 1; i <= NF; i++) if ($i ~ /^http:\/\//) print $i }' "$WORK/bed-$1.out" | head -1)"
            echo "${url%/}$path"
            ;;
    esac
}

# The target's own flags for `barrage capacity`: miss asks for a new object every request.
target_args() {
    case "$1" in
        miss) echo "--objects 1000 --hit-ratio 0" ;;
    esac
}

# varnish's hits and misses so far (miss: the ground truth that every request missed).
varnish_counts() {
    [ "$1" = miss ] || return 0
    varnishstat -n "$WORK/bed-$1/varnish" -1 -f MAIN.cache_hit -f MAIN.cache_miss 2>/dev/null |
        awk '{ v[$1] = $2 } END { print v["MAIN.cache_hit"] + 0, v["MAIN.cache_miss"] + 0 }'
}

stop() {
    case "$1" in
        known)
            kill "$(cat "$WORK/serve.pid")" 2>/dev/null || true
            rm -f "$WORK/serve.pid"
            ;;
        *) "$BIN" testbed down --dir "$WORK/bed-$1" >/dev/null ;;
    esac
}

# CPU seconds: busy (all but idle and iowait) and steal of the whole machine, and of the
# processes at our niceness (the servers; barrage's own is timed), to tell how much of the
# machine its other tenants took during a run.
cpu_now() {
    local hz; hz=$(getconf CLK_TCK)
    local ours=0 pid ticks
    for pid in $(ps -eo pid=,ni= | awk -v n="$NICE" '$2 == n { print $1 }'); do
        ticks=$(awk '{ print $14 + $15 }' "/proc/$pid/stat" 2>/dev/null || echo 0)
        ours=$((ours + ticks))
    done
    awk -v hz="$hz" -v ours="$ours" '$1 == "cpu" {
        busy = $2 + $3 + $4 + $7 + $8; printf "%.2f %.2f %.2f\n", busy / hz, $9 / hz, ours / hz }' /proc/stat
}

# Waits for the other tenants to use under QUIET cores over 5 s, at most QUIET_WAIT s;
# prints the seconds waited.
quiet() {
    local waited=0 a b
    while :; do
        a=$(cpu_now); sleep 5; b=$(cpu_now)
        if echo "$a $b" | awk -v q="${QUIET:-0.3}" '{ exit !((($4 - $1) - ($6 - $3)) / 5 < q) }'; then break; fi
        waited=$((waited + 5))
        [ "$waited" -ge "${QUIET_WAIT:-600}" ] && break
    done
    echo "$waited"
}

# The target's own saturated throughput at this moment, by wrk (a peer: outside barrage),
# closed loop over REF_CONNS connections (256: capacity's in-flight bound) for REF_TIME
# seconds: run just before and just after each search, it tells the target's drift from
# minute to minute (its other tenants, its caches) from the search's own spread, as a
# reference build does for a perf dashboard. Empty without wrk.
reference() {
    command -v wrk >/dev/null || return 0
    local script=()
    if [[ "$1" == *"{id}"* ]]; then
        # Every request a new object, as the search's: ids from a start no run shares (below
        # 10^14, which Lua still prints as an integer, not as 1.7e+15).
        printf 'local n = %s\nrequest = function() n = n + 1; return wrk.format(nil, "%s" .. n) end\n' \
            "$(( ($(date +%s) % 1000000) * 1000000 ))" "$(echo "$1" | sed -E 's#^https?://[^/]+##; s#\{id\}##')" > "$WORK/new.lua"
        script=(-s "$WORK/new.lua")
    fi
    nice -n "$NICE" taskset -c "$GEN_CPU" wrk -t1 -c"${REF_CONNS:-256}" -d"${REF_TIME:-3}s" "${script[@]}" "${1//\{id\}/0}" 2>/dev/null |
        awk '/^Requests\/sec/ { print $2 }'
}

slo_args=()
for s in $SLOS; do slo_args+=(--slo "$s"); done
{
    echo "date_utc=$STAMP"
    echo "host=$(hostname) cpus=$(nproc) cpu='$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)' kernel=$(uname -r)"
    echo "commit=$(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet || echo +dirty)"
    echo "nginx=$(nginx -v 2>&1 | cut -d/ -f2) varnishd=$(varnishd -V 2>&1 | head -1 | grep -o 'varnish-[0-9.]*')"
    echo "load_before=$(cut -d' ' -f1-3 /proc/loadavg) nice=$NICE server_cpu=$SERVER_CPU generator_cpu=$GEN_CPU step=$STEP precision=$PRECISION"
} > "$OUT/machine.txt"

for target in $TARGETS; do
    url="$(start "$target")"
    echo "$target: $url" >&2
    read -r -a own <<< "$(target_args "$target")"
    cmd=(nice -n "$NICE" taskset -c "$GEN_CPU" "$BIN" capacity "$url" "${own[@]}" "${slo_args[@]}" --step "$STEP"
        --precision "$PRECISION" --max-time 5m --format json)
    echo "${cmd[*]}" > "$OUT/$target.command"
    for run in $(seq 1 "$RUNS"); do
        quiet > "$OUT/$target-$run.waited"
        ref_before=$(reference "$url")
        cache_before=$(varnish_counts "$target")
        before=$(cpu_now) t0=$(date +%s.%N)
        /usr/bin/time -f "%U %S" -o "$OUT/$target-$run.time" "${cmd[@]}" > "$OUT/$target-$run.json" 2> "$OUT/$target-$run.err" || true
        after=$(cpu_now) t1=$(date +%s.%N)
        # wall busy steal servers barrage (seconds), for capacity_report.py
        echo "$t0 $t1 $before $after $(cat "$OUT/$target-$run.time")" | awk '{
            printf "%.1f %.1f %.1f %.1f %.1f\n", $2 - $1, $6 - $3, $7 - $4, $8 - $5, $9 + $10 }' > "$OUT/$target-$run.cpu"
        echo "  run $run: $(python3 -c 'import json,sys; v=json.load(open(sys.argv[1])); print(v["capacity_per_sec"], v["interval_per_sec"], "verified" if v["verified"] else "not verified")' "$OUT/$target-$run.json")" >&2
        cut -d' ' -f1-3 /proc/loadavg > "$OUT/$target-$run.load"
        if [ -n "$cache_before" ]; then echo "$cache_before $(varnish_counts "$target")" > "$OUT/$target-$run.varnish"; fi
        echo "$ref_before $(reference "$url")" > "$OUT/$target-$run.wrk"
    done
    stop "$target"
done
echo "load_after=$(cut -d' ' -f1-3 /proc/loadavg)" >> "$OUT/machine.txt"
python3 "$HERE/lib/capacity_report.py" "$OUT" "$HERE/results/$NAME"
echo "bench/results/$NAME.md" >&2
