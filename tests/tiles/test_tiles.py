"""Vector tiles of the real binary decoded by an independent MVT decoder (`mapbox-vector-tile`
from PyPI) and compared with an oracle computed here from the read API's own answers: every
link segment (`/vegnett/lenker`) and object (`/vegobjekter/{type}`, `inkluder=geometri`) in
WGS84, projected to Web Mercator with the textbook formulas, and tested against the buffered
tile with shapely. The generalisation rules the oracle applies are the ones README "Map and
tiles" states. Features within a hair of a rule's threshold (the tile edge, the collapse size)
are left out of the comparison both ways, and the test asserts they are few."""

import math
import random

import mapbox_vector_tile
import pytest
import requests
from shapely import wkt as shapely_wkt
from shapely.geometry import box, LineString, Point
from shapely.ops import transform
from shapely.validation import make_valid

EXTENT = 4096
BUFFER = 64
TOLERANCE = 4  # Douglas-Peucker tolerance in layer units (README)
CATEGORY_MIN_ZOOM = {"E": 0, "R": 0, "F": 8, "K": 10, "P": 12}
DETAIL_ZOOM = 10  # object layers: points and sub-pixel objects from this zoom
PIXEL = 16


def world(lon, lat):
    lat = max(min(lat, 85.0511287798), -85.0511287798)
    r = math.radians(lat)
    return (lon + 180.0) / 360.0, (1.0 - math.log(math.tan(r) + 1.0 / math.cos(r)) / math.pi) / 2.0


def tile_of(lon, lat, z):
    x, y = world(lon, lat)
    n = 2 ** z
    return int(x * n), int(y * n)


def to_tile(geom, z, x, y):
    n = 2 ** z

    def f(lons, lats, zs=None):
        xs, ys = [], []
        for lon, lat in zip(lons, lats):
            wx, wy = world(lon, lat)
            xs.append((wx * n - x) * EXTENT)
            ys.append((wy * n - y) * EXTENT)
        return xs, ys

    return transform(f, geom)  # noqa


RECT = box(-BUFFER, -BUFFER, EXTENT + BUFFER, EXTENT + BUFFER)
RECT_OUT = box(-BUFFER - 0.05, -BUFFER - 0.05, EXTENT + BUFFER + 0.05, EXTENT + BUFFER + 0.05)
RECT_IN = box(-BUFFER + 0.05, -BUFFER + 0.05, EXTENT + BUFFER - 0.05, EXTENT + BUFFER - 0.05)


def fetch_tile(server, layer, z, x, y):
    r = requests.get(f"{server.root}/tiles/{layer}/{z}/{x}/{y}.mvt", timeout=60)
    if r.status_code == 204:
        assert r.content == b""
        return []
    assert r.status_code == 200, r.text[:300]
    assert r.headers["content-type"] == "application/vnd.mapbox-vector-tile"
    assert "max-age" in r.headers["cache-control"] and r.headers["etag"]
    decoded = mapbox_vector_tile.decode(r.content, default_options={"y_coord_down": True})
    assert set(decoded) == {str(layer)}, decoded.keys()
    d = decoded[str(layer)]
    assert d["extent"] == EXTENT
    return d["features"]


def coords_of(geometry):
    t, c = geometry["type"], geometry["coordinates"]
    if t == "Point":
        return [c]
    if t in ("LineString", "MultiPoint"):
        return c
    if t in ("MultiLineString", "Polygon"):
        return [p for part in c for p in part]
    if t == "MultiPolygon":
        return [p for poly in c for ring in poly for p in ring]
    raise AssertionError(t)


def check_coordinates(features):
    for f in features:
        for px, py in coords_of(f["geometry"]):
            assert -BUFFER <= px <= EXTENT + BUFFER and -BUFFER <= py <= EXTENT + BUFFER, (px, py)


@pytest.fixture(scope="module")
def links(server):
    rows = server.get_all("/vegnett/lenker", srid=4326, antall=1000)
    assert len(rows) > 1000
    for r in rows:
        r["shape"] = shapely_wkt.loads(r["geometri"]["wkt"])
    return rows


