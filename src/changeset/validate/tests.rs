//! Every validation code, each produced by the smallest changeset that breaks its rule, run
//! against the committed demo generation (loaded once). The final test checks the cases cover
//! `Code::VALIDATION` entirely, so a new code without a test fails here.

use std::collections::{BTreeSet, HashSet};

use serde_json::{json, Value as Json};

use super::{validate, Code, Context, Outcome};
use crate::auth::Rights;
use crate::catalog::{Catalog, Placement as PlacementKind};
use crate::changeset::model::Changeset;
use crate::changeset::working::{Found, Working};
use crate::generation::Generation;

fn demo() -> &'static Generation {
    crate::generation::demo_for_tests()
}

/// A link with no connection row, and a position inside a row of it.
fn plain_link(g: &Generation) -> (u64, f64) {
    let n = &g.network;
    let row = (0..n.link_id.len())
        .find(|&r| {
            let link = n.link_id[r];
            n.rows_of_link(link).all(|r| !n.is_connection[r])
        })
        .expect("a plain link");
    (n.link_id[row], (n.from_pos[row] + n.to_pos[row]) / 2.0)
}

fn changeset(parts: Json) -> Changeset {
    let mut c = json!({"effektDato": "2026-11-01",
        "datakatalogversjon": Catalog::embedded().version.version});
    for (k, v) in parts.as_object().expect("parts") {
        c[k] = v.clone();
    }
    serde_json::from_value(c).expect("a changeset")
}

/// A Skiltpunkt (95) with one allowed enum value at `link`@`pos`, plus `props`.
fn sign(temp: &str, link: u64, pos: f64, props: Json) -> Json {
    let mut egenskaper = vec![json!({"typeId": 1876, "enum": [2868]})];
    egenskaper.extend(props.as_array().cloned().unwrap_or_default());
    json!({"typeId": 95, "tempId": temp, "egenskaper": egenskaper,
        "lokasjon": {"punkt": [{"lenkeId": link, "posisjon": pos}]}})
}

fn register(o: Json) -> Changeset {
    changeset(json!({"registrer": {"vegObjekter": [o]}}))
}

/// Validate with the given rights; binary resources exist only when `binaries` says so.
fn run_with(work: &mut Working, c: &Changeset, rights: &Rights) -> Outcome {
    let no_binaries = |_: &str| false;
    let ctx = Context {
        rights,
        binary_exists: &no_binaries,
        skip_location: false,
        skip_associations: false,
    };
    validate(work, c, &ctx).0
}

fn run(c: &Changeset) -> Outcome {
    run_with(&mut Working::new(demo()), c, &Rights::default())
}

fn codes(o: &Outcome) -> BTreeSet<String> {
    o.errors
        .iter()
        .chain(&o.warnings)
        .chain(
            o.objects
                .iter()
                .flat_map(|r| r.errors.iter().chain(&r.warnings)),
        )
        .map(|i| i.code.clone())
        .collect()
}

/// The first current object of type 95 in the demo: (id, version).
fn existing_sign(g: &Generation) -> (u64, u32) {
    let t = &g.objects[&95].table;
    (t.id[0], t.version[0])
}

/// Each case: the code it must produce and the outcome it got.
fn cases() -> Vec<(Code, Outcome)> {
    let g = demo();
    let (link, pos) = plain_link(g);
    let (id, version) = existing_sign(g);
    let mut out = changeset_and_object_cases(g, link, pos, id, version);
    out.extend(property_cases(link, pos));
    out.extend(location_cases(g, link, pos, id));
    out
}

