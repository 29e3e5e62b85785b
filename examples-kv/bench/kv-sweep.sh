#!/usr/bin/env bash
# Open-loop demand sweep of Spillway KV beside memcached (docs/results/kv.md): servers on core 0
# (memcached -t 1; Spillway KV with one event loop, --scheme none and --scheme spillway), the load
# generator (./spillway kv-load: Poisson arrivals over 64 connections, latency from each request's
# due time) on core 1; each rate is run against every server in turn, so drift hits all alike.
# Usage: examples-kv/bench/kv-sweep.sh OUT_DIR SET_SHARE "RATE1 RATE2 ..." [SECONDS]
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
OUT="${1:?usage: kv-sweep.sh OUT_DIR SET_SHARE RATES [SECONDS]}"
SHARE="${2:?set share, e.g. 0.1 or 0.82}"
RATES="${3:?rates}"
SECS="${4:-5}"
mkdir -p "$OUT"
user=(); [ "$(id -u)" -eq 0 ] && user=(-u root)
source "$(dirname "$0")/servers.sh"
# one at a time: the first ./spillway may build the module
taskset -c 0 memcached "${user[@]}" -l 127.0.0.1 -p 21311 -U 0 -t 1 -m 1024 & PIDS+=($!)
wait_port 21311
"$ROOT/spillway" kv --port 21312 --memory 1024 --scheme none > "$OUT/kv-none.log" 2>&1 & PIDS+=($!)
wait_port 21312
"$ROOT/spillway" kv --port 21313 --memory 1024 --scheme spillway > "$OUT/kv-spillway.log" 2>&1 & PIDS+=($!)
wait_port 21313
declare -A PORT=([memcached]=21311 [kv-none]=21312 [kv-spillway]=21313)
SERVERS=(memcached kv-none kv-spillway)
# preload every key, then one warm-up run per server (JIT of server and generator)
for s in "${SERVERS[@]}"; do
  "$ROOT/spillway" kv-load --port "${PORT[$s]}" --set-share "$SHARE" --rate 20000 --seconds 3 \
    --warmup 2 > "$OUT/$s-warmup.txt" 2>&1
done
{
  echo "# kv sweep: SET share $SHARE, ${SECS} s per cell after 2 s warm-up"
  echo
  echo "$(date -u +%F) · $(nproc) cores · $("${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}/bin/java" -version 2>&1 | head -1) · memcached $(memcached -V | cut -d' ' -f2)"
  echo
  echo "| offered/s | server | ok/s | goodput/s (<= 110 us) | rejected (aqm/limit/budget) | p50 us | p99 us | p99.9 us | reject p99 us |"
  echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
} > "$OUT/summary.md"
for r in $RATES; do
  for s in "${SERVERS[@]}"; do
    line=$("$ROOT/spillway" kv-load --port "${PORT[$s]}" --no-preload --set-share "$SHARE" \
      --rate "$r" --seconds "$SECS" --warmup 2 2>&1 | tail -1)
    echo "$s $line" >> "$OUT/raw.txt"
    echo "$line" | python3 "$ROOT/examples-kv/bench/row.py" "$s" >> "$OUT/summary.md"
  done
done
cat "$OUT/summary.md"
