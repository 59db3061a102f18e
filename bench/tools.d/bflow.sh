# barrage running the same request as a one-step flow (`--scenario`), to measure what the
# flow machinery costs per request against plain `barrage` (issue 14: at most 10 % more CPU
# per request). The scenario has one step, no captures and no checks, and takes the case's
# URL as a constant, so the request sent is byte for byte the plain run's.
# Cases: small, large (closed loop), rate, rate20k (open loop: one flow per arrival).
tool_bflow() {
    local op="$1"; shift
    case "$op" in
    bin|version|parse) tool_barrage "$op" "$@" ;;
    cmd)
        local c="$1" url="$2" pfx="$3"
        local scenario="$pfx.scenario.toml"
        printf '[[flow.one.step]]\nname = "get"\nurl = "{{url}}"\n' > "$scenario"
        local base=("$(tool_barrage bin)" run --scenario "$scenario" --var "url=$url" --duration "${DUR}s" --timeout 10s --format json)
        case "$c" in
        small|large|large-c*|body-*) CMD=("${base[@]}" --concurrency "$CONNS") ;;
        tls) CMD=("${base[@]}" --concurrency "$CONNS" --insecure) ;;
        rate|rate20k) CMD=("${base[@]}" --rate "$(case_rate "$c")") ;;
        *) REASON="unknown case"; return 3 ;;
        esac ;;
    esac
}
