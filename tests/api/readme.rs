//! The README's example queries stay true: every `curl` line of its "Example queries" block and
//! of the example blocks of its "GIS" section runs against a real server on the committed demo
//! snapshot and must answer 2xx with data (a vector tile: 200 with a body, not 204); the GIS
//! section's `ogrinfo`/`ogr2ogr` lines run through GDAL and must read every feature (without
//! `ogrinfo` that test fails; `VEGDB_SKIP_GDAL=1` skips it locally); the number of object types
//! the README names is the demo's.
//!
//! Each line is split into words as a POSIX shell would (quotes, backslashes, comments) and
//! interpreted as curl would: the options the README uses (`-s`, `-i`, `-g`, `-G`, `-d`,
//! `--data-urlencode`, `-H`, `-X`, `-o`), curl's URL globbing (`[]{}` without `-g` is curl's "bad range
//! in URL") and no characters a URL may not carry (curl refuses a space; hyper answers 400 to
//! a raw `"`). When a `curl` binary is installed the same words also run through it.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use vegdb::api::state::{ApiConfig, AppState};
use vegdb::generation::{Generation, GenerationStore};
use vegdb::snapshot::store::DataDir;

/// Shell words of one line (no variables, globs or operators: the README's queries need none).
fn shell_words(line: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' => {
                if let Some(w) = word.take() {
                    words.push(w);
                }
            }
            '#' if word.is_none() => break,
            '\'' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => w.push(c),
                        None => return Err("unterminated '".into()),
                    }
                }
            }
            '"' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(e @ ('"' | '\\' | '$' | '`')) => w.push(e),
                            Some(e) => {
                                w.push('\\');
                                w.push(e);
                            }
                            None => return Err("unterminated \"".into()),
                        },
                        Some('$' | '`') => return Err("shell expansion in a README query".into()),
                        Some(c) => w.push(c),
                        None => return Err("unterminated \"".into()),
                    }
                }
            }
            '\\' => {
                if let Some(e) = chars.next() {
                    word.get_or_insert_with(String::new).push(e);
                }
            }
            '$' | '`' | '|' | '&' | ';' | '<' | '>' | '(' | ')' | '*' | '?' | '[' | '{' => {
                return Err(format!("unquoted '{c}' (the shell would interpret it)"))
            }
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    if let Some(w) = word {
        words.push(w);
    }
    Ok(words)
}

/// What curl would send for these arguments.
#[derive(Debug, PartialEq)]
struct CurlRequest {
    method: String,
    url: String,
    headers: Vec<(String, String)>,
    body: Option<String>,
}

fn encode(text: &str) -> String {
    // curl --data-urlencode: everything but unreserved characters percent-encoded
    percent_encoding::utf8_percent_encode(text, percent_encoding::NON_ALPHANUMERIC)
        .to_string()
        .replace("%2D", "-")
        .replace("%2E", ".")
        .replace("%5F", "_")
        .replace("%7E", "~")
}

