//! Authorisation and robustness of the write path.
//!
//! The matrix tests are table-driven: each cell describes which objects it touches (type and
//! the municipalities of their current and new locations, cascaded daughters included) and the
//! expected outcome is derived from the rule — a user may touch an object only when its type
//! and every one of those municipalities are within the user's limits; named types are checked
//! at registration (403), everything at processing (AVVIST, IKKE_AUTORISERT).

use std::collections::HashMap;

use serde_json::{json, Value};
use vegdb::changeset::working::ObjectState;
use vegdb::generation::Generation;
use vegdb::users::{add_user, Role};

use super::write_server::{changeset, skiltpunkt, WriteServer, WRITE};

/// Two plain links in different municipalities: ((link A, kommune A), (link B, kommune B)).
fn two_municipalities(g: &Generation) -> ((u64, u16), (u64, u16)) {
    let n = &g.network;
    let mut first: Vec<(u64, u16)> = Vec::new();
    for row in n.plain_link_rows() {
        let (link, m) = (n.link_id[row], n.municipality[row]);
        // a link lying in one municipality only
        if n.rows_of_link(link).all(|r| n.municipality[r] == m)
            && !first.iter().any(|(_, k)| *k == m)
        {
            first.push((link, m));
        }
        if first.len() == 2 {
            break;
        }
    }
    assert_eq!(
        first.len(),
        2,
        "the tiny dataset spans several municipalities"
    );
    (first[0], first[1])
}

/// The object as the current generation has it (None: closed or unknown).
fn object(s: &WriteServer, id: u64) -> Option<ObjectState> {
    let g = s.store.current();
    let (t, row) = g.find_object(vegdb::ids::ObjectId(id))?;
    Some(ObjectState::from_row(&g.objects[&t.get()].table, row))
}

fn codes(status: &Value) -> Vec<String> {
    status["resultat"]["vegObjekter"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|o| o["feil"].as_array().cloned().unwrap_or_default())
        .chain(
            status["resultat"]["feil"]
                .as_array()
                .cloned()
                .unwrap_or_default(),
        )
        .map(|f| f["kode"].as_str().unwrap_or("").to_string())
        .collect()
}

/// A user of the matrix and its limits.
#[derive(Clone)]
struct Subject {
    name: &'static str,
    roles: Vec<Role>,
    types: Option<Vec<u32>>,
    kommuner: Option<Vec<u16>>,
}

impl Subject {
    fn may_type(&self, t: u32) -> bool {
        self.types.as_ref().is_none_or(|ts| ts.contains(&t))
    }
    fn may_kommune(&self, m: u16) -> bool {
        self.kommuner.as_ref().is_none_or(|ms| ms.contains(&m))
    }
    fn may_write(&self) -> bool {
        self.roles
            .iter()
            .any(|r| matches!(r, Role::Write | Role::Correct | Role::Admin))
    }
    fn may_correct(&self) -> bool {
        self.roles
            .iter()
            .any(|r| matches!(r, Role::Correct | Role::Admin))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Register,
    Update,
    PartialUpdate,
    Correct,
    PartialCorrect,
    Delete { cascade: bool },
}

impl Op {
    fn part(self) -> &'static str {
        match self {
            Op::Register => "registrer",
            Op::Update => "oppdater",
            Op::PartialUpdate => "delvisOppdater",
            Op::Correct => "korriger",
            Op::PartialCorrect => "delvisKorriger",
            Op::Delete { .. } => "slett",
        }
    }
    fn is_correction(self) -> bool {
        matches!(self, Op::Correct | Op::PartialCorrect)
    }
}

/// Where: index 0 = municipality A, 1 = B.
#[derive(Debug, Clone, Copy)]
struct Case {
    op: Op,
    /// The object's type: 95 (the mother) or 96 (its daughter).
    target: u32,
    /// Where the mother lies now (for registrer: unused).
    from: usize,
    /// Where the object is put (registrer) or moved to (None: location not given).
    to: Option<usize>,
    /// Where the mother's daughter lies.
    daughter_at: usize,
}

/// What a case touches: (type, municipalities) per object, and the types it names.
fn touched(c: &Case, kommune: [u16; 2]) -> (Vec<u32>, Vec<(u32, Vec<u16>)>) {
    let named = vec![c.target];
    let mut objects = Vec::new();
    match c.op {
        Op::Register => objects.push((c.target, vec![kommune[c.to.expect("where")]])),
        Op::Delete { cascade } => {
            objects.push((95, vec![kommune[c.from]]));
            if cascade {
                objects.push((96, vec![kommune[c.daughter_at]]));
            }
        }
        _ => {
            let now = if c.target == 95 {
                c.from
            } else {
                c.daughter_at
            };
            let mut ms = vec![kommune[now]];
            ms.extend(c.to.map(|t| kommune[t]));
            objects.push((c.target, ms));
        }
    }
    (named, objects)
}

