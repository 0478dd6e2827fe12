//! Veglenkesekvenser -> network rows. A v2 link is a veglenkesekvens (link id = sequence id,
//! positions 0–1 along it); each current veglenke covers the positions of its start and end
//! ports and becomes one or more rows (split where the 915 road reference changes). A piece no
//! 915 covers is kept as a row without a road reference (`NO_ROAD_REF`). A closed veglenke
//! (with a `sluttdato`) is mapped the same way into the network's history: its rows carry
//! `end_date` = its sluttdato (exclusive) and never enter the current network.

use std::collections::{HashMap, HashSet};

use super::date_days;
use super::roadref::{RoadRefs, Section, FALLBACK_HP};
use super::summary::Summary;
use super::uberiket::{Link, Sequence};
use crate::area::Areas;
use crate::geo::extent;
use crate::geo::linref::sub_line;
use crate::geo::srid::{to_storage, Srid};
use crate::geo::Coord3;
use crate::snapshot::columns::{
    default_traffic_group, RoadNetwork, DETAIL_LEVELS, NO_ROAD_REF, OPEN_END, ROAD_TYPES,
    SEPARATE_NO, TOPOLOGY_LEVELS,
};

/// Upstream `typeVeg` -> index into `ROAD_TYPES` (the v2 `typeVeg` values).
const ROAD_TYPE_NAMES: [(&str, usize); 7] = [
    ("ENKEL_BILVEG", 0),
    ("KANALISERT_VEG", 1),
    ("RAMPE", 2),
    ("RUNDKJORING", 3),
    ("GANG_OG_SYKKELVEG", 4),
    ("BILFERJE", 5),
    ("GATETUN", 6),
];

/// The v2 medium letters in the SOSI order. Uberiket's `geometri.medium` is a number the
/// OpenAPI does not explain; it is read as the 0-based index into this order (so 2 = L, "i
/// luft": the samples' veglenker with medium 2 are short, level pieces, as bridges are).
const MEDIUM_LETTERS: &[u8; 12] = b"TBLUSOVDIWJX";

/// Upstream medium -> the v2 letter: absent = T (on the ground), a number outside the list = X
/// (unknown, counted).
fn medium_letter(medium: Option<i64>, summary: &mut Summary) -> u8 {
    match medium {
        None => b'T',
        Some(m) => match usize::try_from(m).ok().and_then(|i| MEDIUM_LETTERS.get(i)) {
            Some(&l) => l,
            None => {
                summary.skip(format!("veglenke: medium {m} unknown, stored as X [kept]"));
                b'X'
            }
        },
    }
}

/// One network row before sorting.
struct Row {
    link: u64,
    from: f64,
    to: f64,
    start_node: u64,
    end_node: u64,
    coords: Vec<Coord3>,
    length_m: f64,
    municipality: u16,
    county: u8,
    region: u8,
    department: u8,
    category: u8,
    status: u8,
    number: u32,
    from_m: u32,
    to_m: u32,
    hp: u16,
    /// The vegsystemreferanse beyond the v2 reference: vegfase (915), strekning and
    /// delstrekning (916; the fallback hp's 0 and 1 where none), retning MOT, arm.
    phase: u8,
    section_numbers: (u16, u16),
    against: bool,
    arm: bool,
    /// The 915 Vegsystem's and the 916 Strekning's (id, version); (0, 0) = none.
    objects: ((u64, u32), (u64, u32)),
    /// The 916 placement and the piece's positions, metres resolved in `finish`.
    section: Option<(Section, f64, f64)>,
    lanes: String,
    medium: u8,
    theme: u16,
    connection: bool,
    level: u8,
    super_id: u64,
    road_type: u8,
    start_date: i32,
    /// `OPEN_END` for a current veglenke, its sluttdato for a closed one.
    end_date: i32,
    q: (u8, u16, u16, u16, u8, i32),
    /// Index into DETAIL_LEVELS.
    detail: u8,
    traffic_group: u8,
    side_facility: bool,
    separate: u8,
}

