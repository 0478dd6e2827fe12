#!/usr/bin/env bash
# Shortest routes: vegdb's /vegnett/rute against pgRouting's pgr_dijkstra on the same network,
# in one sitting, with the lengths of both compared and asserted equal (within 1 m).
#
#   tools/bench_route_pg.sh [DATA_DIR] [PAIRS] [SECONDS]
#
# The network: the rows /vegnett/rute uses by default (topology level 0, connection links
# included), one undirected edge per row weighted by its length_m, built into a pgRouting edge
# table by tools/route_edges_copy.py (its own reading of the Parquet rows, no vegdb code).
# The pairs: PAIRS (default 200) random row starts 1-50 km apart (straight line), asked of
# vegdb as link positions (`start=0.0@LINK&slutt=0.0@LINK`) and of pgRouting as vertex ids.
# pgRouting is asked two ways:
#   bbox:  as its documentation recommends, the edges inside the box of the two points
#          widened by MARGIN (default 0.5 × the distance, at least 2 km):
#          pgr_dijkstra('SELECT id, source, target, cost, cost AS reverse_cost
#                        FROM route_edges WHERE geom && <box>', a, b, directed := false)
#   whole: the same over every edge.
# Agreement: for the first CHECK pairs (default 50) vegdb's length and pgRouting's over the
# whole graph must be equal within 1 m (or both unconnected), and the box variant's never
# shorter (it finds no route, or a longer one, when the shortest leaves the box: counted);
# the script fails otherwise.
# Timing: vegdb over HTTP by the load tool (1 connection), pgRouting by pgbench (1 client,
# `-M prepared`), SECONDS (default 8) each.
#
# DATA_DIR: a data directory (default snapshots/demo; the national preset is made by
# `vegdb generate --scale national --data DIR`). PostgreSQL: the private cluster of
# tools/pg_cluster.sh (needs `postgresql-15-postgis-3` and `postgresql-15-pgrouting`).
# pyarrow in $VEGDB_BENCH_VENV (installed when missing). STOP=1 stops the cluster at the end;
# NO_BUILD=1 uses the release binaries as they are; BIN_DIR names another directory of
# binaries (tools/test.sh: the debug build). AGREE_ONLY=1 stops after the agreement check
# (what tools/test.sh runs on the demo), without timing.
# POLL_IDLE=1 (the default) holds idle CPUs polling for the run: see tools/poll_idle.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
. tools/poll_idle.sh
DATA=${1:-snapshots/demo}
PAIRS=${2:-200}
SECS=${3:-8}
CHECK=${CHECK:-50}
VPORT=${VPORT:-18192}
export PEERDATA=${PEERDATA:-/tmp/vegdb-pg}
export PGPORT=${PGPORT:-54339}
PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
VENV=${VEGDB_BENCH_VENV:-$HOME/.cache/vegdb-bench/venv}
[ -f "$DATA/CURRENT" ] || { echo "no generation in $DATA" >&2; exit 2; }
[ -f /usr/share/postgresql/15/extension/pgrouting.control ] ||
  { echo "pgRouting for PostgreSQL 15 is missing: apt-get install -y postgresql-15-pgrouting" >&2; exit 2; }

[ "${NO_BUILD:-0}" = 1 ] || cargo build --release --bins --locked -q
BIN=${BIN_DIR:-${CARGO_TARGET_DIR:-target}/release}
W=$(mktemp -d)
chmod 755 "$W"
VPID=
cleanup() {
  [ -n "$VPID" ] && kill "$VPID" 2>/dev/null || true
  rm -rf "$W"
  if [ "${STOP:-0}" = 1 ]; then tools/pg_cluster.sh stop || true; fi
}
trap cleanup EXIT

as_pg() { if [ "$(id -un)" = postgres ]; then "$@"; else runuser -u postgres -- "$@"; fi; }
psql_() { as_pg "$PGBIN/psql" -h 127.0.0.1 -p "$PGPORT" -U postgres -q -v ON_ERROR_STOP=1 "$@"; }

if ! "$VENV/bin/python" -c 'import pyarrow' 2>/dev/null; then
  echo "installing pyarrow into $VENV ..." >&2
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q pyarrow
fi
[ -f "$PEERDATA/pg/postmaster.pid" ] || tools/pg_cluster.sh start

