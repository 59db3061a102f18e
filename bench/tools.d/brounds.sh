# barrage with `--rounds` (HTTP/2, closed loop): each connection sends its freed streams'
# requests in rounds, as h2load's writes batch, instead of each as soon as its stream is
# free (plain `barrage`). Shows what rounds buy against a server at its CPU limit.
# Cases: h2-mN only.
tool_brounds() {
    local op="$1"; shift
    case "$op" in
    bin|version|parse) tool_barrage "$op" "$@" ;;
    cmd)
        local c="$1"
        case "$c" in
        h2-m*) tool_barrage cmd "$@" || return; CMD+=(--rounds) ;;
        *) REASON="--rounds is for the HTTP/2 cases (h2-mN)"; return 3 ;;
        esac ;;
    esac
}