#[derive(Debug, PartialEq, Eq, Hash, Clone, Copy)]
enum Expect {
    Forbidden,
    Rejected,
    Applied,
}

/// The rule.
fn expected(s: &Subject, c: &Case, kommune: [u16; 2]) -> Expect {
    let (named, objects) = touched(c, kommune);
    if !s.may_write()
        || (c.op.is_correction() && !s.may_correct())
        || named.iter().any(|&t| !s.may_type(t))
    {
        return Expect::Forbidden;
    }
    let ok = objects
        .iter()
        .all(|(t, ms)| s.may_type(*t) && ms.iter().all(|&m| s.may_kommune(m)));
    if ok {
        Expect::Applied
    } else {
        Expect::Rejected
    }
}

fn cases() -> Vec<Case> {
    let mut out = Vec::new();
    let base = Case {
        op: Op::Register,
        target: 95,
        from: 0,
        to: None,
        daughter_at: 0,
    };
    for to in [0, 1] {
        out.push(Case {
            to: Some(to),
            ..base
        });
    }
    for op in [
        Op::Update,
        Op::PartialUpdate,
        Op::Correct,
        Op::PartialCorrect,
    ] {
        for (from, to) in [
            (0, None),
            (1, None),
            (0, Some(0)),
            (0, Some(1)),
            (1, Some(0)),
        ] {
            out.push(Case {
                op,
                from,
                to,
                ..base
            });
        }
        // the daughter itself (type 96), moved from A to B
        out.push(Case {
            op,
            target: 96,
            to: Some(1),
            ..base
        });
    }
    for (from, cascade, daughter_at) in [
        (0, false, 0),
        (1, false, 0),
        (0, true, 0),
        (0, true, 1),
        (1, true, 1),
    ] {
        out.push(Case {
            op: Op::Delete { cascade },
            from,
            daughter_at,
            ..base
        });
    }
    out
}

fn point(link: u64, op: Option<&str>) -> Value {
    let mut l = json!({"punkt": [{"lenkeId": link, "posisjon": 0.5}]});
    if let Some(op) = op {
        l["operasjon"] = json!(op);
    }
    l
}

/// The subject's changeset for a case; `ids` = (mother, daughter) of the cell's fixture.
fn case_changeset(c: &Case, links: [u64; 2], ids: (u64, u64)) -> Value {
    let partial = matches!(c.op, Op::PartialUpdate | Op::PartialCorrect);
    let object = match c.op {
        Op::Register => skiltpunkt("ny", links[c.to.expect("where")], 0.5),
        Op::Delete { cascade } => {
            json!({"typeId": 95, "nvdbId": ids.0, "versjon": 1,
                   "kaskadeSletting": if cascade { "ja" } else { "nei" }})
        }
        _ => {
            let id = if c.target == 95 { ids.0 } else { ids.1 };
            let mut o = json!({"typeId": c.target, "nvdbId": id, "versjon": 1});
            if c.target == 95 {
                o["egenskaper"] = if partial {
                    json!([{"typeId": 1876, "enum": [2868], "operasjon": "oppdater"}])
                } else {
                    json!([{"typeId": 1876, "enum": [2868]}])
                };
            }
            if let Some(to) = c.to {
                o["lokasjon"] = point(links[to], partial.then_some("oppdater"));
            }
            o
        }
    };
    changeset(json!({ c.op.part(): {"vegObjekter": [object]} }))
}

/// Register (as admin) a mother 95 at `links[from]` with a daughter 96 at `links[d]` per cell;
/// returns their ids in cell order.
async fn fixtures(s: &WriteServer, cells: &[(usize, usize)], links: [u64; 2]) -> Vec<(u64, u64)> {
    let mut objects = Vec::new();
    for (i, &(from, d)) in cells.iter().enumerate() {
        let mut m = skiltpunkt(&format!("m{i}"), links[from], 0.3);
        m["assosiasjoner"] = json!([{"typeId": 4, "tempId": [format!("d{i}")]}]);
        objects.push(m);
        objects.push(json!({"typeId": 96, "tempId": format!("d{i}"),
            "lokasjon": {"punkt": [{"lenkeId": links[d], "posisjon": 0.4}]}}));
    }
    let status = s
        .run(
            &s.admin,
            &changeset(json!({"registrer": {"vegObjekter": objects}})),
        )
        .await;
    assert_eq!(
        status["fremdrift"], "UTFØRT_OG_ETTERBEHANDLET",
        "fixtures: {status}"
    );
    let ids: HashMap<String, u64> = status["resultat"]["vegObjekter"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            (
                o["tempId"].as_str().unwrap().to_string(),
                o["nvdbId"].as_u64().unwrap(),
            )
        })
        .collect();
    (0..cells.len())
        .map(|i| (ids[&format!("m{i}")], ids[&format!("d{i}")]))
        .collect()
}

