//! /vegnett, /vegnett/lenker and /vegnett/lenker/{id}: the road network as link segments.
//!
//! Area filters: region, fylke, vegavdeling and kommune are OR-ed with each other; vegreferanse
//! and kartutsnitt are AND-ed onto that; veglenke stands alone. The network attributes
//! (typeveg, detaljniva, trafikantgruppe, adskiltelop, sideanlegg, konnekteringslenker) are
//! AND-ed onto either. Pages are ordered by
//! (link id, start position); the cursor holds the last (link id, start position).

use axum::extract::{Path, RawQuery, State};
use axum::http::HeaderMap;
use axum::response::Response;
use roaring::RoaringBitmap;
use serde::Serialize;
use serde_json::Value;
use utoipa_axum::router::OpenApiRouter;

use crate::api::dto::{date, road_ref_stretch, system_ref_stretch};
use crate::api::error::{ApiError, ApiResult};
use crate::api::geojson;
use crate::api::handler::{begin, begin_geo};
use crate::api::media::json as respond;
use crate::api::paging::{next_href, next_start, page_size, start, streamed_envelope};
use crate::api::params::Params;
use crate::api::read::network_attributes::{parse_network_attributes, NETWORK_ATTRIBUTE_PARAMS};
use crate::api::read::polygon::prepared_polygon;
use crate::api::state::AppState;
use crate::api::stream::{respond_page, PageItems};
use crate::area::AreaKind;
use crate::generation::feature::Geometry;
use crate::generation::Generation;
use crate::geo::area_polygon::AreaPolygon;
use crate::geo::map_extent::MapExtent;
use crate::geo::srid::Srid;
use crate::geo::wkt;
use crate::query::network::NetworkAreaFilter;
use crate::query::vegref::{link_range_short, LinkRef, RoadRefFilter};
use crate::snapshot::columns::{ROAD_TYPES, TOPOLOGY_LEVELS};

/// Largest page of road links.
pub const MAX_PAGE: usize = 10_000;

pub(crate) const LIST_PARAMS: &[&str] = &[
    "region",
    "fylke",
    "vegavdeling",
    "kommune",
    "vegreferanse",
    "kartutsnitt",
    "polygon",
    "veglenke",
    "srid",
    "antall",
    "start",
    "tidspunkt",
];
crate::query_params!(LinksQuery = [LIST_PARAMS, NETWORK_ATTRIBUTE_PARAMS]);
const LINK_PARAMS: &[&str] = &["srid", "tidspunkt"];
crate::query_params!(LinkQuery = [LINK_PARAMS]);

/// A page of `GET /vegnett/lenker` (the schema only: pages are streamed by `api::stream`).
#[derive(utoipa::ToSchema)]
pub struct LinkPageDoc {
    pub objekter: Vec<LinkDoc>,
    pub metadata: crate::api::paging::PageMetadata,
}

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(crate::read_route!(list_network_resources))
        .routes(crate::read_route!(list_links))
        .routes(crate::read_route!(get_link))
}

/// An element of `GET /vegnett`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct NetworkResourceDoc {
    pub navn: &'static str,
    pub href: String,
}

/// GET /vegnett
#[utoipa::path(get, path = "/vegnett", tag = "vegnett", params(crate::api::query_doc::NoQuery), responses((status = 200, description = "The network resources: the road links", body = [NetworkResourceDoc])))]
pub async fn list_network_resources(
    State(s): State<AppState>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> ApiResult<Response> {
    let (_, n) = begin(&headers, q.as_deref(), &[])?;
    // the name of the v2 documentation's example (vegnett.md)
    let list = [NetworkResourceDoc {
        navn: "Veglenker",
        href: s.href("/vegnett/lenker"),
    }];
    Ok(respond(n, &list))
}

/// `metadata` of a road link.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct LinkMetadataDoc {
    pub startdato: String,
}

/// `geometri.kvalitet` of a road link. Both sets of names are written: the v2 documentation's
/// vegnett example (`metode`, `høydenøyaktighet`, `toleranse`, `synlighet`) and the names of
/// `verdi/geometri.md` and the Java client (`målemetode`, `målemetodeHøyde`,
/// `nøyaktighetHøyde`, `synbarhet`); `nøyaktighet` and `datafangstdato` are common to both.
/// `målemetodeHøyde` is null: the height was measured with `målemetode` (SOSI: the planar
/// method also covers the height unless a height method is given).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct LinkQualityDoc {
    pub metode: u8,
    #[serde(rename = "nøyaktighet")]
    pub accuracy: u16,
    #[serde(rename = "høydenøyaktighet")]
    pub height_accuracy: u16,
    pub toleranse: u16,
    pub synlighet: u8,
    pub datafangstdato: String,
    #[serde(rename = "målemetode")]
    pub method: u8,
    #[serde(rename = "målemetodeHøyde")]
    pub height_method: Option<u8>,
    #[serde(rename = "nøyaktighetHøyde")]
    pub accuracy_height: u16,
    pub synbarhet: u8,
}

