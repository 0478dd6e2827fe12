//! Checking a changeset: `check_shape` (synchronous, at registration: what makes the request
//! itself malformed, answered with HTTP 400) and `validate` (against the catalogue and the
//! current data, reported per object with the v2 codes of DOC-SKRIV2 `validering.md`).
//!
//! `validate` never mutates; when it finds no error it returns a `Plan` that `apply` carries out
//! without further checks, which is what makes a changeset all or nothing. Property values are
//! checked in `values.rs`, locations and municipality rights in `location.rs`.

mod location;
mod values;

use location::{check_location, check_municipalities};
pub use values::geometry_value;
use values::property_value;

use std::collections::{BTreeMap, HashMap, HashSet};

use chrono::NaiveDate;
use serde::{Deserialize, Serialize};

use super::model::{Changeset, Operation, PartialOp, RoadObject};
use super::working::{Found, ObjectState, Placement, Working};
use crate::catalog::{Placement as Stedfesting, PropertyType};
use crate::generate::values::Value;
use crate::geo::Coord3;
use crate::snapshot::columns::Days;

/// Most objects one changeset may hold.
pub const MAX_OBJECTS: usize = 100_000;

/// One reported problem (`feil` or `advarsel`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Issue {
    pub code: String,
    pub message: String,
    pub reference: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub property_type_id: Option<u32>,
}

/// The result for one object of the changeset.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ObjectResult {
    pub temp_id: Option<String>,
    pub nvdb_id: Option<u64>,
    pub errors: Vec<Issue>,
    pub warnings: Vec<Issue>,
}

/// Everything validation (and later processing) reports.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    pub objects: Vec<ObjectResult>,
    pub errors: Vec<Issue>,
    pub warnings: Vec<Issue>,
    /// An object has a newer version than the changeset names.
    pub version_conflict: bool,
    /// The user lacks the right for a municipality or type.
    pub unauthorized: bool,
}

impl Outcome {
    pub fn has_errors(&self) -> bool {
        !self.errors.is_empty() || self.objects.iter().any(|o| !o.errors.is_empty())
    }
}

/// What the writing user may touch (None = no limit). `Rights::default()` is an admin's: no
/// limit at all.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Rights {
    pub municipalities: Option<HashSet<u16>>,
    pub types: Option<HashSet<u32>>,
    /// May write at all (role skriv, korriger or admin).
    #[serde(default = "yes")]
    pub write: bool,
    /// May send korriger and delvisKorriger (role korriger or admin).
    #[serde(default = "yes")]
    pub correct: bool,
}

fn yes() -> bool {
    true
}

impl Default for Rights {
    fn default() -> Rights {
        Rights {
            municipalities: None,
            types: None,
            write: true,
            correct: true,
        }
    }
}

impl Rights {
    /// No right at all (a user who no longer exists).
    pub fn none() -> Rights {
        Rights {
            municipalities: Some(HashSet::new()),
            types: Some(HashSet::new()),
            write: false,
            correct: false,
        }
    }
    pub fn may_type(&self, type_id: u32) -> bool {
        self.types.as_ref().is_none_or(|t| t.contains(&type_id))
    }
    pub fn may_op(&self, op: Operation) -> bool {
        self.write && (self.correct || !op.is_correction())
    }
}

/// How an object's daughters of one relation change.
#[derive(Debug, Clone, PartialEq)]
pub enum Daughter {
    Id(u64),
    Temp(String),
}

#[derive(Debug, Clone)]
pub struct ChildEdit {
    /// Daughter type.
    pub child_type: u32,
    pub daughters: Vec<Daughter>,
    /// None = full replacement of this relation; Some = partial operation.
    pub op: Option<PartialOp>,
}

/// A checked object, ready to apply.
#[derive(Debug, Clone)]
pub struct Step {
    pub op: Operation,
    pub type_id: u32,
    pub temp_id: Option<String>,
    /// The current object (all operations but registrer).
    pub current: Option<ObjectState>,
    /// property id -> new value (None = remove).
    pub values: BTreeMap<u32, Option<Value>>,
    /// Replace all values (full operations) rather than patch.
    pub replace_values: bool,
    /// Some(new own geometry), Some(empty) = remove.
    pub geometry: Option<Vec<Coord3>>,
    pub placements: Option<Vec<Placement>>,
    pub children: Vec<ChildEdit>,
    pub end_date: Option<Days>,
    pub cascade: bool,
}

