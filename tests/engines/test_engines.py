"""GIS exports, and distributed engines reading the same files as the server.

- `vegdb export` output opens in GDAL (`ogrinfo`, Debian gdal-bin) with the feature count the
  API's `/statistikk` gives for the same filter, and the GeoParquet export in DuckDB spatial.
- A generation uploaded to an S3-protocol server (moto) is read from there by DuckDB (httpfs +
  spatial extensions from the PyPI wheels duckdb-ext-httpfs / duckdb-ext-spatial) and by Dask
  (LocalCluster of two worker processes, dask-geopandas, s3fs); count and length per type x
  kommune equal `/statistikk` of the real binary serving the same generation.
"""
import os
import shutil
import subprocess
import sysconfig

import pytest

from conftest import statistics, vegdb_bin

S3_GLOB = "s3://vegdb/data/{gen}/objects/type=*/*.parquet"


def ogr_count(path):
    assert shutil.which("ogrinfo"), "ogrinfo (Debian gdal-bin) is required"
    out = subprocess.run(["ogrinfo", "-ro", "-so", "-al", path], check=True, capture_output=True, text=True).stdout
    counts = [int(l.split(":")[1]) for l in out.splitlines() if l.startswith("Feature Count:")]
    assert len(counts) == 1, out
    return counts[0], out


def duckdb_connection():
    """DuckDB with the httpfs and spatial extensions the PyPI wheels install under
    site-packages/duckdb_ext/extensions (no download: autoinstall off)."""
    import duckdb

    ext_dir = os.path.join(sysconfig.get_paths()["purelib"], "duckdb_ext", "extensions")
    assert os.path.isdir(ext_dir), f"duckdb-ext wheels not installed ({ext_dir})"
    con = duckdb.connect(config={"autoinstall_known_extensions": False, "autoload_known_extensions": False})
    con.execute("SET extension_directory = ?", [ext_dir])
    con.execute("LOAD httpfs")
    con.execute("LOAD spatial")
    return con


@pytest.mark.parametrize("fmt", ["fgb", "geojson"])
def test_export_opens_in_gdal_with_the_api_count(tmp_path, data_dir, api, fmt):
    for kommune in [None, 5001]:
        out = tmp_path / f"t105-{kommune}.{fmt}"
        args = [vegdb_bin(), "export", "--type", "105", "--format", fmt, "--data", data_dir, "--out", str(out)]
        if kommune:
            args += ["--kommune", str(kommune)]
        subprocess.run(args, check=True, stdout=subprocess.DEVNULL)
        n, info = ogr_count(str(out))
        want, _ = statistics(api, 105, kommune)
        assert want > 0 and n == want, f"{fmt} kommune={kommune}: ogrinfo {n}, statistikk {want}"
        # named, decoded properties and line geometry
        assert "Fartsgrense: " in info and "nvdbId: " in info, info
        assert "Line String" in info, info


