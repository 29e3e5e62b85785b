#!/usr/bin/env bash
# Ten consecutive `./spillway demo` runs from a fresh clone, the first included (its build and
# ahead-of-time training too), and one row per run: the capacity readings before and after the
# run, and the 1.4x phase of each scheme. Usage: integration-tests/bench/demo-ten.sh REPO OUT [RUNS]
#   REPO  a git repository (path or URL) to clone fresh
#   OUT   where the runs (OUT/run-N/) and OUT/summary.md go
# RUN_WITH, if set, is a command each run is wrapped in (a lock that gives the run the machine).
set -euo pipefail
repo=$1 out=$(realpath -m "$2") runs=${3:-10}
here=$(cd "$(dirname "$0")" && pwd)
clone=$(mktemp -d /tmp/spillway-demo-clone.XXXXXX)
trap 'rm -rf "$clone"' EXIT
git clone -q "$repo" "$clone"
mkdir -p "$out"
cd "$clone"
for i in $(seq 1 "$runs"); do
  ${RUN_WITH:-} ./spillway demo --out "$out/run-$i" >"$out/run-$i.out" 2>"$out/run-$i.err"
  echo "run $i: $(grep -o '[0-9.]* s wall clock' "$out/run-$i.out")" >&2
done
python3 "$here/demo-summary.py" "$out" "$runs"
java=${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}/bin/java
version=$(sed -n 's:.*<version>\(.*\)</version>.*:\1:p' pom.xml | head -1)
"$java" -Djava.awt.headless=true -cp "integration-tests/target/integration-tests-$version.jar:integration-tests/target/lib/*" \
  io.spillway.harness.CsvChart "$out/summary.csv" "$out/demo-ten.png" "Breakwater and the default in the demo's 1.4x phase, run by run" \
  run "share" breakwater_goodput_per_capacity,breakwater_p99_per_slo,spillway_goodput_per_capacity,spillway_p99_per_slo 1.05=1.05 0.9=0.9 "1.0=SLO, capacity"
