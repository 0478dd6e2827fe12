//! Cascading deletes (`kaskadeSletting: "ja"`): the daughters closed with their mother must be
//! the user's to write too.

use std::collections::{HashMap, HashSet};

use super::location::municipalities_allowed;
use super::object::ObjectCheck;
use super::{ChildEdit, Context, Daughter, ObjectResult, Outcome, Step};
use crate::changeset::model::{Operation, PartialOp};
use crate::changeset::working::{Found, Working};

/// A daughter reached by a cascading delete.
#[derive(Clone, PartialEq, Eq, Hash)]
enum Node {
    Id(u64),
    Temp(String),
}

/// The daughters an object will have once the steps of its own changeset are applied.
fn children_after(base: Vec<(u32, u64)>, edits: &[ChildEdit]) -> Vec<(u32, Node)> {
    let mut out: Vec<(u32, Node)> = base.into_iter().map(|(t, id)| (t, Node::Id(id))).collect();
    for e in edits {
        let given: Vec<(u32, Node)> = e
            .daughters
            .iter()
            .map(|d| {
                let n = match d {
                    Daughter::Id(id) => Node::Id(*id),
                    Daughter::Temp(t) => Node::Temp(t.clone()),
                };
                (e.child_type, n)
            })
            .collect();
        match e.op {
            None => {
                out.retain(|c| c.0 != e.child_type);
                out.extend(given);
            }
            Some(PartialOp::Oppdater) => {
                for d in given {
                    if !out.contains(&d) {
                        out.push(d);
                    }
                }
            }
            Some(PartialOp::Slett) => out.retain(|c| !given.contains(c)),
        }
    }
    out
}

/// `kaskadeSletting: "ja"` closes the daughters too (and theirs): each one the changeset does
/// not name itself must be of a type, and lie in municipalities, the user may write. Daughters
/// the changeset names have been checked by their own step.
pub(super) fn check_cascades(
    work: &mut Working,
    ctx: &Context,
    steps: &[Step],
    step_results: &[usize],
    out: &mut Outcome,
) {
    if ctx.rights.types.is_none() && ctx.rights.municipalities.is_none() {
        return;
    }
    let mut own: HashMap<Node, &Step> = HashMap::new();
    for s in steps {
        if let Some(cur) = &s.current {
            own.insert(Node::Id(cur.id), s);
        } else if let Some(t) = &s.temp_id {
            own.insert(Node::Temp(t.clone()), s);
        }
    }
    for (s, &result_index) in steps.iter().zip(step_results) {
        if s.op != Operation::Delete || !s.cascade {
            continue;
        }
        let Some(cur) = &s.current else { continue };
        let mut result = ObjectResult::default();
        let mut check =
            ObjectCheck::new(&mut result, format!("slett/vegObjekt[nvdbId={}]", cur.id));
        let mut seen: HashSet<Node> = HashSet::new();
        seen.insert(Node::Id(cur.id));
        let mut todo: Vec<Node> = children_after(cur.children.clone(), &[])
            .into_iter()
            .map(|(_, n)| n)
            .collect();
        while let Some(node) = todo.pop() {
            if !seen.insert(node.clone()) {
                continue;
            }
            let children = match (own.get(&node), &node) {
                (Some(step), _) => {
                    let base = step
                        .current
                        .as_ref()
                        .map(|c| c.children.clone())
                        .unwrap_or_default();
                    children_after(base, &step.children)
                }
                (None, Node::Id(id)) => match work.find(*id) {
                    Found::Current(d) => {
                        if !ctx.rights.may_type(d.type_id) {
                            check.denied(format!(
                                "kaskadeSletting: brukeren har ikke skriverett til datter {id} av vegobjekttype {}",
                                d.type_id
                            ));
                        }
                        let what = format!("kaskadeSletting, datter {id}");
                        municipalities_allowed(work, ctx.rights, &mut check, &d.placements, &what);
                        children_after(d.children, &[])
                    }
                    _ => Vec::new(),
                },
                (None, Node::Temp(_)) => Vec::new(),
            };
            todo.extend(children.into_iter().map(|(_, n)| n));
        }
        out.unauthorized |= check.unauthorized;
        if let Some(r) = out.objects.get_mut(result_index) {
            r.errors.append(&mut result.errors);
        }
    }
}
