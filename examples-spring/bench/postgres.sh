#!/usr/bin/env bash
# A throwaway PostgreSQL server for examples-spring's statements profile: a fresh cluster in DIR
# (default /tmp/spillway-postgres), listening on 127.0.0.1:25432 with trust authentication for
# the user spillway, pinned to core CORE (default 1). Debian's postgresql package; as root the
# server runs as the postgres user, since PostgreSQL refuses to run as root.
# Usage: [CORE=N] examples-spring/bench/postgres.sh start|stop [DIR]   (docs/results/spring.md)
set -eu
ACTION=${1:?usage: postgres.sh start|stop [DIR]}
DIR=${2:-/tmp/spillway-postgres}
PORT=25432 # below the kernel's ephemeral range (32768-60999), so no client socket holds it
CORE=${CORE:-1}
BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -x "$BIN/pg_ctl" ] || { echo "no PostgreSQL server found (apt-get install postgresql)" >&2; exit 1; }
as_owner() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
case "$ACTION" in
  start)
    if [ ! -f "$DIR/data/PG_VERSION" ]; then
      mkdir -p "$DIR"
      [ "$(id -u)" = 0 ] && chown postgres "$DIR"
      as_owner "$BIN/initdb" -D "$DIR/data" -A trust -U spillway >"$DIR/initdb.log"
    fi
    as_owner taskset -c "$CORE" "$BIN/pg_ctl" -D "$DIR/data" -l "$DIR/server.log" -w \
      -o "-p $PORT -k $DIR -c listen_addresses=127.0.0.1" start
    ;;
  stop)
    as_owner "$BIN/pg_ctl" -D "$DIR/data" -m fast stop
    ;;
  *) echo "usage: postgres.sh start|stop [DIR]" >&2; exit 2 ;;
esac
