#!/usr/bin/env bash
# Peak throughput and tail latency of Spillway KV beside the real memcached, one run, one server
# core each (core 0), memcaslap on core 1 (docs/results/kv.md). memcaslap's default mix: 90 % GET,
# 10 % SET. Usage: examples-kv/bench/memcaslap-peak.sh OUT_DIR [ROUNDS] [SECONDS] [CONCURRENCY]
#
#  1. starts memcached -t 1 -m 64 and two Spillway KVs (--scheme none, and the default spillway),
#     all pinned to core 0, one driven at a time;
#  2. warms each JVM for one run (the JIT), then ROUNDS closed-loop runs per server, interleaved
#     (mc, none, spillway, mc, ...), so drift on the machine hits all three alike; peak = median;
#  3. paces each server at 0.8x its own peak (memcaslap -P) and reads its latency distribution
#     (memcaslap's log2 buckets: p99 is reported as the bucket [2^k, 2^(k+1)) us it falls in);
#  4. paces none and spillway at 0.9x none's peak: what protection costs when nothing needs it.
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
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

taskset -c 0 memcached "${user[@]}" -l 127.0.0.1 -p 21211 -U 0 -t 1 -m 64 & PIDS+=($!)
"$ROOT/spillway" kv --port 21212 --scheme none > "$OUT/kv-none.log" 2>&1 & PIDS+=($!)
"$ROOT/spillway" kv --port 21213 > "$OUT/kv-spillway.log" 2>&1 & PIDS+=($!)
for port in 21211 21212 21213; do
  for i in $(seq 1 300); do
    (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break
    sleep 0.2
  done
done
declare -A PORT=([memcached]=21211 [kv-none]=21212 [kv-spillway]=21213)
SERVERS=(memcached kv-none kv-spillway)

run() { # name extra-args... -> prints TPS; the full output goes to OUT
  local name="$1" tag="$2"; shift 2
  taskset -c 1 memcaslap -s "127.0.0.1:${PORT[$name]}" -T 1 -c "$CONC" -t "${SECS}s" "$@" \
    > "$OUT/$name-$tag.txt" 2>&1 || true
  sed -n 's/.*TPS: \([0-9]*\).*/\1/p' "$OUT/$name-$tag.txt" | tail -1
}

p99_bucket() { # memcaslap -S output -> "lo-hi" (us) of the bucket holding the 99th percentile
  awk '/^Total Statistics/ {t=1} t && /Log2 Dist:/ {d=1; next} d && /^ *[0-9]+:/ {
         base=$1+0; for (i=2; i<=NF; i++) { c[base+i-2]=$i; n+=$i } next } d {exit}
       END { need=0.99*n; s=0; for (k=0; k<64; k++) { s+=c[k]; if (s>=need) { printf "%d-%d", 2^k, 2^(k+1); exit } } }' "$1"
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
  echo "| server | peak ops/s (runs) | vs memcached | p99 at 0.8x own peak (us bucket) | ops/s at 0.8x |"
  echo "| --- | --- | --- | --- | --- |"
} > "$OUT/summary.md"
for s in "${SERVERS[@]}"; do
  rate=$(( PEAK[$s] * 8 / 10 ))
  t=$(run "$s" p80 -P "$(( rate / 1000 ))k" -S "${SECS}s")
  b=$(p99_bucket "$OUT/$s-p80.txt")
  ratio=$(awk -v a="${PEAK[$s]}" -v b="${PEAK[memcached]}" 'BEGIN {printf "%.2f", a/b}')
  echo "| $s | ${PEAK[$s]} (${TPS[$s]# }) | $ratio | $b | $t |" >> "$OUT/summary.md"
done
rate=$(( PEAK[kv-none] * 9 / 10 ))
{
  echo
  echo "Protection at 0.9x kv-none's peak ($rate ops/s offered, paced by memcaslap -P):"
  echo
  echo "| server | ops/s | rejected (gate, budget) |"
  echo "| --- | --- | --- |"
} >> "$OUT/summary.md"
for s in kv-none kv-spillway; do
  t=$(run "$s" p90 -P "$(( rate / 1000 ))k")
  rej=$(printf 'stats\r\nquit\r\n' | timeout 5 bash -c "exec 3<>/dev/tcp/127.0.0.1/${PORT[$s]}; cat >&3; cat <&3" \
    | awk '/spillway_rejected_gate/ {g=$3} /spillway_rejected_budget/ {b=$3} END {printf "%d, %d", g, b}' | tr -d '\r')
  echo "| $s | $t | $rej (whole run) |" >> "$OUT/summary.md"
done
cat "$OUT/summary.md"
