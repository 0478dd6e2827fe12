//! One object of a changeset: its type and the user's rights to it, the current version it
//! names, then each rule family in turn (`properties`, `location`, `associations`).

use std::collections::{BTreeMap, HashMap, HashSet};

use super::{parse_date, Code, Context, Issue, ObjectResult, Outcome, Step};
use crate::catalog::ObjectType;
use crate::changeset::model::{Operation, RoadObject};
use crate::changeset::working::{Found, ObjectState, Working};

/// Where one object's problems go, and what they imply for the whole changeset.
pub(super) struct ObjectCheck<'a> {
    result: &'a mut ObjectResult,
    reference: String,
    /// The user lacks a right (the changeset is rejected IKKE_AUTORISERT).
    pub unauthorized: bool,
    /// The object has a newer version than the changeset names.
    pub version_conflict: bool,
}

impl<'a> ObjectCheck<'a> {
    pub fn new(result: &'a mut ObjectResult, reference: String) -> ObjectCheck<'a> {
        ObjectCheck {
            result,
            reference,
            unauthorized: false,
            version_conflict: false,
        }
    }
    pub fn error(&mut self, code: Code, message: String, property: Option<u32>) {
        let issue = Issue::new(code, message, &self.reference, property);
        self.result.errors.push(issue);
    }
    pub fn warn(&mut self, code: Code, message: String, property: Option<u32>) {
        let issue = Issue::new(code, message, &self.reference, property);
        self.result.warnings.push(issue);
    }
    /// A missing right: an error that also marks the changeset unauthorised.
    pub fn denied(&mut self, message: String) {
        self.unauthorized = true;
        self.error(Code::MissingRight, message, None);
    }
    /// Carry the changeset-wide flags into the outcome.
    pub fn report_into(&self, out: &mut Outcome) {
        out.unauthorized |= self.unauthorized;
        out.version_conflict |= self.version_conflict;
    }
}

/// What checking the objects of one changeset shares.
pub(super) struct Validator<'v, 'g> {
    pub work: &'v mut Working<'g>,
    pub ctx: &'v Context<'v>,
    /// Types of the objects registered in this changeset, by tempId.
    pub new_types: &'v HashMap<&'v str, u32>,
    /// Existing objects named so far (each may occur once).
    pub seen_ids: HashSet<u64>,
}

impl Validator<'_, '_> {
    /// Check one object; the step to apply when nothing stops it.
    pub fn check_object(
        &mut self,
        check: &mut ObjectCheck,
        op: Operation,
        o: &RoadObject,
    ) -> Option<Step> {
        let Some(t) = self.work.catalog().object_type(o.type_id) else {
            check.error(
                Code::UnknownObjectType,
                format!("Vegobjekttype {} finnes ikke i datakatalogen", o.type_id),
                None,
            );
            return None;
        };
        self.check_rights(check, op, t);
        let current = match op {
            Operation::Register => None,
            _ => Some(self.current_version(check, op, o)?),
        };
        let mut step = new_step(op, t, o, current);
        // the rights cover where the object is now (and, below, where it is moved to): a
        // user limited to some municipalities can neither change nor move away another's
        // objects
        if let Some(cur) = &step.current {
            let placements = cur.placements.clone();
            self.check_municipalities(check, &placements, "gjeldende stedfesting");
        }
        if op == Operation::Delete {
            return Some(step);
        }
        self.check_properties(check, t, o, &mut step);
        self.check_location(check, op, t, o, &mut step);
        self.check_associations(check, t, o, &mut step);
        Some(step)
    }

    /// The user may write objects of this type, and may use this operation.
    fn check_rights(&self, check: &mut ObjectCheck, op: Operation, t: &ObjectType) {
        let rights = self.ctx.rights;
        if !rights.may_type(t.id) {
            check.denied(format!(
                "Brukeren har ikke skriverett til vegobjekttype {} ({})",
                t.name, t.id
            ));
        }
        if !rights.may_op(op) {
            check.denied(format!(
                "Brukeren har ikke rett til {} (krever rollen {})",
                op.api_name(),
                if op.is_correction() {
                    "korriger eller admin"
                } else {
                    "skriv, korriger eller admin"
                }
            ));
        }
    }

    /// The object as it is now, when the changeset names it once, by its type and its
    /// current version.
    fn current_version(
        &mut self,
        check: &mut ObjectCheck,
        op: Operation,
        o: &RoadObject,
    ) -> Option<ObjectState> {
        let (Some(id), Some(given)) = (o.nvdb_id, o.version) else {
            check.error(
                Code::MissingIdOrVersion,
                format!("{} krever nvdbId og versjon", op.api_name()),
                None,
            );
            return None;
        };
        if !self.seen_ids.insert(id) {
            check.error(
                Code::ConflictBetweenObjects,
                format!("Vegobjekt {id} forekommer flere ganger i endringssettet"),
                None,
            );
            return None;
        }
        let cur = match self.work.find(id) {
            Found::Current(cur) => cur,
            Found::Missing => {
                let message = format!("Vegobjekt {id} finnes ikke");
                check.error(Code::ObjectDoesNotExist, message, None);
                return None;
            }
            Found::Closed(_) => {
                let message = format!("Vegobjekt {id} er lukket (slettet)");
                check.error(Code::ObjectIsClosed, message, None);
                return None;
            }
        };
        if cur.type_id != o.type_id {
            check.error(
                Code::WrongObjectType,
                format!(
                    "Vegobjekt {id} er av type {}, ikke {}",
                    cur.type_id, o.type_id
                ),
                None,
            );
            return None;
        }
        if given < cur.version {
            check.version_conflict = true;
            check.error(
                Code::VersionConflict,
                format!(
                    "Vegobjekt {id} er endret av andre: gjeldende versjon er {}, endringssettet har versjon {given}",
                    cur.version
                ),
                None,
            );
            return None;
        }
        if given > cur.version {
            check.error(
                Code::UnknownVersion,
                format!(
                    "Vegobjekt {id} har ikke versjon {given}; gjeldende versjon er {}",
                    cur.version
                ),
                None,
            );
            return None;
        }
        Some(cur)
    }
}

/// The step of an object before its properties, location and associations are read.
fn new_step(op: Operation, t: &ObjectType, o: &RoadObject, current: Option<ObjectState>) -> Step {
    Step {
        op,
        type_id: t.id,
        temp_id: o.temp_id.clone(),
        current,
        values: BTreeMap::new(),
        replace_values: matches!(
            op,
            Operation::Register | Operation::Update | Operation::Correct
        ),
        geometry: None,
        placements: None,
        children: Vec::new(),
        end_date: o.end_date.as_deref().and_then(parse_date),
        cascade: o
            .cascade
            .as_deref()
            .is_some_and(|c| c.eq_ignore_ascii_case("ja")),
    }
}