fn curl_request(words: &[String]) -> Result<CurlRequest, String> {
    if words.first().map(String::as_str) != Some("curl") {
        return Err("not a curl command".into());
    }
    let (mut url, mut method, mut headers, mut data) = (None, None, Vec::new(), Vec::new());
    let (mut get, mut globoff) = (false, false);
    let mut it = words[1..].iter();
    while let Some(w) = it.next() {
        let mut value = || it.next().cloned().ok_or(format!("{w} needs a value"));
        match w.as_str() {
            "-s" | "--silent" | "-i" | "--include" => {}
            "-o" | "--output" => {
                value()?;
            }
            "-g" | "--globoff" => globoff = true,
            "-G" | "--get" => get = true,
            "-X" | "--request" => method = Some(value()?),
            "-H" | "--header" => {
                let h = value()?;
                let (k, v) = h.split_once(':').ok_or(format!("bad header {h}"))?;
                headers.push((k.trim().to_string(), v.trim().to_string()));
            }
            "-d" | "--data" => data.push(value()?),
            "--data-urlencode" => {
                let v = value()?;
                data.push(match v.split_once('=') {
                    Some((name, content)) if !name.is_empty() => {
                        format!("{name}={}", encode(content))
                    }
                    Some((_, content)) => encode(content),
                    None => encode(&v),
                });
            }
            o if o.starts_with('-') => return Err(format!("option {o} is not understood")),
            u if url.is_none() => url = Some(u.to_string()),
            u => return Err(format!("a second URL {u}")),
        }
    }
    let mut url = url.ok_or("no URL")?;
    if !globoff && url.contains(['[', ']', '{', '}']) {
        return Err(format!(
            "curl: bad range in URL {url} (globbing; quote the value or use -g)"
        ));
    }
    let allowed = |c: char| c.is_ascii_alphanumeric() || "-._~:/?#[]@!$&'()*+,;=%".contains(c);
    if let Some(c) = url.chars().find(|&c| !allowed(c)) {
        return Err(format!("'{c}' cannot travel in a URL: {url}"));
    }
    if !url.contains("://") {
        url = format!("http://{url}");
    }
    let body = if data.is_empty() {
        None
    } else if get {
        let sep = if url.contains('?') { '&' } else { '?' };
        url = format!("{url}{sep}{}", data.join("&"));
        None
    } else {
        Some(data.join("&"))
    };
    let method = method.unwrap_or_else(|| if body.is_some() { "POST" } else { "GET" }.into());
    Ok(CurlRequest {
        method,
        url,
        headers,
        body,
    })
}

fn readme() -> String {
    std::fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("README.md"))
        .expect("README.md")
}

/// The commands of a `sh` code block: continuation lines joined, comments and blank lines out.
fn block_lines(block: &str) -> Vec<String> {
    // a trailing backslash continues the command on the next line
    block
        .replace("\\\n", " ")
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_string)
        .collect()
}

/// The `sh` blocks of the README section headed `heading` (up to the next `## `).
fn sh_blocks(heading: &str) -> Vec<Vec<String>> {
    let readme = readme();
    let section = readme
        .split(&format!("\n{heading}\n"))
        .nth(1)
        .unwrap_or_else(|| panic!("a '{heading}' section"));
    let section = section.split("\n## ").next().unwrap_or(section);
    section
        .split("```sh")
        .skip(1)
        .filter_map(|b| b.split("```").next())
        .map(block_lines)
        .collect()
}

const GIS_TOOLS: [&str; 3] = ["curl ", "ogrinfo ", "ogr2ogr "];

/// The example blocks of the README's "GIS" section (those that start with curl, ogrinfo or
/// ogr2ogr; the test-running block is not one), every line one of those commands.
fn gis_lines() -> Vec<String> {
    let mut out = Vec::new();
    for block in sh_blocks("## GIS") {
        if !block
            .first()
            .is_some_and(|l| GIS_TOOLS.iter().any(|t| l.starts_with(t)))
        {
            continue;
        }
        for l in block {
            assert!(
                GIS_TOOLS.iter().any(|t| l.starts_with(t)),
                "not a curl, ogrinfo or ogr2ogr line in a GIS example block: {l}"
            );
            out.push(l);
        }
    }
    out
}

/// The `curl` lines of the README's "Example queries" block and of its GIS examples.
fn readme_queries() -> Vec<String> {
    let lines = sh_blocks("## Example queries")
        .into_iter()
        .next()
        .expect("a sh code block");
    for l in &lines {
        assert!(l.starts_with("curl "), "not a curl query: {l}");
    }
    let gis: Vec<String> = gis_lines()
        .into_iter()
        .filter(|l| l.starts_with("curl "))
        .collect();
    assert!(gis.len() >= 8, "{} GIS curl lines found", gis.len());
    lines.into_iter().chain(gis).collect()
}

