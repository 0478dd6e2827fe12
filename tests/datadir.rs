//! The data directory under stress from outside: a second process, the operator tools on a live
//! directory, `snapshot verify` on multi-chunk and damaged generations, a full disk, and the
//! changeset journal's compaction. The real `vegdb` binary is used wherever a process matters.
#![cfg_attr(test, allow(clippy::unwrap_used))] // tests may unwrap

use std::io::Read;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use vegdb::generate::{generate_into, Scale};
use vegdb::generation::Generation;
use vegdb::snapshot::manifest::Manifest;
use vegdb::snapshot::store::DataDir;
use vegdb::users::{add_user, Role};

const BIN: &str = env!("CARGO_BIN_EXE_vegdb");
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

fn serve_command(data: &Path, port: u16, extra: &[&str]) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.args([
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
    .stderr(Stdio::piped());
    cmd
}

/// Start a server and wait until it answers.
fn spawn(data: &Path, extra: &[&str]) -> Server {
    let port = free_port();
    let mut child = serve_command(data, port, extra)
        .spawn()
        .expect("vegdb starts");
    let base = format!("http://127.0.0.1:{port}");
    let client = reqwest::blocking::Client::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if client
            .get(format!("{base}/nvdb/api/v2/status"))
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

fn request(
    c: &reqwest::blocking::Client,
    method: reqwest::Method,
    url: String,
    token: &str,
    body: Option<&Value>,
    headers: &[(&str, &str)],
) -> (u16, String) {
    let mut r = c
        .request(method, url)
        .header("X-Client", "datadir-test")
        .header("Authorization", format!("Bearer {token}"));
    for (k, v) in headers {
        r = r.header(*k, *v);
    }
    if let Some(b) = body {
        r = r
            .header("Content-Type", "application/json")
            .body(b.to_string());
    }
    let resp = r.send().expect("request answered");
    let st = resp.status().as_u16();
    (st, resp.text().unwrap())
}

/// A tiny generated data directory with one writing user; (links to place objects on, token).
fn prepare(root: &Path, seed: u64) -> (Vec<u64>, String) {
    let gen_dir = generate_into(Scale::Tiny, seed, root).unwrap();
    let (g, _) = Generation::load(&gen_dir, &|_| {}).unwrap();
    let n = &g.network;
    let links: Vec<u64> = n.plain_link_rows().map(|r| n.link_id[r]).take(40).collect();
    let token = add_user(
        &root.join("users.json"),
        "skriver",
        vec![Role::Write],
        None,
        None,
    )
    .unwrap();
    (links, token)
}

fn skiltpunkt_changeset(link: u64, position: f64, temp_id: &str) -> Value {
    json!({"effektDato": "2026-11-01", "datakatalogversjon": "2.38",
        "registrer": {"vegObjekter": [{"typeId": 95, "tempId": temp_id,
            "egenskaper": [{"typeId": 1876, "enum": [2868]}],
            "lokasjon": {"punkt": [{"lenkeId": link, "posisjon": position}]}}]}})
}

fn register(s: &Server, c: &reqwest::blocking::Client, token: &str, cs: &Value) -> String {
    let (st, body) = request(
        c,
        reqwest::Method::POST,
        format!("{}{WRITE}/endringssett", s.base),
        token,
        Some(cs),
        &[],
    );
    assert_eq!(st, 201, "{body}");
    let links: Vec<Value> = serde_json::from_str(&body).unwrap();
    links[0]["src"]
        .as_str()
        .unwrap()
        .rsplit('/')
        .next()
        .unwrap()
        .to_string()
}

fn start(s: &Server, c: &reqwest::blocking::Client, token: &str, id: &str) {
    let (st, body) = request(
        c,
        reqwest::Method::POST,
        format!("{}{WRITE}/endringssett/{id}/start", s.base),
        token,
        None,
        &[],
    );
    assert_eq!(st, 200, "{body}");
}

fn status(s: &Server, c: &reqwest::blocking::Client, token: &str, id: &str) -> Value {
    let (st, body) = request(
        c,
        reqwest::Method::GET,
        format!("{}{WRITE}/endringssett/{id}/status", s.base),
        token,
        None,
        &[],
    );
    assert_eq!(st, 200, "{body}");
    serde_json::from_str(&body).unwrap()
}

/// Poll until `done` accepts the status, or panic after `limit`.
fn wait_for(
    s: &Server,
    c: &reqwest::blocking::Client,
    token: &str,
    id: &str,
    limit: Duration,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + limit;
    loop {
        let st = status(s, c, token, id);
        if done(&st) {
            return st;
        }
        assert!(Instant::now() < deadline, "{id}: still {st}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn finished(v: &Value) -> bool {
    v["fremdrift"] == "UTFØRT_OG_ETTERBEHANDLET"
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

#[test]
fn a_second_writer_on_a_directory_fails_at_once_naming_the_owner() {
    let tmp = tempfile::tempdir().unwrap();
    prepare(tmp.path(), 3);
    let first = spawn(tmp.path(), &[]);
    let pid = first.child.id();
    // a second server: refused at once, with the owner's pid
    let mut second = serve_command(tmp.path(), free_port(), &[]).spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let code = loop {
        if let Some(code) = second.try_wait().unwrap() {
            break code;
        }
        if Instant::now() > deadline {
            let _ = second.kill();
            let _ = second.wait();
            panic!("a second server on the same directory is still running after 20 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(!code.success(), "a second server must not start");
    let mut err = String::new();
    second
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(err.contains(&format!("pid {pid}")), "{err}");
    assert!(err.contains("owned by another vegdb process"), "{err}");
    // generate does not publish beside the server's writer: it hands its generation to the
    // server, naming it (tests/live.rs follows what the server does with it)
    let out = run(&["generate", "--scale", "tiny"], tmp.path());
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains(&format!("pid {pid}")), "{}", text(&out));
    // readers need no lock
    let reader = spawn(tmp.path(), &["--read-only"]);
    let body = client()
        .get(format!("{}/nvdb/api/v2/status", reader.base))
        .send()
        .unwrap();
    assert!(body.status().is_success());
    let out = run(&["snapshot", "inspect"], tmp.path());
    assert!(out.status.success(), "{}", text(&out));
    drop(reader);
    // the lock ends with its owner, even killed
    drop(first);
    let again = spawn(tmp.path(), &[]);
    drop(again);
}

#[test]
fn snapshot_tools_on_a_live_directory_change_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let (links, token) = prepare(tmp.path(), 5);
    let s = spawn(tmp.path(), &[]);
    let c = client();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let runs = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    // the operator tools in a loop while changesets are published
    let tools = {
        let (stop, runs, dir) = (stop.clone(), runs.clone(), tmp.path().to_path_buf());
        std::thread::spawn(move || {
            let mut verify_failures = Vec::new();
            let mut n = 0;
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                let inspect = run(&["snapshot", "inspect"], &dir);
                assert!(inspect.status.success(), "{}", text(&inspect));
                if n % 10 == 9 {
                    let verify = run(&["snapshot", "verify"], &dir);
                    if !verify.status.success() {
                        verify_failures.push(text(&verify));
                    }
                }
                n += 1;
                runs.store(n, std::sync::atomic::Ordering::SeqCst);
            }
            verify_failures
        })
    };
    let mut ids = Vec::new();
    let mut k = 0;
    while runs.load(std::sync::atomic::Ordering::SeqCst) < 40 && k < 300 {
        let cs = skiltpunkt_changeset(links[k % links.len()], 0.5, &format!("t{k}"));
        let id = register(&s, &c, &token, &cs);
        start(&s, &c, &token, &id);
        ids.push(id);
        k += 1;
        std::thread::sleep(Duration::from_millis(15));
    }
    for id in &ids {
        let st = wait_for(&s, &c, &token, id, Duration::from_secs(60), |v| {
            v["fremdrift"] != "BEHANDLES"
        });
        assert!(finished(&st), "{id} ended {st}");
    }
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let verify_failures = tools.join().unwrap();
    let runs = runs.load(std::sync::atomic::Ordering::SeqCst);
    assert!(
        runs >= 40,
        "the tools ran while writing ({runs} runs, {k} changesets)"
    );
    assert!(
        verify_failures.is_empty(),
        "verify on a live directory: {verify_failures:?}"
    );
    drop(s);
    // the directory starts again and verifies
    let out = run(&["snapshot", "verify"], tmp.path());
    assert!(out.status.success(), "{}", text(&out));
    // a build in progress (as an owner leaves it mid-publish) is not the tools' to remove:
    // they change nothing at all
    let building = tmp.path().join(".tmp-gen-999999/objects");
    std::fs::create_dir_all(&building).unwrap();
    std::fs::write(building.join("part.parquet"), b"half written").unwrap();
    let untouched = tree(tmp.path());
    for tool in ["inspect", "verify", "load"] {
        let out = run(&["snapshot", tool], tmp.path());
        assert!(out.status.success(), "{tool}: {}", text(&out));
        assert_eq!(
            tree(tmp.path()),
            untouched,
            "snapshot {tool} changed the directory"
        );
    }
    // its owner cleans up at start
    let again = spawn(tmp.path(), &[]);
    assert!(!tmp.path().join(".tmp-gen-999999").exists());
    for id in &ids {
        assert!(finished(&status(&again, &c, &token, id)));
    }
}

/// Every file below `dir` with its bytes (to show a tool changed nothing).
fn tree(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let bytes = std::fs::read(&p).unwrap();
                out.push((p, bytes));
            }
        }
    }
    out.sort();
    out
}

/// Copy a data directory's current generation (and CURRENT) into `to`.
fn copy_current(from: &Path, to: &Path) -> PathBuf {
    let data = DataDir::read_only(from);
    let id = data.current().unwrap().unwrap();
    let src = data.generation_dir(id);
    let dst = to.join(src.file_name().unwrap());
    let m = Manifest::read(&src).unwrap();
    for f in m
        .files
        .iter()
        .map(|f| f.path.as_str())
        .chain(["MANIFEST.json"])
    {
        let d = dst.join(f);
        std::fs::create_dir_all(d.parent().unwrap()).unwrap();
        std::fs::copy(src.join(f), d).unwrap();
    }
    std::fs::write(to.join("CURRENT"), format!("{id}\n")).unwrap();
    dst
}

#[test]
fn verify_checks_each_chunk_and_lists_every_problem() {
    use std::sync::Arc;
    use vegdb::changeset::journal::{Progress, Record};
    use vegdb::changeset::writer::Writer;
    use vegdb::generation::GenerationStore;

    let tmp = tempfile::tempdir().unwrap();
    let (links, _) = prepare(tmp.path(), 4);
    let data = DataDir::open(tmp.path()).unwrap();
    let (g, _) = Generation::load(
        &data.generation_dir(data.current().unwrap().unwrap()),
        &|_| {},
    )
    .unwrap();
    let store = Arc::new(GenerationStore::new(g));
    // chunks of 64 rows: a changeset on Skiltpunkt rewrites that type as many chunks
    let writer = Writer::start_with(data.clone(), store.clone(), 64).unwrap();
    let cs = serde_json::from_value(skiltpunkt_changeset(links[0], 0.25, "1")).unwrap();
    let r = writer
        .journal
        .register(cs, Record::new("multi".into(), "t".into(), None, 1))
        .unwrap();
    writer.start_changeset(&r.id).unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while writer.journal.get(&r.id).unwrap().progress != Progress::DoneAndVisible {
        assert!(Instant::now() < deadline, "the changeset is applied");
        std::thread::sleep(Duration::from_millis(20));
    }
    let g = store.current();
    let chunks: Vec<_> = g
        .manifest
        .files
        .iter()
        .filter(|f| f.type_id == Some(95))
        .collect();
    assert!(chunks.len() > 3, "Skiltpunkt spans several chunks");
    // healthy: verify passes (today's code compared each chunk with the whole type)
    let copy = tempfile::tempdir().unwrap();
    let gen_copy = copy_current(tmp.path(), copy.path());
    let out = run(&["snapshot", "verify"], copy.path());
    assert!(out.status.success(), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("OK"));
    // damaged in four places at once: every one is reported
    let (flipped, miscounted, removed) = (&chunks[0].path, &chunks[1].path, &chunks[2].path);
    let p = gen_copy.join(flipped);
    let mut bytes = std::fs::read(&p).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0xff;
    std::fs::write(&p, bytes).unwrap();
    let mut m: Value =
        serde_json::from_slice(&std::fs::read(gen_copy.join("MANIFEST.json")).unwrap()).unwrap();
    for f in m["files"].as_array_mut().unwrap() {
        if f["path"] == miscounted.as_str() {
            f["rows"] = json!(f["rows"].as_u64().unwrap() + 1);
        }
    }
    std::fs::write(gen_copy.join("MANIFEST.json"), m.to_string()).unwrap();
    std::fs::remove_file(gen_copy.join(removed)).unwrap();
    std::fs::write(gen_copy.join("objects/stray.parquet"), b"not listed").unwrap();
    let untouched = tree(copy.path());
    let out = run(&["snapshot", "verify"], copy.path());
    assert!(!out.status.success());
    assert_eq!(tree(copy.path()), untouched, "verify changed nothing");
    let report = text(&out);
    for (path, what) in [
        (flipped.as_str(), "SHA-256"),
        (miscounted.as_str(), "rows in the file, the manifest says"),
        (removed.as_str(), "cannot be read"),
        ("objects/stray.parquet", "does not list"),
    ] {
        assert!(
            report
                .lines()
                .any(|l| l.starts_with("PROBLEM") && l.contains(path) && l.contains(what)),
            "{path} ({what}) is reported:\n{report}"
        );
    }
}

/// A small tmpfs, unmounted (lazily) when dropped.
struct Tmpfs {
    dir: PathBuf,
}

impl Tmpfs {
    fn mount(dir: &Path, size_mb: u64) -> Option<Tmpfs> {
        std::fs::create_dir_all(dir).ok()?;
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size_mb}m"), "tmpfs"])
            .arg(dir)
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        ok.then(|| Tmpfs {
            dir: dir.to_path_buf(),
        })
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.dir).status();
    }
}

