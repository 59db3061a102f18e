#!/usr/bin/env python3
"""Build results JSON + markdown for one run, or a side-by-side markdown of several runs.

  report.py build --meta META.json --results RESULTS.jsonl --json OUT.json --md OUT.md
  report.py md RUN.json                 # re-render one run's markdown to stdout
  report.py combine RUN1.json RUN2.json ...   # side-by-side markdown to stdout

Ratios are always within one run: every tool against wrk (req/s, CPU µs/req, peak RSS),
rate cases against vegeta and oha (achieved rate, p99), the HTTP/2 cases (h2-mN) against
h2load, `barrage serve` against nginx with the same generator, and the Redis cases against
redis-benchmark.
"""
import json
import statistics
import sys

CASE_TITLE = {
    "small": "A. Max throughput, keep-alive, {conns} conns, {dur} s, 1 KiB response",
    "large": "B. Max throughput, keep-alive, {conns} conns, {dur} s, 1 MiB response",
    "rate": "C. Open loop at {rate} req/s, {dur} s, 1 KiB response (keep-alive)",
    "rate20k": "D. Open loop at {rate2} req/s, {dur} s, 1 KiB response (keep-alive)",
    "noka": "E. New connection per request, {conns} concurrent, {dur} s, 1 KiB response",
    "tls": "H. HTTPS (ECDSA P-256), keep-alive, {conns} conns, {dur} s, 1 KiB response",
}
H2_REF = "h2load"                # reference generator for the HTTP/2 cases (h2-mN)


def is_h2(case):
    """h2-m10, h2-m100: HTTP/2 (h2c), H2_CONNS connections with N streams each."""
    return case.startswith("h2-m")


def is_big(case):
    """The 1 MiB cases at each concurrency (large, large-cN) and the body-size sweep (body-Nk,
    body-Nm)."""
    return case == "large" or case.startswith("large-c") or case.startswith("body-")


def case_title(case, s):
    if case.startswith("large-c"):
        return f"B. Max throughput, keep-alive, {case[7:]} conns, {s['duration_s']} s, 1 MiB response"
    if case.startswith("body-"):
        size, _, conns = case[5:].partition("-c")
        size = f"{size[:-1]} {'MiB' if size.endswith('m') else 'KiB'}"
        return (f"G. Body size sweep: keep-alive, {conns or s['conns']} conns, {s['duration_s']} s, "
                f"{size} response (peak RSS: bounded memory)")
    if is_h2(case):
        return (f"F. HTTP/2 (h2c), {s.get('h2_conns', 10)} connections × {case[4:]} streams, "
                f"{s['duration_s']} s, 1 KiB response (h2load -c/-m, barrage -c/--streams)")
    return CASE_TITLE.get(case, case).format(**titles(s))
RATE_CASES = ("rate", "rate20k")
REF = "wrk"                      # reference generator for the max-throughput cases
RATE_REFS = ("vegeta", "oha")    # references for the open-loop cases
SUBJECT = "barrage"              # the tool under test (gets the summary section)
SERVER_NAME = {"nginx": "nginx", "barrage": "barrage serve", "redis": "redis-server"}
REDIS_REF = "redis_benchmark"    # reference generator for the Redis cases


def is_rate(case):
    return case in RATE_CASES


def fmt(v, nd=0):
    if v is None:
        return "—"
    if isinstance(v, float) or nd:
        return f"{v:,.{nd}f}"
    return f"{v:,}"


def mib(kb):
    return None if kb is None else kb / 1024


def ratio(a, b):
    if a is None or not b:
        return None
    return a / b


def rfmt(v):
    return "—" if v is None else f"{v:.2f}"


def lat(v):
    if v is None:
        return "—"
    return f"{v:.2f}" if v < 10 else f"{v:.1f}"


def rss(r):
    return mib(r.get("maxrss_kb")) if r else None


def achieved(r):
    return (r.get("achieved_rate") or r.get("rps")) if r else None


