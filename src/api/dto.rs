//! JSON shapes shared by several endpoints: position results, road references, geometry.

use serde_json::{json, Value};

use crate::geo::srid::Srid;
use crate::geo::wkt;
use crate::query::network::NetworkPosition;
use crate::query::vegref::{format_position, link_point_short, RoadKey};
use crate::snapshot::columns::Days;

use super::error::ApiResult;

pub fn road_ref_point(k: &RoadKey, meter: u32) -> Value {
    json!({
        "fylke": k.county,
        "kommune": k.municipality_part,
        "kategori": (k.category as char).to_string(),
        "status": (k.status as char).to_string(),
        "nummer": k.number,
        "hp": k.hp,
        "meter": meter,
        "kortform": k.point(meter),
    })
}

pub fn road_ref_stretch(k: &RoadKey, from_m: u32, to_m: u32) -> Value {
    json!({
        "fylke": k.county,
        "kommune": k.municipality_part,
        "kategori": (k.category as char).to_string(),
        "status": (k.status as char).to_string(),
        "nummer": k.number,
        "hp": k.hp,
        "fra_meter": from_m,
        "til_meter": to_m,
        "kortform": if from_m == to_m { k.point(from_m) } else { k.stretch(from_m, to_m) },
    })
}

/// Position result of /veg, /veg/batch and /posisjon (`avstand` only for /posisjon).
pub fn position_result(p: &NetworkPosition, srid: Srid, with_distance: bool) -> ApiResult<Value> {
    let pos: f64 = format_position(p.position).parse().unwrap_or(p.position);
    let mut v = json!({
        "vegreferanse": road_ref_point(&p.road, p.meter),
        "veglenke": { "id": p.link_id, "posisjon": pos, "kortform": link_point_short(p.position, p.link_id) },
        "geometri": { "wkt": wkt::point_z(srid, &p.point)?, "srid": srid.code() },
    });
    if with_distance {
        v["avstand"] = json!(p.distance_m.round() as i64);
    }
    Ok(v)
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn dates_match_chrono(secs in -2_000_000_000i64..4_000_000_000) {
            let c = chrono::DateTime::from_timestamp(secs, 0).unwrap().naive_utc();
            prop_assert_eq!(date_time(secs, true), c.format("%Y-%m-%dT%H:%M:%S").to_string());
            prop_assert_eq!(date(secs.div_euclid(86_400) as i32), c.format("%Y-%m-%d").to_string());
        }
    }
}
