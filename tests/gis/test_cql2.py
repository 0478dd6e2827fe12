"""CQL2 `filter` of the OGC API with pygeofilter (PyPI) as an independent client, on the demo.

Each cql2-text filter is parsed by pygeofilter and written by it as cql2-json (`to_cql2`); the
server's answers to both encodings are the same non-empty set. Filters with a geometry are also
checked against shapely over every feature fetched without a filter, in the filter's own CRS
(EPSG:25833, so the server and shapely intersect in one plane): a feature within `EPS` metres of
the polygon's edge (where the answer's rounded coordinates cannot tell) is not compared.
"""

from functools import lru_cache

import pytest
import requests
from pygeofilter.backends.cql2_json import to_cql2
from pygeofilter.parsers.cql2_text import parse
from shapely import wkt
from shapely.geometry import shape

UTM = "http://www.opengis.net/def/crs/EPSG/0/25833"
PAGE = 10000
EPS = 0.01
# a triangle in Trondheim (UTM 33 metres), where the demo has speed limits
TRIANGLE = "POLYGON((275000 7025000, 279000 7025000, 277000 7030000, 275000 7025000))"


def answer(root, collection, **params):
    """Every feature of a filtered items query (paged): {id: (geometry, properties)}."""
    out, offset = {}, 0
    while True:
        r = requests.get(
            f"{root}/ogc/collections/{collection}/items",
            params={**params, "limit": PAGE, "offset": offset, "crs": UTM, "filter-crs": UTM},
            timeout=120,
        )
        assert r.status_code == 200, r.text[:400]
        page = r.json()
        for f in page["features"]:
            out[str(f["id"])] = (shape(f["geometry"]), f["properties"])
        offset += page["numberReturned"]
        if page["numberReturned"] == 0 or offset >= page["numberMatched"]:
            assert len(out) == page["numberMatched"]
            return out


@lru_cache(maxsize=None)
def everything(root, collection):
    return answer(root, collection)


FILTERS = [
    "Fartsgrense = 80",
    "Fartsgrense >= 60 AND NOT (Fartsgrense = 70)",
    "Fartsgrense IN (30, 40) OR Fartsgrense BETWEEN 90 AND 110",
    "nvdbId > 0 AND Fartsgrense <> 50",
    f"S_INTERSECTS(geometry, {TRIANGLE})",
    f"S_INTERSECTS(geometry, {TRIANGLE}) AND Fartsgrense < 60",
    f"S_WITHIN(geometry, {TRIANGLE})",
    f"NOT S_INTERSECTS(geometry, {TRIANGLE}) AND Fartsgrense = 60",
]


@pytest.mark.parametrize("text", FILTERS)
def test_text_and_pygeofilters_json_answer_the_same(demo_root, text):
    as_json = to_cql2(parse(text))
    got_text = set(answer(demo_root, "105", filter=text))
    got_json = set(answer(demo_root, "105", filter=as_json, **{"filter-lang": "cql2-json"}))
    assert got_text == got_json, f"{text} | {as_json}"
    assert got_text, f"{text} selects nothing (choose one with data)"


def spatial_oracle(root, test, keep):
    """(ids the oracle selects, ids too close to the triangle's edge to tell)."""
    tri = wkt.loads(TRIANGLE)
    grown, shrunk = tri.buffer(EPS), tri.buffer(-EPS)
    sure, unsure = set(), set()
    for fid, (geom, props) in everything(root, "105").items():
        if not keep(props):
            continue
        a, b = test(geom, grown), test(geom, shrunk)
        if a and b:
            sure.add(fid)
        elif a or b:
            unsure.add(fid)
    return sure, unsure


@pytest.mark.parametrize(
    "text,test,keep",
    [
        (f"S_INTERSECTS(geometry, {TRIANGLE})", lambda g, t: g.intersects(t), lambda p: True),
        (
            f"S_INTERSECTS(geometry, {TRIANGLE}) AND Fartsgrense < 60",
            lambda g, t: g.intersects(t),
            lambda p: p.get("Fartsgrense") is not None and p["Fartsgrense"] < 60,
        ),
        (f"S_WITHIN(geometry, {TRIANGLE})", lambda g, t: g.within(t), lambda p: True),
    ],
)
def test_spatial_filters_match_shapely(demo_root, text, test, keep):
    sure, unsure = spatial_oracle(demo_root, test, keep)
    got = set(answer(demo_root, "105", filter=text))
    assert len(unsure) <= 3, f"{text}: {len(unsure)} features on the edge"
    assert sure, f"{text}: the oracle selects nothing"
    assert not (got - sure - unsure) and not (sure - got), (
        f"{text}: {len(got - sure - unsure)} answered that shapely leaves out, "
        f"{len(sure - got)} left out that shapely selects"
    )