/// Fill the file system of `dir` until a write fails; the filler file.
fn fill(dir: &Path) -> PathBuf {
    use std::io::Write;
    let path = dir.join("filler");
    let mut f = std::fs::File::create(&path).unwrap();
    let block = vec![0xa5u8; 64 * 1024];
    while f.write_all(&block).is_ok() {}
    let small = vec![0x5au8; 512];
    while f.write_all(&small).is_ok() {}
    let _ = f.sync_all();
    path
}

#[test]
fn a_full_disk_answers_507_and_waiting_changesets_resume_by_themselves() {
    let outer = tempfile::tempdir().unwrap();
    let Some(fs) = Tmpfs::mount(&outer.path().join("small"), 48) else {
        println!("SKIPPED: cannot mount a tmpfs here (needs root); the disk-full test did not run");
        return;
    };
    let root = fs.dir.join("data");
    let (links, token) = prepare(&root, 7);
    let s = spawn(&root, &[]);
    let c = client();
    // registered and started, processed in 2 s: the disk fills meanwhile
    let cs = skiltpunkt_changeset(links[1], 0.5, "venter");
    let (st, body) = request(
        &c,
        reqwest::Method::POST,
        format!("{}{WRITE}/endringssett", s.base),
        &token,
        Some(&cs),
        &[("X-NVDB-Delay", "2")],
    );
    assert_eq!(st, 201, "{body}");
    let links_json: Vec<Value> = serde_json::from_str(&body).unwrap();
    let waiting = links_json[0]["src"]
        .as_str()
        .unwrap()
        .rsplit('/')
        .next()
        .unwrap()
        .to_string();
    start(&s, &c, &token, &waiting);
    let filler = fill(&fs.dir);
    // a registration that cannot be stored: 507 with a fault, nothing registered
    let other = skiltpunkt_changeset(links[2], 0.5, "ny");
    let (st, body) = request(
        &c,
        reqwest::Method::POST,
        format!("{}{WRITE}/endringssett", s.base),
        &token,
        Some(&other),
        &[],
    );
    assert_eq!(st, 507, "{body}");
    let fault: Value = serde_json::from_str(&body).unwrap();
    assert!(
        fault["message"].as_str().unwrap().contains("full"),
        "{fault}"
    );
    // the started one waits, and says it will be tried again by itself
    let st = wait_for(&s, &c, &token, &waiting, Duration::from_secs(30), |v| {
        v["fremdrift"] == "VENTER"
    });
    assert_eq!(st["venteårsak"], "SYSTEMFEIL", "{st}");
    let warning = &st["resultat"]["advarsel"][0];
    assert_eq!(warning["kode"], "LAGRINGSPLASS_FULL", "{st}");
    assert!(warning["melding"].as_str().unwrap().contains("automatisk"));
    // reads go on
    assert!(client()
        .get(format!("{}/nvdb/api/v2/vegobjekter/95?antall=1", s.base))
        .send()
        .unwrap()
        .status()
        .is_success());
    // space comes back: it finishes without a restart
    std::fs::remove_file(filler).unwrap();
    let st = wait_for(&s, &c, &token, &waiting, Duration::from_secs(90), finished);
    assert!(st["resultat"]["vegObjekter"][0]["nvdbId"].is_u64(), "{st}");
    assert!(st["resultat"]["advarsel"]
        .as_array()
        .unwrap()
        .iter()
        .all(|w| w["kode"] != "LAGRINGSPLASS_FULL"));
    // and registering works again
    let id = register(&s, &c, &token, &other);
    start(&s, &c, &token, &id);
    wait_for(&s, &c, &token, &id, Duration::from_secs(30), finished);
    drop(s);
    let out = run(&["snapshot", "verify"], &root);
    assert!(out.status.success(), "{}", text(&out));
}