/// `geometri` of a road link.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct LinkGeometryDoc {
    pub wkt: String,
    pub srid: u32,
    pub kvalitet: LinkQualityDoc,
}

/// One road link segment as the API shows it.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct LinkDoc {
    pub href: String,
    pub metadata: LinkMetadataDoc,
    pub veglenkeid: u64,
    pub startposisjon: f64,
    pub sluttposisjon: f64,
    pub kortform: String,
    pub felt: String,
    pub medium: String,
    pub temakode: u16,
    pub konnekteringslenke: bool,
    #[serde(rename = "topologinivå")]
    pub topology_level: u8,
    #[serde(rename = "topologinivå_tekst")]
    pub topology_level_text: &'static str,
    pub startnode: String,
    pub sluttnode: String,
    pub geometri: LinkGeometryDoc,
    pub region: u8,
    pub fylke: u8,
    pub vegavdeling: u8,
    pub kommune: u16,
    /// Absent on a row without a road reference (an imported veglenke no 915 covers).
    #[schema(value_type = Option<Object>)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vegreferanse: Option<crate::api::dto::RoadRefStretch>,
    /// The road system reference (LES v3's shape); absent where `vegreferanse` is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vegsystemreferanse: Option<crate::api::dto::SystemRefStretch>,
    /// Whole meters, as in the documentation's example (`"strekningslengde": 78`).
    pub strekningslengde: i64,
    #[serde(rename = "typeVeg")]
    pub type_veg: &'static str,
    /// The v2 docs call it superid, the Java client reads foreldrelenkeid: both are written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub superid: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub foreldrelenkeid: Option<u64>,
}

/// One road link segment as the API shows it.
/// `z_tag`: see `Negotiated::wkt_z_tag`.
pub fn link_json(
    s: &AppState,
    g: &Generation,
    row: usize,
    srid: Srid,
    z_tag: bool,
) -> ApiResult<LinkDoc> {
    let l = g.segment(row);
    let id = l.link_id().get();
    let level = l.topology_level();
    let parent = l.super_id();
    let q = l.quality();
    Ok(LinkDoc {
        href: s.href(&format!("/vegnett/lenker/{id}")),
        metadata: LinkMetadataDoc {
            startdato: date(l.start_date()),
        },
        veglenkeid: id,
        // + 0.0 turns a -0.0 into 0.0
        startposisjon: l.from_pos() + 0.0,
        sluttposisjon: l.to_pos() + 0.0,
        kortform: link_range_short(l.from_pos(), l.to_pos(), id),
        felt: l.lanes().to_string(),
        medium: (l.medium() as char).to_string(),
        temakode: l.theme_code(),
        konnekteringslenke: l.is_connection(),
        topology_level: level,
        topology_level_text: TOPOLOGY_LEVELS
            .get(level as usize)
            .copied()
            .unwrap_or("VEGTRASE"),
        startnode: l.start_node().to_string(),
        sluttnode: l.end_node().to_string(),
        geometri: LinkGeometryDoc {
            wkt: wkt::linestring_z(srid, l.geometry(), z_tag)?,
            srid: srid.code(),
            kvalitet: LinkQualityDoc {
                metode: q.method,
                accuracy: q.accuracy,
                height_accuracy: q.height_accuracy,
                toleranse: q.tolerance,
                synlighet: q.visibility,
                datafangstdato: date(q.capture_date),
                method: q.method,
                height_method: None,
                accuracy_height: q.height_accuracy,
                synbarhet: q.visibility,
            },
        },
        region: l.region(),
        fylke: l.county(),
        vegavdeling: l.road_department(),
        kommune: l.municipality(),
        vegreferanse: Some(l.road_key())
            .filter(|k| k.has_road_ref())
            .map(|k| road_ref_stretch(&k, l.from_m(), l.to_m())),
        vegsystemreferanse: g
            .segment_system_ref(row)
            .map(|(k, from, to)| system_ref_stretch(&k, from, to)),
        strekningslengde: l.length_m().round() as i64,
        type_veg: ROAD_TYPES
            .get(l.road_type() as usize)
            .copied()
            .unwrap_or(ROAD_TYPES[0]),
        superid: parent,
        foreldrelenkeid: parent,
    })
}

