#!/usr/bin/env bash
# Peak throughput and tail latency of Spillway KV beside the real memcached, one run, one server
# core each (core 0), memcaslap on core 1 (docs/results/kv.md). memcaslap's default mix: 90 % GET,
# 10 % SET. Usage: examples-kv/bench/memcaslap-peak.sh OUT_DIR [ROUNDS] [SECONDS] [CONCURRENCY]
#
#  1. starts memcached -t 1 -m 64 and two Spillway KVs (--scheme none and --scheme spillway),
#     all pinned to core 0, one driven at a time;
#  2. warms each JVM for one run (the JIT), then ROUNDS closed-loop runs per server, interleaved
#     (mc, none, spillway, mc, ...), so drift on the machine hits all three alike; peak = median;
#  3. reads the protected server's reject count: memcaslap counts a fast SERVER_ERROR reply as an
#     operation, so kv-spillway's ops/s are not served requests.
#  4. for memcached and kv-none, the latency at 0.8 x each one's own peak, open loop: ./spillway
#     kv-load on core 1 at that rate (Poisson arrivals over 64 connections, latency from each
#     request's due time, 10 % SET; VAR's keys and ETC's value sizes, not memcaslap's), two
#     interleaved rounds (memcaslap -P does not hold a rate here, and its latency histogram has
#     power-of-two buckets).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
OUT="${1:?usage: memcaslap-peak.sh OUT_DIR [ROUNDS] [SECONDS] [CONCURRENCY]}"
ROUNDS="${2:-3}"
SECS="${3:-10}"
CONC="${4:-64}"
mkdir -p "$OUT"
for tool in memcached memcaslap taskset; do
  command -v "$tool" >/dev/null || { echo "needs $tool (apt-get install memcached libmemcached-tools)"; exit 2; }
done
user=(); [ "$(id -u)" -eq 0 ] && user=(-u root)
source "$(dirname "$0")/servers.sh"
# one at a time: the first ./spillway may build the module
taskset -c 0 memcached "${user[@]}" -l 127.0.0.1 -p 21211 -U 0 -t 1 -m 64 & PIDS+=($!)
wait_port 21211
"$ROOT/spillway" kv --port 21212 --scheme none > "$OUT/kv-none.log" 2>&1 & PIDS+=($!)
wait_port 21212
"$ROOT/spillway" kv --port 21213 --scheme spillway > "$OUT/kv-spillway.log" 2>&1 & PIDS+=($!)
wait_port 21213
declare -A PORT=([memcached]=21211 [kv-none]=21212 [kv-spillway]=21213)
SERVERS=(memcached kv-none kv-spillway)

run() { # name extra-args... -> prints TPS; the full output goes to OUT
  local name="$1" tag="$2"; shift 2
  taskset -c 1 memcaslap -s "127.0.0.1:${PORT[$name]}" -T 1 -c "$CONC" -t "${SECS}s" "$@" \
    > "$OUT/$name-$tag.txt" 2>&1 || true
  sed -n 's/.*TPS: \([0-9]*\).*/\1/p' "$OUT/$name-$tag.txt" | tail -1
}

echo "warm-up ..."
for s in "${SERVERS[@]}"; do run "$s" warmup > /dev/null; done
declare -A TPS
for r in $(seq 1 "$ROUNDS"); do
  for s in "${SERVERS[@]}"; do
    t=$(run "$s" "peak$r"); TPS[$s]="${TPS[$s]:-} $t"; echo "round $r $s $t ops/s"
  done
done
median() { tr ' ' '\n' | grep -v '^$' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
declare -A PEAK
for s in "${SERVERS[@]}"; do PEAK[$s]=$(echo "${TPS[$s]}" | median); done

{
  echo "# Spillway KV beside memcached (memcaslap 90 % GET / 10 % SET)"
  echo
  echo "$(date -u +%F) · $(nproc) cores · $("${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}/bin/java" -version 2>&1 | head -1) · memcached $(memcached -V | cut -d' ' -f2)"
  echo "servers on core 0 (one event loop / one worker thread), memcaslap -T 1 -c $CONC on core 1, ${SECS} s runs, median of $ROUNDS interleaved rounds after a warm-up run"
  echo
  echo "| server | peak ops/s, median (runs) | vs memcached |"
  echo "| --- | --- | --- |"
} > "$OUT/summary.md"
for s in "${SERVERS[@]}"; do
  ratio=$(awk -v a="${PEAK[$s]}" -v b="${PEAK[memcached]}" 'BEGIN {printf "%.2f", a/b}')
  echo "| $s | ${PEAK[$s]} (${TPS[$s]# }) | $ratio |" >> "$OUT/summary.md"
done
rej="$(kv_stat "${PORT[kv-spillway]}" spillway_rejected_gate) at the gate, $(kv_stat "${PORT[kv-spillway]}" spillway_rejected_budget) at locks"
echo >> "$OUT/summary.md"
echo "kv-spillway refused $rej over its warm-up and rounds (fast SERVER_ERROR replies, counted as ops by memcaslap)." >> "$OUT/summary.md"
{
  echo
  echo "Latency at 0.8 x each server's own peak (./spillway kv-load, open loop, ${SECS} s after 2 s warm-up):"
  echo
  echo "| server | rate (0.8 x peak) | round | ok/s | p50 us | p99 us | p99.9 us |"
  echo "| --- | --- | --- | --- | --- | --- | --- |"
} >> "$OUT/summary.md"
preload=()
for r in 1 2; do
  for s in memcached kv-none; do
    rate=$(( PEAK[$s] * 8 / 10 ))
    line=$("$ROOT/spillway" kv-load --port "${PORT[$s]}" ${preload[@]+"${preload[@]}"} --set-share 0.1 \
      --rate "$rate" --seconds "$SECS" --warmup 2 2>&1 | tail -1)
    echo "$s $r $line" >> "$OUT/latency-raw.txt"
    echo "$line" | python3 -c "
import re, sys
line = sys.stdin.read()
g = lambda p: re.search(p, line).group(1)
print(f'| $s | $rate | $r | {g(r\" ok ([0-9]+)\")} | {g(r\"p50 ([0-9.]+)\")} | {g(r\" p99 ([0-9.]+)\")} | {g(r\"p99.9 ([0-9.]+)\")} |')
" >> "$OUT/summary.md"
  done
  preload=(--no-preload) # the first round loaded every key into both
done
cat "$OUT/summary.md"
