#!/usr/bin/env bash
# Issue 11: vegdb's hot read paths over HTTP against a bare axum handler (`vegdb-bare`) that
# answers every request with the same number of bytes, measured in one sitting, alternating.
#
#   tools/bench_wire.sh [DATA_DIR] [SECONDS] [ROUNDS] [KINDS]
#
# DATA_DIR: a generation directory (default /tmp/vn, `vegdb generate --scale national --data
# /tmp/vn`); SECONDS per run (default 8, plus 2 s warm-up); ROUNDS of alternation (default 2);
# KINDS (default "posisjon veg statistikk"). For each kind and 1, 2 and 8 connections it runs
# bare then vegdb, ROUNDS times, and prints requests/s, p50 and p99 of each, the server's CPU
# time per request (user + system of the server process over the run, in µs: the figure that
# stays meaningful on a busy machine), the ratio of requests/s vegdb / bare ("ratio") and of
# CPU per request vegdb / bare ("cpu x"), and each server's thread switches per request ("sw/r",
# from /proc/PID/task/*/status: what `--scheduling` changes). The bare body size is the mean
# size of that kind's vegdb answers.
# Server options pass through the environment, e.g. VEGDB_RUNTIME=shared, VEGDB_WORKERS=1 or
# VEGDB_SCHEDULING=normal;
# NO_BUILD=1 uses the release binaries as they are.
# Builds the release binaries first (`cargo build --release --bins`). Loopback only.
# vegdb runs as shipped: `--log info`, so the access log writes a line per request (to a file);
# LOG=warn leaves the access log out. Every operations layer is on unless the environment
# says otherwise (VEGDB_METRICS=false VEGDB_ACCESS_LOG=false VEGDB_HTTP_CACHE=false ...).
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${1:-/tmp/vn}
SECS=${2:-8}
ROUNDS=${3:-2}
KINDS=${4:-posisjon veg statistikk}
VPORT=${VPORT:-18190}
BPORT=${BPORT:-18191}
[ -f "$DATA/CURRENT" ] || { echo "no generation in $DATA (vegdb generate --scale national --data $DATA)" >&2; exit 2; }

[ "${NO_BUILD:-0}" = 1 ] || cargo build --release --bins --locked -q
BIN=${CARGO_TARGET_DIR:-target}/release
W=$(mktemp -d)
VPID= BPID=
cleanup() {
  [ -n "$BPID" ] && kill "$BPID" 2>/dev/null || true
  [ -n "$VPID" ] && kill "$VPID" 2>/dev/null || true
  rm -rf "$W"
}
trap cleanup EXIT

"$BIN/vegdb" --log "${LOG:-info}" serve --data "$DATA" --read-only --listen "127.0.0.1:$VPORT" >"$W/vegdb.log" 2>&1 &
VPID=$!
BASE=http://127.0.0.1:$VPORT/nvdb/api/v2

# Query files: /posisjon points; single /veg road references (from the veg-batch generator);
# statistikk of the common types per municipality.
"$BIN/vegdb" --log warn snapshot queries --data "$DATA" --count 100000 >"$W/posisjon.txt"
"$BIN/vegdb" --log warn snapshot queries --data "$DATA" --kind veg-batch --count 100 |
  sed 's|^/veg/batch?vegreferanser=||' | tr ',' '\n' | sed 's|^|/veg?vegreferanse=|' >"$W/veg.txt"

echo "waiting for vegdb to load $DATA ..." >&2
until curl -sf "$BASE/status" >/dev/null; do
  kill -0 "$VPID" 2>/dev/null || { cat "$W/vegdb.log" >&2; exit 1; }
  sleep 1
done
curl -sf "$BASE/omrader/kommuner" | python3 -c '
import json, sys
kommuner = [k["nummer"] for k in json.load(sys.stdin)]
for t in (95, 105, 581, 241, 540):
    for k in kommuner:
        print(f"/vegobjekter/{t}/statistikk?kommune={k}")
' >"$W/statistikk.txt"

mean_size() { # mean body bytes of the first 200 answers of a query file
  head -200 "$1" | while read -r p; do curl -s "$BASE$p" | wc -c; done |
    awk '{ s += $1; n++ } END { printf "%d", (n ? s / n : 250) }'
}

cpu_ticks() { # user + system CPU of a process so far, in clock ticks (1/100 s)
  awk '{ print $14 + $15 }' "/proc/$1/stat"
}

switches() { # context switches (voluntary + not) of all of a process's threads so far
  cat /proc/"$1"/task/*/status 2>/dev/null | awk '/^(non)?voluntary_ctxt_switches/ { s += $2 } END { print s + 0 }'
}

load() { # pid port file connections -> "req/s p50 p99 server-cpu-us-per-request switches-per-request"
  local before after out sw0 sw1
  before=$(cpu_ticks "$1")
  sw0=$(switches "$1")
  out=$("$BIN/vegdb-load" --base "http://127.0.0.1:$2/nvdb/api/v2" --paths "$3" --connections "$4" \
    --seconds "$SECS" --warmup 2 |
    sed -n 's/.*: \([0-9]*\) requests\/s, latency ms p50 \([0-9.]*\) p90 [0-9.]* p99 \([0-9.]*\).*/\1 \2 \3/p')
  after=$(cpu_ticks "$1")
  sw1=$(switches "$1")
  # requests over the whole run (warm-up included) at the measured rate
  echo "$out $(awk -v r="${out%% *}" -v t=$((after - before)) -v w=$((sw1 - sw0)) -v s="$SECS" 'BEGIN { printf "%.1f %.2f", (r ? t * 10000 / (r * (s + 2)) : 0), (r ? w / (r * (s + 2)) : 0) }')"
}

printf '%-11s %5s %5s | %10s %7s %7s %7s %6s | %10s %7s %7s %7s %6s | %6s %6s\n' kind conns round "bare r/s" p50ms p99ms "cpu us" "sw/r" "vegdb r/s" p50ms p99ms "cpu us" "sw/r" ratio "cpu x"
for kind in $KINDS; do
  file=$W/$kind.txt
  bytes=$(mean_size "$file")
  "$BIN/vegdb-bare" --listen "127.0.0.1:$BPORT" --bytes "$bytes" 2>/dev/null &
  BPID=$!
  until curl -sf "http://127.0.0.1:$BPORT/" >/dev/null; do sleep 0.2; done
  echo "# $kind: $(wc -l <"$file") paths, bare body $bytes bytes" >&2
  for c in 1 2 8; do
    for r in $(seq 1 "$ROUNDS"); do
      read -r br bp50 bp99 bcpu bsw <<<"$(load "$BPID" "$BPORT" "$file" "$c")"
      read -r vr vp50 vp99 vcpu vsw <<<"$(load "$VPID" "$VPORT" "$file" "$c")"
      ratio=$(awk -v v="$vr" -v b="$br" 'BEGIN { printf "%.2f", (b ? v / b : 0) }')
      cpux=$(awk -v v="$vcpu" -v b="$bcpu" 'BEGIN { printf "%.2f", (b ? v / b : 0) }')
      printf '%-11s %5s %5s | %10s %7s %7s %7s %6s | %10s %7s %7s %7s %6s | %6s %6s\n' "$kind" "$c" "$r" "$br" "$bp50" "$bp99" "$bcpu" "$bsw" "$vr" "$vp50" "$vp99" "$vcpu" "$vsw" "$ratio" "$cpux"
    done
  done
  kill "$BPID"; wait "$BPID" 2>/dev/null || true; BPID=
done
