#!/usr/bin/env bash
# What one core of examples-spring spends per refused request, against a served one: the
# application on core 0, h2load closed loop (4 connections x 100 streams, as spring-demo's HTTP
# load) on core 1. "none" serves every request (spillway.enabled=false); "reject" refuses every one
# in the starter's filter with the reject status (429 by default) and Retry-After
# (spillway.budget.when-absent=REJECT: h2load sends no Spillway-Budget header). Each: 40 s warm-up (the application's compilers run about 30 s), then
# three 10 s readings of answers per second and the application's CPU time (/proc/PID/stat).
# "reject-vt" and "none-vt" are the same with spring.threads.virtual.enabled=true.
# Usage: examples-spring/bench/refusal-cost.sh [OUT_DIR]   (after ./spillway build; docs/results/spring.md)
set -u
cd "$(dirname "$0")/../.."
OUT=${1:-/tmp/spillway-refusal-cost}
mkdir -p "$OUT"
JAVA="${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}/bin/java"
CP="examples-spring/target/examples-spring-0.1.0-SNAPSHOT.jar:examples-spring/target/lib/*"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
run() { # name, application arguments...
  local name=$1; shift
  local port gport pid t0 t1 rep
  port=$(free_port); gport=$(free_port)
  taskset -c 0 "$JAVA" -XX:+UseParallelGC -Xms1g -Xmx1g -Xmn512m -XX:+AlwaysPreTouch -cp "$CP" \
    io.spillway.examples.spring.InventoryApplication --server.port="$port" --spring.grpc.server.port="$gport" \
    --spillway.slo=11700us "$@" >"$OUT/app-$name.log" 2>&1 &
  pid=$!
  for _ in $(seq 1 120); do curl -s -o /dev/null "http://127.0.0.1:$port/actuator/health" && break; sleep 0.5; done
  taskset -c 1 h2load -c 4 -m 100 -t 1 -D 40 -H ':method: POST' "http://127.0.0.1:$port/reservations" >"$OUT/h2load-$name-warm.txt" 2>&1
  for rep in 1 2 3; do
    t0=$(awk '{print $14+$15}' "/proc/$pid/stat")
    taskset -c 1 h2load -c 4 -m 100 -t 1 -D 10 -H ':method: POST' "http://127.0.0.1:$port/reservations" >"$OUT/h2load-$name-$rep.txt" 2>&1
    t1=$(awk '{print $14+$15}' "/proc/$pid/stat")
    echo "$name rep $rep: application CPU $(( (t1 - t0) * 1000 / $(getconf CLK_TCK) )) ms in 10 s; $(grep -E 'finished in|status codes' "$OUT/h2load-$name-$rep.txt" | tr '\n' ' ')"
  done
  kill "$pid"; wait "$pid" 2>/dev/null
}
run none --spillway.enabled=false
run reject --spillway.budget.when-absent=REJECT
run reject-vt --spillway.budget.when-absent=REJECT --spring.threads.virtual.enabled=true
run none-vt --spillway.enabled=false --spring.threads.virtual.enabled=true
