//! Locations against the type's stedfesting and the road network; municipality rights.

use super::object::{ObjectCheck, Validator};
use super::{Code, Step};
use crate::catalog::{ObjectType, Placement as PlacementKind};
use crate::changeset::model::{Direction, Location, Operation, PartialOp, RoadObject};
use crate::changeset::working::{Placement, Working};
use crate::snapshot::columns::{join_lanes, lane_codes};

impl Validator<'_, '_> {
    /// The object's new location (removed, replaced, or required for a new object), unless
    /// the validator was told to skip locations.
    pub(super) fn check_location(
        &self,
        check: &mut ObjectCheck,
        op: Operation,
        t: &ObjectType,
        o: &RoadObject,
        step: &mut Step,
    ) {
        if self.ctx.skip_location {
            return;
        }
        match &o.location {
            Some(l) if l.op == Some(PartialOp::Slett) => {
                if t.placement != PlacementKind::Unplaced {
                    check.error(
                        Code::MissingLocation,
                        format!("{} ({}) må ha lokasjon; den kan ikke slettes", t.name, t.id),
                        None,
                    );
                } else {
                    step.placements = Some(Vec::new());
                }
            }
            Some(l) if !l.is_empty() => {
                if let Some(p) = placements(self.work, check, t, l) {
                    self.check_municipalities(check, &p, "ny stedfesting");
                    step.placements = Some(p);
                }
            }
            _ => {
                if op == Operation::Register && t.placement != PlacementKind::Unplaced {
                    check.error(
                        Code::MissingLocation,
                        format!(
                            "{} ({}) har stedfesting {} og må ha lokasjon",
                            t.name,
                            t.id,
                            t.placement.message_name()
                        ),
                        None,
                    );
                }
            }
        }
    }

    /// Does the user have the right in every municipality `placements` lie in? `what` names
    /// the placement in the message (the object's current location, its new one, a
    /// daughter's).
    pub(super) fn check_municipalities(
        &self,
        check: &mut ObjectCheck,
        placements: &[Placement],
        what: &str,
    ) -> bool {
        municipalities_allowed(self.work, self.ctx.rights, check, placements, what)
    }
}

/// `check_municipalities` for callers outside a `Validator` (cascading deletes).
pub(super) fn municipalities_allowed(
    work: &Working,
    rights: &crate::auth::Rights,
    check: &mut ObjectCheck,
    placements: &[Placement],
    what: &str,
) -> bool {
    let Some(allowed) = &rights.municipalities else {
        return true;
    };
    let n = &work.base.network;
    for p in placements {
        for row in n.rows_overlapping(p.link_id, p.from.min(p.to), p.from.max(p.to)) {
            let m = n.municipality[row];
            if !allowed.contains(&m) {
                check.denied(format!(
                    "Brukeren har ikke skriverett i kommune {m} ({what})"
                ));
                return false;
            }
        }
    }
    true
}

/// The placements of a location of the right kind, each on a known, non-connection link.
fn placements(
    work: &Working,
    check: &mut ObjectCheck,
    t: &ObjectType,
    l: &Location,
) -> Option<Vec<Placement>> {
    let kind_ok = match t.placement {
        PlacementKind::Point => l.lines.is_empty() && l.turns.is_empty() && l.points.len() == 1,
        PlacementKind::MultiPoint => l.lines.is_empty() && l.turns.is_empty(),
        PlacementKind::Line => l.points.is_empty() && l.turns.is_empty(),
        PlacementKind::Turn => l.points.is_empty() && l.lines.is_empty(),
        PlacementKind::Unplaced => false,
    };
    if !kind_ok {
        check.error(
            Code::InvalidPlacementKind,
            format!(
                "{} ({}) har stedfesting {}; lokasjonen har {} punkt, {} linje og {} sving",
                t.name,
                t.id,
                t.placement.message_name(),
                l.points.len(),
                l.lines.len(),
                l.turns.len()
            ),
            None,
        );
        return None;
    }
    // points, lines, then each turn's two points, as given
    let given = l
        .points
        .iter()
        .map(|p| (p.link_id, p.position, p.position, p.direction, &p.lanes))
        .chain(
            l.lines
                .iter()
                .map(|p| (p.link_id, p.from, p.to, p.direction, &p.lanes)),
        )
        .chain(
            l.turns
                .iter()
                .flat_map(|s| [&s.from, &s.to])
                .map(|p| (p.link_id, p.position, p.position, p.direction, &p.lanes)),
        );
    let mut out = Vec::new();
    let mut ok = true;
    for (link, from, to, direction, felt) in given {
        let against = direction == Some(Direction::Against);
        match placement(work, check, link, from, to, against) {
            Some(mut p) => {
                // `felt` as stored lanes: its codes joined by `#` (empty ones dropped)
                let codes: Vec<&str> = felt
                    .as_deref()
                    .map(lane_codes)
                    .into_iter()
                    .flatten()
                    .collect();
                p.lanes = join_lanes(&codes);
                out.push(p);
            }
            None => ok = false,
        }
    }
    ok.then_some(out)
}

/// One placement on a known, non-connection link with positions in 0..1 (from ≤ to) that a
/// road-referenced row covers, without lanes; else None with the error in `check`.
fn placement(
    work: &Working,
    check: &mut ObjectCheck,
    link: u64,
    from: f64,
    to: f64,
    against: bool,
) -> Option<Placement> {
    let n = &work.base.network;
    let rows = n.rows_of_link(link);
    if rows.is_empty() {
        check.error(
            Code::UnknownLink,
            format!("Veglenke {link} finnes ikke"),
            None,
        );
        return None;
    }
    let in_range = |v: f64| v.is_finite() && (0.0..=1.0).contains(&v);
    if !in_range(from) || !in_range(to) || from > to {
        check.error(
            Code::InvalidPosition,
            format!("Posisjon {from}..{to} på veglenke {link} er utenfor [0, 1] eller fra > til"),
            None,
        );
        return None;
    }
    let covering: Vec<usize> = n.rows_overlapping(link, from, to).collect();
    if covering.is_empty() {
        check.error(
            Code::InvalidPosition,
            format!("Veglenke {link} har ingen vegreferanse ved posisjon {from}..{to}"),
            None,
        );
        return None;
    }
    if covering.iter().any(|&r| n.is_connection[r]) {
        check.error(
            Code::PlacedOnConnectionLink,
            format!("Veglenke {link} er en konnekteringslenke"),
            None,
        );
        return None;
    }
    Some(Placement {
        link_id: link,
        from,
        to,
        against,
        lanes: Box::default(),
    })
}
