//! Publishing safely into the live data directory of a running server: `generate` (and
//! `import`, `refresh`) hand their generation to the server that owns the directory, which
//! publishes it in sequence with changesets; a running server picks up a generation published
//! under it (poll and SIGHUP); /status tells which generation it serves and how it was made.
//! Real `vegdb` processes wherever a process matters.
#![cfg_attr(test, allow(clippy::unwrap_used))] // tests may unwrap

use std::io::Read;
use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use vegdb::generate::{generate_into, Scale};
use vegdb::generation::Generation;
use vegdb::snapshot::manifest::Manifest;
use vegdb::users::{add_user, Role};

const BIN: &str = env!("CARGO_BIN_EXE_vegdb");
const READ: &str = "/nvdb/api/v2";
const WRITE: &str = "/nvdb/apiskriv/rest/v2";

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

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Start `vegdb serve` on a free port and wait until it answers.
fn spawn(data: &Path, extra: &[&str]) -> Server {
    let port = free_port();
    let mut child = Command::new(BIN)
        .args([
            "serve",
            "--writer-priority",
            "normal",
            "--listen",
            &format!("127.0.0.1:{port}"),
        ])
        .args(extra)
        .arg("--data")
        .arg(data)
        .env("VEGDB_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("vegdb starts");
    let base = format!("http://127.0.0.1:{port}");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if client()
            .get(format!("{base}{READ}/status"))
            .send()
            .is_ok_and(|r| r.status().is_success())
        {
            return Server { child, base };
        }
        if let Ok(Some(code)) = child.try_wait() {
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                let _ = e.read_to_string(&mut err);
            }
            panic!("server exited with {code} at startup: {err}");
        }
        assert!(Instant::now() < deadline, "server did not come up");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn client() -> reqwest::blocking::Client {
    reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap()
}

fn get(s: &Server, path: &str) -> Value {
    let r = client()
        .get(format!("{}{READ}{path}", s.base))
        .header("X-Client", "live-test")
        .send()
        .unwrap();
    assert_eq!(r.status(), 200, "{path}");
    r.json().unwrap()
}

/// The generation block of /status.
fn served(s: &Server) -> Value {
    get(s, "/status")["datagrunnlag"]["generasjon"].clone()
}

/// Poll /status until the served generation is `id`.
fn wait_for_generation(s: &Server, id: u64, limit: Duration) -> Value {
    let deadline = Instant::now() + limit;
    loop {
        let g = served(s);
        if g["id"] == id {
            return g;
        }
        assert!(
            Instant::now() < deadline,
            "still serving {g} (waiting for generation {id})"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn count(s: &Server, type_id: u32) -> u64 {
    get(s, &format!("/vegobjekter/{type_id}/statistikk"))["antall"]
        .as_u64()
        .unwrap()
}

fn write(
    s: &Server,
    method: reqwest::Method,
    path: &str,
    token: &str,
    body: Option<&Value>,
) -> (u16, String) {
    let mut r = client()
        .request(method, format!("{}{WRITE}{path}", s.base))
        .header("X-Client", "live-test")
        .header("Authorization", format!("Bearer {token}"));
    if let Some(b) = body {
        r = r
            .header("Content-Type", "application/json")
            .body(b.to_string());
    }
    let resp = r.send().expect("request answered");
    let st = resp.status().as_u16();
    (st, resp.text().unwrap())
}

/// Register and start a changeset; its id.
fn submit(s: &Server, token: &str, cs: &Value) -> String {
    let (st, body) = write(s, reqwest::Method::POST, "/endringssett", token, Some(cs));
    assert_eq!(st, 201, "{body}");
    let links: Vec<Value> = serde_json::from_str(&body).unwrap();
    let id = links[0]["src"]
        .as_str()
        .unwrap()
        .rsplit('/')
        .next()
        .unwrap()
        .to_string();
    let (st, body) = write(
        s,
        reqwest::Method::POST,
        &format!("/endringssett/{id}/start"),
        token,
        None,
    );
    assert_eq!(st, 200, "{body}");
    id
}

fn changeset_status(s: &Server, token: &str, id: &str) -> Value {
    let (st, body) = write(
        s,
        reqwest::Method::GET,
        &format!("/endringssett/{id}/status"),
        token,
        None,
    );
    assert_eq!(st, 200, "{body}");
    serde_json::from_str(&body).unwrap()
}

/// Poll a changeset until it is no longer being processed.
fn wait_finished(s: &Server, token: &str, id: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let st = changeset_status(s, token, id);
        if st["fremdrift"] != "BEHANDLES" {
            return st;
        }
        assert!(Instant::now() < deadline, "{id}: still {st}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn skiltpunkt(link: u64, position: f64, temp_id: &str) -> Value {
    json!({"effektDato": "2026-11-01", "datakatalogversjon": "2.38",
        "registrer": {"vegObjekter": [{"typeId": 95, "tempId": temp_id,
            "egenskaper": [{"typeId": 1876, "enum": [2868]}],
            "lokasjon": {"punkt": [{"lenkeId": link, "posisjon": position}]}}]}})
}

fn user(root: &Path) -> String {
    add_user(
        &root.join("users.json"),
        "skriver",
        vec![Role::Write],
        None,
        None,
    )
    .unwrap()
}

/// A generation generated elsewhere with `seed` (the oracle of what a hand-off must serve).
fn oracle(seed: u64) -> (tempfile::TempDir, Generation) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = generate_into(Scale::Tiny, seed, tmp.path()).unwrap();
    let (g, _) = Generation::load(&dir, &|_| {}).unwrap();
    (tmp, g)
}

fn run(args: &[&str], data: &Path) -> std::process::Output {
    Command::new(BIN)
        .args(args)
        .arg("--data")
        .arg(data)
        .env("VEGDB_LOG", "warn")
        .output()
        .unwrap()
}

fn text(o: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The race this guards against: `vegdb generate` into the directory of a running server.
/// Before the hand-off existed, the server kept serving the old generation and its next
/// changeset built on the old one, discarding the generated one (and, once the directory had an
/// owner lock, `generate` was refused outright). Now the server publishes the generated
/// generation in sequence, serves it at once, and the next changeset lands on top of it.
#[test]
fn generate_into_a_served_directory_is_published_by_the_server_and_nothing_is_lost() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    generate_into(Scale::Tiny, 3, root).unwrap();
    let token = user(root);
    let (_o, new) = oracle(11);
    let (_p, old) = oracle(3);
    let old_count = old.objects[&95].table.len() as u64;
    let new_count = new.objects[&95].table.len() as u64;
    assert_ne!(old_count, new_count, "the seeds must be told apart");
    let s = spawn(root, &[]);
    let first_id: u64 = std::fs::read_to_string(root.join("CURRENT"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_eq!(count(&s, 95), old_count);

    let out = run(&["generate", "--scale", "tiny", "--seed", "11"], root);
    assert!(out.status.success(), "{}", text(&out));
    let handed = first_id + 1;
    assert!(
        text(&out).contains(&format!("generation {handed}")),
        "{}",
        text(&out)
    );
    // served at once: generate returns only after the server published and swapped it in
    let g = served(&s);
    assert_eq!(g["id"], handed, "{g}");
    assert_eq!(g["forelder"], first_id, "{g}");
    assert_eq!(g["laget_av"], "generert", "{g}");
    assert!(g["opphav"].as_str().unwrap().contains("--seed 11"), "{g}");
    assert_eq!(count(&s, 95), new_count);
    // the replaced generation is still on disk, made by generate
    let m = Manifest::read(&root.join(format!("gen-{first_id:06}"))).unwrap();
    assert!(m.origin.contains("--seed 3"), "{}", m.origin);

    // a changeset now lands on top of the handed-over generation
    let n = &new.network;
    let link = n.plain_link_rows().map(|r| n.link_id[r]).next().unwrap();
    let id = submit(&s, &token, &skiltpunkt(link, 0.5, "-1"));
    let st = wait_finished(&s, &token, &id);
    assert_eq!(st["fremdrift"], "UTFØRT_OG_ETTERBEHANDLET", "{st}");
    let g = wait_for_generation(&s, handed + 1, Duration::from_secs(10));
    assert_eq!(g["forelder"], handed, "{g}");
    assert_eq!(g["laget_av"], "endringssett", "{g}");
    assert_eq!(count(&s, 95), new_count + 1, "the generated data plus one");

    // on disk: CURRENT names the last, and the chain runs first -> generated -> changeset
    assert_eq!(
        std::fs::read_to_string(root.join("CURRENT"))
            .unwrap()
            .trim(),
        (handed + 1).to_string()
    );
    let m = Manifest::read(&root.join(format!("gen-{:06}", handed + 1))).unwrap();
    assert_eq!(m.parent, Some(handed));
    let m = Manifest::read(&root.join(format!("gen-{handed:06}"))).unwrap();
    assert_eq!(m.parent, Some(first_id));
    assert!(m.origin.contains("--seed 11"), "{}", m.origin);
    // nothing of the hand-off is left behind
    let left: Vec<_> = std::fs::read_dir(root.join("incoming"))
        .map(|d| d.filter_map(|e| e.ok()).map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "{left:?}");
}

/// A hand-off holds the writer from its acknowledgement until the owner publishes it:
/// changesets started meanwhile wait, then are validated against the handed-over generation
/// (one that deletes an object the new generation no longer has is rejected with the
/// validator's reason; one that still applies lands on top). A producer that gives up half
/// way leaves nothing behind and changesets go on. The producer here is this test process, through
/// the same `DataDir` calls `generate`, `import` and `refresh` make.
#[test]
fn changesets_started_during_a_hand_off_are_applied_on_top_or_rejected_with_a_reason() {
    use vegdb::changeset::working::ObjectState;
    use vegdb::snapshot::manifest::{MadeBy, Provenance};
    use vegdb::snapshot::store::{generation_id, DataDir};

    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let first_dir = generate_into(Scale::Tiny, 3, root).unwrap();
    let token = user(root);
    let (old, _) = Generation::load(&first_dir, &|_| {}).unwrap();
    let n = &old.network;
    let links: Vec<u64> = n.plain_link_rows().map(|r| n.link_id[r]).take(3).collect();
    let s = spawn(root, &[]);
    let first = served(&s);
    assert_eq!(first["id"], 1, "{first}");

    // 1. a producer that gives up half way: the changeset it held back goes on afterwards
    let producer = DataDir::open_for_publishing(root).unwrap();
    assert!(producer
        .handed_to()
        .unwrap()
        .contains(&format!("pid {}", s.child.id())));
    let staging = producer.begin(0).unwrap();
    assert_eq!(staging.base, Some(1));
    let held = submit(&s, &token, &skiltpunkt(links[0], 0.25, "-1"));
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(
        changeset_status(&s, &token, &held)["fremdrift"],
        "BEHANDLES",
        "the writer holds while a hand-off is being built"
    );
    // giving up (an error while building): dropping the staging withdraws the hand-off (a
    // killed producer leaves its request behind with its lock free: the server removes it,
    // see snapshot::handoff's tests)
    drop(staging);
    drop(producer);
    let st = wait_finished(&s, &token, &held);
    assert_eq!(st["fremdrift"], "UTFØRT_OG_ETTERBEHANDLET", "{st}");
    let g = wait_for_generation(&s, 2, Duration::from_secs(10));
    assert_eq!(g["forelder"], 1, "{g}");
    assert_eq!(g["laget_av"], "endringssett", "{g}");
    assert_eq!(std::fs::read_dir(root.join("incoming")).unwrap().count(), 0);

    // 2. a hand-off of a generation without the road objects of type 95 (as a refresh that
    // saw them all removed upstream would build)
    let producer = DataDir::open_for_publishing(root).unwrap();
    let mut staging = producer.begin(0).unwrap();
    assert_eq!(staging.base, Some(2));
    let base_dir = root.join("gen-000002");
    let base = Manifest::read(&base_dir).unwrap();
    // started while the writer holds: one deletes an object the new generation lacks, one
    // adds an object, which still applies
    let table = &old.objects[&95].table;
    let doomed = ObjectState::from_row(table, 0);
    let delete = json!({"effektDato": "2026-11-01", "datakatalogversjon": "2.38",
        "slett": {"vegObjekter": [{"typeId": 95, "nvdbId": doomed.id,
            "versjon": doomed.version, "kaskadeSletting": "nei"}]}});
    let rejected = submit(&s, &token, &delete);
    let applied = submit(&s, &token, &skiltpunkt(links[1], 0.5, "-1"));
    std::thread::sleep(Duration::from_millis(500));
    for id in [&rejected, &applied] {
        assert_eq!(changeset_status(&s, &token, id)["fremdrift"], "BEHANDLES");
    }
    assert_eq!(
        served(&s)["id"],
        2,
        "nothing is published while the writer holds"
    );
    for entry in &base.files {
        if entry.type_id != Some(95) {
            staging.share_from(&base_dir, entry).unwrap();
        }
    }
    let mut m = base.clone();
    m.origin = "test: type 95 removed upstream".into();
    m.provenance = Provenance::new(MadeBy::Refreshed, Some("test-upstream".into()));
    m.changesets.clear();
    m.last_event_ids.insert("vegobjekter/95".into(), 77);
    let published = producer.publish(staging, m).unwrap();
    assert_eq!(generation_id(&published), Some(3));
    // published in sequence: generation 3 on top of 2, as the producer made it
    let m3 = Manifest::read(&published).unwrap();
    assert_eq!(m3.parent, Some(2));
    assert_eq!(m3.made_by(), MadeBy::Refreshed);
    assert_eq!(m3.provenance.source.as_deref(), Some("test-upstream"));
    // served as soon as publish returns (or already the changeset generation on top of it:
    // the writer goes on with the waiting changesets once the hand-off is answered)
    let g = served(&s);
    let id = g["id"].as_u64().unwrap();
    assert!(id >= 3, "{g}");
    if id == 3 {
        assert_eq!(g["forelder"], 2, "{g}");
        assert_eq!(g["laget_av"], "oppfrisket", "{g}");
        assert_eq!(g["kilde"], "test-upstream", "{g}");
    }

    let st = wait_finished(&s, &token, &rejected);
    assert_eq!(st["fremdrift"], "AVVIST", "{st}");
    assert_eq!(st["avvistårsak"], "VALIDERINGSFEIL", "{st}");
    let text = st.to_string();
    assert!(text.contains("VEGOBJEKTET_FINNES_IKKE"), "{text}");
    assert!(text.contains(&doomed.id.to_string()), "{text}");
    let st = wait_finished(&s, &token, &applied);
    assert_eq!(st["fremdrift"], "UTFØRT_OG_ETTERBEHANDLET", "{st}");
    let g = wait_for_generation(&s, 4, Duration::from_secs(10));
    assert_eq!(g["forelder"], 3, "{g}");
    assert_eq!(g["laget_av"], "endringssett", "{g}");
    // a changeset generation still names the upstream it descends from
    assert_eq!(g["kilde"], "test-upstream", "{g}");
    assert_eq!(
        g["siste_hendelser"],
        json!([{"strøm": "vegobjekter/95", "hendelse_id": 77}]),
        "{g}"
    );
    assert_eq!(
        count(&s, 95),
        1,
        "only the object added on top of the hand-off"
    );
    assert_eq!(std::fs::read_dir(root.join("incoming")).unwrap().count(), 0);
}

/// A server that does not own its directory (`--read-only`) serves what the owner publishes:
/// on its watch interval, or with `--watch-interval 0` when it gets SIGHUP.
#[test]
fn a_running_server_picks_up_a_new_generation_by_polling_and_on_sighup() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    generate_into(Scale::Tiny, 3, root).unwrap();
    let (_o, new) = oracle(11);
    let new_count = new.objects[&95].table.len() as u64;
    let polling = spawn(root, &["--read-only", "--watch-interval", "1"]);
    let on_hup = spawn(root, &["--read-only", "--watch-interval", "0"]);
    assert_eq!(served(&polling)["id"], 1);
    assert_ne!(count(&polling, 95), new_count);

    // nobody owns the directory: generate publishes itself
    let out = run(&["generate", "--scale", "tiny", "--seed", "11"], root);
    assert!(out.status.success(), "{}", text(&out));
    let g = wait_for_generation(&polling, 2, Duration::from_secs(10));
    assert_eq!(g["forelder"], 1, "{g}");
    assert_eq!(g["laget_av"], "generert", "{g}");
    assert_eq!(count(&polling, 95), new_count);

    std::thread::sleep(Duration::from_millis(2500));
    assert_eq!(
        served(&on_hup)["id"],
        1,
        "no polling: still the first generation"
    );
    let kill = Command::new("kill")
        .args(["-HUP", &on_hup.child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    wait_for_generation(&on_hup, 2, Duration::from_secs(10));
    assert_eq!(count(&on_hup, 95), new_count);
}

/// `vegdb import` into the directory of a running server: handed over like generate, and
/// /status names the import and its source.
#[test]
fn import_into_a_served_directory_is_handed_to_the_server() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    generate_into(Scale::Tiny, 3, root).unwrap();
    let s = spawn(root, &[]);
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/uberiket");
    let out = Command::new(BIN)
        .args(["import", "--source"])
        .arg(&source)
        .arg("--data")
        .arg(root)
        .env("VEGDB_LOG", "warn")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("handed to it"), "{}", text(&out));
    let g = served(&s);
    assert_eq!(g["id"], 2, "{g}");
    assert_eq!(g["forelder"], 1, "{g}");
    assert_eq!(g["laget_av"], "importert", "{g}");
    assert_eq!(g["kilde"], source.display().to_string(), "{g}");
}

/// Publish into `data` a copy of its CURRENT generation whose network `poison` spoiled,
/// bypassing every producer's checks (what a buggy or hostile producer could write). Through
/// a hand-off when a server owns `data`.
fn publish_poisoned(
    data: &vegdb::snapshot::store::DataDir,
    poison: impl FnOnce(&mut vegdb::snapshot::columns::RoadNetwork),
) -> vegdb::error::Result<std::path::PathBuf> {
    use vegdb::snapshot::builder::{Description, GenerationBuilder};
    let current = data.current()?.expect("a generation");
    let (g, _) = Generation::load(&data.generation_dir(current), &|_| {})?;
    let mut net = (*g.network).clone();
    poison(&mut net);
    let mut builder = GenerationBuilder::fresh(data, g.catalog, g.areas)?;
    let tables = g.objects.values().map(|d| &*d.table);
    builder.write_tables(&net, tables, Some(&g.deleted))?;
    let description = Description {
        origin: "live test: poisoned network".into(),
        provenance: g.manifest.provenance.clone(),
        changesets: vec![],
        last_event_ids: g.manifest.last_event_ids.clone(),
    };
    Ok(builder.publish(data, description)?.dir)
}

/// The vertex of row 3, vertex 1 moved to (x, y).
fn move_vertex(x: f64, y: f64) -> impl FnOnce(&mut vegdb::snapshot::columns::RoadNetwork) {
    move |n| {
        let i = n.geom_offsets[3] as usize + 1;
        n.coords[i][0] = x;
        n.coords[i][1] = y;
    }
}

/// A generation with a finite, absurd coordinate (written past the importer) grew the
/// grid's memory by ~1 GB/s (1e20) or panicked in the R-tree (±1e308). Loading it now fails
/// with a Corrupt error naming the file, the row and the coordinate, and no panic; a bad
/// position or length too.
#[test]
fn a_generation_with_an_absurd_coordinate_is_refused_at_load() {
    type Poison = Box<dyn FnOnce(&mut vegdb::snapshot::columns::RoadNetwork)>;
    let cases: Vec<(&str, Poison)> = vec![
        ("1e20", Box::new(move_vertex(1e20, 6_600_000.0))),
        ("1e308", Box::new(move_vertex(-1e308, 1e308))),
        ("NaN", Box::new(move_vertex(f64::NAN, 6_600_000.0))),
        ("bad positions", Box::new(|n| n.to_pos[3] = 7.5)),
        ("bad length", Box::new(|n| n.length_m[3] = -1.0)),
    ];
    for (want, poison) in cases {
        let tmp = tempfile::tempdir().unwrap();
        generate_into(Scale::Tiny, 3, tmp.path()).unwrap();
        let data = vegdb::snapshot::store::DataDir::open_for_publishing(tmp.path()).unwrap();
        let dir = publish_poisoned(&data, poison).unwrap();
        let e = Generation::load(&dir, &|_| {}).expect_err(want);
        assert!(
            matches!(e, vegdb::error::EngineError::Corrupt { .. }),
            "{want}: {e:?}"
        );
        let msg = e.to_string();
        assert!(
            msg.contains(vegdb::snapshot::parquet_write::NETWORK_FILE)
                && msg.contains("network row 3")
                && msg.contains(want),
            "{want}: {msg}"
        );
    }
}

/// `vegdb serve` on a directory whose CURRENT generation holds an absurd coordinate never
/// became ready and said nothing; now it exits at once naming the generation, the row and the
/// coordinate, and the generation to roll back to.
#[test]
fn serve_refuses_a_current_generation_with_an_absurd_coordinate() {
    let tmp = tempfile::tempdir().unwrap();
    generate_into(Scale::Tiny, 3, tmp.path()).unwrap();
    let data = vegdb::snapshot::store::DataDir::open_for_publishing(tmp.path()).unwrap();
    publish_poisoned(&data, move_vertex(1e20, 6_600_000.0)).unwrap();
    drop(data);
    let mut child = Command::new(BIN)
        .args(["serve", "--listen", &format!("127.0.0.1:{}", free_port())])
        .arg("--data")
        .arg(tmp.path())
        .env("VEGDB_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("serve did not refuse the generation within 60 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(!status.success(), "{err}");
    assert!(
        err.contains("CURRENT generation 2 is corrupt")
            && err.contains("outside the storage extent")
            && err.contains("rollback --to 1"),
        "{err}"
    );
}

/// A generation with an absurd coordinate handed to a running server (the server grew to
/// 10.5 GB in 17 s): the server refuses it with the reason, which the producer gets, and keeps
/// serving and answering from the generation it had.
#[test]
fn a_running_server_rejects_a_handed_generation_with_an_absurd_coordinate() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    generate_into(Scale::Tiny, 3, root).unwrap();
    let s = spawn(root, &[]);
    let before = served(&s);
    let links = get(&s, "/vegnett/lenker?antall=5");
    let data = vegdb::snapshot::store::DataDir::open_for_publishing(root).unwrap();
    let e = publish_poisoned(&data, move_vertex(-1e308, 1e308)).expect_err("refused");
    let msg = e.to_string();
    assert!(
        msg.contains("does not load") && msg.contains("outside the storage extent"),
        "{msg}"
    );
    assert_eq!(served(&s)["id"], before["id"]);
    assert_eq!(get(&s, "/vegnett/lenker?antall=5"), links);
    assert_eq!(
        std::fs::read_to_string(root.join("CURRENT"))
            .unwrap()
            .trim(),
        before["id"].to_string()
    );
    // a position query on the served network still answers, at one of its vertexes
    let (g, _) = Generation::load(
        &data.generation_dir(before["id"].as_u64().unwrap()),
        &|_| {},
    )
    .unwrap();
    let [x, y, _] = g.network.coords[0];
    let p = get(&s, &format!("/posisjon?nord={y}&ost={x}&maks_avstand=5"));
    assert!(p.as_array().is_some_and(|a| !a.is_empty()), "{p}");
}
