#!/usr/bin/env bash
# Zoom-12 `vegnett` tiles of vegdb against PostGIS `ST_AsMVT` on the same links and the
# same tiles.
#
#   tools/bench_tiles_postgis.sh [DATA_DIR] [TILES_FILE] [SECONDS]
#
# DATA_DIR: a data directory (default /tmp/vn). TILES_FILE: `z x y` per line, as benches/tiles.rs
# writes it with VEGDB_TILES_OUT (default: $TILES_FILE or the file the bench wrote,
# /tmp/vegdb-tiles-z12.txt). SECONDS per run (default 10).
#
# PostGIS: the private throw-away PostgreSQL 15 cluster of tools/pg_cluster.sh (127.0.0.1:54339,
# data under $PEERDATA, default /tmp/vegdb-pg; `apt-get install postgresql-15-postgis-3`) with the
# links table of tools/links_copy.py (level-0 links that are not connection links — what vegdb's
# `vegnett` layer draws below zoom 14 — with a GiST index), loaded once per data directory exactly
# as tools/bench_postgis_posisjon.sh does. The query per tile is the standard ST_AsMVT recipe:
# links whose box meets the tile envelope (plus the 64-unit buffer) transformed to 25833,
# ST_AsMVTGeom(ST_Transform(ST_Force2D(geom), 3857), envelope, 4096, 64, true) (2D: ST_AsMVTGeom
# refuses some 3D lines with "mixed dimension geometries"), with the link id as the only
# attribute (vegdb's tiles carry nine). pgbench (C client, `-M prepared`, one connection) picks a
# tile at random per transaction and logs each one; the script prints the median and p90 latency.
# vegdb: the release server (`--read-only`) on the same data, the same tile paths through
# `vegdb-load` (one connection, keep-alive): requests/s and latency p50/p99.
# STOP=1 stops the cluster at the end; NO_BUILD=1 uses the release binaries as they are.
# POLL_IDLE=1 (the default) holds idle CPUs polling for the run: see tools/poll_idle.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
. tools/poll_idle.sh
DATA=${1:-/tmp/vn}
TILES=${2:-${TILES_FILE:-/tmp/vegdb-tiles-z12.txt}}
SECS=${3:-10}
VPORT=${VPORT:-18191}
export PEERDATA=${PEERDATA:-/tmp/vegdb-pg}
export PGPORT=${PGPORT:-54339}
PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
VENV=${VEGDB_BENCH_VENV:-$HOME/.cache/vegdb-bench/venv}
[ -f "$DATA/CURRENT" ] || { echo "no generation in $DATA" >&2; exit 2; }
[ -s "$TILES" ] || { echo "no tile list $TILES: VEGDB_BENCH_DATA=$DATA VEGDB_TILES_OUT=$TILES cargo bench --bench tiles" >&2; exit 2; }
[ -f /usr/share/postgresql/15/extension/postgis.control ] ||
  { echo "PostGIS for PostgreSQL 15 is missing: apt-get install -y postgresql-15-postgis-3" >&2; exit 2; }

[ "${NO_BUILD:-0}" = 1 ] || cargo build --release --bins --locked -q
BIN=${CARGO_TARGET_DIR:-target}/release
W=$(mktemp -d)
chmod 1777 "$W"  # pgbench (user postgres) writes its per-transaction log here
VPID=
cleanup() {
  [ -n "$VPID" ] && kill "$VPID" 2>/dev/null || true
  rm -rf "$W"
  if [ "${STOP:-0}" = 1 ]; then tools/pg_cluster.sh stop || true; fi
}
trap cleanup EXIT

as_pg() { if [ "$(id -un)" = postgres ]; then "$@"; else runuser -u postgres -- "$@"; fi; }
psql_() { as_pg "$PGBIN/psql" -h 127.0.0.1 -p "$PGPORT" -U postgres -q -v ON_ERROR_STOP=1 "$@"; }

[ -f "$PEERDATA/pg/postmaster.pid" ] || tools/pg_cluster.sh start

gen=$(cat "$DATA/CURRENT")
source_tag="$(cd "$DATA" && pwd) generation $gen"
loaded=$(psql_ -t -A -c "SELECT obj_description('links'::regclass)" 2>/dev/null || true)
if [ "$loaded" != "$source_tag" ]; then
  if ! "$VENV/bin/python" -c 'import pyarrow' 2>/dev/null; then
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

psql_ -c "DROP TABLE IF EXISTS tiles_z12_list; CREATE TABLE tiles_z12_list(i int primary key, z int, x int, y int)"
awk '{print NR "," $1 "," $2 "," $3}' "$TILES" | psql_ -c "COPY tiles_z12_list FROM STDIN WITH (FORMAT csv)"
N=$(psql_ -t -A -c "SELECT count(*) FROM tiles_z12_list")
cat >"$W/mvt.sql" <<SQL
\set i random(1, $N)
SELECT length(ST_AsMVT(m.*, 'vegnett', 4096, 'geom')) FROM (
  SELECT l.id AS veglenke, ST_AsMVTGeom(ST_Transform(ST_Force2D(l.geom), 3857), t.env, 4096, 64, true) AS geom
  FROM (SELECT ST_TileEnvelope(z, x, y) AS env, ST_TileEnvelope(z, x, y, margin => 64.0 / 4096) AS benv
        FROM tiles_z12_list WHERE i = :i) t
  JOIN links l ON l.geom && ST_Transform(t.benv, 25833)
) m WHERE m.geom IS NOT NULL;
SQL
chmod 644 "$W/mvt.sql"
sed 's|^\([0-9]*\) \([0-9]*\) \([0-9]*\)$|/tiles/vegnett/\1/\2/\3.mvt|' "$TILES" >"$W/paths.txt"

"$BIN/vegdb" --log warn serve --data "$DATA" --read-only --listen "127.0.0.1:$VPORT" >"$W/vegdb.log" 2>&1 &
VPID=$!
echo "waiting for vegdb to load $DATA ..." >&2
until curl -sf "http://127.0.0.1:$VPORT/nvdb/api/v2/status" >/dev/null; do
  kill -0 "$VPID" 2>/dev/null || { cat "$W/vegdb.log" >&2; exit 1; }
  sleep 1
done

echo "PostGIS ST_AsMVT, 1 connection, $SECS s, $N tiles at random:"
(cd "$W" && as_pg "$PGBIN/pgbench" -h 127.0.0.1 -p "$PGPORT" -U postgres -n -M prepared \
  -f "$W/mvt.sql" -c 1 -j 1 -T "$SECS" -l --log-prefix="$W/pgb" postgres 2>&1 |
  grep -E '^(number of transactions actually processed|latency average|tps)')
cat "$W"/pgb.* | awk '{print $3 / 1000}' | sort -n |
  awk '{a[NR] = $1} END {printf "PostGIS latency ms: median %.3f, p90 %.3f, p99 %.3f (%d tiles)\n",
       a[int(NR * 0.5) + 1], a[int(NR * 0.9) + 1], a[int(NR * 0.99) + 1], NR}'

echo "vegdb over HTTP (vegdb-load, 1 connection, $SECS s, the same tiles in turn):"
"$BIN/vegdb-load" --base "http://127.0.0.1:$VPORT" --paths "$W/paths.txt" \
  --connections 1 --seconds "$SECS" --warmup 2
[ "${STOP:-0}" = 1 ] || echo "(the PostGIS cluster keeps running: tools/pg_cluster.sh stop)" >&2
