"""pnvdb 0.4.0 (PyPI, source: Acurus/pnvdb) against the real vegdb server.

Every public method and property of `Nvdb`, `Objekt`, `ObjektType`, `Vegreferanse`, `Posisjon` and
`Area` is called unchanged (only the base URL is set, see conftest.py) and its result is compared
with the same data fetched by plain HTTP or with an invariant of the data.
"""

import math
import re
import xml.etree.ElementTree as ET

import pnvdb
import pytest
from pnvdb import models

SPEED_LIMIT = 105  # Fartsgrense: a line type present in every dataset
SIGN_POINT, SIGN_PLATE = 95, 96  # Skiltpunkt (parent) and Skiltplate (child)
MUNICIPALITY = 5001  # Trondheim: in the tiny dataset and in pnvdb's own KOMMUNER table


def first_object(server, type_id, **filters):
    page = server.get(f"/vegobjekter/{type_id}", antall=1, inkluder="alle", **filters)
    assert page["objekter"], f"no object of type {type_id} with {filters}"
    return page["objekter"][0]


def point_ref(ref, meter):
    """The fully qualified point road reference of a link's road reference at `meter`."""
    return "{:02d}{:02d}{}{}{}hp{}m{}".format(
        ref["fylke"], ref["kommune"], ref["kategori"], ref["status"], ref["nummer"], ref["hp"], meter
    )


def numbers(wkt):
    return [float(v) for v in re.findall(r"-?\d+(?:\.\d+)?", wkt)]


# Nvdb.status


def test_status_is_the_service_status(nvdb, server):
    status = nvdb.status()
    assert status == server.get("/status")
    assert set(status) >= {"datakatalog", "datagrunnlag"}
    assert re.fullmatch(r"\d+\.\d+", status["datakatalog"]["versjon"])
    assert isinstance(status["datakatalog"]["id"], int)


# Nvdb.objekt_typer / objekt_type and every ObjektType member


def test_objekt_typer_lists_the_whole_catalogue(nvdb, server):
    types = nvdb.objekt_typer()
    expected = server.get("/vegobjekttyper")
    assert [t.objekt_type for t in types] == [t["id"] for t in expected]
    assert all(isinstance(t, models.ObjektType) for t in types)
    by_id = {t["id"]: t for t in expected}
    for t in types:
        assert t.metadata["navn"] == by_id[t.objekt_type]["navn"]
        assert repr(t) == f"ObjektType({t.objekt_type})"


def test_objekt_type_members_match_the_catalogue(nvdb, server):
    expected = server.get(f"/vegobjekttyper/{SPEED_LIMIT}")
    t = nvdb.objekt_type(SPEED_LIMIT)
    meta = t.metadata
    assert meta["id"] == SPEED_LIMIT and meta["navn"] == expected["navn"]
    for hidden in ("egenskapstyper", "relasjonstyper", "styringsparametere"):
        assert hidden not in meta
    assert t.egenskapstyper == expected["egenskapstyper"]
    first = expected["egenskapstyper"][0]
    assert t.egenskapstype(first["id"]) == first
    assert t.egenskapstype(-1) is None
    assert t.relasjonstyper == expected["relasjonstyper"]
    assert t.styringsparametere == expected["styringsparametere"]
    assert t.i_objekt_lista() == ("objektliste_dato" in expected)
    assert t.dump() == expected
    assert t.dump("json") == expected


def test_objekt_type_by_name(nvdb, server):
    name = server.get(f"/vegobjekttyper/{SPEED_LIMIT}")["navn"]
    assert nvdb.objekt_type(name).objekt_type == SPEED_LIMIT
    assert nvdb.objekt_type(name.upper()).objekt_type == SPEED_LIMIT


def test_objekt_type_parents_and_children(nvdb, server):
    plate = nvdb.objekt_type(SIGN_PLATE)
    point = nvdb.objekt_type(SIGN_POINT)
    expected_parents = [r["type"]["id"] for r in server.get(f"/vegobjekttyper/{SIGN_PLATE}")["relasjonstyper"]["foreldre"]]
    expected_children = [r["type"]["id"] for r in server.get(f"/vegobjekttyper/{SIGN_POINT}")["relasjonstyper"]["barn"]]
    assert [p.objekt_type for p in plate.foreldre] == expected_parents
    assert [c.objekt_type for c in point.barn] == expected_children
    assert SIGN_POINT in expected_parents and SIGN_PLATE in expected_children


def test_objekt_type_dump_xml(nvdb, server):
    xml = nvdb.objekt_type(SPEED_LIMIT).dump("xml")
    root = ET.fromstring(xml)
    texts = [e.text for e in root.iter()]
    assert str(SPEED_LIMIT) in texts
    assert server.get(f"/vegobjekttyper/{SPEED_LIMIT}")["navn"] in texts


