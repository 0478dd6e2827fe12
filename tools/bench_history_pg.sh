#!/usr/bin/env bash
# The road at a past day: vegdb (`tidspunkt`) against PostgreSQL holding the same versions in a
# table with a `daterange` and GiST indexes, through pgbench (C client, `-M prepared`) and the
# load tool, alternating in one sitting, at 1, 2 and 8 connections. Two questions, of object
# type 105 (Fartsgrense) at day DAY:
#
#   statistikk: count and located length in one kommune
#     vegdb:  /vegobjekter/105/statistikk?kommune=K&tidspunkt=DAY
#     PG:     SELECT count(*), sum(length_m) FROM v105_muni WHERE kommune = K AND valid @> DAY
#             (one row per version and kommune it touches, GiST on (kommune, valid))
#   bbox:   the objects in a 2 km box (first page of 1000), vegdb's side the same in each
#           variant: /vegobjekter/105?kartutsnitt=...&tidspunkt=DAY&inkluder=minimum&antall=1000
#           (per object: id, href, metadata with type, versjon, startdato, sist_modifisert and
#           sluttdato; the objects whose geometry meets the box), against PostgreSQL asked
#     bbox:       SELECT id, versjon FROM v105 WHERE geom && box AND valid @> DAY LIMIT 1000
#                 (the box test of the index only: more objects than meet the box, fewer columns)
#     bbox_exact: SELECT id, versjon, lower(valid), upper(valid) FROM v105
#                 WHERE ST_Intersects(geom, box) AND valid @> DAY LIMIT 1000
#                 (the objects that meet the box, with their version and dates, as rows)
#     bbox_json:  the rows of bbox_exact as the page vegdb answers: one JSON document
#                 {"objekter": [{id, href, metadata: {type: {id, navn}, versjon, startdato,
#                 sluttdato}}, ...]} (json_agg; no sist_modifisert, which the table lacks)
#           (GiST on (geom, valid) in each)
#   wire:   the ceiling of any HTTP server for a page of that size: `vegdb-bare` (a handler that
#           does no work) answering every request with a fixed body of the mean size of vegdb's
#           bbox pages (the first 200 boxes), through the same load tool, against PG's `bbox`
#
#   tools/bench_history_pg.sh [DATA_DIR] [SECONDS] [ROUNDS] [DAY]
#
# QUERIES (default "statistikk bbox bbox_exact bbox_json wire") picks the questions.
#
# DATA_DIR: a data directory of format 4 with history (default /tmp/vn-history, made by
# `vegdb generate --scale national --data DIR`); DAY default 2019-06-01 (a day inside the
# generated history). vegdb's view of DAY is built by its first request (the warm-up), then
# kept: this measures the steady state of many questions about one day.
# PostgreSQL: the private cluster of tools/pg_cluster.sh (needs `postgresql-15-postgis-3`;
# btree_gist ships with PostgreSQL). The tables are loaded once per data directory by
# tools/versions_copy.py (pyarrow in $VEGDB_BENCH_VENV, installed when missing).
# STOP=1 stops the cluster at the end; NO_BUILD=1 uses the release binaries as they are.
# POLL_IDLE=1 (the default) holds idle CPUs polling for the run: see tools/poll_idle.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${1:-/tmp/vn-history}
SECS=${2:-8}
ROUNDS=${3:-2}
DAY=${4:-2019-06-01}
QUERIES=${QUERIES:-statistikk bbox bbox_exact bbox_json wire}
VPORT=${VPORT:-18191}
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
BPID=
cleanup() {
  [ -n "$VPID" ] && kill "$VPID" 2>/dev/null || true
  [ -n "$BPID" ] && kill "$BPID" 2>/dev/null || true
  rm -rf "$W"
  if [ "${STOP:-0}" = 1 ]; then tools/pg_cluster.sh stop || true; fi
}
trap cleanup EXIT

as_pg() { if [ "$(id -un)" = postgres ]; then "$@"; else runuser -u postgres -- "$@"; fi; }
psql_() { as_pg "$PGBIN/psql" -h 127.0.0.1 -p "$PGPORT" -U postgres -q -v ON_ERROR_STOP=1 "$@"; }

. tools/poll_idle.sh
if [ -f "$PEERDATA/pg/postmaster.pid" ]; then pg_running=1; else pg_running=0; tools/pg_cluster.sh start; fi

