#!/usr/bin/env bash
# Ten consecutive `./spillway demo` runs from a fresh clone, the first included (its build and
# ahead-of-time training too), and one row per run: the capacity readings before and after the
# run, and the 1.4x phase of each scheme. Usage: integration-tests/bench/demo-ten.sh REPO OUT [RUNS]
#   REPO  a git repository (path or URL) to clone fresh
#   OUT   where the runs (OUT/run-N/) and OUT/summary.md go
# RUN_WITH, if set, is a command each run is wrapped in (a lock that gives the run the machine).
set -euo pipefail
repo=$1 out=$(realpath -m "$2") runs=${3:-10}
clone=$(mktemp -d /tmp/spillway-demo-clone.XXXXXX)
trap 'rm -rf "$clone"' EXIT
git clone -q "$repo" "$clone"
mkdir -p "$out"
cd "$clone"
for i in $(seq 1 "$runs"); do
  ${RUN_WITH:-} ./spillway demo --out "$out/run-$i" >"$out/run-$i.out" 2>"$out/run-$i.err"
  echo "run $i: $(grep -o '[0-9.]* s wall clock' "$out/run-$i.out")" >&2
done
python3 - "$out" "$runs" <<'PY'
import json, re, sys, pathlib
out, runs = pathlib.Path(sys.argv[1]), int(sys.argv[2])
csv = ["run,breakwater_goodput_per_capacity,breakwater_p99_per_slo"]
rows = ["| run | harness s | capacity before (rps, spread) | after | run again | none 1.4x p99 (us) | breakwater 1.4x goodput / cap | breakwater 1.4x p99 (us) | bars |",
        "| ---: | ---: | --- | --- | --- | ---: | ---: | ---: | --- |"]
met = 0
for i in range(1, runs + 1):
    err = (out / f"run-{i}.err").read_text()
    reads = re.findall(r"harness: capacity (\d+) rps (before|after) the run \(spread ([\d.]+)%", err)
    before = [f"{int(r):,} ({s}%)" for r, w, s in reads if w == "before"]
    after = [f"{int(r):,} ({s}%)" for r, w, s in reads if w == "after"]
    again = "yes" if "running again" in err else "no"
    res = json.loads((out / f"run-{i}" / "results.json").read_text())
    slo = float(res["scenario"]["slo_us"])
    ph = {(p["scheme"], round(p["demand"], 2)): p for p in res.get("phases", []) if round(p["demand"], 2) == 1.4}
    n, b = ph[("none", 1.4)], ph[("breakwater", 1.4)]
    gp = b["goodput_rps"] / b["capacity_rps"]
    ok = n["p99_us"] > slo and b["p99_us"] <= slo and 0.9 <= gp <= 1.05
    met += ok
    csv.append(f"{i},{gp:.4f},{b['p99_us'] / slo:.4f}")
    wall = re.search(r"\(([\d.]+) s wall clock", (out / f"run-{i}.out").read_text()).group(1)
    rows.append(f"| {i} | {wall} | {', '.join(before)} | {', '.join(after)} | {again} "
                f"| {n['p99_us']:,.0f} | {gp:.3f} | {b['p99_us']:,.0f} | {'met' if ok else 'NOT met'} |")
summary = "\n".join(rows) + f"\n\n{met} of {runs} runs meet all three bars (none's p99 over the {slo:.0f} us SLO, breakwater's within it, breakwater's goodput 0.9-1.05 x the capacity reading the run used).\n"
(out / "summary.md").write_text(summary)
(out / "summary.csv").write_text("\n".join(csv) + "\n")
print(summary)
PY
java=${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}/bin/java
version=$(sed -n 's:.*<version>\(.*\)</version>.*:\1:p' pom.xml | head -1)
"$java" -Djava.awt.headless=true -cp "integration-tests/target/integration-tests-$version.jar:integration-tests/target/lib/*" \
  io.spillway.harness.CsvChart "$out/summary.csv" "$out/demo-ten.png" "Breakwater in the demo's 1.4x phase, run by run" \
  run "share" breakwater_goodput_per_capacity,breakwater_p99_per_slo 1.05=1.05 0.9=0.9 "1.0=SLO, capacity"