/// What a veglenke's rows share, read and checked from the upstream link (the pieces along
/// its road references then become rows).
struct LinkFacts {
    /// Positions of its ports on the sequence.
    from: f64,
    to: f64,
    start_node: u64,
    end_node: u64,
    coords: Vec<Coord3>,
    municipality: u16,
    county: u8,
    region: u8,
    department: u8,
    level: u8,
    /// `detaljnivå`: index into DETAIL_LEVELS.
    detail: u8,
    road_type: u8,
    start_date: i32,
    /// `OPEN_END`, or the sluttdato of a closed veglenke.
    end_date: i32,
    quality: (u8, u16, u16, u16, u8, i32),
    /// Length of the sequence in metres.
    seq_len: f64,
}

impl LinkFacts {
    /// The link's facts, or why it is left out.
    fn of(
        seq: &Sequence,
        link: &Link,
        areas: &Areas,
        summary: &mut Summary,
    ) -> Result<LinkFacts, SkippedLink> {
        let port = |n: u32| seq.porter.iter().find(|p| p.nummer == n);
        let (Some(sp), Some(ep)) = (port(link.startport), port(link.sluttport)) else {
            return Err(SkippedLink::PortMissing);
        };
        let (a, b) = (sp.posisjon, ep.posisjon);
        if !extent::position_ok(a) || !extent::position_ok(b) {
            return Err(SkippedLink::PortPosition);
        }
        if b.partial_cmp(&a) != Some(std::cmp::Ordering::Greater) {
            return Err(SkippedLink::PortsNotOrdered);
        }
        if !extent::length_ok(link.lengde) {
            return Err(SkippedLink::Length);
        }
        let level = TOPOLOGY_LEVELS
            .iter()
            .position(|l| *l == link.topologiniva)
            .ok_or_else(|| SkippedLink::TopologyLevel(link.topologiniva.to_string()))?;
        let road_type = ROAD_TYPE_NAMES
            .iter()
            .find(|(n, _)| *n == link.type_veg)
            .map(|(_, i)| *i)
            .ok_or_else(|| SkippedLink::RoadType(link.type_veg.to_string()))?;
        debug_assert!(road_type < ROAD_TYPES.len());
        let detail = DETAIL_LEVELS
            .iter()
            .position(|l| *l == link.detaljniva)
            .ok_or_else(|| SkippedLink::DetailLevel(link.detaljniva.to_string()))?;
        let coords = parse_linestring(&link.geometri.wkt, link.geometri.srid)?;
        let municipality = u16::try_from(link.kommune)
            .map_err(|_| SkippedLink::Municipality(link.kommune.to_string()))?;
        let (county, region, department) = match areas.municipality(municipality) {
            Some(m) => (m.county, m.region, m.road_department),
            None => {
                summary.skip(format!(
                    "kommune {municipality} not in the area list: fylke from its number, no region/vegavdeling"
                ));
                ((municipality / 100) as u8, 0, 0)
            }
        };
        let start_date = date_days(&link.gyldighetsperiode.startdato)
            .ok_or_else(|| SkippedLink::StartDate(link.gyldighetsperiode.startdato.clone()))?;
        let end_date = match &link.gyldighetsperiode.sluttdato {
            None => OPEN_END,
            Some(text) => {
                let end = date_days(text).ok_or_else(|| SkippedLink::EndDate(text.clone()))?;
                if end <= start_date {
                    return Err(SkippedLink::EmptyValidity);
                }
                end
            }
        };
        let q = link.geometri.kvalitet.as_ref();
        let qv =
            |f: fn(&super::uberiket::Quality) -> Option<i64>| q.and_then(f).unwrap_or(0).max(0);
        let capture = link
            .geometri
            .datafangstdato
            .as_deref()
            .and_then(date_days)
            .unwrap_or(start_date);
        let quality = (
            qv(|q| q.malemetode) as u8,
            qv(|q| q.noyaktighet) as u16,
            qv(|q| q.noyaktighet_hoyde) as u16,
            qv(|q| q.maksimalt_avvik) as u16,
            qv(|q| q.synbarhet) as u8,
            capture,
        );
        Ok(LinkFacts {
            from: a,
            to: b,
            start_node: sp.node_id,
            end_node: ep.node_id,
            coords,
            municipality,
            county,
            region,
            department,
            level: level as u8,
            detail: detail as u8,
            road_type: road_type as u8,
            start_date,
            end_date,
            quality,
            seq_len: seq.lengde.unwrap_or(link.lengde / (b - a)),
        })
    }
}