/// Cases about the changeset itself, rights, and the object and its version.
fn changeset_and_object_cases(
    g: &Generation,
    link: u64,
    pos: f64,
    id: u64,
    version: u32,
) -> Vec<(Code, Outcome)> {
    let update = |o: Json| changeset(json!({"oppdater": {"vegObjekter": [o]}}));
    let mut out = Vec::new();
    let mut case = |code, outcome| out.push((code, outcome));
    let mut c = register(sign("1", link, pos, json!([])));
    c.effect_date = "2026-13-01".into();
    case(Code::InvalidEffectDate, run(&c));
    let mut c = register(sign("1", link, pos, json!([])));
    c.catalogue_version = "1.0".into();
    case(Code::NotCurrentCatalogueVersion, run(&c));

    // rights: the type, the operation, the municipality
    let limited = Rights {
        types: Some(HashSet::from([96])),
        ..Rights::default()
    };
    let c = register(sign("1", link, pos, json!([])));
    case(
        Code::MissingRight,
        run_with(&mut Working::new(g), &c, &limited),
    );

    // the object and its version
    case(
        Code::UnknownObjectType,
        run(&register(json!({"typeId": 999_999, "tempId": "1"}))),
    );
    case(
        Code::MissingIdOrVersion,
        run(&update(json!({"typeId": 95, "nvdbId": id}))),
    );
    let o = json!({"typeId": 95, "nvdbId": id, "versjon": version,
        "egenskaper": [{"typeId": 1876, "enum": [2868]}]});
    case(
        Code::ConflictBetweenObjects,
        run(&changeset(
            json!({"oppdater": {"vegObjekter": [o.clone(), o.clone()]}}),
        )),
    );
    case(
        Code::ObjectDoesNotExist,
        run(&update(json!({"typeId": 95, "nvdbId": 1, "versjon": 1}))),
    );
    let mut work = Working::new(g);
    let Found::Current(state) = work.find(id) else {
        panic!("{id} is current");
    };
    work.close(&state, 1_800_000_000);
    case(
        Code::ObjectIsClosed,
        run_with(&mut work, &update(o.clone()), &Rights::default()),
    );
    case(
        Code::WrongObjectType,
        run(&update(
            json!({"typeId": 96, "nvdbId": id, "versjon": version}),
        )),
    );
    case(
        Code::VersionConflict,
        run(&update(
            json!({"typeId": 95, "nvdbId": id, "versjon": version - 1}),
        )),
    );
    case(
        Code::UnknownVersion,
        run(&update(
            json!({"typeId": 95, "nvdbId": id, "versjon": version + 1}),
        )),
    );
    out
}

/// Cases about property values against the catalogue.
fn property_cases(link: u64, pos: f64) -> Vec<(Code, Outcome)> {
    let cat = Catalog::embedded();
    let t95 = cat.object_type(95).expect("type 95");
    let p = |id| t95.property(id).expect("property of 95");
    let mut out = Vec::new();
    let mut case = |code, outcome| out.push((code, outcome));
    let with = |props: Json| run(&register(sign("1", link, pos, props)));
    case(
        Code::UnknownPropertyType,
        with(json!([{"typeId": 5530, "verdi": ["A"]}])),
    );
    case(
        Code::InvalidMultipleValues,
        with(json!([{"typeId": 1877, "verdi": ["1", "2"]}])),
    );
    case(
        Code::UnknownBinaryResource,
        with(json!([{"typeId": 10854, "binaer": [{"ressursId": "finnes-ikke"}]}])),
    );
    case(
        Code::InvalidGeometry,
        with(json!([{"typeId": 4794, "verdi": ["srid=32633;LINESTRING(1 2, 3 4)"]}])),
    );
    let (required, _) = cat
        .types
        .iter()
        .flat_map(|t| t.property_types.iter().map(move |p| (t, p)))
        .find(|(_, p)| p.importance == 1 && !p.control.derived)
        .expect("a type with a required property");
    case(
        Code::MissingRequiredProperties,
        run(&register(
            json!({"typeId": required.id, "tempId": "1", "lokasjon": location_for(required.placement, link, pos)}),
        )),
    );
    let (recommended, _) = cat
        .types
        .iter()
        .flat_map(|t| t.property_types.iter().map(move |p| (t, p)))
        .find(|(_, p)| p.importance == 2 && !p.control.derived)
        .expect("a type with a recommended property");
    case(
        Code::MissingRecommendedProperties,
        run(&register(
            json!({"typeId": recommended.id, "tempId": "1", "lokasjon": location_for(recommended.placement, link, pos)}),
        )),
    );
    case(
        Code::InvalidValue,
        with(json!([{"typeId": 1877, "verdi": ["mange"]}])),
    );
    let t95_enum = json!({"typeId": 95, "tempId": "1",
        "egenskaper": [{"typeId": 1876, "enum": [1]}],
        "lokasjon": {"punkt": [{"lenkeId": link, "posisjon": pos}]}});
    case(Code::InvalidEnumValue, run(&register(t95_enum)));
    let decimals = p(2055).decimals.unwrap_or(0) as usize;
    case(
        Code::TooManyDecimals,
        with(json!([{"typeId": 2055, "verdi": [format!("1.{}", "3".repeat(decimals + 1))]}])),
    );
    let max = p(1877).max.expect("1877 has a maximum");
    case(
        Code::AboveAbsoluteMaximum,
        with(json!([{"typeId": 1877, "verdi": [(max + 1.0).to_string()]}])),
    );
    let min = p(1884).min.expect("1884 has a minimum");
    case(
        Code::BelowAbsoluteMinimum,
        with(json!([{"typeId": 1884, "verdi": [(min - 1.0).to_string()]}])),
    );
    let long = "x".repeat(p(10854).field_length.expect("a field length") as usize + 1);
    case(
        Code::ExceedsFieldLength,
        with(json!([{"typeId": 10854, "verdi": [long]}])),
    );
    out
}