/// After the cell: the objects changed exactly as the outcome says.
fn check_effect(
    s: &WriteServer,
    c: &Case,
    outcome: Expect,
    ids: (u64, u64),
    links: [u64; 2],
    label: &str,
) {
    let (mother, daughter) = (object(s, ids.0), object(s, ids.1));
    let applied = outcome == Expect::Applied;
    match c.op {
        Op::Register => {}
        Op::Delete { cascade } => {
            assert_eq!(mother.is_none(), applied, "{label}: mother closed");
            assert_eq!(daughter.is_none(), applied && cascade, "{label}: daughter");
        }
        _ => {
            let o = if c.target == 95 { mother } else { daughter }.expect("still current");
            let moved_to = c.to.map(|t| links[t]);
            let on = o.placements[0].link_id;
            if applied {
                if let Some(l) = moved_to {
                    assert_eq!(on, l, "{label}: moved");
                }
            } else {
                assert_eq!(o.version, 1, "{label}: unchanged version");
                let was = if c.target == 95 {
                    c.from
                } else {
                    c.daughter_at
                };
                assert_eq!(on, links[was], "{label}: not moved");
            }
        }
    }
}

fn subjects(a: u16) -> Vec<Subject> {
    vec![
        Subject {
            name: "fri",
            roles: vec![Role::Write, Role::Correct],
            types: None,
            kommuner: None,
        },
        Subject {
            name: "bare_kommune_a",
            roles: vec![Role::Write, Role::Correct],
            types: None,
            kommuner: Some(vec![a]),
        },
        Subject {
            name: "bare_type_95",
            roles: vec![Role::Write, Role::Correct],
            types: Some(vec![95]),
            kommuner: None,
        },
        Subject {
            name: "bare_skriv",
            roles: vec![Role::Write],
            types: None,
            kommuner: None,
        },
    ]
}

#[tokio::test]
async fn the_authorisation_matrix_follows_the_rule_for_every_operation() {
    let s = WriteServer::start().await;
    let ((link_a, a), (link_b, b)) = two_municipalities(&s.store.current());
    let (links, kommune) = ([link_a, link_b], [a, b]);
    let subjects = subjects(a);
    let tokens: Vec<String> = subjects
        .iter()
        .map(|u| {
            add_user(
                &s.users_path,
                u.name,
                u.roles.clone(),
                u.types.clone(),
                u.kommuner.clone(),
            )
            .unwrap()
        })
        .collect();
    let cases = cases();
    let cells: Vec<(usize, Case)> = (0..subjects.len())
        .flat_map(|u| cases.iter().map(move |c| (u, *c)))
        .collect();
    let ids = fixtures(
        &s,
        &cells
            .iter()
            .map(|(_, c)| (c.from, c.daughter_at))
            .collect::<Vec<_>>(),
        links,
    )
    .await;
    // register every cell, then start all: they are processed in shared batches
    let mut started = Vec::new();
    let mut counts: HashMap<Expect, usize> = HashMap::new();
    for (i, (u, c)) in cells.iter().enumerate() {
        let want = expected(&subjects[*u], c, kommune);
        *counts.entry(want).or_default() += 1;
        let label = format!("{} {:?}", subjects[*u].name, c);
        let body = case_changeset(c, links, ids[i]);
        let (status, headers, text) = s.post_json("/endringssett", &tokens[*u], &body).await;
        if want == Expect::Forbidden {
            assert_eq!(status, 403, "{label}: {text}");
            assert!(serde_json::from_str::<Value>(&text).unwrap()["message"].is_string());
            continue;
        }
        assert_eq!(status, 201, "{label}: {text}");
        let id = headers["location"]
            .to_str()
            .unwrap()
            .rsplit('/')
            .next()
            .unwrap()
            .to_string();
        started.push((i, id, want, label));
    }
    for (i, id, _, _) in &started {
        s.start_changeset(&tokens[cells[*i].0], id).await;
    }
    for (i, id, want, label) in &started {
        let (u, c) = &cells[*i];
        let status = s.wait(&tokens[*u], id).await;
        match want {
            Expect::Applied => {
                assert_eq!(
                    status["fremdrift"], "UTFØRT_OG_ETTERBEHANDLET",
                    "{label}: {status}"
                )
            }
            _ => {
                assert_eq!(status["fremdrift"], "AVVIST", "{label}: {status}");
                assert_eq!(
                    status["avvistårsak"], "IKKE_AUTORISERT",
                    "{label}: {status}"
                );
                assert!(
                    codes(&status).iter().all(|k| k == "MANGLER_TILGANG"),
                    "{label}: {status}"
                );
            }
        }
        check_effect(&s, c, *want, ids[*i], links, label);
    }
    // the matrix exercises every outcome
    assert!(
        [Expect::Forbidden, Expect::Rejected, Expect::Applied]
            .iter()
            .all(|e| counts.get(e).copied().unwrap_or(0) > 0),
        "{counts:?}"
    );
}