#[derive(Default)]
pub struct NetworkBuilder {
    rows: Vec<Row>,
    /// Rows of closed veglenker (the network's history).
    closed: Vec<Row>,
    /// Sequences with a current veglenke.
    pub sequences: HashSet<u64>,
    /// Sequences with a current or a closed veglenke mapped.
    any_sequences: HashSet<u64>,
    /// Length in metres of every sequence read.
    lengths: HashMap<u64, f64>,
}

/// Why a link's geometry cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum GeometryError {
    #[error("srid {0} not supported")]
    UnsupportedSrid(u32),
    #[error("geometry is not a LINESTRING")]
    NotLinestring,
    #[error("bad number in LINESTRING")]
    BadNumber,
    #[error("LINESTRING point with fewer than 2 coordinates")]
    ShortPoint,
    #[error("{0}")]
    NotTransformable(crate::error::EngineError),
    #[error("LINESTRING with fewer than 2 points")]
    TooFewPoints,
    #[error("coordinate outside the storage extent (UTM 33: x {}..{}, y {}..{}, z {}..{})", extent::X_RANGE.0, extent::X_RANGE.1, extent::Y_RANGE.0, extent::Y_RANGE.1, extent::Z_RANGE.0, extent::Z_RANGE.1)]
    OutsideExtent,
}

/// Why a veglenke is left out of the network (the summary counts skips by this text).
#[derive(Debug, thiserror::Error)]
enum SkippedLink {
    #[error("start or end port missing from the sequence")]
    PortMissing,
    #[error("end port not after start port")]
    PortsNotOrdered,
    #[error("port position outside 0..1")]
    PortPosition,
    #[error("lengde not a finite, non-negative number")]
    Length,
    #[error("topologinivå {0} has no v2 value")]
    TopologyLevel(String),
    #[error("typeVeg {0} has no v2 value")]
    RoadType(String),
    #[error("detaljnivå {0} unknown")]
    DetailLevel(String),
    #[error(transparent)]
    Geometry(#[from] GeometryError),
    #[error("kommune {0} out of range")]
    Municipality(String),
    #[error("bad startdato {0}")]
    StartDate(String),
    #[error("bad sluttdato {0}")]
    EndDate(String),
    #[error("sluttdato not after startdato (valid on no day)")]
    EmptyValidity,
}

/// Parse `LINESTRING Z(x y z, ...)` (or 2D) and project to storage coordinates.
pub fn parse_linestring(wkt: &str, srid: u32) -> Result<Vec<Coord3>, GeometryError> {
    let srid = Srid::parse(&srid.to_string()).map_err(|_| GeometryError::UnsupportedSrid(srid))?;
    let body = wkt
        .find('(')
        .zip(wkt.rfind(')'))
        .filter(|(a, b)| a < b && wkt.trim_start().starts_with("LINESTRING"))
        .map(|(a, b)| &wkt[a + 1..b])
        .ok_or(GeometryError::NotLinestring)?;
    let mut out = Vec::new();
    for point in body.split(',') {
        let v: Vec<f64> = point
            .split_whitespace()
            .map(str::parse)
            .collect::<Result<_, _>>()
            .map_err(|_| GeometryError::BadNumber)?;
        if v.len() < 2 {
            return Err(GeometryError::ShortPoint);
        }
        let (x, y) = to_storage(srid, v[0], v[1]).map_err(GeometryError::NotTransformable)?;
        let c = [x, y, v.get(2).copied().unwrap_or(0.0)];
        if !extent::coord_ok(&c) {
            return Err(GeometryError::OutsideExtent);
        }
        out.push(c);
    }
    if out.len() < 2 {
        return Err(GeometryError::TooFewPoints);
    }
    Ok(out)
}

fn round3(v: f64) -> f64 {
    (v * 1000.0).round() / 1000.0
}

impl NetworkBuilder {
    /// Tell the builder the length of a sequence it will not read (a refresh re-derives some
    /// sequences whose 916 Strekning also lies on others): metres along 916 need it.
    pub fn set_length(&mut self, sequence: u64, metres: f64) {
        self.lengths.entry(sequence).or_insert(metres);
    }

