//! The properties of one object: known property types, one value each, binary resources,
//! geometry, values against the catalogue (`values.rs`), then the required and recommended
//! ones of full operations.

use std::collections::HashSet;

use super::object::{ObjectCheck, Validator};
use super::values::{geometry_value, property_value};
use super::{Code, Step};
use crate::catalog::ObjectType;
use crate::changeset::model::{PartialOp, Property, RoadObject};

impl Validator<'_, '_> {
    /// Read every given property into `step`; then, for full operations, those missing.
    pub(super) fn check_properties(
        &self,
        check: &mut ObjectCheck,
        t: &ObjectType,
        o: &RoadObject,
        step: &mut Step,
    ) {
        let mut given: HashSet<u32> = HashSet::new();
        for p in &o.properties {
            if t.property(p.type_id).is_some() {
                given.insert(p.type_id);
            }
            self.check_property(check, t, p, step);
        }
        if step.replace_values {
            check_required(check, t, &given);
        }
    }

    fn check_property(
        &self,
        check: &mut ObjectCheck,
        t: &ObjectType,
        p: &Property,
        step: &mut Step,
    ) {
        let Some(pt) = t.property(p.type_id) else {
            check.error(
                Code::UnknownPropertyType,
                format!(
                    "Egenskapstype {} finnes ikke for vegobjekttype {} ({})",
                    p.type_id, t.name, t.id
                ),
                Some(p.type_id),
            );
            return;
        };
        if p.op == Some(PartialOp::Slett) {
            if pt.is_geometry() {
                step.geometry = Some(Vec::new());
            } else {
                step.values.insert(pt.id, None);
            }
            return;
        }
        if p.value_count() == 0 {
            return;
        }
        if p.value_count() > 1 {
            check.error(
                Code::InvalidMultipleValues,
                format!("{} ({}) kan bare ha én verdi", pt.name, pt.id),
                Some(pt.id),
            );
            return;
        }
        for r in p.binaries.iter().filter_map(|b| b.resource_id.as_ref()) {
            if !(self.ctx.binary_exists)(r) {
                check.error(
                    Code::UnknownBinaryResource,
                    format!("Binærressurs {r} finnes ikke; last den opp med POST /binaer"),
                    Some(pt.id),
                );
            }
        }
        if pt.is_geometry() {
            match geometry_value(pt, p) {
                Ok(g) => step.geometry = Some(g),
                Err(e) => check.error(Code::InvalidGeometry, e.to_string(), Some(pt.id)),
            }
            return;
        }
        if let Some(v) = property_value(check, pt, p) {
            step.values.insert(pt.id, Some(v));
        }
    }
}

/// Full operations name every required property (an error each) and should name the
/// recommended ones (one warning).
fn check_required(check: &mut ObjectCheck, t: &ObjectType, given: &HashSet<u32>) {
    let wanted = |importance| {
        t.property_types
            .iter()
            .filter(move |p| p.importance == importance && !p.control.derived)
            .filter(|p| !given.contains(&p.id))
    };
    for p in wanted(1) {
        check.error(
            Code::MissingRequiredProperties,
            format!("Mangler obligatorisk egenskap {} ({})", p.name, p.id),
            Some(p.id),
        );
    }
    let recommended: Vec<String> = wanted(2)
        .map(|p| format!("{} ({})", p.name, p.id))
        .collect();
    if !recommended.is_empty() {
        check.warn(
            Code::MissingRecommendedProperties,
            format!("Mangler anbefalte egenskaper: {}", recommended.join(", ")),
            None,
        );
    }
}