def test_geoparquet_export_opens_in_duckdb_spatial_and_pyarrow(tmp_path, data_dir, api):
    import pyarrow.parquet as pq

    out = tmp_path / "t105.parquet"
    subprocess.run(
        [vegdb_bin(), "export", "--type", "105", "--format", "geoparquet", "--data", data_dir, "--out", str(out)],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    want, length = statistics(api, 105)
    t = pq.read_table(out)
    assert t.num_rows == want and "Fartsgrense" in t.column_names
    con = duckdb_connection()
    n, total = con.execute(
        "SELECT count(*), sum(ST_Length(geometry)) FROM read_parquet(?) WHERE ST_GeometryType(geometry) IN ('LINESTRING', 'MULTILINESTRING')",
        [str(out)],
    ).fetchone()
    assert n == want
    # the network's lengths are in mm: the geometry's 2D length within 10 ppm
    assert abs(total - length) <= 1e-5 * length + 1, (total, length)


def kommuner(generation_dir):
    import duckdb

    net = os.path.join(generation_dir, "network", "links.parquet")
    return [r[0] for r in duckdb.sql(f"SELECT DISTINCT municipality FROM read_parquet('{net}') ORDER BY 1").fetchall()]


def compare(api, generation_dir, per_pair, per_type, engine):
    """`per_pair[(type, kommune)] = (count, length)`, `per_type[type] = (count, length)` against
    /statistikk (length in whole meters, ±1 for float summation order)."""
    types = sorted(per_type)
    assert 105 in types and len(types) > 30, types
    checked = 0
    for t in types:
        want = statistics(api, t)
        got = per_type[t]
        assert want[0] == got[0] and abs(want[1] - got[1]) <= 1, f"{engine}: type {t}: {got} vs statistikk {want}"
        for k in kommuner(generation_dir):
            want = statistics(api, t, k)
            got = per_pair.get((t, k), (0, 0.0))
            assert want[0] == got[0] and abs(want[1] - got[1]) <= 1, (
                f"{engine}: type {t} kommune {k}: {got} vs statistikk {want}"
            )
            checked += 1
    return checked


def test_duckdb_reads_the_generation_from_s3_and_matches_statistikk(s3, api, generation_dir):
    con = duckdb_connection()
    con.execute(
        "CREATE SECRET s3 (TYPE s3, KEY_ID 'testing', SECRET 'testing', REGION 'us-east-1', "
        f"ENDPOINT '127.0.0.1:{s3['port']}', URL_STYLE 'path', USE_SSL false)"
    )
    glob = S3_GLOB.format(gen=os.path.basename(generation_dir))
    rows = con.execute(
        f"""SELECT type, m.municipality, count(*), sum(m.length_m)
            FROM (SELECT type, unnest(municipalities) AS m
                  FROM read_parquet('{glob}', hive_partitioning = true))
            GROUP BY ALL"""
    ).fetchall()
    per_pair = {(int(t), k): (n, round(l)) for t, k, n, l in rows}
    totals = con.execute(
        f"""SELECT type, count(*), sum(length_m),
                   sum(CASE WHEN geometry_located AND ST_GeometryType(geometry)
                            IN ('LINESTRING', 'MULTILINESTRING') THEN ST_Length(geometry) END),
                   sum(CASE WHEN geometry_located AND ST_GeometryType(geometry)
                            IN ('LINESTRING', 'MULTILINESTRING') THEN length_m END)
            FROM read_parquet('{glob}', hive_partitioning = true) GROUP BY ALL"""
    ).fetchall()
    per_type = {int(t): (n, round(l)) for t, n, l, _, _ in totals}
    # spatial: the located lines' 2D length is the located length
    for t, _, _, geom_len, len_m in totals:
        if geom_len is not None:
            assert abs(geom_len - len_m) <= 1e-5 * len_m + 0.01, (t, geom_len, len_m)
    assert compare(api, generation_dir, per_pair, per_type, "duckdb") > 100


def test_dask_cluster_reads_the_generation_from_s3_and_matches_statistikk(s3, api, generation_dir):
    import dask.dataframe as dd
    import dask_geopandas
    import pandas as pd
    from dask.distributed import Client, LocalCluster

    storage = {
        "key": "testing",
        "secret": "testing",
        "client_kwargs": {"endpoint_url": s3["endpoint"], "region_name": "us-east-1"},
    }
    glob = S3_GLOB.format(gen=os.path.basename(generation_dir))

    def per_kommune(pdf):
        out = []
        for t, ms in zip(pdf["type"], pdf["municipalities"]):
            for m in ms:
                out.append((int(t), int(m["municipality"]), float(m["length_m"])))
        return pd.DataFrame(out, columns=["type", "kommune", "length_m"]).astype(
            {"type": "int64", "kommune": "int64", "length_m": "float64"}
        )

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, Client(
        cluster
    ) as client:
        assert len(client.scheduler_info()["workers"]) == 2
        ddf = dd.read_parquet(
            glob, columns=["type", "municipalities", "length_m"], storage_options=storage, dataset={"partitioning": "hive"}
        )
        assert ddf.npartitions > 1
        meta = pd.DataFrame({"type": pd.Series(dtype="int64"), "kommune": pd.Series(dtype="int64"), "length_m": pd.Series(dtype="float64")})
        pairs = ddf.map_partitions(per_kommune, meta=meta).groupby(["type", "kommune"]).length_m.agg(["count", "sum"]).compute()
        per_pair = {(int(t), int(k)): (int(r["count"]), round(r["sum"])) for (t, k), r in pairs.iterrows()}
        ddf2 = ddf.assign(type=ddf["type"].astype("int64"))
        totals = ddf2.groupby("type").length_m.agg(["count", "sum"]).compute()
        per_type = {int(t): (int(r["count"]), round(r["sum"])) for t, r in totals.iterrows()}
        # dask-geopandas reads the GeoParquet (geo metadata, CRS) of one type from the store
        gdf = dask_geopandas.read_parquet(
            glob.replace("type=*", "type=105"), columns=["id", "geometry", "length_m"], storage_options=storage
        )
        assert gdf.crs.to_epsg() == 32633
        lengths = gdf.assign(geom_len=gdf.geometry.length)[["geom_len", "length_m"]].sum().compute()
        assert abs(lengths["geom_len"] - lengths["length_m"]) <= 1e-5 * lengths["length_m"] + 0.01
    assert compare(api, generation_dir, per_pair, per_type, "dask") > 100


@pytest.mark.parametrize("day", ["2012-03-01", "2016-07-15", "2020-01-01", "2024-06-30"])
def test_duckdb_as_of_a_day_over_the_files_matches_tidspunkt(generation_dir, api, day):
    """The README's "as it was on a day" query: the current chunks and the history file of
    type 105 read together by DuckDB, rows valid at the day (start inclusive, end exclusive),
    counted per object; equals the server's `statistikk?tidspunkt=` (its view of that day)."""
    import duckdb

    files = [os.path.join(generation_dir, "objects/type=105/*.parquet")]
    history = os.path.join(generation_dir, "history/type=105/versions.parquet")
    assert os.path.exists(history), "the tiny dataset has history for type 105"
    files.append(history)
    con = duckdb.connect()
    (count,) = con.execute(
        "SELECT count(DISTINCT id) FROM read_parquet(?, union_by_name=true) "
        "WHERE start_date <= CAST(? AS DATE) AND (end_date IS NULL OR end_date > CAST(? AS DATE))",
        [files, day, day],
    ).fetchone()
    (versions,) = con.execute(
        "SELECT count(*) FROM read_parquet(?, union_by_name=true) "
        "WHERE start_date <= CAST(? AS DATE) AND (end_date IS NULL OR end_date > CAST(? AS DATE))",
        [files, day, day],
    ).fetchone()
    assert versions == count, "one version of an object valid on a day"
    stats = api.get(f"/vegobjekter/105/statistikk?tidspunkt={day}")
    assert stats["antall"] == count, (day, stats, count)