/// Everything the write API shows about `ids`: the overview and, per changeset, status,
/// fremdrift and the changeset itself.
fn write_api_view(s: &Server, c: &reqwest::blocking::Client, token: &str, ids: &[String]) -> Value {
    let get = |path: String| {
        let (st, body) = request(
            c,
            reqwest::Method::GET,
            format!("{}{WRITE}{path}", s.base),
            token,
            None,
            &[],
        );
        assert_eq!(st, 200, "{path}: {body}");
        serde_json::from_str::<Value>(&body).unwrap()
    };
    let mut per_id = serde_json::Map::new();
    for id in ids {
        per_id.insert(
            id.clone(),
            json!({
                "status": get(format!("/endringssett/{id}/status")),
                "fremdrift": get(format!("/endringssett/{id}/fremdrift")),
                "endringssett": get(format!("/endringssett/{id}")),
            }),
        );
    }
    json!({
        "overview": get("/endringssett?max=1000".into()),
        "newest": get("/endringssett?max=7&reverse=true".into()),
        "rejected": get("/endringssett?status=AVVIST".into()),
        "changesets": per_id,
    })
}

fn journal_files(root: &Path) -> (usize, usize) {
    let names: Vec<String> = std::fs::read_dir(root.join("changesets"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .collect();
    let segments = names.iter().filter(|n| n.ends_with(".jsonl")).count();
    (names.len() - segments, segments)
}

/// Register `n` changesets: most applied, some rejected, cancelled or never started.
fn workload(
    s: &Server,
    c: &reqwest::blocking::Client,
    token: &str,
    links: &[u64],
    n: usize,
    tag: &str,
) -> (Vec<String>, usize) {
    let mut ids = Vec::new();
    let mut unfinished = 0;
    for k in 0..n {
        let mut cs = skiltpunkt_changeset(links[k % links.len()], 0.3, &format!("{tag}{k}"));
        if k % 5 == 1 {
            cs["registrer"]["vegObjekter"][0]["egenskaper"][0]["enum"] = json!([999999]);
        }
        let id = register(s, c, token, &cs);
        match k % 10 {
            3 => {
                let (st, body) = request(
                    c,
                    reqwest::Method::POST,
                    format!("{}{WRITE}/endringssett/{id}/kanseller", s.base),
                    token,
                    None,
                    &[],
                );
                assert_eq!(st, 200, "{body}");
            }
            7 => unfinished += 1,
            _ => start(s, c, token, &id),
        }
        ids.push(id);
    }
    for id in &ids {
        wait_for(s, c, token, id, Duration::from_secs(120), |v| {
            v["fremdrift"] != "BEHANDLES"
        });
    }
    (ids, unfinished)
}

#[test]
fn journal_compaction_keeps_every_answer_and_bounds_the_files() {
    let tmp = tempfile::tempdir().unwrap();
    let (links, token) = prepare(tmp.path(), 9);
    let url = ["--public-url", "http://vegdb.test"];
    let c = client();
    // run 1: fewer finished changesets than one compaction takes, all in loose files
    let s = spawn(tmp.path(), &url);
    let (mut ids, unfinished) = workload(&s, &c, &token, &links, 40, "a");
    let before = write_api_view(&s, &c, &token, &ids);
    assert_eq!(journal_files(tmp.path()), (80, 0));
    drop(s);
    // run 2 compacts at start: the same answers from a segment
    let s = spawn(tmp.path(), &url);
    assert_eq!(write_api_view(&s, &c, &token, &ids), before);
    assert_eq!(journal_files(tmp.path()), (2 * unfinished, 1));
    // many more: compaction while running keeps the files bounded
    let (more, unfinished_more) = workload(&s, &c, &token, &links, 150, "b");
    ids.extend(more);
    let (loose, segments) = journal_files(tmp.path());
    let open = unfinished + unfinished_more;
    assert!(
        loose <= 2 * (open + 64) && segments == 1,
        "{loose} loose files, {segments} segments for {} changesets",
        ids.len()
    );
    let view = write_api_view(&s, &c, &token, &ids);
    assert_eq!(view["overview"].as_array().unwrap().len(), ids.len());
    drop(s);
    // run 3: restarting changes no answer
    let s = spawn(tmp.path(), &url);
    assert_eq!(write_api_view(&s, &c, &token, &ids), view);
    assert_eq!(journal_files(tmp.path()), (2 * open, 1));
}