# Nvdb.objekt and every Objekt member


def test_objekt_members_match_the_object(nvdb, server):
    expected = first_object(server, SPEED_LIMIT, kommune=MUNICIPALITY)
    single = server.get(f"/vegobjekter/{SPEED_LIMIT}/{expected['id']}", inkludergeometri="utledet", inkluder="alle")
    o = nvdb.objekt(SPEED_LIMIT, expected["id"])
    assert repr(o) == f"Objekt({SPEED_LIMIT}, {expected['id']})"
    assert o.metadata == expected["metadata"]
    assert o.metadata["type"]["id"] == SPEED_LIMIT
    assert o.egenskaper == expected["egenskaper"]
    prop = expected["egenskaper"][0]
    assert o.egenskap(prop["id"]) == prop
    assert o.egenskap(-1) is None
    assert o.geometri == expected["geometri"]["wkt"]
    assert o.egengeometri == expected["geometri"].get("egengeometri")
    assert o.vegreferanser == [r["kortform"] for r in expected["lokasjon"]["vegreferanser"]]
    assert [k["nummer"] for k in o.kommuner] == expected["lokasjon"]["kommuner"]
    assert MUNICIPALITY in expected["lokasjon"]["kommuner"]
    assert o.dump() == single and o.dump("json") == single


def test_objekt_vegsegmenter(nvdb, server):
    expected = first_object(server, SPEED_LIMIT, kommune=MUNICIPALITY)
    o = nvdb.objekt(SPEED_LIMIT, expected["id"])
    segments = o.vegsegmenter
    assert segments, "inkluder=alle on a single object includes vegsegmenter"
    assert segments == server.get(f"/vegobjekter/{SPEED_LIMIT}/{expected['id']}", inkluder="vegsegmenter")["vegsegmenter"]
    placements = {p["veglenkeid"] for p in expected["lokasjon"]["stedfestinger"]}
    for s in segments:
        assert s["stedfesting"]["veglenkeid"] in placements
        assert 0 <= s["stedfesting"]["fra_posisjon"] <= s["stedfesting"]["til_posisjon"] <= 1
        assert s["geometri"]["wkt"].startswith("LINESTRING")
    total = sum(s["strekningslengde"] for s in segments)
    assert math.isclose(total, expected["lokasjon"]["strekningslengde"], abs_tol=len(segments))


def test_objekt_by_name(nvdb, server):
    expected = first_object(server, SPEED_LIMIT)
    name = server.get(f"/vegobjekttyper/{SPEED_LIMIT}")["navn"]
    o = nvdb.objekt(name, expected["id"])
    assert o.objekt_type == SPEED_LIMIT
    assert o.metadata == expected["metadata"]


def test_objekt_parents_and_children_round_trip(nvdb, server):
    plate = first_object(server, SIGN_PLATE)
    parent_ids = [i for r in plate["relasjoner"]["foreldre"] for i in r["vegobjekter"]]
    assert parent_ids, "a Skiltplate has its Skiltpunkt as parent"
    o = nvdb.objekt(SIGN_PLATE, plate["id"])
    parents = o.foreldre
    assert [(p.objekt_type, p.nvdb_id) for p in parents] == [(SIGN_POINT, i) for i in parent_ids]
    children = parents[0].barn
    assert (SIGN_PLATE, plate["id"]) in [(c.objekt_type, c.nvdb_id) for c in children]
    assert parents[0].metadata["type"]["id"] == SIGN_POINT


def test_objekt_dump_xml(nvdb, server):
    expected = first_object(server, SPEED_LIMIT)
    xml = nvdb.objekt(SPEED_LIMIT, expected["id"]).dump("xml")
    root = ET.fromstring(xml)
    assert str(expected["id"]) in [e.text for e in root.iter()]


# Nvdb.hent


def test_hent_yields_every_object_over_pages(nvdb, server):
    expected = [o["id"] for o in server.get_all(f"/vegobjekter/{SPEED_LIMIT}", antall=1000)]
    assert len(expected) > 1000, "needs more than one page of 1000"
    got = nvdb.hent(SPEED_LIMIT)
    objects = list(got)
    assert [o.nvdb_id for o in objects] == expected
    assert server.get(f"/vegobjekter/{SPEED_LIMIT}/statistikk")["antall"] == len(objects)
    # Objects from a list carry their data (inkluder=alle): no further request needed.
    assert all(o.metadata["type"]["id"] == SPEED_LIMIT for o in objects[:50])


