//! Response shapes shared by several endpoints: position results, road references, geometry.
//! Typed (serde + `ToSchema`), so JSON, XML and the OpenAPI schemas come from the same types.

use serde::Serialize;
use utoipa::ToSchema;

use crate::geo::srid::Srid;
use crate::geo::wkt;
use crate::query::network::NetworkPosition;
use crate::query::system_ref::{SystemKey, SystemPoint};
use crate::query::vegref::{link_point_short, push_link_point_short, round_position, RoadKey};
use crate::snapshot::columns::Days;

use super::error::ApiResult;

/// A road reference (vegreferanse) at one meter.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RoadRefPoint {
    pub fylke: u8,
    /// Two-digit municipality part of the prefix (0 for E, R and F roads).
    pub kommune: u8,
    pub kategori: char,
    pub status: char,
    pub nummer: u32,
    pub hp: u16,
    pub meter: u32,
    pub kortform: String,
}

/// A road reference over a stretch.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RoadRefStretch {
    pub fylke: u8,
    pub kommune: u8,
    pub kategori: char,
    pub status: char,
    pub nummer: u32,
    pub hp: u16,
    pub fra_meter: u32,
    pub til_meter: u32,
    pub kortform: String,
}

pub fn road_ref_point(k: &RoadKey, meter: u32) -> RoadRefPoint {
    RoadRefPoint {
        fylke: k.county,
        kommune: k.municipality_part,
        kategori: k.category as char,
        status: k.status as char,
        nummer: k.number,
        hp: k.hp,
        meter,
        kortform: k.point(meter),
    }
}

pub fn road_ref_stretch(k: &RoadKey, from_m: u32, to_m: u32) -> RoadRefStretch {
    RoadRefStretch {
        fylke: k.county,
        kommune: k.municipality_part,
        kategori: k.category as char,
        status: k.status as char,
        nummer: k.number,
        hp: k.hp,
        fra_meter: from_m,
        til_meter: to_m,
        kortform: if from_m == to_m {
            k.point(from_m)
        } else {
            k.stretch(from_m, to_m)
        },
    }
}

/// `vegsystem` of a road system reference (vegsystemreferanse): the 915 Vegsystem's id and
/// versjon where the data has them (left out where not, as the successors leave out what they
/// lack), vegkategori, fase, nummer.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RoadSystemDoc {
    /// The 915 Vegsystem's id (left out where the data has none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<u64>,
    /// The 915 Vegsystem's version (with `id`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub versjon: Option<u32>,
    pub vegkategori: char,
    pub fase: char,
    pub nummer: u32,
}

/// `strekning` of a road system reference over a stretch (LES v3's shape): the 916
/// Strekning's id and versjon where the data has them (else left out), its numbers, metres and
/// the link's direction against them.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SectionStretchDoc {
    /// The 916 Strekning's id (left out where no 916 covers the row or the data has none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<u64>,
    /// The 916 Strekning's version (with `id`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub versjon: Option<u32>,
    pub strekning: u16,
    pub delstrekning: u16,
    pub arm: bool,
    /// `Nei`, `Med` or `Mot`.
    #[serde(rename = "adskilte_løp")]
    pub adskilte_lop: &'static str,
    pub trafikantgruppe: char,
    pub fra_meter: u32,
    pub til_meter: u32,
    /// `MED` or `MOT`: the link along or against the metering.
    pub retning: &'static str,
}

/// `strekning` of a road system reference at one metre (the 916's id and versjon as in
/// [`SectionStretchDoc`]).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SectionPointDoc {
    /// The 916 Strekning's id (left out where no 916 covers the row or the data has none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<u64>,
    /// The 916 Strekning's version (with `id`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub versjon: Option<u32>,
    pub strekning: u16,
    pub delstrekning: u16,
    pub arm: bool,
    #[serde(rename = "adskilte_løp")]
    pub adskilte_lop: &'static str,
    pub trafikantgruppe: char,
    pub meter: u32,
    pub retning: &'static str,
}

/// A road system reference (vegsystemreferanse) over a stretch: `kortform` `EV6 S1D1 m200-500`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SystemRefStretch {
    pub vegsystem: RoadSystemDoc,
    pub strekning: SectionStretchDoc,
    pub kortform: String,
}

/// A road system reference at one metre: `kortform` `EV6 S1D1 m200`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SystemRefPoint {
    pub vegsystem: RoadSystemDoc,
    pub strekning: SectionPointDoc,
    pub kortform: String,
}

