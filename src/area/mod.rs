//! Areas that limit searches: regions, counties (fylker), road departments (vegavdelinger),
//! municipalities (kommuner), contract areas (kontraktsområder) and national route segments
//! (riksvegruter).
//!
//! Counties and municipalities are the real 2024 division with their real polygons (embedded
//! from `data/`, WGS84, projected to UTM 33 on load). Regions are the five real NPRA regions.
//! Road departments follow the counties, except that Troms and Finnmark share one. Contract
//! areas and national routes are derived deterministically: see `contracts` and `routes`.

mod contracts;
mod routes;

use std::collections::HashMap;
use std::sync::OnceLock;

use geo::{
    BoundingRect, Contains, Coord, InteriorPoint, LineString, MultiPolygon, Point, Polygon, Rect,
};
use serde::Deserialize;

use crate::geo::srid::{to_storage, Srid};

pub use routes::NationalRoute;

#[derive(Debug, Clone)]
pub struct Region {
    pub number: u8,
    pub name: String,
}

#[derive(Debug, Clone)]
pub struct County {
    pub number: u8,
    pub name: String,
    pub region: u8,
    pub road_department: u8,
    pub shape: MultiPolygon<f64>,
}

#[derive(Debug, Clone)]
pub struct RoadDepartment {
    pub number: u8,
    pub name: String,
    pub region: u8,
    pub counties: Vec<u8>,
}

#[derive(Debug, Clone)]
pub struct Municipality {
    pub number: u16,
    pub name: String,
    pub county: u8,
    pub region: u8,
    pub road_department: u8,
    pub population: u32,
    pub shape: MultiPolygon<f64>,
    pub bbox: Rect<f64>,
}

#[derive(Debug, Clone)]
pub struct ContractArea {
    pub number: u32,
    pub name: String,
    /// Driftskontrakt, Elektrokontrakt, Tunnelkontrakt.
    pub kind: String,
    pub municipalities: Vec<u16>,
}

/// Which area kinds exist, as used in filters and bitmap keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AreaKind {
    Region,
    County,
    RoadDepartment,
    Municipality,
    Contract,
    Route,
}

impl AreaKind {
    /// The catalogue's road object type that represents an area of this kind (2.38: Region
    /// 534, Fylke 945, Vegavdeling 537, Kommune 946, Kontraktsområde 580, Riksvegrute 704).
    pub fn object_type(self) -> u32 {
        match self {
            AreaKind::Region => 534,
            AreaKind::County => 945,
            AreaKind::RoadDepartment => 537,
            AreaKind::Municipality => 946,
            AreaKind::Contract => 580,
            AreaKind::Route => 704,
        }
    }

    /// The id of the road object representing the area with `key` (its number; for national
    /// routes, its index in `Areas::routes`). Ids are fixed, the same in every dataset, and below
    /// the generator's first road object id (100,000,000), so they never collide.
    pub fn object_id(self, key: u32) -> u64 {
        let base = match self {
            AreaKind::Region => 1_000,
            AreaKind::County => 2_000,
            AreaKind::RoadDepartment => 3_000,
            AreaKind::Municipality => 10_000,
            AreaKind::Contract => 20_000,
            AreaKind::Route => 30_001,
        };
        base + key as u64
    }

    pub const ALL: [AreaKind; 6] = [
        AreaKind::Region,
        AreaKind::County,
        AreaKind::RoadDepartment,
        AreaKind::Municipality,
        AreaKind::Contract,
        AreaKind::Route,
    ];
}

/// All areas with lookups. Built once from embedded data.
#[derive(Debug)]
pub struct Areas {
    pub regions: Vec<Region>,
    pub counties: Vec<County>,
    pub road_departments: Vec<RoadDepartment>,
    pub municipalities: Vec<Municipality>,
    pub contracts: Vec<ContractArea>,
    pub routes: Vec<NationalRoute>,
    municipality_index: HashMap<u16, usize>,
    county_index: HashMap<u8, usize>,
    /// municipality number -> indexes into `contracts`
    contracts_by_municipality: HashMap<u16, Vec<u32>>,
}

