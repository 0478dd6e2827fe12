//! Associations: a mother lists her daughters per relation type, by nvdbId (existing objects
//! of the relation's type) or tempId (objects registered in the same changeset).

use super::object::{ObjectCheck, Validator};
use super::{ChildEdit, Code, Daughter, Step};
use crate::catalog::ObjectType;
use crate::changeset::model::{Association, PartialOp, RoadObject};
use crate::changeset::working::Found;

impl Validator<'_, '_> {
    /// Every association of the object, unless the validator was told to skip them.
    pub(super) fn check_associations(
        &mut self,
        check: &mut ObjectCheck,
        t: &ObjectType,
        o: &RoadObject,
        step: &mut Step,
    ) {
        if self.ctx.skip_associations {
            return;
        }
        for a in &o.associations {
            if let Some(edit) = self.association(check, t, a) {
                step.children.push(edit);
            }
        }
    }

    fn association(
        &mut self,
        check: &mut ObjectCheck,
        t: &ObjectType,
        a: &Association,
    ) -> Option<ChildEdit> {
        let relation = t
            .relation_types
            .children
            .iter()
            .find(|r| r.id == a.type_id || r.target.id == a.type_id);
        let Some(relation) = relation else {
            check.error(
                Code::InvalidAssociation,
                format!(
                    "{} ({}) kan ikke ha døtre av assosiasjonstype {}",
                    t.name, t.id, a.type_id
                ),
                None,
            );
            return None;
        };
        let child_type = relation.target.id;
        let mut daughters = Vec::new();
        for &id in &a.nvdb_ids {
            match self.work.find(id) {
                Found::Current(d) if d.type_id == child_type => daughters.push(Daughter::Id(id)),
                Found::Current(d) => check.error(
                    Code::InvalidAssociation,
                    format!("Datter {id} er av type {}, ikke {child_type}", d.type_id),
                    None,
                ),
                Found::Closed(_) | Found::Missing if a.op == Some(PartialOp::Slett) => {
                    daughters.push(Daughter::Id(id))
                }
                _ => check.error(
                    Code::ObjectDoesNotExist,
                    format!("Datter {id} finnes ikke"),
                    None,
                ),
            }
        }
        for temp in &a.temp_ids {
            match self.new_types.get(temp.as_str()) {
                Some(&ty) if ty == child_type => daughters.push(Daughter::Temp(temp.clone())),
                Some(&ty) => check.error(
                    Code::InvalidAssociation,
                    format!("Datter med tempId {temp} er av type {ty}, ikke {child_type}"),
                    None,
                ),
                None => check.error(
                    Code::UnknownTempId,
                    format!("Ingen vegObjekt i registrer har tempId {temp}"),
                    None,
                ),
            }
        }
        Some(ChildEdit {
            child_type,
            daughters,
            op: a.op,
        })
    }
}