/// The checked changeset.
#[derive(Debug, Clone)]
pub struct Plan {
    pub effect_date: Days,
    pub steps: Vec<Step>,
}

pub fn parse_date(text: &str) -> Option<Days> {
    let d = NaiveDate::parse_from_str(text.trim(), "%Y-%m-%d").ok()?;
    Some((d - NaiveDate::from_ymd_opt(1970, 1, 1).expect("valid date")).num_days() as Days)
}

/// Problems that make the request malformed (HTTP 400 at registration or validation).
pub fn check_shape(c: &Changeset) -> Result<(), String> {
    if parse_date(&c.effect_date).is_none() {
        return Err(format!(
            "Ugyldig effektDato '{}': bruk ÅÅÅÅ-MM-DD",
            c.effect_date
        ));
    }
    if c.catalogue_version.trim().is_empty() {
        return Err("Mangler datakatalogversjon".into());
    }
    let n = c.object_count();
    if n == 0 {
        return Err("Endringssettet inneholder ingen vegobjekter".into());
    }
    if n > MAX_OBJECTS {
        return Err(format!(
            "Endringssettet har {n} vegobjekter; største tillatte antall er {MAX_OBJECTS}"
        ));
    }
    let mut temp_ids = HashSet::new();
    for (op, o) in c.objects() {
        let name = op.api_name();
        if let Some(t) = &o.temp_id {
            if !temp_ids.insert(t.as_str()) {
                return Err("Må være unik: tempId".into());
            }
        }
        if op != Operation::Register && (o.nvdb_id.is_none() || o.version.is_none()) {
            return Err(format!(
                "{name}: vegObjekt av type {} mangler nvdbId eller versjon",
                o.type_id
            ));
        }
        if op == Operation::Delete {
            match o.cascade.as_deref().map(str::to_ascii_lowercase).as_deref() {
                Some("ja") | Some("nei") => {}
                _ => {
                    return Err(format!(
                        "slett: vegObjekt {} mangler kaskadeSletting (ja eller nei)",
                        o.nvdb_id.unwrap_or_default()
                    ))
                }
            }
        }
        if op.is_partial() {
            let missing = o.properties.iter().any(|p| p.op.is_none())
                || o.associations.iter().any(|a| a.op.is_none())
                || o.location.as_ref().is_some_and(|l| l.op.is_none());
            if missing {
                return Err(format!(
                    "{name}: hver egenskap, assosiasjon og lokasjon må ha operasjon (oppdater eller slett)"
                ));
            }
        }
        for d in [&o.end_date].into_iter().flatten() {
            if parse_date(d).is_none() {
                return Err(format!("Ugyldig sluttDato '{d}': bruk ÅÅÅÅ-MM-DD"));
            }
        }
    }
    Ok(())
}

/// Non-finite numbers (`NaN`, `inf`, `1e999`) in values of number and geometry properties:
/// malformed (HTTP 400 at registration). Positions are refused already when the body is read.
pub fn check_numbers(c: &Changeset, catalog: &crate::catalog::Catalog) -> Result<(), String> {
    for (op, o) in c.objects() {
        let Some(t) = catalog.object_type(o.type_id) else {
            continue;
        };
        for p in &o.properties {
            let Some(pt) = t.property(p.type_id) else {
                continue;
            };
            let numeric = pt.is_geometry()
                || matches!(
                    pt.storage(),
                    crate::catalog::ValueKind::Integer | crate::catalog::ValueKind::Float
                );
            if let Some(v) = p
                .values
                .iter()
                .find(|v| numeric && super::model::has_non_finite(v))
            {
                return Err(format!(
                    "{}: {} ({}) har verdien '{v}', som ikke er et endelig tall",
                    op.api_name(),
                    pt.name,
                    pt.id
                ));
            }
        }
    }
    Ok(())
}

/// Context validation needs besides the working state.
pub struct Context<'a> {
    pub rights: &'a Rights,
    /// Does a binary resource exist?
    pub binary_exists: &'a dyn Fn(&str) -> bool,
    /// Validator options `skipLocation` / `skipAssociations`: leave those checks out.
    pub skip_location: bool,
    pub skip_associations: bool,
}

struct ObjectCheck<'a> {
    result: &'a mut ObjectResult,
    reference: String,
}

