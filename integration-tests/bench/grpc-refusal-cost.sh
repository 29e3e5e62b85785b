#!/usr/bin/env bash
# What one core of the gRPC demo's server spends per refused call, against a served one: DemoServer
# on core 0 with the quick start's install path, ghz closed loop (4 connections, 64 calls
# outstanding) on core 1. "nocontrol" serves every call (a scheme that admits all; its throughput
# is the demo's capacity); "reject" refuses every call at the gate (REJECTED_AQM, a trailers-only
# answer before the handler). Each: a 40 s warm-up (the server's compilers), then three 10 s
# readings of answers per second and the server's CPU time (/proc/PID/stat).
# Usage: integration-tests/bench/grpc-refusal-cost.sh [OUT_DIR]   (after ./spillway build; docs/results/grpc.md)
set -u
cd "$(dirname "$0")/../.."
OUT=${1:-/tmp/spillway-grpc-refusal-cost}
mkdir -p "$OUT"
JAVA="${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}/bin/java"
GHZ=${GHZ:-$(command -v ghz || echo "$HOME/go/bin/ghz")}
version=$(sed -n 's:.*<version>\(.*\)</version>.*:\1:p' pom.xml | head -1)
CP="integration-tests/target/integration-tests-$version.jar:integration-tests/target/lib/*"
PROTO=integration-tests/src/main/proto/demo.proto
run() { # mode
  local mode=$1 pid port t0 t1 rep fifo
  fifo=$(mktemp -u); mkfifo "$fifo"
  # the server stops when its standard input closes: hold it open on a fifo until the end
  taskset -c 0 "$JAVA" -XX:+UseParallelGC -Xms1g -Xmx1g -Xmn512m -XX:+AlwaysPreTouch \
    --enable-native-access=ALL-UNNAMED -cp "$CP" io.spillway.harness.grpcdemo.DemoServer "$mode" 200 5 \
    <"$fifo" >"$OUT/server-$mode.out" 2>"$OUT/server-$mode.log" &
  pid=$!
  exec 3>"$fifo"
  for _ in $(seq 1 100); do grep -q '^port ' "$OUT/server-$mode.out" 2>/dev/null && break; sleep 0.2; done
  port=$(sed -n 's/^port //p' "$OUT/server-$mode.out")
  load() { taskset -c 1 "$GHZ" --insecure --proto "$PROTO" --call spillway.demo.Demo.Work -d '{"id":1}' \
    -c 64 --connections 4 -z "$1" --timeout 1000ms "127.0.0.1:$port"; }
  load 40s >"$OUT/ghz-$mode-warm.txt" 2>&1
  for rep in 1 2 3; do
    t0=$(awk '{print $14+$15}' "/proc/$pid/stat")
    load 10s >"$OUT/ghz-$mode-$rep.txt" 2>&1
    t1=$(awk '{print $14+$15}' "/proc/$pid/stat")
    echo "$mode rep $rep: server CPU $(( (t1 - t0) * 1000 / $(getconf CLK_TCK) )) ms in 10 s;" \
      "$(grep -E '^ +(Count|Requests/sec):' "$OUT/ghz-$mode-$rep.txt" | tr -s ' ' | tr '\n' ' ')" \
      "$(sed -n '/Status code distribution:/,$p' "$OUT/ghz-$mode-$rep.txt" | grep -E '\[' | tr -s ' ' | tr '\n' ' ')"
  done
  exec 3>&-
  wait "$pid" 2>/dev/null
  rm -f "$fifo"
}
run nocontrol
run reject
