#!/usr/bin/env bash
# Dynamic segmentation: vegdb's /vegnett/segmentert against the same overlay written in SQL for
# PostGIS, on the network of one fylke and the objects of some types placed on it, in one
# sitting, with the piece counts, total lengths and covered pieces per type of both compared
# and asserted equal.
#
#   tools/bench_overlay_pg.sh [DATA_DIR] [FYLKE] [ROUNDS]
#
# TYPES (default "105 540 241": Fartsgrense, ÅDT, Vegdekke). DATA_DIR default snapshots/demo,
# FYLKE default 50 (Trøndelag; the national preset is `vegdb generate --scale national`).
#
# PostGIS: tools/overlay_copy.py (pyarrow, its own reading of the Parquet files) loads
#   net (row_id, link_id, from_pos, to_pos, length_m, geom)   the fylke's network rows
#   obj (type_id, id, versjon, egenskaper jsonb)               the types' objects placed there
#   plc (type_id, id, link_id, from_pos, to_pos, feltspesifikk) their placements
# with btree indexes on plc (link_id, from_pos) and obj (type_id, id). The overlay in SQL, as a
# user of PostGIS writes it (the rules of /vegnett/segmentert: stretch placements cut and
# cover, a placement covers a piece it spans, an object listed once, ascending id):
#   iv:      the stretch placements overlapping each row (join on link_id and the intervals)
#   cuts:    per row its ends and every placement end strictly inside it (UNION: distinct)
#   pieces:  consecutive cuts (lead() over the row's cuts); a row of no length is one piece
#   covers:  pieces joined to the placements spanning them, one row per (piece, object)
# then two answers:
#   count: the number of pieces, their total length ((b - a) / (to - from) × length_m, as
#          vegdb's) and the pieces each type covers (the overlay alone), timed against
#          vegdb's /vegnett/segmentert/statistikk (the same figures, one request, curl),
#          and against the same overlay in pandas (tools/overlay_pandas.py, in memory);
#   json:  the whole result as vegdb gives it: one JSON document per piece with link,
#          positions, length, geometry (ST_LineSubstring of the row, as WKT) and per type the
#          covering objects (id, versjon, feltspesifikk, the stored values as egenskaper,
#          json_agg ascending id), written by COPY TO STDOUT to a file.
# vegdb: every page of /vegnett/segmentert?typer=...&fylke=FYLKE&antall=10000 in turn over one
# connection (tools/overlay_fetch.py: the sum of the requests' times, and the JSON bytes).
# Agreement: piece counts, covered pieces per type and total lengths (within 0.5 mm per piece,
# vegdb rounds each to mm) of vegdb and of both SQL answers must be equal; the script fails
# otherwise. Timing: ROUNDS (default 3) rounds, vegdb then count then json, each wall time on
# loopback to a file; the medians and the ratios are printed.
#
# PostgreSQL: the private cluster of tools/pg_cluster.sh (PEERDATA, PGPORT; needs
# `postgresql-15-postgis-3`). pyarrow in $VEGDB_BENCH_VENV (installed when missing). STOP=1
# stops the cluster at the end; NO_BUILD=1 uses the release binary as it is; BIN_DIR names
# another directory of binaries.
# POLL_IDLE=1 (the default) holds idle CPUs polling for the run: see tools/poll_idle.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
. tools/poll_idle.sh
DATA=${1:-snapshots/demo}
FYLKE=${2:-50}
ROUNDS=${3:-3}
TYPES=${TYPES:-105 540 241}
VPORT=${VPORT:-18193}
export PEERDATA=${PEERDATA:-/tmp/vegdb-pg}
export PGPORT=${PGPORT:-54339}
PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
VENV=${VEGDB_BENCH_VENV:-$HOME/.cache/vegdb-bench/venv}
[ -f "$DATA/CURRENT" ] || { echo "no generation in $DATA" >&2; exit 2; }
[ -f /usr/share/postgresql/15/extension/postgis.control ] ||
  { echo "PostGIS for PostgreSQL 15 is missing: apt-get install -y postgresql-15-postgis-3" >&2; exit 2; }

[ "${NO_BUILD:-0}" = 1 ] || cargo build --release --bin vegdb --locked -q
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

if ! "$VENV/bin/python" -c 'import pyarrow, pandas' 2>/dev/null; then
  echo "installing pyarrow and pandas into $VENV ..." >&2
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q pyarrow pandas
fi
[ -f "$PEERDATA/pg/postmaster.pid" ] || tools/pg_cluster.sh start

