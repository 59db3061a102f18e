#!/usr/bin/env python3
"""Merge one measurement (tool's parsed output + /usr/bin/time -v + server CPU) into a JSON line."""
import argparse
import json
import os
import re

# Body bytes per response by case (nginx /small and barrage serve /bytes/1k are both 1 KiB).
BODY = {"small": 1024, "large": 1048576, "rate": 1024, "rate20k": 1024, "noka": 1024}


def body_size(case):
    """Response bytes of a case: large-cN is 1 MiB at N connections, body-Nm N MiB, body-Nk
    N KiB (body-Nk-cM at M connections)."""
    if case.startswith("large-c"):
        return BODY["large"]
    if case.startswith("body-"):
        size = case[5:].split("-c")[0]
        return int(size[:-1]) * (2**20 if size.endswith("m") else 2**10)
    return BODY.get(case, 1024)


def parse_time(path):
    out = {}
    try:
        txt = open(path).read()
    except OSError:
        return out
    def grab(label, conv=float):
        m = re.search(r"^\s*" + re.escape(label) + r":\s*(.+)$", txt, re.M)
        return conv(m.group(1).strip()) if m else None
    out["user_s"] = grab("User time (seconds)")
    out["sys_s"] = grab("System time (seconds)")
    out["maxrss_kb"] = grab("Maximum resident set size (kbytes)", int)
    out["vol_cs"] = grab("Voluntary context switches", int)
    out["invol_cs"] = grab("Involuntary context switches", int)
    out["exit_status"] = grab("Exit status", int)
    m = re.search(r"Command terminated by signal (\d+)", txt)
    if m:
        out["signal"] = int(m.group(1))
    return out


def cpu_deltas(f0, f1):
    """Per-CPU busy/steal/softirq % over the run from two /proc/stat snapshots."""
    def load(p):
        d = {}
        for line in open(p):
            parts = line.split()
            d[parts[0][3:]] = [int(x) for x in parts[1:9]]
        return d
    a, b = load(f0), load(f1)
    out = {}
    for cpu in a:
        if cpu not in b:
            continue
        dv = [y - x for x, y in zip(a[cpu], b[cpu])]
        # user nice system idle iowait irq softirq steal
        total = sum(dv) or 1
        out[cpu] = {"busy": 100 * (total - dv[3] - dv[4] - dv[7]) / total,
                    "softirq": 100 * dv[6] / total, "steal": 100 * dv[7] / total}
    return out


def counts(path):
    """A server's counters, "name value" a line (peers.sh srv_counters); {} if none."""
    try:
        return {k: int(v) for k, v in (line.split() for line in open(path) if line.strip())}
    except (OSError, ValueError):
        return {}


