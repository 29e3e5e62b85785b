#!/usr/bin/env bash
# Two replicas with retry after a fast reject (protego-nsdi23 §5.3, Fig. 8) on real sockets
# (docs/results/kv.md, "Two replicas"): two Spillway KV servers, each one event loop serving the
# native frame with Protego's credits and the store's budgeted locks, BOTH on core 0 (this machine
# has two cores: the generator takes core 1); ./spillway kv-frame-load on core 1 offers VAR
# (82 % SET) open-loop, first to server 1 alone (KvClient), then to server 1 with server 2 as its
# replica (KvReplicaClient: a fast reject is retried once on server 2). Each rate runs both ways in
# turn, so drift hits both alike.
# Usage: examples-kv/bench/kv-replicas.sh OUT_DIR "RATE1 RATE2 ..." [SECONDS] [TARGET_US] [SCHEME]
# (SCHEME: the frame port's credits, protego (default), breakwater, spillway or none; the client uses the same)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
OUT="${1:?usage: kv-replicas.sh OUT_DIR RATES [SECONDS] [TARGET_US]}"
RATES="${2:?rates}"
SECS="${3:-5}"
TARGET="${4:-110}"
SCHEME="${5:-protego}"
SLO=$((2 * TARGET))
mkdir -p "$OUT"
source "$(dirname "$0")/servers.sh"
A=21411; B=21412
for p in $A $B; do
  "$ROOT/spillway" kv --port -1 --frame-port "$p" --cores 1 --memory 1024 --frame-scheme "$SCHEME" \
    --target-us "$TARGET" > "$OUT/server-$p.log" 2>&1 & PIDS+=($!)
  wait_port "$p"
done
# preload every key on both servers and warm both JVMs up
"$ROOT/spillway" kv-frame-load --ports "$A,$B" --target-us "$TARGET" --slo-us "$SLO" --scheme "$SCHEME" --rate 20000 \
  --seconds 3 --warmup 2 > "$OUT/warmup.txt" 2>&1
{
  echo "# kv replicas: VAR (82 % SET), scheme $SCHEME, target ${TARGET} us, SLO ${SLO} us, ${SECS} s per cell after 2 s warm-up"
  echo
  echo "$(date -u +%F) · $(nproc) cores · $("${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}/bin/java" -version 2>&1 | head -1) · both servers on core 0, generator on core 1"
  echo
} > "$OUT/summary.md"
for r in $RATES; do
  for mode in one two; do
    ports=$A; [ "$mode" = two ] && ports="$A,$B"
    line=$("$ROOT/spillway" kv-frame-load --ports "$ports" --no-preload --target-us "$TARGET" --scheme "$SCHEME" \
      --slo-us "$SLO" --rate "$r" --seconds "$SECS" --warmup 2 2>&1 | tail -1)
    echo "$mode $line" | tee -a "$OUT/raw.txt"
  done
done
cat "$OUT/raw.txt" >> "$OUT/summary.md"
