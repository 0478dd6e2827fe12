#!/usr/bin/env python3
"""Check that a vegdb generation opens in the usual tools as it is, and (format version 3) that
the files are the open data ARCHITECTURE.md "Formats" promises, each claim checked with
pyarrow, DuckDB or shapely independently of vegdb's own code:

every version
  - pyarrow reads every Parquet file and DuckDB counts the rows the manifest promises;
  - the GeoParquet `geo` metadata is valid and shapely decodes the WKB geometry column in the
    declared dimensions;
format version 3 (open data)
  - `geo` also in the Arrow schema (the `ARROW:schema` IPC message), one CRS label (EPSG:32633);
  - `geometry_types` exactly the types present (all rows, shapely);
  - the `bbox` covering column is declared and equals every row's shapely bounds (null iff no
    geometry);
  - every object with a placement has a geometry (no NULL geometry for line-placed types),
    and a located line's 2D length (shapely) is its `length_m`, which the `municipalities`
    lengths add up to;
  - row-group statistics of bbox (DuckDB `parquet_metadata`) hold every row of their group, and
    a bbox query (DuckDB, on the bbox column) finds exactly the rows shapely finds while the
    statistics exclude row groups;
  - file names: `objects/type=<id>/` holds only type <id> (manifest), a hive-partitioned
    DuckDB read gives each file's type as column `type`;
  - the data dictionary lists every property column of every type and every enum id stored.

Usage: python3 tools/check_geoparquet.py DATA_DIR   (a data dir with CURRENT, e.g. snapshots/demo)
"""
import base64
import glob
import json
import math
import os
import sys

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import shapely

EXPECTED_CRS = 32633


def arrow_schema_metadata(meta):
    """The metadata of the Arrow schema stored in the file (not pyarrow's merge with the
    Parquet key-value metadata)."""
    raw = base64.b64decode(meta[b"ARROW:schema"])
    schema = pa.ipc.read_schema(pa.py_buffer(raw))
    return schema.metadata or {}