def notes(r):
    n = []
    if r.get("dropped_iterations"):
        n.append(f"{r['dropped_iterations']:,} dropped iterations")
    if r.get("achieved_rate") and r.get("rps") and abs(r["achieved_rate"] - r["rps"]) > 0.02 * r["rps"]:
        n.append(f"throughput {r['rps']:,.0f}/s")
    if r.get("service_p99_ms") is not None and r.get("p99_ms") is not None \
            and abs(r["service_p99_ms"] - r["p99_ms"]) > 0.05 * r["p99_ms"]:
        n.append(f"service p99 {lat(r['service_p99_ms'])} ms")
    if r.get("late"):
        n.append(f"{r['late']:,.0f} sent late")
    if r.get("bound_reached"):
        n.append("in-flight bound reached")
    if r.get("lag_p99_ms") and r["lag_p99_ms"] >= 1:
        n.append(f"send lag p99 {lat(r['lag_p99_ms'])} ms")
    if r.get("unfinished"):
        n.append(f"{r['unfinished']:,.0f} unfinished")
    if r.get("streams_max"):
        n.append(f"{r['streams_max']:,.0f} streams in use at most")
    if r.get("stream_retries"):
        n.append(f"{r['stream_retries']:,.0f} unprocessed streams retried")
    if r.get("hit_pct") is not None and r.get("srv_hit_pct") is not None \
            and abs(r["hit_pct"] - r["srv_hit_pct"]) > 0.01:
        n.append(f"tool's own hit ratio {r['hit_pct']:.2f} %")
    if r.get("note"):
        n.append(r["note"])
    return "; ".join(n)


def steal(r):
    g, s_ = r.get("gen_steal_pct"), r.get("srv_steal_pct")
    return "—" if g is None else f"{g:.0f}/{s_:.0f}"


def summarize(results, tools):
    """One row per (server, case, tool): medians over repetitions (REPEAT>1); order = TOOLS."""
    groups = {}
    for r in results:
        groups.setdefault((r.get("server", "nginx"), r["case"], r["tool"]), []).append(r)
    order = {}
    for t in tools:
        order.setdefault(t, len(order))
    rows = []
    for (server, case, tool), rs in sorted(groups.items(), key=lambda kv: order.get(kv[0][2], 99)):
        ok = [r for r in rs if r["status"] == "ok"]
        if not ok:
            rows.append(dict(rs[0], server=server))
            continue
        row = {"server": server, "tool": tool, "case": case, "status": "ok", "n": len(rs), "n_ok": len(ok)}
        for k in ok[0]:
            if isinstance(ok[0][k], bool):
                row[k] = any(r.get(k) for r in ok)
                continue
            vals = [r[k] for r in ok if isinstance(r.get(k), (int, float)) and not isinstance(r.get(k), bool)]
            if k in ("rep",) or not vals:
                if k not in row and not isinstance(ok[0][k], (int, float)):
                    row[k] = ok[0][k]
                continue
            row[k] = statistics.median(vals)
        rps = [r["rps"] for r in ok if r.get("rps") is not None]
        if len(rps) > 1:
            row["rps_min"], row["rps_max"] = min(rps), max(rps)
        if len(ok) < len(rs):
            row["note"] = f"{len(rs) - len(ok)} of {len(rs)} repetitions failed"
        rows.append(row)
    return rows


def rps_cell(r):
    s = fmt(r.get("rps"))
    if r.get("rps_min") is not None:
        s += f" ({r['rps_min']:,.0f}–{r['rps_max']:,.0f})"
    return s


def pick(rows, server, case, tool):
    r = next((x for x in rows if x.get("server", "nginx") == server and x["case"] == case
              and x["tool"] == tool), None)
    return r if r and r["status"] == "ok" else None


def skipped(r):
    why = r.get("reason", "")
    return f"| {r['tool']} | *{r['status']}*: {why} |"


def titles(s):
    return dict(conns=s["conns"], dur=s["duration_s"], rate=s["rate"], rate2=s.get("rate2", 20000))


def cc_text(h):
    """The run's TCP congestion control, and what bbr does to it on loopback."""
    cc = h.get("tcp_congestion_control")
    if cc is None:
        return "not recorded"
    if cc.startswith("bbr"):
        return (f"{cc} (**paces loopback: bodies of 256 KiB and more measure the pacing, not "
                f"comparable with runs under cubic**)")
    return cc


def host_line(m):
    h = m["host"]
    st = h.get("steal") or {}
    steal_s = ", ".join(f"cpu{c} {v['steal_pct']:.1f} % (busy {v['busy_pct']:.0f} %)"
                        for c, v in sorted(st.items()))
    return (f"Machine: {h['nproc']} CPUs ({h.get('cpu_model', '?')}), {h.get('mem_gib', '?')} GiB, "
            f"{h.get('os', '')} kernel {h['kernel']}, TCP congestion control {cc_text(h)}. "
            f"Hypervisor steal over the whole run: "
            f"{steal_s or 'n/a'}. Load avg before {m['loadavg_before']}, after {m['loadavg_after']}.")


