// The map page: road network and one object type from vegdb's vector tiles (/tiles), the
// municipality polygons (type 946) as background, filters, and a side panel filled from
// /nvdb/api/v2/posisjon and /nvdb/api/v2/vegobjekter when a road is clicked.
// State for tests: window.vegdbMap (the maplibre Map), body[data-tiles] ("loaded" once road
// features are rendered), #panel[data-state] (empty, loading, ready, error).
import { Map, NavigationControl } from '/kart/maplibre-gl.mjs';

const API = '/nvdb/api/v2';
const ORIGIN = window.location.origin;
const $ = (id) => document.getElementById(id);
const CATEGORY_COLOURS = ['match', ['get', 'vegkategori'],
  'E', '#d7301f', 'R', '#fc8d59', 'F', '#4575b4', 'K', '#555555', '#aaaaaa'];

async function getJson(url) {
  const r = await fetch(url, { headers: { Accept: 'application/json' } });
  if (!r.ok) throw new Error(`${url}: ${r.status}`);
  return r.json();
}

function tileUrl(layer) {
  return `${ORIGIN}/tiles/${layer}/{z}/{x}/{y}.mvt`;
}

// [minLon, minLat, maxLon, maxLat] of a WKT polygon in lon lat
function wktBounds(wkt) {
  const nums = wkt.match(/-?\d+(\.\d+)?/g).map(Number);
  const b = [Infinity, Infinity, -Infinity, -Infinity];
  for (let i = 0; i + 1 < nums.length; i += 2) {
    b[0] = Math.min(b[0], nums[i]); b[1] = Math.min(b[1], nums[i + 1]);
    b[2] = Math.max(b[2], nums[i]); b[3] = Math.max(b[3], nums[i + 1]);
  }
  return b;
}

const layers = await getJson('/tiles');
const network = await getJson('/tiles/vegnett.json');
const hasMunicipalities = layers.lag.some((l) => l.id === '946');

for (const l of layers.lag) {
  if (l.id === 'vegnett') continue;
  const o = document.createElement('option');
  o.value = l.id; o.textContent = `${l.id} ${l.navn} (${l.antall})`;
  $('type').append(o);
}

const style = {
  version: 8,
  sources: {
    vegnett: { type: 'vector', tiles: [tileUrl('vegnett')], maxzoom: 16 },
    objekter: { type: 'vector', tiles: [tileUrl('105')], maxzoom: 16 },
  },
  layers: [{ id: 'bakgrunn', type: 'background', paint: { 'background-color': '#dfe7ee' } }],
};
if (hasMunicipalities) {
  style.sources.kommuner = { type: 'vector', tiles: [tileUrl('946')], maxzoom: 12 };
  style.layers.push(
    { id: 'kommune-flate', type: 'fill', source: 'kommuner', 'source-layer': '946',
      paint: { 'fill-color': '#fbfaf6' } },
    { id: 'kommune-valgt', type: 'fill', source: 'kommuner', 'source-layer': '946',
      filter: ['==', ['get', 'Kommunenummer'], -1], paint: { 'fill-color': '#fff3c4' } },
    { id: 'kommune-grense', type: 'line', source: 'kommuner', 'source-layer': '946',
      paint: { 'line-color': '#8a8fa0', 'line-width': 1, 'line-dasharray': [3, 2] } },
  );
}
style.layers.push(
  { id: 'vegnett', type: 'line', source: 'vegnett', 'source-layer': 'vegnett',
    layout: { 'line-cap': 'round', 'line-join': 'round' },
    paint: { 'line-color': CATEGORY_COLOURS,
      'line-width': ['interpolate', ['linear'], ['zoom'], 6, 1, 12, 2.5, 16, 6] } },
  { id: 'vegnett-valgt', type: 'line', source: 'vegnett', 'source-layer': 'vegnett',
    filter: ['==', ['get', 'veglenke'], -1],
    paint: { 'line-color': '#00e5ff', 'line-width': 8, 'line-opacity': 0.7 } },
  { id: 'objekt-flate', type: 'fill', source: 'objekter', 'source-layer': '105',
    filter: ['==', ['geometry-type'], 'Polygon'], layout: { visibility: 'none' },
    paint: { 'fill-color': '#1a9850', 'fill-opacity': 0.3 } },
  { id: 'objekt-linje', type: 'line', source: 'objekter', 'source-layer': '105',
    filter: ['==', ['geometry-type'], 'LineString'], layout: { visibility: 'none' },
    paint: { 'line-color': '#1a9850', 'line-width': 3, 'line-offset': 4 } },
  { id: 'objekt-punkt', type: 'circle', source: 'objekter', 'source-layer': '105',
    filter: ['==', ['geometry-type'], 'Point'], layout: { visibility: 'none' },
    paint: { 'circle-color': '#1a9850', 'circle-radius': 4, 'circle-stroke-color': '#fff',
      'circle-stroke-width': 1 } },
);

const map = new Map({
  container: 'map',
  style,
  bounds: network.bounds,
  fitBoundsOptions: { padding: 20 },
  attributionControl: false,
});
map.addControl(new NavigationControl(), 'bottom-left');
window.vegdbMap = map;

map.on('idle', () => {
  const n = map.queryRenderedFeatures({ layers: ['vegnett'] }).length;
  document.body.dataset.vegnettFeatures = String(n);
  if (n > 0) document.body.dataset.tiles = 'loaded';
});