def server_counts(f0, f1):
    """What the server itself counted during the run: srv_<name> = after - before, and for
    Redis srv_cmds (SET + GET calls) and srv_hit_pct (keyspace hits over GETs answered)."""
    a, b = counts(f0), counts(f1)
    out = {f"srv_{k}": v - a.get(k, 0) for k, v in b.items()}
    if "srv_set_calls" in out or "srv_get_calls" in out:
        out["srv_cmds"] = out.get("srv_set_calls", 0) + out.get("srv_get_calls", 0)
    looked = out.get("srv_keyspace_hits", 0) + out.get("srv_keyspace_misses", 0)
    if looked:
        out["srv_hit_pct"] = round(100 * out["srv_keyspace_hits"] / looked, 3)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", default="nginx")
    ap.add_argument("--tool", required=True)
    ap.add_argument("--case", required=True)
    ap.add_argument("--status", required=True)  # ok | unsupported | missing | failed
    ap.add_argument("--reason", default="")
    ap.add_argument("--rc", type=int)
    ap.add_argument("--time")
    ap.add_argument("--parsed")
    ap.add_argument("--wall", type=float)
    ap.add_argument("--srv-ticks", type=int)
    ap.add_argument("--srv-hwm-kb", type=int)
    ap.add_argument("--cmd-file")
    ap.add_argument("--target-rate", type=float)
    ap.add_argument("--rep", type=int, default=1)
    ap.add_argument("--stat0")
    ap.add_argument("--stat1")
    ap.add_argument("--srv-counts0")
    ap.add_argument("--srv-counts1")
    ap.add_argument("--gen-cpu")
    ap.add_argument("--srv-cpu")
    a = ap.parse_args()

    rec = {"server": a.server, "tool": a.tool, "case": a.case, "rep": a.rep, "status": a.status}
    if a.reason:
        rec["reason"] = a.reason
    if a.cmd_file and os.path.exists(a.cmd_file):
        rec["cmd"] = open(a.cmd_file).read().strip()
    if a.status in ("unsupported", "missing"):
        print(json.dumps(rec))
        return
    rec["rc"] = a.rc
    rec["wall_s"] = a.wall
    rec.update(parse_time(a.time) if a.time else {})
    parsed = {}
    if a.parsed and os.path.exists(a.parsed) and os.path.getsize(a.parsed):
        try:
            parsed = json.load(open(a.parsed))
        except ValueError as e:
            rec["status"] = "failed"
            rec["reason"] = f"unparseable tool output: {e}"
    else:
        rec["status"] = "failed"
        rec["reason"] = rec.get("reason") or f"no parsable output (rc={a.rc})"
    rec.update(parsed)

    if rec.get("user_s") is not None and rec.get("sys_s") is not None:
        cpu = rec["user_s"] + rec["sys_s"]
        rec["cpu_s"] = round(cpu, 3)
        if a.wall:
            rec["gen_cpu_pct"] = round(100 * cpu / a.wall, 1)
        if rec.get("requests"):
            # Kept to 4 decimals: the report takes medians and ratios of it, and a Redis
            # command costs about 0.5 us, where 2 decimals were a step of 2% in a ratio judged
            # against 0.9.
            rec["cpu_us_per_req"] = round(cpu * 1e6 / rec["requests"], 4)
    if a.srv_ticks is not None and a.wall:
        hz = os.sysconf("SC_CLK_TCK")
        rec["srv_cpu_s"] = a.srv_ticks / hz
        rec["srv_cpu_pct"] = round(100 * a.srv_ticks / hz / a.wall, 1)
        if rec.get("requests"):
            # Server CPU per response: the fair server-vs-server figure when the generator,
            # not the server, is the bottleneck (from clock ticks: 10 ms resolution).
            rec["srv_cpu_us_per_req"] = round(a.srv_ticks / hz * 1e6 / rec["requests"], 4)
    if a.srv_hwm_kb:
        rec["srv_hwm_kb"] = a.srv_hwm_kb
    sized = a.case in BODY or a.case.startswith(("large-c", "body-"))
    if rec.get("ok") is not None and rec.get("duration_s") and sized:
        rec["mib_s"] = round(rec["ok"] * body_size(a.case) / rec["duration_s"] / 2**20, 1)
    if a.srv_counts0 and a.srv_counts1:
        rec.update(server_counts(a.srv_counts0, a.srv_counts1))
    if a.stat0 and a.stat1 and os.path.exists(a.stat0) and os.path.exists(a.stat1):
        d = cpu_deltas(a.stat0, a.stat1)
        for role, cpu in (("gen", a.gen_cpu), ("srv", a.srv_cpu)):
            if cpu in d:
                for k, v in d[cpu].items():
                    rec[f"{role}_{k}_pct"] = round(v, 1)
    if a.target_rate:
        rec["target_rate"] = a.target_rate
    if rec["status"] == "ok" and not rec.get("requests"):
        rec["status"] = "failed"
        rec["reason"] = "zero requests completed"
    print(json.dumps(rec))


if __name__ == "__main__":
    main()