def summary_section(rows, s):
    """barrage's ratios in one place (only when barrage ran against nginx)."""
    out = []
    mine = {r["case"]: r for r in rows if r["tool"] == SUBJECT and r.get("server", "nginx") == "nginx"}
    if not mine:
        return out
    f = titles(s)
    out.append(f"## Summary: {SUBJECT} against the peers (same run, target nginx)")
    out.append("")
    out.append("barrage ÷ peer: for req/s and achieved rate > 1 is better; "
               "for CPU µs/req, peak RSS and p99 < 1 is better.")
    out.append("")
    closed = [c for c in s["cases"] if c in mine and not is_rate(c) and not is_h2(c)]
    if closed:
        out.append("| case | barrage req/s | req/s ÷ wrk | CPU µs/req | ÷ wrk | peak RSS MiB | ÷ wrk | p99 ms | errors |")
        out.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        for case in closed:
            b, w = pick(rows, "nginx", case, SUBJECT), pick(rows, "nginx", case, REF)
            if b is None:
                out.append(f"| {case} | *{mine[case]['status']}*: {mine[case].get('reason', '')} |")
                continue
            out.append(
                f"| {case} | {fmt(b.get('rps'))} | {rfmt(ratio(b.get('rps'), w and w.get('rps')))} "
                f"| {fmt(b.get('cpu_us_per_req'), 1)} "
                f"| {rfmt(ratio(b.get('cpu_us_per_req'), w and w.get('cpu_us_per_req')))} "
                f"| {fmt(rss(b), 1)} | {rfmt(ratio(rss(b), rss(w)))} | {lat(b.get('p99_ms'))} "
                f"| {fmt(b.get('errors'))} |")
        out.append("")
    h2 = [c for c in s["cases"] if c in mine and is_h2(c)]
    if h2:
        out.append("| case | barrage req/s | req/s ÷ h2load | CPU µs/req | ÷ h2load | nginx CPU % "
                   "| streams in use | peak RSS MiB | p99 ms | errors |")
        out.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for case in h2:
            b, h = pick(rows, "nginx", case, SUBJECT), pick(rows, "nginx", case, H2_REF)
            if b is None:
                out.append(f"| {case} | *{mine[case]['status']}*: {mine[case].get('reason', '')} |")
                continue
            out.append(
                f"| {case} | {fmt(b.get('rps'))} | {rfmt(ratio(b.get('rps'), h and h.get('rps')))} "
                f"| {fmt(b.get('cpu_us_per_req'), 1)} "
                f"| {rfmt(ratio(b.get('cpu_us_per_req'), h and h.get('cpu_us_per_req')))} "
                f"| {fmt(b.get('srv_cpu_pct'))} | {fmt(b.get('streams_max'))} | {fmt(rss(b), 1)} "
                f"| {lat(b.get('p99_ms'))} | {fmt(b.get('errors'))} |")
        out.append("")
    opened = [c for c in s["cases"] if c in mine and is_rate(c)]
    if opened:
        out.append("| case | target req/s | barrage achieved | ÷ vegeta | ÷ oha | barrage p99 ms "
                   "| ÷ vegeta | ÷ oha | CPU µs/req | ÷ vegeta | ÷ oha | peak RSS MiB | errors |")
        out.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for case in opened:
            target = f["rate"] if case == "rate" else f["rate2"]
            b = pick(rows, "nginx", case, SUBJECT)
            if b is None:
                out.append(f"| {case} | {fmt(target)} | *{mine[case]['status']}*: {mine[case].get('reason', '')} |")
                continue
            v, o = pick(rows, "nginx", case, "vegeta"), pick(rows, "nginx", case, "oha")
            g = lambda r, k: r and r.get(k)
            out.append(
                f"| {case} | {fmt(target)} | {fmt(achieved(b))} "
                f"| {rfmt(ratio(achieved(b), achieved(v)))} | {rfmt(ratio(achieved(b), achieved(o)))} "
                f"| {lat(b.get('p99_ms'))} | {rfmt(ratio(b.get('p99_ms'), g(v, 'p99_ms')))} "
                f"| {rfmt(ratio(b.get('p99_ms'), g(o, 'p99_ms')))} | {fmt(b.get('cpu_us_per_req'), 1)} "
                f"| {rfmt(ratio(b.get('cpu_us_per_req'), g(v, 'cpu_us_per_req')))} "
                f"| {rfmt(ratio(b.get('cpu_us_per_req'), g(o, 'cpu_us_per_req')))} "
                f"| {fmt(rss(b), 1)} | {fmt(b.get('errors'))} |")
        out.append("")
    return out