// --- filters -------------------------------------------------------------------------------
const OBJECT_LAYERS = ['objekt-flate', 'objekt-linje', 'objekt-punkt'];
const GEOMETRY = { 'objekt-flate': 'Polygon', 'objekt-linje': 'LineString', 'objekt-punkt': 'Point' };
let objectFields = {};

function applyObjectFilter() {
  const prop = $('prop').value;
  const value = $('value').value.trim();
  for (const id of OBJECT_LAYERS) {
    const f = ['all', ['==', ['geometry-type'], GEOMETRY[id]]];
    if (prop && value) f.push(['==', ['to-string', ['get', prop]], value]);
    map.setFilter(id, f);
  }
}

async function chooseType(type) {
  const visible = type ? 'visible' : 'none';
  objectFields = {};
  $('prop').replaceChildren(new Option('–', ''));
  if (type) {
    const tj = await getJson(`/tiles/${type}.json`);
    objectFields = tj.vector_layers[0].fields;
    for (const name of Object.keys(objectFields)) $('prop').append(new Option(name, name));
    // the source-layer of a style layer is fixed: replace the three layers for the new type
    const src = map.getSource('objekter');
    src.setTiles([tileUrl(type)]);
    for (const id of OBJECT_LAYERS) {
      const def = map.getStyle().layers.find((l) => l.id === id);
      map.removeLayer(id);
      map.addLayer({ ...def, 'source-layer': type });
    }
  }
  for (const id of OBJECT_LAYERS) map.setLayoutProperty(id, 'visibility', visible);
  applyObjectFilter();
}

$('type').addEventListener('change', (e) => chooseType(e.target.value));
$('prop').addEventListener('change', applyObjectFilter);
$('value').addEventListener('input', applyObjectFilter);

const municipalities = await getJson(`${API}/omrader/kommuner?inkluder=kartutsnitt&srid=4326`);
const extents = {};
const inNetwork = new Set();
for (const m of municipalities) {
  if (!m.kartutsnitt) continue;
  extents[m.nummer] = wktBounds(m.kartutsnitt.wkt);
  const b = extents[m.nummer];
  const n = network.bounds;
  if (b[0] <= n[2] && b[2] >= n[0] && b[1] <= n[3] && b[3] >= n[1]) inNetwork.add(m.nummer);
}
for (const m of municipalities.filter((m) => inNetwork.has(m.nummer))) {
  $('kommune').append(new Option(`${m.nummer} ${m.navn}`, m.nummer));
}
$('kommune').addEventListener('change', (e) => {
  const k = Number(e.target.value);
  map.setFilter('vegnett', k ? ['==', ['get', 'kommune'], k] : null);
  if (hasMunicipalities) map.setFilter('kommune-valgt', ['==', ['get', 'Kommunenummer'], k || -1]);
  if (k && extents[k]) map.fitBounds(extents[k], { padding: 20 });
});

// --- click a road --------------------------------------------------------------------------
function text(id, value) { $(id).textContent = value; }

async function showRoad(e) {
  const box = [[e.point.x - 4, e.point.y - 4], [e.point.x + 4, e.point.y + 4]];
  const hits = map.queryRenderedFeatures(box, { layers: ['vegnett'] });
  if (hits.length === 0) return;
  const f = hits[0].properties;
  const panel = $('panel');
  panel.dataset.state = 'loading';
  map.setFilter('vegnett-valgt', ['==', ['get', 'veglenke'], f.veglenke]);
  text('panel-hint', '');
  text('panel-strekning', f.vegreferanse);
  text('panel-kommune', String(f.kommune));
  $('panel-objects').replaceChildren();
  try {
    const { lng, lat } = e.lngLat;
    const found = await getJson(
      `${API}/posisjon?lat=${lat}&lon=${lng}&maks_avstand=50&maks_antall=10`);
    // the position on the clicked link (the nearest link may be another one at a crossing)
    const here = found.find((p) => p.veglenke && p.veglenke.id === f.veglenke) || found[0];
    if (!here) throw new Error('ingen veg her');
    text('panel-vegreferanse', here.vegreferanse ? here.vegreferanse.kortform : '–');
    text('panel-veglenke', here.veglenke.kortform);
    panel.dataset.veglenke = String(here.veglenke.id);
    const type = $('type').value;
    text('panel-objects-title', type ? `Vegobjekter (type ${type}) her` : 'Vegobjekter her (velg en type)');
    if (type) {
      const page = await getJson(
        `${API}/vegobjekter/${type}?veglenke=${here.veglenke.kortform}&inkluder=egenskaper&antall=20`);
      for (const o of page.objekter) {
        const li = document.createElement('li');
        const props = (o.egenskaper || []).slice(0, 4)
          .map((p) => `${p.navn}: ${p.verdi}`).join(', ');
        li.textContent = `${o.id}${props ? ' – ' + props : ''}`;
        $('panel-objects').append(li);
      }
      if (page.objekter.length === 0) {
        const li = document.createElement('li');
        li.textContent = 'ingen';
        $('panel-objects').append(li);
      }
    }
    panel.dataset.state = 'ready';
  } catch (err) {
    text('panel-hint', String(err));
    panel.dataset.state = 'error';
  }
}

map.on('click', showRoad);
for (const id of ['vegnett']) {
  map.on('mouseenter', id, () => { map.getCanvas().style.cursor = 'pointer'; });
  map.on('mouseleave', id, () => { map.getCanvas().style.cursor = ''; });
}
