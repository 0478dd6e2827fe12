//! `vegdb import --source URL --history`: the imported types come from Uberiket's paged
//! `/vegobjekter/{typeId}` list (every version, paged by `start=<id>-<versjon>`, its
//! `metadata.neste.start` the next token) instead of the `/stream` (active versions only). A
//! local stand-in serves the real samples (tests/fixtures/uberiket) on the streams and the
//! samples plus the older versions derived from real records (tests/fixtures/uberiket-history)
//! on the paged list; the URL import then holds the same history (and current data) as the
//! import of the same files from a directory. Bad pages fail the run at once, naming the call;
//! a run that dies resumes at the page after the last one saved.
#![cfg_attr(test, allow(clippy::unwrap_used))] // tests may unwrap

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::{StatusCode, Uri};
use axum::response::IntoResponse;
use serde_json::{json, Value};
use vegdb::generation::Generation;
use vegdb::import::download::{download_versions, DownloadOptions, Versions};
use vegdb::import::{import_dir, TypeSelection};
use vegdb::snapshot::columns::ObjectTable;
use vegdb::snapshot::store::DataDir;

/// The sample types (each a directory of tests/fixtures/uberiket/vegobjekter).
const TYPES: [u32; 6] = [105, 538, 591, 616, 821, 915];

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// Every record of the json/ndjson files of `dir` (pages unwrapped).
fn records(dir: &Path) -> Vec<Value> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = rd.map(|e| e.unwrap().path()).collect();
    files.sort();
    let mut out = Vec::new();
    for f in files.iter().filter(|f| f.is_file()) {
        let text = std::fs::read_to_string(f).unwrap();
        match f.extension().and_then(|e| e.to_str()) {
            Some("ndjson") => out.extend(
                text.lines()
                    .filter(|l| !l.trim().is_empty())
                    .map(|l| serde_json::from_str::<Value>(l).unwrap()),
            ),
            Some("json") => {
                let v: Value = serde_json::from_str(&text).unwrap();
                match ["veglenkesekvenser", "vegobjekter"]
                    .into_iter()
                    .find(|k| v.get(*k).is_some())
                {
                    Some(k) => out.extend(v[k].as_array().unwrap().iter().cloned()),
                    None => out.push(v),
                }
            }
            _ => {}
        }
    }
    out
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        let dest = to.join(p.file_name().unwrap());
        if p.is_dir() {
            copy_dir(&p, &dest);
        } else if matches!(
            p.extension().and_then(|e| e.to_str()),
            Some("json" | "ndjson")
        ) {
            std::fs::copy(&p, &dest).unwrap();
        }
    }
}

/// How the stand-in's paged list misbehaves.
#[derive(Clone, Copy, PartialEq)]
enum Fault {
    None,
    /// Every page is `{"feil": …}` (no `vegobjekter` list).
    NotAPage,
    /// Every page names the token it was called with as the next one.
    Stuck,
    /// HTTP 400 on every page call.
    BadRequest,
    /// HTTP 404 on every page call from the given one (1-based) on: the upstream goes away.
    GoneFrom(usize),
}

struct Upstream {
    /// `/stream` path -> records (id order).
    streams: BTreeMap<String, Vec<Value>>,
    /// Paged list path -> every version, (id, versjon) order.
    paged: BTreeMap<String, Vec<Value>>,
    fault: Mutex<Fault>,
    page_calls: AtomicUsize,
    /// The `start` tokens of the paged calls, in order.
    starts: Mutex<Vec<Option<String>>>,
}

fn key(r: &Value) -> (u64, u64) {
    (r["id"].as_u64().unwrap(), r["versjon"].as_u64().unwrap())
}

