//! `vegdb snapshot upgrade` (the real binary) on the frozen format fixtures
//! (`tests/fixtures/formats`: the same `tiny` dataset in format 1, 2, 3, 4, 5, 6 and 7):
//! - upgrading format 1 and 2, format 3 (`v3-open`, written before placements had `lanes`,
//!   and `v3-lanes`, before history was kept) and format 4 (`v4-history`, before the network
//!   attributes were stored) gives a generation `snapshot verify` accepts, in format 7, whose
//!   files are byte for byte those today's writer wrote for the same data
//!   (`v7-road-system-objects`) but its history (those before format 4 have none) and its
//!   network files, whose attribute columns hold what the loader derives for an older
//!   generation (every other column as today's); format 5 (`v5-network-attributes`, before
//!   the road system references were stored) and format 6 (`v6-road-system-references`,
//!   before their objects' ids were stored) upgrade into exactly today's files, network
//!   included (the fixture's references are the ones the loader derives, its ids none);
//! - an upgrade of a generation with history keeps it (its files byte for byte);
//! - an upgraded copy serves the same answers as the original (an oracle over every type's
//!   `/vegobjekter` pages and `/statistikk`, the road network's pages, `/posisjon` and `/status`);
//! - the command is refused while another process owns the directory, for a generation that is
//!   not CURRENT, and into a non-empty `--out`; a format 7 generation is left alone;
//! - applied changesets' results are carried, and a rollback does not call them lost.
#![cfg_attr(test, allow(clippy::unwrap_used))] // tests may unwrap

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use vegdb::api::state::{ApiConfig, AppState};
use vegdb::generation::{Generation, GenerationStore};
use vegdb::snapshot::manifest::{Manifest, FORMAT_OPEN, FORMAT_VERSION};
use vegdb::snapshot::store::DataDir;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/formats")
        .join(name)
}

fn copy_dir(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).unwrap();
    for e in std::fs::read_dir(src).unwrap() {
        let e = e.unwrap();
        let to = dst.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &to);
        } else {
            std::fs::copy(e.path(), &to).unwrap();
        }
    }
}

/// A writable copy of a fixture in a fresh temporary directory (`<tmp>/data`).
fn copy_of(name: &str) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    copy_dir(&fixture(name), &data);
    (tmp, data)
}

