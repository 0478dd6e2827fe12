"""`vegdb export --segmentert` read back: the real binary's GeoParquet export of the demo
(Trøndelag) opened by pyarrow and GeoPandas and checked against the HTTP answer of
`/vegnett/segmentert` for the same filters, served by the same binary from the same data: the
same pieces (count, `kortform`s, total length), and per piece the same road references and,
per type, the same covering objects (ids, versions) and chosen values.
"""
import json
import subprocess
import sys
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for pyhelpers
from pyhelpers.vegdb_server import READ, running_vegdb  # noqa: E402

TYPES = [105, 540, 241]
# Fartsgrense's value, ÅDT total; every value of 241 (Vegdekke)
EGENSKAPER = "105(2021),540(4623)"
KOMMUNE = 5001


@pytest.fixture(scope="module")
def demo():
    with running_vegdb("vegdb-segmented-", 0, ready_timeout=180, demo=True) as server:
        yield server


def get_json(url):
    with urllib.request.urlopen(url, timeout=120) as r:
        assert r.status == 200
        return json.loads(r.read())


def api_pieces(root, query):
    """Every piece of `/vegnett/segmentert?<query>`, page by page."""
    out, start = [], None
    for _ in range(1000):
        q = query + "&antall=10000" + (f"&start={urllib.parse.quote(start)}" if start else "")
        page = get_json(f"{root}{READ}/vegnett/segmentert?{q}")
        items = page["objekter"]
        if not items:
            return out
        out.extend(items)
        start = page["metadata"]["neste"]["start"]
    raise AssertionError("paging did not end")


def covering(piece, type_id):
    """The covering objects of a type in an API piece, as a list (null: none; one: the object)."""
    v = piece["vegobjekter"][f"vegobjekttype_{type_id}"]
    if v is None:
        return []
    return v if isinstance(v, list) else [v]


def same_number(a, b):
    if a is None or b is None:
        return a is None and b is None
    return abs(float(a) - float(b)) <= 1e-9 * max(1.0, abs(float(a)))


def test_export_reads_back_as_the_api_answer(demo, tmp_path):
    import geopandas
    import pyarrow.parquet as pq

    out = tmp_path / "segmentert.parquet"
    subprocess.run(
        [str(demo.binary), "export", "--data", str(demo.data), "--segmentert", ",".join(map(str, TYPES)),
         "--egenskaper", EGENSKAPER, "--kommune", str(KOMMUNE), "--format", "geoparquet", "--out", str(out)],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    query = f"typer={','.join(map(str, TYPES))}&egenskaper={EGENSKAPER}&kommune={KOMMUNE}"
    api = api_pieces(demo.root, query)
    table = pq.read_table(out)
    rows = table.to_pylist()
    assert len(api) > 1000, len(api)
    # the same pieces, in the same order (link, start position), and the same total length
    assert len(rows) == len(api)
    assert [r["kortform"] for r in rows] == [p["kortform"] for p in api]
    total_file = sum(r["lengde"] for r in rows)
    total_api = sum(p["lengde"] for p in api)
    # the API rounds each length to mm
    assert abs(total_file - total_api) <= 0.0005 * len(api) + 1e-6, (total_file, total_api)
    assert all(r["kommune"] == KOMMUNE for r in rows)
    # every piece: road references, and per type the covering objects and chosen values
    covered = {t: 0 for t in TYPES}
    for r, p in zip(rows, api):
        assert (r["veglenkesekvensid"], r["fra_posisjon"], r["til_posisjon"]) == (
            p["veglenkesekvensid"], p["fra_posisjon"], p["til_posisjon"])
        assert abs(r["lengde"] - p["lengde"]) <= 0.0005 + 1e-9
        assert r["vegreferanse"] == (p.get("vegreferanse") or {}).get("kortform")
        assert r["vegsystemreferanse"] == (p.get("vegsystemreferanse") or {}).get("kortform")
        for t in TYPES:
            objects = covering(p, t)
            if not objects:
                assert r[f"{t}_id"] is None and r[f"{t}_versjon"] is None, (r["kortform"], t)
                continue
            covered[t] += 1
            assert r[f"{t}_id"] == [o["id"] for o in objects]
            assert r[f"{t}_versjon"] == [o["versjon"] for o in objects]
            assert r[f"{t}_feltspesifikk"] == [o["feltspesifikk"] for o in objects]
        for t, prop, column in [(105, 2021, "105_Fartsgrense"), (540, 4623, "540_ÅDT, total")]:
            objects = covering(p, t)
            if objects:
                want = [o["egenskaper"].get(f"egenskap_{prop}") for o in objects]
                got = r[column]
                assert len(got) == len(want) and all(map(same_number, got, want)), (r["kortform"], got, want)
        # 241 carries every value: Massetype (1216) and Dekketykkelse (1642) as a sample
        for i, o in enumerate(covering(p, 241)):
            assert o["egenskaper"].get("egenskap_1216") == r["241_Massetype"][i]
            assert same_number(o["egenskaper"].get("egenskap_1642"), r["241_Dekketykkelse"][i])
    assert all(covered[t] > 100 for t in TYPES), covered
    # chosen values only: 105 carries Fartsgrense (and its value id), 540 its ÅDT, total
    assert [c for c in table.column_names if c.startswith("105_")] == [
        "105_id", "105_versjon", "105_feltspesifikk", "105_Fartsgrense", "105_Fartsgrense_id"]
    assert [c for c in table.column_names if c.startswith("540_")] == [
        "540_id", "540_versjon", "540_feltspesifikk", "540_ÅDT, total"]
    assert len([c for c in table.column_names if c.startswith("241_")]) > 10
    # GeoPandas: lines in EPSG:32633 whose 2D length is the piece's length (within 1 mm per
    # piece: `lengde` follows the heights too, which are small here)
    frame = geopandas.read_parquet(out)
    assert len(frame) == len(rows)
    assert frame.crs.to_epsg() == 32633
    assert set(frame.geometry.geom_type) == {"LineString"}
    assert abs(frame.geometry.length.sum() - total_file) <= 0.01 * total_file, (frame.geometry.length.sum(), total_file)
    assert frame["105_Fartsgrense"].dropna().map(len).min() >= 1
