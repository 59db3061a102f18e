# Sourced by the bench scripts (install-peers.sh, peers.sh, run.sh): puts the peers that
# `go install` and `cargo install` build on PATH, wherever GOBIN/GOPATH/CARGO_HOME point.
# shellcheck shell=bash
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$HOME/go/bin:/usr/local/go/bin:$PATH"
# Never let `go` download a toolchain of its own (this workplace only reaches the module
# proxy for modules): build with the installed Go or fail clearly.
export GOTOOLCHAIN=local
if command -v go >/dev/null 2>&1; then
    GO_BIN_DIR="$(go env GOBIN 2>/dev/null)"
    [ -n "$GO_BIN_DIR" ] || GO_BIN_DIR="$(go env GOPATH 2>/dev/null | cut -d: -f1)/bin"
    export PATH="$GO_BIN_DIR:$PATH"
else
    GO_BIN_DIR="$HOME/go/bin"
fi