def targets_section(rows, s):
    """Issue 36's performance targets, each judged from this run's medians: met, missed, or
    not measured (its case or its peer did not run). Ratios are barrage ÷ peer."""
    checks = []   # (target, case, what was measured, goal, met or None)

    def both(case, peer, server="nginx"):
        return pick(rows, server, case, SUBJECT), pick(rows, server, case, peer)

    def check(target, case, peer, goals, server="nginx"):
        """goals: (key, op, bound): ratio of key (barrage ÷ peer) op bound."""
        b, p = both(case, peer, server)
        if not (b and p):
            checks.append((target, case, f"not measured (barrage or {peer} missing)", "", None))
            return
        parts, ok = [], True
        for key, op, bound in goals:
            r = ratio(b.get(key), p.get(key))
            parts.append(f"{key} {rfmt(r)}")
            ok = ok and r is not None and (r >= bound if op == ">=" else r <= bound)
        goal = ", ".join(f"{k} {op} {b_}" for k, op, b_ in goals)
        checks.append((target, case, f"÷ {peer}: " + ", ".join(parts), goal, ok))

    for case in ("large-c1", "large-c4", "large"):
        check("1. 1 MiB", case, REF, [("rps", ">=", 1.0), ("cpu_us_per_req", "<=", 1.0)])
    # Memory is bounded if the bodies over 1 MiB cost no more than the 1 MiB one.
    big = [c for c in s["cases"] if c.startswith("body-") and c.endswith("m")]
    one = pick(rows, "nginx", "large", SUBJECT)
    for case in big:
        b = pick(rows, "nginx", case, SUBJECT)
        if not (b and one and rss(b) and rss(one)):
            checks.append(("1. bounded memory", case, "not measured", "", None))
            continue
        grow = rss(b) / rss(one)
        checks.append(("1. bounded memory", case, f"peak RSS {fmt(rss(b), 1)} MiB, {grow:.2f}× the 1 MiB case's",
                       "≤ 1.25× the 1 MiB case's", grow <= 1.25))
    for case in ("small", "noka"):
        check("2. keep-alive, new connection", case, REF, [("cpu_us_per_req", "<=", 0.9)])
    b, o = both("rate20k", "oha")
    if b and o:
        exact = achieved(b) is not None and achieved(b) >= 0.999 * titles(s)["rate2"]
        late = b.get("late") or 0
        cpu, p99 = ratio(b.get("cpu_us_per_req"), o.get("cpu_us_per_req")), ratio(b.get("p99_ms"), o.get("p99_ms"))
        ok = exact and late == 0 and cpu is not None and cpu <= 0.9 and p99 is not None and p99 <= 1.5
        checks.append(("3. open loop 20,000/s", "rate20k",
                       f"achieved {fmt(achieved(b))}/s, {fmt(late)} late, ÷ oha: CPU {rfmt(cpu)}, p99 {rfmt(p99)}",
                       "exact, 0 late, CPU ≤ 0.9, p99 ≤ 1.5", ok))
    else:
        checks.append(("3. open loop 20,000/s", "rate20k", "not measured (barrage or oha missing)", "", None))
    for case in ("h2-m10", "h2-m100"):
        check("4. HTTP/2", case, H2_REF, [("rps", ">=", 1.0), ("cpu_us_per_req", "<=", 0.9)])
    if "redis" in s.get("servers", []):
        for case in ("get-p16", "set-p16"):
            check("5. Redis pipeline 16", case, REDIS_REF, [("rps", ">=", 1.0), ("cpu_us_per_req", "<=", 0.9)], "redis")
    out = ["## Targets (issue 36)", "",
           "Each target judged from this run's medians; a target whose case or peer did not run is "
           "not measured here.", "",
           "| target | case | measured | goal | met |", "|---|---|---|---|---|"]
    for target, case, measured, goal, ok in checks:
        out.append(f"| {target} | {case} | {measured} | {goal} | {'—' if ok is None else ('yes' if ok else 'NO')} |")
    out.append("")
    return out


