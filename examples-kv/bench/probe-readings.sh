#!/usr/bin/env bash
# What the event loops' delay signal (ExecutorBacklogProbe) reads on io_uring, epoll and NIO, as the
# KV server uses it: the evidence behind KvServer.defaultTransport. One round runs, for each
# transport in turn, a LoopProbeReadings server on core 0 (text port with --scheme spillway's
# gate, frame port with no credits; both gates wrapped to record the delay they read at each
# admission, and on the text port how long a task submitted there waits to run), forced with
# -Dspillway.transport, and against it on core 1:
#   ping-text, ping-frame   one connection, one GET at a time (closed loop, REQUESTS each): nothing
#                           is queued when a request arrives, so any delay read is left over
#   kv-load-R               ./spillway kv-load, R requests/s open loop, 10 % SET, on the text port;
#                           refusals also read from `stats` (spillway_rejected_gate, warm-up included)
#   kv-frame-load-R         ./spillway kv-frame-load --scheme none, the same on the frame port (its
#                           "rejected" are requests the client itself let expire, never sent)
# after a warm-up of both pings. Run it once per round (ROUND 1, 2, 3 ...) into the same OUT_DIR;
# each run rewrites OUT_DIR/summary.md from every round there.
# Usage: examples-kv/bench/probe-readings.sh OUT_DIR ROUND [SECONDS] ["RATE1 RATE2 ..."] [REQUESTS]
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
OUT="${1:?usage: probe-readings.sh OUT_DIR ROUND [SECONDS] [RATES] [REQUESTS]}"
ROUND="${2:?round}"
SECS="${3:-10}"
RATES="${4:-300 1000}"
REQUESTS="${5:-20000}"
mkdir -p "$OUT"
source "$(dirname "$0")/servers.sh"
"$ROOT/spillway" kv --help > /dev/null # builds examples-kv if it is missing or stale
JAVA="${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}/bin/java"
CP="$ROOT/examples-kv/target/examples-kv-0.1.0-SNAPSHOT.jar:$ROOT/examples-kv/target/lib/*"
core() { if [ "$(nproc)" -ge 2 ] && command -v taskset > /dev/null; then echo taskset -c "$1"; fi; }
ping() { # PORT_KIND PORT: a closed-loop client on core 1, its line appended to $D/clients.txt
  $(core 1) "$JAVA" -XX:+UseParallelGC --enable-native-access=ALL-UNNAMED -cp "$CP" \
    io.spillway.kv.LoopProbeReadings ping "$1" "$2" "$REQUESTS" >> "$D/clients.txt"
}
PORT=21332
FRAME_PORT=21333
for t in io_uring epoll nio; do
  D="$OUT/$ROUND-$t"
  mkdir -p "$D"
  rm -f "$D/control"; mkfifo "$D/control"
  $(core 0) "$JAVA" -XX:+UseParallelGC -Xms832m -Xmx832m -Xmn192m --enable-native-access=ALL-UNNAMED \
    -Dspillway.transport="$t" -cp "$CP" io.spillway.kv.LoopProbeReadings serve "$PORT" "$FRAME_PORT" \
    < "$D/control" > "$D/server.txt" 2> "$D/server.err" &
  SERVER=$!; PIDS+=($!)
  exec 3> "$D/control"
  wait_port "$PORT"
  ping text "$PORT"; ping frame "$FRAME_PORT"; echo warmup >&3
  ping text "$PORT"; echo ping-text >&3
  ping frame "$FRAME_PORT"; echo ping-frame >&3
  for r in $RATES; do
    before=$(kv_stat "$PORT" spillway_rejected_gate)
    line=$("$ROOT/spillway" kv-load --port "$PORT" --no-preload --set-share 0.1 --rate "$r" \
      --seconds "$SECS" --warmup 1 2>&1 | tail -1)
    after=$(kv_stat "$PORT" spillway_rejected_gate)
    echo "kv-load-$r $line | stats spillway_transport $(kv_stat "$PORT" spillway_transport)" \
      "spillway_rejected_gate +$((after - before))" >> "$D/clients.txt"
    echo "kv-load-$r" >&3
    line=$("$ROOT/spillway" kv-frame-load --ports "$FRAME_PORT" --no-preload --scheme none \
      --set-share 0.1 --rate "$r" --seconds "$SECS" --warmup 1 2>&1 | tail -1)
    echo "kv-frame-load-$r $line" >> "$D/clients.txt"
    echo "kv-frame-load-$r" >&3
  done
  exec 3>&-
  wait "$SERVER" || true
done
python3 - "$OUT" "$SECS" "$("$JAVA" -version 2>&1 | head -1)" > "$OUT/summary.md" <<'PY'
import glob, os, re, sys
out, secs, jdk = sys.argv[1:]
print("# What the event-loop probe reads, per transport (examples-kv/bench/probe-readings.sh)\n")
print(f"{jdk} · {os.cpu_count()} cores · server on core 0, clients on core 1 · open-loop runs {secs} s after 1 s warm-up\n")
print("| run | port | transport | round | admitted | refused by the gate | task lag µs: mean · p99 "
      "| delay read at admission µs: mean · p99 · max | reads > 0 | reads > 100 µs | client |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
rows = []
for d in glob.glob(os.path.join(out, "*-*")):
    rnd, transport = os.path.basename(d).split("-", 1)
    clients = {}
    for line in open(os.path.join(d, "clients.txt")):
        head = line.split()[0]
        if head.startswith("kv-"):
            m = re.search(r"rejected ([0-9.]+ %)", line) or re.search(r"rejected \d+ \(([0-9.]+ %)", line)
            clients[head] = f"rejected {m[1]}" if m else ""
    for line in open(os.path.join(d, "server.txt")):
        m = re.match(r"(\S+) (text|frame) admitted (\d+) refused (\d+) \| task lag us (-|mean ([\d.]+) p50 [\d.]+ "
                     r"p99 ([\d.]+) max [\d.]+) \| gate read us mean ([\d.]+) p99 ([\d.]+) max ([\d.]+) "
                     r"nonzero ([\d.]+) % over100us ([\d.]+) %", line)
        if not m or m[1] == "warmup" or int(m[3]) + int(m[4]) == 0:
            continue
        lag = "–" if m[5] == "-" else f"{m[6]} · {m[7]}"
        rows.append((m[1], m[2], transport, rnd, m[3], m[4], lag, f"{m[8]} · {m[9]} · {m[10]}",
                     f"{m[11]} %", f"{m[12]} %", clients.get(m[1], "")))
order = {"io_uring": 0, "epoll": 1, "nio": 2}
def key(r):
    name, _, rate = r[0].rpartition("-")
    return (name, int(rate), r[1], order[r[2]], r[3]) if rate.isdigit() else (r[0], 0, r[1], order[r[2]], r[3])
for r in sorted(rows, key=key):
    print("| " + " | ".join(r) + " |")
PY
cat "$OUT/summary.md"
