#!/usr/bin/env bash
# `/posisjon` against PostGIS KNN through pgbench (C client, `-M prepared`) on the same
# links and points, at 1, 2 and 8 connections, alternating in one sitting.
#
#   tools/bench_postgis_posisjon.sh [DATA_DIR] [SECONDS] [ROUNDS]
#
# DATA_DIR: a generation directory (default /tmp/vn); SECONDS per run (default 8); ROUNDS of
# alternation (default 2). Prints queries/s of PostGIS and requests/s (p50, p99) of vegdb and
# the ratio vegdb / PostGIS per connection count.
#
# PostGIS: a private throw-away PostgreSQL 15 cluster (tools/pg_cluster.sh, copied from the
# project's shared peer set-up: 127.0.0.1:54339, data under $PEERDATA, default /tmp/vegdb-pg),
# needs `apt-get install postgresql-15-postgis-3`. The links table (level-0, non-connection
# links with a GiST index, like tools/peer_postgis.py) is loaded once per data directory and
# kept; the loader (tools/links_copy.py) needs pyarrow, installed into a virtual environment
# ($VEGDB_BENCH_VENV, default ~/.cache/vegdb-bench/venv) from PyPI when missing. The query is
# the one of ../shared/bench/peers/pgbench_knn.sh: nearest link within 30 m by `<->` with
# `ST_DWithin`, the same points as the `/posisjon` paths (`vegdb snapshot queries`).
# STOP=1 stops the cluster at the end; CLEAN=1 also deletes $PEERDATA; NO_BUILD=1 uses the release
# binaries as they are.
# vegdb runs as shipped: `--log info`, so the access log writes a line per request (to a file);
# LOG=warn leaves the access log out. Every operations layer is on unless the environment
# says otherwise (VEGDB_METRICS=false VEGDB_ACCESS_LOG=false VEGDB_HTTP_CACHE=false ...).
# POLL_IDLE=1 (the default) holds idle CPUs polling for the run: see tools/poll_idle.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
. tools/poll_idle.sh
DATA=${1:-/tmp/vn}
SECS=${2:-8}
ROUNDS=${3:-2}
VPORT=${VPORT:-18190}
export PEERDATA=${PEERDATA:-/tmp/vegdb-pg}
export PGPORT=${PGPORT:-54339}
PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
VENV=${VEGDB_BENCH_VENV:-$HOME/.cache/vegdb-bench/venv}
[ -f "$DATA/CURRENT" ] || { echo "no generation in $DATA (vegdb generate --scale national --data $DATA)" >&2; exit 2; }
[ -f /usr/share/postgresql/15/extension/postgis.control ] ||
  { echo "PostGIS for PostgreSQL 15 is missing: apt-get install -y postgresql-15-postgis-3" >&2; exit 2; }

[ "${NO_BUILD:-0}" = 1 ] || cargo build --release --bins --locked -q
BIN=${CARGO_TARGET_DIR:-target}/release
W=$(mktemp -d)
chmod 755 "$W"
VPID=
cleanup() {
  [ -n "$VPID" ] && kill "$VPID" 2>/dev/null || true
  rm -rf "$W"
  if [ "${STOP:-0}" = 1 ] || [ "${CLEAN:-0}" = 1 ]; then tools/pg_cluster.sh stop || true; fi
  if [ "${CLEAN:-0}" = 1 ]; then rm -rf "$PEERDATA"; fi
}
trap cleanup EXIT

as_pg() { if [ "$(id -un)" = postgres ]; then "$@"; else runuser -u postgres -- "$@"; fi; }
psql_() { as_pg "$PGBIN/psql" -h 127.0.0.1 -p "$PGPORT" -U postgres -q -v ON_ERROR_STOP=1 "$@"; }

if [ -f "$PEERDATA/pg/postmaster.pid" ]; then pg_running=1; else pg_running=0; tools/pg_cluster.sh start; fi

