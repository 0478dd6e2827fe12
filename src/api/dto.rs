//! Response shapes shared by several endpoints: position results, road references, geometry.
//! Typed (serde + `ToSchema`), so JSON, XML and the OpenAPI schemas come from the same types.

use serde::Serialize;
use utoipa::ToSchema;

use crate::geo::srid::Srid;
use crate::geo::wkt;
use crate::query::network::NetworkPosition;
use crate::query::vegref::{link_point_short, round_position, RoadKey};
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

/// A value with a hand-written compact JSON form, byte for byte what `serde_json::to_writer`
/// writes for it (each implementation is checked against serde by a property test). Only the
/// hottest answers have one (`/posisjon`, `/veg`): serde's generic path escapes every key and
/// goes through a serializer call per field.
pub trait CompactJson {
    fn write_compact_json(&self, out: &mut Vec<u8>);
}

impl<T: CompactJson> CompactJson for [T] {
    fn write_compact_json(&self, out: &mut Vec<u8>) {
        out.push(b'[');
        for (i, v) in self.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            v.write_compact_json(out);
        }
        out.push(b']');
    }
}

/// JSON text pieces for [`CompactJson`] writers: a string as serde_json escapes it, and a float
/// as serde_json writes it (the same code does it, so the bytes agree by construction).
fn json_str(out: &mut Vec<u8>, s: &str) {
    if s.bytes()
        .all(|b| b >= 0x20 && b != b'"' && b != b'\\' && b < 0x7f)
    {
        out.push(b'"');
        out.extend_from_slice(s.as_bytes());
        out.push(b'"');
    } else {
        let _ = serde_json::to_writer(&mut *out, s);
    }
}

fn json_uint(out: &mut Vec<u8>, n: u64) {
    out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
}

fn json_char(out: &mut Vec<u8>, c: char) {
    let mut buf = [0u8; 4];
    json_str(out, c.encode_utf8(&mut buf));
}

impl CompactJson for RoadRefPoint {
    fn write_compact_json(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"{\"fylke\":");
        json_uint(out, u64::from(self.fylke));
        out.extend_from_slice(b",\"kommune\":");
        json_uint(out, u64::from(self.kommune));
        out.extend_from_slice(b",\"kategori\":");
        json_char(out, self.kategori);
        out.extend_from_slice(b",\"status\":");
        json_char(out, self.status);
        out.extend_from_slice(b",\"nummer\":");
        json_uint(out, u64::from(self.nummer));
        out.extend_from_slice(b",\"hp\":");
        json_uint(out, u64::from(self.hp));
        out.extend_from_slice(b",\"meter\":");
        json_uint(out, u64::from(self.meter));
        out.extend_from_slice(b",\"kortform\":");
        json_str(out, &self.kortform);
        out.push(b'}');
    }
}

impl CompactJson for PositionResult {
    fn write_compact_json(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"{\"vegreferanse\":");
        self.vegreferanse.write_compact_json(out);
        out.extend_from_slice(b",\"veglenke\":{\"id\":");
        json_uint(out, self.veglenke.id);
        out.extend_from_slice(b",\"posisjon\":");
        let _ = serde_json::to_writer(&mut *out, &self.veglenke.posisjon);
        out.extend_from_slice(b",\"kortform\":");
        json_str(out, &self.veglenke.kortform);
        out.extend_from_slice(b"},\"geometri\":{\"wkt\":");
        json_str(out, &self.geometri.wkt);
        out.extend_from_slice(b",\"srid\":");
        json_uint(out, u64::from(self.geometri.srid));
        out.push(b'}');
        if let Some(d) = self.avstand {
            out.extend_from_slice(b",\"avstand\":");
            out.extend_from_slice(itoa::Buffer::new().format(d).as_bytes());
        }
        out.push(b'}');
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
mod compact_json_tests {
    use super::*;
    use proptest::prelude::*;

    fn text() -> impl Strategy<Value = String> {
        prop_oneof![
            "[0-9A-Za-z@. -]{0,30}",
            any::<String>(),
            Just("POINT Z (310463.711 6994755.455 312.042)".to_string()),
        ]
    }

    fn position() -> impl Strategy<Value = PositionResult> {
        (
            (
                any::<u8>(),
                any::<u8>(),
                any::<char>(),
                any::<char>(),
                any::<u32>(),
                any::<u16>(),
                any::<u32>(),
                text(),
            ),
            (
                any::<u64>(),
                prop_oneof![
                    0.0f64..=1.0,
                    any::<f64>().prop_filter("finite", |v| v.is_finite())
                ],
                text(),
            ),
            (text(), any::<u32>(), proptest::option::of(any::<i64>())),
        )
            .prop_map(
                |(
                    (fylke, kommune, kategori, status, nummer, hp, meter, kortform),
                    (id, posisjon, lk),
                    (wkt, srid, avstand),
                )| PositionResult {
                    vegreferanse: RoadRefPoint {
                        fylke,
                        kommune,
                        kategori,
                        status,
                        nummer,
                        hp,
                        meter,
                        kortform,
                    },
                    veglenke: LinkPosition {
                        id,
                        posisjon,
                        kortform: lk,
                    },
                    geometri: Geometry { wkt, srid },
                    avstand,
                },
            )
    }

    proptest! {
        /// The hand-written JSON is serde_json's, byte for byte.
        #[test]
        fn compact_json_is_serde_json(list in proptest::collection::vec(position(), 0..4)) {
            let mut ours = Vec::new();
            list.as_slice().write_compact_json(&mut ours);
            prop_assert_eq!(String::from_utf8(ours).unwrap(), serde_json::to_string(&list).unwrap());
            if let Some(one) = list.first() {
                let mut ours = Vec::new();
                one.write_compact_json(&mut ours);
                prop_assert_eq!(String::from_utf8(ours).unwrap(), serde_json::to_string(one).unwrap());
            }
        }
    }
}
