#!/usr/bin/env bash
# Instructions per request over HTTP, vegdb against vegdb-bare, counted by valgrind's
# callgrind — a figure that does not move with the machine's load (wall-clock benches do).
#
#   tools/callgrind_wire.sh [DATA_DIR] [REQUESTS] [KIND]
#
# DATA_DIR: a generation directory (default snapshots/demo); REQUESTS per server (default
# 20000); KIND: posisjon (default), veg or statistikk. Both servers run under callgrind with
# collection off during start-up and loading; instrumentation is switched on for exactly REQUESTS
# requests sent by vegdb-load over one keep-alive connection, then dumped. Prints instructions
# per request for each and the top functions (inclusive) of vegdb. NO_BUILD=1 uses the release
# binaries as they are. Needs valgrind (Debian `valgrind`). Loopback only.
# OPS=compare also runs vegdb with every operations layer off (`vegdb-off`), and the
# first run with everything on as shipped: `--log info`, so the access log writes its lines
# (to a file). LOG sets the first run's log filter otherwise (default warn).
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${1:-snapshots/demo}
N=${2:-20000}
KIND=${3:-posisjon}
VPORT=${VPORT:-18290}
BPORT=${BPORT:-18291}
command -v valgrind >/dev/null || { echo "valgrind is missing (apt-get install valgrind)" >&2; exit 2; }
[ "${NO_BUILD:-0}" = 1 ] || cargo build --release --bins --locked -q
BIN=${CARGO_TARGET_DIR:-target}/release
W=$(mktemp -d)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$W"; }
trap cleanup EXIT

case "$KIND" in
  posisjon) "$BIN/vegdb" --log warn snapshot queries --data "$DATA" --count 2000 >"$W/paths.txt" ;;
  veg) "$BIN/vegdb" --log warn snapshot queries --data "$DATA" --kind veg-batch --count 20 |
      sed 's|^/veg/batch?vegreferanser=||' | tr ',' '\n' | sed 's|^|/veg?vegreferanse=|' >"$W/paths.txt" ;;
  statistikk) for k in 301 1103 4601 5001; do echo "/vegobjekter/105/statistikk?kommune=$k"; done >"$W/paths.txt" ;;
  *) echo "unknown kind $KIND" >&2; exit 2 ;;
esac

# run NAME PORT ARGS...: start under callgrind, wait for the port, count N requests, dump.
run() {
  local name=$1 port=$2; shift 2
  valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$W/$name.out" \
    "$@" >"$W/$name.log" 2>&1 &
  local pid=$!
  PIDS+=("$pid")
  until curl -sf -o /dev/null "http://127.0.0.1:$port/nvdb/api/v2/status"; do
    kill -0 "$pid" 2>/dev/null || { cat "$W/$name.log" >&2; exit 1; }
    sleep 1
  done
  # warm the connection path once, then count exactly N requests
  "$BIN/vegdb-load" --base "http://127.0.0.1:$port/nvdb/api/v2" --paths "$W/paths.txt" \
    --connections 1 --seconds 600 --warmup 0 --max-requests 200 >/dev/null
  callgrind_control -i on "$pid" >/dev/null
  "$BIN/vegdb-load" --base "http://127.0.0.1:$port/nvdb/api/v2" --paths "$W/paths.txt" \
    --connections 1 --seconds 600 --warmup 0 --max-requests "$N" >"$W/$name.load"
  callgrind_control -i off "$pid" >/dev/null
  kill "$pid"; wait "$pid" 2>/dev/null || true
  local ir
  ir=$(callgrind_annotate "$W/$name.out" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",","",$1); print $1}' || true)
  echo "$name: $((ir / N)) instructions per request ($N requests)"
}

LOG=${LOG:-warn}
[ "${OPS:-}" = compare ] && LOG=info
run vegdb "$VPORT" "$BIN/vegdb" --log "$LOG" serve --data "$DATA" --read-only --workers 1 \
  --listen "127.0.0.1:$VPORT"
if [ "${OPS:-}" = compare ]; then
  echo "vegdb: access-log lines written: $(grep -c 'vegdb::access' "$W/vegdb.log" || true)"
  run vegdb-off "$VPORT" "$BIN/vegdb" --log warn serve --data "$DATA" --read-only --workers 1 \
    --listen "127.0.0.1:$VPORT" --metrics false --access-log false --http-cache false \
    --max-in-flight 0
fi
BYTES=$(curl -s "http://127.0.0.1:$VPORT/nvdb/api/v2$(head -1 "$W/paths.txt")" 2>/dev/null | wc -c || echo 250)
run bare "$BPORT" "$BIN/vegdb-bare" --listen "127.0.0.1:$BPORT" --bytes 250
echo "== vegdb: top functions, inclusive"
callgrind_annotate --inclusive=yes "$W/vegdb.out" 2>/dev/null | sed -n '1,60p' | cut -c1-200
[ -n "${KEEP:-}" ] && mkdir -p "$KEEP" && cp "$W"/*.out "$KEEP"/ || true
