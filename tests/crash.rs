//! Crash safety of the write path: the real `vegdb` binary is killed (SIGKILL at random moments,
//! or aborted at each publishing fail point) while it processes changesets, many times over one
//! data directory (also while compacting the changeset journal). Afterwards every accepted
//! changeset must be known, every started one must end applied exactly once, and the data
//! directory must verify.
#![cfg_attr(test, allow(clippy::unwrap_used))] // tests may unwrap

use std::io::Read;
use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use arrow_array::cast::AsArray;
use arrow_array::Array;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use vegdb::generate::{generate_into, Scale};
use vegdb::generation::Generation;
use vegdb::snapshot::store::DataDir;
use vegdb::users::{add_user, Role};

const BIN: &str = env!("CARGO_BIN_EXE_vegdb");
const WRITE: &str = "/nvdb/apiskriv/rest/v2";
/// Tilleggsinformasjon (text) of Skiltpunkt 95 carries a unique marker per object.
const MARKER_PROPERTY: u32 = 10854;

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

struct Server {
    child: Child,
    base: String,
}

/// Start the server; None when it died while starting (a fail point hit by recovery work).
fn spawn(data: &Path, fail_at: Option<&str>) -> Option<Server> {
    let port = free_port();
    let mut cmd = Command::new(BIN);
    // normal priority: this test is about crashes, not about yielding to readers
    cmd.args([
        "serve",
        "--writer-priority",
        "normal",
        "--listen",
        &format!("127.0.0.1:{port}"),
    ])
    .arg("--data")
    .arg(data)
    .env("VEGDB_LOG", "warn")
    .stdout(Stdio::null())
    .stderr(Stdio::piped());
    if let Some(f) = fail_at {
        cmd.env("VEGDB_FAIL_AT", f);
    }
    let mut child = cmd.spawn().expect("vegdb starts");
    let base = format!("http://127.0.0.1:{port}");
    let deadline = Instant::now() + Duration::from_secs(60);
    let client = reqwest::blocking::Client::new();
    loop {
        if client
            .get(format!("{base}/nvdb/api/v2/status"))
            .send()
            .is_ok_and(|r| r.status().is_success())
        {
            break;
        }
        if let Ok(Some(code)) = child.try_wait() {
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                let _ = e.read_to_string(&mut err);
            }
            assert!(
                fail_at.is_some() && err.contains("fail point"),
                "server exited with {code} at startup: {err}"
            );
            return None;
        }
        assert!(Instant::now() < deadline, "server did not come up");
        std::thread::sleep(Duration::from_millis(20));
    }
    Some(Server { child, base })
}

fn kill(mut s: Server) -> String {
    let _ = s.child.kill(); // SIGKILL
    let _ = s.child.wait();
    let mut err = String::new();
    if let Some(mut e) = s.child.stderr.take() {
        let _ = e.read_to_string(&mut err);
    }
    err
}

fn client() -> reqwest::blocking::Client {
    reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(20))
        .build()
        .unwrap()
}

fn request(
    c: &reqwest::blocking::Client,
    method: reqwest::Method,
    url: String,
    token: &str,
    body: Option<&Value>,
) -> Option<(u16, String)> {
    let mut r = c
        .request(method, url)
        .header("X-Client", "crash-test")
        .header("Authorization", format!("Bearer {token}"));
    if let Some(b) = body {
        r = r
            .header("Content-Type", "application/json")
            .body(b.to_string());
    }
    let resp = r.send().ok()?;
    let st = resp.status().as_u16();
    Some((st, resp.text().ok()?))
}

