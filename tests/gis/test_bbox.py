"""bbox answers of the OGC API (OWSLib as the client) and the v2 `kartutsnitt` hold exactly the
features whose geometry intersects the box in the box's own CRS, on the demo snapshot.

Oracle: every feature of the collection, fetched without a bbox by paging (OWSLib, `offset`),
intersected with the box by shapely. A feature within `EPS` of the box's edge (where the
answer's rounded coordinates cannot tell) is not compared; there are at most a few.
"""

from functools import lru_cache

import pytest
import requests
from owslib.ogcapi.features import Features
from shapely.geometry import box, shape

CRS84 = "http://www.opengis.net/def/crs/OGC/1.3/CRS84"
EPSG = "http://www.opengis.net/def/crs/EPSG/0/"
# the box: Trondheim in the demo, 4 speed limits lay 200-460 m outside it
LON_LAT_BOX = (10.5, 63.28, 10.6, 63.34)
# a UTM 33 box (metres) in the same area
UTM_BOX = (275000.0, 7025000.0, 279000.0, 7030000.0)
EPS = {"lonlat": 1e-7, "utm": 0.01}
PAGE = 10000


def features_api(root):
    return Features(root + "/ogc")


@lru_cache(maxsize=None)
def all_features(root, collection, crs=None):
    """Every feature of `collection` (no bbox), paged with OWSLib: {id: (geometry, properties)}."""
    api = features_api(root)
    out, offset = {}, 0
    extra = {"crs": crs} if crs else {}
    while True:
        page = api.collection_items(collection, limit=PAGE, offset=offset, **extra)
        for f in page["features"]:
            out[str(f["id"])] = (shape(f["geometry"]), f["properties"])
        offset += page["numberReturned"]
        if page["numberReturned"] == 0 or offset >= page["numberMatched"]:
            break
    assert len(out) == page["numberMatched"], "paging lost or repeated features"
    return out


def oracle(root, collection, rect, kind, crs=None, keep=lambda props: True):
    """(ids that intersect `rect`, ids too close to its edge to tell)."""
    eps = EPS[kind]
    x0, y0, x1, y1 = rect
    grown = box(x0 - eps, y0 - eps, x1 + eps, y1 + eps)
    shrunk = box(x0 + eps, y0 + eps, x1 - eps, y1 - eps)
    inside, unsure = set(), set()
    for fid, (geom, props) in all_features(root, collection, crs).items():
        if not keep(props) or not geom.intersects(grown):
            continue
        if geom.intersects(shrunk):
            inside.add(fid)
        else:
            unsure.add(fid)
    return inside, unsure


def bbox_answer(root, collection, bbox, **params):
    """Every feature id of a bbox query (OWSLib, paged) and its numberMatched."""
    api = features_api(root)
    ids, offset, matched = [], 0, None
    while True:
        page = api.collection_items(collection, bbox=list(bbox), limit=PAGE, offset=offset, **params)
        matched = page["numberMatched"]
        ids.extend(str(f["id"]) for f in page["features"])
        offset += page["numberReturned"]
        if page["numberReturned"] == 0 or offset >= matched:
            break
    assert len(ids) == len(set(ids)) == matched, "numberMatched disagrees with the features"
    return set(ids)


def assert_exact(got, inside, unsure, what):
    assert len(unsure) <= 3, f"{what}: {len(unsure)} features on the edge"
    extra = got - inside - unsure
    missing = inside - got
    assert not extra and not missing, (
        f"{what}: {len(extra)} outside the box answered (e.g. {sorted(extra)[:5]}), "
        f"{len(missing)} inside left out (e.g. {sorted(missing)[:5]})"
    )
    assert inside, f"{what}: the box holds no features (choose one with data)"


@pytest.mark.parametrize("collection", ["105", "vegnett"])
def test_lon_lat_bbox_is_exact(demo_root, collection):
    inside, unsure = oracle(demo_root, collection, LON_LAT_BOX, "lonlat")
    got = bbox_answer(demo_root, collection, LON_LAT_BOX)
    assert_exact(got, inside, unsure, f"{collection} bbox={LON_LAT_BOX}")
    # the same box in EPSG:4326 (latitude first) answers the same
    x0, y0, x1, y1 = LON_LAT_BOX
    same = bbox_answer(demo_root, collection, (y0, x0, y1, x1), **{"bbox-crs": EPSG + "4326"})
    assert same == got
    assert bbox_answer(demo_root, collection, LON_LAT_BOX, **{"bbox-crs": CRS84}) == got


def test_bbox_with_a_property_filter_is_exact(demo_root):
    inside, unsure = oracle(
        demo_root, "105", LON_LAT_BOX, "lonlat", keep=lambda p: p.get("Fartsgrense") == 80
    )
    got = bbox_answer(demo_root, "105", LON_LAT_BOX, Fartsgrense=80)
    assert_exact(got, inside, unsure, "105 Fartsgrense=80")


@pytest.mark.parametrize("collection", ["105", "vegnett"])
def test_utm_bbox_crs_is_exact(demo_root, collection):
    crs = EPSG + "25833"
    inside, unsure = oracle(demo_root, collection, UTM_BOX, "utm", crs=crs)
    got = bbox_answer(demo_root, collection, UTM_BOX, **{"bbox-crs": crs})
    assert_exact(got, inside, unsure, f"{collection} bbox-crs=25833")


def v2_all(root, path, **params):
    """Every item of a v2 list (following metadata.neste)."""
    r = requests.get(root + "/nvdb/api/v2" + path, params={**params, "antall": PAGE}, timeout=120)
    items = []
    while True:
        assert r.status_code == 200, r.text[:300]
        page = r.json()
        if page["metadata"]["returnert"] == 0:
            return items
        items.extend(page["objekter"])
        r = requests.get(page["metadata"]["neste"]["href"], timeout=120)


@pytest.mark.parametrize(
    "srid,rect,kind,crs",
    [("4326", LON_LAT_BOX, "lonlat", None), ("25833", UTM_BOX, "utm", EPSG + "25833")],
)
def test_v2_kartutsnitt_is_exact(demo_root, srid, rect, kind, crs):
    kartutsnitt = ",".join(map(str, rect))
    inside, unsure = oracle(demo_root, "105", rect, kind, crs=crs)
    objects = v2_all(demo_root, "/vegobjekter/105", kartutsnitt=kartutsnitt, srid=srid)
    got = {str(o["id"]) for o in objects}
    assert_exact(got, inside, unsure, f"v2 vegobjekter kartutsnitt srid={srid}")
    stats = requests.get(
        demo_root + "/nvdb/api/v2/vegobjekter/105/statistikk",
        params={"kartutsnitt": kartutsnitt, "srid": srid},
        timeout=120,
    ).json()
    assert stats["antall"] == len(got)
    inside, unsure = oracle(demo_root, "vegnett", rect, kind, crs=crs)
    links = v2_all(demo_root, "/vegnett/lenker", kartutsnitt=kartutsnitt, srid=srid)
    got = {link["kortform"] for link in links}
    assert_exact(got, inside, unsure, f"v2 vegnett/lenker kartutsnitt srid={srid}")