gen=$(cat "$DATA/CURRENT")
source_tag="$(cd "$DATA" && pwd) generation $gen fylke $FYLKE types $TYPES"
loaded=$(psql_ -t -A -c "SELECT obj_description('plc'::regclass)" 2>/dev/null || true)
if [ "$loaded" != "$source_tag" ]; then
  echo "loading fylke $FYLKE's network and the objects of types $TYPES on it ($source_tag) ..." >&2
  t0=$(date +%s%N)
  psql_ -c "CREATE EXTENSION IF NOT EXISTS postgis; CREATE EXTENSION IF NOT EXISTS pg_prewarm;
            DROP TABLE IF EXISTS net; DROP TABLE IF EXISTS obj; DROP TABLE IF EXISTS plc;
            CREATE TABLE net (row_id bigint PRIMARY KEY, link_id bigint, from_pos float8, to_pos float8, length_m float8, geom geometry);
            CREATE TABLE obj (type_id int, id bigint, versjon int, egenskaper jsonb);
            CREATE TABLE plc (type_id int, id bigint, link_id bigint, from_pos float8, to_pos float8, feltspesifikk bool)"
  # shellcheck disable=SC2086
  "$VENV/bin/python" tools/overlay_copy.py --network "$DATA" "$FYLKE" | psql_ -c "COPY net FROM STDIN"
  # shellcheck disable=SC2086
  "$VENV/bin/python" tools/overlay_copy.py --objects "$DATA" "$FYLKE" $TYPES | psql_ -c "COPY obj FROM STDIN"
  # shellcheck disable=SC2086
  "$VENV/bin/python" tools/overlay_copy.py --placements "$DATA" "$FYLKE" $TYPES | psql_ -c "COPY plc FROM STDIN"
  psql_ -c "CREATE INDEX ON net (link_id, from_pos); CREATE UNIQUE INDEX ON obj (type_id, id);
            CREATE INDEX ON plc (link_id, from_pos); ANALYZE net; ANALYZE obj; ANALYZE plc"
  psql_ -c "COMMENT ON TABLE plc IS '$source_tag'"
  echo "loaded in $(( ($(date +%s%N) - t0) / 1000000 )) ms" >&2
fi
psql_ -t -A -c "SELECT pg_prewarm(c::regclass) FROM unnest(array['net', 'obj', 'plc']) c" >/dev/null
psql_ -t -A -c "SELECT 'net rows: ' || (SELECT count(*) FROM net) || ', objects: ' || (SELECT count(*) FROM obj) || ', placements: ' || (SELECT count(*) FROM plc)" >&2

# the overlay, shared by both answers
OVERLAY="WITH iv AS MATERIALIZED (
    SELECT n.row_id, p.type_id, p.id, p.from_pos, p.to_pos, p.feltspesifikk
    FROM net n JOIN plc p ON p.link_id = n.link_id AND p.from_pos < p.to_pos
     AND p.from_pos < n.to_pos AND p.to_pos > n.from_pos),
  cuts AS (
    SELECT row_id, from_pos AS x FROM net
    UNION SELECT row_id, to_pos FROM net
    UNION SELECT iv.row_id, v.x FROM iv JOIN net n USING (row_id),
      LATERAL (VALUES (iv.from_pos), (iv.to_pos)) v(x) WHERE v.x > n.from_pos AND v.x < n.to_pos),
  pieces AS MATERIALIZED (
    SELECT row_id, a, b FROM (SELECT row_id, x AS a, lead(x) OVER (PARTITION BY row_id ORDER BY x) AS b FROM cuts) s
    WHERE b IS NOT NULL
    UNION ALL SELECT row_id, from_pos, to_pos FROM net WHERE from_pos = to_pos),
  covers AS MATERIALIZED (
    SELECT pc.row_id, pc.a, iv.type_id, iv.id, bool_or(iv.feltspesifikk) AS felt
    FROM pieces pc JOIN iv ON iv.row_id = pc.row_id AND iv.from_pos <= pc.a AND iv.to_pos >= pc.b
    GROUP BY 1, 2, 3, 4)"
LENGTH="CASE WHEN n.to_pos > n.from_pos THEN (pc.b - pc.a) / (n.to_pos - n.from_pos) * n.length_m ELSE 0 END"
covered_cols=""
covered_aggs=""
json_cols=""
json_joins=""
for t in $TYPES; do
  covered_cols="$covered_cols, count(*) FILTER (WHERE k.c$t)"
  covered_aggs="$covered_aggs, bool_or(type_id = $t) AS c$t"
  json_cols="$json_cols, 'vegobjekttype_$t', t$t.objs"
  json_joins="$json_joins LEFT JOIN per_type t$t ON t$t.row_id = pc.row_id AND t$t.a = pc.a AND t$t.type_id = $t"
