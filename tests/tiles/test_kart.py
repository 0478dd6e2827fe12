"""The map page in headless Chromium (Debian `chromium`, driven over the DevTools protocol):
it renders road features from the tiles, and clicking a known road link — at the pixel the
map's own projection gives for a point of that link taken from the read API — fills the side
panel with the link and the road reference that `/veg` gives for the same place. The screenshot
is kept as `tests/artifacts/kart.png` (git-ignored)."""

import base64
from pathlib import Path

import requests
from shapely import wkt as shapely_wkt

from cdp import Browser
from conftest import free_port

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"


def known_link(server):
    """A long E-road link of topology level 0 and the middle point of its middle piece."""
    page = requests.get(server.api + "/vegnett/lenker", params={"srid": 4326, "antall": 1000,
                                                               "vegreferanse": "Ev6"},
                        timeout=30).json()["objekter"]
    rows = [r for r in page if r["topologinivå"] == 0 and not r["konnekteringslenke"]]
    rows.sort(key=lambda r: -shapely_wkt.loads(r["geometri"]["wkt"]).length)
    row = rows[len(rows) // 4]
    line = shapely_wkt.loads(row["geometri"]["wkt"])
    mid = line.interpolate(0.5, normalized=True)
    return row, (mid.x, mid.y)


def test_map_page_renders_and_a_click_shows_the_road_reference(server):
    row, (lon, lat) = known_link(server)
    b = Browser(free_port())
    try:
        b.send("Page.enable")
        b.send("Runtime.enable")
        b.send("Page.navigate", url=server.root + "/kart")
        b.wait_for("document.body.dataset.tiles === 'loaded'", timeout=90)
        assert int(b.eval("document.body.dataset.vegnettFeatures")) > 100
        # choose speed limits so the panel lists objects too
        b.eval("(() => { const s = document.getElementById('type'); s.value = '105';"
               " s.dispatchEvent(new Event('change')); return true; })()")
        b.eval(f"vegdbMap.jumpTo({{center: [{lon}, {lat}], zoom: 16}}); true")
        b.wait_for("vegdbMap.loaded() && vegdbMap.areTilesLoaded() && "
                   "vegdbMap.queryRenderedFeatures({layers: ['vegnett']}).length > 0", timeout=60)
        x, y = b.eval(f"(() => {{ const p = vegdbMap.project([{lon}, {lat}]);"
                      f" const r = vegdbMap.getCanvas().getBoundingClientRect();"
                      f" return [p.x + r.left, p.y + r.top]; }})()")
        b.click(x, y)
        state = b.wait_for("['ready', 'error'].includes(document.getElementById('panel').dataset.state)"
                           " && document.getElementById('panel').dataset.state", timeout=30)
        assert state == "ready", b.eval("document.getElementById('panel-hint').textContent")
        veglenke = b.eval("document.getElementById('panel-veglenke').textContent")
        vegref = b.eval("document.getElementById('panel-vegreferanse').textContent")
        strekning = b.eval("document.getElementById('panel-strekning').textContent")
        assert veglenke.endswith(f"@{row['veglenkeid']}"), (veglenke, row["veglenkeid"])
        # the road reference of the same place from /veg (independent of the page)
        pos = veglenke.split("@")[0]
        expected = requests.get(server.api + "/veg", params={"veglenke": veglenke},
                                timeout=30).json()["vegreferanse"]["kortform"]
        assert vegref == expected, (vegref, expected)
        assert strekning == row["vegreferanse"]["kortform"], (strekning, row["vegreferanse"])
        assert abs(float(pos) - 0.5) < 0.2 or row["startposisjon"] <= float(pos) <= row["sluttposisjon"]
        objects = b.eval("[...document.querySelectorAll('#panel-objects li')].map(li => li.textContent)")
        on_link = requests.get(server.api + "/vegobjekter/105", params={"veglenke": veglenke},
                               timeout=30).json()["objekter"]
        assert len(objects) == max(len(on_link), 1), (objects, on_link)
        for o in on_link:
            assert any(t.startswith(str(o["id"])) for t in objects), (o["id"], objects)
        # the picture: the clicked link highlighted among its neighbours
        b.eval(f"vegdbMap.jumpTo({{center: [{lon}, {lat}], zoom: 13}}); true")
        b.wait_for("vegdbMap.loaded() && vegdbMap.areTilesLoaded()", timeout=60)
        shot = b.send("Page.captureScreenshot", format="png")
        ARTIFACTS.mkdir(exist_ok=True)
        (ARTIFACTS / "kart.png").write_bytes(base64.b64decode(shot["data"]))
        assert (ARTIFACTS / "kart.png").stat().st_size > 10_000
    finally:
        b.close()


def test_map_assets_are_embedded(server):
    page = requests.get(server.root + "/kart", timeout=10)
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    for path in ["/kart/kart.js", "/kart/maplibre-gl.mjs", "/kart/maplibre-gl-worker.mjs",
                 "/kart/maplibre-gl.css", "/kart/LICENSE-maplibre.txt"]:
        r = requests.get(server.root + path, timeout=10)
        assert r.status_code == 200 and len(r.content) > 1000, path
    assert "MapLibre GL JS" in requests.get(server.root + "/kart/maplibre-gl.mjs", timeout=10).text[:300]
