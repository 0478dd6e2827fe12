#!/usr/bin/env bash
# vegdb's hot read paths over HTTP against a bare axum handler (`vegdb-bare`) that
# answers every request with the same number of bytes, measured in one sitting, interleaved.
#
#   tools/bench_wire.sh [DATA_DIR] [SECONDS] [ROUNDS] [KINDS]
#
# DATA_DIR: a generation directory (default /tmp/vn, `vegdb generate --scale national --data
# /tmp/vn`); SECONDS per server per round (default 8); ROUNDS (default 2); KINDS (default
# "posisjon veg statistikk"). For each kind and 1, 2 and 8 connections, after a 2 s warm-up of
# each server, a round runs bare and vegdb in alternating slices of SLICE seconds (default 2,
# so 4 slices each), the order turned every slice (bare-vegdb, vegdb-bare, ...). The machine's
# speed drifts by up to a third over seconds (other guests on the host); slices that follow
# each other share the drift, so the ratio compares the two servers at the same moments
# rather than eight seconds apart. It prints, per round, each server's requests/s over its
# slices, the median of the slices' p50 and the highest slice p99, the server's CPU time per
# request (user + system of the server process over its slices, in µs: the figure that stays
# meaningful on a busy machine), the ratio of requests/s vegdb / bare ("ratio"), the lowest
# ratio of a slice pair ("min"), the ratio of CPU per request vegdb / bare ("cpu x"), and each
# server's thread switches per request ("sw/r", from /proc/PID/task/*/status: what
# `--scheduling` changes). SLICE=SECONDS gives the old one-run-each rounds. The bare body size
# is the mean size of that kind's vegdb answers.
# Server options pass through the environment, e.g. VEGDB_RUNTIME=shared, VEGDB_WORKERS=1 or
# VEGDB_SCHEDULING=normal;
# NO_BUILD=1 uses the release binaries as they are.
# Builds the release binaries first (`cargo build --release --bins`). Loopback only.
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
SLICE=${SLICE:-2}
SLICES=$(( (SECS + SLICE - 1) / SLICE ))
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

slice() { # pid port file connections warmup -> "requests requests/s p50 p99 cpu-ticks switches"
  local before after out sw0 sw1
  before=$(cpu_ticks "$1")
  sw0=$(switches "$1")
  out=$("$BIN/vegdb-load" --base "http://127.0.0.1:$2/nvdb/api/v2" --paths "$3" --connections "$4" \
    --seconds "$SLICE" --warmup "$5" |
    sed -n 's/^\([0-9]*\) requests in .*: \([0-9]*\) requests\/s, latency ms p50 \([0-9.]*\) p90 [0-9.]* p99 \([0-9.]*\).*/\1 \2 \3 \4/p')
  after=$(cpu_ticks "$1")
  sw1=$(switches "$1")
  echo "$out $((after - before)) $((sw1 - sw0))"
}

# One round of a kind at C connections: SLICES slices of each server, alternating.
# Prints "bare-fields | vegdb-fields | min-pair-ratio", fields "r/s p50 p99 cpu-us sw/r".
round() { # file connections
  local i first second
  : >"$W/bare.slices"; : >"$W/vegdb.slices"
  for i in $(seq 1 "$SLICES"); do
    if [ $((i % 2)) = 1 ]; then first=bare second=vegdb; else first=vegdb second=bare; fi
    for who in $first $second; do
      if [ "$who" = bare ]; then slice "$BPID" "$BPORT" "$1" "$2" 0 >>"$W/bare.slices"
      else slice "$VPID" "$VPORT" "$1" "$2" 0 >>"$W/vegdb.slices"; fi
    done
  done
  python3 - "$W/bare.slices" "$W/vegdb.slices" <<'PY'
import statistics, sys
def read(path):
    return [list(map(float, l.split())) for l in open(path) if len(l.split()) == 6]
def fields(rows):
    n = sum(r[0] for r in rows); t = sum(r[0] / r[1] for r in rows if r[1])
    # CPU and switches are over the whole slice (connection set-up included): per request at
    # the slice's own rate, whose requests were counted over its measured seconds
    return (n / t if t else 0.0,
            statistics.median(r[2] for r in rows), max(r[3] for r in rows),
            sum(r[4] for r in rows) * 10000 / n if n else 0.0,
            sum(r[5] for r in rows) / n if n else 0.0)
bare, vegdb = read(sys.argv[1]), read(sys.argv[2])
b, v = fields(bare), fields(vegdb)
pairs = [vr[1] / br[1] for br, vr in zip(bare, vegdb) if br[1]]
print("%d %.3f %.3f %.1f %.2f | %d %.3f %.3f %.1f %.2f | %.2f" % (*b, *v, min(pairs) if pairs else 0))
PY
}

printf '%-11s %5s %5s | %10s %7s %7s %7s %6s | %10s %7s %7s %7s %6s | %6s %5s %6s\n' kind conns round "bare r/s" p50ms p99ms "cpu us" "sw/r" "vegdb r/s" p50ms p99ms "cpu us" "sw/r" ratio min "cpu x"
for kind in $KINDS; do
  file=$W/$kind.txt
  bytes=$(mean_size "$file")
  "$BIN/vegdb-bare" --listen "127.0.0.1:$BPORT" --bytes "$bytes" 2>/dev/null &
  BPID=$!
  until curl -sf "http://127.0.0.1:$BPORT/" >/dev/null; do sleep 0.2; done
  echo "# $kind: $(wc -l <"$file") paths, bare body $bytes bytes" >&2
  for c in 1 2 8; do
    # warm-up of both servers at this connection count, not counted
    slice "$BPID" "$BPORT" "$file" "$c" 2 >/dev/null
    slice "$VPID" "$VPORT" "$file" "$c" 2 >/dev/null
    for r in $(seq 1 "$ROUNDS"); do
      IFS='|' read -r bf vf minr <<<"$(round "$file" "$c")"
      read -r br bp50 bp99 bcpu bsw <<<"$bf"
      read -r vr vp50 vp99 vcpu vsw <<<"$vf"
      ratio=$(awk -v v="$vr" -v b="$br" 'BEGIN { printf "%.2f", (b ? v / b : 0) }')
      cpux=$(awk -v v="$vcpu" -v b="$bcpu" 'BEGIN { printf "%.2f", (b ? v / b : 0) }')
      printf '%-11s %5s %5s | %10s %7s %7s %7s %6s | %10s %7s %7s %7s %6s | %6s %5s %6s\n' "$kind" "$c" "$r" "$br" "$bp50" "$bp99" "$bcpu" "$bsw" "$vr" "$vp50" "$vp99" "$vcpu" "$vsw" "$ratio" "$minr" "$cpux"
    done
  done
  kill "$BPID"; wait "$BPID" 2>/dev/null || true; BPID=
done
