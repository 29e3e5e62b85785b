# Sourced by the bench scripts: servers started in the background are recorded in PIDS and
# stopped when the script exits, however it exits; wait_port PORT waits (up to 2 min) for a
# listener on 127.0.0.1:PORT, or ends the script; kv_stat PORT NAME prints one value of the server's
# memcached `stats`.
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait "${PIDS[@]}" 2>/dev/null || true; }
trap cleanup EXIT
wait_port() {
  for i in $(seq 1 600); do (exec 3<>/dev/tcp/127.0.0.1/$1) 2>/dev/null && return 0; sleep 0.2; done
  echo "nothing listens on $1"; exit 1
}
kv_stat() {
  printf 'stats\r\nquit\r\n' | timeout 5 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1; cat >&3; cat <&3" \
    | tr -d '\r' | awk -v k="$2" '$1 == "STAT" && $2 == k {print $3}'
}