/// How a user's rights change after registration.
#[derive(Debug, Clone, Copy)]
enum Change {
    Unchanged,
    OnlySensitive,
    OnlySkriv,
    OtherMunicipality,
    OtherType,
    Removed,
}

/// Remove a user from the users file.
fn remove_user(path: &std::path::Path, name: &str) {
    let mut v: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    v["users"]
        .as_array_mut()
        .unwrap()
        .retain(|u| u["name"] != name);
    std::fs::write(path, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
}

#[tokio::test]
async fn rights_are_checked_again_at_start_and_while_processing() {
    let s = WriteServer::start().await;
    let ((link_a, a), (link_b, b)) = two_municipalities(&s.store.current());
    let (links, kommune) = ([link_a, link_b], [a, b]);
    let changes = [
        Change::Unchanged,
        Change::OnlySensitive,
        Change::OnlySkriv,
        Change::OtherMunicipality,
        Change::OtherType,
        Change::Removed,
    ];
    // (change, during processing?) per cell; each cell has its own user and object in A
    let cells: Vec<(Change, bool)> = changes
        .iter()
        .flat_map(|&c| [(c, false), (c, true)])
        .collect();
    let ids = fixtures(&s, &vec![(0, 0); cells.len()], links).await;
    let case = Case {
        op: Op::Correct,
        target: 95,
        from: 0,
        to: None,
        daughter_at: 0,
    };
    let before = Subject {
        name: "",
        roles: vec![Role::Write, Role::Correct],
        types: None,
        kommuner: None,
    };
    for (i, &(change, during)) in cells.iter().enumerate() {
        let name: &'static str = Box::leak(format!("endres{i}").into_boxed_str());
        let label = format!(
            "{change:?} {}",
            if during {
                "under behandling"
            } else {
                "før start"
            }
        );
        let token = add_user(&s.users_path, name, before.roles.clone(), None, None).unwrap();
        let body = case_changeset(&case, links, ids[i]);
        assert_eq!(
            expected(
                &Subject {
                    name,
                    ..before.clone()
                },
                &case,
                kommune
            ),
            Expect::Applied
        );
        let r = s
            .client
            .post(format!("{}{WRITE}/endringssett", s.root))
            .headers(WriteServer::headers(&token))
            .header("Content-Type", "application/json")
            .header("X-NVDB-Delay", if during { "1" } else { "0" })
            .body(body.to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 201, "{label}");
        let id = r.headers()["location"]
            .to_str()
            .unwrap()
            .rsplit('/')
            .next()
            .unwrap()
            .to_string();
        let after = match change {
            Change::Unchanged | Change::Removed => before.clone(),
            Change::OnlySensitive => Subject {
                roles: vec![Role::Sensitive],
                ..before.clone()
            },
            Change::OnlySkriv => Subject {
                roles: vec![Role::Write],
                ..before.clone()
            },
            Change::OtherMunicipality => Subject {
                kommuner: Some(vec![b]),
                ..before.clone()
            },
            Change::OtherType => Subject {
                types: Some(vec![96]),
                ..before.clone()
            },
        };
        let apply_change = || match change {
            Change::Unchanged => token.clone(),
            Change::Removed => {
                remove_user(&s.users_path, name);
                String::new()
            }
            _ => add_user(
                &s.users_path,
                name,
                after.roles.clone(),
                after.types.clone(),
                after.kommuner.clone(),
            )
            .unwrap(),
        };
        let removed = matches!(change, Change::Removed);
        let want = if removed {
            Expect::Forbidden
        } else {
            expected(&after, &case, kommune)
        };
        if during {
            s.start_changeset(&token, &id).await;
            apply_change();
            let status = s.wait(&s.admin, &id).await;
            let ok = want == Expect::Applied;
            assert_eq!(
                status["fremdrift"],
                if ok {
                    "UTFØRT_OG_ETTERBEHANDLET"
                } else {
                    "AVVIST"
                },
                "{label}: {status}"
            );
            if !ok {
                assert_eq!(status["avvistårsak"], "IKKE_AUTORISERT", "{label}");
            }
        } else {
            let new_token = apply_change();
            // the owner starts it (an admin when the owner is gone)
            let starter = if removed { s.admin.clone() } else { new_token };
            let (st, _, text) = s
                .post_json(&format!("/endringssett/{id}/start"), &starter, &json!({}))
                .await;
            if want == Expect::Forbidden {
                assert_eq!(st, 403, "{label}: {text}");
                let (_, p) = s
                    .get_write(&format!("/endringssett/{id}/fremdrift"), &s.admin)
                    .await;
                assert_eq!(p, "\"IKKE_STARTET\"", "{label}");
                continue;
            }
            assert_eq!(st, 200, "{label}: {text}");
            let status = s.wait(&s.admin, &id).await;
            let ok = want == Expect::Applied;
            assert_eq!(
                status["fremdrift"],
                if ok {
                    "UTFØRT_OG_ETTERBEHANDLET"
                } else {
                    "AVVIST"
                },
                "{label}: {status}"
            );
        }
    }
}

/// Spellings of numbers that are not finite.
const NON_FINITE: [&str; 5] = ["NaN", "inf", "-Infinity", "1e999", "nan"];

/// Every numeric field of a changeset: (label, JSON pointer of the value, the changeset part).
fn numeric_fields() -> Vec<(&'static str, &'static str)> {
    vec![
        ("typeId", "/registrer/vegObjekter/0/typeId"),
        (
            "egenskap typeId",
            "/registrer/vegObjekter/0/egenskaper/0/typeId",
        ),
        ("enum", "/registrer/vegObjekter/0/egenskaper/0/enum/0"),
        (
            "verdi (Flyttall)",
            "/registrer/vegObjekter/0/egenskaper/1/verdi/0",
        ),
        (
            "verdi (Tall)",
            "/registrer/vegObjekter/0/egenskaper/2/verdi/0",
        ),
        (
            "lenkeId",
            "/registrer/vegObjekter/0/lokasjon/punkt/0/lenkeId",
        ),
        (
            "posisjon",
            "/registrer/vegObjekter/0/lokasjon/punkt/0/posisjon",
        ),
        ("linje fra", "/registrer/vegObjekter/1/lokasjon/linje/0/fra"),
        ("linje til", "/registrer/vegObjekter/1/lokasjon/linje/0/til"),
        (
            "linje lenkeId",
            "/registrer/vegObjekter/1/lokasjon/linje/0/lenkeId",
        ),
        (
            "sving nodeId",
            "/registrer/vegObjekter/2/lokasjon/sving/0/nodeId",
        ),
        (
            "sving fra posisjon",
            "/registrer/vegObjekter/2/lokasjon/sving/0/fra/posisjon",
        ),
        (
            "sving til posisjon",
            "/registrer/vegObjekter/2/lokasjon/sving/0/til/posisjon",
        ),
        (
            "assosiasjon nvdbId",
            "/oppdater/vegObjekter/0/assosiasjoner/0/nvdbId/0",
        ),
        ("nvdbId", "/oppdater/vegObjekter/0/nvdbId"),
        ("versjon", "/oppdater/vegObjekter/0/versjon"),
        (
            "binaer nvdbId",
            "/oppdater/vegObjekter/0/egenskaper/0/binaer/0/nvdbId",
        ),
        (
            "struktur medlem typeId",
            "/oppdater/vegObjekter/0/egenskaper/1/struktur/0/medlem/0/typeId",
        ),
        (
            "struktur medlem enum",
            "/oppdater/vegObjekter/0/egenskaper/1/struktur/0/medlem/0/enum",
        ),
    ]
}

/// A changeset with every numeric field filled with a valid number.
fn all_numbers(link: u64) -> Value {
    changeset(json!({
        "registrer": {"vegObjekter": [
            {"typeId": 95, "tempId": "1",
             "egenskaper": [{"typeId": 1876, "enum": [2868]},
                            {"typeId": 1884, "verdi": ["1.5"]},
                            {"typeId": 1877, "verdi": ["2"]},
                            {"typeId": 4794, "verdi": ["srid=25833;POINT(270000 7040000)"]}],
             "lokasjon": {"punkt": [{"lenkeId": link, "posisjon": 0.5}]}},
            {"typeId": 105, "tempId": "2",
             "lokasjon": {"linje": [{"lenkeId": link, "fra": 0.1, "til": 0.2}]}},
            {"typeId": 95, "tempId": "3",
             "lokasjon": {"sving": [{"nodeId": 1, "fra": {"lenkeId": link, "posisjon": 0.1},
                                     "til": {"lenkeId": link, "posisjon": 0.9}}]}}
        ]},
        "oppdater": {"vegObjekter": [
            {"typeId": 95, "nvdbId": 1, "versjon": 1,
             "egenskaper": [{"typeId": 1876, "binaer": [{"nvdbId": 5}]},
                            {"typeId": 1877, "struktur": [{"medlem": [{"typeId": 1, "enum": 2}]}]}],
             "assosiasjoner": [{"typeId": 4, "nvdbId": [7]}]}
        ]}
    }))
}

async fn my_changesets(s: &WriteServer) -> usize {
    let (st, body) = s.get_write("/endringssett?max=1000", &s.writer_token).await;
    assert_eq!(st, 200);
    serde_json::from_str::<Value>(&body)
        .unwrap()
        .as_array()
        .unwrap()
        .len()
}

#[tokio::test]
async fn non_finite_numbers_in_any_field_are_refused_at_registration_json_and_xml() {
    let s = WriteServer::start().await;
    let ((link, _), _) = two_municipalities(&s.store.current());
    let good = all_numbers(link);
    // the well-formed form registers (processing may reject it: that is not the point)
    let (st, _, text) = s.post_json("/endringssett", &s.writer_token, &good).await;
    assert_eq!(st, 201, "{text}");
    let before = my_changesets(&s).await;
    let mut tried = 0;
    for (label, pointer) in numeric_fields() {
        assert!(good.pointer(pointer).is_some(), "{label}: {pointer}");
        for bad in NON_FINITE {
            for as_number in [false, true] {
                let mut c = good.clone();
                *c.pointer_mut(pointer).unwrap() = Value::String(bad.into());
                let mut text = c.to_string();
                if as_number {
                    // a raw JSON number out of f64 range
                    if bad != "1e999" {
                        continue;
                    }
                    text = text.replace("\"1e999\"", "1e999");
                }
                for path in ["/endringssett", "/endringssett/validator"] {
                    let r = s
                        .client
                        .post(format!("{}{WRITE}{path}", s.root))
                        .headers(WriteServer::headers(&s.writer_token))
                        .header("Content-Type", "application/json")
                        .body(text.clone())
                        .send()
                        .await
                        .unwrap();
                    let st = r.status().as_u16();
                    let body: Value = r.json().await.unwrap_or(Value::Null);
                    assert_eq!(st, 400, "{label} = {bad} ({path}): {body}");
                    assert!(
                        body["message"].as_str().is_some_and(|m| !m.is_empty()),
                        "{label}: {body}"
                    );
                    tried += 1;
                }
            }
        }
    }
    assert!(tried >= numeric_fields().len() * NON_FINITE.len() * 2);
    assert_eq!(my_changesets(&s).await, before, "nothing was registered");

    // XML: every numeric attribute and element
    let xml = |slot: &str, bad: &str| {
        let v = |name: &str, ok: &str| {
            if name == slot {
                bad.to_string()
            } else {
                ok.to_string()
            }
        };
        format!(
            r#"<endringssett xmlns="http://nvdb.vegvesen.no/apiskriv/domain/v2" effektDato="2026-11-01" datakatalogversjon="2.38">
  <registrer><vegObjekter>
    <vegObjekt typeId="{}" tempId="x1">
      <egenskaper><egenskap typeId="1876"><enum>{}</enum></egenskap>
        <egenskap typeId="1884"><verdi>{}</verdi></egenskap></egenskaper>
      <lokasjon><punkt lenkeId="{}" posisjon="{}"/></lokasjon>
    </vegObjekt>
    <vegObjekt typeId="105" tempId="x2">
      <lokasjon><linje lenkeId="{link}" fra="{}" til="{}"/></lokasjon>
    </vegObjekt>
  </vegObjekter></registrer>
  <oppdater><vegObjekter>
    <vegObjekt typeId="95" nvdbId="{}" versjon="{}"/>
  </vegObjekter></oppdater>
</endringssett>"#,
            v("typeId", "95"),
            v("enum", "2868"),
            v("verdi", "1.5"),
            v("lenkeId", &link.to_string()),
            v("posisjon", "0.5"),
            v("fra", "0.1"),
            v("til", "0.2"),
            v("nvdbId", "1"),
            v("versjon", "1"),
        )
    };
    let post_xml = |body: String| {
        s.client
            .post(format!("{}{WRITE}/endringssett", s.root))
            .headers(WriteServer::headers(&s.writer_token))
            .header("Content-Type", "application/xml")
            .body(body)
            .send()
    };
    let r = post_xml(xml("", "")).await.unwrap();
    assert_eq!(r.status().as_u16(), 201, "{}", r.text().await.unwrap());
    let before = my_changesets(&s).await;
    for slot in [
        "typeId", "enum", "verdi", "lenkeId", "posisjon", "fra", "til", "nvdbId", "versjon",
    ] {
        for bad in NON_FINITE {
            let r = post_xml(xml(slot, bad)).await.unwrap();
            let st = r.status().as_u16();
            let body = r.text().await.unwrap();
            assert_eq!(st, 400, "XML {slot} = {bad}: {body}");
            assert!(
                body.contains("<fault") && body.contains("<message>"),
                "{body}"
            );
        }
    }
    assert_eq!(my_changesets(&s).await, before, "nothing was registered");
}

#[tokio::test]
async fn one_failing_changeset_does_not_hold_back_others_in_its_batch() {
    let s = WriteServer::start().await;
    let ((link, _), _) = two_municipalities(&s.store.current());
    let register_delayed = |token: String, body: Value| {
        let s = &s;
        async move {
            let r = s
                .client
                .post(format!("{}{WRITE}/endringssett", s.root))
                .headers(WriteServer::headers(&token))
                .header("Content-Type", "application/json")
                .header("X-NVDB-Delay", "1")
                .body(body.to_string())
                .send()
                .await
                .unwrap();
            assert_eq!(r.status().as_u16(), 201);
            let id = r.headers()["location"].to_str().unwrap();
            id.rsplit('/').next().unwrap().to_string()
        }
    };
    let good =
        |t: &str| changeset(json!({"registrer": {"vegObjekter": [skiltpunkt(t, link, 0.5)]}}));
    let users = [
        s.writer_token.clone(),
        s.admin.clone(),
        s.limited_token.clone(),
    ];
    let bad_id = register_delayed(users[0].clone(), good("bad")).await;
    let mut ids = Vec::new();
    for (i, u) in users.iter().enumerate() {
        ids.push((
            u.clone(),
            register_delayed(u.clone(), good(&format!("g{i}"))).await,
        ));
    }
    // started together and released together after the delay: one batch
    s.start_changeset(&users[0], &bad_id).await;
    for (u, id) in &ids {
        s.start_changeset(u, id).await;
    }
    // while it waits, the bad one's journalled content is damaged (as a bug or a bad disk
    // might): the writer cannot read it back
    let content = s
        ._data
        .path()
        .join("changesets")
        .join(format!("{bad_id}.content.json"));
    assert!(content.exists(), "{content:?}");
    std::fs::write(&content, b"{\"effektDato\": ").unwrap();
    for (u, id) in &ids {
        let status = s.wait(u, id).await;
        assert_eq!(status["fremdrift"], "UTFØRT_OG_ETTERBEHANDLET", "{status}");
        let nvdb_id = status["resultat"]["vegObjekter"][0]["nvdbId"]
            .as_u64()
            .unwrap();
        assert!(object(&s, nvdb_id).is_some(), "applied and visible");
    }
    let status = s.wait(&users[0], &bad_id).await;
    assert_eq!(status["fremdrift"], "VENTER", "{status}");
    assert_eq!(status["venteårsak"], "SYSTEMFEIL", "{status}");
    // a later changeset is not affected either
    let status = s.run(&users[0], &good("later")).await;
    assert_eq!(status["fremdrift"], "UTFØRT_OG_ETTERBEHANDLET", "{status}");
}

#[tokio::test]
async fn binaries_are_read_only_by_those_with_a_right_and_never_rendered_as_pages() {
    let s = WriteServer::start().await;
    let upload = |token: String, bytes: &'static [u8], ct: &'static str| {
        let s = &s;
        async move {
            let r = s
                .client
                .post(format!("{}{WRITE}/binaer", s.root))
                .headers(WriteServer::headers(&token))
                .header("Content-Type", ct)
                .body(bytes)
                .send()
                .await
                .unwrap();
            assert_eq!(r.status().as_u16(), 201);
            r.json::<Value>().await.unwrap()["ressursId"]
                .as_str()
                .unwrap()
                .to_string()
        }
    };
    let get = |token: String, id: String| {
        let s = &s;
        async move {
            s.client
                .get(format!("{}{WRITE}/binaer/{id}", s.root))
                .headers(WriteServer::headers(&token))
                .send()
                .await
                .unwrap()
        }
    };
    let html = upload(
        s.writer_token.clone(),
        b"<html><script>alert(document.cookie)</script></html>",
        "text/html",
    )
    .await;
    let png = upload(
        s.writer_token.clone(),
        b"\x89PNG\r\n\x1a\nnot really",
        "image/png",
    )
    .await;
    // (uploader, admin) may read; every download is inert
    for (id, inline) in [(&html, false), (&png, true)] {
        for token in [&s.writer_token, &s.admin] {
            let r = get(token.clone(), id.clone()).await;
            assert_eq!(r.status().as_u16(), 200);
            let h = r.headers();
            assert_eq!(h["x-content-type-options"], "nosniff");
            let csp = h["content-security-policy"].to_str().unwrap();
            assert!(
                csp.contains("default-src 'none'") && csp.contains("sandbox"),
                "{csp}"
            );
            let disposition = h["content-disposition"].to_str().unwrap();
            assert_eq!(
                disposition.starts_with("attachment"),
                !inline,
                "{disposition}"
            );
        }
    }
    // another writer gets what an unknown id gets
    let unknown = "0".repeat(64);
    let other = get(s.elsewhere_token.clone(), html.clone()).await;
    let missing = get(s.elsewhere_token.clone(), unknown.clone()).await;
    assert_eq!(
        (other.status().as_u16(), missing.status().as_u16()),
        (404, 404)
    );
    assert_eq!(
        other.text().await.unwrap().replace(&html, "ID"),
        missing.text().await.unwrap().replace(&unknown, "ID")
    );
    // ... until it registers a changeset that refers to the binary
    let ((link, _), _) = two_municipalities(&s.store.current());
    let mut o = skiltpunkt("1", link, 0.5);
    o["egenskaper"]
        .as_array_mut()
        .unwrap()
        .push(json!({"typeId": 1892, "binaer": [{"ressursId": html}]}));
    s.register(
        &s.elsewhere_token,
        &changeset(json!({"registrer": {"vegObjekter": [o]}})),
    )
    .await;
    assert_eq!(
        get(s.elsewhere_token.clone(), html.clone())
            .await
            .status()
            .as_u16(),
        200
    );
    // a user with only the sensitiv role and no changeset never does
    assert_eq!(
        get(s.sensitive_token.clone(), png.clone())
            .await
            .status()
            .as_u16(),
        404
    );
}

#[tokio::test]
async fn auth_schemes_are_case_insensitive_and_others_changesets_are_not_found() {
    let s = WriteServer::start().await;
    let ((link, _), _) = two_municipalities(&s.store.current());
    for auth in [
        format!("Bearer {}", s.writer_token),
        format!("BEARER {}", s.writer_token),
        format!("bearer {}", s.writer_token),
        format!("bEaReR   {}", s.writer_token),
    ] {
        let r = s
            .client
            .get(format!("{}{WRITE}/endringssett", s.root))
            .header("X-Client", "test")
            .header("Authorization", &auth)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 200, "{auth}");
    }
    for auth in [
        format!("Basic {}", s.writer_token),
        format!("Bearer{}", s.writer_token),
        "Bearer ".to_string(),
    ] {
        let r = s
            .client
            .get(format!("{}{WRITE}/endringssett", s.root))
            .header("X-Client", "test")
            .header("Authorization", &auth)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 401, "{auth}");
    }
    // start, cancel and restart of another user's changeset: 404 as for an unknown id
    let id = s
        .register(
            &s.writer_token,
            &changeset(json!({"registrer": {"vegObjekter": [skiltpunkt("1", link, 0.5)]}})),
        )
        .await;
    let unknown = "00000000-0000-4000-8000-000000000000";
    for action in ["start", "kanseller", "restart"] {
        let (st, _, body) = s
            .post_json(
                &format!("/endringssett/{id}/{action}"),
                &s.limited_token,
                &json!({}),
            )
            .await;
        let (st2, _, body2) = s
            .post_json(
                &format!("/endringssett/{unknown}/{action}"),
                &s.limited_token,
                &json!({}),
            )
            .await;
        assert_eq!((st, st2), (404, 404), "{action}: {body}");
        assert_eq!(body.replace(&id, "ID"), body2.replace(unknown, "ID"));
    }
    // the owner still sees it untouched
    let (_, p) = s
        .get_write(&format!("/endringssett/{id}/fremdrift"), &s.writer_token)
        .await;
    assert_eq!(p, "\"IKKE_STARTET\"");
}