gen=$(cat "$DATA/CURRENT")
source_tag="$(cd "$DATA" && pwd) generation $gen"
loaded=$(psql_ -t -A -c "SELECT obj_description('route_edges'::regclass)" 2>/dev/null || true)
if [ "$loaded" != "$source_tag" ]; then
  echo "loading the route edges of $source_tag into PostgreSQL ..." >&2
  psql_ -c "CREATE EXTENSION IF NOT EXISTS postgis; CREATE EXTENSION IF NOT EXISTS pgrouting;
            DROP TABLE IF EXISTS route_edges;
            CREATE TABLE route_edges (id bigint, source bigint, target bigint, cost float8, geom geometry)"
  "$VENV/bin/python" tools/route_edges_copy.py --edges "$DATA" | psql_ -c "COPY route_edges FROM STDIN"
  psql_ -c "CREATE INDEX route_edges_gist ON route_edges USING gist (geom); ANALYZE route_edges"
  psql_ -c "COMMENT ON TABLE route_edges IS '$source_tag'"
fi
psql_ -t -A -c "SELECT 'route edges: ' || count(*) FROM route_edges" >&2

"$VENV/bin/python" tools/route_edges_copy.py --pairs "$DATA" "$PAIRS" 7 >"$W/pairs.txt"
psql_ -c "DROP TABLE IF EXISTS qroute; CREATE TABLE qroute (qid serial, a bigint, b bigint, sa text, sb text, xa float8, ya float8, xb float8, yb float8)"
awk '{ print $1 "\t" $2 "\t" $3 "\t" $4 "\t" $5 "\t" $6 "\t" $7 "\t" $8 }' "$W/pairs.txt" |
  psql_ -c "COPY qroute (a, b, sa, sb, xa, ya, xb, yb) FROM STDIN"
# the box of each pair, widened by MARGIN metres or half the distance (at least 2 km)
psql_ -c "ALTER TABLE qroute ADD COLUMN box geometry;
          UPDATE qroute SET box = ST_Expand(ST_MakeEnvelope(least(xa, xb), least(ya, yb), greatest(xa, xb), greatest(ya, yb), 25833),
                                            coalesce(${MARGIN:-NULL}, greatest(2000, 0.5 * sqrt((xa - xb) ^ 2 + (ya - yb) ^ 2))));
          CREATE UNIQUE INDEX ON qroute (qid)"