fn vegdb(args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_vegdb"));
    c.args(args).env_remove("VEGDB_DATA");
    c
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn run(args: &[&str], data: &Path, extra: &[&Path]) -> Output {
    let mut c = vegdb(args);
    c.arg("--data").arg(data);
    for e in extra {
        c.arg(e);
    }
    c.output().unwrap()
}

fn current_manifest(data: &Path) -> Manifest {
    let d = DataDir::read_only(data);
    Manifest::read(&d.generation_dir(d.current().unwrap().unwrap())).unwrap()
}

/// path -> SHA-256 of every data file (all but the manifest, which names the generation).
fn file_hashes(m: &Manifest) -> BTreeMap<String, String> {
    m.files
        .iter()
        .map(|f| (f.path.clone(), f.sha256.clone()))
        .collect()
}

/// Today's format's fixture (`generate` as it is, with its history).
const TODAY: &str = "v7-road-system-objects";

/// The files today's generator wrote for the fixtures' data, without its history and the
/// network file (whose attributes an older generation lacks): what an upgrade of a generation
/// without history must write (the network: `assert_network_derived`).
fn todays_files_without_history() -> BTreeMap<String, String> {
    let mut want = file_hashes(&current_manifest(&fixture(TODAY)));
    let before = want.len();
    want.retain(|p, _| !p.starts_with("history/") && !p.starts_with("network/"));
    assert!(want.len() + 3 <= before, "the fixture has history");
    want
}

/// `hashes` without the network files.
fn without_network(mut hashes: BTreeMap<String, String>) -> BTreeMap<String, String> {
    hashes.retain(|p, _| !p.starts_with("network/"));
    hashes
}

/// The network of the generation CURRENT in `data` (and its history) is today's generator's
/// with the network attributes as the loader derives them for a generation older than
/// format 5 (`RoadNetwork::derive_absent`), every other column equal.
fn assert_network_derived(data: &Path, history: bool) {
    use vegdb::snapshot::columns::{RoadNetwork, DETAIL_ABSENT, SEPARATE_NO, TRAFFIC_ABSENT};
    let derived = |n: &RoadNetwork| {
        let mut n = n.clone();
        n.detail_level.fill(DETAIL_ABSENT);
        n.traffic_group.fill(TRAFFIC_ABSENT);
        n.side_facility.fill(false);
        n.separate_carriageways.fill(SEPARATE_NO);
        n.derive_absent();
        format!("{n:?}")
    };
    let load = |d: &Path| {
        let d = DataDir::read_only(d);
        Generation::load(&d.generation_dir(d.current().unwrap().unwrap()), &|_| {})
            .unwrap()
            .0
    };
    let (got, today) = (load(data), load(&fixture(TODAY)));
    assert!(format!("{:?}", got.network) == derived(&today.network));
    if history {
        assert!(format!("{:?}", got.network_history) == derived(&today.network_history));
    }
    // today's generator stores what an older generation cannot say
    assert!(today.network.side_facility.iter().any(|&s| s));
    assert!(format!("{:?}", got.network) != format!("{:?}", today.network));
}

#[test]
fn format_1_and_2_upgrade_to_what_todays_generator_writes() {
    let want = todays_files_without_history();
    for name in ["v1-single-file", "v2-chunked"] {
        let (_tmp, data) = copy_of(name);
        let old = current_manifest(&data);
        assert!(old.format_version < FORMAT_OPEN, "{name}");
        let out = run(&["snapshot", "upgrade"], &data, &[]);
        assert!(out.status.success(), "{name}: {}", text(&out));
        let dir = DataDir::read_only(&data);
        assert_eq!(
            dir.current().unwrap(),
            Some(2),
            "{name}: the next generation"
        );
        assert!(dir.generation_dir(1).is_dir(), "{name}: the old one stays");
        let new = current_manifest(&data);
        assert_eq!(new.format_version, FORMAT_VERSION, "{name}");
        assert_eq!(new.generation, 2);
        assert_eq!(new.parent, Some(1));
        // what the manifest says about the data is kept; the origin says what happened
        assert_eq!(new.created, old.created, "{name}");
        assert_eq!(new.datakatalog_versjon, old.datakatalog_versjon);
        assert_eq!(new.changesets, old.changesets);
        assert_eq!(new.last_event_ids, old.last_event_ids);
        assert_eq!(new.made_by(), old.made_by());
        assert!(
            new.origin.starts_with(&old.origin) && new.origin.contains("snapshot upgrade"),
            "{}",
            new.origin
        );
        // the oracle: the files today's generator wrote for the same data
        assert_eq!(without_network(file_hashes(&new)), want, "{name}");
        assert_network_derived(&data, false);
        let out = run(&["snapshot", "verify"], &data, &[]);
        assert!(out.status.success(), "{name}: {}", text(&out));
        // once is enough: a format 7 generation is left as it is
        let out = run(&["snapshot", "upgrade"], &data, &[]);
        assert!(out.status.success(), "{}", text(&out));
        assert!(text(&out).contains("format 7 already"), "{}", text(&out));
        assert_eq!(dir.generations().unwrap(), vec![1, 2]);
    }
}

/// A format 3 generation written before placements had `lanes` loads (every placement without
/// lanes) and is rewritten by the upgrade into today's files; today's files are left alone.
#[test]
fn format_3_without_lanes_upgrades_to_what_todays_generator_writes() {
    let want = todays_files_without_history();
    let (_tmp, data) = copy_of("v3-open");
    let old = current_manifest(&data);
    assert_eq!(old.format_version, FORMAT_OPEN);
    let (g, _) = Generation::load(&DataDir::read_only(&data).generation_dir(1), &|_| {}).unwrap();
    let placements: usize = g.objects.values().map(|d| d.table.loc_lanes.len()).sum();
    assert!(placements > 1000);
    assert!(g
        .objects
        .values()
        .all(|d| d.table.loc_lanes.iter().all(|l| l.is_empty())));
    drop(g);
    assert_ne!(file_hashes(&old), want, "the fixtures differ");
    let out = run(&["snapshot", "upgrade"], &data, &[]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(!text(&out).contains("already"), "{}", text(&out));
    let new = current_manifest(&data);
    assert_eq!((new.generation, new.parent), (2, Some(1)));
    assert_eq!(without_network(file_hashes(&new)), want);
    assert_network_derived(&data, false);
    let out = run(&["snapshot", "verify"], &data, &[]);
    assert!(out.status.success(), "{}", text(&out));
    let out = run(&["snapshot", "upgrade"], &data, &[]);
    assert!(text(&out).contains("format 7 already"), "{}", text(&out));
    // today's generator's files need nothing
    let (_tmp2, today) = copy_of(TODAY);
    let out = run(&["snapshot", "upgrade"], &today, &[]);
    assert!(text(&out).contains("format 7 already"), "{}", text(&out));
    assert_eq!(DataDir::read_only(&today).generations().unwrap(), vec![1]);
}

/// A format 3 generation written before history was kept (`v3-lanes`: no `end_date` on network
/// rows, no history files) loads without history and upgrades into today's files.
#[test]
fn format_3_without_history_upgrades_to_what_todays_generator_writes() {
    let (_tmp, data) = copy_of("v3-lanes");
    let old = current_manifest(&data);
    assert_eq!(old.format_version, FORMAT_OPEN);
    let (g, _) = Generation::load(&DataDir::read_only(&data).generation_dir(1), &|_| {}).unwrap();
    assert!(g.history.is_empty() && g.network_history.is_empty());
    drop(g);
    let out = run(&["snapshot", "upgrade"], &data, &[]);
    assert!(out.status.success(), "{}", text(&out));
    let new = current_manifest(&data);
    assert_eq!((new.generation, new.format_version), (2, FORMAT_VERSION));
    assert_eq!(
        without_network(file_hashes(&new)),
        todays_files_without_history()
    );
    assert_network_derived(&data, false);
    let out = run(&["snapshot", "verify"], &data, &[]);
    assert!(out.status.success(), "{}", text(&out));
}

/// A format 4 generation (`v4-history`: history, no network attributes) loads with the
/// attributes derived and upgrades into today's files but the network files, whose attributes
/// are the derived ones; the history is kept, its files byte for byte today's; an upgraded
/// generation is left alone.
#[test]
fn format_4_upgrades_with_the_network_attributes_derived() {
    let (_tmp, data) = copy_of("v4-history");
    let old = current_manifest(&data);
    assert_eq!(old.format_version, 4);
    let out = run(&["snapshot", "upgrade"], &data, &[]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(!text(&out).contains("already"), "{}", text(&out));
    let new = current_manifest(&data);
    assert_eq!((new.generation, new.format_version), (2, FORMAT_VERSION));
    let want = without_network(file_hashes(&current_manifest(&fixture(TODAY))));
    assert_eq!(without_network(file_hashes(&new)), want);
    assert_network_derived(&data, true);
    let out = run(&["snapshot", "verify"], &data, &[]);
    assert!(out.status.success(), "{}", text(&out));
    let out = run(&["snapshot", "upgrade"], &data, &[]);
    assert!(text(&out).contains("format 7 already"), "{}", text(&out));
}

/// A format 5 generation (`v5-network-attributes`: no road system references) loads with
/// them derived from the v2 references and upgrades into exactly today's files, the network
/// files included: the fixture's references are made by the rule the loader derives by; a
/// format 6 one (`v6-road-system-references`: no road system objects' ids) so too, its ids
/// none.
#[test]
fn format_5_and_6_upgrade_with_what_they_lack_derived() {
    for (name, version) in [
        ("v5-network-attributes", 5),
        ("v6-road-system-references", 6),
    ] {
        format_upgrades_into_todays_files(name, version);
    }
}

fn format_upgrades_into_todays_files(name: &str, version: u32) {
    let (_tmp, data) = copy_of(name);
    let old = current_manifest(&data);
    assert_eq!(old.format_version, version);
    let out = run(&["snapshot", "upgrade"], &data, &[]);
    assert!(out.status.success(), "{}", text(&out));
    let new = current_manifest(&data);
    assert_eq!((new.generation, new.format_version), (2, FORMAT_VERSION));
    let today = file_hashes(&current_manifest(&fixture(TODAY)));
    assert_ne!(file_hashes(&old), today, "the network files differ");
    assert_eq!(file_hashes(&new), today);
    let out = run(&["snapshot", "verify"], &data, &[]);
    assert!(out.status.success(), "{}", text(&out));
}

/// An upgrade keeps a generation's history: today's fixture labelled format 3 (so the upgrade
/// rewrites it) upgrades into exactly today's files, history included, and the upgrade's own
/// check (closed versions and closed network rows per type) passes.
#[test]
fn an_upgrade_keeps_the_history() {
    let (_tmp, data) = copy_of(TODAY);
    let gen = DataDir::read_only(&data).generation_dir(1);
    let want = file_hashes(&Manifest::read(&gen).unwrap());
    let text_of = std::fs::read_to_string(gen.join("MANIFEST.json")).unwrap();
    let mut m: Value = serde_json::from_str(&text_of).unwrap();
    m["format_version"] = FORMAT_OPEN.into();
    std::fs::write(gen.join("MANIFEST.json"), m.to_string()).unwrap();
    let (g, _) = Generation::load(&gen, &|_| {}).unwrap();
    let versions: usize = g.history.values().map(|t| t.len()).sum();
    assert!(versions > 100 && !g.network_history.is_empty());
    drop(g);
    let out = run(&["snapshot", "upgrade"], &data, &[]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(!text(&out).contains("already"), "{}", text(&out));
    let new = current_manifest(&data);
    assert_eq!((new.generation, new.format_version), (2, FORMAT_VERSION));
    assert_eq!(file_hashes(&new), want);
    let (g, _) = Generation::load(&DataDir::read_only(&data).generation_dir(2), &|_| {}).unwrap();
    assert_eq!(g.history.values().map(|t| t.len()).sum::<usize>(), versions);
}

/// A server over the generation CURRENT in `data`, answering hrefs under `BASE`.
async fn serve(data: &Path) -> String {
    let d = DataDir::read_only(data);
    let (g, _) =
        Generation::load(&d.generation_dir(d.current().unwrap().unwrap()), &|_| {}).expect("loads");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let config = ApiConfig::new(BASE.to_string(), Duration::from_secs(60));
    let state = AppState::read_only(Arc::new(GenerationStore::new(g)), config);
    tokio::spawn(vegdb::server::serve(
        listener,
        state,
        std::future::pending(),
    ));
    format!("http://{addr}")
}

/// The public base both servers put in their links (so equal answers are equal bytes).
const BASE: &str = "http://vegdb.test";

async fn get(client: &reqwest::Client, root: &str, path: &str) -> Value {
    let url = format!("{root}{}", path.strip_prefix(BASE).unwrap_or(path));
    let r = client.get(&url).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 200, "{url}");
    r.json().await.unwrap()
}

/// Every page of a list, following `metadata.neste.href` until a page returns nothing.
async fn pages(client: &reqwest::Client, root: &str, first: &str) -> Vec<Value> {
    let mut out = Vec::new();
    let mut path = first.to_string();
    loop {
        let v = get(client, root, &path).await;
        let returned = v["metadata"]["returnert"].as_u64().unwrap_or(0);
        let next = v["metadata"]["neste"]["href"].as_str().map(str::to_string);
        out.push(v);
        match next {
            Some(n) if returned > 0 => path = n,
            _ => break,
        }
        assert!(out.len() < 10_000, "{first}: no end of pages");
    }
    out
}

/// The oracle: `old` and `new` (data directories) answer the same to every request that shows
/// their content; /status only differs in the origin's note. Returns how many requests matched.
async fn same_answers(old: &Path, new: &Path) -> usize {
    let (a, b) = (serve(old).await, serve(new).await);
    let client = reqwest::Client::new();
    let d = DataDir::read_only(old);
    let (g, _) =
        Generation::load(&d.generation_dir(d.current().unwrap().unwrap()), &|_| {}).expect("loads");
    let types: Vec<u32> = g
        .objects
        .iter()
        .filter(|(_, t)| !t.table.is_empty())
        .map(|(&t, _)| t)
        .collect();
    assert!(types.len() > 20, "{types:?}");
    let mut requests = 0;
    let mut lists: Vec<String> = types
        .iter()
        .map(|t| format!("/nvdb/api/v2/vegobjekter/{t}?inkluder=alle&antall=1000"))
        .collect();
    lists.push("/nvdb/api/v2/vegnett/lenker?antall=1000".into());
    for list in &lists {
        let (pa, pb) = (
            pages(&client, &a, list).await,
            pages(&client, &b, list).await,
        );
        assert!(
            pa.iter()
                .map(|p| p["metadata"]["returnert"].as_u64().unwrap_or(0))
                .sum::<u64>()
                > 0,
            "{list}: no data"
        );
        assert_eq!(pa.len(), pb.len(), "{list}: pages");
        for (i, (x, y)) in pa.iter().zip(&pb).enumerate() {
            assert!(x == y, "{list}: page {i} differs");
        }
        requests += pa.len();
    }
    let mut singles: Vec<String> = types
        .iter()
        .map(|t| format!("/nvdb/api/v2/vegobjekter/{t}/statistikk"))
        .collect();
    // positions spread over the network's extent (road reference, link, distance)
    let n = &g.network;
    for row in (0..n.len()).step_by((n.len() / 20).max(1)) {
        if let Some(p) = n.geometry(row).first() {
            let (x, y) = (p[0] + 7.0, p[1] - 5.0);
            singles.push(format!(
                "/nvdb/api/v2/posisjon?nord={y}&ost={x}&srid=32633&maks_antall=5&maks_avstand=200"
            ));
        }
    }
    for path in &singles {
        let (x, y) = (get(&client, &a, path).await, get(&client, &b, path).await);
        assert_eq!(x, y, "{path}");
        requests += 1;
    }
    let (mut x, mut y) = (
        get(&client, &a, "/nvdb/api/v2/status").await,
        get(&client, &b, "/nvdb/api/v2/status").await,
    );
    let origin = |v: &mut Value| v["datagrunnlag"]["generasjon"]["opphav"].take();
    let (ox, oy) = (origin(&mut x), origin(&mut y));
    assert!(
        oy.as_str().unwrap().starts_with(ox.as_str().unwrap()),
        "{ox} / {oy}"
    );
    assert_eq!(x, y, "/status");
    requests + 1
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upgraded_copy_serves_the_same_answers() {
    let (tmp, data) = copy_of("v1-single-file");
    let out_dir = tmp.path().join("upgraded");
    let out = run(&["snapshot", "upgrade"], &data, &[]);
    assert!(out.status.success(), "{}", text(&out));
    // --out: the same generation id (1) in a new directory, the source only read
    let mut c = vegdb(&["snapshot", "upgrade", "--generation", "1", "--data"]);
    let out = c.arg(&data).arg("--out").arg(&out_dir).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let copy = current_manifest(&out_dir);
    assert_eq!((copy.generation, copy.format_version), (1, FORMAT_VERSION));
    let out = run(&["snapshot", "verify"], &out_dir, &[]);
    assert!(out.status.success(), "{}", text(&out));
    // the in-place upgrade (generation 2) and the copy hold the same files
    assert_eq!(file_hashes(&copy), file_hashes(&current_manifest(&data)));
    let n = same_answers(&fixture("v1-single-file"), &out_dir).await;
    assert!(n > 100, "{n} requests");
}

/// The same oracle for any pair of data directories: `VEGDB_UPGRADE_OLD` (e.g. the format 1 demo
/// from git history) against its upgrade in `VEGDB_UPGRADE_NEW`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs VEGDB_UPGRADE_OLD and VEGDB_UPGRADE_NEW"]
async fn a_given_upgrade_serves_the_same_answers() {
    let old = PathBuf::from(std::env::var("VEGDB_UPGRADE_OLD").expect("VEGDB_UPGRADE_OLD"));
    let new = PathBuf::from(std::env::var("VEGDB_UPGRADE_NEW").expect("VEGDB_UPGRADE_NEW"));
    let n = same_answers(&old, &new).await;
    println!("{n} requests answered the same");
}

#[test]
fn upgrade_is_refused_where_it_would_do_harm() {
    let (tmp, data) = copy_of("v2-chunked");
    // another process owns the directory (a server): refused, nothing written
    let owner = DataDir::open(&data).unwrap();
    let out = run(&["snapshot", "upgrade"], &data, &[]);
    assert!(!out.status.success());
    let t = text(&out);
    assert!(
        t.contains("needs to own it") && t.contains("owned by another vegdb process"),
        "{t}"
    );
    assert_eq!(owner.generations().unwrap(), vec![1]);
    // ... but a copy may be written meanwhile (the source is only read)
    let copy = tmp.path().join("copy");
    let mut c = vegdb(&["snapshot", "upgrade", "--data"]);
    let out = c.arg(&data).arg("--out").arg(&copy).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    drop(owner);
    // into a directory that is not empty: refused
    let mut c = vegdb(&["snapshot", "upgrade", "--data"]);
    let out = c.arg(&data).arg("--out").arg(&copy).output().unwrap();
    assert!(!out.status.success());
    assert!(text(&out).contains("is not empty"), "{}", text(&out));
    // a generation that is not CURRENT, without --out: refused (it would replace CURRENT)
    let out = run(&["snapshot", "upgrade"], &data, &[]);
    assert!(out.status.success(), "{}", text(&out));
    let out = run(&["snapshot", "upgrade", "--generation", "1"], &data, &[]);
    assert!(!out.status.success());
    assert!(text(&out).contains("is not CURRENT"), "{}", text(&out));
    assert_eq!(DataDir::read_only(&data).current().unwrap(), Some(2));
    // no data directory at all: the error names where it looked
    let out = run(&["snapshot", "upgrade"], &tmp.path().join("none"), &[]);
    assert!(!out.status.success());
    assert!(text(&out).contains("no data directory"), "{}", text(&out));
}

/// A generation that applied changesets: the upgrade carries their results file and ids (the
/// data is the same, so is what it applied), `verify` still finds every result, and rolling
/// back to the source does not report the carried changesets as lost.
#[test]
fn changeset_results_are_carried_and_not_lost_by_a_rollback() {
    use sha2::{Digest, Sha256};
    let (_tmp, data) = copy_of("v2-chunked");
    let gen = DataDir::read_only(&data).generation_dir(1);
    let results = br#"{"cs-1":{"status":"UTFORT"}}"#;
    std::fs::write(gen.join("changesets.json"), results).unwrap();
    let mut m = Manifest::read(&gen).unwrap();
    m.changesets = vec!["cs-1".into()];
    m.files.push(vegdb::snapshot::manifest::FileEntry {
        path: "changesets.json".into(),
        rows: 0,
        bytes: results.len() as u64,
        sha256: Sha256::digest(results)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect(),
        type_id: None,
        first_id: None,
    });
    let manifest = serde_json::to_string_pretty(&m).unwrap();
    std::fs::write(gen.join("MANIFEST.json"), manifest).unwrap();
    let out = run(&["snapshot", "verify"], &data, &[]);
    assert!(out.status.success(), "{}", text(&out));

    let out = run(&["snapshot", "upgrade"], &data, &[]);
    assert!(out.status.success(), "{}", text(&out));
    let new = current_manifest(&data);
    assert_eq!(new.changesets, vec!["cs-1".to_string()]);
    let upgraded = DataDir::read_only(&data).generation_dir(2);
    assert_eq!(
        std::fs::read(upgraded.join("changesets.json")).unwrap(),
        results
    );
    let out = run(&["snapshot", "verify"], &data, &[]);
    assert!(out.status.success(), "{}", text(&out));

    let out = run(&["snapshot", "rollback", "--to", "1"], &data, &[]);
    assert!(out.status.success(), "{}", text(&out));
    let t = text(&out);
    assert!(t.contains("is now generation 1"), "{t}");
    assert!(
        !t.contains("cs-1"),
        "the changeset is in generation 1 too: {t}"
    );
}