gen=$(cat "$DATA/CURRENT")
source_tag="$(cd "$DATA" && pwd) generation $gen"
loaded=$(psql_ -t -A -c "SELECT obj_description('v105'::regclass)" 2>/dev/null || true)
if [ "$loaded" != "$source_tag" ]; then
  if ! "$VENV/bin/python" -c 'import pyarrow' 2>/dev/null; then
    echo "installing pyarrow into $VENV ..." >&2
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q pyarrow
  fi
  echo "loading every version of type 105 of $source_tag into PostgreSQL ..." >&2
  psql_ -c "CREATE EXTENSION IF NOT EXISTS postgis; CREATE EXTENSION IF NOT EXISTS btree_gist;
            CREATE EXTENSION IF NOT EXISTS pg_prewarm;
            DROP TABLE IF EXISTS v105; DROP TABLE IF EXISTS v105_muni;
            CREATE TABLE v105 (id bigint, versjon int, valid daterange, length_m float8, geom geometry);
            CREATE TABLE v105_muni (id bigint, versjon int, kommune int, valid daterange, length_m float8)"
  "$VENV/bin/python" tools/versions_copy.py --objects "$DATA" 105 | psql_ -c "COPY v105 FROM STDIN"
  "$VENV/bin/python" tools/versions_copy.py --municipalities "$DATA" 105 | psql_ -c "COPY v105_muni FROM STDIN"
  psql_ -c "CREATE INDEX v105_gist ON v105 USING gist (geom, valid);
            CREATE INDEX v105_muni_gist ON v105_muni USING gist (kommune, valid);
            ANALYZE v105; ANALYZE v105_muni"
  psql_ -c "COMMENT ON TABLE v105 IS '$source_tag'"
fi
psql_ -t -A -c "SELECT pg_prewarm('v105'), pg_prewarm('v105_gist'), pg_prewarm('v105_muni'), pg_prewarm('v105_muni_gist')" >/dev/null
psql_ -t -A -c "SELECT 'versions of type 105: ' || count(*) || ', valid at $DAY: ' || count(*) FILTER (WHERE valid @> DATE '$DAY') FROM v105" >&2

# The questions: every kommune with type 105, and 2 km boxes around 2000 random objects.
psql_ -c "DROP TABLE IF EXISTS qkommune; CREATE TABLE qkommune AS
            SELECT row_number() OVER (ORDER BY kommune)::int AS qid, kommune FROM (SELECT DISTINCT kommune FROM v105_muni) k;
          DROP TABLE IF EXISTS qbox; CREATE TABLE qbox AS
            SELECT row_number() OVER ()::int AS qid, ST_X(c) - 1000 AS x0, ST_Y(c) - 1000 AS y0, ST_X(c) + 1000 AS x1, ST_Y(c) + 1000 AS y1
            FROM (SELECT ST_Centroid(geom) AS c FROM v105 WHERE geom IS NOT NULL ORDER BY md5(id::text) LIMIT 2000) s;
          CREATE UNIQUE INDEX ON qkommune (qid); CREATE UNIQUE INDEX ON qbox (qid)"
NK=$(psql_ -t -A -c "SELECT count(*) FROM qkommune")
NB=$(psql_ -t -A -c "SELECT count(*) FROM qbox")
psql_ -t -A -F ' ' -c "SELECT kommune FROM qkommune ORDER BY qid" |
  awk -v d="$DAY" '{ print "/vegobjekter/105/statistikk?kommune=" $1 "&tidspunkt=" d }' >"$W/statistikk.txt"
psql_ -t -A -F ',' -c "SELECT round(x0::numeric, 1), round(y0::numeric, 1), round(x1::numeric, 1), round(y1::numeric, 1) FROM qbox ORDER BY qid" |
  awk -v d="$DAY" '{ print "/vegobjekter/105?kartutsnitt=" $1 "&tidspunkt=" d "&inkluder=minimum&antall=1000" }' >"$W/bbox.txt"
