//! Locations against the type's stedfesting and the road network; municipality rights.

use super::{Context, ObjectCheck, Outcome};
use crate::catalog::{ObjectType, Placement as Stedfesting};
use crate::changeset::model::{Direction, Location};
use crate::changeset::working::{Placement, Working};

/// Does the user have the right in every municipality `placements` lie in? `what` names the
/// placement in the message (the object's current location, its new one, a daughter's).
pub(super) fn check_municipalities(
    work: &Working,
    ctx: &Context,
    check: &mut ObjectCheck,
    placements: &[Placement],
    what: &str,
    out: &mut Outcome,
) -> bool {
    let Some(allowed) = &ctx.rights.municipalities else {
        return true;
    };
    let n = &work.base.network;
    for p in placements {
        for row in n.rows_overlapping(p.link_id, p.from.min(p.to), p.from.max(p.to)) {
            let m = n.municipality[row];
            if !allowed.contains(&m) {
                out.unauthorized = true;
                check.error(
                    "MANGLER_TILGANG",
                    format!("Brukeren har ikke skriverett i kommune {m} ({what})"),
                    None,
                );
                return false;
            }
        }
    }
    true
}

pub(super) fn check_location(
    work: &Working,
    check: &mut ObjectCheck,
    t: &ObjectType,
    l: &Location,
) -> Option<Vec<Placement>> {
    let kind_ok = match t.placement {
        Stedfesting::Punkt => l.linje.is_empty() && l.sving.is_empty() && l.punkt.len() == 1,
        Stedfesting::Flerepunkt => l.linje.is_empty() && l.sving.is_empty(),
        Stedfesting::Linje => l.punkt.is_empty() && l.sving.is_empty(),
        Stedfesting::Sving => l.punkt.is_empty() && l.linje.is_empty(),
        Stedfesting::Ingen => false,
    };
    if !kind_ok {
        check.error(
            "UGYLDIG_STEDFESTING",
            format!(
                "{} ({}) har stedfesting {:?}; lokasjonen har {} punkt, {} linje og {} sving",
                t.name,
                t.id,
                t.placement,
                l.punkt.len(),
                l.linje.len(),
                l.sving.len()
            ),
            None,
        );
        return None;
    }
    let mut out = Vec::new();
    let mut ok = true;
    let mut one = |check: &mut ObjectCheck, link: u64, from: f64, to: f64, against: bool| {
        let n = &work.base.network;
        let rows = n.rows_of_link(link);
        if rows.is_empty() {
            check.error("UKJENT_LENKE", format!("Veglenke {link} finnes ikke"), None);
            return false;
        }
        let in_range = |v: f64| v.is_finite() && (0.0..=1.0).contains(&v);
        if !in_range(from) || !in_range(to) || from > to {
            check.error(
                "UGYLDIG_POSISJON",
                format!(
                    "Posisjon {from}..{to} på veglenke {link} er utenfor [0, 1] eller fra > til"
                ),
                None,
            );
            return false;
        }
        let covering: Vec<usize> = n.rows_overlapping(link, from, to).collect();
        if covering.is_empty() {
            check.error(
                "UGYLDIG_POSISJON",
                format!("Veglenke {link} har ingen vegreferanse ved posisjon {from}..{to}"),
                None,
            );
            return false;
        }
        if covering.iter().any(|&r| n.is_connection[r]) {
            check.error(
                "STEDFESTET_PÅ_KONNEKTERINGSLENKE",
                format!("Veglenke {link} er en konnekteringslenke"),
                None,
            );
            return false;
        }
        out.push(Placement {
            link_id: link,
            from,
            to,
            against,
        });
        true
    };
    for p in &l.punkt {
        ok &= one(
            check,
            p.link_id,
            p.position,
            p.position,
            p.direction == Some(Direction::Against),
        );
    }
    for p in &l.linje {
        ok &= one(
            check,
            p.link_id,
            p.from,
            p.to,
            p.direction == Some(Direction::Against),
        );
    }
    for s in &l.sving {
        for p in [&s.fra, &s.til] {
            ok &= one(
                check,
                p.link_id,
                p.position,
                p.position,
                p.direction == Some(Direction::Against),
            );
        }
    }
    ok.then_some(out)
}
