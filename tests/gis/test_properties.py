"""`properties` (OGC API Features Part 6, Property Selection) with OWSLib as the client, on the
demo snapshot.

Oracle: the same page fetched by OWSLib without `properties`. With `properties`, the page holds
the same features in the same order with the same geometry, and each feature's properties are
its unselected properties whose name is selected. An unknown name is a 400 in the OGC shape.
"""

import pytest
import requests
from owslib.ogcapi.features import Features

PAGE = 2000


def unselected(root, collection, **params):
    return Features(root + "/ogc").collection_items(collection, limit=PAGE, **params)


@pytest.mark.parametrize(
    "collection,names",
    [
        ("105", ["Fartsgrense"]),
        ("105", ["nvdbId", "Fartsgrense_id", "versjon"]),
        ("105", []),
        ("vegnett", ["kortform", "vegsystemreferanse", "kommune"]),
    ],
)
def test_selected_properties_are_the_unselected_ones_restricted(demo_root, collection, names):
    base = unselected(demo_root, collection)
    got = unselected(demo_root, collection, properties=",".join(names))
    assert got["numberMatched"] == base["numberMatched"]
    assert len(got["features"]) == len(base["features"]) > 0
    for f, b in zip(got["features"], base["features"]):
        assert f["id"] == b["id"]
        assert f["geometry"] == b["geometry"]
        want = {k: v for k, v in b["properties"].items() if k in names}
        assert f["properties"] == want
    if names:
        # the names are carried where the unselected features carry them
        assert any(f["properties"] for f in got["features"])


def test_unknown_property_is_400(demo_root):
    r = requests.get(
        demo_root + "/ogc/collections/105/items",
        params={"properties": "Fartsgrense,Fartsgrens"},
        timeout=60,
    )
    assert r.status_code == 400
    body = r.json()
    assert body["code"] == "InvalidParameterValue"
    assert "Fartsgrens" in body["description"]