/// A road system reference of an object's `lokasjon`: at one metre for a point object, else
/// over a stretch.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(untagged)]
pub enum SystemRefAny {
    Point(SystemRefPoint),
    Stretch(SystemRefStretch),
}

/// An object's (id, version) as `id` and `versjon`, both None when not stored (id 0).
fn object_ref((id, version): (u64, u32)) -> (Option<u64>, Option<u32>) {
    if id == 0 {
        (None, None)
    } else {
        (Some(id), Some(version))
    }
}

fn road_system(k: &SystemKey) -> RoadSystemDoc {
    let (id, versjon) = object_ref(k.system_object);
    RoadSystemDoc {
        id,
        versjon,
        vegkategori: k.category as char,
        fase: k.phase as char,
        nummer: k.number,
    }
}

pub fn system_ref_stretch(k: &SystemKey, from_m: u32, to_m: u32) -> SystemRefStretch {
    let (id, versjon) = object_ref(k.section_object);
    SystemRefStretch {
        vegsystem: road_system(k),
        strekning: SectionStretchDoc {
            id,
            versjon,
            strekning: k.section,
            delstrekning: k.subsection,
            arm: k.arm,
            adskilte_lop: k.separate_name(),
            trafikantgruppe: k.traffic_group as char,
            fra_meter: from_m,
            til_meter: to_m,
            retning: k.direction_name(),
        },
        kortform: k.stretch(from_m, to_m),
    }
}

pub fn system_ref_point(p: &SystemPoint) -> SystemRefPoint {
    let k = &p.key;
    let (id, versjon) = object_ref(k.section_object);
    SystemRefPoint {
        vegsystem: road_system(k),
        strekning: SectionPointDoc {
            id,
            versjon,
            strekning: k.section,
            delstrekning: k.subsection,
            arm: k.arm,
            adskilte_lop: k.separate_name(),
            trafikantgruppe: k.traffic_group as char,
            meter: p.meter,
            retning: k.direction_name(),
        },
        kortform: k.point(p.meter),
    }
}

/// `{wkt, srid}`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Geometry {
    pub wkt: String,
    pub srid: u32,
}

/// A link position `{id, posisjon, kortform}`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct LinkPosition {
    pub id: u64,
    pub posisjon: f64,
    pub kortform: String,
}

/// Position result of /veg, /veg/batch and /posisjon (`avstand` only for /posisjon, meters).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct PositionResult {
    pub vegreferanse: RoadRefPoint,
    /// The road system reference at the point (LES v3's shape).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vegsystemreferanse: Option<SystemRefPoint>,
    pub veglenke: LinkPosition,
    pub geometri: Geometry,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub avstand: Option<i64>,
}

/// The position result; `z_tag`: see `Negotiated::wkt_z_tag`.
pub fn position_result(
    p: &NetworkPosition,
    srid: Srid,
    with_distance: bool,
    z_tag: bool,
) -> ApiResult<PositionResult> {
    Ok(PositionResult {
        vegreferanse: road_ref_point(&p.road, p.meter),
        vegsystemreferanse: p.system.as_ref().map(system_ref_point),
        veglenke: LinkPosition {
            id: p.link_id.get(),
            posisjon: round_position(p.position),
            kortform: link_point_short(p.position, p.link_id.get()),
        },
        geometri: Geometry {
            wkt: wkt::point_z(srid, &p.point, z_tag)?,
            srid: srid.code(),
        },
        avstand: with_distance.then(|| p.distance_m.round() as i64),
    })
}

