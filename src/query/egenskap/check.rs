//! An `egenskap` filter checked against the catalogue, and the sensitive properties it reads.

use super::ast::{Expr, Literal, Op};
use crate::catalog::{Catalog, ObjectType, ValueKind};
use crate::error::{EngineError, FilterCatalog, Invalid, Result};

/// Check the filter against the catalogue for `object_type`: properties must belong to the type
/// (or, inside `relasjon`, to the child type, which must be a catalogue child); enum properties
/// take ids and only =, !=, in, notin.
pub fn check(e: &Expr, catalog: &Catalog, t: &ObjectType) -> Result<()> {
    let bad = |problem: FilterCatalog| EngineError::from(Invalid::FilterCatalog(problem));
    match e {
        Expr::And(v) | Expr::Or(v) => v.iter().try_for_each(|x| check(x, catalog, t)),
        Expr::Relation { child_type, expr } => {
            if !t
                .relation_types
                .children
                .iter()
                .any(|r| r.target.id == *child_type)
            {
                return Err(bad(FilterCatalog::NotAChild {
                    type_id: t.id,
                    child_type: *child_type,
                }));
            }
            let ct = catalog
                .object_type(*child_type)
                .ok_or_else(|| bad(FilterCatalog::UnknownType(*child_type)))?;
            check(expr, catalog, ct)
        }
        Expr::Cmp {
            property,
            op,
            value,
        } => {
            let p = t.property(*property).ok_or_else(|| {
                bad(FilterCatalog::NotOnType {
                    property: *property,
                    type_id: t.id,
                })
            })?;
            if p.storage() == ValueKind::Enum && !matches!(op, Op::Eq | Op::Ne) {
                return Err(bad(FilterCatalog::EnumNeedsEquality(*property)));
            }
            if p.storage() == ValueKind::Enum {
                if let Literal::Text(s) = value {
                    return Err(bad(FilterCatalog::EnumComparedWithText {
                        property: *property,
                        text: s.clone(),
                    }));
                }
            }
            if p.storage() == ValueKind::Geometry {
                return Err(bad(FilterCatalog::Geometry(*property)));
            }
            Ok(())
        }
        Expr::In {
            property, values, ..
        } => {
            let p = t.property(*property).ok_or_else(|| {
                bad(FilterCatalog::NotOnType {
                    property: *property,
                    type_id: t.id,
                })
            })?;
            if values.contains(&Literal::Null) {
                return Err(bad(FilterCatalog::NullInList));
            }
            if p.storage() == ValueKind::Geometry {
                return Err(bad(FilterCatalog::Geometry(*property)));
            }
            Ok(())
        }
    }
}

/// The first property with `sensitivitet` > 0 the filter reads, if any (filtering on a value
/// reveals it, so only callers who may see sensitive values may do it).
pub fn sensitive_property(e: &Expr, catalog: &Catalog, t: &ObjectType) -> Option<u32> {
    let sensitive = |t: &ObjectType, id: u32| {
        t.property(id)
            .is_some_and(|p| p.sensitivity > 0)
            .then_some(id)
    };
    match e {
        Expr::And(v) | Expr::Or(v) => v.iter().find_map(|x| sensitive_property(x, catalog, t)),
        Expr::Relation { child_type, expr } => {
            sensitive_property(expr, catalog, catalog.object_type(*child_type)?)
        }
        Expr::Cmp { property, .. } | Expr::In { property, .. } => sensitive(t, *property),
    }
}