impl ObjectCheck<'_> {
    fn error(&mut self, code: &'static str, message: String, property: Option<u32>) {
        self.result.errors.push(Issue {
            code: code.into(),
            message,
            reference: self.reference.clone(),
            property_type_id: property,
        });
    }
    fn warn(&mut self, code: &'static str, message: String, property: Option<u32>) {
        self.result.warnings.push(Issue {
            code: code.into(),
            message,
            reference: self.reference.clone(),
            property_type_id: property,
        });
    }
}

/// Validate `c` against the working state. Returns the outcome and, when it has no errors,
/// the plan to apply.
pub fn validate(work: &mut Working, c: &Changeset, ctx: &Context) -> (Outcome, Option<Plan>) {
    let mut out = Outcome::default();
    let Some(effect_date) = parse_date(&c.effect_date) else {
        out.errors.push(Issue {
            code: "UGYLDIG_EFFEKTDATO".into(),
            message: format!("Ugyldig effektDato '{}'", c.effect_date),
            reference: "endringssett".into(),
            property_type_id: None,
        });
        return (out, None);
    };
    let catalog = work.catalog();
    if c.catalogue_version.trim() != catalog.version.version {
        out.warnings.push(Issue {
            code: "IKKE_GJELDENDE_DATAKATALOGVERSJON".into(),
            message: format!(
                "Endringssettet er laget for datakatalogversjon {}; gjeldende er {}",
                c.catalogue_version, catalog.version.version
            ),
            reference: "endringssett".into(),
            property_type_id: None,
        });
    }
    // types of the objects registered here, by tempId (for associations to new daughters)
    let new_types: HashMap<&str, u32> = c
        .registrer
        .objects
        .iter()
        .filter_map(|o| Some((o.temp_id.as_deref()?, o.type_id)))
        .collect();
    let mut seen_ids: HashSet<u64> = HashSet::new();
    let mut steps = Vec::with_capacity(c.object_count());
    // the result each step reports into
    let mut step_results: Vec<usize> = Vec::with_capacity(c.object_count());
    for (index, (op, o)) in c.objects().enumerate() {
        let mut result = ObjectResult {
            temp_id: o.temp_id.clone(),
            nvdb_id: o.nvdb_id,
            ..Default::default()
        };
        let reference = match (&o.temp_id, o.nvdb_id) {
            (Some(t), _) => format!("{}/vegObjekt[tempId={t}]", op.api_name()),
            (None, Some(id)) => format!("{}/vegObjekt[nvdbId={id}]", op.api_name()),
            (None, None) => format!("{}/vegObjekt[{index}]", op.api_name()),
        };
        let mut check = ObjectCheck {
            result: &mut result,
            reference,
        };
        let step = check_object(
            work,
            ctx,
            &mut check,
            op,
            o,
            &new_types,
            &mut seen_ids,
            &mut out,
        );
        if let Some(s) = step {
            steps.push(s);
            step_results.push(out.objects.len());
        }
        out.objects.push(result);
    }
    check_cascades(work, ctx, &steps, &step_results, &mut out);
    if out.has_errors() {
        (out, None)
    } else {
        (out, Some(Plan { effect_date, steps }))
    }
}

