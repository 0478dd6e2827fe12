#!/usr/bin/env bash
# Copied from ../shared/bench/peers/pg_cluster.sh (the project's shared peer-benchmark set-up), unchanged
# apart from this note and the default data directory and port; the product does not read ../shared.
# Start / stop a private, throw-away PostgreSQL 15 + PostGIS cluster for the
# peer benchmarks. Data lives under $PEERDATA/pg (default /tmp/vegdb-pg/pg),
# listens on 127.0.0.1:$PGPORT only (default 54339) plus a unix socket in
# $PEERDATA/pgsock, trust auth, runs as the 'postgres' OS user.
#
# Settings are tuned for a read benchmark on a 2-core / 24 GiB box: durability
# is switched off (fsync, full_page_writes) because only load speed matters.
#
# usage: pg_cluster.sh start|stop|status
set -euo pipefail
PEERDATA=${PEERDATA:-/tmp/vegdb-pg}
PGPORT=${PGPORT:-54339}
PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
PGDATA_DIR=$PEERDATA/pg
SOCK=$PEERDATA/pgsock   # socket + server log, owned by postgres
as_pg() { if [ "$(id -un)" = postgres ]; then "$@"; else runuser -u postgres -- "$@"; fi; }

case "${1:-}" in
start)
  mkdir -p "$SOCK"
  chown postgres "$SOCK"
  if [ ! -f "$PGDATA_DIR/PG_VERSION" ]; then
    mkdir -p "$PGDATA_DIR"
    chown postgres "$PGDATA_DIR"
    as_pg "$PGBIN/initdb" -D "$PGDATA_DIR" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >/dev/null
    cat >>"$PGDATA_DIR/postgresql.conf" <<EOF
listen_addresses = '127.0.0.1'
port = $PGPORT
unix_socket_directories = '$SOCK'
shared_buffers = 4GB
effective_cache_size = 16GB
work_mem = 64MB
maintenance_work_mem = 2GB
max_parallel_workers_per_gather = 2
max_parallel_maintenance_workers = 2
random_page_cost = 1.1
jit = off
fsync = off
synchronous_commit = off
full_page_writes = off
wal_level = minimal
max_wal_senders = 0
max_wal_size = 8GB
checkpoint_timeout = 30min
EOF
  fi
  as_pg "$PGBIN/pg_ctl" -D "$PGDATA_DIR" -l "$SOCK/server.log" -w start >/dev/null
  echo "postgres started: host=$SOCK port=$PGPORT pid=$(head -1 "$PGDATA_DIR/postmaster.pid")"
  ;;
stop)
  if [ -f "$PGDATA_DIR/postmaster.pid" ]; then
    as_pg "$PGBIN/pg_ctl" -D "$PGDATA_DIR" -m fast -w stop >/dev/null
    echo "postgres stopped"
  else
    echo "postgres not running"
  fi
  ;;
status)
  as_pg "$PGBIN/pg_ctl" -D "$PGDATA_DIR" status || true
  ;;
*)
  echo "usage: $0 start|stop|status" >&2
  exit 2
  ;;
esac