    pub fn add(&mut self, seq: &Sequence, refs: &RoadRefs, areas: &Areas, summary: &mut Summary) {
        summary.sequences_read += 1;
        if seq.lengde.is_some_and(|l| !extent::length_ok(l)) {
            summary.links_read += seq.veglenker.len();
            summary.skip("veglenkesekvens with a lengde that is not a finite, non-negative number");
            return;
        }
        if let Some(len) = seq.lengde {
            self.lengths.insert(seq.id, len);
        }
        let (before, closed_before) = (self.rows.len(), self.closed.len());
        for link in &seq.veglenker {
            summary.links_read += 1;
            if let Err(reason) = self.add_link(seq, link, refs, areas, summary) {
                if link.gyldighetsperiode.sluttdato.is_some() {
                    summary.skip(format!("closed veglenke (history): {reason}"));
                } else {
                    summary.skip(format!("veglenke: {reason}"));
                }
            }
        }
        if self.rows.len() > before || self.closed.len() > closed_before {
            self.any_sequences.insert(seq.id);
        }
        if self.rows.len() > before {
            summary.sequences_imported += 1;
            self.sequences.insert(seq.id);
        } else {
            summary.skip("veglenkesekvens without any current veglenke");
        }
    }

    /// Map a batch of sequences in parallel (same result as `add` on each in order, once
    /// `finish` has sorted the rows).
    pub fn add_batch(
        &mut self,
        batch: &[Sequence],
        refs: &RoadRefs,
        areas: &Areas,
        summary: &mut Summary,
    ) {
        use rayon::prelude::*;
        let parts: Vec<(NetworkBuilder, Summary)> = batch
            .par_chunks(256)
            .map(|chunk| {
                let mut b = NetworkBuilder::default();
                let mut s = Summary::default();
                for seq in chunk {
                    b.add(seq, refs, areas, &mut s);
                }
                (b, s)
            })
            .collect();
        for (b, s) in parts {
            self.rows.extend(b.rows);
            self.closed.extend(b.closed);
            self.sequences.extend(b.sequences);
            self.any_sequences.extend(b.any_sequences);
            self.lengths.extend(b.lengths);
            summary.absorb(s);
        }
    }

