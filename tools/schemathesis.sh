#!/usr/bin/env bash
# Property-based API test: schemathesis (PyPI) generates requests from both OpenAPI documents
# (read /nvdb/api/v2/openapi.json, write /nvdb/apiskriv/rest/v2/openapi.json) and checks every
# answer against them: documented status codes, response schemas, schema-valid requests accepted,
# no 5xx. Starts the given vegdb binary on a free port with a temporary data dir (initialised from
# the demo snapshot) and an admin user for the write API. Fails on any failure.
#
#   tools/schemathesis.sh [VEGDB_BIN] [SCHEMATHESIS]
#   ST_EXAMPLES (default 20) = examples per operation; ST_SEED (default 1) fixes the generation.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN="${1:-${CARGO_TARGET_DIR:-target}/debug/vegdb}"
ST="${2:-schemathesis}"
N="${ST_EXAMPLES:-50}"
SEED="${ST_SEED:-1}"
DATA="$(mktemp -d)"
PID=""
cleanup() {
  if [ -n "$PID" ]; then kill "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; fi
  rm -rf "$DATA"
}
trap cleanup EXIT
TOKEN="$("$BIN" user add schemathesis --roles admin --data "$DATA" | tail -n 1)"
PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
"$BIN" serve --listen "127.0.0.1:$PORT" --data "$DATA" > "$DATA/serve.log" 2>&1 &
PID=$!
BASE="http://127.0.0.1:$PORT"
for _ in $(seq 1 120); do
  if python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)' \
    "$BASE/nvdb/api/v2/status" > /dev/null 2>&1; then break; fi
  if ! kill -0 "$PID" 2>/dev/null; then cat "$DATA/serve.log" >&2; exit 1; fi
  sleep 0.5
done
# schemathesis-{read,write}.toml beside this script hold the per-operation settings and why.
rc=0
echo "-- read API"
"$ST" --config-file tools/schemathesis-read.toml run "$BASE/nvdb/api/v2/openapi.json" --url "$BASE/nvdb/api/v2" \
  -n "$N" --seed "$SEED" --generation-deterministic --phases=examples,fuzzing -w 2 --no-color || rc=1
echo "-- write API"
"$ST" --config-file tools/schemathesis-write.toml run "$BASE/nvdb/apiskriv/rest/v2/openapi.json" --url "$BASE/nvdb/apiskriv/rest/v2" \
  -H "X-Client: schemathesis" -H "Authorization: Bearer $TOKEN" \
  -n "$N" --seed "$SEED" --generation-deterministic --phases=examples,fuzzing -w 2 --no-color || rc=1
if ! kill -0 "$PID" 2>/dev/null; then echo "vegdb exited during the run" >&2; cat "$DATA/serve.log" >&2; rc=1; fi
exit "$rc"
