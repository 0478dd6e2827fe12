//! Carrying out a validated plan on the working state. Infallible by construction: every check
//! happened in `validate`, so a changeset is applied whole or (when validation failed) not at
//! all.
//!
//! Effects (DOC-SKRIV2 README): registrer creates version 1 from effektDato; oppdater and
//! delvisOppdater create the next version from effektDato (the previous one ends at effektDato
//! and becomes history); korriger and delvisKorriger change the current version in place (its
//! dates unchanged, no history); slett ends the current version at effektDato (it becomes
//! history, the object is listed as deleted; with the daughters when kaskadeSletting is "ja").
//! Every changed object gets `sist_modifisert` = the processing time.

use std::collections::HashMap;

use super::model::{Operation, PartialOp};
use super::validate::{Daughter, Plan};
use super::working::{Found, ObjectState, Working};
use crate::snapshot::columns::{Days, Seconds, OPEN_END};

/// Apply `plan`; returns the nvdbId of each step (in plan order).
pub fn apply(work: &mut Working, plan: &Plan, now: Seconds) -> Vec<u64> {
    // ids for the new objects first, so associations can name them by tempId
    let mut temp_ids: HashMap<String, u64> = HashMap::new();
    let mut ids = Vec::with_capacity(plan.steps.len());
    for step in &plan.steps {
        let id = match (&step.current, step.op) {
            (Some(cur), _) => cur.id,
            (None, _) => work.allocate_id(),
        };
        if let Some(t) = &step.temp_id {
            temp_ids.insert(t.clone(), id);
        }
        ids.push(id);
    }
    for (step, &id) in plan.steps.iter().zip(&ids) {
        if step.op == Operation::Delete {
            continue;
        }
        let mut o = step.current.clone().unwrap_or_else(|| ObjectState {
            type_id: step.type_id,
            id,
            version: 1,
            start_date: plan.effect_date,
            end_date: OPEN_END,
            last_modified: now,
            placements: Vec::new(),
            geometry: Vec::new(),
            children: Vec::new(),
            values: Default::default(),
        });
        match step.op {
            Operation::Update | Operation::PartialUpdate => {
                // an effektDato before the version began counts as its start (the version
                // then was valid on no day), so versions never overlap
                let day = plan.effect_date.max(o.start_date);
                work.end_version(&o, day);
                o.version += 1;
                o.start_date = day;
            }
            Operation::Correct | Operation::PartialCorrect | Operation::Register => {}
            Operation::Delete => unreachable!("handled above"),
        }
        o.last_modified = now;
        if let Some(end) = step.end_date {
            o.end_date = end;
        }
        if step.replace_values {
            o.values.clear();
            if step.op != Operation::Register && step.geometry.is_none() {
                // a full replacement without a geometry property removes the geometry
                o.geometry.clear();
            }
        }
        for (&pid, v) in &step.values {
            match v {
                Some(v) => {
                    o.values.insert(pid, v.clone());
                }
                None => {
                    o.values.remove(&pid);
                }
            }
        }
        if let Some(g) = &step.geometry {
            o.geometry = g.clone();
        }
        if let Some(p) = &step.placements {
            o.placements = p.clone();
        }
        if !step.children.is_empty() {
            work.relations_changed = true;
        }
        for edit in &step.children {
            let resolve = |d: &Daughter| match d {
                Daughter::Id(id) => *id,
                Daughter::Temp(t) => temp_ids[t],
            };
            let daughters: Vec<(u32, u64)> = edit
                .daughters
                .iter()
                .map(|d| (edit.child_type, resolve(d)))
                .collect();
            match edit.op {
                None => {
                    o.children.retain(|c| c.0 != edit.child_type);
                    o.children.extend(daughters);
                }
                Some(PartialOp::Oppdater) => {
                    for d in daughters {
                        if !o.children.contains(&d) {
                            o.children.push(d);
                        }
                    }
                }
                Some(PartialOp::Slett) => o.children.retain(|c| !daughters.contains(c)),
            }
        }
        work.put(o);
    }
    for (step, _) in plan.steps.iter().zip(&ids) {
        if step.op == Operation::Delete {
            if let Some(cur) = &step.current {
                delete(work, cur.id, step.cascade, (now, plan.effect_date));
            }
        }
    }
    ids
}

/// Close an object (and its daughters, when cascading) at `at` (processing time, effect date):
/// its last version ends at the effect date; the mother forgets a closed daughter.
fn delete(work: &mut Working, id: u64, cascade: bool, at: (Seconds, Days)) {
    let Found::Current(o) = work.find(id) else {
        return; // already closed by a cascade earlier in this changeset
    };
    let (now, effect_date) = at;
    work.end_version(&o, effect_date);
    work.close(&o, now);
    if let Some(&(pt, pid)) = work.base.parents.get(&id) {
        if let Found::Current(mut mother) = work.find(pid) {
            if mother.type_id == pt {
                mother.children.retain(|c| c.1 != id);
                work.put(mother);
            }
        }
    }
    if cascade {
        for (_, child) in o.children {
            delete(work, child, true, at);
        }
    }
}