def sample_tiles(items, zooms, per_zoom, seed):
    rnd = random.Random(seed)
    out = set()
    for z in zooms:
        for item in rnd.sample(items, per_zoom):
            c = item["shape"].representative_point()
            out.add((z,) + tile_of(c.x, c.y, z))
    return sorted(out)


def network_expected(links, z, x, y):
    sure, unsure = {}, set()
    for r in links:
        cat = r["vegreferanse"]["kategori"]
        if z < CATEGORY_MIN_ZOOM.get(cat, 12):
            continue
        if z < 14 and (r["topologinivå"] != 0 or r["konnekteringslenke"]):
            continue
        key = (r["veglenkeid"], round(r["startposisjon"], 6), round(r["sluttposisjon"], 6))
        t = to_tile(r["shape"], z, x, y)
        if not t.intersects(RECT_OUT):
            continue
        inside = t.intersection(RECT)
        a, b, c, d = inside.bounds if not inside.is_empty else (0, 0, 0, 0)
        if not t.intersects(RECT_IN) or max(c - a, d - b) < 2.0:
            unsure.add(key)  # at the edge, or collapsing to (almost) a point on the grid
            continue
        sure[key] = (r, t)
    return sure, unsure


def test_network_tiles_equal_the_brute_force_oracle(server, links):
    tiles = sample_tiles(links, [8, 11, 12, 14, 16], 4, seed=15)
    compared = 0
    for z, x, y in tiles:
        features = fetch_tile(server, "vegnett", z, x, y)
        check_coordinates(features)
        got = {}
        for f in features:
            p = f["properties"]
            got[(p["veglenke"], round(p["fra"], 6), round(p["til"], 6))] = f
        sure, unsure = network_expected(links, z, x, y)
        assert len(unsure) <= max(3, len(sure) // 10), (z, x, y, len(unsure), len(sure))
        missing = set(sure) - set(got)
        extra = set(got) - set(sure) - unsure
        assert not missing and not extra, f"{z}/{x}/{y}: missing {sorted(missing)[:5]} extra {sorted(extra)[:5]}"
        for key, (row, shape) in sure.items():
            p = got[key]["properties"]
            ref = row["vegreferanse"]
            assert p["vegreferanse"] == ref["kortform"], (p, ref)
            assert p["vegkategori"] == ref["kategori"] and p["vegnummer"] == ref["nummer"]
            assert p["kommune"] == row["kommune"] and p["topologinivå"] == row["topologinivå"]
            # every drawn vertex lies on the link within the simplification tolerance + rounding
            for px, py in coords_of(got[key]["geometry"]):
                assert shape.distance(Point(px, py)) <= TOLERANCE + 1.0, (key, px, py)
            compared += 1
    assert compared > 200, compared


def objects_expected(objects, z, x, y):
    sure, unsure = {}, set()
    for o in objects:
        t = to_tile(o["shape"], z, x, y)
        if "Polygon" in t.geom_type:
            t = make_valid(t)  # municipality polygons may touch themselves
        if not t.intersects(RECT_OUT):
            continue
        if t.geom_type == "Point":
            if z < DETAIL_ZOOM:
                continue
        else:
            a, b, c, d = t.bounds
            size = max(c - a, d - b)
            if z < DETAIL_ZOOM and size < PIXEL - 0.5:
                continue
            if z < DETAIL_ZOOM and size < PIXEL + 0.5:
                unsure.add(o["id"])
                continue
        inside = t.intersection(RECT)
        a, b, c, d = inside.bounds if not inside.is_empty else (0, 0, 0, 0)
        small = t.geom_type != "Point" and max(c - a, d - b) < 2.0
        if not t.intersects(RECT_IN) or small:
            unsure.add(o["id"])
            continue
        sure[o["id"]] = (o, t)
    return sure, unsure


@pytest.mark.parametrize("type_id", [105, 946, 95])
def test_object_tiles_equal_the_brute_force_oracle(server, type_id):
    objects = server.get_all(f"/vegobjekter/{type_id}", srid=4326, inkluder="geometri,egenskaper",
                             antall=1000)
    objects = [o for o in objects if o.get("geometri")]
    assert objects, type_id
    for o in objects:
        o["shape"] = shapely_wkt.loads(o["geometri"]["wkt"])
    tiles = sample_tiles(objects, [7, 9, 12, 15], min(4, len(objects)), seed=type_id)
    compared = 0
    for z, x, y in tiles:
        features = fetch_tile(server, type_id, z, x, y)
        check_coordinates(features)
        got = {f["id"]: f for f in features}
        sure, unsure = objects_expected(objects, z, x, y)
        assert len(unsure) <= max(3, len(sure) // 10), (z, x, y, len(unsure), len(sure))
        missing = set(sure) - set(got)
        extra = set(got) - set(sure) - unsure
        assert not missing and not extra, f"{type_id} {z}/{x}/{y}: missing {sorted(missing)[:5]} extra {sorted(extra)[:5]}"
        for oid, (o, shape) in sure.items():
            p = got[oid]["properties"]
            assert p["id"] == oid and p["type"] == type_id
            # decoded properties: every value property of the API answer, by name
            for e in o.get("egenskaper", []):
                if e["navn"] in p:
                    assert p[e["navn"]] == e["verdi"], (oid, e, p[e["navn"]])
                else:
                    assert "verdi" not in e or e["datatype"] in (17, 18, 19), (oid, e)
            if shape.geom_type != "Point":
                for px, py in coords_of(got[oid]["geometry"]):
                    # on the geometry (lines) or on/in the clipped polygon's boundary region
                    assert shape.distance(Point(px, py)) <= TOLERANCE + 1.0 or \
                        shape.buffer(TOLERANCE + 1.0).intersection(RECT).buffer(1.0).contains(Point(px, py)), (oid, px, py)
            compared += 1
    assert compared > 0


@pytest.mark.parametrize(
    "path",
    [
        "/tiles/vegnett/23/0/0.mvt",
        "/tiles/vegnett/3/8/0.mvt",
        "/tiles/vegnett/3/0/8.mvt",
        "/tiles/vegnett/-1/0/0.mvt",
        "/tiles/vegnett/x/0/0.mvt",
        "/tiles/vegnett/3/0/0.png",
        "/tiles/ukjent/3/0/0.mvt",
        "/tiles/999999/3/0/0.mvt",
        "/tiles/vegnett.txt",
    ],
)
def test_bad_tiles_are_400_in_the_error_shape(server, path):
    r = requests.get(server.root + path, timeout=10)
    assert r.status_code == 400, (path, r.status_code, r.text)
    body = r.json()
    assert isinstance(body, list) and len(body) == 1
    assert set(body[0]) == {"code", "message", "help_url"} and body[0]["message"]


def test_empty_tile_is_204_and_tilejson_describes_layers(server):
    # the middle of the Pacific has no road
    r = requests.get(server.root + "/tiles/vegnett/10/0/512.mvt", timeout=10)
    assert r.status_code == 204 and r.content == b""
    listing = requests.get(server.root + "/tiles", timeout=10).json()["lag"]
    ids = [l["id"] for l in listing]
    assert ids[0] == "vegnett" and "105" in ids
    for l in listing[:3]:
        tj = requests.get(l["tilejson"], timeout=30).json()
        assert tj["tilejson"] == "3.0.0"
        assert tj["tiles"][0].endswith(f"/tiles/{l['id']}/{{z}}/{{x}}/{{y}}.mvt")
        assert tj["vector_layers"][0]["id"] == l["id"]
        w, s, e, n = tj["bounds"]
        assert 4 < w < e < 32 and 57 < s < n < 72
    by_name = requests.get(server.root + "/tiles/fartsgrense.json", timeout=10).json()
    assert by_name["vector_layers"][0]["id"] == "105"
    # conditional requests: the ETag of a tile answers 304
    first = requests.get(server.root + "/tiles/vegnett/0/0/0.mvt", timeout=30)
    assert first.status_code == 200
    again = requests.get(server.root + "/tiles/vegnett/0/0/0.mvt",
                         headers={"If-None-Match": first.headers["etag"]}, timeout=30)
    assert again.status_code == 304
    # gzip as the request stack does when asked
    gz = requests.get(server.root + "/tiles/vegnett/0/0/0.mvt",
                      headers={"Accept-Encoding": "gzip"}, timeout=30)
    assert gz.headers.get("content-encoding") == "gzip"