/// (year, month, day) of a day number since 1970-01-01 (Howard Hinnant's civil_from_days).
pub fn civil(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// `YYYY-MM-DD`
pub fn date(days: Days) -> String {
    let (y, m, d) = civil(days as i64);
    format!("{y:04}-{m:02}-{d:02}")
}

/// `YYYY-MM-DD HH:MM:SS`, or with `T` between date and time.
pub fn date_time(secs: i64, with_t: bool) -> String {
    let (y, m, d) = civil(secs.div_euclid(86_400));
    let s = secs.rem_euclid(86_400);
    let sep = if with_t { 'T' } else { ' ' };
    format!(
        "{y:04}-{m:02}-{d:02}{sep}{:02}:{:02}:{:02}",
        s / 3600,
        s % 3600 / 60,
        s % 60
    )
}

/// Seconds east of UTC in Norway (Europe/Oslo) at a UTC instant: CEST (+2) from the last Sunday
/// of March 01:00 UTC to the last Sunday of October 01:00 UTC (the EU rule, in force since
/// 1996), else CET (+1).
pub fn oslo_offset(utc_secs: i64) -> i64 {
    use chrono::{Datelike, NaiveDate};
    let (year, _, _) = civil(utc_secs.div_euclid(86_400));
    let last_sunday = |month: u32| -> i64 {
        let d = NaiveDate::from_ymd_opt(year as i32, month, 31)
            .expect("March and October have 31 days");
        let sunday = d - chrono::Days::new(u64::from(d.weekday().num_days_from_sunday()));
        sunday
            .and_hms_opt(1, 0, 0)
            .expect("01:00 exists")
            .and_utc()
            .timestamp()
    };
    if (last_sunday(3)..last_sunday(10)).contains(&utc_secs) {
        7200
    } else {
        3600
    }
}

/// Norwegian local wall-clock time of a UTC instant, `YYYY-MM-DD HH:MM:SS` or with a `T`.
pub fn oslo_date_time(utc_secs: i64, with_t: bool) -> String {
    date_time(utc_secs + oslo_offset(utc_secs), with_t)
}

/// Position results written straight from the engine's positions as compact JSON: the bytes
/// serde_json writes for [`position_result`]'s value (a property test holds them to it), with
/// no result structs, intermediate strings or escaping pass (`/posisjon` and `/veg`
/// are the hottest answers). Every piece is digits, ASCII letters, spaces and `.@-()`, which a
/// JSON string holds as it is; a road key whose category or status letter would need escaping
/// goes through serde instead.
#[derive(Debug, Clone, Copy)]
pub struct PositionJson {
    pub srid: Srid,
    /// See `Negotiated::wkt_z_tag`.
    pub z_tag: bool,
    /// `avstand` is written (/posisjon).
    pub with_distance: bool,
}

impl PositionJson {
    /// Room for one result: the text of a typical one (about 300 bytes) fits without growing.
    pub const RESULT_BYTES: usize = 384;

    /// `[result,...]`
    pub fn write_list(&self, out: &mut String, list: &[NetworkPosition]) -> ApiResult<()> {
        out.push('[');
        for (i, p) in list.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            self.write(out, p, None)?;
        }
        out.push(']');
        Ok(())
    }

    /// One result; `posisjon`: the link position shown instead of the one found (what /veg
    /// echoes from `veglenke`). On an error `out` may hold part of the result.
    pub fn write(
        &self,
        out: &mut String,
        p: &NetworkPosition,
        posisjon: Option<f64>,
    ) -> ApiResult<()> {
        use crate::util::push_int;
        let k = &p.road;
        out.push_str("{\"vegreferanse\":");
        if json_plain(k.category) && json_plain(k.status) {
            out.push_str("{\"fylke\":");
            push_int(out, k.county.into());
            out.push_str(",\"kommune\":");
            push_int(out, k.municipality_part.into());
            out.push_str(",\"kategori\":\"");
            out.push(k.category as char);
            out.push_str("\",\"status\":\"");
            out.push(k.status as char);
            out.push_str("\",\"nummer\":");
            push_int(out, k.number.into());
            out.push_str(",\"hp\":");
            push_int(out, k.hp.into());
            out.push_str(",\"meter\":");
            push_int(out, p.meter.into());
            out.push_str(",\"kortform\":\"");
            k.push_point(out, p.meter);
            out.push_str("\"}");
        } else {
            let text = serde_json::to_string(&road_ref_point(k, p.meter))
                .map_err(|e| crate::error::EngineError::Internal(e.to_string()))?;
            out.push_str(&text);
        }
        if let Some(sp) = &p.system {
            out.push_str(",\"vegsystemreferanse\":");
            push_system_ref_point(out, sp)?;
        }
        out.push_str(",\"veglenke\":{\"id\":");
        push_int(out, p.link_id.get());
        out.push_str(",\"posisjon\":");
        push_json_f64(out, posisjon.unwrap_or_else(|| round_position(p.position)));
        out.push_str(",\"kortform\":\"");
        push_link_point_short(out, p.position, p.link_id.get());
        out.push_str("\"},\"geometri\":{\"wkt\":\"");
        wkt::push_point_z(out, self.srid, &p.point, self.z_tag)?;
        out.push_str("\",\"srid\":");
        push_int(out, self.srid.code().into());
        out.push('}');
        if self.with_distance {
            out.push_str(",\"avstand\":");
            out.push_str(itoa::Buffer::new().format(p.distance_m.round() as i64));
        }
        out.push('}');
        Ok(())
    }
}