/// County -> region, per the five NPRA regions (Øst, Sør, Vest, Midt, Nord) as they were drawn
/// before the 2020 reform, mapped onto today's counties.
const COUNTY_REGION: [(u8, u8); 15] = [
    (3, 1),
    (31, 1),
    (32, 1),
    (34, 1),
    (33, 2),
    (39, 2),
    (40, 2),
    (42, 2),
    (11, 3),
    (46, 3),
    (15, 4),
    (50, 4),
    (18, 5),
    (55, 5),
    (56, 5),
];

#[derive(Deserialize)]
struct Feature {
    properties: HashMap<String, serde_json::Value>,
    geometry: FeatureGeometry,
}
#[derive(Deserialize)]
struct FeatureGeometry {
    #[serde(rename = "type")]
    kind: String,
    coordinates: serde_json::Value,
}
#[derive(Deserialize)]
struct FeatureCollection {
    features: Vec<Feature>,
}
#[derive(Deserialize)]
struct MunicipalityFacts {
    k_id: String,
    k_population: Option<u32>,
}

fn ring(value: &serde_json::Value) -> LineString<f64> {
    let coords = value
        .as_array()
        .map(|pts| {
            pts.iter()
                .filter_map(|p| {
                    let lon = p.get(0)?.as_f64()?;
                    let lat = p.get(1)?.as_f64()?;
                    let (x, y) = to_storage(Srid::Wgs84, lon, lat).ok()?;
                    Some(Coord { x, y })
                })
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    LineString::new(coords)
}

fn polygon(value: &serde_json::Value) -> Option<Polygon<f64>> {
    let rings = value.as_array()?;
    let exterior = ring(rings.first()?);
    let interiors = rings[1..].iter().map(ring).collect();
    Some(Polygon::new(exterior, interiors))
}

fn shape(g: &FeatureGeometry) -> MultiPolygon<f64> {
    match g.kind.as_str() {
        "Polygon" => MultiPolygon::new(polygon(&g.coordinates).into_iter().collect()),
        "MultiPolygon" => MultiPolygon::new(
            g.coordinates
                .as_array()
                .map(|ps| ps.iter().filter_map(polygon).collect())
                .unwrap_or_default(),
        ),
        _ => MultiPolygon::new(vec![]),
    }
}

fn prop_str(f: &Feature, key: &str) -> String {
    f.properties
        .get(key)
        .and_then(|v| v.as_str())
        .unwrap_or_default()
        .to_string()
}

impl Areas {
    /// The embedded areas, built once.
    pub fn embedded() -> &'static Areas {
        // Not mutable state: the embedded areas, built lazily once and never changed.
        static AREAS: OnceLock<Areas> = OnceLock::new();
        AREAS.get_or_init(Areas::build)
    }

    fn build() -> Areas {
        // the names of the v2 documentation (omrader.md)
        let regions = [
            (1, "Øst"),
            (2, "Sør"),
            (3, "Vest"),
            (4, "Midt"),
            (5, "Nord"),
        ]
        .into_iter()
        .map(|(number, name)| Region {
            number,
            name: name.to_string(),
        })
        .collect();
        let region_of: HashMap<u8, u8> = COUNTY_REGION.into_iter().collect();
        // Troms (55) and Finnmark (56) share one road department, numbered 55.
        let department_of = |county: u8| if county == 56 { 55 } else { county };

        let fylker: FeatureCollection = serde_json::from_str(include_str!("data/Fylker-S.geojson"))
            .expect("embedded counties parse");
        let mut counties: Vec<County> = fylker
            .features
            .iter()
            .map(|f| {
                let number: u8 = prop_str(f, "fylkesnummer").parse().expect("county number");
                County {
                    number,
                    name: prop_str(f, "fylkesnavn"),
                    region: region_of[&number],
                    road_department: department_of(number),
                    shape: shape(&f.geometry),
                }
            })
            .collect();
        counties.sort_by_key(|c| c.number);

        let mut road_departments: Vec<RoadDepartment> = Vec::new();
        for c in &counties {
            let dep = department_of(c.number);
            if let Some(d) = road_departments.iter_mut().find(|d| d.number == dep) {
                d.counties.push(c.number);
                d.name = "Troms og Finnmark".to_string();
            } else {
                road_departments.push(RoadDepartment {
                    number: dep,
                    name: c.name.clone(),
                    region: c.region,
                    counties: vec![c.number],
                });
            }
        }

        let facts: Vec<MunicipalityFacts> =
            serde_json::from_str(include_str!("data/kommuner-2025.json"))
                .expect("embedded facts parse");
        let population: HashMap<u16, u32> = facts
            .iter()
            .filter_map(|f| Some((f.k_id.parse().ok()?, f.k_population.unwrap_or(1000))))
            .collect();
        let kommuner: FeatureCollection =
            serde_json::from_str(include_str!("data/Kommuner-S.geojson"))
                .expect("embedded municipalities parse");
        let mut municipalities: Vec<Municipality> = kommuner
            .features
            .iter()
            .map(|f| {
                let number: u16 = prop_str(f, "kommunenummer")
                    .parse()
                    .expect("municipality number");
                let county = (number / 100) as u8;
                let shape = shape(&f.geometry);
                let bbox = shape
                    .bounding_rect()
                    .unwrap_or(Rect::new((0.0, 0.0), (0.0, 0.0)));
                Municipality {
                    number,
                    name: prop_str(f, "kommunenavn"),
                    county,
                    region: region_of[&county],
                    road_department: department_of(county),
                    population: population.get(&number).copied().unwrap_or(1000),
                    shape,
                    bbox,
                }
            })
            .collect();
        municipalities.sort_by_key(|m| m.number);

        let contracts = contracts::derive(&municipalities, &counties);
        let mut contracts_by_municipality: HashMap<u16, Vec<u32>> = HashMap::new();
        for (i, c) in contracts.iter().enumerate() {
            for &m in &c.municipalities {
                contracts_by_municipality
                    .entry(m)
                    .or_default()
                    .push(i as u32);
            }
        }
        Areas {
            municipality_index: municipalities
                .iter()
                .enumerate()
                .map(|(i, m)| (m.number, i))
                .collect(),
            county_index: counties
                .iter()
                .enumerate()
                .map(|(i, c)| (c.number, i))
                .collect(),
            regions,
            counties,
            road_departments,
            municipalities,
            contracts,
            routes: routes::all(),
            contracts_by_municipality,
        }
    }

    pub fn municipality(&self, number: u16) -> Option<&Municipality> {
        self.municipality_index
            .get(&number)
            .map(|&i| &self.municipalities[i])
    }

    pub fn county(&self, number: u8) -> Option<&County> {
        self.county_index.get(&number).map(|&i| &self.counties[i])
    }

    /// Indexes into `contracts` of the contract areas covering a municipality.
    pub fn contracts_of(&self, municipality: u16) -> &[u32] {
        self.contracts_by_municipality
            .get(&municipality)
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }

    /// Indexes into `routes` of the national routes a road (category, number) in a county is
    /// part of.
    pub fn routes_of(
        &self,
        category: u8,
        number: u32,
        county: u8,
    ) -> impl Iterator<Item = u32> + '_ {
        self.routes
            .iter()
            .enumerate()
            .filter(move |(_, r)| r.covers(category, number, county))
            .map(|(i, _)| i as u32)
    }

    /// The municipality containing a storage coordinate, if any.
    pub fn municipality_at(&self, x: f64, y: f64) -> Option<&Municipality> {
        let p = Point::new(x, y);
        self.municipalities.iter().find(|m| {
            let b = m.bbox;
            x >= b.min().x
                && x <= b.max().x
                && y >= b.min().y
                && y <= b.max().y
                && m.shape.contains(&p)
        })
    }

    /// The shape of a region: its counties' polygons.
    pub fn region_shape(&self, region: u8) -> MultiPolygon<f64> {
        MultiPolygon::new(
            self.counties
                .iter()
                .filter(|c| c.region == region)
                .flat_map(|c| c.shape.0.clone())
                .collect(),
        )
    }

    /// The shape of a road department: its counties' polygons.
    pub fn road_department_shape(&self, d: &RoadDepartment) -> MultiPolygon<f64> {
        MultiPolygon::new(
            d.counties
                .iter()
                .filter_map(|&c| self.county(c))
                .flat_map(|c| c.shape.0.clone())
                .collect(),
        )
    }

    /// The shape of a contract area: its municipalities' polygons.
    pub fn contract_shape(&self, c: &ContractArea) -> MultiPolygon<f64> {
        MultiPolygon::new(
            c.municipalities
                .iter()
                .filter_map(|&m| self.municipality(m))
                .flat_map(|m| m.shape.0.clone())
                .collect(),
        )
    }

    /// A point inside the municipality (used as its centre).
    pub fn interior_point(shape: &MultiPolygon<f64>) -> Option<(f64, f64)> {
        shape.interior_point().map(|p| (p.x(), p.y()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn real_division_is_complete() {
        let a = Areas::embedded();
        assert_eq!(a.regions.len(), 5);
        assert_eq!(a.counties.len(), 15);
        assert_eq!(a.municipalities.len(), 357);
        // one department spans two counties
        assert_eq!(a.road_departments.len(), 14);
        assert!(a
            .road_departments
            .iter()
            .any(|d| d.counties == vec![55, 56]));
        let oslo = a.municipality(301).expect("Oslo");
        assert_eq!(oslo.county, 3);
        assert!(oslo.population > 600_000);
    }

    #[test]
    fn point_in_polygon_finds_real_places() {
        let a = Areas::embedded();
        // Trondheim torg, Oslo sentrum, Tromsø (lon, lat)
        for (lon, lat, expect) in [
            (10.3951, 63.4305, 5001u16),
            (10.7522, 59.9139, 301),
            (18.9553, 69.6492, 5501),
        ] {
            let (x, y) = to_storage(Srid::Wgs84, lon, lat).unwrap();
            assert_eq!(a.municipality_at(x, y).map(|m| m.number), Some(expect));
        }
        let (x, y) = to_storage(Srid::Wgs84, 3.0, 56.0).unwrap();
        assert!(
            a.municipality_at(x, y).is_none(),
            "the North Sea is no municipality"
        );
    }

    #[test]
    fn county_wide_contracts_are_named_after_their_county() {
        let a = Areas::embedded();
        for c in a.contracts.iter().filter(|c| c.kind != "Driftskontrakt") {
            let county = a.county((c.municipalities[0] / 100) as u8).expect("county");
            assert!(
                c.name.contains(&county.name),
                "{} / {}",
                c.name,
                county.name
            );
        }
    }

    #[test]
    fn area_object_ids_are_unique_and_below_generated_ids() {
        let a = Areas::embedded();
        let mut ids = std::collections::HashSet::new();
        let keys = [
            (
                AreaKind::Region,
                a.regions
                    .iter()
                    .map(|r| r.number as u32)
                    .collect::<Vec<_>>(),
            ),
            (
                AreaKind::County,
                a.counties.iter().map(|c| c.number as u32).collect(),
            ),
            (
                AreaKind::RoadDepartment,
                a.road_departments.iter().map(|d| d.number as u32).collect(),
            ),
            (
                AreaKind::Municipality,
                a.municipalities.iter().map(|m| m.number as u32).collect(),
            ),
            (
                AreaKind::Contract,
                a.contracts.iter().map(|c| c.number).collect(),
            ),
            (AreaKind::Route, (0..a.routes.len() as u32).collect()),
        ];
        for (kind, numbers) in keys {
            for n in numbers {
                let id = kind.object_id(n);
                assert!(ids.insert(id), "{kind:?} {n}: id {id} twice");
                assert!(id < 100_000_000);
            }
        }
    }

    #[test]
    fn every_municipality_is_in_some_contract_area() {
        let a = Areas::embedded();
        for m in &a.municipalities {
            assert!(!a.contracts_of(m.number).is_empty(), "{}", m.number);
        }
    }
}
