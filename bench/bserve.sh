#!/usr/bin/env bash
# Start/stop `barrage serve` as a benchmark target (the counterpart of nginx.sh).
#   bench/bserve.sh start|stop|restart|status
# Env: BARRAGE_BIN (default <repo>/target/release/barrage), BSERVE_CPU (default 0),
#   BSERVE_PREFIX (default /tmp/bench-bserve: pid file and logs).
# Runs `barrage serve --listen 127.0.0.1:18081 --threads 1` pinned to one core, like nginx
# (worker_processes 1); it answers /bytes/1k with 1 KiB (nginx: /small).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
BIN="${BARRAGE_BIN:-${CARGO_TARGET_DIR:-$ROOT/target}/release/barrage}"
CPU="${BSERVE_CPU:-0}"
PREFIX="${BSERVE_PREFIX:-/tmp/bench-bserve}"
LISTEN=127.0.0.1:18081
PROBE="http://$LISTEN/bytes/1k"
PIDFILE="$PREFIX/bserve.pid"

running() { [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; }

start() {
    if running; then echo "barrage serve already running (pid $(cat "$PIDFILE"))"; return 0; fi
    [ -x "$BIN" ] || { echo "no barrage binary at $BIN (cargo build --release)" >&2; return 1; }
    if curl -fsS --max-time 1 -o /dev/null "$PROBE" 2>/dev/null; then
        echo "something else already answers on $LISTEN" >&2; return 1
    fi
    mkdir -p "$PREFIX"
    # exec: the pid we record is barrage's own (taskset execs it), so /proc/<pid>/stat
    # carries the CPU time of all its threads.
    nohup taskset -c "$CPU" "$BIN" serve --listen "$LISTEN" --threads 1 \
        > "$PREFIX/stdout.log" 2> "$PREFIX/stderr.log" &
    echo $! > "$PIDFILE"
    for _ in $(seq 1 50); do
        if curl -fsS --max-time 1 -o /dev/null "$PROBE" 2>/dev/null; then
            echo "barrage serve up (pid $(cat "$PIDFILE"), cpu $CPU, $LISTEN)"; return 0
        fi
        running || break
        sleep 0.1
    done
    echo "barrage serve failed to start" >&2; tail -20 "$PREFIX/stderr.log" >&2 || true
    stop >/dev/null; return 1
}

stop() {
    if running; then
        local pid; pid="$(cat "$PIDFILE")"
        kill -TERM "$pid" 2>/dev/null || true
        for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null || true
        rm -f "$PIDFILE"
        echo "barrage serve stopped"
    else
        echo "barrage serve not running"
    fi
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    restart) stop; start ;;
    status) if running; then echo "running pid $(cat "$PIDFILE")"; else echo "stopped"; exit 1; fi ;;
    *) echo "usage: $0 start|stop|restart|status" >&2; exit 2 ;;
esac
