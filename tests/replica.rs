//! Read replicas: a replica follows the generations a writer publishes to a store,
//! downloading only the files whose content it does not hold and loading each generation as a
//! successor of the served one; write requests reaching it go to the writer; cursors page on
//! across replicas and generation swaps.
//!
//! In-process tests check the engine parts against oracles (a successor load equals a full
//! load of the same directory; downloads equal the files whose content is new in the
//! manifest). The process test runs a real writer and two real replicas against a store.
#![cfg_attr(test, allow(clippy::unwrap_used))] // tests may unwrap

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use vegdb::changeset::journal::{Progress, Record};
use vegdb::changeset::working::ObjectState;
use vegdb::changeset::writer::Writer;
use vegdb::generate::{generate_into, Scale};
use vegdb::generation::{Generation, GenerationStore};
use vegdb::replica::source::DirSource;
use vegdb::replica::{FollowConfig, Follower};
use vegdb::snapshot::manifest::Manifest;
use vegdb::snapshot::store::DataDir;

mod replica_support;
#[path = "s3/mod.rs"]
mod s3;
use replica_support::*;

/// Two generations hold the same data and indexes.
fn assert_same_generation(a: &Generation, b: &Generation) {
    assert_eq!(a.id, b.id);
    assert_eq!(
        a.objects.keys().collect::<Vec<_>>(),
        b.objects.keys().collect::<Vec<_>>()
    );
    for (t, da) in &a.objects {
        let db = &b.objects[t];
        assert_eq!(da.table.len(), db.table.len(), "type {t}");
        for r in 0..da.table.len() {
            // compared as text: ring separators in surfaces are NaN coordinates
            let (x, y) = (
                format!("{:?}", ObjectState::from_row(&da.table, r)),
                format!("{:?}", ObjectState::from_row(&db.table, r)),
            );
            assert!(x == y, "type {t} row {r} differs");
        }
        fn norm<K: std::fmt::Debug>(
            m: &vegdb::util::FastMap<K, roaring::RoaringBitmap>,
        ) -> Vec<(String, roaring::RoaringBitmap)> {
            let mut v: Vec<_> = m
                .iter()
                .filter(|(_, b)| !b.is_empty())
                .map(|(k, b)| (format!("{k:?}"), b.clone()))
                .collect();
            v.sort_by(|x, y| x.0.cmp(&y.0));
            v
        }
        assert_eq!(
            norm(&da.index().areas),
            norm(&db.index().areas),
            "areas {t}"
        );
        assert_eq!(
            norm(&da.index().enums),
            norm(&db.index().enums),
            "enums {t}"
        );
        assert_eq!(da.index().length_m.len(), db.index().length_m.len());
        for (x, y) in da.index().length_m.iter().zip(&db.index().length_m) {
            assert!((x - y).abs() < 1e-6, "type {t}: {x} vs {y}");
        }
        assert!((da.index().total_length_m - db.index().total_length_m).abs() < 1e-3);
    }
    assert_eq!(a.deleted.id, b.deleted.id);
    assert_eq!(*a.parents, *b.parents);
    assert_eq!(a.network.link_id, b.network.link_id);
}

/// A writer in this process over a tiny dataset with 64-row chunks, so a type spans many
/// chunk files and a small changeset touches one of them.
struct LocalWriter {
    _tmp: tempfile::TempDir,
    data: DataDir,
    store: Arc<GenerationStore>,
    writer: Arc<Writer>,
}

impl LocalWriter {
    fn new(seed: u64) -> LocalWriter {
        let tmp = tempfile::tempdir().unwrap();
        let dir = generate_into(Scale::Tiny, seed, tmp.path()).unwrap();
        let data = DataDir::open(tmp.path()).unwrap();
        let (g, _) = Generation::load(&dir, &|_| {}).unwrap();
        let store = Arc::new(GenerationStore::new(g));
        let writer = Writer::start_with(data.clone(), store.clone(), 64).unwrap();
        LocalWriter {
            _tmp: tmp,
            data,
            store,
            writer,
        }
    }

