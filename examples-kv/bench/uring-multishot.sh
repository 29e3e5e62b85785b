#!/usr/bin/env bash
# What the transport's single-shot io_uring POLL_ADD costs beside Netty's default multishot one
# (docs/results/kv.md, "io_uring: single-shot poll"). Two Spillway KV servers with no control on
# core 0, one with io.netty.iouring.pollAddMultishotEnabled=true (Netty's default, which misses
# peers' resets; see Transport), one with the transport's default (false); ./spillway kv-load on
# core 1, each rate run against both in turn, twice, so drift hits both alike. Beside each cell:
# the server's CPU time per request (utime + stime from /proc over the whole kv-load run,
# warm-up included, divided by the requests it offered).
# Both servers are forced onto io_uring (-Dspillway.transport=io_uring); the KV store alone would
# choose epoll (KvServer.defaultTransport).
# Usage: examples-kv/bench/uring-multishot.sh OUT_DIR "RATE1 RATE2 ..." [SECONDS]
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
OUT="${1:?usage: uring-multishot.sh OUT_DIR RATES [SECONDS]}"
RATES="${2:?rates}"
SECS="${3:-5}"
WARM=2
mkdir -p "$OUT"
source "$(dirname "$0")/servers.sh"
declare -A PORT=([multishot]=21322 [single-shot]=21323) PID=()
SPILLWAY_JAVA_OPTS="-Dspillway.transport=io_uring -Dio.netty.iouring.pollAddMultishotEnabled=true" \
  "$ROOT/spillway" kv --port 21322 --memory 1024 --scheme none > "$OUT/kv-multishot.log" 2>&1 &
PID[multishot]=$!; PIDS+=($!)
wait_port 21322
SPILLWAY_JAVA_OPTS="-Dspillway.transport=io_uring" "$ROOT/spillway" kv --port 21323 --memory 1024 --scheme none > "$OUT/kv-single-shot.log" 2>&1 &
PID[single-shot]=$!; PIDS+=($!)
wait_port 21323
SERVERS=(multishot single-shot)
for s in "${SERVERS[@]}"; do
  "$ROOT/spillway" kv-load --port "${PORT[$s]}" --set-share 0.1 --rate 20000 --seconds 3 --warmup 2 \
    > "$OUT/$s-warmup.txt" 2>&1
done
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
HZ=$(getconf CLK_TCK)
{
  echo "# io_uring POLL_ADD: multishot (Netty's default) against single-shot (the transport's), KV with no control"
  echo
  echo "$(date -u +%F) · $(nproc) cores · $("${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}/bin/java" -version 2>&1 | head -1) · ${SECS} s per cell after ${WARM} s warm-up, SET share 0.1"
  echo
  echo "| offered/s | poll | round | ok/s | p50 us | p99 us | server CPU us per request |"
  echo "| --- | --- | --- | --- | --- | --- | --- |"
} > "$OUT/summary.md"
for r in $RATES; do
  for round in 1 2; do
    for s in "${SERVERS[@]}"; do
      before=$(ticks "${PID[$s]}")
      line=$("$ROOT/spillway" kv-load --port "${PORT[$s]}" --no-preload --set-share 0.1 \
        --rate "$r" --seconds "$SECS" --warmup "$WARM" 2>&1 | tail -1)
      after=$(ticks "${PID[$s]}")
      echo "$s $round cpu_ticks $((after - before)) $line" >> "$OUT/raw.txt"
      python3 - "$s" "$round" "$r" "$((after - before))" "$HZ" "$((SECS + WARM))" "$line" >> "$OUT/summary.md" <<'PY'
import re, sys
s, rnd, rate, ticks, hz, secs, line = sys.argv[1:]
g = lambda p: re.search(p, line).group(1)
cpu_us = int(ticks) / int(hz) * 1e6 / (int(rate) * int(secs))
print(f"| {rate} | {s} | {rnd} | {g(r' ok ([0-9]+)')} | {g(r'p50 ([0-9.]+)')} | {g(r' p99 ([0-9.]+)')} | {cpu_us:.2f} |")
PY
    done
  done
done
{ echo; for s in "${SERVERS[@]}"; do echo "- $s: \`stats\` spillway_transport = $(kv_stat "${PORT[$s]}" spillway_transport)"; done; } >> "$OUT/summary.md"
cat "$OUT/summary.md"
