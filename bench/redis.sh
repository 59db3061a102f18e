#!/usr/bin/env bash
# Start/stop the benchmark redis-server (the counterpart of nginx.sh), and fill its keyspace.
#   bench/redis.sh start|stop|restart|status|port|prefill
# Env: REDIS_PREFIX (default /tmp/bench-redis: config-free working dir, pid, port, log),
#   REDIS_CPU (default 0), REDIS_SERVER_BIN, REDIS_KEYS (default 1000000, for prefill),
#   REDIS_DATA (default 32, value bytes for prefill).
# One redis-server (single-threaded, io-threads 1 as shipped) on 127.0.0.1 and a free port
# chosen at start (written to $REDIS_PREFIX/port), pinned to one core like nginx, with
# persistence off (`--save '' --appendonly no`) so no fork or disk write lands in a run.
#
# prefill: SETs every key both generators will read, so GET cases hit: redis-benchmark's
# `key:%012d` (its -r key pattern), ids 0..REDIS_KEYS-1, values of REDIS_DATA bytes;
# barrage reads the same keys (tools.d/barrage.sh). Done by one server-side Lua script, so it
# is exact (every key, unlike a random `redis-benchmark -t set -r`), takes a few seconds,
# and costs no generator's CPU. Skipped when the keys are already there.
set -euo pipefail
PREFIX="${REDIS_PREFIX:-/tmp/bench-redis}"
CPU="${REDIS_CPU:-0}"
BIN="${REDIS_SERVER_BIN:-$(command -v redis-server || echo /usr/bin/redis-server)}"
KEYS="${REDIS_KEYS:-1000000}"
DATA="${REDIS_DATA:-32}"
PIDFILE="$PREFIX/redis.pid"
PORTFILE="$PREFIX/port"

running() { [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; }
port() { cat "$PORTFILE"; }
cli() { redis-cli -h 127.0.0.1 -p "$(port)" "$@"; }

# A port nothing listens on now (the kernel's pick for port 0, released at once).
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

start() {
    if running; then echo "redis-server already running (pid $(cat "$PIDFILE"), port $(port))"; return 0; fi
    mkdir -p "$PREFIX"
    rm -f "$PREFIX"/dump.rdb
    free_port > "$PORTFILE"
    # exec through taskset: the pid written is redis-server's own, whose /proc stat holds
    # the CPU time of all its threads. No config file: everything is on the command line.
    nohup taskset -c "$CPU" "$BIN" --bind 127.0.0.1 --port "$(port)" --dir "$PREFIX" \
        --save '' --appendonly no --daemonize no --pidfile "$PIDFILE" --logfile "$PREFIX/redis.log" \
        > "$PREFIX/stdout.log" 2>&1 &
    for _ in $(seq 1 50); do
        if [ "$(cli ping 2>/dev/null)" = PONG ] && [ -s "$PIDFILE" ]; then
            echo "redis-server up (pid $(cat "$PIDFILE"), cpu $CPU, 127.0.0.1:$(port), dir $PREFIX)"; return 0
        fi
        sleep 0.1
    done
    echo "redis-server failed to start" >&2; cat "$PREFIX/redis.log" "$PREFIX/stdout.log" >&2 || true; return 1
}

stop() {
    if running; then
        local pid; pid="$(cat "$PIDFILE")"
        kill -TERM "$pid" 2>/dev/null || true
        for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        echo "redis-server stopped"
    else
        echo "redis-server not running"
    fi
}

prefill() {
    running || { echo "redis-server not running" >&2; return 1; }
    local want=$KEYS
    local have; have="$(cli dbsize)"
    if [ "$have" -ge "$want" ]; then echo "keyspace already filled ($have keys)"; return 0; fi
    local start; start=$(date +%s.%N)
    cli eval '
        local value = string.rep("x", tonumber(ARGV[2]))
        for i = 0, tonumber(ARGV[1]) - 1 do
            redis.call("SET", string.format("key:%012d", i), value)
        end
        return redis.call("DBSIZE")' 0 "$KEYS" "$DATA" > /dev/null
    echo "prefilled key:%012d, ids 0..$(( KEYS - 1 )), $DATA-byte values:" \
        "$(cli dbsize) keys in $(printf '%.1f' "$(echo "$(date +%s.%N) - $start" | bc)") s"
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    restart) stop; start ;;
    status) if running; then echo "running pid $(cat "$PIDFILE") port $(port)"; else echo "stopped"; exit 1; fi ;;
    port) port ;;
    prefill) prefill ;;
    *) echo "usage: $0 start|stop|restart|status|port|prefill" >&2; exit 2 ;;
esac