/// `kartutsnitt=xmin,ymin,xmax,ymax` in `srid`: what it selects intersects that rectangle in
/// `srid` (not merely its storage envelope).
pub fn parse_map_extent(text: &str, srid: Srid) -> ApiResult<MapExtent> {
    let v: Vec<f64> = text
        .trim_matches(|c| c == '{' || c == '}')
        .split(',')
        .map(|s| s.trim().parse::<f64>())
        .collect::<Result<_, _>>()
        .map_err(|_| {
            ApiError::bad(
                4011,
                format!("Ugyldig kartutsnitt '{text}': forventet xmin,ymin,xmax,ymax"),
            )
        })?;
    if v.len() != 4 || v.iter().any(|x| !x.is_finite()) || v[0] > v[2] || v[1] > v[3] {
        return Err(ApiError::bad(
            4011,
            format!("Ugyldig kartutsnitt '{text}': forventet xmin,ymin,xmax,ymax med min <= maks"),
        ));
    }
    Ok(MapExtent::new(srid, [v[0], v[1], v[2], v[3]])?)
}

fn area_numbers(p: &Params, name: &str, kind: AreaKind) -> ApiResult<Vec<(AreaKind, u32)>> {
    Ok(p.int_list(name)?
        .into_iter()
        .map(|v| (kind, v as u32))
        .collect())
}

/// The `polygon` filter, if given (the network statistics measure the rows inside it).
pub(crate) fn polygon(
    g: &Generation,
    p: &Params,
    srid: Srid,
) -> ApiResult<Option<std::sync::Arc<AreaPolygon>>> {
    p.one("polygon")?
        .map(|t| prepared_polygon(g, t, srid))
        .transpose()
}

pub(crate) fn selected_rows(g: &Generation, p: &Params, srid: Srid) -> ApiResult<RoaringBitmap> {
    let attributes = parse_network_attributes(p)?;
    let links = p.list("veglenke");
    let others = [
        "region",
        "fylke",
        "vegavdeling",
        "kommune",
        "vegreferanse",
        "kartutsnitt",
    ];
    if !links.is_empty() {
        if others.iter().any(|o| p.has(o)) {
            return Err(ApiError::bad(
                4009,
                "veglenke kan ikke kombineres med andre områdefilter",
            ));
        }
        let mut rows = RoaringBitmap::new();
        for l in links {
            let l = LinkRef::parse(&l)?;
            for r in g.segments_overlapping(l.link_id, l.from, l.to) {
                rows.insert(r as u32);
            }
        }
        if let Some(a) = polygon(g, p, srid)? {
            let only = NetworkAreaFilter {
                polygon: Some(a),
                ..Default::default()
            };
            rows &= g.select_segments(&only);
        }
        return Ok(attributes.retain(&g.network, &g.network_indexes, &rows));
    }
    let mut any_of = area_numbers(p, "region", AreaKind::Region)?;
    any_of.extend(area_numbers(p, "fylke", AreaKind::County)?);
    any_of.extend(area_numbers(p, "vegavdeling", AreaKind::RoadDepartment)?);
    any_of.extend(area_numbers(p, "kommune", AreaKind::Municipality)?);
    let filter = NetworkAreaFilter {
        any_of,
        roads: p
            .list("vegreferanse")
            .iter()
            .map(|r| RoadRefFilter::parse(r))
            .collect::<Result<_, _>>()?,
        bbox: p
            .one("kartutsnitt")?
            .map(|k| parse_map_extent(k, srid))
            .transpose()?,
        attributes,
        polygon: polygon(g, p, srid)?,
    };
    Ok(g.select_segments(&filter))
}

/// GET /vegnett/lenker — road link segments, filtered and paginated.
#[utoipa::path(get, path = "/vegnett/lenker", tag = "vegnett",
    params(LinksQuery),
    responses((status = 200, description = "{objekter: [road links (LinkDoc)], metadata: {returnert, neste}}", body = LinkPageDoc)))]
