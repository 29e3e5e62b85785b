"""The table of demo runs: python3 demo-summary.py OUT RUNS reads OUT/run-N.out, OUT/run-N.err and
OUT/run-N/results.json for N = 1..RUNS (as demo-ten.sh leaves them) and writes OUT/summary.md and
OUT/summary.csv: per run the capacity readings before and after, the reading the run used, the 1.4x
phase of each scheme,
and how many one-second slices each scheme's server warmed past its fixed warm-up until its JITs
were quiet (with '!' where the bound ran out first)."""
import json, re, sys, pathlib

out, runs = pathlib.Path(sys.argv[1]), int(sys.argv[2])
csv = ["run,breakwater_goodput_per_capacity,breakwater_p99_per_slo,spillway_goodput_per_capacity,spillway_p99_per_slo"]
rows = ["| run | harness s | capacity before (rps, spread) | after | run again | capacity used | warm-up slices | none 1.4x p99 (us) | breakwater 1.4x goodput / cap | breakwater 1.4x p99 (us) | bars | spillway 1.4x goodput / cap | spillway 1.4x p99 (us) | spillway bars |",
        "| ---: | ---: | --- | --- | --- | ---: | --- | ---: | ---: | ---: | --- | ---: | ---: | --- |"]
met = met_default = 0
for i in range(1, runs + 1):
    err = (out / f"run-{i}.err").read_text()
    reads = re.findall(r"harness: capacity (\d+) rps (before|after) the run \(spread ([\d.]+)%", err)
    before = [f"{int(r):,} ({s}%)" for r, w, s in reads if w == "before"]
    after = [f"{int(r):,} ({s}%)" for r, w, s in reads if w == "after"]
    again = "yes" if "running again" in err else "no"
    warms = re.findall(r"harness: (\S+)\s+warm-up \d+ s \(\d+ s fixed, then (\d+) one-second slice\(s\) at "
                       r"[\d.]+x( until the JITs were quiet)?", err)
    warm = ", ".join(f"{name} {n}{'' if quiet else '!'}" for name, n, quiet in warms) or "-"
    res = json.loads((out / f"run-{i}" / "results.json").read_text())
    slo = float(res["scenario"]["slo_us"])
    ph = {(p["scheme"], round(p["demand"], 2)): p for p in res.get("phases", []) if round(p["demand"], 2) == 1.4}
    n, b = ph[("none", 1.4)], ph[("breakwater", 1.4)]
    gp = b["goodput_rps"] / b["capacity_rps"]
    ok = n["p99_us"] > slo and b["p99_us"] <= slo and 0.9 <= gp <= 1.05
    met += ok
    d = ph.get(("spillway", 1.4))  # the default scheme, in runs whose scenario has it
    dgp = d["goodput_rps"] / d["capacity_rps"] if d else float("nan")
    dok = d is not None and n["p99_us"] > slo and d["p99_us"] <= slo and 0.9 <= dgp <= 1.05
    met_default += dok
    csv.append(f"{i},{gp:.4f},{b['p99_us'] / slo:.4f},{dgp:.4f},{(d['p99_us'] / slo) if d else float('nan'):.4f}")
    wall = re.search(r"\(([\d.]+) s wall clock", (out / f"run-{i}.out").read_text()).group(1)
    rows.append(f"| {i} | {wall} | {', '.join(before)} | {', '.join(after)} | {again} | {b['capacity_rps']:,.0f} | {warm} "
                f"| {n['p99_us']:,.0f} | {gp:.3f} | {b['p99_us']:,.0f} | {'met' if ok else 'NOT met'} "
                + (f"| {dgp:.3f} | {d['p99_us']:,.0f} | {'met' if dok else 'NOT met'} |" if d else "| - | - | - |"))
summary = "\n".join(rows) + f"\n\n{met} of {runs} runs meet all three bars (none's p99 over the {slo:.0f} us SLO, breakwater's within it, breakwater's goodput 0.9-1.05 x the capacity reading the run used); {met_default} of {runs} meet them with spillway, the default, in breakwater's place.\n"
(out / "summary.md").write_text(summary)
(out / "summary.csv").write_text("\n".join(csv) + "\n")
print(summary)