/// [`system_ref_point`]'s JSON as serde_json writes it: by hand when every letter is plain
/// ASCII (the stored ones are), else through serde.
fn push_system_ref_point(out: &mut String, sp: &SystemPoint) -> ApiResult<()> {
    use crate::util::push_int;
    let k = &sp.key;
    let plain = |b: u8| b.is_ascii() && json_plain(b);
    if !(plain(k.category) && plain(k.phase) && plain(k.traffic_group)) {
        let text = serde_json::to_string(&system_ref_point(sp))
            .map_err(|e| crate::error::EngineError::Internal(e.to_string()))?;
        out.push_str(&text);
        return Ok(());
    }
    // `"id":<id>,"versjon":<version>,` where the object is stored
    let push_object = |out: &mut String, (id, version): (u64, u32)| {
        if id != 0 {
            out.push_str("\"id\":");
            push_int(out, id);
            out.push_str(",\"versjon\":");
            push_int(out, version.into());
            out.push(',');
        }
    };
    out.push_str("{\"vegsystem\":{");
    push_object(out, k.system_object);
    out.push_str("\"vegkategori\":\"");
    out.push(k.category as char);
    out.push_str("\",\"fase\":\"");
    out.push(k.phase as char);
    out.push_str("\",\"nummer\":");
    push_int(out, k.number.into());
    out.push_str("},\"strekning\":{");
    push_object(out, k.section_object);
    out.push_str("\"strekning\":");
    push_int(out, k.section.into());
    out.push_str(",\"delstrekning\":");
    push_int(out, k.subsection.into());
    out.push_str(if k.arm {
        ",\"arm\":true"
    } else {
        ",\"arm\":false"
    });
    out.push_str(",\"adskilte_løp\":\"");
    out.push_str(k.separate_name());
    out.push_str("\",\"trafikantgruppe\":\"");
    out.push(k.traffic_group as char);
    out.push_str("\",\"meter\":");
    push_int(out, sp.meter.into());
    out.push_str(",\"retning\":\"");
    out.push_str(k.direction_name());
    out.push_str("\"},\"kortform\":\"");
    out.push_str(&k.point(sp.meter));
    out.push_str("\"}");
    Ok(())
}

/// A byte that serde_json writes into a string as it is (as the char of the same number).
fn json_plain(b: u8) -> bool {
    b >= 0x20 && b != b'"' && b != b'\\'
}