def test_hent_with_criteria(nvdb, server):
    props = first_object(server, SPEED_LIMIT, kommune=MUNICIPALITY)["egenskaper"]
    enum_id = next(p for p in props if p["id"] == 2021)  # the speed limit value
    criteria = {"kommune": str(MUNICIPALITY), "egenskap": f"2021={enum_id['enum_id']}"}
    objects = list(nvdb.hent(SPEED_LIMIT, kriterie=criteria))
    expected = server.get_all(f"/vegobjekter/{SPEED_LIMIT}", **criteria)
    assert [o.nvdb_id for o in objects] == [o["id"] for o in expected]
    for o in objects:
        assert o.egenskap(2021)["enum_id"] == enum_id["enum_id"]
        assert MUNICIPALITY in o.data["lokasjon"]["kommuner"]


def test_hent_without_results_is_none(nvdb):
    assert nvdb.hent(SPEED_LIMIT, kriterie={"kommune": "301"}) is None  # Oslo: not in the dataset


# Nvdb.vegreferanse and every Vegreferanse member; Nvdb.posisjon and Posisjon.vegreferanse


def a_link(server):
    link = server.get("/vegnett/lenker", kommune=MUNICIPALITY, antall=1)["objekter"][0]
    ref = link["vegreferanse"]
    meter = (ref["fra_meter"] + ref["til_meter"]) // 2
    return link, ref, meter


def test_vegreferanse_members(nvdb, server):
    link, ref, meter = a_link(server)
    text = point_ref(ref, meter)
    v = nvdb.vegreferanse(text)
    assert isinstance(v, models.Vegreferanse) and repr(v) == text
    assert (v.fylke, v.kommune, v.kategori, v.status, v.nummer, v.hp, v.meter) == (
        ref["fylke"], ref["kommune"], ref["kategori"], ref["status"], ref["nummer"], ref["hp"], meter
    )
    assert v.geometri.startswith("POINT")
    x, y, z = v.xyz
    assert [float(x), float(y)] == numbers(v.geometri)[:2]
    xs, ys = numbers(link["geometri"]["wkt"])[0::3], numbers(link["geometri"]["wkt"])[1::3]
    assert min(xs) - 1 <= float(x) <= max(xs) + 1 and min(ys) - 1 <= float(y) <= max(ys) + 1
    many = nvdb.vegreferanse([text, point_ref(ref, ref["fra_meter"])])
    assert [w.meter for w in many] == [meter, ref["fra_meter"]]


def test_posisjon_finds_the_road_reference(nvdb, server):
    _, ref, meter = a_link(server)
    text = point_ref(ref, meter)
    x, y = numbers(server.get("/veg", vegreferanse=text)["geometri"]["wkt"])[:2]
    found = nvdb.posisjon(x_coordinate=x, y_coordinate=y).vegreferanse
    assert isinstance(found, models.Vegreferanse)
    assert (found.kategori, found.nummer, found.hp) == (ref["kategori"], ref["nummer"], ref["hp"])
    assert abs(found.meter - meter) <= 1
    # The same point in degrees, taken from the service's own 4326 answer.
    a, b = numbers(server.get("/veg", vegreferanse=text, srid=4326)["geometri"]["wkt"])[:2]
    lat, lon = (a, b) if 57 < a < 72 else (b, a)
    found = nvdb.posisjon(lat=lat, lon=lon).vegreferanse
    assert (found.kategori, found.nummer, found.hp) == (ref["kategori"], ref["nummer"], ref["hp"])
    assert abs(found.meter - meter) <= 1


# The area lists and every Area member


AREA_LISTS = ["regioner", "fylker", "vegavdelinger", "kommuner", "kontraktsomrader", "riksvegruter"]


@pytest.mark.parametrize("kind", AREA_LISTS)
def test_area_lists(nvdb, server, kind):
    areas = getattr(nvdb, kind)()
    expected = server.get(f"/omrader/{kind}", inkluder="alle")
    assert areas and len(areas) == len(expected)
    for area, exp in zip(areas, expected):
        assert isinstance(area, models.Area)
        meta = {k: v for k, v in exp.items() if k not in ("kartutsnitt", "senterpunkt", "vegobjekt")}
        assert area.metadata == meta
        assert area.kartutsnitt == exp.get("kartutsnitt", {}).get("wkt")
        assert area.senterpunkt == exp.get("senterpunkt", {}).get("wkt")
        # Area.objekt: the road object that represents the area, readable like any other.
        obj = area.objekt
        assert (obj.objekt_type, obj.nvdb_id) == (exp["vegobjekt"]["type"], exp["vegobjekt"]["id"])
        assert obj.metadata["type"]["id"] == exp["vegobjekt"]["type"]


# The Datafangst feature reads the catalogue version from the read API.


def test_datafangst_feature_reads_the_catalogue_version(nvdb, server):
    feature = pnvdb.Datafangst().feature(SIGN_POINT, (10.39, 63.43), "skilt")
    assert feature.properties["dataCatalogVersion"] == server.get("/status")["datakatalog"]["versjon"]
    assert feature.properties["typeId"] == SIGN_POINT