done
cat >"$W/count.sql" <<SQL
$OVERLAY
SELECT count(*), round(sum($LENGTH)::numeric, 3)$covered_cols
FROM pieces pc JOIN net n USING (row_id)
LEFT JOIN (SELECT row_id, a$covered_aggs FROM covers GROUP BY 1, 2) k ON k.row_id = pc.row_id AND k.a = pc.a;
SQL
cat >"$W/json.sql" <<SQL
COPY ($OVERLAY,
  per_type AS (
    SELECT c.row_id, c.a, c.type_id,
      json_agg(json_build_object('id', o.id, 'versjon', o.versjon, 'feltspesifikk', c.felt, 'egenskaper', o.egenskaper) ORDER BY o.id) AS objs
    FROM covers c JOIN obj o ON o.type_id = c.type_id AND o.id = c.id
    GROUP BY 1, 2, 3)
SELECT json_build_object('veglenkesekvensid', n.link_id, 'fra_posisjon', pc.a, 'til_posisjon', pc.b,
  'lengde', round(($LENGTH)::numeric, 3),
  'geometri', json_build_object('wkt', ST_AsText(CASE WHEN n.to_pos > n.from_pos
      THEN ST_LineSubstring(n.geom, (pc.a - n.from_pos) / (n.to_pos - n.from_pos), (pc.b - n.from_pos) / (n.to_pos - n.from_pos))
      ELSE ST_StartPoint(n.geom) END), 'srid', 25833),
  'vegobjekter', json_build_object(${json_cols#, }))
FROM pieces pc JOIN net n USING (row_id)$json_joins
ORDER BY n.link_id, pc.a) TO STDOUT;
SQL
chmod 644 "$W"/*.sql

"$BIN/vegdb" --log warn serve --data "$DATA" --read-only --listen "127.0.0.1:$VPORT" >"$W/vegdb.log" 2>&1 &
VPID=$!
echo "waiting for vegdb to load $DATA ..." >&2
until curl -sf "http://127.0.0.1:$VPORT/nvdb/api/v2/status" >/dev/null; do
  kill -0 "$VPID" 2>/dev/null || { cat "$W/vegdb.log" >&2; exit 1; }
  sleep 1
done
QUERY="typer=$(tr ' ' ',' <<<"$TYPES")&fylke=$FYLKE"

ms_since() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
vegdb_() { # -> "pieces length covered... bytes seconds pages"
  # shellcheck disable=SC2086
  python3 tools/overlay_fetch.py "http://127.0.0.1:$VPORT/nvdb/api/v2" "$QUERY" $TYPES
}
stats_() { # -> "pieces length covered... ms": /vegnett/segmentert/statistikk, one request
  curl -sf -o "$W/st.json" -w '%{time_total}' \
    "http://127.0.0.1:$VPORT/nvdb/api/v2/vegnett/segmentert/statistikk?$QUERY" >"$W/st.time"
  python3 -c 'import json, sys; d = json.load(open(sys.argv[1]))
print(d["antall"], d["strekningslengde"], *[t["antall"] for t in d["vegobjekttyper"]],
      round(float(open(sys.argv[2]).read()) * 1000, 2))' "$W/st.json" "$W/st.time"
}
count_() { psql_ -t -A -F ' ' -f "$W/count.sql"; }
json_() { psql_ -t -A -f "$W/json.sql" >"$W/pg.json"; }

printf '%5s | %10s %8s %9s %6s | %8s | %10s | %10s %8s\n' round "vegdb ms" pages MB "MB/s" "stats ms" "count ms" "json ms" MB
declare -a tv ts tc tj
for r in $(seq 1 "$ROUNDS"); do
  read -r vn vl vrest <<<"$(vegdb_)"
  # vrest: covered per type, then bytes, seconds, pages
  read -ra vr <<<"$vrest"
  nt=$(wc -w <<<"$TYPES")
  vcov="${vr[*]:0:$nt}"
  vbytes=${vr[$nt]}
  vsecs=${vr[$((nt + 1))]}
  vpages=${vr[$((nt + 2))]}
  read -ra st <<<"$(stats_)"
  scov="${st[*]:2:$nt}"
  sms=${st[$((nt + 2))]}
  t0=$(date +%s%N); read -r cn cl crest <<<"$(count_)"; cms=$(ms_since "$t0")
  t0=$(date +%s%N); json_; jms=$(ms_since "$t0")
  jn=$(wc -l <"$W/pg.json")
  jbytes=$(stat -c %s "$W/pg.json")
  if [ "$r" = 1 ]; then
    jl=$(python3 -c 'import json, sys; print("%.3f" % sum(json.loads(l)["lengde"] for l in open(sys.argv[1])))' "$W/pg.json")
    echo "agreement: vegdb $vn pieces, $vl m, covered per type ($TYPES) $vcov; PostGIS count $cn pieces, $cl m, covered $crest; PostGIS json $jn pieces, $jl m" >&2
    echo "vegdb statistikk: ${st[0]} pieces, ${st[1]} m (whole meters), covered $scov" >&2
    python3 - "$vn" "$vl" "$cn" "$cl" "$jn" "$jl" "$vcov" "$crest" "${st[0]}" "${st[1]}" "$scov" <<'PY' || exit 1
import sys
vn, vl, cn, cl, jn, jl = (float(x) for x in sys.argv[1:7])
vcov, ccov = sys.argv[7].split(), sys.argv[8].split()
sn, sl, scov = float(sys.argv[9]), float(sys.argv[10]), sys.argv[11].split()
bad = []
if not (vn == cn == jn == sn):
    bad.append(f"piece counts differ: vegdb {vn:.0f}, statistikk {sn:.0f}, count {cn:.0f}, json {jn:.0f}")
tol = 0.0005 * vn + 0.01
if abs(vl - cl) > tol or abs(vl - jl) > tol or abs(sl - cl) > 0.5 + tol:
    bad.append(f"total lengths differ: vegdb {vl}, statistikk {sl}, count {cl}, json {jl} (tolerance {tol:.3f} m)")
if vcov != ccov or scov != ccov:
    bad.append(f"covered pieces per type differ: vegdb {vcov}, statistikk {scov}, PostGIS {ccov}")
if bad:
    sys.exit("\n".join(bad))
print("equal piece counts, covered pieces per type and total lengths", file=sys.stderr)
PY
  fi
  vms=$(python3 -c "print(round(float('$vsecs') * 1000))")
  tv+=("$vms"); ts+=("$sms"); tc+=("$cms"); tj+=("$jms")
  printf '%5s | %10s %8s %9.1f %6.0f | %8s | %10s | %10s %8.1f\n' "$r" "$vms" "$vpages" \
    "$(python3 -c "print($vbytes / 1e6)")" "$(python3 -c "print($vbytes / 1e6 / max(float('$vsecs'), 1e-9))")" \
    "$sms" "$cms" "$jms" "$(python3 -c "print($jbytes / 1e6)")"
done
python3 - "${tv[*]}" "${tc[*]}" "${tj[*]}" "$vn" "${ts[*]}" <<'PY'
import statistics, sys
v, c, j, s = (statistics.median(float(x) for x in a.split()) for a in sys.argv[1:4] + sys.argv[5:6])
print(f"medians: vegdb {v:.0f} ms for the whole result ({sys.argv[4]} pieces); PostGIS count {c:.0f} ms, json {j:.0f} ms: "
      f"PostGIS takes {c / v:.1f}x (count), {j / v:.1f}x (json) as long")
print(f"the figures alone: vegdb statistikk {s:.1f} ms, PostGIS count {c:.0f} ms: PostGIS takes {c / s:.1f}x as long")
PY
# the same figures in pandas (tools/overlay_pandas.py: the tables in memory, the overlay timed
# ROUNDS times), asserted equal to vegdb's statistikk
# shellcheck disable=SC2086
read -ra pd_ <<<"$("$VENV/bin/python" tools/overlay_pandas.py "$DATA" "$FYLKE" "$ROUNDS" $TYPES)"
python3 - "${pd_[*]}" "${st[0]} ${st[1]} $scov" "$nt" "${ts[*]}" <<'PY'
import statistics, sys
p, v, nt = sys.argv[1].split(), sys.argv[2].split(), int(sys.argv[3])
if int(p[0]) != int(v[0]) or abs(float(p[1]) - float(v[1])) > 0.5 + 0.0005 * int(v[0]) or p[2:2 + nt] != v[2:2 + nt]:
    sys.exit(f"pandas and vegdb differ: pandas {p[:2 + nt]}, vegdb statistikk {v}")
ms = statistics.median(float(x) for x in p[2 + nt:])
s = statistics.median(float(x) for x in sys.argv[4].split())
print(f"pandas (equal figures): the overlay {ms:.0f} ms (median of {len(p) - 2 - nt}), {ms / s:.1f}x vegdb statistikk")
PY
