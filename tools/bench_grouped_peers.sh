#!/usr/bin/env bash
# Grouped statistics against DuckDB and PostgreSQL in one sitting, on the same rows, with the
# answers asserted equal: tools/grouped_peers.py says what is compared.
#
#   tools/bench_grouped_peers.sh [DATA_DIR] [REPEATS]
#
# DATA_DIR: a national generation (default /tmp/vn-history, made by
# `vegdb generate --scale national --data DIR`). PostgreSQL is the private cluster of
# tools/pg_cluster.sh (Debian postgresql-15). DuckDB and psycopg are installed into
# $VEGDB_BENCH_VENV when missing. NO_BUILD=1 uses the release binary as it is; STOP=1 stops
# the cluster at the end.
# POLL_IDLE=1 (the default) holds idle CPUs polling for the run: see tools/poll_idle.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
. tools/poll_idle.sh
DATA=${1:-/tmp/vn-history}
REPEATS=${2:-21}
VPORT=${VPORT:-18192}
export PEERDATA=${PEERDATA:-/tmp/vegdb-pg}
export PGPORT=${PGPORT:-54339}
VENV=${VEGDB_BENCH_VENV:-$HOME/.cache/vegdb-bench/venv}
[ -f "$DATA/CURRENT" ] || { echo "no generation in $DATA (vegdb generate --scale national --data $DATA)" >&2; exit 2; }
[ -x /usr/lib/postgresql/15/bin/postgres ] ||
  { echo "PostgreSQL 15 is missing: apt-get install -y postgresql-15" >&2; exit 2; }
if ! "$VENV/bin/python" -c 'import duckdb, psycopg' 2>/dev/null; then
  echo "installing duckdb and psycopg into $VENV ..." >&2
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q duckdb==1.4.4 "psycopg[binary]==3.2.12"
fi
[ "${NO_BUILD:-0}" = 1 ] || cargo build --release --bin vegdb --locked -q
BIN=${CARGO_TARGET_DIR:-target}/release
VPID=
cleanup() {
  [ -n "$VPID" ] && kill "$VPID" 2>/dev/null || true
  if [ "${STOP:-0}" = 1 ]; then tools/pg_cluster.sh stop || true; fi
}
trap cleanup EXIT
[ -f "$PEERDATA/pg/postmaster.pid" ] || tools/pg_cluster.sh start
LOG=$(mktemp)
"$BIN/vegdb" --log warn serve --data "$DATA" --read-only --listen "127.0.0.1:$VPORT" >"$LOG" 2>&1 &
VPID=$!
echo "waiting for vegdb to load $DATA ..." >&2
until curl -sf "http://127.0.0.1:$VPORT/nvdb/api/v2/status" >/dev/null; do
  kill -0 "$VPID" 2>/dev/null || { cat "$LOG" >&2; exit 1; }
  sleep 1
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
"$VENV/bin/python" tools/grouped_peers.py "$DATA" "http://127.0.0.1:$VPORT" \
  "host=127.0.0.1 port=$PGPORT user=postgres dbname=postgres" "$REPEATS"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