/// A daughter reached by a cascading delete, with its type when known.
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
fn check_cascades(
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
        let mut check = ObjectCheck {
            result: &mut result,
            reference: format!("slett/vegObjekt[nvdbId={}]", cur.id),
        };
        let mut local = Outcome::default();
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
                            local.unauthorized = true;
                            check.error(
                                "MANGLER_TILGANG",
                                format!(
                                    "kaskadeSletting: brukeren har ikke skriverett til datter {id} av vegobjekttype {}",
                                    d.type_id
                                ),
                                None,
                            );
                        }
                        let what = format!("kaskadeSletting, datter {id}");
                        check_municipalities(
                            work,
                            ctx,
                            &mut check,
                            &d.placements,
                            &what,
                            &mut local,
                        );
                        children_after(d.children, &[])
                    }
                    _ => Vec::new(),
                },
                (None, Node::Temp(_)) => Vec::new(),
            };
            todo.extend(children.into_iter().map(|(_, n)| n));
        }
        out.unauthorized |= local.unauthorized;
        if let Some(r) = out.objects.get_mut(result_index) {
            r.errors.append(&mut result.errors);
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn check_object(
    work: &mut Working,
    ctx: &Context,
    check: &mut ObjectCheck,
    op: Operation,
    o: &RoadObject,
    new_types: &HashMap<&str, u32>,
    seen_ids: &mut HashSet<u64>,
    out: &mut Outcome,
) -> Option<Step> {
    let catalog = work.catalog();
    let Some(t) = catalog.object_type(o.type_id) else {
        check.error(
            "UKJENT_VEGOBJEKTTYPE",
            format!("Vegobjekttype {} finnes ikke i datakatalogen", o.type_id),
            None,
        );
        return None;
    };
    if !ctx.rights.may_type(t.id) {
        out.unauthorized = true;
        check.error(
            "MANGLER_TILGANG",
            format!(
                "Brukeren har ikke skriverett til vegobjekttype {} ({})",
                t.name, t.id
            ),
            None,
        );
    }
    if !ctx.rights.may_op(op) {
        out.unauthorized = true;
        check.error(
            "MANGLER_TILGANG",
            format!(
                "Brukeren har ikke rett til {} (krever rollen {})",
                op.api_name(),
                if op.is_correction() {
                    "korriger eller admin"
                } else {
                    "skriv, korriger eller admin"
                }
            ),
            None,
        );
    }
    // the object as it is now
    let current = match op {
        Operation::Register => None,
        _ => {
            let (Some(id), Some(given)) = (o.nvdb_id, o.version) else {
                check.error(
                    "MANGLER_NVDBID_ELLER_VERSJON",
                    format!("{} krever nvdbId og versjon", op.api_name()),
                    None,
                );
                return None;
            };
            if !seen_ids.insert(id) {
                check.error(
                    "KONFLIKT_MELLOM_VEGOBJEKTER",
                    format!("Vegobjekt {id} forekommer flere ganger i endringssettet"),
                    None,
                );
                return None;
            }
            match work.find(id) {
                Found::Missing => {
                    check.error(
                        "VEGOBJEKTET_FINNES_IKKE",
                        format!("Vegobjekt {id} finnes ikke"),
                        None,
                    );
                    return None;
                }
                Found::Closed(_) => {
                    check.error(
                        "VEGOBJEKTET_ER_LUKKET",
                        format!("Vegobjekt {id} er lukket (slettet)"),
                        None,
                    );
                    return None;
                }
                Found::Current(cur) => {
                    if cur.type_id != o.type_id {
                        check.error(
                            "FEIL_VEGOBJEKTTYPE",
                            format!(
                                "Vegobjekt {id} er av type {}, ikke {}",
                                cur.type_id, o.type_id
                            ),
                            None,
                        );
                        return None;
                    }
                    if given < cur.version {
                        out.version_conflict = true;
                        check.error(
                            "VERSJONSKONFLIKT",
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
                            "UKJENT_VERSJON",
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
        }
    };
    let mut step = Step {
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
    };
    // the rights cover where the object is now (and, below, where it is moved to): a user
    // limited to some municipalities can neither change nor move away another's objects
    if let Some(cur) = &step.current {
        check_municipalities(
            work,
            ctx,
            check,
            &cur.placements,
            "gjeldende stedfesting",
            out,
        );
    }
    if op == Operation::Delete {
        return Some(step);
    }

    // properties
    let mut given: HashSet<u32> = HashSet::new();
    for p in &o.properties {
        let Some(pt) = t.property(p.type_id) else {
            check.error(
                "UKJENT_EGENSKAPSTYPE",
                format!(
                    "Egenskapstype {} finnes ikke for vegobjekttype {} ({})",
                    p.type_id, t.name, t.id
                ),
                Some(p.type_id),
            );
            continue;
        };
        given.insert(pt.id);
        if p.op == Some(PartialOp::Slett) {
            if pt.is_geometry() {
                step.geometry = Some(Vec::new());
            } else {
                step.values.insert(pt.id, None);
            }
            continue;
        }
        if p.value_count() == 0 {
            continue;
        }
        if p.value_count() > 1 {
            check.error(
                "UGYLDIG_FLERVERDI",
                format!("{} ({}) kan bare ha én verdi", pt.name, pt.id),
                Some(pt.id),
            );
            continue;
        }
        for b in &p.binaries {
            if let Some(r) = &b.resource_id {
                if !(ctx.binary_exists)(r) {
                    check.error(
                        "UKJENT_BINÆRRESSURS",
                        format!("Binærressurs {r} finnes ikke; last den opp med POST /binaer"),
                        Some(pt.id),
                    );
                }
            }
        }
        if pt.is_geometry() {
            match geometry_value(pt, p) {
                Ok(g) => step.geometry = Some(g),
                Err(m) => check.error("UGYLDIG_GEOMETRI", m, Some(pt.id)),
            }
            continue;
        }
        if let Some(v) = property_value(check, pt, p) {
            step.values.insert(pt.id, Some(v));
        }
    }
    if step.replace_values {
        let missing: Vec<&PropertyType> = t
            .property_types
            .iter()
            .filter(|p| p.importance == 1 && !p.control.derived && !given.contains(&p.id))
            .collect();
        for p in missing {
            check.error(
                "MANGLER_OBLIGATORISKE_EGENSKAPER",
                format!("Mangler obligatorisk egenskap {} ({})", p.name, p.id),
                Some(p.id),
            );
        }
        let recommended: Vec<String> = t
            .property_types
            .iter()
            .filter(|p| p.importance == 2 && !p.control.derived && !given.contains(&p.id))
            .map(|p| format!("{} ({})", p.name, p.id))
            .collect();
        if !recommended.is_empty() {
            check.warn(
                "MANGLER_ANBEFALTE_EGENSKAPER",
                format!("Mangler anbefalte egenskaper: {}", recommended.join(", ")),
                None,
            );
        }
    }

    // location
    let location = if ctx.skip_location {
        None
    } else {
        o.location.as_ref()
    };
    match location {
        Some(l) if l.op == Some(PartialOp::Slett) => {
            if t.placement != Stedfesting::Ingen {
                check.error(
                    "MANGLER_LOKASJON",
                    format!("{} ({}) må ha lokasjon; den kan ikke slettes", t.name, t.id),
                    None,
                );
            } else {
                step.placements = Some(Vec::new());
            }
        }
        Some(l) if !l.is_empty() => {
            if let Some(p) = check_location(work, check, t, l) {
                check_municipalities(work, ctx, check, &p, "ny stedfesting", out);
                step.placements = Some(p);
            }
        }
        _ => {
            if op == Operation::Register && t.placement != Stedfesting::Ingen && !ctx.skip_location
            {
                check.error(
                    "MANGLER_LOKASJON",
                    format!(
                        "{} ({}) har stedfesting {:?} og må ha lokasjon",
                        t.name, t.id, t.placement
                    ),
                    None,
                );
            }
        }
    }

    // associations (the mother lists her daughters)
    let associations: &[super::model::Association] = if ctx.skip_associations {
        &[]
    } else {
        &o.associations
    };
    for a in associations {
        let relation = t
            .relation_types
            .children
            .iter()
            .find(|r| r.id == a.type_id || r.target.id == a.type_id);
        let Some(relation) = relation else {
            check.error(
                "UGYLDIG_ASSOSIASJON",
                format!(
                    "{} ({}) kan ikke ha døtre av assosiasjonstype {}",
                    t.name, t.id, a.type_id
                ),
                None,
            );
            continue;
        };
        let child_type = relation.target.id;
        let mut daughters = Vec::new();
        for &id in &a.nvdb_ids {
            match work.find(id) {
                Found::Current(d) if d.type_id == child_type => daughters.push(Daughter::Id(id)),
                Found::Current(d) => check.error(
                    "UGYLDIG_ASSOSIASJON",
                    format!("Datter {id} er av type {}, ikke {child_type}", d.type_id),
                    None,
                ),
                Found::Closed(_) | Found::Missing if a.op == Some(PartialOp::Slett) => {
                    daughters.push(Daughter::Id(id))
                }
                _ => check.error(
                    "VEGOBJEKTET_FINNES_IKKE",
                    format!("Datter {id} finnes ikke"),
                    None,
                ),
            }
        }
        for temp in &a.temp_ids {
            match new_types.get(temp.as_str()) {
                Some(&ty) if ty == child_type => daughters.push(Daughter::Temp(temp.clone())),
                Some(&ty) => check.error(
                    "UGYLDIG_ASSOSIASJON",
                    format!("Datter med tempId {temp} er av type {ty}, ikke {child_type}"),
                    None,
                ),
                None => check.error(
                    "UKJENT_TEMPID",
                    format!("Ingen vegObjekt i registrer har tempId {temp}"),
                    None,
                ),
            }
        }
        step.children.push(ChildEdit {
            child_type,
            daughters,
            op: a.op,
        });
    }
    Some(step)
}