/// Cases about the location and the associations.
fn location_cases(g: &Generation, link: u64, pos: f64, id: u64) -> Vec<(Code, Outcome)> {
    let mut out = Vec::new();
    let mut case = |code, outcome| out.push((code, outcome));
    case(
        Code::MissingLocation,
        run(&register(json!({"typeId": 95, "tempId": "1",
            "egenskaper": [{"typeId": 1876, "enum": [2868]}]}))),
    );
    case(
        Code::InvalidPlacementKind,
        run(&register(json!({"typeId": 95, "tempId": "1",
            "lokasjon": {"linje": [{"lenkeId": link, "fra": 0.1, "til": 0.2}]}}))),
    );
    case(
        Code::UnknownLink,
        run(&register(sign("1", 987_654_321, 0.5, json!([])))),
    );
    case(
        Code::InvalidPosition,
        run(&register(sign("1", link, 1.5, json!([])))),
    );
    let (connection, at) = connection_link(g);
    case(
        Code::PlacedOnConnectionLink,
        run(&register(sign("1", connection, at, json!([])))),
    );

    // associations
    let mut o = sign("1", link, pos, json!([]));
    o["assosiasjoner"] = json!([{"typeId": 105, "nvdbId": [id]}]);
    case(Code::InvalidAssociation, run(&register(o)));
    let mut o = sign("1", link, pos, json!([]));
    o["assosiasjoner"] = json!([{"typeId": 96, "tempId": ["finnes-ikke"]}]);
    case(Code::UnknownTempId, run(&register(o)));
    out
}

/// A location of the kind `placement` asks for.
fn location_for(placement: PlacementKind, link: u64, pos: f64) -> Json {
    match placement {
        PlacementKind::Line => json!({"linje": [{"lenkeId": link, "fra": pos, "til": pos}]}),
        PlacementKind::Unplaced => Json::Null,
        _ => json!({"punkt": [{"lenkeId": link, "posisjon": pos}]}),
    }
}

/// A connection link and a position on it.
fn connection_link(g: &Generation) -> (u64, f64) {
    let n = &g.network;
    let row = (0..n.link_id.len())
        .find(|&r| n.is_connection[r])
        .expect("the demo has a connection link");
    (n.link_id[row], (n.from_pos[row] + n.to_pos[row]) / 2.0)
}

#[test]
fn each_rule_reports_its_code() {
    for (code, outcome) in cases() {
        assert!(
            codes(&outcome).contains(code.as_str()),
            "{code}: {outcome:#?}"
        );
        // warnings alone let the changeset through; errors stop it
        let warning_only = matches!(
            code,
            Code::NotCurrentCatalogueVersion | Code::MissingRecommendedProperties
        );
        assert_eq!(outcome.has_errors(), !warning_only, "{code}: {outcome:#?}");
    }
}