    /// Apply a changeset and wait until its generation is served.
    fn run(&self, cs: Value) {
        let cs = serde_json::from_value(cs).unwrap();
        let r = self
            .writer
            .journal
            .register(
                cs,
                Record::new(uuid::Uuid::new_v4().to_string(), "t".into(), None, 1),
            )
            .unwrap();
        self.writer.start_changeset(&r.id).unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        loop {
            let p = self.writer.journal.get(&r.id).unwrap().progress;
            if p.is_final() {
                assert_eq!(p, Progress::DoneAndVisible);
                return;
            }
            assert!(std::time::Instant::now() < deadline);
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    fn version_of(&self, id: u64) -> u32 {
        let g = self.store.current();
        let t = &g.objects[&95].table;
        t.version[t.row_of(id).unwrap()]
    }

    fn ids(&self, type_id: u32) -> Vec<u64> {
        self.store.current().objects[&type_id].table.id.clone()
    }

    fn link(&self) -> u64 {
        let g = self.store.current();
        let n = &g.network;
        let link = n.plain_link_rows().next().map(|r| n.link_id[r]).unwrap();
        link
    }
}

fn update_95(id: u64, version: u32, text: &str) -> Value {
    json!({"effektDato": "2026-11-01", "datakatalogversjon": "2.38", "delvisOppdater": {"vegObjekter": [
        {"typeId": 95, "nvdbId": id, "versjon": version,
         "egenskaper": [{"typeId": 10854, "verdi": [text], "operasjon": "oppdater"}]}]}})
}

fn register_95(link: u64, n: usize) -> Value {
    let objects: Vec<Value> = (0..n)
        .map(|i| {
            json!({"typeId": 95, "tempId": format!("n{i}"),
                "egenskaper": [{"typeId": 1876, "enum": [2868]}],
                "lokasjon": {"punkt": [{"lenkeId": link, "posisjon": (i as f64 + 0.5) / (n as f64 + 1.0)}]}})
        })
        .collect();
    json!({"effektDato": "2026-11-01", "datakatalogversjon": "2.38",
        "registrer": {"vegObjekter": objects}})
}

fn delete_95(id: u64, version: u32) -> Value {
    json!({"effektDato": "2026-11-01", "datakatalogversjon": "2.38", "slett": {"vegObjekter": [
        {"typeId": 95, "nvdbId": id, "versjon": version, "kaskadeSletting": "nei"}]}})
}

/// A successor load (what replicas and `--read-only` followers do) equals a full load of the
/// same directory after an in-place update, an append and a removal, reads only the chunks
/// whose content changed, and shares the untouched types' data.
#[test]
fn successor_loads_equal_full_loads_and_read_only_changed_chunks() {
    let w = LocalWriter::new(4);
    let ids = w.ids(95);
    // the first write splits 95 into 64-row chunks (every chunk of 95 is new)
    w.run(update_95(ids[0], w.version_of(ids[0]), "første"));
    let mid = ids[ids.len() / 2];
    let cases = [
        (
            "update in place",
            update_95(mid, w.version_of(mid), "endret"),
        ),
        ("append", register_95(w.link(), 3)),
        ("removal", delete_95(ids[70], w.version_of(ids[70]))),
    ];
    for (what, cs) in cases {
        let before = w.store.current();
        let (old, _) = Generation::load(&before.dir, &|_| {}).unwrap();
        w.run(cs);
        let after = w.store.current();
        let (full, _) = Generation::load(&after.dir, &|_| {}).unwrap();
        let (next, stats) = old.load_successor(&after.dir).unwrap();
        assert_same_generation(&next, &full);
        assert!(!stats.full_load, "{what}");
        // oracle for what had to be read: object files whose content is new
        let old_shas: HashSet<&str> = old
            .manifest
            .files
            .iter()
            .map(|f| f.sha256.as_str())
            .collect();
        let new_chunks = full
            .manifest
            .files
            .iter()
            .filter(|f| f.type_id.is_some() && !old_shas.contains(f.sha256.as_str()))
            .count();
        assert_eq!(new_chunks, 1, "{what}: one chunk rewritten");
        assert_eq!(stats.chunks_read, new_chunks, "{what}: {stats:?}");
        assert_eq!(stats.types_rebuilt, 1, "{what}: {stats:?}");
        assert_eq!(
            stats.types_shared,
            old.objects.len() - 1,
            "{what}: {stats:?}"
        );
        assert_eq!(
            stats.types_updated_incrementally,
            usize::from(what != "removal"),
            "{what}: an index is updated in place unless rows moved"
        );
        for (t, d) in &next.objects {
            if *t != 95 {
                assert!(Arc::ptr_eq(d, &old.objects[t]), "type {t} shared");
            }
        }
        assert!(Arc::ptr_eq(&next.network, &old.network));
    }
}

/// A replica following a store downloads only the files whose content it does not hold:
/// after a one-object changeset, the changed chunk and the generation's results file (the
/// oracle: files of the new manifest whose SHA-256 the previous one lacks), and serves what
/// the writer serves.
#[test]
fn a_small_changeset_costs_a_replica_one_chunk_download() {
    let w = LocalWriter::new(5);
    let ids = w.ids(95);
    w.run(update_95(ids[0], w.version_of(ids[0]), "første"));
    let cache = tempfile::tempdir().unwrap();
    let config = FollowConfig {
        location: w.data.root.display().to_string(),
        cache_dir: cache.path().to_path_buf(),
        cache_max_bytes: 1 << 30,
        max_lag: Duration::ZERO,
        interval: Duration::from_secs(1),
    };
    let mut follower =
        Follower::with_source(Box::new(DirSource::new(&w.data.root)), &config).unwrap();
    let g = follower.load_current().unwrap();
    let served = Arc::new(GenerationStore::new(g));
    let start = follower.status.lag(served.current().id);
    let files = served.current().manifest.files.len() as u64;
    assert_eq!(
        start.downloads, files,
        "the first load downloads every file"
    );
    let mut retired = Vec::new();
    // nothing new: nothing downloaded
    assert_eq!(follower.look(&served, &mut retired).unwrap(), None);
    for (i, n) in [1usize, 10].into_iter().enumerate() {
        let before = follower.status.lag(served.current().id);
        let old_manifest = served.current().manifest.clone();
        // n objects within one 64-row chunk (the third: rows 128..192)
        assert!(ids.len() > 192);
        let first = 128 + 20 * i;
        let objects: Vec<Value> = ids[first..first + n]
            .iter()
            .map(|&id| {
                json!({"typeId": 95, "nvdbId": id, "versjon": w.version_of(id),
                    "egenskaper": [{"typeId": 10854, "verdi": [format!("runde {i}")], "operasjon": "oppdater"}]})
            })
            .collect();
        w.run(
            json!({"effektDato": "2026-11-01", "datakatalogversjon": "2.38",
            "delvisOppdater": {"vegObjekter": objects}}),
        );
        let want = w.store.current();
        assert_eq!(follower.look(&served, &mut retired).unwrap(), Some(want.id));
        let after = follower.status.lag(served.current().id);
        let old_shas: HashSet<&str> = old_manifest
            .files
            .iter()
            .map(|f| f.sha256.as_str())
            .collect();
        let new_files: Vec<_> = want
            .manifest
            .files
            .iter()
            .filter(|f| !old_shas.contains(f.sha256.as_str()))
            .collect();
        let chunks = new_files.iter().filter(|f| f.type_id.is_some()).count();
        assert_eq!(chunks, 1, "{n} objects in one chunk: {new_files:?}");
        assert_eq!(
            after.downloads - before.downloads,
            new_files.len() as u64,
            "{n} objects: only new content downloaded"
        );
        assert_eq!(
            after.downloaded_bytes - before.downloaded_bytes,
            new_files.iter().map(|f| f.bytes).sum::<u64>()
        );
        assert_eq!(after.generations_behind, 0);
        assert_eq!(after.seconds_behind, 0.0);
        let (full, _) = Generation::load(&want.dir, &|_| {}).unwrap();
        assert_same_generation(&served.current(), &full);
    }
    // the cache bound: a bound below the held files evicts only what no generation uses
    drop(follower);
    let small = FollowConfig {
        cache_max_bytes: 1,
        max_lag: Duration::ZERO,
        ..config
    };
    let mut follower =
        Follower::with_source(Box::new(DirSource::new(&w.data.root)), &small).unwrap();
    let held_before = follower.status.lag(0).cache_bytes;
    let g = follower.load_current().unwrap();
    assert_eq!(follower.status.lag(g.id).downloads, 0, "all held already");
    let served = Arc::new(GenerationStore::new(g));
    w.run(update_95(ids[3], w.version_of(ids[3]), "liten"));
    follower.look(&served, &mut retired).unwrap();
    let current = served.current();
    let in_use: u64 = current
        .manifest
        .files
        .iter()
        .map(|f| (f.sha256.as_str(), f.bytes))
        .collect::<BTreeMap<&str, u64>>()
        .values()
        .sum();
    let held = follower.status.lag(served.current().id).cache_bytes;
    assert!(held < held_before, "unused chunks were evicted");
    assert!(held >= in_use, "the served generation's files stay");
    let manifest = Manifest::read(&served.current().dir).unwrap();
    assert_eq!(manifest.generation, w.store.current().id);
}

/// Where the writer publishes and the replicas follow.
enum Store {
    /// The writer's own data directory (a local/NFS store).
    Dir(std::path::PathBuf),
    /// A real S3-protocol server (moto_server, `tests/s3`): the writer publishes with
    /// `--publish-to`, replicas follow the bucket's prefix.
    S3(s3::S3Server),
}

impl Store {
    fn location(&self) -> String {
        match self {
            Store::Dir(p) => p.display().to_string(),
            Store::S3(s) => s.url("vegdb"),
        }
    }
    fn env(&self) -> Vec<(&'static str, String)> {
        match self {
            Store::Dir(_) => Vec::new(),
            Store::S3(s) => s.env(),
        }
    }
    /// Extra `serve` arguments of the writer.
    fn writer_args(&self) -> Vec<String> {
        match self {
            Store::Dir(_) => Vec::new(),
            Store::S3(s) => vec!["--publish-to".into(), s.url("vegdb")],
        }
    }
}

fn env_refs<'a>(env: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    env.iter().map(|(k, v)| (*k, v.as_str())).collect()
}

fn spawn_writer(data: &std::path::Path, store: &Store) -> Server {
    let mut args: Vec<String> = vec![
        "--data".into(),
        data.display().to_string(),
        "--writer-priority".into(),
        "normal".into(),
    ];
    args.extend(store.writer_args());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    spawn(&args, &env_refs(&store.env()))
}

fn spawn_replica(store: &Store, dir: &std::path::Path, extra: &[&str]) -> Server {
    let cache = dir.join("cache");
    let data = dir.join("data");
    let location = store.location();
    let mut args = vec![
        "--read-only",
        "--follow",
        &location,
        "--watch-interval",
        "1",
        "--cache",
        cache.to_str().unwrap(),
        "--data",
        data.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    spawn(&args, &env_refs(&store.env()))
}

/// A write request with the client's headers, through `base` (writer or replica).
fn write_request(
    base: &str,
    method: reqwest::Method,
    path: &str,
    token: &str,
    body: Option<&Value>,
) -> reqwest::blocking::Response {
    let mut r = client()
        .request(method, format!("{base}{WRITE}{path}"))
        .header("X-Client", "replica-test")
        .header("Authorization", format!("Bearer {token}"));
    if let Some(b) = body {
        r = r
            .header("Content-Type", "application/json")
            .body(b.to_string());
    }
    r.send().expect("answered")
}

/// Register, start and wait for a changeset through `base`; its status document.
fn apply_through(base: &str, token: &str, cs: &Value) -> Value {
    let r = write_request(
        base,
        reqwest::Method::POST,
        "/endringssett",
        token,
        Some(cs),
    );
    assert_eq!(r.status(), 201);
    let location = r.headers()["location"].to_str().unwrap().to_string();
    let links: Vec<Value> = r.json().unwrap();
    let src = links[0]["src"].as_str().unwrap().to_string();
    // links point at the address the client used, also when a replica forwarded the request
    assert!(location.starts_with(base), "{location} (asked {base})");
    assert!(src.starts_with(base), "{src} (asked {base})");
    let id = src.rsplit('/').next().unwrap().to_string();
    let r = write_request(
        base,
        reqwest::Method::POST,
        &format!("/endringssett/{id}/start"),
        token,
        None,
    );
    assert_eq!(r.status(), 200);
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let r = write_request(
            base,
            reqwest::Method::GET,
            &format!("/endringssett/{id}/status"),
            token,
            None,
        );
        assert_eq!(r.status(), 200);
        let st: Value = r.json().unwrap();
        if st["fremdrift"] != "BEHANDLES" {
            assert_eq!(st["fremdrift"], "UTFØRT_OG_ETTERBEHANDLET", "{st}");
            return st;
        }
        assert!(std::time::Instant::now() < deadline, "{st}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Ids of one page of type 95 and the next `start` (None at the end).
fn page(base: &str, start: Option<&str>, antall: usize) -> (Vec<u64>, Option<String>) {
    let mut q = format!("/vegobjekter/95?antall={antall}");
    if let Some(s) = start {
        q.push_str(&format!("&start={s}"));
    }
    let v = get(base, &q);
    let ids: Vec<u64> = v["objekter"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["id"].as_u64().unwrap())
        .collect();
    let next = v["metadata"]["neste"]["start"].as_str().map(str::to_string);
    if v["metadata"]["returnert"] == 0 {
        return (ids, None);
    }
    (ids, next)
}

/// Every id of type 95 from one server in one walk.
fn all_ids(base: &str) -> Vec<u64> {
    let mut out = Vec::new();
    let mut start: Option<String> = None;
    loop {
        let (ids, next) = page(base, start.as_deref(), 1000);
        out.extend(ids);
        match next {
            Some(n) => start = Some(n),
            None => return out,
        }
    }
}

/// Seconds a replica may take to serve a change once the writer reports it done: one
/// `--watch-interval` (1 s) plus download and load (milliseconds on the tiny dataset), with
/// room for a busy machine.
const CATCH_UP_LIMIT: Duration = Duration::from_secs(10);

fn writer_and_two_replicas(store_kind: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let wdata = tmp.path().join("writer");
    generate_into(Scale::Tiny, 7, &wdata).unwrap();
    let token = user(&wdata.join("users.json"));
    let store = match store_kind {
        "dir" => Store::Dir(wdata.clone()),
        "s3" => match s3::S3Server::start() {
            Some(s) => Store::S3(s),
            None => return,
        },
        other => panic!("unknown store {other}"),
    };
    let writer = spawn_writer(&wdata, &store);
    let first = served_generation(&writer.base);
    if let Store::S3(s) = &store {
        // the writer publishes its generation at start: wait until CURRENT names it
        let remote = s.remote("vegdb");
        let rt = tokio::runtime::Runtime::new().unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while rt
            .block_on(remote.current())
            .unwrap()
            .is_none_or(|c| c.generation != first)
        {
            assert!(std::time::Instant::now() < deadline, "never published");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    let a = spawn_replica(
        &store,
        &tmp.path().join("a"),
        &["--writer-url", &writer.base],
    );
    let b = spawn_replica(
        &store,
        &tmp.path().join("b"),
        &["--writer-url", &writer.base],
    );
    for r in [&a, &b] {
        assert_eq!(served_generation(&r.base), first);
        let st = status(&r.base);
        assert_eq!(st["replika"]["kilde"], store.location(), "{st}");
        assert_eq!(st["replika"]["generasjoner_bak"], 0, "{st}");
    }
    let link = {
        let dir = wdata.join(format!("gen-{first:06}"));
        let (g, _) = Generation::load(&dir, &|_| {}).unwrap();
        let n = &g.network;
        let link = n.plain_link_rows().next().map(|r| n.link_id[r]).unwrap();
        link
    };

    // changesets registered through either replica (forwarded) or the writer; each change is
    // served by both replicas within the limit
    let mut worst = Duration::ZERO;
    for (round, via) in [&a.base, &b.base, &writer.base].into_iter().enumerate() {
        let cs = register_95(link, 1);
        let st = apply_through(via, &token, &cs);
        let id = st["resultat"]["vegObjekter"][0]["nvdbId"].as_u64().unwrap();
        let generation = served_generation(&writer.base);
        for r in [&a, &b] {
            let took = wait_for_generation(&r.base, generation, CATCH_UP_LIMIT);
            worst = worst.max(took);
            let o = get(&r.base, &format!("/vegobjekter/95/{id}"));
            assert_eq!(o["id"], id, "round {round}");
        }
    }
    eprintln!("replicas served each change within {worst:?} of the writer");

    // a paging client switching replicas on every page, while changesets land mid-list:
    // every object exactly once, in id order
    let before = all_ids(&writer.base);
    let antall = before.len() / 6 + 1;
    let (mut seen, mut start) = page(&a.base, None, antall);
    let mut turn = 1;
    let mut added = Vec::new();
    while let Some(s) = start.clone() {
        if turn == 2 {
            // one object on a page already read changes, one not yet read changes, one is new
            let (done, ahead) = (seen[1], before[before.len() - 2]);
            let version = |id: u64| {
                get(&writer.base, &format!("/vegobjekter/95/{id}"))["metadata"]["versjon"]
                    .as_u64()
                    .unwrap() as u32
            };
            let cs = json!({"effektDato": "2026-11-01", "datakatalogversjon": "2.38",
                "delvisOppdater": {"vegObjekter": [
                    {"typeId": 95, "nvdbId": done, "versjon": version(done),
                     "egenskaper": [{"typeId": 10854, "verdi": ["sett"], "operasjon": "oppdater"}]},
                    {"typeId": 95, "nvdbId": ahead, "versjon": version(ahead),
                     "egenskaper": [{"typeId": 10854, "verdi": ["ikke sett"], "operasjon": "oppdater"}]}]}});
            apply_through(&writer.base, &token, &cs);
            let st = apply_through(&writer.base, &token, &register_95(link, 1));
            added.push(st["resultat"]["vegObjekter"][0]["nvdbId"].as_u64().unwrap());
            let generation = served_generation(&writer.base);
            // the cursors handed out so far were made on the previous generation
            for r in [&a, &b] {
                wait_for_generation(&r.base, generation, CATCH_UP_LIMIT);
            }
        }
        let via = if turn % 2 == 0 { &a.base } else { &b.base };
        let (ids, next) = page(via, Some(&s), antall);
        seen.extend(ids);
        start = next;
        turn += 1;
    }
    assert!(turn > 4, "several pages, several switches");
    let mut sorted = seen.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(sorted, seen, "ascending without repeats");
    let after = all_ids(&writer.base);
    assert_eq!(seen, after, "nothing skipped: the writer's list now");
    assert!(seen.contains(&added[0]));

    // the other answers to writes: a redirect to the writer, or a fault naming the store
    if let Store::Dir(_) = store {
        let c = spawn_replica(
            &store,
            &tmp.path().join("c"),
            &[
                "--writer-url",
                &writer.base,
                "--write-forwarding",
                "redirect",
            ],
        );
        let r = write_request(
            &c.base,
            reqwest::Method::GET,
            "/endringssett?max=1",
            &token,
            None,
        );
        assert_eq!(r.status(), 307);
        assert_eq!(
            r.headers()["location"],
            format!("{}{WRITE}/endringssett?max=1", writer.base).as_str()
        );
        let d = spawn_replica(&store, &tmp.path().join("d"), &[]);
        let r = write_request(
            &d.base,
            reqwest::Method::POST,
            "/endringssett",
            &token,
            Some(&register_95(link, 1)),
        );
        assert_eq!(r.status(), 503);
        let fault: Value = r.json().unwrap();
        let message = fault["message"].as_str().unwrap();
        assert!(message.contains(&store.location()), "{message}");
        // reads are served by both
        assert_eq!(served_generation(&c.base), served_generation(&writer.base));
        assert_eq!(served_generation(&d.base), served_generation(&writer.base));
    }
}

#[test]
fn a_writer_and_two_replicas_following_a_directory() {
    writer_and_two_replicas("dir");
}

/// The same against a real S3-protocol server (moto_server, started by the test).
#[test]
fn a_writer_and_two_replicas_following_an_s3_store() {
    writer_and_two_replicas("s3");
}

/// `GET /ready` of a server: its status code, `Retry-After`, and body.
fn ready(base: &str) -> (u16, Option<String>, Value) {
    let r = client().get(format!("{base}/ready")).send().unwrap();
    let code = r.status().as_u16();
    let retry = r
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().unwrap().to_string());
    (code, retry, r.json().unwrap())
}

/// Wait until `/ready` of `base` answers `code`; the time it took and the last answer.
fn wait_for_ready(base: &str, code: u16, limit: Duration) -> (Duration, Option<String>, Value) {
    let started = std::time::Instant::now();
    loop {
        let (c, retry, body) = ready(base);
        if c == code {
            return (started.elapsed(), retry, body);
        }
        assert!(
            started.elapsed() < limit,
            "{base}/ready still answers {c} after {limit:?}: {body}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `/ready` and `/status` of a replica show its generation and its lag behind the store; with
/// `--max-lag` a replica that cannot catch up answers `/ready` 503 once it has been behind
/// for longer than the bound (a load balancer drains it), and 200 again once it has caught up.
/// The store is a real S3-protocol server; the replicas are stuck by a generation whose
/// manifest names a file the store does not have.
#[test]
fn a_replica_behind_its_store_for_longer_than_max_lag_is_not_ready() {
    let Some(server) = s3::S3Server::start() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    generate_into(Scale::Tiny, 7, &src).unwrap();
    let remote = server.remote("vegdb");
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(vegdb::remote::push::push(
        &DataDir::read_only(&src),
        &remote,
        None,
    ))
    .unwrap();
    let first = rt.block_on(remote.current()).unwrap().unwrap();
    let g1 = first.generation;
    let store = Store::S3(server);
    const MAX_LAG: f64 = 2.0;
    let bounded = spawn_replica(&store, &tmp.path().join("a"), &["--max-lag", "2"]);
    let unbounded = spawn_replica(&store, &tmp.path().join("b"), &[]);

    // up to date: ready, no lag
    let (code, _, body) = ready(&bounded.base);
    assert_eq!(code, 200, "{body}");
    let r = &body["replica"];
    assert_eq!(r["ready"], true, "{body}");
    assert_eq!(r["generation"], g1, "{body}");
    assert_eq!(r["store_generation"], g1, "{body}");
    assert_eq!(r["generations_behind"], 0, "{body}");
    assert_eq!(r["seconds_behind"], 0.0, "{body}");
    assert_eq!(r["max_lag_seconds"], MAX_LAG, "{body}");
    let st = status(&bounded.base)["replika"].clone();
    assert_eq!(st["maks_sekunder_bak"], MAX_LAG, "{st}");
    assert_eq!(st["innenfor_grensen"], true, "{st}");
    assert_eq!(ready(&unbounded.base).2["replica"]["max_lag_seconds"], 0.0);

    // the store moves to a generation nobody can fetch: one file of its manifest is missing
    let mut broken = rt.block_on(remote.manifest(g1)).unwrap().unwrap();
    let g2 = g1 + 1;
    broken.generation = g2;
    broken.parent = Some(g1);
    broken.files[0].sha256 = "0".repeat(64);
    rt.block_on(remote.put_manifest(g2, &broken)).unwrap();
    let moved = std::time::Instant::now();
    assert!(rt.block_on(remote.set_current(Some(&first), g2)).unwrap());

    // behind, within the bound: still ready, catching up
    let (code, _, body) = ready(&bounded.base);
    let (took, retry, body503) = wait_for_ready(&bounded.base, 503, Duration::from_secs(20));
    let since_move = moved.elapsed();
    if code == 200 && body["replica"]["store_generation"] == g2 {
        assert!(
            body["replica"]["seconds_behind"].as_f64().unwrap() <= MAX_LAG,
            "{body}"
        );
        assert_eq!(body["replica"]["ready"], true, "{body}");
    }
    // S3's Last-Modified has whole seconds: the move may look up to 1 s older than it is
    assert!(
        since_move.as_secs_f64() > MAX_LAG - 1.0,
        "503 after {took:?}, {since_move:?} after the move: {body503}"
    );
    assert_eq!(retry.as_deref(), Some("2"));
    assert_eq!(body503["ready"], false, "{body503}");
    assert_eq!(body503["generation"]["ready"], true, "{body503}");
    let r = &body503["replica"];
    assert_eq!(r["ready"], false, "{body503}");
    assert_eq!(r["generation"], g1, "{body503}");
    assert_eq!(r["store_generation"], g2, "{body503}");
    assert_eq!(r["generations_behind"], 1, "{body503}");
    assert!(r["seconds_behind"].as_f64().unwrap() > MAX_LAG, "{body503}");
    assert!(
        r["last_error"].as_str().is_some_and(|e| !e.is_empty()),
        "{body503}"
    );
    assert!(r["seconds_since_look"].as_f64().unwrap() < 5.0, "{body503}");
    let st = status(&bounded.base)["replika"].clone();
    assert_eq!(st["generasjon"], g1, "{st}");
    assert_eq!(st["lager_generasjon"], g2, "{st}");
    assert_eq!(st["generasjoner_bak"], 1, "{st}");
    assert!(st["sekunder_bak"].as_f64().unwrap() > MAX_LAG, "{st}");
    assert_eq!(st["innenfor_grensen"], false, "{st}");
    assert!(st["feil"].is_string(), "{st}");
    // the lag as the replica reports it matches the time since the move
    let lag = st["sekunder_bak"].as_f64().unwrap();
    let real = moved.elapsed().as_secs_f64();
    assert!(
        lag <= real + 1.0 && lag >= real - 1.5,
        "lag {lag} s, moved {real} s ago"
    );
    // the not-ready replica still answers reads (from the generation it has)
    assert_eq!(served_generation(&bounded.base), g1);
    // without a bound the replica is as far behind, and ready
    let (code, _, body) = ready(&unbounded.base);
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["replica"]["generations_behind"], 1, "{body}");
    assert!(
        body["replica"]["seconds_behind"].as_f64().unwrap() > MAX_LAG,
        "{body}"
    );

    // the store moves on to a complete generation: both catch up, the bounded one is ready
    let mut fixed = rt.block_on(remote.manifest(g1)).unwrap().unwrap();
    let g3 = g2 + 1;
    fixed.generation = g3;
    fixed.parent = Some(g2);
    for f in &fixed.files {
        rt.block_on(remote.copy_file(g1, g3, &f.path, &f.path))
            .unwrap();
    }
    rt.block_on(remote.put_manifest(g3, &fixed)).unwrap();
    let at_g2 = rt.block_on(remote.current()).unwrap().unwrap();
    assert!(rt.block_on(remote.set_current(Some(&at_g2), g3)).unwrap());
    let (_, _, body) = wait_for_ready(&bounded.base, 200, CATCH_UP_LIMIT);
    let r = &body["replica"];
    assert_eq!(r["generation"], g3, "{body}");
    assert_eq!(r["generations_behind"], 0, "{body}");
    assert_eq!(r["seconds_behind"], 0.0, "{body}");
    assert!(r.get("last_error").is_none(), "{body}");
    wait_for_generation(&unbounded.base, g3, CATCH_UP_LIMIT);
    let st = status(&unbounded.base)["replika"].clone();
    assert_eq!(st["sekunder_bak"], 0.0, "{st}");
    assert_eq!(st["innenfor_grensen"], true, "{st}");
}

/// Catch-up time of a replica (download + successor load + swap) after a 10-object and a
/// 10,000-object changeset, for BENCHMARKS.md: `cargo test --release --test replica
/// catch_up_times -- --ignored --nocapture`.
#[test]
#[ignore]
fn catch_up_times() {
    let w = LocalWriter::new(8);
    // the first write splits type 95 into chunks: not measured
    let ids = w.ids(95);
    w.run(update_95(ids[0], w.version_of(ids[0]), "første"));
    let cache = tempfile::tempdir().unwrap();
    let config = FollowConfig {
        location: w.data.root.display().to_string(),
        cache_dir: cache.path().to_path_buf(),
        cache_max_bytes: 1 << 34,
        max_lag: Duration::ZERO,
        interval: Duration::from_secs(1),
    };
    let mut follower =
        Follower::with_source(Box::new(DirSource::new(&w.data.root)), &config).unwrap();
    let started = std::time::Instant::now();
    let g = follower.load_current().unwrap();
    eprintln!(
        "start: {:?} ({} objects)",
        started.elapsed(),
        g.object_count()
    );
    let served = Arc::new(GenerationStore::new(g));
    let mut retired = Vec::new();
    for n in [10usize, 10_000] {
        let before = follower.status.lag(0);
        w.run(register_95(w.link(), n));
        let started = std::time::Instant::now();
        follower.look(&served, &mut retired).unwrap();
        let after = follower.status.lag(0);
        eprintln!(
            "{n} objects: catch-up {:?}, {} files / {} bytes downloaded",
            started.elapsed(),
            after.downloads - before.downloads,
            after.downloaded_bytes - before.downloaded_bytes
        );
    }
}