    fn add_link(
        &mut self,
        seq: &Sequence,
        link: &Link,
        refs: &RoadRefs,
        areas: &Areas,
        summary: &mut Summary,
    ) -> Result<(), SkippedLink> {
        let l = LinkFacts::of(seq, link, areas, summary)?;
        let (a, b) = (l.from, l.to);
        let medium = medium_letter(link.geometri.medium, summary);
        for (f0, f1, system, section) in refs.pieces(seq.id, a, b) {
            // (category, status, number, metres from the 915's start, hp, 916 placement)
            let road = match system {
                Some(system) => (
                    system.category,
                    // v2's status G (gang-/sykkelveg) is fase V on a veglenke of that typeVeg
                    if system.status == b'V' && link.type_veg == "GANG_OG_SYKKELVEG" {
                        b'G'
                    } else {
                        system.status
                    },
                    system.number,
                    (
                        ((f0 - system.from) * l.seq_len).round() as u32,
                        ((f1 - system.from) * l.seq_len).round() as u32,
                    ),
                    section.map(|s| s.hp).unwrap_or(FALLBACK_HP),
                    section.map(|s| (s, f0, f1)),
                ),
                None => {
                    summary.skip(
                        "veglenke piece not covered by any 915 Vegsystem: a row without a road reference [kept]",
                    );
                    (NO_ROAD_REF, NO_ROAD_REF, 0, (0, 0), 0, None)
                }
            };
            let (category, status, number, (from_m, to_m), hp, section) = road;
            let phase = system.map_or(NO_ROAD_REF, |s| s.status);
            let section_numbers = match section {
                Some((s, _, _)) => (s.section, s.subsection),
                None => (hp / 100, hp % 100),
            };
            let (r0, r1) = ((f0 - a) / (b - a), (f1 - a) / (b - a));
            let g = if r0 == 0.0 && r1 == 1.0 {
                l.coords.clone()
            } else {
                sub_line(&l.coords, r0, r1)
            };
            let side = refs.side_facility_at(seq.id, (f0 + f1) / 2.0);
            // trafikantgruppe: the 916's, else the 920's, else from status and typeVeg
            let traffic_group = section
                .and_then(|(s, _, _)| s.traffic_group)
                .or(side.and_then(|s| s.traffic_group))
                .unwrap_or_else(|| default_traffic_group(status, l.road_type));
            let separate = section.map_or(SEPARATE_NO, |(s, _, _)| s.separate);
            let rows = if l.end_date == OPEN_END {
                &mut self.rows
            } else {
                &mut self.closed
            };
            rows.push(Row {
                link: seq.id,
                from: f0,
                to: f1,
                start_node: l.start_node,
                end_node: l.end_node,
                coords: g,
                length_m: round3((r1 - r0) * link.lengde),
                municipality: l.municipality,
                county: l.county,
                region: l.region,
                department: l.department,
                category,
                status,
                number,
                from_m,
                to_m,
                hp,
                phase,
                section_numbers,
                against: section.is_some_and(|(s, _, _)| s.against),
                arm: section.is_some_and(|(s, _, _)| s.arm),
                objects: (
                    system.map_or((0, 0), |s| s.object),
                    section.map_or((0, 0), |(s, _, _)| s.id),
                ),
                section,
                lanes: link.feltoversikt.join("#"),
                medium,
                theme: link.geometri.temakode.unwrap_or(0),
                connection: link.konnektering,
                level: l.level,
                super_id: link.superstedfesting.as_ref().map(|s| s.id).unwrap_or(0),
                road_type: l.road_type,
                start_date: l.start_date,
                end_date: l.end_date,
                q: l.quality,
                detail: l.detail,
                traffic_group,
                side_facility: side.is_some(),
                separate,
            });
        }
        Ok(())
    }

    /// Metres of a piece on a 916 placement: from the start of the 916 object's first
    /// placement, along its placements in listed order. None when a sequence length is missing.
    fn section_metres(&self, refs: &RoadRefs, s: &Section, f0: f64, f1: f64) -> Option<(u32, u32)> {
        let mut offset = 0.0;
        for (seq, from, to) in refs.sections.get(s.object)?.iter().take(s.placement) {
            offset += (to - from) * self.lengths.get(seq)?;
        }
        let own = refs.sections.get(s.object)?.get(s.placement)?.0;
        let len = self.lengths.get(&own)?;
        let (m0, m1) = if s.against {
            ((s.to - f1) * len, (s.to - f0) * len)
        } else {
            ((f0 - s.from) * len, (f1 - s.from) * len)
        };
        Some(((offset + m0).round() as u32, (offset + m1).round() as u32))
    }

