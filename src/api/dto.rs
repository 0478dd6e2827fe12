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

pub fn date(days: Days) -> String {
    (chrono::NaiveDate::from_ymd_opt(1970, 1, 1).expect("epoch")
        + chrono::Duration::days(days as i64))
    .format("%Y-%m-%d")
    .to_string()
}
