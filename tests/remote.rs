//! Generations on object storage against a real S3-protocol server (`tests/s3`: moto_server):
//! push/pull (only missing files move, checked), two writers racing (exactly one wins), the
//! writer publishing changesets to the store, a crash at every point of an upload (nothing
//! accepted lost, CURRENT never names a half-uploaded generation, the upload completed at
//! restart), and the store's retention.
#![cfg_attr(test, allow(clippy::unwrap_used))] // tests may unwrap

#[path = "s3/mod.rs"]
mod s3;

use std::collections::BTreeMap;
use std::io::Read;
use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use sha2::Digest;
use vegdb::generate::{generate_into, Scale};
use vegdb::remote::push::{pull, push, PushError};
use vegdb::remote::{publisher, Remote};
use vegdb::snapshot::manifest::{FileEntry, Manifest};
use vegdb::snapshot::store::DataDir;
use vegdb::users::{add_user, Role};

const BIN: &str = env!("CARGO_BIN_EXE_vegdb");
const WRITE: &str = "/nvdb/apiskriv/rest/v2";

fn rt() -> tokio::runtime::Runtime {
    vegdb::remote::runtime().unwrap()
}

/// Every object under the remote's prefix: key -> (size, e_tag, last modified).
fn listing(remote: &Remote) -> BTreeMap<String, (u64, Option<String>, String)> {
    use futures_util::StreamExt;
    let (store, prefix) = remote.object_store();
    rt().block_on(async {
        let mut out = BTreeMap::new();
        let mut l = store.list(Some(prefix));
        while let Some(m) = l.next().await {
            let m = m.unwrap();
            out.insert(
                m.location.to_string(),
                (m.size, m.e_tag, m.last_modified.to_rfc3339()),
            );
        }
        out
    })
}

/// Download generation `id` completely and check every file against its manifest entry.
fn assert_complete(remote: &Remote, id: u64) -> Manifest {
    let rt = rt();
    let m = rt
        .block_on(remote.manifest(id))
        .unwrap()
        .unwrap_or_else(|| panic!("generation {id} has a manifest in the store"));
    assert_eq!(m.generation, id);
    let tmp = tempfile::tempdir().unwrap();
    for f in &m.files {
        rt.block_on(remote.download_file(id, f, &tmp.path().join(&f.path)))
            .unwrap_or_else(|e| panic!("{}: {e}", f.path));
    }
    m
}

/// A new generation of `data` that shares every file of CURRENT and adds one small file.
fn next_generation(data: &DataDir, marker: &str) -> u64 {
    let base = data.current().unwrap().unwrap();
    let base_dir = data.generation_dir(base);
    let mut m = Manifest::read(&base_dir).unwrap();
    let id = data.next_id().unwrap();
    let mut staging = data.begin(id).unwrap();
    for f in m.files.clone() {
        staging.share_from(&base_dir, &f).unwrap();
    }
    let bytes = format!("{{\"marker\": \"{marker}\"}}");
    let name = format!("extra-{marker}.json");
    std::fs::write(staging.dir.join(&name), &bytes).unwrap();
    staging.files.push(FileEntry {
        path: name,
        rows: 0,
        bytes: bytes.len() as u64,
        sha256: vegdb::util::hex(&sha2::Sha256::digest(bytes.as_bytes())),
        type_id: None,
        first_id: None,
    });
    m.parent = Some(base);
    data.publish(staging, m).unwrap();
    id
}

