#!/usr/bin/env bash
# Read replica figures on the national dataset, against a local S3-protocol server
# (moto_server, the one the tests use), in one sitting. BENCHMARKS.md "Read replicas" holds
# the results.
#
#   tools/bench_replica.sh [DATA_DIR] [ROUNDS] [SECONDS]
#
# DATA_DIR: a data directory with a generation (default /tmp/vn, `vegdb generate --scale
# national --data /tmp/vn`); it is only read: the script works on a copy made of hard links
# (no bytes copied; generation files are never changed in place). ROUNDS: repetitions of
# each figure, the median is printed (default 3). SECONDS: per throughput run (default 8,
# plus 2 s warm-up).
#
# (a) start: the generation pushed to the S3 server (`vegdb snapshot push`), then
#     - plain download of its files (curl with SigV4, 8 at a time, as the replica downloads;
#       no checks, no fsync),
#     - `vegdb snapshot pull` into an empty directory (download + SHA-256 check),
#     - `vegdb snapshot load` of the local copy (read + index),
#     - process start -> `/ready` 200 of `vegdb serve --read-only --follow s3://…` with an
#       empty cache and with a warm cache (the replica's log gives its own load time).
# (b) catch-up: a writer on a copy of the same data publishing to the store (`--publish-to`)
#     and a replica following it (`--watch-interval 1`); changesets registering 10 and 10,000
#     objects of type 95 on one road link; for each: writer done -> CURRENT moved in the store
#     -> replica serves it, the replica's own catch-up time (`siste_innhenting_ms`: download,
#     successor load, swap) and what it downloaded.
# (c) throughput: two replicas of the store; `vegdb-load` with 8 connections against one
#     replica, and against both (`--also`), alternating, /posisjon points from
#     `vegdb snapshot queries`.
# Each figure line carries the load average at the time (the machine may be shared).
# PARTS="a b c" (default) picks the parts. NO_BUILD=1 uses the release binaries as they are (BIN=DIR: binaries of DIR instead). VEGDB_S3_SERVER: moto_server's path
# (default: moto_server on PATH). Loopback only; everything is removed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
SRC=${1:-/tmp/vn}
ROUNDS=${2:-3}
SECS=${3:-8}
PORT0=${PORT0:-18290}
PARTS=${PARTS:-a b c}
part() { case " $PARTS " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
MOTO=${VEGDB_S3_SERVER:-$(command -v moto_server || true)}
# the Python beside moto_server has boto3 (a dependency of moto): signed GETs for the looks
# at CURRENT (moto refuses anonymous ones)
PY=$(dirname "$MOTO")/python3
[ -f "$SRC/CURRENT" ] || { echo "no generation in $SRC" >&2; exit 2; }
[ -x "$MOTO" ] || { echo "no moto_server (set VEGDB_S3_SERVER)" >&2; exit 2; }

[ "${NO_BUILD:-0}" = 1 ] || cargo build --release --bins --locked -q
BIN=$(realpath "${BIN:-${CARGO_TARGET_DIR:-target}/release}")
W=$(mktemp -d /tmp/bench_replica.XXXXXX)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$W"
}
trap cleanup EXIT