cat >"$W/statistikk.sql" <<SQL
\set q random(1, $NK)
SELECT count(*), sum(length_m) FROM v105_muni WHERE kommune = (SELECT kommune FROM qkommune WHERE qid = :q) AND valid @> DATE '$DAY';
SQL
cat >"$W/bbox.sql" <<SQL
\set q random(1, $NB)
SELECT id, versjon FROM v105, (SELECT ST_MakeEnvelope(x0, y0, x1, y1, 25833) AS b FROM qbox WHERE qid = :q) q WHERE geom && q.b AND valid @> DATE '$DAY' LIMIT 1000;
SQL
cat >"$W/bbox_exact.sql" <<SQL
\set q random(1, $NB)
SELECT id, versjon, lower(valid), upper(valid) FROM v105, (SELECT ST_MakeEnvelope(x0, y0, x1, y1, 25833) AS b FROM qbox WHERE qid = :q) q WHERE ST_Intersects(geom, q.b) AND valid @> DATE '$DAY' LIMIT 1000;
SQL
cat >"$W/bbox_json.sql" <<SQL
\set q random(1, $NB)
SELECT json_build_object('objekter', coalesce(json_agg(json_build_object('id', id, 'href', 'http://127.0.0.1:$VPORT/nvdb/api/v2/vegobjekter/105/' || id, 'metadata', json_build_object('type', json_build_object('id', 105, 'navn', 'Fartsgrense'), 'versjon', versjon, 'startdato', lower(valid), 'sluttdato', upper(valid))) ORDER BY id), '[]')) FROM (SELECT id, versjon, valid FROM v105, (SELECT ST_MakeEnvelope(x0, y0, x1, y1, 25833) AS b FROM qbox WHERE qid = :q) q WHERE ST_Intersects(geom, q.b) AND valid @> DATE '$DAY' LIMIT 1000) o;
SQL
cp "$W/bbox.txt" "$W/bbox_exact.txt"
cp "$W/bbox.txt" "$W/bbox_json.txt"
cp "$W/bbox.txt" "$W/wire.txt"
cp "$W/bbox.sql" "$W/wire.sql"
chmod 644 "$W"/*.sql

"$BIN/vegdb" --log warn serve --data "$DATA" --read-only --listen "127.0.0.1:$VPORT" >"$W/vegdb.log" 2>&1 &
VPID=$!
echo "waiting for vegdb to load $DATA ..." >&2
until curl -sf "http://127.0.0.1:$VPORT/nvdb/api/v2/status" >/dev/null; do
  kill -0 "$VPID" 2>/dev/null || { cat "$W/vegdb.log" >&2; exit 1; }
  sleep 1
done
t0=$(date +%s%N)
curl -sf "http://127.0.0.1:$VPORT/nvdb/api/v2$(head -1 "$W/statistikk.txt")" >/dev/null
echo "vegdb: the view of $DAY built by the first request in $(( ($(date +%s%N) - t0) / 1000000 )) ms" >&2

pgbench_() { # sql clients -> queries/s
  local c=$2 j=$(( $2 > 2 ? 2 : $2 ))
  as_pg "$PGBIN/pgbench" -h 127.0.0.1 -p "$PGPORT" -U postgres -n -M prepared -f "$W/$1.sql" \
    -c "$c" -j "$j" -T "$SECS" postgres 2>&1 | sed -n 's/^tps = \([0-9.]*\).*/\1/p' | cut -d. -f1
}
case " $QUERIES " in *" wire "*)
  bytes=$(head -200 "$W/bbox.txt" | while read -r p; do
    curl -sf "http://127.0.0.1:$VPORT/nvdb/api/v2$p" | wc -c; done | awk '{ s += $1 } END { printf "%d", s / NR }')
  "$BIN/vegdb-bare" --listen "127.0.0.1:$((VPORT + 1))" --bytes "$bytes" >"$W/bare.log" 2>&1 &
  BPID=$!
  until curl -sf "http://127.0.0.1:$((VPORT + 1))/" >/dev/null; do sleep 0.2; done
  echo "wire: vegdb-bare answers a fixed body of $bytes bytes, the mean of vegdb's first 200 bbox pages" >&2 ;;
esac

vegdb_() { # paths connections -> "req/s p50 p99 non-2xx"
  local port=$VPORT
  [ "$1" = wire ] && port=$((VPORT + 1))
  "$BIN/vegdb-load" --base "http://127.0.0.1:$port/nvdb/api/v2" --paths "$W/$1.txt" \
    --connections "$2" --seconds "$SECS" --warmup 2 |
    sed -n 's/.*: \([0-9]*\) requests\/s, latency ms p50 \([0-9.]*\) p90 [0-9.]* p99 \([0-9.]*\).*; \([0-9]*\) non-2xx.*/\1 \2 \3 \4/p'
}

printf '%-10s %5s %5s | %8s | %9s %7s %7s %5s | %6s\n' query conns round "PG q/s" "vegdb r/s" p50ms p99ms errs ratio
for q in $QUERIES; do
  for c in 1 2 8; do
    for r in $(seq 1 "$ROUNDS"); do
      pg=$(pgbench_ "$q" "$c")
      read -r vr vp50 vp99 verr <<<"$(vegdb_ "$q" "$c")"
      ratio=$(awk -v v="$vr" -v p="$pg" 'BEGIN { printf "%.1f", (p ? v / p : 0) }')
      printf '%-10s %5s %5s | %8s | %9s %7s %7s %5s | %6s\n' "$q" "$c" "$r" "$pg" "$vr" "$vp50" "$vp99" "$verr" "$ratio"
    done
  done
done
[ "$pg_running" = 1 ] || [ "${STOP:-0}" = 1 ] || echo "(the PostgreSQL cluster keeps running: tools/pg_cluster.sh stop)" >&2