#[test]
fn the_cases_cover_every_validation_code() {
    let covered: BTreeSet<Code> = cases().into_iter().map(|(c, _)| c).collect();
    let all: BTreeSet<Code> = Code::VALIDATION.into_iter().collect();
    assert_eq!(covered, all);
}

#[test]
fn a_valid_changeset_gives_a_plan_and_no_issue() {
    let (link, pos) = plain_link(demo());
    let c = register(sign("1", link, pos, json!([])));
    let mut work = Working::new(demo());
    let rights = Rights::default();
    let yes = |_: &str| true;
    let ctx = Context {
        rights: &rights,
        binary_exists: &yes,
        skip_location: false,
        skip_associations: false,
    };
    let (outcome, plan) = validate(&mut work, &c, &ctx);
    assert!(!outcome.has_errors(), "{outcome:#?}");
    let plan = plan.expect("a plan");
    assert_eq!(plan.steps.len(), 1);
    assert_eq!(plan.steps[0].type_id, 95);
    assert_eq!(plan.steps[0].placements.as_ref().map(Vec::len), Some(1));
}

/// Rights: the municipality of a placement, and the operation's role.
#[test]
fn rights_name_the_municipality_and_the_role() {
    let g = demo();
    let (link, pos) = plain_link(g);
    let c = register(sign("1", link, pos, json!([])));
    let elsewhere = Rights {
        municipalities: Some(HashSet::from([9999])),
        ..Rights::default()
    };
    let o = run_with(&mut Working::new(g), &c, &elsewhere);
    assert!(o.unauthorized);
    assert!(o.objects[0].errors[0]
        .message
        .starts_with("Brukeren har ikke skriverett i kommune"));
    let (id, version) = existing_sign(g);
    let c = changeset(
        json!({"korriger": {"vegObjekter": [{"typeId": 95, "nvdbId": id,
        "versjon": version, "egenskaper": [{"typeId": 1876, "enum": [2868]}]}]}}),
    );
    let writer_only = Rights {
        correct: false,
        ..Rights::default()
    };
    let o = run_with(&mut Working::new(g), &c, &writer_only);
    assert!(o.unauthorized);
    assert!(o.objects[0].errors.iter().any(|i| i.is(Code::MissingRight)
        && i.message
            == "Brukeren har ikke rett til korriger (krever rollen korriger eller admin)"));
}

/// A version conflict marks the outcome so the API can answer it as such.
#[test]
fn a_version_conflict_is_flagged() {
    let (id, version) = existing_sign(demo());
    let c = changeset(json!({"oppdater": {"vegObjekter": [
        {"typeId": 95, "nvdbId": id, "versjon": version - 1}]}}));
    let o = run(&c);
    assert!(o.version_conflict);
    assert!(!o.unauthorized);
}

/// A geometry with a finite but absurd coordinate (or one that lands outside the
/// storage extent once transformed) is an invalid geometry naming the extent; one inside it
/// is accepted.
#[test]
fn coordinates_outside_the_storage_extent_are_invalid_geometry() {
    let (link, pos) = plain_link(demo());
    let with = |wkt: &str| {
        run(&register(sign(
            "1",
            link,
            pos,
            json!([{"typeId": 4794, "verdi": [wkt]}]),
        )))
    };
    let geometry_errors = |o: &Outcome| -> Vec<String> {
        o.objects
            .iter()
            .flat_map(|r| &r.errors)
            .filter(|i| i.is(Code::InvalidGeometry))
            .map(|i| i.message.clone())
            .collect()
    };
    for wkt in [
        "srid=32633;POINT(1e20 6650000)",
        "POINT(-1e308 1e308)",
        "srid=4326;POINT(179 0)",
        "POINT Z(262000 6650000 1e300)",
    ] {
        let errors = geometry_errors(&with(wkt));
        assert!(
            errors.len() == 1 && errors[0].contains("utenfor"),
            "{wkt}: {errors:?}"
        );
    }
    assert_eq!(
        geometry_errors(&with("srid=32633;POINT Z(262000 6650000 10)")),
        Vec::<String>::new()
    );
}