# Load the links once per generation (the table remembers where it came from).
gen=$(cat "$DATA/CURRENT")
source_tag="$(cd "$DATA" && pwd) generation $gen"
loaded=$(psql_ -t -A -c "SELECT obj_description('links'::regclass)" 2>/dev/null || true)
if [ "$loaded" != "$source_tag" ]; then
  if ! "$VENV/bin/python" -c 'import pyarrow' 2>/dev/null; then
    echo "installing pyarrow into $VENV ..." >&2
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q pyarrow
  fi
  echo "loading links of $source_tag into PostGIS ..." >&2
  psql_ -c "CREATE EXTENSION IF NOT EXISTS postgis; CREATE EXTENSION IF NOT EXISTS pg_prewarm;
            DROP TABLE IF EXISTS links; CREATE TABLE links (id bigint, geom geometry)"
  "$VENV/bin/python" tools/links_copy.py "$DATA" | psql_ -c "COPY links (id, geom) FROM STDIN"
  psql_ -c "CREATE INDEX links_gist ON links USING gist (geom); ANALYZE links"
  psql_ -c "COMMENT ON TABLE links IS '$source_tag'"
fi
psql_ -t -A -c "SELECT pg_prewarm('links'), pg_prewarm('links_gist')" >/dev/null

# The same points as the /posisjon paths.
"$BIN/vegdb" --log warn snapshot queries --data "$DATA" --count 100000 >"$W/posisjon.txt"
psql_ -c "DROP TABLE IF EXISTS qpoints; CREATE TABLE qpoints(qid int primary key, x float8, y float8)"
sed -n 's/.*nord=\([-0-9.]*\)&ost=\([-0-9.]*\).*/\2,\1/p' "$W/posisjon.txt" | awk '{print NR "," $0}' |
  psql_ -c "COPY qpoints FROM STDIN WITH (FORMAT csv)"
N=$(psql_ -t -A -c "SELECT count(*) FROM qpoints")
cat >"$W/knn.sql" <<SQL
\set q random(1, $N)
SELECT l.id, ST_Distance(l.geom, p.p) FROM links l, (SELECT ST_SetSRID(ST_MakePoint(x, y), 25833) AS p FROM qpoints WHERE qid = :q) p WHERE ST_DWithin(l.geom, p.p, 30) ORDER BY l.geom <-> p.p LIMIT 1;
SQL
chmod 644 "$W/knn.sql"

"$BIN/vegdb" --log "${LOG:-info}" serve --data "$DATA" --read-only --listen "127.0.0.1:$VPORT" >"$W/vegdb.log" 2>&1 &
VPID=$!
echo "waiting for vegdb to load $DATA ..." >&2
until curl -sf "http://127.0.0.1:$VPORT/nvdb/api/v2/status" >/dev/null; do
  kill -0 "$VPID" 2>/dev/null || { cat "$W/vegdb.log" >&2; exit 1; }
  sleep 1
done

pgbench_() { # clients -> queries/s
  local c=$1 j=$(( $1 > 2 ? 2 : $1 ))
  as_pg "$PGBIN/pgbench" -h 127.0.0.1 -p "$PGPORT" -U postgres -n -M prepared -f "$W/knn.sql" \
    -c "$c" -j "$j" -T "$SECS" postgres 2>&1 | sed -n 's/^tps = \([0-9.]*\).*/\1/p' | cut -d. -f1
}
vegdb_() { # connections -> "req/s p50 p99"
  "$BIN/vegdb-load" --base "http://127.0.0.1:$VPORT/nvdb/api/v2" --paths "$W/posisjon.txt" \
    --connections "$1" --seconds "$SECS" --warmup 2 |
    sed -n 's/.*: \([0-9]*\) requests\/s, latency ms p50 \([0-9.]*\) p90 [0-9.]* p99 \([0-9.]*\).*/\1 \2 \3/p'
}

printf '%5s %5s | %12s | %10s %7s %7s | %6s\n' conns round "PostGIS q/s" "vegdb r/s" p50ms p99ms ratio
for c in 1 2 8; do
  for r in $(seq 1 "$ROUNDS"); do
    pg=$(pgbench_ "$c")
    read -r vr vp50 vp99 <<<"$(vegdb_ "$c")"
    ratio=$(awk -v v="$vr" -v p="$pg" 'BEGIN { printf "%.2f", (p ? v / p : 0) }')
    printf '%5s %5s | %12s | %10s %7s %7s | %6s\n' "$c" "$r" "$pg" "$vr" "$vp50" "$vp99" "$ratio"
  done
done
[ "$pg_running" = 1 ] || [ "${STOP:-0}" = 1 ] || echo "(the PostGIS cluster keeps running: tools/pg_cluster.sh stop)" >&2
