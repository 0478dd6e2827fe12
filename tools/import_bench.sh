#!/usr/bin/env bash
# Import speed benchmark (BENCHMARKS.md "Import from local files"): export a generated dataset
# as Uberiket-shaped NDJSON, then time `vegdb import` of it end to end (parse + build + publish).
#
#   tools/import_bench.sh [DATA_DIR] [EXPORT_DIR]
#
# DATA_DIR: a data directory with a generated generation (default /tmp/vn, the national one
# made by `vegdb generate --scale national --data /tmp/vn`); it is only read. EXPORT_DIR
# (default /tmp/uberiket-nat) and the imported data directory (EXPORT_DIR-data) are removed at
# the end. Needs ~10 GB free for the national export.
set -euo pipefail
DATA=${1:-/tmp/vn}
EXPORT=${2:-/tmp/uberiket-nat}
OUT="$EXPORT-data"
cd "$(dirname "$0")/.."
cargo build --release --locked --bin vegdb --example export_uberiket
TARGET=${CARGO_TARGET_DIR:-target}
rm -rf "$EXPORT" "$OUT"
trap 'rm -rf "$EXPORT" "$OUT"' EXIT
"$TARGET/release/examples/export_uberiket" "$DATA" "$EXPORT"
du -sh "$EXPORT"
sync
start=$(date +%s.%N)
"$TARGET/release/vegdb" import --source "$EXPORT" --data "$OUT" | tee "$EXPORT.summary"
end=$(date +%s.%N)
python3 - "$start" "$end" "$EXPORT.summary" <<'PY'
import re, sys
start, end, path = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
text = open(path).read()
m = re.search(r"(\d+) of (\d+) veglenkesekvenser .* (\d+) objects in", text)
seqs, objs = int(m.group(2)), int(m.group(3))
s = end - start
print(f"end to end {s:.1f} s: {seqs} veglenkesekvenser ({seqs / s:,.0f}/s), {objs} objects ({objs / s:,.0f}/s)")
PY
rm -f "$EXPORT.summary"