/// Data, not just a status: non-empty arrays and objects, lists with objects, counts above 0,
/// no position that is off the network (null).
fn has_data(v: &Value) -> Result<(), String> {
    match v {
        Value::Array(a) if a.is_empty() => Err("an empty array".into()),
        Value::Array(_) => Ok(()),
        Value::Object(o) if o.is_empty() => Err("an empty object".into()),
        Value::Object(o) => {
            if let Some(objects) = o.get("objekter") {
                if objects.as_array().is_none_or(Vec::is_empty) {
                    return Err("no objekter".into());
                }
            }
            if let Some(features) = o.get("features") {
                if features.as_array().is_none_or(Vec::is_empty) {
                    return Err("no features".into());
                }
            }
            if o.get("numberMatched")
                .is_some_and(|n| n.as_u64() == Some(0))
            {
                return Err("numberMatched 0".into());
            }
            if let Some(n) = o.get("antall").and_then(Value::as_f64) {
                if n <= 0.0 {
                    return Err("antall 0".into());
                }
            }
            match o.iter().find(|(_, v)| v.is_null()) {
                Some((k, _)) => Err(format!("{k} is null")),
                None => Ok(()),
            }
        }
        _ => Err("not an array or object".into()),
    }
}

#[test]
fn shell_words_and_curl_options_are_read_as_curl_reads_them() {
    let w = shell_words(r#"curl -s -G 'a b' "c\"d" e\ f  # comment"#).unwrap();
    assert_eq!(w, ["curl", "-s", "-G", "a b", "c\"d", "e f"]);
    assert!(shell_words("curl $W").is_err() && shell_words("curl 'x").is_err());
    let r = |line: &str| curl_request(&shell_words(line).unwrap());
    // the README's old statistikk example: curl stops at the brackets
    let old = r#"curl -s 'localhost:8080/x/?fylke=50&egenskap="egenskap(2021) in [2738,2741]"'"#;
    assert!(r(old).unwrap_err().contains("bad range"));
    assert!(r("curl -g 'localhost:8080/x?a=b c'")
        .unwrap_err()
        .contains("' '"));
    let get =
        r("curl -s -G localhost:8080/x -d fylke=50 --data-urlencode 'egenskap=a(1) in [2,3]'")
            .unwrap();
    assert_eq!(
        get.url,
        "http://localhost:8080/x?fylke=50&egenskap=a%281%29%20in%20%5B2%2C3%5D"
    );
    assert_eq!((get.method.as_str(), get.body), ("GET", None));
    let post = r("curl -X POST localhost:1/y -H 'X-A: 1' -d a=b").unwrap();
    assert_eq!(post.method, "POST");
    assert_eq!(post.headers, [("X-A".to_string(), "1".to_string())]);
    assert_eq!(post.body.as_deref(), Some("a=b"));
    assert!(r("curl --unknown localhost:1").is_err());
    assert!(has_data(&serde_json::json!([])).is_err());
    assert!(has_data(&serde_json::json!({"objekter": [], "metadata": {}})).is_err());
    assert!(has_data(&serde_json::json!({"antall": 0, "strekningslengde": 0})).is_err());
    assert!(has_data(&serde_json::json!({"0.5@1": null})).is_err());
    assert!(has_data(&serde_json::json!({"antall": 3})).is_ok());
}

/// A server on the committed demo snapshot; its `host:port`.
async fn demo_server() -> String {
    let demo = DataDir::read_only(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("snapshots/demo"));
    let current = demo.current().expect("CURRENT").expect("a generation");
    let (g, _) = Generation::load(&demo.generation_dir(current), &|_| {}).expect("demo loads");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let mut config = ApiConfig::new(format!("http://{addr}"), Duration::from_secs(60));
    config.base_from_request = true;
    let state = AppState::read_only(Arc::new(GenerationStore::new(g)), config);
    tokio::spawn(vegdb::server::serve(
        listener,
        state,
        std::future::pending(),
    ));
    format!("localhost:{}", addr.port())
}

#[test]
fn the_readme_names_the_demos_number_of_object_types() {
    let demo = DataDir::read_only(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("snapshots/demo"));
    let current = demo.current().expect("CURRENT").expect("a generation");
    let (g, _) = Generation::load(&demo.generation_dir(current), &|_| {}).expect("demo loads");
    let with_objects = g.objects.values().filter(|d| !d.table.is_empty()).count();
    let readme = readme();
    let named: usize = readme
        .split(" real types")
        .next()
        .and_then(|t| t.rsplit(' ').next())
        .and_then(|n| n.parse().ok())
        .expect("'objects of N real types' in the README");
    assert_eq!(named, with_objects, "the README's count of object types");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_readme_example_answers_with_data_on_the_demo_snapshot() {
    let host = demo_server().await;

    let queries = readme_queries();
    assert!(queries.len() >= 23, "{} queries found", queries.len());
    let client = reqwest::Client::new();
    let curl_installed = std::process::Command::new("curl")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    let mut failures = Vec::new();
    for line in &queries {
        let words: Vec<String> = match shell_words(line) {
            Ok(w) => w
                .iter()
                .map(|w| w.replace("localhost:8080", &host))
                .collect(),
            Err(e) => {
                failures.push(format!("{line}\n  {e}"));
                continue;
            }
        };
        let req = match curl_request(&words) {
            Ok(r) => r,
            Err(e) => {
                failures.push(format!("{line}\n  {e}"));
                continue;
            }
        };
        let mut rb = client.request(req.method.parse().expect("method"), &req.url);
        for (k, v) in &req.headers {
            rb = rb.header(k, v);
        }
        if let Some(b) = &req.body {
            rb = rb.body(b.clone());
        }
        let r = rb.send().await.expect("request");
        let status = r.status().as_u16();
        let csv = r
            .headers()
            .get("content-type")
            .is_some_and(|t| t.as_bytes().starts_with(b"text/csv"));
        let tile = req
            .url
            .split('?')
            .next()
            .is_some_and(|p| p.ends_with(".mvt"));
        let bytes = r.bytes().await.expect("body");
        let text = String::from_utf8_lossy(&bytes).to_string();
        let checked = if tile {
            // a tile with features: 200 and a body (an empty tile is 204)
            match (status, bytes.is_empty()) {
                (200, false) => Ok(()),
                _ => Err(format!("tile: HTTP {status}, {} bytes", bytes.len())),
            }
        } else if (200..300).contains(&status) && csv {
            // a table: a header and at least one row
            match text.lines().count() {
                0 | 1 => Err("a CSV table without rows".into()),
                _ => Ok(()),
            }
        } else if (200..300).contains(&status) {
            serde_json::from_str::<Value>(&text)
                .map_err(|e| format!("not JSON: {e}"))
                .and_then(|v| has_data(&v))
        } else {
            Err(format!("HTTP {status}"))
        };
        if let Err(e) = checked {
            failures.push(format!("{line}\n  {e}: {}", &text[..text.len().min(300)]));
        }
        if curl_installed {
            // the README's `-o FILE` would write into the working directory
            let mut args = Vec::new();
            let mut it = words[1..].iter();
            while let Some(w) = it.next() {
                if w == "-o" || w == "--output" {
                    it.next();
                } else {
                    args.push(w.clone());
                }
            }
            let out = tokio::task::spawn_blocking(move || {
                std::process::Command::new("curl")
                    .args(&args)
                    .args(["-o", "/dev/null", "-w", "%{http_code}"])
                    .output()
            })
            .await
            .expect("curl task")
            .expect("curl runs");
            let code = String::from_utf8_lossy(&out.stdout).to_string();
            if !out.status.success() || !code.starts_with('2') || (tile && code != "200") {
                failures.push(format!(
                    "{line}\n  real curl: exit {:?}, HTTP {code}, {}",
                    out.status.code(),
                    String::from_utf8_lossy(&out.stderr)
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "README examples failing:\n{}",
        failures.join("\n")
    );
}

/// Runs a GDAL tool in `dir`; its output (stdout and stderr), or why it failed.
fn gdal(dir: &std::path::Path, words: &[String]) -> Result<String, String> {
    let out = std::process::Command::new(&words[0])
        .args(&words[1..])
        .current_dir(dir)
        .output()
        .map_err(|e| {
            format!(
                "{} cannot run ({e}): install Debian gdal-bin (or set VEGDB_SKIP_GDAL=1 locally)",
                words[0]
            )
        })?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if out.status.success() {
        Ok(text)
    } else {
        Err(format!("exit {:?}: {text}", out.status.code()))
    }
}

fn feature_count(ogrinfo: &str) -> Option<u64> {
    ogrinfo
        .lines()
        .find_map(|l| l.strip_prefix("Feature Count: "))
        .and_then(|n| n.trim().parse().ok())
}

async fn number_matched(client: &reqwest::Client, url: &str) -> u64 {
    let v: Value = client
        .get(url)
        .send()
        .await
        .expect("request")
        .json()
        .await
        .expect("JSON");
    v["numberMatched"]
        .as_u64()
        .unwrap_or_else(|| panic!("no numberMatched from {url}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_readme_gdal_example_reads_all_features_on_the_demo_snapshot() {
    if std::env::var("VEGDB_SKIP_GDAL").is_ok_and(|v| v == "1") {
        eprintln!("VEGDB_SKIP_GDAL=1: GDAL test skipped");
        return;
    }
    let lines: Vec<String> = gis_lines()
        .into_iter()
        .filter(|l| !l.starts_with("curl "))
        .collect();
    assert!(lines.len() >= 3, "{} GDAL lines found", lines.len());
    let host = demo_server().await;
    let client = reqwest::Client::new();
    let dir = tempfile::tempdir().expect("temp dir");
    let mut failures = Vec::new();
    for line in &lines {
        let words: Vec<String> = shell_words(line)
            .expect("shell words")
            .iter()
            .map(|w| w.replace("localhost:8080", &host))
            .collect();
        let path = dir.path().to_path_buf();
        let run_words = words.clone();
        let out = tokio::task::spawn_blocking(move || gdal(&path, &run_words))
            .await
            .expect("GDAL task");
        let out = match out {
            Ok(o) => o,
            Err(e) => {
                failures.push(format!("{line}\n  {e}"));
                continue;
            }
        };
        let oapif = words.iter().find(|w| w.starts_with("OAPIF:"));
        let checked = if words[0] == "ogr2ogr" {
            // the copy holds every feature of the layer
            let file = words
                .iter()
                .position(|w| w == "-f")
                .and_then(|i| words.get(i + 2))
                .expect("ogr2ogr -f FORMAT OUT");
            let layer = words.last().expect("layer");
            let root = oapif.expect("an OAPIF source").trim_start_matches("OAPIF:");
            let want = number_matched(
                &client,
                &format!("{root}/collections/{layer}/items?limit=1"),
            )
            .await;
            let path = dir.path().to_path_buf();
            let info_words: Vec<String> = ["ogrinfo", "-ro", "-so", "-al", file.as_str()]
                .map(String::from)
                .to_vec();
            let info = tokio::task::spawn_blocking(move || gdal(&path, &info_words))
                .await
                .expect("GDAL task");
            match info.map(|i| feature_count(&i)) {
                Ok(Some(n)) if n == want => Ok(()),
                other => Err(format!("copy holds {other:?} features, the layer {want}")),
            }
        } else if let Some(url) = words.iter().find(|w| w.contains(".geojson")) {
            // a GeoJSON answer read whole: as many features as the query matches
            let want = number_matched(&client, url).await;
            match feature_count(&out) {
                Some(n) if n == want => Ok(()),
                other => Err(format!("ogrinfo reads {other:?} of {want} features")),
            }
        } else if oapif.is_some() {
            // the layer listing names the network and the speed limits
            let listed = |id: &str| out.lines().any(|l| l.split_whitespace().nth(1) == Some(id));
            if listed("vegnett") && listed("105") {
                Ok(())
            } else {
                Err(format!("layers vegnett and 105 not listed: {out}"))
            }
        } else {
            Err("no check for this GDAL line".into())
        };
        if let Err(e) = checked {
            failures.push(format!("{line}\n  {e}"));
        }
    }
    assert!(
        failures.is_empty(),
        "README GDAL examples failing:\n{}",
        failures.join("\n")
    );
}