    /// Resolve the 916 metres of `rows` (None for a row where a sequence length is missing:
    /// counted, the 915 fallback kept).
    fn resolve_sections(&self, refs: &RoadRefs, rows: &mut [Row], summary: &mut Summary) {
        for row in rows.iter_mut() {
            let Some((s, f0, f1)) = row.section else {
                continue;
            };
            match self.section_metres(refs, &s, f0, f1) {
                Some((m0, m1)) => {
                    row.from_m = m0;
                    row.to_m = m1;
                }
                None => summary.skip(
                    "916 Strekning over a sequence whose length is unknown: metres from the 915 fallback [kept]",
                ),
            }
        }
    }

    /// The current network and the network's history (closed veglenker), each sorted by
    /// (link, from) as the network table requires.
    pub fn finish(mut self, refs: &RoadRefs, summary: &mut Summary) -> Built {
        let mut rows = std::mem::take(&mut self.rows);
        let mut closed = std::mem::take(&mut self.closed);
        self.resolve_sections(refs, &mut rows, summary);
        self.resolve_sections(refs, &mut closed, summary);
        summary.closed_link_rows += closed.len();
        Built {
            network: network_of(rows),
            history: network_of(closed),
            sequences: self.sequences,
            any_sequences: self.any_sequences,
        }
    }
}

/// What the sequences were mapped to.
pub struct Built {
    /// The current network: rows of current veglenker (`end_date` open).
    pub network: RoadNetwork,
    /// The network's history: rows of closed veglenker (`end_date` = their sluttdato).
    pub history: RoadNetwork,
    /// Sequences with a row in the current network.
    pub sequences: HashSet<u64>,
    /// Sequences with a row in the current network or its history.
    pub any_sequences: HashSet<u64>,
}

/// `rows` as a network table, sorted by (link, from).
fn network_of(mut rows: Vec<Row>) -> RoadNetwork {
    rows.sort_by(|x, y| x.link.cmp(&y.link).then(x.from.total_cmp(&y.from)));
    let mut n = RoadNetwork {
        geom_offsets: vec![0],
        ..Default::default()
    };
    for r in rows {
        n.link_id.push(r.link);
        n.from_pos.push(r.from);
        n.to_pos.push(r.to);
        n.start_node.push(r.start_node);
        n.end_node.push(r.end_node);
        n.coords.extend_from_slice(&r.coords);
        n.geom_offsets.push(n.coords.len() as u32);
        n.length_m.push(r.length_m);
        n.municipality.push(r.municipality);
        n.county.push(r.county);
        n.region.push(r.region);
        n.road_department.push(r.department);
        n.road_category.push(r.category);
        n.road_status.push(r.status);
        n.road_number.push(r.number);
        n.hp.push(r.hp);
        n.from_m.push(r.from_m);
        n.to_m.push(r.to_m.max(r.from_m));
        n.lanes.push(r.lanes);
        n.medium.push(r.medium);
        n.theme_code.push(r.theme);
        n.is_connection.push(r.connection);
        n.topology_level.push(r.level);
        n.super_id.push(r.super_id);
        n.road_type.push(r.road_type);
        n.start_date.push(r.start_date);
        n.end_date.push(r.end_date);
        n.q_method.push(r.q.0);
        n.q_accuracy.push(r.q.1);
        n.q_height_accuracy.push(r.q.2);
        n.q_tolerance.push(r.q.3);
        n.q_visibility.push(r.q.4);
        n.q_capture_date.push(r.q.5);
        n.detail_level.push(r.detail);
        n.traffic_group.push(r.traffic_group);
        n.side_facility.push(r.side_facility);
        n.separate_carriageways.push(r.separate);
        n.system_category.push(r.category);
        n.system_phase.push(r.phase);
        n.system_number.push(r.number);
        n.section.push(r.section_numbers.0);
        n.subsection.push(r.section_numbers.1);
        n.section_from_m.push(r.from_m);
        n.section_to_m.push(r.to_m.max(r.from_m));
        n.section_against.push(r.against);
        n.arm.push(r.arm);
        n.push_system_objects(r.objects.0, r.objects.1);
    }
    n.build_link_index();
    n
}
