//! The README's example queries stay true: every `curl` line of its "Example queries" block runs
//! against a real server on the committed demo snapshot and must answer 2xx with data.
//!
//! Each line is split into words as a POSIX shell would (quotes, backslashes, comments) and
//! interpreted as curl would: the options the README uses (`-s`, `-i`, `-g`, `-G`, `-d`,
//! `--data-urlencode`, `-H`, `-X`), curl's URL globbing (`[]{}` without `-g` is curl's "bad range
//! in URL") and no characters a URL may not carry (curl refuses a space; hyper answers 400 to
//! a raw `"`). When a `curl` binary is installed the same words also run through it.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use vegdb::api::{ApiConfig, AppState};
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

/// The `curl` lines of the README's "Example queries" block.
fn readme_queries() -> Vec<String> {
    let readme =
        std::fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("README.md"))
            .expect("README.md");
    let section = readme
        .split("## Example queries")
        .nth(1)
        .expect("an 'Example queries' section");
    let block = section
        .split("```sh")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("a sh code block");
    // a trailing backslash continues the command on the next line
    let joined = block.replace("\\\n", " ");
    let lines: Vec<String> = joined
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_string)
        .collect();
    for l in &lines {
        assert!(l.starts_with("curl "), "not a curl query: {l}");
    }
    lines
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_readme_example_answers_with_data_on_the_demo_snapshot() {
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
    let host = format!("localhost:{}", addr.port());

    let queries = readme_queries();
    assert!(queries.len() >= 15, "{} queries found", queries.len());
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
        let text = r.text().await.expect("body");
        let checked = if (200..300).contains(&status) {
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
            let args = words[1..].to_vec();
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
            if !out.status.success() || !code.starts_with('2') {
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
