# barrage, an older build to compare against (BOLD_BIN, e.g. a copy of main's release
# binary): the commands and parse of tools.d/barrage.sh with that binary, so a change to
# the hot path is measured against its baseline in one run, as ratios.
tool_bold() {
    local op="$1"; shift
    case "$op" in
    bin) [ -n "$BOLD_BIN" ] && [ -x "$BOLD_BIN" ] && echo "$BOLD_BIN" ;;
    version) "$BOLD_BIN" --version 2>/dev/null | head -1 ;;
    cmd) BARRAGE_BIN="$BOLD_BIN" tool_barrage cmd "$@" ;;
    parse) tool_barrage parse "$@" ;;
    esac
}
