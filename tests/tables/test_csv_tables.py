"""The CSV answers read by Python's own `csv` module (RFC 4180 quoting) equal the JSON answers of
the same requests, on the demo: the grouped and network statistics (a KOSTRA-style table: kommunal
road per kommune adds up to the network statistics of kommunal road), every type's statistics, and
an object list whose texts hold commas and quotes."""

import csv
import io
import json
import urllib.request


def get(url, accept="application/json"):
    req = urllib.request.Request(url, headers={"Accept": accept})
    with urllib.request.urlopen(req, timeout=60) as r:
        return r.headers.get("Content-Type"), r.read().decode("utf-8")


def table(url):
    ctype, text = get(url, "text/csv")
    assert ctype == "text/csv;charset=utf-8", ctype
    assert text.endswith("\r\n")
    return list(csv.DictReader(io.StringIO(text, newline="")))


def cell(value):
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return value if isinstance(value, str) else json.dumps(value)


def flatten(row, prefix=""):
    out = {}
    for k, v in row.items():
        name = prefix + k
        if isinstance(v, dict):
            out.update(flatten(v, name + "."))
        else:
            out[name] = cell(v)
    return out


def test_kostra_style_table_adds_up_to_the_network_statistics(demo_root):
    rows = table(demo_root + "/vegnett/statistikk/gruppert.csv?gruppering=kommune&vegreferanse=K")
    assert len(rows) > 30
    assert list(rows[0]) == ["kommune", "antall", "strekningslengde"]
    kommuner = [int(r["kommune"]) for r in rows]
    assert kommuner == sorted(kommuner)
    _, plain = get(demo_root + "/vegnett/statistikk?vegreferanse=K")
    plain = json.loads(plain)
    assert sum(int(r["strekningslengde"]) for r in rows) == plain["strekningslengde"]
    assert sum(int(r["antall"]) for r in rows) == plain["antall"]


def test_csv_tables_are_the_json_rows(demo_root):
    for path in [
        "/vegobjekter/105/statistikk/gruppert?gruppering=kommune,egenskap(2021)&vegreferanse=K",
        "/vegnett/statistikk/gruppert?gruppering=kontraktsomrade,vegkategori",
        "/vegobjekter/statistikk?kommune=5001",
    ]:
        rows = table(demo_root + path)
        _, text = get(demo_root + path)
        want = [flatten(r) for r in json.loads(text)]
        assert rows == want, path


def test_object_list_csv_is_one_flat_row_per_object(demo_root):
    rows = table(demo_root + "/vegobjekter/96?antall=200")
    _, text = get(demo_root + "/vegobjekter/96?antall=200&inkluder=egenskaper,metadata")
    objects = json.loads(text)["objekter"]
    assert [int(r["id"]) for r in rows] == [o["id"] for o in objects]
    commas = 0
    for r, o in zip(rows, objects):
        assert int(r["versjon"]) == o["metadata"]["versjon"]
        for p in o["egenskaper"]:
            if p["navn"] in r:
                assert r[p["navn"]] == cell(p["verdi"]), (o["id"], p["navn"])
                commas += "," in r[p["navn"]]
    assert commas > 0, "some text holds a comma (quoted in the file)"