def check_file(con, gdir, f, version, dictionary):
    path = os.path.join(gdir, f["path"])
    table = pq.read_table(path)
    assert table.num_rows == f["rows"], f"pyarrow: {table.num_rows} rows, manifest {f['rows']}"
    (n,) = con.execute("SELECT count(*) FROM read_parquet(?)", [path]).fetchone()
    assert n == f["rows"], f"duckdb: {n} rows, manifest {f['rows']}"
    meta = pq.read_metadata(path).metadata or {}
    if b"geo" not in meta:
        return
    geo = json.loads(meta[b"geo"])
    assert geo["version"] == "1.1.0" and geo["primary_column"] == "geometry"
    col = geo["columns"]["geometry"]
    wkb = table.column("geometry").to_pylist()
    rows = wkb if version >= 3 else wkb[:2000]
    geoms = [None if g is None else shapely.from_wkb(g) for g in rows]
    present = [g for g in geoms if g is not None]
    kinds = {g.geom_type for g in present}
    declared = {t.split(" ")[0] for t in col["geometry_types"]}
    has_z = {t.split(" ")[0]: t.endswith(" Z") for t in col["geometry_types"]}
    assert kinds <= declared, f"geometry types {kinds} not in {declared}"
    assert all(g.has_z == has_z[g.geom_type] for g in present), "dimension differs from geometry_types"
    if version < 3:
        assert col["encoding"] == "WKB" and col["crs"]["id"]["code"] in (25833, EXPECTED_CRS)
        return
    # --- format version 3
    assert col["encoding"] == "WKB" and col["crs"]["id"]["code"] == EXPECTED_CRS, col["crs"]["id"]
    assert json.loads(arrow_schema_metadata(meta)[b"geo"]) == geo, "geo differs in the Arrow schema"
    if present:
        assert kinds == declared, f"geometry_types {sorted(declared)} but the rows hold {sorted(kinds)}"
    cov = col["covering"]["bbox"]
    assert cov == {k: ["bbox", k] for k in ("xmin", "ymin", "xmax", "ymax")}, cov
    boxes = table.column("bbox").to_pylist()
    for g, b in zip(geoms, boxes):
        if g is None:
            assert b is None
            continue
        want = g.bounds
        got = (b["xmin"], b["ymin"], b["xmax"], b["ymax"])
        assert all(abs(a - w) < 1e-6 for a, w in zip(got, want)), (got, want)
    if f.get("type_id") is None:
        return
    # objects: a geometry wherever there is a placement; lengths
    placements = table.column("placements").to_pylist()
    located = table.column("geometry_located").to_pylist()
    lengths = table.column("length_m").to_pylist()
    munis = table.column("municipalities").to_pylist()
    for g, p, loc, length, ms in zip(geoms, placements, located, lengths, munis):
        assert g is not None or not p, "an object with placements has NULL geometry"
        assert abs(sum(m["length_m"] for m in ms) - length) < 1e-6
        if loc and g is not None and g.geom_type in ("LineString", "MultiLineString"):
            # the network's segment lengths are stored in mm: within 10 ppm + 1 cm
            assert abs(g.length - length) <= 1e-5 * length + 0.01, (g.length, length)
    # row groups: statistics hold their rows; a bbox query skips groups
    stats = con.execute(
        "SELECT row_group_id, row_group_num_rows, path_in_schema, stats_min_value, stats_max_value "
        "FROM parquet_metadata(?) WHERE path_in_schema LIKE 'bbox, %' ORDER BY row_group_id",
        [path],
    ).fetchall()
    groups = {}
    for g_id, g_rows, p, lo, hi in stats:
        k = p.split(", ")[1]
        groups.setdefault(g_id, {"rows": g_rows})[k] = (float(lo), float(hi)) if lo is not None else None
    at = 0
    for g_id in sorted(groups):
        s = groups[g_id]
        for b in boxes[at : at + s["rows"]]:
            if b is None:
                continue
            assert s["xmin"][0] <= b["xmin"] and b["xmax"] <= s["xmax"][1], "bbox stats miss a row"
            assert s["ymin"][0] <= b["ymin"] and b["ymax"] <= s["ymax"][1], "bbox stats miss a row"
        at += s["rows"]
    dict_type = dictionary["types_by_id"].get(f["type_id"])
    assert dict_type is not None, f"type {f['type_id']} is not in the dictionary"
    columns = {p["column"]: p for p in dict_type.get("properties", [])}
    for name in table.column_names:
        if name.startswith("p") and name[1:].isdigit():
            assert name in columns, f"{name} is not in the dictionary"
            prop = columns[name]
            if "values" in prop:
                allowed = {v["id"] for v in prop["values"]}
                stored = {v for v in table.column(name).to_pylist() if v is not None}
                assert stored <= allowed, f"{name}: ids {sorted(stored - allowed)[:5]} not in the dictionary"
    return groups


def bbox_query(con, gdir, manifest):
    """A window around the first object of the largest type: DuckDB's bbox predicate finds
    exactly the rows shapely finds, and the row-group statistics exclude some groups."""
    files = [f for f in manifest["files"] if f.get("type_id") is not None]
    biggest = max({f["type_id"] for f in files}, key=lambda t: sum(f["rows"] for f in files if f["type_id"] == t))
    paths = [os.path.join(gdir, f["path"]) for f in files if f["type_id"] == biggest]
    table = pa.concat_tables([pq.read_table(p, columns=["id", "geometry"]) for p in paths])
    geoms = [None if g is None else shapely.from_wkb(g) for g in table.column("geometry").to_pylist()]
    ids = table.column("id").to_pylist()
    present = [g for g in geoms if g is not None]
    # the first object in file order: rows are in space order, so its window lies at one end of
    # the curve (a window in the middle of the data may touch every quarter)
    cx, cy = present[0].centroid.coords[0][:2]
    w = (cx - 1000, cy - 1000, cx + 1000, cy + 1000)
    window = shapely.box(*w)
    want = sorted(i for i, g in zip(ids, geoms) if g is not None and shapely.box(*g.bounds).intersects(window))
    got = sorted(
        r[0]
        for r in con.execute(
            "SELECT id FROM read_parquet(?) WHERE bbox.xmin <= ? AND bbox.xmax >= ? AND bbox.ymin <= ? AND bbox.ymax >= ?",
            [paths, w[2], w[0], w[3], w[1]],
        ).fetchall()
    )
    assert got == want, f"bbox query: duckdb {len(got)} rows, shapely {len(want)}"
    meta = con.execute(
        "SELECT file_name, row_group_id, path_in_schema, stats_min_value, stats_max_value FROM parquet_metadata(?) "
        "WHERE path_in_schema LIKE 'bbox, %'",
        [paths],
    ).fetchall()
    groups = {}
    for fn, g, p, lo, hi in meta:
        groups.setdefault((fn, g), {})[p.split(", ")[1]] = (float(lo), float(hi))
    hit = sum(
        1
        for s in groups.values()
        if s["xmin"][0] <= w[2] and s["xmax"][1] >= w[0] and s["ymin"][0] <= w[3] and s["ymax"][1] >= w[1]
    )
    print(f"bbox query on type {biggest}: {len(want)} rows; row groups meeting the window {hit} of {len(groups)}")
    # Skipping needs row groups smaller than the data's extent: chunks of a few hundred rows
    # (a tiny generated dataset) hold one row group each, spread over the whole area by id
    # order; tests/formats.rs checks the skipping on data where it applies.
    xs = [v for s in groups.values() for v in (s["xmin"][0], s["xmax"][1])]
    ys = [v for s in groups.values() for v in (s["ymin"][0], s["ymax"][1])]
    full = (max(xs) - min(xs)) * (max(ys) - min(ys)) if xs and ys else 0.0
    compact = sum(
        1
        for s in groups.values()
        if (s["xmax"][1] - s["xmin"][0]) * (s["ymax"][1] - s["ymin"][0]) < 0.5 * full
    )
    if len(groups) >= 3 and compact >= len(groups) // 2:
        assert hit < len(groups), "no row group can be skipped"
    elif len(groups) >= 3:
        print(f"  (only {compact} of {len(groups)} row groups are smaller than half the extent: no skipping expected)")


