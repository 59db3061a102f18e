#!/usr/bin/env python3
"""The reruns of bench/capacity.sh as a table: per target, each run's capacity, its
interval and hold, the spread of the capacities (max / min - 1) and whether they agree
within 5%; and, where wrk measured the target's saturated throughput just before and after
each run, each capacity over that reference and the spread of those ratios: what is left of
the spread once the target's own drift is taken out.

    capacity_report.py RAW_DIR OUT_STEM      # writes OUT_STEM.md and OUT_STEM.json
"""
import json
import pathlib
import sys

AGREE = 0.05
ORDER = ["known", "pool", "miss", "nginx", "varnish"]


def runs(raw, target):
    out = []
    k = 1
    while (raw / f"{target}-{k}.json").exists():
        text = (raw / f"{target}-{k}.json").read_text()
        try:
            v = json.loads(text)
        except json.JSONDecodeError:
            v = {"error": (raw / f"{target}-{k}.err").read_text().strip().splitlines()[-1:]}
        load = raw / f"{target}-{k}.load"
        v["load_after"] = load.read_text().strip() if load.exists() else None
        waited = raw / f"{target}-{k}.waited"
        v["waited_s"] = int(waited.read_text()) if waited.exists() else None
        ref = raw / f"{target}-{k}.wrk"
        refs = [float(x) for x in ref.read_text().split()] if ref.exists() else []
        v["reference_per_sec"] = sum(refs) / len(refs) if len(refs) == 2 else None
        cache = raw / f"{target}-{k}.varnish"
        if cache.exists():
            h0, m0, h1, m1 = map(int, cache.read_text().split())
            v["varnish"] = {"hits": h1 - h0, "misses": m1 - m0}
        cpu = raw / f"{target}-{k}.cpu"
        if cpu.exists():
            wall, busy, steal, servers, barrage = map(float, cpu.read_text().split())
            # The machine's other tenants: busy CPU that was neither the servers nor barrage,
            # in cores on average over the run.
            v["cpu"] = {"wall_s": wall, "others_cores": max(busy - servers - barrage, 0.0) / wall,
                        "steal_cores": steal / wall, "servers_cores": servers / wall, "barrage_cores": barrage / wall}
        out.append(v)
        k += 1
    return out


def summary(rs):
    caps = [r.get("capacity_per_sec") for r in rs]
    found = [c for c in caps if c]
    spread = max(found) / min(found) - 1 if len(found) == len(caps) and found else None
    probes = [r.get("probes", []) for r in rs]
    refs = [r.get("reference_per_sec") for r in rs]
    ratios = [c / f for c, f in zip(caps, refs) if c and f]
    ratio_spread = max(ratios) / min(ratios) - 1 if ratios and len(ratios) == len(caps) else None
    ref_spread = max(refs) / min(refs) - 1 if refs and all(refs) else None
    return {
        "reference_per_sec": refs,
        "reference_spread": ref_spread,
        "capacity_over_reference": ratios,
        "capacity_over_reference_spread": ratio_spread,
        "capacities_per_sec": caps,
        "intervals_per_sec": [r.get("interval_per_sec") for r in rs],
        "verified": [r.get("verified") for r in rs],
        "probes": [len(p) for p in probes],
        "again": [sum(1 for x in p if x["labels"].get("stage") == "again") for p in probes],
        "holds_missed": [sum(1 for x in p if x["labels"].get("stage") == "hold" and x["verdict"] != "ok") for p in probes],
        "generator_limited": [bool(r.get("generator_limited")) for r in rs],
        "spread": spread,
        "agree_within_5_percent": spread is not None and spread <= AGREE,
        "load_after": [r.get("load_after") for r in rs],
        "cpu": [r.get("cpu") for r in rs],
        "waited_s": [r.get("waited_s") for r in rs],
        "varnish": [r.get("varnish") for r in rs],
    }


def main():
    raw, stem = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    machine = (raw / "machine.txt").read_text()
    targets = sorted({p.name.rsplit("-", 1)[0] for p in raw.glob("*-*.json")}, key=ORDER.index)
    result = {"machine": machine, "targets": {}}
    md = [f"# `barrage capacity`, rerun: {raw.name}", "", "```", machine.strip(), "```", ""]
    md += ["| target | capacities (req/s) | spread | within 5% | intervals | held | probes (again) |", "|---|---|---:|---|---|---|---|"]
    for t in targets:
        rs = runs(raw, t)
        s = summary(rs)
        s["command"] = (raw / f"{t}.command").read_text().strip()
        result["targets"][t] = s
        caps = ", ".join("—" if c is None else f"{c:.0f}" for c in s["capacities_per_sec"])
        iv = ", ".join(
            "—" if i is None else f"[{i['low']:.0f}, {'∞' if i['high'] is None else format(i['high'], '.0f')})"
            for i in s["intervals_per_sec"]
        )
        held = ", ".join({True: "yes", False: "stepped down", None: "—"}[v] for v in s["verified"])
        pr = ", ".join(f"{n} ({a})" for n, a in zip(s["probes"], s["again"]))
        spread = "—" if s["spread"] is None else f"{s['spread'] * 100:.1f}%"
        md.append(f"| {t} | {caps} | {spread} | {'yes' if s['agree_within_5_percent'] else 'NO'} | {iv} | {held} | {pr} |")
    pct = lambda x: "—" if x is None else f"{x * 100:.1f}%"
    md += ["", "The target's own saturated throughput by wrk (closed loop, mean of a run just before and "
           "just after each search), and each capacity over it:", "",
           "| target | wrk (req/s) | wrk's spread | capacity ÷ wrk | spread of ÷ | within 5% |", "|---|---|---:|---|---:|---|"]
    for t in targets:
        s = result["targets"][t]
        refs = ", ".join("—" if f is None else f"{f:.0f}" for f in s["reference_per_sec"])
        ratios = ", ".join(f"{x:.3f}" for x in s["capacity_over_reference"])
        rs_ = s["capacity_over_reference_spread"]
        md.append(f"| {t} | {refs} | {pct(s['reference_spread'])} | {ratios or '—'} | {pct(rs_)} "
                  f"| {'—' if rs_ is None else ('yes' if rs_ <= AGREE else 'NO')} |")
    md += ["", "The machine's other tenants during each run (busy CPU that was neither the servers nor barrage, cores on average; steal in brackets):", ""]
    for t in targets:
        cpu = result["targets"][t]["cpu"]
        shown = ", ".join("—" if x is None else f"{x['others_cores']:.2f} ({x['steal_cores']:.2f})" for x in cpu)
        waited = result["targets"][t]["waited_s"]
        if any(w is not None for w in waited):
            shown += "; waited for a quiet machine (s): " + ", ".join("—" if w is None else str(w) for w in waited)
        md.append(f"- {t}: {shown}")
    counted = [t for t in targets if any(result["targets"][t]["varnish"])]
    if counted:
        md += ["", "varnishstat's own count during each search (MAIN.cache_miss of cache_hit + cache_miss), the "
               "ground truth of what the cache did:", ""]
    for t in counted:
        shown = ", ".join("—" if c is None else f"{c['misses']:,} of {c['hits'] + c['misses']:,} missed"
                          for c in result["targets"][t]["varnish"])
        md.append(f"- {t}: {shown}")
    md += ["", "Commands:", ""]
    md += [f"- {t}: `{result['targets'][t]['command']}`" for t in targets]
    stem.with_suffix(".json").write_text(json.dumps(result, indent=1) + "\n")
    stem.with_suffix(".md").write_text("\n".join(md) + "\n")


if __name__ == "__main__":
    main()