def case_table(rows, case, s):
    out = []
    crows = [r for r in rows if r.get("server", "nginx") == "nginx" and r["case"] == case]
    if not crows:
        return out
    out.append(f"## {case_title(case, s)}")
    out.append("")
    if is_h2(case):
        h = pick(rows, "nginx", case, H2_REF)
        out.append("h2load reports no latency percentiles (only a mean): its p50/p99 cells are empty. "
                   "nginx CPU % near 100 means nginx was the limit: compare CPU µs/req there.")
        out.append("")
        out.append("| tool | req/s | ÷ h2load | CPU µs/req | ÷ h2load | gen CPU % | nginx CPU % | peak RSS MiB "
                   "| p50 ms | p99 ms | errors | notes | steal % g/s |")
        out.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|")
        for r in crows:
            if r["status"] != "ok":
                out.append(skipped(r)); continue
            out.append(
                f"| {r['tool']} | {rps_cell(r)} | {rfmt(ratio(r.get('rps'), h and h.get('rps')))} "
                f"| {fmt(r.get('cpu_us_per_req'), 1)} "
                f"| {rfmt(ratio(r.get('cpu_us_per_req'), h and h.get('cpu_us_per_req')))} "
                f"| {fmt(r.get('gen_cpu_pct'))} | {fmt(r.get('srv_cpu_pct'))} | {fmt(rss(r), 1)} "
                f"| {lat(r.get('p50_ms'))} | {lat(r.get('p99_ms'))} | {fmt(r.get('errors'))} "
                f"| {notes(r)} | {steal(r)} |")
        out.append("")
        return out
    if is_rate(case):
        v = pick(rows, "nginx", case, "vegeta")
        o = pick(rows, "nginx", case, "oha")
        out.append("| tool | achieved req/s | ÷ vegeta | ÷ oha | p50 ms | p99 ms | p99 ÷ vegeta | p99 ÷ oha "
                   "| completed | CPU µs/req | gen CPU % | peak RSS MiB | errors | notes | steal % g/s |")
        out.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|")
        for r in crows:
            if r["status"] != "ok":
                out.append(skipped(r)); continue
            a = achieved(r)
            out.append(
                f"| {r['tool']} | {fmt(a)} | {rfmt(ratio(a, achieved(v)))} | {rfmt(ratio(a, achieved(o)))} "
                f"| {lat(r.get('p50_ms'))} | {lat(r.get('p99_ms'))} "
                f"| {rfmt(ratio(r.get('p99_ms'), v and v.get('p99_ms')))} "
                f"| {rfmt(ratio(r.get('p99_ms'), o and o.get('p99_ms')))} "
                f"| {fmt(r.get('requests'))} | {fmt(r.get('cpu_us_per_req'), 1)} "
                f"| {fmt(r.get('gen_cpu_pct'))} | {fmt(rss(r), 1)} | {fmt(r.get('errors'))} "
                f"| {notes(r)} | {steal(r)} |")
    else:
        w = pick(rows, "nginx", case, REF)
        big = is_big(case)
        out.append("| tool | " + ("MiB/s | " if big else "") +
                   "req/s | ÷ wrk | CPU µs/req | ÷ wrk | gen CPU % | nginx CPU % | peak RSS MiB | ÷ wrk "
                   "| p50 ms | p99 ms | errors | notes | steal % g/s |")
        out.append("|---|" + ("---:|" if big else "") +
                   "---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|")
        for r in crows:
            if r["status"] != "ok":
                out.append(skipped(r)); continue
            out.append(
                f"| {r['tool']} | " + (f"{fmt(r.get('mib_s'))} | " if big else "") +
                f"{rps_cell(r)} | {rfmt(ratio(r.get('rps'), w and w.get('rps')))} "
                f"| {fmt(r.get('cpu_us_per_req'), 1)} "
                f"| {rfmt(ratio(r.get('cpu_us_per_req'), w and w.get('cpu_us_per_req')))} "
                f"| {fmt(r.get('gen_cpu_pct'))} | {fmt(r.get('srv_cpu_pct'))} "
                f"| {fmt(rss(r), 1)} | {rfmt(ratio(rss(r), rss(w)))} "
                f"| {lat(r.get('p50_ms'))} | {lat(r.get('p99_ms'))} "
                f"| {fmt(r.get('errors'))} | {notes(r)} | {steal(r)} |")
    out.append("")
    return out