fn run(args: &[&str], env: &[(&'static str, String)]) -> String {
    let out = Command::new(BIN)
        .args(args)
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "vegdb {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).to_string()
}

#[test]
fn push_and_pull_move_only_missing_files() {
    let Some(s3) = s3::S3Server::start() else {
        return;
    };
    let url = s3.url("roundtrip");
    let remote = s3.remote("roundtrip");
    let a = tempfile::tempdir().unwrap();
    generate_into(Scale::Tiny, 3, a.path()).unwrap();
    let a_dir = a.path().to_str().unwrap();

    // the command: every file uploaded, CURRENT created
    let out = run(
        &["snapshot", "push", "--data", a_dir, "--to", &url],
        &s3.env(),
    );
    assert!(out.contains("CURRENT moved"), "{out}");
    let local = Manifest::read(&DataDir::read_only(a.path()).generation_dir(1)).unwrap();
    assert_eq!(
        rt().block_on(remote.current()).unwrap().unwrap().generation,
        1
    );
    assert_eq!(assert_complete(&remote, 1), local);
    let before = listing(&remote);
    assert_eq!(
        before.len(),
        local.files.len() + 3,
        "files + MANIFEST.json + WRITER + CURRENT"
    );

    // a second push sends nothing and changes nothing
    let data_a = DataDir::read_only(a.path());
    let report = rt().block_on(push(&data_a, &remote, None)).unwrap();
    assert_eq!((report.uploaded, report.copied), (0, 0));
    assert_eq!(report.counts.puts, 0, "{report:?}");
    assert!(!report.made_current);
    assert_eq!(listing(&remote), before);

    // pull into an empty directory: everything downloaded and checked; it verifies
    let b = tempfile::tempdir().unwrap();
    let b_dir = b.path().to_str().unwrap();
    let out = run(
        &["snapshot", "pull", "--from", &url, "--data", b_dir],
        &s3.env(),
    );
    assert!(
        out.contains(&format!("{} file(s) downloaded", local.files.len())),
        "{out}"
    );
    run(&["snapshot", "verify", "--data", b_dir], &[]);
    assert_eq!(
        Manifest::read(&DataDir::read_only(b.path()).generation_dir(1))
            .unwrap()
            .files,
        local.files
    );

    // a newer generation: the push uploads its one new file and copies the rest in the store
    let owner_a = DataDir::open(a.path()).unwrap();
    let g2 = next_generation(&owner_a, "two");
    let report = rt().block_on(push(&owner_a, &remote, None)).unwrap();
    assert_eq!(report.generation, g2);
    assert_eq!((report.uploaded, report.copied), (1, local.files.len()));
    assert!(report.made_current);
    // file + manifest + claim + CURRENT
    assert_eq!(report.counts.puts, 4, "{report:?}");
    assert_complete(&remote, g2);

    // the pull downloads only that file; the others are linked from generation 1
    let owner_b = DataDir::open(b.path()).unwrap();
    let report = rt().block_on(pull(&owner_b, &remote, None)).unwrap();
    assert_eq!((report.downloaded, report.linked), (1, local.files.len()));
    let extra = Manifest::read(&owner_b.generation_dir(g2)).unwrap();
    let entry = extra
        .files
        .iter()
        .find(|f| f.path == "extra-two.json")
        .unwrap();
    assert!(
        report.counts.bytes_down < 64 * 1024 + entry.bytes,
        "only the manifest and the new file came down: {report:?}"
    );
    assert_eq!(owner_b.current().unwrap(), Some(g2));
    // pulling again: nothing
    let report = rt().block_on(pull(&owner_b, &remote, None)).unwrap();
    assert!(report.already_there && report.downloaded == 0);
}

#[test]
fn a_damaged_download_is_refused() {
    let Some(s3) = s3::S3Server::start() else {
        return;
    };
    let remote = s3.remote("damaged");
    let a = tempfile::tempdir().unwrap();
    generate_into(Scale::Tiny, 4, a.path()).unwrap();
    rt().block_on(push(&DataDir::read_only(a.path()), &remote, None))
        .unwrap();
    let m = rt().block_on(remote.manifest(1)).unwrap().unwrap();
    // replace one file in the store behind vegdb's back
    let f = &m.files[0];
    rt().block_on(remote.put_raw(&remote.file_key(1, &f.path), vec![0u8; 10].into()))
        .unwrap();
    let b = tempfile::tempdir().unwrap();
    let owner_b = DataDir::open(b.path()).unwrap();
    let err = rt().block_on(pull(&owner_b, &remote, None)).unwrap_err();
    assert!(err.to_string().contains("SHA-256"), "{err}");
    assert_eq!(owner_b.current().unwrap(), None, "nothing published");
}

#[test]
fn two_writers_racing_never_both_win() {
    let Some(s3) = s3::S3Server::start() else {
        return;
    };
    // CURRENT itself: rounds of several writers moving it from the version they read
    let writers = 4;
    for round in 0..5u64 {
        let barrier = Arc::new(Barrier::new(writers));
        let handles: Vec<_> = (0..writers)
            .map(|_| {
                let (b, r) = (barrier.clone(), s3.remote("race"));
                std::thread::spawn(move || {
                    let rt = rt();
                    let c = rt.block_on(r.current()).unwrap();
                    b.wait();
                    rt.block_on(r.set_current(c.as_ref(), round + 1)).unwrap()
                })
            })
            .collect();
        let wins: Vec<bool> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        assert_eq!(
            wins.iter().filter(|w| **w).count(),
            1,
            "round {round}: {wins:?}"
        );
        let r = s3.remote("race");
        assert_eq!(
            rt().block_on(r.current()).unwrap().unwrap().generation,
            round + 1
        );
    }

    // whole generations: two data directories push their (different) generation 1 at once
    let dirs: Vec<tempfile::TempDir> = (0..2).map(|_| tempfile::tempdir().unwrap()).collect();
    for (i, d) in dirs.iter().enumerate() {
        generate_into(Scale::Tiny, 20 + i as u64, d.path()).unwrap();
    }
    let barrier = Arc::new(Barrier::new(2));
    let handles: Vec<_> = dirs
        .iter()
        .map(|d| {
            let (b, r, p) = (barrier.clone(), s3.remote("race2"), d.path().to_path_buf());
            std::thread::spawn(move || {
                b.wait();
                match rt().block_on(push(&DataDir::read_only(&p), &r, None)) {
                    Ok(_) => Ok(()),
                    Err(PushError::Conflict(m)) => Err(m),
                    Err(e) => panic!("{e}"),
                }
            })
        })
        .collect();
    let results: Vec<Result<(), String>> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    assert_eq!(
        results.iter().filter(|r| r.is_ok()).count(),
        1,
        "{results:?}"
    );
    let winner = results.iter().position(|r| r.is_ok()).unwrap();
    let remote = s3.remote("race2");
    let stored = assert_complete(&remote, 1);
    let theirs =
        Manifest::read(&DataDir::read_only(dirs[winner].path()).generation_dir(1)).unwrap();
    assert_eq!(stored, theirs, "the store holds the winner's generation");
    // the loser may not take over later either: its generation 1 is not the store's
    let loser = DataDir::read_only(dirs[1 - winner].path());
    let err = rt().block_on(push(&loser, &remote, None)).unwrap_err();
    assert!(matches!(err, PushError::Conflict(_)), "{err}");
}

#[test]
fn the_store_keeps_the_last_n_generations() {
    let Some(s3) = s3::S3Server::start() else {
        return;
    };
    let remote = s3.remote("gc");
    let a = tempfile::tempdir().unwrap();
    generate_into(Scale::Tiny, 5, a.path()).unwrap();
    let data = DataDir::open(a.path()).unwrap();
    rt().block_on(push(&data, &remote, None)).unwrap();
    for i in 0..6 {
        next_generation(&data, &format!("g{i}"));
        rt().block_on(push(&data, &remote, None)).unwrap();
    }
    // an upload under way above CURRENT (claimed, no manifest) is never collected
    rt().block_on(remote.claim(50, "someone")).unwrap();
    let removed = rt()
        .block_on(publisher::collect_garbage(&remote, 3))
        .unwrap();
    assert_eq!(removed, vec![1, 2, 3, 4]);
    assert_eq!(
        rt().block_on(remote.generation_prefixes()).unwrap(),
        vec![5, 6, 7, 50]
    );
    for id in [5, 6, 7] {
        assert_complete(&remote, id);
    }
    // nothing more to collect
    assert!(rt()
        .block_on(publisher::collect_garbage(&remote, 3))
        .unwrap()
        .is_empty());
    // files of removed generations were copied, not shared: the kept ones are whole
    let keys = listing(&remote);
    assert!(keys.keys().all(|k| !k.contains("gen-000001/")));
}

// ---- the writer publishing to the store -------------------------------------------------

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

/// Start `vegdb serve` publishing to `url`; None when it aborted at its fail point while
/// starting (a pending upload completed at start).
fn spawn(
    data: &Path,
    s3: &s3::S3Server,
    url: &str,
    keep: usize,
    fail_at: Option<&str>,
) -> Option<Server> {
    let port = free_port();
    let mut cmd = Command::new(BIN);
    cmd.args([
        "serve",
        "--writer-priority",
        "normal",
        "--listen",
        &format!("127.0.0.1:{port}"),
        "--publish-to",
        url,
        "--store-keep",
        &keep.to_string(),
    ])
    .arg("--data")
    .arg(data)
    .envs(s3.env())
    .env("VEGDB_LOG", "warn")
    .stdout(Stdio::null())
    .stderr(Stdio::piped());
    if let Some(f) = fail_at {
        cmd.env("VEGDB_FAIL_AT", f);
    }
    let mut child = cmd.spawn().unwrap();
    let base = format!("http://127.0.0.1:{port}");
    let client = reqwest::blocking::Client::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if client
            .get(format!("{base}/nvdb/api/v2/status"))
            .send()
            .is_ok_and(|r| r.status().is_success())
        {
            return Some(Server { child, base });
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
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn request(
    base: &str,
    method: reqwest::Method,
    path: &str,
    token: &str,
    body: Option<&Value>,
) -> Option<(u16, String)> {
    let c = reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(20))
        .build()
        .unwrap();
    let mut r = c
        .request(method, format!("{base}{WRITE}{path}"))
        .header("X-Client", "remote-test")
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

/// Register and start a changeset of one new sign; its id (None when the server died first).
fn submit(base: &str, token: &str, link: u64, marker: &str) -> Option<String> {
    let cs = json!({"effektDato": "2026-11-01", "datakatalogversjon": "2.38",
        "registrer": {"vegObjekter": [{"typeId": 95, "tempId": marker,
            "egenskaper": [{"typeId": 1876, "enum": [2868]},
                           {"typeId": 10854, "verdi": [marker]}],
            "lokasjon": {"punkt": [{"lenkeId": link, "posisjon": 0.5}]}}]}});
    let (st, body) = request(
        base,
        reqwest::Method::POST,
        "/endringssett",
        token,
        Some(&cs),
    )?;
    assert_eq!(st, 201, "{body}");
    let links: Vec<Value> = serde_json::from_str(&body).unwrap();
    let id = links[0]["src"]
        .as_str()
        .unwrap()
        .rsplit('/')
        .next()
        .unwrap()
        .to_string();
    request(
        base,
        reqwest::Method::POST,
        &format!("/endringssett/{id}/start"),
        token,
        None,
    );
    Some(id)
}

fn wait_done(base: &str, token: &str, id: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (st, p) = request(
            base,
            reqwest::Method::GET,
            &format!("/endringssett/{id}/fremdrift"),
            token,
            None,
        )
        .unwrap();
        assert_eq!(st, 200, "accepted changeset {id} is known: {p}");
        if p == "\"IKKE_STARTET\"" {
            request(
                base,
                reqwest::Method::POST,
                &format!("/endringssett/{id}/start"),
                token,
                None,
            );
        }
        if p == "\"UTFØRT_OG_ETTERBEHANDLET\"" {
            return;
        }
        assert!(Instant::now() < deadline, "{id} still {p}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Wait until the store's CURRENT is the data directory's; that generation.
fn wait_store_current(remote: &Remote, data: &Path) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let local = DataDir::read_only(data).current().unwrap().unwrap();
        let stored = rt()
            .block_on(remote.current())
            .unwrap()
            .map(|c| c.generation);
        if stored == Some(local) {
            return local;
        }
        assert!(
            Instant::now() < deadline,
            "the store's CURRENT {stored:?} did not reach {local}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[cfg(feature = "failpoints")]
/// The changesets the generations of the store's CURRENT chain applied (as far as the store
/// still has them) — with `changesets.json` results in the generation itself.
fn stored_changesets(remote: &Remote) -> Vec<String> {
    let rt = rt();
    let mut id = rt.block_on(remote.current()).unwrap().unwrap().generation;
    let mut out = Vec::new();
    while let Some(m) = rt.block_on(remote.manifest(id)).unwrap() {
        out.extend(m.changesets);
        match m.parent {
            Some(p) => id = p,
            None => break,
        }
    }
    out
}

fn setup_writer_dir(seed: u64) -> (tempfile::TempDir, String, u64) {
    let tmp = tempfile::tempdir().unwrap();
    let gen_dir = generate_into(Scale::Tiny, seed, tmp.path()).unwrap();
    let (g, _) = vegdb::generation::Generation::load(&gen_dir, &|_| {}).unwrap();
    let n = &g.network;
    let link = n.plain_link_rows().map(|r| n.link_id[r]).next().unwrap();
    drop(g);
    let token = add_user(
        &tmp.path().join("users.json"),
        "remote",
        vec![Role::Write],
        None,
        None,
    )
    .unwrap();
    (tmp, token, link)
}

#[test]
fn the_writer_publishes_each_generation_to_the_store() {
    let Some(s3) = s3::S3Server::start() else {
        return;
    };
    let url = s3.url("writer");
    let remote = s3.remote("writer");
    let (tmp, token, link) = setup_writer_dir(7);
    // a replica's copy of the first generation, to measure what a changeset costs it
    let s = spawn(tmp.path(), &s3, &url, 2, None).unwrap();
    assert_eq!(wait_store_current(&remote, tmp.path()), 1);
    let replica = tempfile::tempdir().unwrap();
    let replica_dir = DataDir::open(replica.path()).unwrap();
    let first = rt().block_on(pull(&replica_dir, &remote, None)).unwrap();

    let mut ids = Vec::new();
    for k in 0..3 {
        let id = submit(&s.base, &token, link, &format!("w-{k}")).unwrap();
        wait_done(&s.base, &token, &id);
        let g = wait_store_current(&remote, tmp.path());
        let m = assert_complete(&remote, g);
        assert!(m.changesets.contains(&id), "{id} in generation {g}: {m:?}");
        ids.push(id);
    }
    // a one-object changeset costs a replica a few files, not the generation
    let report = rt().block_on(pull(&replica_dir, &remote, None)).unwrap();
    assert!(
        report.downloaded <= 4 && report.downloaded < first.downloaded,
        "{report:?} vs the first pull {first:?}"
    );
    run(
        &[
            "snapshot",
            "verify",
            "--data",
            replica.path().to_str().unwrap(),
        ],
        &[],
    );
    // --store-keep 2: the two newest generations stay
    let prefixes = rt().block_on(remote.generation_prefixes()).unwrap();
    let current = rt().block_on(remote.current()).unwrap().unwrap().generation;
    assert_eq!(prefixes, vec![current - 1, current]);

    // a second writer with its own data directory is refused by the store it does not own
    // (the first stopped cleanly: its lease is released, so the ownership check refuses)
    stop_cleanly(s);
    let (other, _, _) = setup_writer_dir(8);
    let out = Command::new(BIN)
        .args(["serve", "--listen", &format!("127.0.0.1:{}", free_port())])
        .args(["--publish-to", &url, "--data"])
        .arg(other.path())
        .envs(s3.env())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("another writer owns it"), "{err}");
}

/// Wait until the server aborted at its fail point.
#[cfg(feature = "failpoints")]
fn wait_exit(mut s: Server, point: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while s.child.try_wait().unwrap().is_none() {
        assert!(
            Instant::now() < deadline,
            "{point}: the writer did not reach it"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut err = String::new();
    if let Some(mut e) = s.child.stderr.take() {
        let _ = e.read_to_string(&mut err);
    }
    assert!(
        err.contains(&format!("fail point {point}")),
        "{point}: {err}"
    );
}

// aborts the writer at fault points: only with them compiled in
#[cfg(feature = "failpoints")]
#[test]
fn killing_the_writer_during_an_upload_loses_nothing() {
    let Some(s3) = s3::S3Server::start() else {
        return;
    };
    let url = s3.url("crash");
    let remote = s3.remote("crash");
    let (tmp, token, link) = setup_writer_dir(9);
    // the first upload (generation 1) is interrupted at start and completed by the next start
    if let Some(s) = spawn(tmp.path(), &s3, &url, 5, Some("store-before-manifest")) {
        wait_exit(s, "store-before-manifest");
    }
    assert_eq!(rt().block_on(remote.current()).unwrap(), None);
    assert!(rt().block_on(remote.manifest(1)).unwrap().is_none());
    let s = spawn(tmp.path(), &s3, &url, 5, None).unwrap();
    assert_eq!(wait_store_current(&remote, tmp.path()), 1);
    drop(s);

    let mut accepted = Vec::new();
    for (round, point) in [
        "store-after-first-file",
        "store-before-manifest",
        "store-before-current",
        "store-after-current",
    ]
    .iter()
    .enumerate()
    {
        let s = spawn(tmp.path(), &s3, &url, 5, Some(point)).expect("nothing to upload at start");
        let id = submit(&s.base, &token, link, &format!("c-{round}"))
            .expect("accepted before the upload");
        accepted.push(id);
        // the writer publishes locally, uploads, and aborts at the fail point
        wait_exit(s, point);
        // the store's CURRENT names a complete generation, whatever the point
        let current = rt().block_on(remote.current()).unwrap().unwrap().generation;
        assert_complete(&remote, current);
        let local = DataDir::read_only(tmp.path()).current().unwrap().unwrap();
        if *point == "store-after-current" {
            assert_eq!(current, local, "{point}");
        } else {
            assert!(
                current < local,
                "{point}: CURRENT {current} moved to {local}"
            );
        }
        // restart: the upload is completed, the changeset is done and in the store
        let s = spawn(tmp.path(), &s3, &url, 5, None).unwrap();
        for id in &accepted {
            wait_done(&s.base, &token, id);
        }
        let g = wait_store_current(&remote, tmp.path());
        assert_complete(&remote, g);
        let stored = stored_changesets(&remote);
        for id in &accepted {
            assert!(
                stored.contains(id),
                "{point}: {id} is in the store's generations"
            );
        }
    }
    // nothing is left half-uploaded above CURRENT
    let current = rt().block_on(remote.current()).unwrap().unwrap().generation;
    assert!(rt()
        .block_on(remote.generation_prefixes())
        .unwrap()
        .iter()
        .all(|&g| g <= current));
    // and the whole thing pulls and verifies
    let b = tempfile::tempdir().unwrap();
    run(
        &[
            "snapshot",
            "pull",
            "--from",
            &url,
            "--data",
            b.path().to_str().unwrap(),
        ],
        &s3.env(),
    );
    run(
        &["snapshot", "verify", "--data", b.path().to_str().unwrap()],
        &[],
    );
    // upload_generation is what the writer runs: a direct call is idempotent once done
    let data = DataDir::read_only(tmp.path());
    let pinned = data.pin_current_or(None).unwrap();
    let again = rt()
        .block_on(vegdb::remote::push::upload_generation(
            &remote,
            &pinned.dir,
            current,
            "whoever",
            rt().block_on(remote.current()).unwrap().as_ref(),
        ))
        .unwrap();
    assert_eq!(
        (again.uploaded, again.copied, again.made_current),
        (0, 0, false)
    );
}

// ---- one writer per store prefix -----------------------------------------------------------

/// Start `vegdb serve --publish-to url` on `data` with short lease times, without waiting.
fn start_writer(data: &Path, s3: &s3::S3Server, url: &str) -> Server {
    let port = free_port();
    let child = Command::new(BIN)
        .args(["serve", "--writer-priority", "normal", "--listen"])
        .arg(format!("127.0.0.1:{port}"))
        .args(["--publish-to", url])
        .args(["--store-lease-ttl", "4", "--store-lease-renew", "1"])
        .arg("--data")
        .arg(data)
        .envs(s3.env())
        .env("VEGDB_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    Server {
        child,
        base: format!("http://127.0.0.1:{port}"),
    }
}

/// SIGTERM a server and wait until it has stopped.
fn stop_cleanly(mut s: Server) {
    assert!(Command::new("kill")
        .args(["-TERM", &s.child.id().to_string()])
        .status()
        .unwrap()
        .success());
    let deadline = Instant::now() + Duration::from_secs(30);
    while s.child.try_wait().unwrap().is_none() {
        assert!(
            Instant::now() < deadline,
            "the writer did not stop on SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// GET `path` of a server: (status, body); None when it does not answer.
fn get(base: &str, path: &str) -> Option<(u16, String)> {
    let r = reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap()
        .get(format!("{base}{path}"))
        .send()
        .ok()?;
    let st = r.status().as_u16();
    Some((st, r.text().ok()?))
}

/// The writer's `/ready` answer once it is `status` (within 30 s).
fn wait_ready_status(s: &Server, status: u16) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some((st, body)) = get(&s.base, "/ready") {
            if st == status {
                return serde_json::from_str(&body).unwrap();
            }
        }
        assert!(
            Instant::now() < deadline,
            "/ready of {} did not become {status}",
            s.base
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn one_writer_per_store_prefix() {
    let Some(s3) = s3::S3Server::start() else {
        return;
    };
    let url = s3.url("lease");
    let remote = s3.remote("lease");
    let dirs = [setup_writer_dir(31), setup_writer_dir(32)];
    // two writers with their own data directories started together on an empty prefix:
    // exactly one becomes ready, the other refuses to start and names the lease's holder
    let mut servers: Vec<Option<Server>> = dirs
        .iter()
        .map(|(d, _, _)| Some(start_writer(d.path(), &s3, &url)))
        .collect();
    let mut ready = Vec::new();
    let mut refused = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(90);
    while ready.len() + refused.len() < 2 {
        assert!(Instant::now() < deadline, "the writers did not settle");
        for (i, slot) in servers.iter_mut().enumerate() {
            let Some(s) = slot else { continue };
            if let Some(code) = s.child.try_wait().unwrap() {
                let mut err = String::new();
                s.child
                    .stderr
                    .take()
                    .unwrap()
                    .read_to_string(&mut err)
                    .unwrap();
                refused.push((i, code, err));
                *slot = None;
            } else if get(&s.base, "/ready").is_some_and(|(st, _)| st == 200) {
                ready.push((i, slot.take().unwrap()));
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        ready.len(),
        1,
        "exactly one writer is ready; refused: {refused:?}"
    );
    let (winner, s) = ready.pop().unwrap();
    let (loser, code, err) = refused.pop().unwrap();
    assert_ne!(winner, loser);
    assert!(!code.success(), "the second writer refuses to start: {err}");
    let holder = std::fs::read_to_string(dirs[winner].0.path().join("WRITER-ID")).unwrap();
    assert!(
        err.contains("another writer holds the writer lease") && err.contains(holder.trim()),
        "the refusal names the holder {holder}: {err}"
    );
    // the winner's changesets reach the store
    let (dir, token, link) = &dirs[winner];
    let id = submit(&s.base, token, *link, "lease-1").unwrap();
    wait_done(&s.base, token, &id);
    let g = wait_store_current(&remote, dir.path());
    assert!(assert_complete(&remote, g).changesets.contains(&id));

    // a clean stop releases the lease; the same directory takes it again at once
    let lease_key = remote.key(vegdb::remote::lease::LEASE_FILE);
    let read_lease = || -> Value {
        let bytes = rt()
            .block_on(remote.get_opt(&lease_key))
            .unwrap()
            .expect("the lease object is there");
        serde_json::from_slice(&bytes).unwrap()
    };
    assert_eq!(read_lease()["holder"], holder.trim());
    assert_eq!(read_lease()["released"], false);
    stop_cleanly(s);
    assert_eq!(read_lease()["released"], true, "{}", read_lease());
    let s = start_writer(dir.path(), &s3, &url);
    wait_ready_status(&s, 200);

    // another writer takes the lease over (simulated: the object overwritten): the writer goes
    // not ready and answers changesets 503 in the write API's fault shape
    let mut stolen = read_lease();
    stolen["holder"] = json!("thief");
    stolen["pid"] = json!(1);
    rt().block_on(remote.put_raw(&lease_key, serde_json::to_vec(&stolen).unwrap().into()))
        .unwrap();
    let r = wait_ready_status(&s, 503);
    assert_eq!(r["ready"], false);
    let detail = r["writer"]["detail"].as_str().unwrap();
    assert!(detail.contains("taken over by writer thief"), "{r}");
    let cs = json!({"effektDato": "2026-11-01", "datakatalogversjon": "2.38",
        "registrer": {"vegObjekter": [{"typeId": 95, "tempId": "after",
            "egenskaper": [{"typeId": 1876, "enum": [2868]}],
            "lokasjon": {"punkt": [{"lenkeId": link, "posisjon": 0.5}]}}]}});
    let (st, body) = request(
        &s.base,
        reqwest::Method::POST,
        "/endringssett",
        token,
        Some(&cs),
    )
    .unwrap();
    assert_eq!(st, 503, "{body}");
    let fault: Value = serde_json::from_str(&body).unwrap();
    assert!(
        fault["message"].as_str().unwrap().contains("thief"),
        "the fault says why: {body}"
    );
    // what it accepted before stays readable
    let (st, p) = request(
        &s.base,
        reqwest::Method::GET,
        &format!("/endringssett/{id}/fremdrift"),
        token,
        None,
    )
    .unwrap();
    assert_eq!((st, p.as_str()), (200, "\"UTFØRT_OG_ETTERBEHANDLET\""));
    // it stays not ready: the lease is not taken back from its new holder
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(get(&s.base, "/ready").unwrap().0, 503);
    assert_eq!(read_lease()["holder"], "thief");
}
