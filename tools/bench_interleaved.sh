#!/usr/bin/env bash
# Two builds of one criterion bench, run in turns so that the machine's drift between
# sequential runs (±15-25 % here) falls on both alike: ROUNDS rounds, each running the old
# binary then the new one (the order swapped every other round), each run's point estimates
# taken from criterion's output; prints per bench the median over rounds of each side and
# new/old.
#
#   tools/bench_interleaved.sh OLD_BIN NEW_BIN ROUNDS [criterion filter...]
#
# OLD_BIN and NEW_BIN are criterion bench executables (`cargo bench --bench X --no-run`
# prints them), e.g. of a worktree at the old commit and of main, each with its own target
# dir. Runs use --warm-up-time 1 --measurement-time 3 and their own CRITERION_HOME; as root
# they run at nice -20 (NICE= to change), so a machine busy with builds at nice 0 takes less of
# their core.
set -euo pipefail
old=$1 new=$2 rounds=$3; shift 3
out=$(mktemp -d)
nice_cmd=()
if [ "$(id -u)" = 0 ]; then nice_cmd=(nice -n "${NICE:--20}"); fi
run() { # side bin
  CRITERION_HOME="$out/crit-$1" "${nice_cmd[@]}" "$2" --bench --warm-up-time 1 --measurement-time 3 --noplot "${@:3}" 2>/dev/null \
    | awk -v side="$1" '
        /^[A-Za-z0-9_\/]+$/ { name = $1 }
        /^[A-Za-z0-9_\/]+ +time:/ { name = $1 }
        /time: +\[/ {
          # the middle of the three figures, in ns
          n = split($0, f, /[][ ]+/); k = 0
          for (i = 1; i <= n; i++) if (f[i] ~ /^[0-9.]+$/) { v[++k] = f[i]; u[k] = f[i+1] }
          m = v[2]; unit = u[2]
          s = (unit == "ps") ? 0.001 : (unit == "ns") ? 1 : (unit ~ /s$/ && unit != "s" && unit != "ms") ? 1000 : (unit == "ms") ? 1e6 : 1e9
          printf "%s %s %.3f\n", side, name, m * s
        }' >> "$out/points"
}
for r in $(seq 1 "$rounds"); do
  if [ $((r % 2)) -eq 1 ]; then run old "$old" "$@"; run new "$new" "$@"; else run new "$new" "$@"; run old "$old" "$@"; fi
  echo "round $r done ($(date +%H:%M:%S), load $(cut -d' ' -f1 /proc/loadavg))" >&2
done
python3 - "$out/points" <<'PY'
import sys, statistics, collections
pts = collections.defaultdict(lambda: collections.defaultdict(list))
for line in open(sys.argv[1]):
    side, name, ns = line.split()
    pts[name][side].append(float(ns))
print(f"{'bench':55} {'old (median ns)':>16} {'new (median ns)':>16} {'new/old':>8}  rounds")
for name, s in sorted(pts.items()):
    if 'old' in s and 'new' in s:
        o, n = statistics.median(s['old']), statistics.median(s['new'])
        print(f"{name:55} {o:16.1f} {n:16.1f} {n/o:8.3f}  {len(s['old'])}/{len(s['new'])}")
PY