def server_section(rows, s):
    """barrage serve against nginx, same generator(s), same run."""
    out = []
    if "barrage" not in s.get("servers", []):
        return out
    out.append("## Servers: barrage serve vs nginx (one core each, same generator, same run)")
    out.append("")
    out.append("Both servers pinned to CPU %s; nginx `worker_processes 1` serving /small and /large, "
               "`barrage serve --threads 1` serving /bytes/1k and /bytes/1m (1 KiB, 1 MiB). "
               "server CPU µs/req = server CPU time ÷ responses; when server CPU %% is near 100 "
               "the case is server-bound and req/s compares the servers; otherwise compare "
               "server CPU µs/req. Server peak RSS = VmHWM since the server started." % s["srv_cpu"])
    out.append("")
    out.append("| case | generator | server | req/s | ÷ nginx | server CPU % | server CPU µs/req "
               "| ÷ nginx | server peak RSS MiB | gen CPU % | p50 ms | p99 ms | errors | steal % g/s |")
    out.append("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for case in s.get("serve_cases", []):
        for tool in s.get("serve_tools", []):
            n = pick(rows, "nginx", case, tool)
            for server in ("nginx", "barrage"):
                r = next((x for x in rows if x.get("server", "nginx") == server and x["case"] == case
                          and x["tool"] == tool), None)
                if r is None:
                    continue
                name = SERVER_NAME[server]
                if r["status"] != "ok":
                    out.append(f"| {case} | {tool} | {name} | *{r['status']}*: {r.get('reason', '')} |")
                    continue
                out.append(
                    f"| {case} | {tool} | {name} | {rps_cell(r)} | {rfmt(ratio(r.get('rps'), n and n.get('rps')))} "
                    f"| {fmt(r.get('srv_cpu_pct'))} | {fmt(r.get('srv_cpu_us_per_req'), 1)} "
                    f"| {rfmt(ratio(r.get('srv_cpu_us_per_req'), n and n.get('srv_cpu_us_per_req')))} "
                    f"| {fmt(mib(r.get('srv_hwm_kb')), 1)} | {fmt(r.get('gen_cpu_pct'))} "
                    f"| {lat(r.get('p50_ms'))} | {lat(r.get('p99_ms'))} | {fmt(r.get('errors'))} | {steal(r)} |")
    out.append("")
    return out


def redis_case_title(case):
    """set-p16 -> "SET, pipeline 16"."""
    op, _, depth = case.partition("-p")
    return f"{op.upper()}, pipeline {depth}"


def redis_section(rows, s):
    """The Redis cases: every generator against one redis-server, ratios to redis-benchmark."""
    out = []
    if "redis" not in s.get("servers", []):
        return out
    out.append(f"## Redis: SET and GET against one redis-server ({s['conns']} connections, "
               f"{s['redis_requests']:,} commands a run, {s['redis_data']}-byte values, "
               f"{s['redis_keys']:,} keys)")
    out.append("")
    out.append(
        "redis-server pinned to CPU %s without persistence (`--save '' --appendonly no`); before "
        "the first run its keyspace was prefilled with redis-benchmark's keys (`key:%%012d`, ids "
        "0..%s; barrage reads those with as many digits as the last, in the same format), so GETs hit. "
        "Both tools draw ids uniformly at random. *server cmds* = SET + GET calls redis counted "
        "during the run (`INFO commandstats`), to set beside the tool's own *requests*; *GET hit %%* "
        "= redis's keyspace_hits ÷ (hits + misses) during the run. redis CPU %% near 100 means "
        "the server was the limit: compare CPU µs/req there. p99 is as each tool reports it: "
        "barrage's is per command and corrected (from when the command was due to the end of its "
        "own reply); redis-benchmark's, pipelined, is per batch (from writing the batch to the "
        "first bytes of its first reply, given to every command of the batch), so it leaves out "
        "the wait behind the commands ahead."
        % (s["srv_cpu"], f"{s['redis_keys'] - 1:,}"))
    out.append("")
    out.append("| case | tool | req/s | ÷ redis-benchmark | CPU µs/req | ÷ redis-benchmark | gen CPU % "
               "| redis CPU % | p50 ms | p99 ms | requests | server cmds | GET hit % | errors | notes "
               "| steal % g/s |")
    out.append("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|")
    for case in s.get("redis_cases", []):
        ref = pick(rows, "redis", case, REDIS_REF)
        for r in rows:
            if r.get("server") != "redis" or r["case"] != case:
                continue
            title = redis_case_title(case)
            if r["status"] != "ok":
                out.append(f"| {title} | {r['tool']} | *{r['status']}*: {r.get('reason', '')} |")
                continue
            hit = fmt(r.get("srv_hit_pct"), 1) if case.startswith("get") else "—"
            out.append(
                f"| {title} | {r['tool']} | {rps_cell(r)} | {rfmt(ratio(r.get('rps'), ref and ref.get('rps')))} "
                f"| {fmt(r.get('cpu_us_per_req'), 2)} "
                f"| {rfmt(ratio(r.get('cpu_us_per_req'), ref and ref.get('cpu_us_per_req')))} "
                f"| {fmt(r.get('gen_cpu_pct'))} | {fmt(r.get('srv_cpu_pct'))} "
                f"| {lat(r.get('p50_ms'))} | {lat(r.get('p99_ms'))} | {fmt(r.get('requests'))} "
                f"| {fmt(r.get('srv_cmds'))} | {hit} | {fmt(r.get('errors'))} | {notes(r)} | {steal(r)} |")
    out.append("")
    return out


def render_run(run):
    m = run["meta"]
    s = m["settings"]
    out = []
    out.append(f"# barrage benchmark — {m['started']}")
    out.append("")
    out.append(host_line(m))
    out.append("")
    try:
        load1 = float(str(m.get("loadavg_before", "0")).split()[0])
    except ValueError:
        load1 = 0.0
    if load1 > 0.5:
        out.append(f"**Warning: load average {load1} when the run started: something else was using "
                   "the CPUs (a build?), so these numbers are noisy even as ratios.**")
        out.append("")
    servers = s.get("servers", ["nginx"])
    targets = []
    if "nginx" in servers:
        targets.append(f"nginx ({m['versions'].get('nginx', '?')}, 1 worker) on 127.0.0.1:18080")
    if "redis" in servers:
        targets.append(f"redis-server ({m['versions'].get('redis-server', '?')}) on a free port")
    out.append(
        f"Generator pinned to CPU {s['gen_cpu']}; " + (" and ".join(targets) or "the server")
        + f" pinned to CPU {s['srv_cpu']}. Harness wall time {m.get('harness_wall_s', '?')} s"
        + (f"; git {m['git_rev']}" if m.get("git_rev") else "") + ".")
    out.append("")
    out.append("CPU µs/req = generator (user+sys) CPU seconds / completed requests (whole process, "
               "incl. start-up). gen/nginx CPU % = CPU time / wall time of the run (100 % = one core). "
               "÷ wrk, ÷ vegeta, ÷ oha = this tool's value divided by that tool's in the same table. "
               "Latencies are as reported by each tool (barrage: from the intended send time). "
               "steal % g/s = hypervisor steal on the generator / server CPU during the run (noise indicator).")
    out.append("")
    rep = s.get("repeat", 1)
    if rep > 1:
        out.append(f"Each case repeated {rep}× (tool order rotated); cells are medians, "
                   "req/s shows (min–max).")
        out.append("")
    rows = summarize(run["results"], s["tools"] + s.get("serve_tools", []) + s.get("redis_tools", []))
    out += summary_section(rows, s)
    out += targets_section(rows, s)
    for case in s["cases"]:
        out += case_table(rows, case, s)
    out += server_section(rows, s)
    out += redis_section(rows, s)
    out.append("## Versions")
    out.append("")
    for k, v in sorted(m["versions"].items()):
        out.append(f"- {k}: {v}")
    out.append("")
    out.append("## Commands")
    out.append("")
    raw = m.get("raw_dir")
    if raw:
        bound, servers = s.get("bound_s"), s.get("servers", [])
        if servers == ["redis"]:
            bound = s.get("redis_bound_s")
        elif "redis" in servers:
            bound = f"{bound} (Redis runs {s.get('redis_bound_s')})"
        out.append(f"(RAW = {raw}; runs are wrapped as `/usr/bin/time -v timeout {bound} "
                   f"taskset -c {s['gen_cpu']} CMD`)")
        out.append("")
    seen = set()
    for r in run["results"]:
        key = (r.get("server", "nginx"), r["tool"], r["case"])
        if r.get("cmd") and key not in seen:
            seen.add(key)
            cmd = r["cmd"].replace(raw, "RAW") if raw else r["cmd"]
            out.append(f"- {key[0]}/{r['tool']}/{r['case']}: `{cmd}`")
    out.append("")
    return "\n".join(out)


def render_combined(runs):
    out = []
    labels = [r["meta"]["started"] for r in runs]
    s = runs[0]["meta"]["settings"]
    out.append("Runs: " + "; ".join(f"r{i+1} = {l}" for i, l in enumerate(labels)) +
               ". Cells are r1 / r2 / … (target nginx)")
    out.append("")
    tools = []
    for run in runs:
        for r in run["results"]:
            if r["tool"] not in tools:
                tools.append(r["tool"])

    sums = [summarize(run["results"], run["meta"]["settings"]["tools"]) for run in runs]

    def cell(case, tool, key, nd=0, f=None):
        vals = []
        for summ in sums:
            r = pick(summ, "nginx", case, tool)
            if r is None:
                vals.append("—")
                continue
            v = f(r) if f else r.get(key)
            vals.append(lat(v) if key.endswith("_ms") else fmt(v, nd))
        return " / ".join(vals)

    cases = []
    for run in runs:
        for c in run["meta"]["settings"]["cases"]:
            if c not in cases:
                cases.append(c)
    for case in cases:
        out.append(f"### {case_title(case, s)}")
        out.append("")
        if is_rate(case):
            out.append("| tool | achieved req/s | p50 ms | p99 ms | CPU µs/req | RSS MiB |")
            out.append("|---|---:|---:|---:|---:|---:|")
        elif is_big(case):
            out.append("| tool | MiB/s | CPU µs/req | nginx CPU % | RSS MiB |")
            out.append("|---|---:|---:|---:|---:|")
        else:
            out.append("| tool | req/s | CPU µs/req | nginx CPU % | RSS MiB | p99 ms |")
            out.append("|---|---:|---:|---:|---:|---:|")
        for t in tools:
            rs = [next((x for x in summ if x.get("server", "nginx") == "nginx" and x["case"] == case
                        and x["tool"] == t), None) for summ in sums]
            if all(r is None for r in rs):
                continue
            if all(r is None or r["status"] != "ok" for r in rs):
                why = next((r.get("reason", r["status"]) for r in rs if r), "")
                out.append(f"| {t} | *n/a: {why}* |")
                continue
            if is_rate(case):
                out.append(f"| {t} | {cell(case, t, 'achieved_rate', f=achieved)} "
                           f"| {cell(case, t, 'p50_ms')} | {cell(case, t, 'p99_ms')} "
                           f"| {cell(case, t, 'cpu_us_per_req', 1)} | {cell(case, t, 'rss', 1, rss)} |")
            elif is_big(case):
                out.append(f"| {t} | {cell(case, t, 'mib_s')} | {cell(case, t, 'cpu_us_per_req', 1)} "
                           f"| {cell(case, t, 'srv_cpu_pct')} | {cell(case, t, 'rss', 1, rss)} |")
            else:
                out.append(f"| {t} | {cell(case, t, 'rps')} | {cell(case, t, 'cpu_us_per_req', 1)} "
                           f"| {cell(case, t, 'srv_cpu_pct')} | {cell(case, t, 'rss', 1, rss)} "
                           f"| {cell(case, t, 'p99_ms')} |")
        out.append("")
    return "\n".join(out)


def main():
    if len(sys.argv) < 2:
        print(__doc__); sys.exit(2)
    cmd = sys.argv[1]
    if cmd == "build":
        import argparse
        ap = argparse.ArgumentParser()
        ap.add_argument("--meta", required=True)
        ap.add_argument("--results", required=True)
        ap.add_argument("--json", required=True)
        ap.add_argument("--md", required=True)
        a = ap.parse_args(sys.argv[2:])
        meta = json.load(open(a.meta))
        results = [json.loads(l) for l in open(a.results) if l.strip()]
        run = {"meta": meta, "results": results}
        s = meta["settings"]
        run["summary"] = summarize(results, s["tools"] + s.get("serve_tools", []) + s.get("redis_tools", []))
        with open(a.json, "w") as f:
            json.dump(run, f, indent=1)
        with open(a.md, "w") as f:
            f.write(render_run(run))
    elif cmd == "md":
        print(render_run(json.load(open(sys.argv[2]))))
    elif cmd == "combine":
        print(render_combined([json.load(open(p)) for p in sys.argv[2:]]))
    else:
        print(__doc__); sys.exit(2)


if __name__ == "__main__":
    main()