#[test]
fn killing_the_writer_at_any_moment_loses_nothing_accepted() {
    let tmp = tempfile::tempdir().unwrap();
    let gen_dir = generate_into(Scale::Tiny, 11, tmp.path()).unwrap();
    let (g, _) = Generation::load(&gen_dir, &|_| {}).unwrap();
    let n = &g.network;
    let links: Vec<u64> = n.plain_link_rows().map(|r| n.link_id[r]).take(50).collect();
    drop(g);
    let token = add_user(
        &tmp.path().join("users.json"),
        "crash",
        vec![Role::Write],
        None,
        None,
    )
    .unwrap();
    let c = client();
    // VEGDB_CRASH_SEED varies the kill moments and placements between runs
    let seed = std::env::var("VEGDB_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    // id -> markers of its objects (tempId = marker)
    let mut accepted: Vec<(String, Vec<String>)> = Vec::new();
    let fail_points = [
        None,
        Some("before-publish"),
        None,
        Some("before-manifest"),
        None,
        Some("before-rename"),
        None,
        Some("before-current"),
        None,
        Some("after-current"),
        None,
        Some("after-swap"),
        None,
        // journal compaction (at start, of the changesets finished before): segment appended,
        // loose files not yet removed
        Some("journal-after-append"),
        None,
    ];
    for (round, fail_at) in fail_points.iter().enumerate() {
        let Some(s) = spawn(tmp.path(), *fail_at) else {
            continue;
        };
        let mut ids = Vec::new();
        for k in 0..4 {
            let markers: Vec<String> = (0..3).map(|j| format!("m-{round}-{k}-{j}")).collect();
            let objects: Vec<Value> = markers
                .iter()
                .map(|m| {
                    json!({"typeId": 95, "tempId": m,
                        "egenskaper": [{"typeId": 1876, "enum": [2868]},
                                       {"typeId": MARKER_PROPERTY, "verdi": [m]}],
                        "lokasjon": {"punkt": [{"lenkeId": links[rng.random_range(0..links.len())],
                                                "posisjon": rng.random_range(0.0..1.0)}]}})
                })
                .collect();
            let cs = json!({"effektDato": "2026-11-01", "datakatalogversjon": "2.38",
                "registrer": {"vegObjekter": objects}});
            let Some((st, body)) = request(
                &c,
                reqwest::Method::POST,
                format!("{}{WRITE}/endringssett", s.base),
                &token,
                Some(&cs),
            ) else {
                break; // the server died (fail point): not accepted
            };
            assert_eq!(st, 201, "{body}");
            let links: Vec<Value> = serde_json::from_str(&body).unwrap();
            let id = links[0]["src"]
                .as_str()
                .unwrap()
                .rsplit('/')
                .next()
                .unwrap()
                .to_string();
            accepted.push((id.clone(), markers));
            ids.push(id);
        }
        for id in &ids {
            let _ = request(
                &c,
                reqwest::Method::POST,
                format!("{}{WRITE}/endringssett/{id}/start", s.base),
                &token,
                None,
            );
        }
        std::thread::sleep(Duration::from_millis(rng.random_range(0..120)));
        kill(s);
    }

    // a last, undisturbed run finishes everything
    let s = spawn(tmp.path(), None).expect("starts without fail points");
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut statuses = Vec::new();
    for (id, _) in &accepted {
        let url = |p: &str| format!("{}{WRITE}/endringssett/{id}{p}", s.base);
        let (st, body) =
            request(&c, reqwest::Method::GET, url("/fremdrift"), &token, None).unwrap();
        assert_eq!(
            st, 200,
            "accepted changeset {id} is known after the crashes: {body}"
        );
        if body == "\"IKKE_STARTET\"" {
            // its start request may have been cut off by the kill
            let (st, _) = request(&c, reqwest::Method::POST, url("/start"), &token, None).unwrap();
            assert_eq!(st, 200);
        }
        loop {
            let (_, p) =
                request(&c, reqwest::Method::GET, url("/fremdrift"), &token, None).unwrap();
            if p == "\"UTFØRT_OG_ETTERBEHANDLET\"" {
                break;
            }
            assert!(
                !["\"AVVIST\"", "\"KANSELLERT\"", "\"VENTER\""].contains(&p.as_str()),
                "{id} ended {p}"
            );
            assert!(Instant::now() < deadline, "{id} still {p}");
            std::thread::sleep(Duration::from_millis(20));
        }
        let (_, status) = request(&c, reqwest::Method::GET, url("/status"), &token, None).unwrap();
        statuses.push(serde_json::from_str::<Value>(&status).unwrap());
    }
    kill(s);
    assert!(
        accepted.len() >= 20,
        "enough changesets were accepted: {}",
        accepted.len()
    );

    // every marker exactly once, on the object the status names
    let data = DataDir::open(tmp.path()).unwrap();
    let current = data.current().unwrap().unwrap();
    let (g, _) = Generation::load(&data.generation_dir(current), &|_| {}).unwrap();
    let t = &g.objects[&95].table;
    let col = t
        .property(MARKER_PROPERTY)
        .unwrap()
        .values
        .as_string::<i32>();
    let mut holder: std::collections::HashMap<String, Vec<u64>> = Default::default();
    for row in 0..t.len() {
        if !col.is_null(row) && col.value(row).starts_with("m-") {
            holder
                .entry(col.value(row).to_string())
                .or_default()
                .push(t.id[row]);
        }
    }
    for ((id, markers), status) in accepted.iter().zip(&statuses) {
        for (m, o) in markers
            .iter()
            .zip(status["resultat"]["vegObjekter"].as_array().unwrap())
        {
            assert_eq!(o["tempId"], m.as_str());
            let ids = holder
                .get(m)
                .unwrap_or_else(|| panic!("{id}: marker {m} lost"));
            assert_eq!(ids.len(), 1, "{id}: marker {m} applied {} times", ids.len());
            assert_eq!(o["nvdbId"], ids[0], "{id}: status names the object");
        }
    }
    let total: usize = accepted.iter().map(|(_, m)| m.len()).sum();
    assert_eq!(
        holder.len(),
        total,
        "no objects from changesets that were not accepted"
    );
    // the generations on disk are complete
    let out = Command::new(BIN)
        .args(["snapshot", "verify", "--data"])
        .arg(tmp.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "verify: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}
