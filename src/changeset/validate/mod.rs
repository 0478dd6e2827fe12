//! Checking a changeset: `check_shape` (synchronous, at registration: what makes the request
//! itself malformed, answered with HTTP 400) and `validate` (against the catalogue and the
//! current data, reported per object with the v2 codes of DOC-SKRIV2 `validering.md`).
//!
//! `validate` never mutates; when it finds no error it returns a `Plan` that `apply` carries out
//! without further checks, which is what makes a changeset all or nothing. One file per rule
//! family: `shape` (malformed requests), `object` (type, rights, the current version),
//! `properties` + `values` (property values), `location` (locations, municipality rights),
//! `associations` (daughters), `cascade` (cascading deletes); `code` names every code.

mod associations;
mod cascade;
mod code;
mod location;
mod object;
mod properties;
mod shape;
#[cfg(test)]
mod tests;
mod values;

pub use code::Code;
pub use shape::{check_numbers, check_shape, ShapeError, MAX_OBJECTS};
pub use values::{geometry_value, GeometryError};

use std::collections::{BTreeMap, HashMap, HashSet};

use chrono::NaiveDate;
use serde::{Deserialize, Serialize};

use super::model::{Changeset, Operation, PartialOp};
use super::working::{ObjectState, Placement, Working};
use crate::auth::Rights;
use crate::geo::Coord3;
use crate::snapshot::columns::Days;
use crate::value::Value;
use object::{ObjectCheck, Validator};

/// One reported problem (`feil` or `advarsel`), as stored in the journal and in a
/// generation's results: `code` is a `Code`'s API text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Issue {
    pub code: String,
    pub message: String,
    pub reference: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub property_type_id: Option<u32>,
}

impl Issue {
    pub fn new(code: Code, message: String, reference: &str, property: Option<u32>) -> Issue {
        Issue {
            code: code.as_str().into(),
            message,
            reference: reference.into(),
            property_type_id: property,
        }
    }
    pub fn is(&self, code: Code) -> bool {
        self.code == code.as_str()
    }
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
    /// The current object (all operations but register).
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

/// Context validation needs besides the working state.
pub struct Context<'a> {
    pub rights: &'a Rights,
    /// Does a binary resource exist?
    pub binary_exists: &'a dyn Fn(&str) -> bool,
    /// Validator options `skipLocation` / `skipAssociations`: leave those checks out.
    pub skip_location: bool,
    pub skip_associations: bool,
}

/// The reference of the changeset as a whole.
const CHANGESET: &str = "endringssett";

/// Validate `c` against the working state. Returns the outcome and, when it has no errors,
/// the plan to apply.
pub fn validate(work: &mut Working, c: &Changeset, ctx: &Context) -> (Outcome, Option<Plan>) {
    let mut out = Outcome::default();
    let Some(effect_date) = parse_date(&c.effect_date) else {
        out.errors.push(Issue::new(
            Code::InvalidEffectDate,
            format!("Ugyldig effektDato '{}'", c.effect_date),
            CHANGESET,
            None,
        ));
        return (out, None);
    };
    let catalog = work.catalog();
    if c.catalogue_version.trim() != catalog.version.version {
        out.warnings.push(Issue::new(
            Code::NotCurrentCatalogueVersion,
            format!(
                "Endringssettet er laget for datakatalogversjon {}; gjeldende er {}",
                c.catalogue_version, catalog.version.version
            ),
            CHANGESET,
            None,
        ));
    }
    // types of the objects registered here, by tempId (for associations to new daughters)
    let new_types: HashMap<&str, u32> = c
        .register
        .objects
        .iter()
        .filter_map(|o| Some((o.temp_id.as_deref()?, o.type_id)))
        .collect();
    let mut validator = Validator {
        work,
        ctx,
        new_types: &new_types,
        seen_ids: HashSet::new(),
    };
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
        let mut check = ObjectCheck::new(&mut result, reference);
        let step = validator.check_object(&mut check, op, o);
        check.report_into(&mut out);
        if let Some(s) = step {
            steps.push(s);
            step_results.push(out.objects.len());
        }
        out.objects.push(result);
    }
    cascade::check_cascades(validator.work, ctx, &steps, &step_results, &mut out);
    if out.has_errors() {
        (out, None)
    } else {
        (out, Some(Plan { effect_date, steps }))
    }
}