# kortform: the route's link intervals and lengths without geometry (pgRouting answers its
# length only); KORTFORM=false asks for the full answer with every segment's geometry
awk -v k="${KORTFORM:-true}" '{ print "/vegnett/rute?start=" $3 "&slutt=" $4 "&kortform=" k }' "$W/pairs.txt" >"$W/vegdb.txt"
BBOX_SQL="SELECT max(agg_cost) FROM qroute q, pgr_dijkstra(format('SELECT id, source, target, cost, cost AS reverse_cost FROM route_edges WHERE geom && %L::geometry', q.box), q.a, q.b, false)"
WHOLE_SQL="SELECT max(agg_cost) FROM qroute q, pgr_dijkstra('SELECT id, source, target, cost, cost AS reverse_cost FROM route_edges', q.a, q.b, false)"
printf '\\set q random(1, %s)\n%s WHERE q.qid = :q;\n' "$PAIRS" "$BBOX_SQL" >"$W/bbox.sql"
printf '\\set q random(1, %s)\n%s WHERE q.qid = :q;\n' "$PAIRS" "$WHOLE_SQL" >"$W/whole.sql"
chmod 644 "$W"/*.sql

"$BIN/vegdb" --log warn serve --data "$DATA" --read-only --listen "127.0.0.1:$VPORT" >"$W/vegdb.log" 2>&1 &
VPID=$!
echo "waiting for vegdb to load $DATA ..." >&2
until curl -sf "http://127.0.0.1:$VPORT/nvdb/api/v2/status" >/dev/null; do
  kill -0 "$VPID" 2>/dev/null || { cat "$W/vegdb.log" >&2; exit 1; }
  sleep 1
done
t0=$(date +%s%N)
curl -s "http://127.0.0.1:$VPORT/nvdb/api/v2$(head -1 "$W/vegdb.txt")" >/dev/null
echo "vegdb: the first route (the graph made) in $(( ($(date +%s%N) - t0) / 1000000 )) ms" >&2
# the contraction hierarchy is made in the background after the first route (10-15 s on the
# national preset, well under a second on the demo; routes take A* until then): time and
# compare the steady state
sleep "${HIERARCHY_WAIT:-20}"

# agreement: vegdb's length and pgRouting's over the whole graph equal (within 1 m), pair by
# pair; the box variant cannot see roads outside its box, so it may find no route or a longer
# one (counted), but never a shorter one
echo "comparing the lengths of $CHECK pairs ..." >&2
bad=0
boxed_off=0
for i in $(seq 1 "$CHECK"); do
  path=$(sed -n "${i}p" "$W/vegdb.txt")
  v=$(curl -s "http://127.0.0.1:$VPORT/nvdb/api/v2$path" |
      python3 -c 'import json, sys; t = sys.stdin.read(); print(json.loads(t)["metadata"]["lengde"] if t else "none")')
  pb=$(psql_ -t -A -c "SELECT coalesce(($BBOX_SQL WHERE q.qid = $i)::text, 'none')")
  pw=$(psql_ -t -A -c "SELECT coalesce(($WHOLE_SQL WHERE q.qid = $i)::text, 'none')")
  verdict=$(python3 - "$v" "$pb" "$pw" <<'PY'
import sys
v, pb, pw = sys.argv[1:]
if v == "none" or pw == "none":
    print("same" if v == pw else "bad")
elif abs(float(v) - float(pw)) > 1.0:
    print("bad")
elif pb == "none" or float(pb) > float(v) + 1.0:
    print("box")
else:
    print("same" if abs(float(pb) - float(v)) <= 1.0 else "bad")
PY
)
  case $verdict in
    bad) echo "DIFFERENT pair $i ($path): vegdb $v, pgRouting bbox $pb, whole $pw" >&2; bad=$((bad + 1)) ;;
    box) boxed_off=$((boxed_off + 1)) ;;
  esac
done
[ "$bad" = 0 ] || { echo "$bad of $CHECK pairs differ" >&2; exit 1; }
echo "all $CHECK pairs: vegdb = pgRouting over the whole graph (within 1 m); the box variant found no or a longer route for $boxed_off" >&2
[ "${AGREE_ONLY:-0}" = 1 ] && exit 0

pgbench_() { # sql -> "transactions/s latency_ms"
  as_pg "$PGBIN/pgbench" -h 127.0.0.1 -p "$PGPORT" -U postgres -n -M prepared -f "$W/$1.sql" \
    -c 1 -j 1 -T "$SECS" postgres 2>&1 |
    awk '/^latency average/ { l = $4 } /^tps = / { t = $3 } END { print t, l }'
}
vegdb_() { # -> "req/s p50 p99 non-2xx"
  "$BIN/vegdb-load" --base "http://127.0.0.1:$VPORT/nvdb/api/v2" --paths "$W/vegdb.txt" \
    --connections 1 --seconds "$SECS" --warmup 2 |
    sed -n 's/.*: \([0-9]*\) requests\/s, latency ms p50 \([0-9.]*\) p90 [0-9.]* p99 \([0-9.]*\).*; \([0-9]*\) non-2xx.*/\1 \2 \3 \4/p'
}
read -r vr vp50 vp99 verr <<<"$(vegdb_)"
read -r bt bl <<<"$(pgbench_ bbox)"
read -r wt wl <<<"$(pgbench_ whole)"
printf '%-22s %12s %14s\n' peer "routes/s" "mean ms"
printf '%-22s %12s %14s   (p50 %s ms, p99 %s ms, %s non-2xx)\n' "vegdb /vegnett/rute" "$vr" "-" "$vp50" "$vp99" "$verr"
printf '%-22s %12s %14s\n' "pgr_dijkstra bbox" "$bt" "$bl"
printf '%-22s %12s %14s\n' "pgr_dijkstra whole" "$wt" "$wl"
python3 - "$vr" "$vp50" "$bl" "$wl" <<'PY'
import sys
rps, p50, b, w = (float(x) for x in sys.argv[1:])
mean = 1000.0 / rps
print(f"vegdb mean {mean:.3f} ms (1 connection): pgRouting takes {b / mean:.0f}x (bbox), {w / mean:.0f}x (whole graph) as long; by vegdb's p50 {b / p50:.0f}x, {w / p50:.0f}x")
PY
