#!/usr/bin/env bash
# The one entry point of the end-to-end benchmark:
#   1. installs the peers (bench/install-peers.sh) if one of the requested tools is missing,
#   2. builds barrage in release (`cargo build --release` in the repository root),
#   3. runs bench/peers.sh: every tool and case against nginx (pinned to CPU 0), and, with
#      SERVER including "barrage", wrk against `barrage serve --threads 1` (also CPU 0),
#      interleaved case by case with the nginx runs, and with SERVER including "redis",
#      redis-benchmark and barrage against a redis-server (also CPU 0).
# Results: bench/results/<date>.md and .json (raw outputs in bench/results/raw/<date>/).
#
#   bench/run.sh                                  # full run (~8 min + build)
#   SERVER=nginx bench/run.sh                     # generators only
#   TOOLS=wrk CASES="small large noka" bench/run.sh   # servers only: wrk vs nginx and barrage serve
#   TOOLS="wrk oha barrage" CASES="small rate" DURATION=5 bench/run.sh
#   REPEAT=3 bench/run.sh                         # medians of 3, for close calls
#   SERVER=redis REPEAT=3 bench/run.sh            # the Redis cases only (~10 min + build)
#   SERVER=redis REDIS_REQUESTS=100000 bench/run.sh   # a quick Redis run
#
# Env: SKIP_INSTALL=1 (never run install-peers.sh), SKIP_BUILD=1 (use the existing binary),
#   BARRAGE_BIN (default <repo>/target/release/barrage; if set, nothing is built), and all
#   of peers.sh's knobs (TOOLS, CASES, DURATION, CONNS, H2_CONNS, RATE, RATE2, REPEAT, SERVER,
#   SERVE_TOOLS, SERVE_CASES, REDIS_TOOLS, REDIS_CASES, REDIS_REQUESTS, REDIS_KEYS, REDIS_DATA,
#   REDIS_BOUND, GEN_CPU, SRV_CPU, COOLDOWN, TCP_CC, LABEL).
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
# shellcheck source=lib/env.sh
source "$HERE/lib/env.sh"
log() { printf '[run] %s\n' "$*" >&2; }

export TOOLS="${TOOLS-wrk ab hey vegeta oha k6 h2load barrage}"
export SERVER="${SERVER:-nginx barrage}"
export SERVE_TOOLS="${SERVE_TOOLS:-wrk}"
export REDIS_TOOLS="${REDIS_TOOLS:-redis_benchmark barrage}"
BUILD=1
if [ -n "${BARRAGE_BIN:-}" ] || [ -n "${SKIP_BUILD:-}" ]; then BUILD=0; fi
export BARRAGE_BIN="${BARRAGE_BIN:-${CARGO_TARGET_DIR:-$ROOT/target}/release/barrage}"

# Each target runs its own tools (nginx: TOOLS, barrage serve: SERVE_TOOLS, redis-server:
# REDIS_TOOLS), so TOOLS may be empty when nginx is not among them.
TOOLS_USED=""
[[ " $SERVER " == *" nginx "* ]] && TOOLS_USED+=" $TOOLS"
[[ " $SERVER " == *" barrage "* ]] && TOOLS_USED+=" $SERVE_TOOLS"
[[ " $SERVER " == *" redis "* ]] && TOOLS_USED+=" $REDIS_TOOLS"
NEED_BARRAGE=0
[[ " $TOOLS_USED " == *" barrage "* || " $SERVER " == *" barrage "* ]] && NEED_BARRAGE=1
if [[ " $SERVER " == *" nginx "* ]] && [ -z "$(echo "$TOOLS" | tr -d ' ')" ]; then
    log "TOOLS is empty: nothing to run against nginx (use SERVER=barrage for the server runs only)"
    exit 2
fi

# --- 1. peers -----------------------------------------------------------------
for f in "$HERE"/tools.d/*.sh; do
    # shellcheck source=/dev/null
    source "$f"
done
missing=()
for t in $TOOLS_USED; do
    [ "$t" = barrage ] && continue
    declare -F "tool_$t" >/dev/null || { log "unknown tool '$t' (no bench/tools.d/$t.sh)"; exit 2; }
    [ -n "$(tool_"$t" bin 2>/dev/null)" ] || missing+=("$t")
done
[[ " $SERVER " == *" nginx "* ]] && ! command -v nginx >/dev/null && missing+=(nginx)
if [[ " $SERVER " == *" redis "* ]]; then
    for c in redis-server redis-cli; do command -v "$c" >/dev/null || missing+=("$c"); done
fi
for c in bc curl taskset pgrep python3; do command -v "$c" >/dev/null || missing+=("$c"); done
[ -x /usr/bin/time ] || missing+=(time)
if [ ${#missing[@]} -gt 0 ]; then
    if [ -n "${SKIP_INSTALL:-}" ]; then
        log "missing: ${missing[*]} (SKIP_INSTALL set: they are reported as missing)"
    else
        log "missing: ${missing[*]} -> bench/install-peers.sh"
        "$HERE/install-peers.sh" || log "install-peers.sh failed: the missing tools are reported as missing"
        source "$HERE/lib/env.sh"   # GOBIN may exist only now
    fi
fi

# --- 2. barrage -----------------------------------------------------------------
# peers.sh sets the TCP congestion control (TCP_CC, cubic by default): told before the build
# when it cannot.
cc_now="$(cat /proc/sys/net/ipv4/tcp_congestion_control)"
if [ "${TCP_CC:-cubic}" != keep ] && [ "${TCP_CC:-cubic}" != "$cc_now" ] &&
    ! [ -w /proc/sys/net/ipv4/tcp_congestion_control ]; then
    log "TCP_CC=${TCP_CC:-cubic}: cannot set the congestion control (not root); TCP_CC=keep runs under $cc_now"
    exit 2
fi
if [ "$NEED_BARRAGE" = 1 ]; then
    if [ "$BUILD" = 1 ]; then
        log "cargo build --release (in $ROOT)"
        start=$(date +%s)
        ( cd "$ROOT" && cargo build --release ) || { log "cargo build --release failed"; exit 1; }
        log "build took $(( $(date +%s) - start ))s"
    fi
    [ -x "$BARRAGE_BIN" ] || { log "no barrage binary at $BARRAGE_BIN"; exit 1; }
    log "barrage: $("$BARRAGE_BIN" --version 2>/dev/null | head -1) ($BARRAGE_BIN)"
fi

# --- 3. measure -------------------------------------------------------------------
load1="$(cut -d' ' -f1 /proc/loadavg)"
if [ "$(echo "$load1 > 0.5" | bc)" = 1 ]; then
    log "warning: load average $load1 before the run (builds still running?): expect noisy numbers"
fi
exec "$HERE/peers.sh"