def check_names(con, gdir, manifest):
    """Glob-safe names: each type directory holds only its type; hive partitioning gives `type`."""
    for f in manifest["files"]:
        t = f.get("type_id")
        if t is not None:
            assert f["path"].startswith(f"objects/type={t}/"), f["path"]
            assert os.path.basename(f["path"]).startswith("part-"), f["path"]
    per_type = {}
    for f in manifest["files"]:
        if f.get("type_id") is not None:
            per_type[f["type_id"]] = per_type.get(f["type_id"], 0) + f["rows"]
    rows = con.execute(
        "SELECT type, count(*) FROM read_parquet(?, hive_partitioning = true) GROUP BY type",
        [os.path.join(gdir, "objects", "type=*", "*.parquet")],
    ).fetchall()
    assert {int(t): n for t, n in rows} == per_type, "hive partition column type differs from the manifest"
    # a type whose id is a prefix of another's (10 and 105) reads alone
    for t in per_type:
        files = glob.glob(os.path.join(gdir, "objects", f"type={t}", "*.parquet"))
        (n,) = con.execute("SELECT count(*) FROM read_parquet(?)", [files]).fetchone()
        assert n == per_type[t], f"type {t}: {n} rows by glob, manifest {per_type[t]}"


def main(root):
    gen = open(os.path.join(root, "CURRENT")).read().strip()
    gdir = os.path.join(root, "gen-%06d" % int(gen))
    manifest = json.load(open(os.path.join(gdir, "MANIFEST.json")))
    version = manifest["format_version"]
    dictionary = {}
    if version >= 3:
        listed = {f["path"] for f in manifest["files"]}
        assert {"dictionary.json", "DICTIONARY.md"} <= listed, "the data dictionary is not in the manifest"
        dictionary = json.load(open(os.path.join(gdir, "dictionary.json")))
        dictionary["types_by_id"] = {t["id"]: t for t in dictionary["types"]}
        assert dictionary["crs"] == f"EPSG:{EXPECTED_CRS}"
    passed = failed = 0
    con = duckdb.connect()
    for f in manifest["files"]:
        if not f["path"].endswith(".parquet"):
            continue  # changesets.json, the dictionary
        try:
            check_file(con, gdir, f, version, dictionary)
            passed += 1
        except Exception as e:  # report every file, then fail
            print(f"FAIL {f['path']}: {e!r}")
            failed += 1
    if version >= 3:
        for name, check in [("file names", check_names), ("bbox query", bbox_query)]:
            try:
                check(con, gdir, manifest)
                passed += 1
            except Exception as e:
                print(f"FAIL {name}: {e!r}")
                failed += 1
    print(f"geoparquet (format version {version}): {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "snapshots/demo"))