now_ms() { echo $(($(date +%s%N) / 1000000)); }
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }
median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
stop() { kill "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; }

# --- the S3 server and the pushed generation -------------------------------------------
S3PORT=$PORT0
"$MOTO" -H 127.0.0.1 -p "$S3PORT" >"$W/moto.log" 2>&1 &
PIDS+=($!)
ENDPOINT=http://127.0.0.1:$S3PORT
BUCKET=vegdb-bench
until curl -s -o /dev/null "$ENDPOINT"; do sleep 0.2; done
curl -sf -X PUT "$ENDPOINT/$BUCKET" >/dev/null
export AWS_ENDPOINT_URL=$ENDPOINT AWS_ALLOW_HTTP=true AWS_REGION=us-east-1 \
  AWS_ACCESS_KEY_ID=bench AWS_SECRET_ACCESS_KEY=bench-secret
STORE=s3://$BUCKET/vn

link_copy() { # src dst: a data directory of hard links to src's generations
  mkdir -p "$2"
  cp -al "$1"/gen-* "$2"/
  cp "$1/CURRENT" "$2/CURRENT"
}
link_copy "$SRC" "$W/vn"
GEN=$(cat "$W/vn/CURRENT")
GENDIR=$(printf 'gen-%06d' "$GEN")
BYTES=$(du -sbL "$W/vn/$GENDIR" | cut -f1)
echo "# $(date -u +%FT%TZ) $(nproc) cores; generation $GEN of $SRC, $BYTES bytes; load $(loadavg)"
t=$(now_ms)
"$BIN/vegdb" --log warn snapshot push --data "$W/vn" --to "$STORE" >/dev/null
echo "push to the S3 server: $(($(now_ms) - t)) ms (load $(loadavg))"

# --- (a) start ---------------------------------------------------------------------------
"$PY" - "$W/vn/$GENDIR/MANIFEST.json" "$BUCKET/vn/$GENDIR" >"$W/files.txt" <<'EOF'
import json, sys
manifest, prefix = sys.argv[1], sys.argv[2]
for f in json.load(open(manifest))["files"]:
    print(f["path"], f"{prefix}/{f['path']}")
EOF
RPORT1=$((PORT0 + 1))
RPORT2=$((PORT0 + 2))
WPORT=$((PORT0 + 3))
start_replica() { # name cache port [flags…]: starts it, sets RPID
  local name=$1 cache=$2 port=$3
  shift 3
  mkdir -p "$W/data-$name"
  "$BIN/vegdb" --log info,vegdb::access=off serve --read-only --follow "$STORE" --cache "$cache" \
    --data "$W/data-$name" --listen "127.0.0.1:$port" "$@" >"$W/$name.log" 2>&1 &
  RPID=$!
  PIDS+=($RPID)
}
wait_ready() { # pid port
  until curl -sf -o /dev/null "http://127.0.0.1:$2/ready"; do
    kill -0 "$1" 2>/dev/null || { cat "$W"/*.log >&2; exit 1; }
    sleep 0.05
  done
}
replica_start() { # name cache -> ms from process start to /ready
  local t
  t=$(now_ms)
  start_replica "$1" "$2" "$RPORT1"
  wait_ready "$RPID" "$RPORT1"
  echo $(($(now_ms) - t))
  stop "$RPID"
}
own_load() { # log -> the replica's own figures of its start
  sed 's/\x1b\[[0-9;]*m//g' "$1" | grep -o 'read_ms=[0-9]* index_ms=[0-9]* total_ms=[0-9]*' | tail -1
}
if part a; then
  echo "# (a) $(grep -c '"path"' "$W/vn/$GENDIR/MANIFEST.json") files; times in ms, median of $ROUNDS rounds, each round: download, pull, load, replica start with an empty then a warm cache"
  for r in $(seq "$ROUNDS"); do
    rm -rf "$W/dl"
    t=$(now_ms)
    # signed GETs (moto refuses anonymous ones), 8 at a time as a replica downloads
    xargs -P 8 -n 2 sh -c 'curl -sf --aws-sigv4 aws:amz:us-east-1:s3 --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" \
      --create-dirs -o "$0/$1" "$AWS_ENDPOINT_URL/$2"' "$W/dl" <"$W/files.txt"
    d=$(($(now_ms) - t))
    got=$(du -sb "$W/dl" | cut -f1)
    echo "  plain download (curl, 8 at a time): $d ms, $got bytes (load $(loadavg))" >&2
    echo "$d" >>"$W/a_download"
    rm -rf "$W/dl"
    rm -rf "$W/pulled"
    t=$(now_ms)
    "$BIN/vegdb" --log warn snapshot pull --data "$W/pulled" --from "$STORE" >/dev/null
    d=$(($(now_ms) - t))
    echo "  vegdb snapshot pull: $d ms (load $(loadavg))" >&2
    echo "$d" >>"$W/a_pull"
    rm -rf "$W/pulled"
    t=$(now_ms)
    line=$("$BIN/vegdb" --log warn snapshot load --data "$W/vn" 2>&1 | tail -1)
    d=$(($(now_ms) - t))
    echo "  vegdb snapshot load: $d ms wall; $line (load $(loadavg))" >&2
    echo "$d" >>"$W/a_load"
    rm -rf "$W/cache1"
    d=$(replica_start cold "$W/cache1")
    echo "  replica start, empty cache: $d ms to /ready; $(own_load "$W/cold.log") (load $(loadavg))" >&2
    echo "$d" >>"$W/a_cold"
    d=$(replica_start warm "$W/cache1")
    echo "  replica start, warm cache: $d ms to /ready; $(own_load "$W/warm.log") (load $(loadavg))" >&2
    echo "$d" >>"$W/a_warm"
  done
  dl=$(median <"$W/a_download")
  ld=$(median <"$W/a_load")
  echo "plain download $dl ms, vegdb pull $(median <"$W/a_pull") ms, snapshot load $ld ms, load + download $((dl + ld)) ms"
  echo "replica start to /ready: empty cache $(median <"$W/a_cold") ms, warm cache $(median <"$W/a_warm") ms"
fi

# --- (b) catch-up ------------------------------------------------------------------------
if part b; then
link_copy "$SRC" "$W/writer"
TOKEN=$("$BIN/vegdb" --log warn user add --data "$W/writer" --roles skriv bench | tail -1)
"$BIN/vegdb" --log warn serve --data "$W/writer" --publish-to "$STORE" --listen "127.0.0.1:$WPORT" \
  >"$W/writer.log" 2>&1 &
WPID=$!
PIDS+=($WPID)
start_replica r1 "$W/cache1" "$RPORT1" --watch-interval 1
R1=$RPID
wait_ready "$WPID" "$WPORT"
wait_ready "$R1" "$RPORT1"
echo "# (b) writer and replica on generation $GEN of $SRC, --watch-interval 1; load $(loadavg)"
"$PY" - "http://127.0.0.1:$WPORT" "http://127.0.0.1:$RPORT1" "$BUCKET" "$TOKEN" "$ROUNDS" <<'EOF'
import json, statistics, sys, time, urllib.request
import boto3

writer, replica, bucket, token, rounds = sys.argv[1:6]
s3 = boto3.client("s3")

def store_current():
    return int(s3.get_object(Bucket=bucket, Key="vn/CURRENT")["Body"].read().decode().strip())
READ, WRITE = "/nvdb/api/v2", "/nvdb/apiskriv/rest/v2"

def call(method, url, body=None, auth=False):
    req = urllib.request.Request(url, method=method, data=None if body is None else json.dumps(body).encode())
    req.add_header("X-Client", "bench-replica")
    req.add_header("Accept", "application/json")
    if body is not None:
        req.add_header("Content-Type", "application/json")
    if auth:
        req.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(req, timeout=600) as r:
        return r.status, dict(r.headers), r.read()

def get(url):
    return json.loads(call("GET", url)[2])

def loadavg():
    return " ".join(open("/proc/loadavg").read().split()[:3])

o = get(f"{writer}{READ}/vegobjekter/95?antall=1&inkluder=lokasjon")["objekter"][0]
placed = o["lokasjon"]["stedfestinger"][0]
link = placed.get("veglenkeid", placed.get("veglenkesekvensid"))

def changeset(n):
    objects = [{"typeId": 95, "tempId": f"n{i}", "egenskaper": [{"typeId": 1876, "enum": [2868]}],
                "lokasjon": {"punkt": [{"lenkeId": link, "posisjon": (i + 0.5) / (n + 1)}]}}
               for i in range(n)]
    return {"effektDato": "2026-11-01", "datakatalogversjon": "2.38",
            "registrer": {"vegObjekter": objects}}

results = {}
for r in range(int(rounds)):
    for n in (10, 10000):
        before = get(f"{replica}{READ}/status")["replika"]
        t0 = time.time()
        _, _, body = call("POST", f"{writer}{WRITE}/endringssett", changeset(n), auth=True)
        cs = json.loads(body)[0]["src"].rsplit("/", 1)[1]
        call("POST", f"{writer}{WRITE}/endringssett/{cs}/start", auth=True)
        while True:
            st = json.loads(call("GET", f"{writer}{WRITE}/endringssett/{cs}/status", auth=True)[2])
            if st["fremdrift"] != "BEHANDLES":
                break
            time.sleep(0.02)
        assert st["fremdrift"] == "UTFØRT_OG_ETTERBEHANDLET", st
        t_done = time.time()
        gen = get(f"{writer}{READ}/status")["datagrunnlag"]["generasjon"]["id"]
        while store_current() < gen:
            time.sleep(0.02)
        t_pub = time.time()
        while True:
            st = get(f"{replica}{READ}/status")
            if st["datagrunnlag"]["generasjon"]["id"] >= gen:
                break
            time.sleep(0.02)
        t_served = time.time()
        rep = st["replika"]
        own = rep["siste_innhenting_ms"]
        files = rep["nedlastinger"] - before["nedlastinger"]
        nbytes = rep["nedlastet_bytes"] - before["nedlastet_bytes"]
        print(f"  {n:>5} objects: writer {1000 * (t_done - t0):.0f} ms, published {1000 * (t_pub - t_done):.0f} ms later, "
              f"served by the replica {1000 * (t_served - t_pub):.0f} ms after CURRENT moved; replica catch-up "
              f"{own} ms; {files} files, {nbytes} bytes downloaded (load {loadavg()})", file=sys.stderr, flush=True)
        results.setdefault(n, []).append((own, 1000 * (t_served - t_pub), files, nbytes))
for n, rs in results.items():
    print(f"catch-up of {n} objects: replica's own {statistics.median(x[0] for x in rs):.0f} ms, "
          f"CURRENT moved -> served {statistics.median(x[1] for x in rs):.0f} ms (poll 1 s), "
          f"{statistics.median(x[2] for x in rs):.0f} files / {statistics.median(x[3] for x in rs):.0f} bytes downloaded")
EOF
stop "$WPID"
fi

# --- (c) throughput ----------------------------------------------------------------------
if part c; then
[ -n "${R1:-}" ] || { start_replica r1 "$W/cache1" "$RPORT1"; R1=$RPID; }
wait_ready "$R1" "$RPORT1"
mkdir -p "$W/cache2"
cp -al "$W/cache1/chunks" "$W/cache2/"
start_replica r2 "$W/cache2" "$RPORT2"
R2=$RPID
wait_ready "$R2" "$RPORT2"
"$BIN/vegdb" --log warn snapshot queries --data "$W/vn" --count 100000 >"$W/posisjon.txt"
B1=http://127.0.0.1:$RPORT1/nvdb/api/v2
B2=http://127.0.0.1:$RPORT2/nvdb/api/v2
rate() { sed -n 's/.*: \([0-9]*\) requests\/s, latency ms p50 \([0-9.]*\) p90 [0-9.]* p99 \([0-9.]*\).*/\1 \2 \3/p'; }
echo "# (c) /posisjon, 8 connections, $SECS s (+2 s warm-up) per run, $(wc -l <"$W/posisjon.txt") points"
for r in $(seq "$ROUNDS"); do
  one=$("$BIN/vegdb-load" --base "$B1" --paths "$W/posisjon.txt" --connections 8 --seconds "$SECS" --warmup 2 | rate)
  echo "  one replica: $one (req/s p50 p99; load $(loadavg))" >&2
  echo "${one%% *}" >>"$W/c_one"
  out=$("$BIN/vegdb-load" --base "$B1" --also "$B2" --paths "$W/posisjon.txt" --connections 8 --seconds "$SECS" --warmup 2)
  two=$(echo "$out" | rate)
  per=$(echo "$out" | sed -n 's/^ *127.0.0.1:\([0-9]*\): \([0-9]*\) requests\/s/\1=\2/p' | tr '\n' ' ')
  echo "  two replicas: $two (per replica: $per; load $(loadavg))" >&2
  echo "${two%% *}" >>"$W/c_two"
done
echo "/posisjon req/s, 8 connections: one replica $(median <"$W/c_one"), two replicas $(median <"$W/c_two")"
fi
