#!/usr/bin/env bash
# Idempotent installer for the benchmark target (nginx) and the peer load generators.
# Re-running only installs what is missing or at a different version.
#
#   bench/install-peers.sh            # everything (as root, or with sudo for apt)
#   SKIP_K6=1 bench/install-peers.sh  # skip k6 (the slowest build)
#   ONLY="oha hey" bench/install-peers.sh
#
# Sources: Debian's packages (nginx, wrk, apache2-utils = ab, nghttp2-client = h2load, redis-server and redis-tools =
# redis-benchmark, helpers), the Go module
# proxy (`go install`: vegeta, hey, k6) and crates.io (`cargo install --locked`: oha).
# Needs Go and Rust already on the machine (they are on the project's machines); nothing
# else is downloaded. Pinned versions, overridable via env.
#
# Builds run under `nice -n 19` (NICE) so they do not starve other work on a small
# machine; oha builds in CARGO_TARGET_DIR (default /tmp/oha-target, kept for re-runs).
# The nginx and redis-server packages' own services are never started (policy-rc.d during
# the install) and are stopped and disabled if they run: the benchmark starts its own
# (bench/nginx.sh, bench/redis.sh).
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib/env.sh
source "$HERE/lib/env.sh"
VEGETA_VERSION="${VEGETA_VERSION:-v12.13.0}"
HEY_VERSION="${HEY_VERSION:-v0.1.5}"
K6_VERSION="${K6_VERSION:-v1.8.1}"
OHA_VERSION="${OHA_VERSION:-1.16.0}"
K6_BUILD_TIMEOUT="${K6_BUILD_TIMEOUT:-1800}"
OHA_BUILD_TIMEOUT="${OHA_BUILD_TIMEOUT:-2400}"
ONLY="${ONLY:-apt vegeta hey oha k6}"
read -r -a NICE <<< "${NICE-nice -n 19}"
export CARGO_TARGET_DIR="${OHA_TARGET_DIR:-/tmp/oha-target}"
LOGDIR="$HERE/logs"; mkdir -p "$LOGDIR"
FAILED=()

want() { [[ " $ONLY " == *" $1 "* ]]; }
log() { printf '[install] %s\n' "$*"; }
gomodver() { go version -m "$1" 2>/dev/null | awk '$1=="mod"{print $3}'; }
SUDO=()
if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null && SUDO=(sudo) || log "not root and no sudo: apt steps will fail"
fi