/// The samples on the streams; the samples plus the derived older versions on the paged list.
fn upstream(fault: Fault) -> Arc<Upstream> {
    let mut streams = BTreeMap::new();
    let mut seqs = records(&fixture("uberiket/veglenkesekvenser"));
    seqs.sort_by_key(|r| r["id"].as_u64());
    streams.insert("/api/v1/vegnett/veglenkesekvenser/stream".to_string(), seqs);
    let mut paged = BTreeMap::new();
    for t in TYPES {
        let mut current = records(&fixture(&format!("uberiket/vegobjekter/{t}")));
        current.sort_by_key(|r| r["id"].as_u64());
        let mut all = current.clone();
        all.extend(records(&fixture(&format!(
            "uberiket-history/vegobjekter/{t}"
        ))));
        all.sort_by_key(key);
        streams.insert(format!("/api/v1/vegobjekter/{t}/stream"), current);
        paged.insert(format!("/api/v1/vegobjekter/{t}"), all);
    }
    Arc::new(Upstream {
        streams,
        paged,
        fault: Mutex::new(fault),
        page_calls: AtomicUsize::new(0),
        starts: Mutex::new(Vec::new()),
    })
}

fn query(uri: &Uri) -> BTreeMap<String, String> {
    uri.query()
        .unwrap_or("")
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// One page of the paged list as the OpenAPI's `VegobjekterSide`.
fn page(up: &Upstream, uri: &Uri, all: &[Value]) -> axum::response::Response {
    let n = up.page_calls.fetch_add(1, SeqCst) + 1;
    let q = query(uri);
    let start = q.get("start").cloned();
    up.starts.lock().unwrap().push(start.clone());
    let fault = *up.fault.lock().unwrap();
    match fault {
        Fault::BadRequest => return StatusCode::BAD_REQUEST.into_response(),
        Fault::GoneFrom(k) if n >= k => return StatusCode::NOT_FOUND.into_response(),
        Fault::NotAPage => return json!({"feil": "ingen side"}).to_string().into_response(),
        _ => {}
    }
    assert_eq!(q.get("inkluder").map(String::as_str), Some("alle"));
    let after = start.as_deref().map(|s| {
        let (id, v) = s.split_once('-').unwrap();
        (id.parse::<u64>().unwrap(), v.parse::<u64>().unwrap())
    });
    let antall: usize = q.get("antall").map_or(1000, |v| v.parse().unwrap());
    let list: Vec<Value> = all
        .iter()
        .filter(|r| after.is_none_or(|a| key(r) > a))
        .take(antall)
        .cloned()
        .collect();
    // an empty page hands back the same token (the OpenAPI's words)
    let token = |r: &Value| format!("{}-{}", key(r).0, key(r).1);
    let next = match (list.last(), &start) {
        (None, _) => start.clone().unwrap_or_default(),
        // stuck: the first page names its first object, every later one the token it got
        (Some(_), Some(s)) if fault == Fault::Stuck => s.clone(),
        (Some(_), None) if fault == Fault::Stuck => token(&list[0]),
        (Some(last), _) => token(last),
    };
    json!({
        "vegobjekter": list,
        "metadata": {
            "returnert": list.len(),
            "sidestorrelse": antall,
            "neste": {"start": next, "href": format!("{}?start={next}", uri.path())},
        },
    })
    .to_string()
    .into_response()
}

async fn serve(up: Arc<Upstream>) -> String {
    let app = axum::Router::new().fallback(move |uri: Uri| {
        let up = up.clone();
        async move {
            let path = uri.path().to_string();
            if let Some(all) = up.paged.get(&path) {
                return page(&up, &uri, all);
            }
            let Some(recs) = up.streams.get(&path) else {
                // a stream without samples is empty; no events (siste), no other path
                return if path.ends_with("/stream") {
                    String::new().into_response()
                } else {
                    StatusCode::NOT_FOUND.into_response()
                };
            };
            let q = query(&uri);
            let start: u64 = q.get("start").map_or(0, |v| v.parse().unwrap());
            let antall: usize = q.get("antall").map_or(1000, |v| v.parse().unwrap());
            recs.iter()
                .filter(|r| r["id"].as_u64().unwrap() > start)
                .take(antall)
                .map(|r| format!("{r}\n"))
                .collect::<String>()
                .into_response()
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}/api/v1")
}

fn types_arg() -> String {
    TYPES.map(|t| t.to_string()).join(",")
}

/// `vegdb import --source URL` (with `--history` when asked): success, stderr.
fn import_cmd(base: &str, tmp: &Path, history: bool) -> (bool, String) {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_vegdb"));
    cmd.args(["import", "--concurrency", "1", "--types", &types_arg()])
        .args(["--source", base])
        .arg("--data")
        .arg(tmp.join("data"))
        .arg("--download-dir")
        .arg(tmp.join("dl"));
    if history {
        cmd.arg("--history");
    }
    let out = cmd.output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

fn load(data: &DataDir) -> Generation {
    let id = data.current().unwrap().unwrap();
    Generation::load(&data.generation_dir(id), &|_| {})
        .unwrap()
        .0
}

/// The import of the samples with the derived older versions laid over them, from a directory.
fn directory_import(tmp: &Path) -> Generation {
    let src = tmp.join("source");
    copy_dir(&fixture("uberiket"), &src);
    copy_dir(&fixture("uberiket-history"), &src);
    let data = DataDir::open(tmp.join("data")).unwrap();
    import_dir(&src, &data, &TypeSelection::Only(TYPES.to_vec()), &|_| {}).unwrap();
    load(&data)
}

fn tables(m: impl Iterator<Item = (u32, String)>) -> BTreeMap<u32, String> {
    m.collect()
}

fn history_of(g: &Generation) -> BTreeMap<u32, String> {
    tables(
        g.history
            .iter()
            .map(|(t, h)| (*t, format!("{:?}", h.as_ref()))),
    )
}

fn current_of(g: &Generation) -> BTreeMap<u32, String> {
    tables(
        g.objects
            .iter()
            .map(|(t, d)| (*t, format!("{:?}", d.table))),
    )
}

/// The network history's rows: link, positions, end date.
fn network_history(g: &Generation) -> Vec<(u64, String, String, i32)> {
    let n = &g.network_history;
    (0..n.link_id.len())
        .map(|i| {
            (
                n.link_id[i],
                n.from_pos[i].to_string(),
                n.to_pos[i].to_string(),
                n.end_date[i],
            )
        })
        .collect()
}

fn versions(h: &ObjectTable) -> Vec<(u64, u32)> {
    h.id.iter()
        .copied()
        .zip(h.version.iter().copied())
        .collect()
}

/// With `--history` the URL import holds exactly the directory import's history tables (every
/// older version: ids, versions, dates, values, placements), current tables and closed
/// veglenker; without it, the same URL gives no object history (the stream's active versions).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_url_import_with_history_keeps_what_the_directory_import_keeps() {
    let tmp = tempfile::tempdir().unwrap();
    let want = directory_import(&tmp.path().join("dir"));
    let want_history = history_of(&want);
    // the derived older versions are there: 2 of 105, 1 of 591
    assert_eq!(
        want.history.get(&105).map(|h| versions(h)),
        Some(vec![(85283803, 1), (589421130, 1)])
    );
    assert_eq!(
        want.history.get(&591).map(|h| versions(h)),
        Some(vec![(83657807, 1)])
    );

    let up = upstream(Fault::None);
    let base = serve(up.clone()).await;
    let t = tmp.path().join("url");
    let (b, t2) = (base.clone(), t.clone());
    let (ok, err) = tokio::task::spawn_blocking(move || import_cmd(&b, &t2, true))
        .await
        .unwrap();
    assert!(ok, "{err}");
    let got = load(&DataDir::open(t.join("data")).unwrap());
    assert_eq!(history_of(&got), want_history);
    assert_eq!(current_of(&got), current_of(&want));
    assert_eq!(network_history(&got), network_history(&want));
    assert!(!network_history(&want).is_empty());
    // the paged list was used, one call per type at least
    assert!(up.page_calls.load(SeqCst) >= TYPES.len());

    // without --history: the streams' active versions, no object history
    let t = tmp.path().join("stream");
    let (b, t2) = (base.clone(), t.clone());
    let (ok, err) = tokio::task::spawn_blocking(move || import_cmd(&b, &t2, false))
        .await
        .unwrap();
    assert!(ok, "{err}");
    let plain = load(&DataDir::open(t.join("data")).unwrap());
    assert!(plain.history.is_empty(), "{:?}", history_of(&plain));
    assert_eq!(current_of(&plain), current_of(&want));
}

/// A page that is not a page of objects, one that does not advance and a 4xx fail the run at
/// once, naming the call and the reason, and publish nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_pages_fail_the_import_at_once() {
    for (fault, reason) in [
        (Fault::NotAPage, "not a page of vegobjekter"),
        (Fault::Stuck, "does not advance"),
        (Fault::BadRequest, "HTTP 400"),
    ] {
        let up = upstream(fault);
        let base = serve(up.clone()).await;
        let tmp = tempfile::tempdir().unwrap();
        let t = tmp.path().to_path_buf();
        let (ok, err) = tokio::task::spawn_blocking(move || import_cmd(&base, &t, true))
            .await
            .unwrap();
        assert!(!ok, "{reason}: succeeded");
        assert!(err.contains(reason), "{reason}: {err}");
        assert!(err.contains("/api/v1/vegobjekter/"), "{reason}: {err}");
        // not retried: one call per page (the stuck list: its first two pages)
        let calls = up.page_calls.load(SeqCst);
        let most = if fault == Fault::Stuck { 2 } else { 1 };
        assert!(calls <= most, "{reason}: {calls} calls");
        let data = DataDir::open(tmp.path().join("data")).unwrap();
        assert_eq!(data.current().unwrap(), None, "{reason}: published");
    }
}

/// A download that dies on a page resumes at that page (the token saved after the page before)
/// and gets every version once; a `/stream` download is refused in a directory holding a paged
/// one (and the other way round).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paged_download_resumes_at_the_next_page() {
    let up = upstream(Fault::GoneFrom(3));
    let base = serve(up.clone()).await;
    let tmp = tempfile::tempdir().unwrap();
    let dest = tmp.path().join("dl");
    let opts = DownloadOptions {
        batch: 2,
        attempts: 2,
        backoff: Duration::from_millis(5),
        timeout: Duration::from_secs(10),
        concurrency: 1,
    };
    let run = |versions: Versions| {
        let (b, d, o) = (base.clone(), dest.clone(), opts.clone());
        tokio::task::spawn_blocking(move || {
            download_versions(&b, &d, &[105], &o, versions, &|_| {})
                .map(|r| r.iter().map(|r| r.records).sum::<usize>())
                .map_err(|e| e.to_string())
        })
    };
    let err = run(Versions::All).await.unwrap().unwrap_err();
    assert!(err.contains("HTTP 404"), "{err}");
    // two pages of 2 saved
    assert_eq!(records(&dest.join("vegobjekter/105")).len(), 4);
    *up.fault.lock().unwrap() = Fault::None;
    let calls_before = up.starts.lock().unwrap().len();
    run(Versions::All).await.unwrap().unwrap();
    let starts = up.starts.lock().unwrap().clone();
    // the second run starts after the 4th version (the token the 2nd page named)
    let all = &up.paged["/api/v1/vegobjekter/105"];
    let (id, v) = key(&all[3]);
    assert_eq!(starts[calls_before], Some(format!("{id}-{v}")));
    let mut got: Vec<(u64, u64)> = records(&dest.join("vegobjekter/105"))
        .iter()
        .map(key)
        .collect();
    got.sort();
    let want: Vec<(u64, u64)> = all.iter().map(key).collect();
    assert_eq!(got, want);

    // the stream is not laid beside the pages
    let err = run(Versions::Active).await.unwrap().unwrap_err();
    assert!(err.contains("--history"), "{err}");
    // nor the pages beside a stream
    let other = tmp.path().join("dl2");
    let (b, o) = (base.clone(), opts.clone());
    let o2 = other.clone();
    tokio::task::spawn_blocking(move || {
        download_versions(&b, &o2, &[105], &o, Versions::Active, &|_| {}).unwrap();
        let err = download_versions(&b, &o2, &[105], &o, Versions::All, &|_| {}).unwrap_err();
        assert!(err.to_string().contains("/stream download"), "{err}");
    })
    .await
    .unwrap();
}

/// `--history` with a directory source is refused, saying why, and publishes nothing.
#[test]
fn history_with_a_directory_source_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_vegdb"))
        .args(["import", "--history", "--source"])
        .arg(fixture("uberiket"))
        .arg("--data")
        .arg(tmp.path().join("data"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("--history applies to a URL source"), "{err}");
    let data = DataDir::open(tmp.path().join("data")).unwrap();
    assert_eq!(data.current().unwrap(), None);
}