/// A float as serde_json writes it (`null` when not finite): serde_json's own shortest
/// round-trip formatter, `zmij`, without its writer machinery.
fn push_json_f64(out: &mut String, v: f64) {
    if v.is_finite() {
        out.push_str(zmij::Buffer::new().format_finite(v));
    } else {
        out.push_str("null");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn oslo_time_switches_at_the_eu_instants() {
        // 2026: summer time 29 March 01:00 UTC – 25 October 01:00 UTC
        let t = |s: &str| chrono::DateTime::parse_from_rfc3339(s).unwrap().timestamp();
        assert_eq!(
            oslo_date_time(t("2026-03-29T00:59:59Z"), true),
            "2026-03-29T01:59:59"
        );
        assert_eq!(
            oslo_date_time(t("2026-03-29T01:00:00Z"), true),
            "2026-03-29T03:00:00"
        );
        assert_eq!(
            oslo_date_time(t("2026-10-25T00:59:59Z"), false),
            "2026-10-25 02:59:59"
        );
        assert_eq!(
            oslo_date_time(t("2026-10-25T01:00:00Z"), false),
            "2026-10-25 02:00:00"
        );
        assert_eq!(
            oslo_date_time(t("2026-11-23T18:33:00Z"), true),
            "2026-11-23T19:33:00"
        );
    }

    proptest! {
        /// The switch days equal the EU directive's closed formula (valid 1900–2099).
        #[test]
        fn switch_days_follow_the_directive(year in 1996i64..2100) {
            let march = 31 - (5 * year / 4 + 4) % 7;
            let october = 31 - (5 * year / 4 + 1) % 7;
            let at = |m: u32, d: i64, h: i64| {
                chrono::NaiveDate::from_ymd_opt(year as i32, m, d as u32).unwrap().and_hms_opt(0, 0, 0).unwrap().and_utc().timestamp() + h * 3600
            };
            prop_assert_eq!(oslo_offset(at(3, march, 1) - 1), 3600);
            prop_assert_eq!(oslo_offset(at(3, march, 1)), 7200);
            prop_assert_eq!(oslo_offset(at(10, october, 1) - 1), 7200);
            prop_assert_eq!(oslo_offset(at(10, october, 1)), 3600);
        }
    }

    proptest! {
        #[test]
        fn dates_match_chrono(secs in -2_000_000_000i64..4_000_000_000) {
            let c = chrono::DateTime::from_timestamp(secs, 0).unwrap().naive_utc();
            prop_assert_eq!(date_time(secs, true), c.format("%Y-%m-%dT%H:%M:%S").to_string());
            prop_assert_eq!(date(secs.div_euclid(86_400) as i32), c.format("%Y-%m-%d").to_string());
        }
    }
}

#[cfg(test)]
mod position_json_tests {
    use super::*;
    use crate::ids::LinkId;
    use proptest::prelude::*;

    fn letter() -> impl Strategy<Value = u8> {
        prop_oneof![
            8 => prop::sample::select(b"ERFKPSVWTAG".to_vec()),
            1 => any::<u8>(),
        ]
    }

    fn coordinate() -> impl Strategy<Value = f64> {
        prop_oneof![
            -1.0e6f64..1.0e7,
            any::<f64>().prop_filter("finite", |v| v.is_finite()),
            Just(f64::NAN),
        ]
    }

    fn position() -> impl Strategy<Value = NetworkPosition> {
        (
            (
                any::<u8>(),
                any::<u8>(),
                letter(),
                letter(),
                any::<u32>(),
                any::<u16>(),
            ),
            (any::<u64>(), prop_oneof![0.0f64..=1.0, any::<f64>()]),
            (coordinate(), coordinate(), coordinate()),
            (any::<u32>(), prop_oneof![0.0f64..1.0e5, any::<f64>()]),
        )
            .prop_map(
                |(
                    (county, m, category, status, number, hp),
                    (link, position),
                    (x, y, z),
                    (meter, d),
                )| {
                    NetworkPosition {
                        row: 0,
                        link_id: LinkId(link),
                        position,
                        point: [x, y, z],
                        road: RoadKey {
                            county,
                            municipality_part: m,
                            category,
                            status,
                            number,
                            hp,
                        },
                        meter,
                        distance_m: d,
                        system: (link % 3 != 0).then_some(SystemPoint {
                            key: SystemKey {
                                category,
                                phase: status,
                                number,
                                section: hp / 100,
                                subsection: hp % 100,
                                arm: link % 5 == 0,
                                separate: (link % 4) as u8,
                                traffic_group: m,
                                against: link % 2 == 0,
                                system_object: if link % 7 == 0 {
                                    (0, 0)
                                } else {
                                    (link / 3, (link % 4) as u32)
                                },
                                section_object: if link % 11 == 0 {
                                    (0, 0)
                                } else {
                                    (link / 5 + 1, (link % 3) as u32 + 1)
                                },
                            },
                            meter,
                        }),
                    }
                },
            )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        /// The written JSON is serde_json's text of `position_result`'s value, byte for byte, in
        /// every output system, and fails where that fails.
        #[test]
        fn position_json_is_serde_json_of_the_result(
            list in proptest::collection::vec(position(), 0..4),
            srid in prop::sample::select(Srid::ALL.to_vec()),
            z_tag: bool,
            with_distance: bool,
            echo in proptest::option::of(any::<f64>()),
        ) {
            let writer = PositionJson { srid, z_tag, with_distance };
            let expected: ApiResult<Vec<PositionResult>> = list
                .iter()
                .map(|p| position_result(p, srid, with_distance, z_tag))
                .collect();
            let mut ours = String::new();
            let written = writer.write_list(&mut ours, &list);
            match expected {
                Ok(results) => {
                    prop_assert!(written.is_ok());
                    prop_assert_eq!(&ours, &serde_json::to_string(&results).unwrap());
                    if let Some(p) = list.first() {
                        let mut one = results[0].clone();
                        if let Some(e) = echo {
                            one.veglenke.posisjon = e;
                        }
                        let mut ours = String::new();
                        writer.write(&mut ours, p, echo).unwrap();
                        prop_assert_eq!(ours, serde_json::to_string(&one).unwrap());
                    }
                }
                Err(_) => prop_assert!(written.is_err()),
            }
        }
    }
}