# --- apt: nginx and redis-server (targets), wrk, ab, h2load, redis-benchmark, helpers ----
# nghttp2-client: h2load, the HTTP/2 peer of the h2-mN cases.
# time: /usr/bin/time -v; bc; curl (readiness checks); util-linux: taskset; procps: pgrep;
# python3: result parsing; gcc/libc6-dev/pkg-config: linker for `cargo install oha`.
if want apt; then
    PKGS=(nginx wrk apache2-utils nghttp2-client redis-server redis-tools time bc curl jq util-linux procps python3
          ca-certificates gcc libc6-dev pkg-config)
    MISSING=()
    for p in "${PKGS[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || MISSING+=("$p")
    done
    if [ ${#MISSING[@]} -gt 0 ]; then
        log "apt install ${MISSING[*]}"
        # Forbid service starts while installing (the nginx package would otherwise start
        # the system nginx on :80 with one worker per core). Only our own policy file is
        # removed afterwards; an existing one (containers ship one) is left alone.
        POLICY=/usr/sbin/policy-rc.d OWN_POLICY=0
        if [ ! -e "$POLICY" ]; then
            printf '#!/bin/sh\n# bench/install-peers.sh: no service starts during install\nexit 101\n' |
                "${SUDO[@]}" tee "$POLICY" >/dev/null && "${SUDO[@]}" chmod 755 "$POLICY" && OWN_POLICY=1
        fi
        { "${SUDO[@]}" apt-get -o DPkg::Lock::Timeout=600 update -qq &&
          "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 \
              install -y -qq --no-install-recommends "${MISSING[@]}"; } > "$LOGDIR/apt-install.log" 2>&1 ||
            FAILED+=("apt: ${MISSING[*]} (see bench/logs/apt-install.log)")
        [ "$OWN_POLICY" = 1 ] && "${SUDO[@]}" rm -f "$POLICY"
    else
        log "apt packages present"
    fi
    # The system nginx service is never used: the benchmark runs its own instance from
    # bench/nginx.sh (prefix under /tmp, 127.0.0.1:18080 only, pinned to one core). If the
    # package's service runs anyway (installed earlier, or without policy-rc.d), stop it
    # and keep it from starting at boot: it would compete for the two cores.
    if dpkg-query -W -f='${Status}' nginx 2>/dev/null | grep -q 'install ok installed'; then
        if [ -d /run/systemd/system ]; then
            if systemctl is-enabled --quiet nginx 2>/dev/null || systemctl is-active --quiet nginx 2>/dev/null; then
                log "stopping and disabling the system nginx service"
                "${SUDO[@]}" systemctl disable --now nginx >/dev/null 2>&1 || true
            fi
        else
            # No systemd (container): the package's SysV script may have started it.
            if [ -s /run/nginx.pid ] && kill -0 "$(cat /run/nginx.pid)" 2>/dev/null; then
                log "stopping the system nginx (pid $(cat /run/nginx.pid))"
                "${SUDO[@]}" /usr/sbin/nginx -s quit >/dev/null 2>&1 || true
            fi
            command -v update-rc.d >/dev/null && "${SUDO[@]}" update-rc.d nginx disable >/dev/null 2>&1 || true
        fi
    fi
    # Same for the package's redis-server (it would listen on :6379 on a shared core).
    if dpkg-query -W -f='${Status}' redis-server 2>/dev/null | grep -q 'install ok installed'; then
        if [ -d /run/systemd/system ]; then
            if systemctl is-enabled --quiet redis-server 2>/dev/null || systemctl is-active --quiet redis-server 2>/dev/null; then
                log "stopping and disabling the system redis-server service"
                "${SUDO[@]}" systemctl disable --now redis-server >/dev/null 2>&1 || true
            fi
        else
            if [ -s /run/redis/redis-server.pid ] && kill -0 "$(cat /run/redis/redis-server.pid)" 2>/dev/null; then
                log "stopping the system redis-server (pid $(cat /run/redis/redis-server.pid))"
                "${SUDO[@]}" kill -TERM "$(cat /run/redis/redis-server.pid)" 2>/dev/null || true
            fi
            command -v update-rc.d >/dev/null && "${SUDO[@]}" update-rc.d redis-server disable >/dev/null 2>&1 || true
        fi
    fi
fi

have_go() {
    command -v go >/dev/null && return 0
    FAILED+=("$1: no Go toolchain on PATH (install Go >= 1.23 first)"); return 1
}

# --- vegeta --------------------------------------------------------------------
# The module proxy answers 403 to github.com/tsenart/vegeta/v12/@v/list, and
# `go install pkg@version` needs that list (deprecation check), so build through a
# throwaway module instead, which only fetches the pinned version.
if want vegeta && have_go vegeta; then
    if [ "$(gomodver "$GO_BIN_DIR/vegeta")" = "$VEGETA_VERSION" ]; then
        log "vegeta $VEGETA_VERSION present"
    else
        log "building vegeta $VEGETA_VERSION"
        tmp="$(mktemp -d)"
        ( cd "$tmp" && go mod init vegeta-build >/dev/null 2>&1 &&
          "${NICE[@]}" go get "github.com/tsenart/vegeta/v12@$VEGETA_VERSION" &&
          "${NICE[@]}" go install github.com/tsenart/vegeta/v12 ) > "$LOGDIR/vegeta-install.log" 2>&1 ||
            FAILED+=("vegeta (see bench/logs/vegeta-install.log)")
        rm -rf "$tmp"
    fi
fi

# --- hey -----------------------------------------------------------------------
if want hey && have_go hey; then
    if [ "$(gomodver "$GO_BIN_DIR/hey")" = "$HEY_VERSION" ]; then
        log "hey $HEY_VERSION present"
    else
        log "go install hey $HEY_VERSION"
        "${NICE[@]}" go install "github.com/rakyll/hey@$HEY_VERSION" > "$LOGDIR/hey-install.log" 2>&1 ||
            FAILED+=("hey (see bench/logs/hey-install.log)")
    fi
fi

# --- oha -----------------------------------------------------------------------
if want oha; then
    if [ "$(oha --version 2>/dev/null | awk '{print $2}')" = "$OHA_VERSION" ]; then
        log "oha $OHA_VERSION present"
    elif ! command -v cargo >/dev/null; then
        FAILED+=("oha: no cargo on PATH (install Rust first)")
    else
        log "cargo install oha $OHA_VERSION --locked (several minutes; target dir $CARGO_TARGET_DIR)"
        start=$(date +%s)
        "${NICE[@]}" timeout "$OHA_BUILD_TIMEOUT" cargo install oha --locked --version "$OHA_VERSION" \
            > "$LOGDIR/oha-install.log" 2>&1 ||
            FAILED+=("oha (rc=$?, see bench/logs/oha-install.log)")
        log "oha build took $(( $(date +%s) - start ))s"
    fi
fi

# --- k6 (optional, big build) ---------------------------------------------------
if want k6 && [ -z "${SKIP_K6:-}" ] && have_go k6; then
    if [ "$(gomodver "$GO_BIN_DIR/k6")" = "$K6_VERSION" ]; then
        log "k6 $K6_VERSION present"
    else
        log "go install k6 $K6_VERSION (bounded to ${K6_BUILD_TIMEOUT}s)"
        start=$(date +%s)
        "${NICE[@]}" timeout "$K6_BUILD_TIMEOUT" go install "go.k6.io/k6@$K6_VERSION" > "$LOGDIR/k6-install.log" 2>&1 ||
            FAILED+=("k6 (rc=$?, see bench/logs/k6-install.log)")
        log "k6 build took $(( $(date +%s) - start ))s"
    fi
fi

# --- record versions ------------------------------------------------------------
{
    echo "# recorded $(date -Is) on $(uname -r)"
    command -v nginx >/dev/null && echo "nginx: $(nginx -v 2>&1 | sed 's/^nginx version: //') (deb $(dpkg-query -W -f='${Version}' nginx 2>/dev/null))"
    command -v wrk >/dev/null && echo "wrk: $(wrk -v 2>&1 | head -1 | awk '{print $2}') (deb $(dpkg-query -W -f='${Version}' wrk 2>/dev/null))"
    command -v h2load >/dev/null && echo "h2load: $(h2load --version | awk '{print $2}') (nghttp2-client deb $(dpkg-query -W -f='${Version}' nghttp2-client 2>/dev/null))"
    command -v ab >/dev/null && echo "ab: $(ab -V 2>&1 | head -1 | sed 's/^This is //; s/ <\$Revision\$>//') (apache2-utils deb $(dpkg-query -W -f='${Version}' apache2-utils 2>/dev/null))"
    for t in vegeta hey k6; do
        [ -x "$GO_BIN_DIR/$t" ] && echo "$t: $(gomodver "$GO_BIN_DIR/$t") ($(go version "$GO_BIN_DIR/$t" | awk '{print $2}'))"
    done
    command -v redis-benchmark >/dev/null && echo "redis-benchmark: $(redis-benchmark --version | awk '{print $2}') (redis-tools deb $(dpkg-query -W -f='${Version}' redis-tools 2>/dev/null))"
    command -v oha >/dev/null && echo "oha: $(oha --version | awk '{print $2}') (cargo install --locked, $(rustc --version | awk '{print $1" "$2}'))"
} | tee "$LOGDIR/versions.txt"

if [ ${#FAILED[@]} -gt 0 ]; then
    printf '[install] FAILED: %s\n' "${FAILED[@]}" >&2
    exit 1
fi
log "all requested tools installed"