pub async fn list_links(
    State(s): State<AppState>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> ApiResult<Response> {
    let allowed: Vec<&str> = LIST_PARAMS
        .iter()
        .chain(NETWORK_ATTRIBUTE_PARAMS)
        .copied()
        .collect();
    let (p, n) = begin_geo(&headers, q.as_deref(), &allowed)?;
    let srid = p.srid()?;
    let antall = page_size(&p, MAX_PAGE)?;
    let from = start(&p)?;
    let g = crate::api::dated::generation(&s, &p)?;
    let rows = selected_rows(&g, &p, srid)?;
    // first row after the cursor's (link id, position)
    let first = match from {
        Some(c) => g.first_segment_after(crate::ids::LinkId(c.key), c.key2) as u32,
        None => 0,
    };
    let page: Vec<u32> = rows
        .iter()
        .skip_while(|&r| r < first)
        .take(antall)
        .collect();
    let last = page.last().map(|&r| r as usize);
    let next = next_start(
        &p,
        g.id,
        last.map(|r| (g.segment(r).link_id().get(), g.segment(r).from_pos())),
    )?;
    let total = Some(rows.len());
    if n.geojson {
        let out = geojson::Crs::new(geojson::output_srid(&p)?);
        let more =
            page.len() == antall && rows.max().is_some_and(|m| Some(m) > page.last().copied());
        let next =
            more.then(|| next_href(&s, "/vegnett/lenker.geojson", q.as_deref(), antall, &next));
        let features = link_features(s.clone(), g.clone(), page, out, None);
        return Ok(geojson::v2_collection(features, out.srid, next, total));
    }
    let metadata = streamed_envelope(
        &s,
        "/vegnett/lenker",
        q.as_deref(),
        (),
        page.len(),
        antall,
        next,
        total,
        n.revision,
    )
    .metadata;
    let links = LinkPage {
        s: s.clone(),
        g: g.clone(),
        srid,
        z_tag: n.wkt_z_tag(),
        rows: page,
    };
    Ok(respond_page(n, links, metadata, s.config.stream_pages))
}

/// Network rows as GeoJSON features: the link document's members (without `geometri`) as
/// properties, those `keep` keeps, `kortform` (unique per row) as id.
pub fn link_features(
    s: AppState,
    g: std::sync::Arc<Generation>,
    rows: Vec<u32>,
    crs: geojson::Crs,
    keep: geojson::Selection,
) -> geojson::Features {
    geojson::Features::new(rows.len(), move |i, out| {
        let row = rows[i] as usize;
        let doc = link_json(&s, &g, row, crs.srid, true)?;
        let id = Value::String(doc.kortform.clone());
        let mut doc = serde_json::to_value(&doc)
            .map_err(|e| crate::error::EngineError::Internal(e.to_string()))?;
        if let (Some(keep), Some(m)) = (&keep, doc.as_object_mut()) {
            m.retain(|name, _| name == "geometri" || keep.contains(name));
        }
        let geometry =
            Geometry::LineString(g.segment(row).geometry().to_vec()).to_srid(crs.srid)?;
        geojson::push_doc_feature(out, Some(&id), Some(&geometry), doc, "geometri", crs);
        Ok(())
    })
}

/// A page of links, rendered link by link as the page is written (streamed, `stream`).
struct LinkPage {
    s: AppState,
    g: std::sync::Arc<Generation>,
    srid: Srid,
    z_tag: bool,
    rows: Vec<u32>,
}

impl PageItems for LinkPage {
    fn count(&self) -> usize {
        self.rows.len()
    }

    fn write<S: serde::ser::SerializeSeq>(
        &self,
        seq: &mut S,
        range: std::ops::Range<usize>,
    ) -> Result<(), S::Error> {
        use serde::ser::Error;
        for &r in &self.rows[range] {
            let link = link_json(&self.s, &self.g, r as usize, self.srid, self.z_tag)
                .map_err(|e| S::Error::custom(e.message))?;
            seq.serialize_element(&link)?;
        }
        Ok(())
    }
}

/// GET /vegnett/lenker/{id} — the segments of one link (an array; a link can carry several
/// road references).
#[utoipa::path(get, path = "/vegnett/lenker/{id}", tag = "vegnett",
    params(("id" = u64, Path, description = "road link id"), LinkQuery),
    responses((status = 200, description = "The link's segments", body = [LinkDoc]), (status = 404, description = "Unknown link (4012)")))]
pub async fn get_link(
    State(s): State<AppState>,
    Path(id): Path<String>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> ApiResult<Response> {
    let (p, n) = begin(&headers, q.as_deref(), LINK_PARAMS)?;
    let srid = p.srid()?;
    let id: u64 = id
        .parse()
        .map_err(|_| ApiError::bad(4002, format!("Ugyldig veglenke-id: '{id}'")))?;
    let g = crate::api::dated::generation(&s, &p)?;
    let out = g
        .segments_of_link(id)
        .map(|l| link_json(&s, &g, l.row(), srid, n.wkt_z_tag()))
        .collect::<ApiResult<Vec<_>>>()?;
    if out.is_empty() {
        return Err(ApiError::not_found(format!("Veglenke {id} finnes ikke")));
    }
    Ok(respond(n, &out))
}
