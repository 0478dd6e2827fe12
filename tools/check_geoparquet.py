#!/usr/bin/env python3
"""Check that a vegdb generation opens in the usual tools as it is: pyarrow reads every file,
DuckDB counts the rows the manifest promises, the GeoParquet `geo` metadata is valid, and
shapely decodes the WKB geometry column.

Usage: python3 tools/check_geoparquet.py DATA_DIR   (a data dir with CURRENT, e.g. snapshots/demo)
Works for both layouts: one file per object type, and chunk files per type.
"""
import json
import os
import sys

import duckdb
import pyarrow.parquet as pq
import shapely


def main(root):
    gen = open(os.path.join(root, "CURRENT")).read().strip()
    gdir = os.path.join(root, "gen-%06d" % int(gen))
    manifest = json.load(open(os.path.join(gdir, "MANIFEST.json")))
    passed = failed = 0
    con = duckdb.connect()
    for f in manifest["files"]:
        if not f["path"].endswith(".parquet"):
            continue  # changesets.json: results of the changesets a generation applied
        path = os.path.join(gdir, f["path"])
        try:
            table = pq.read_table(path)
            assert table.num_rows == f["rows"], f"pyarrow: {table.num_rows} rows, manifest {f['rows']}"
            (n,) = con.execute("SELECT count(*) FROM read_parquet(?)", [path]).fetchone()
            assert n == f["rows"], f"duckdb: {n} rows, manifest {f['rows']}"
            meta = pq.read_metadata(path).metadata or {}
            if b"geo" in meta:
                geo = json.loads(meta[b"geo"])
                assert geo["version"] == "1.1.0" and geo["primary_column"] == "geometry"
                col = geo["columns"]["geometry"]
                assert col["encoding"] == "WKB" and col["crs"]["id"]["code"] == 25833
                wkb = [g for g in table.column("geometry").to_pylist()[:2000] if g is not None]
                geoms = shapely.from_wkb(wkb)
                kinds = {g.geom_type for g in geoms}
                allowed = {t.split(" ")[0] for t in col["geometry_types"]}
                assert kinds <= allowed, f"geometry types {kinds} not in {allowed}"
                # 3D where the declared type says " Z" (points and lines), 2D otherwise (surfaces)
                has_z = {t.split(" ")[0]: t.endswith(" Z") for t in col["geometry_types"]}
                assert all(g.has_z == has_z[g.geom_type] for g in geoms), "dimension differs from geometry_types"
            passed += 1
        except Exception as e:  # report every file, then fail
            print(f"FAIL {f['path']}: {e}")
            failed += 1
    print(f"geoparquet: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "snapshots/demo"))
