//! Password login as OpenAM clients do it (`POST /openam/json/authenticate`), the session
//! cookie on the write API, logout, equal answers for every wrong credential, rate limiting,
//! and `vegdb user add --password-stdin`.

use std::io::Write;

use reqwest::header::HeaderValue;
use serde_json::{json, Value};
use vegdb::users::{set_password, Users, MAX_FAILED_LOGINS, USERS_FILE};

use crate::write_server::{changeset, skiltpunkt, usable_link, WriteServer, WRITE};

/// `skrivnvdb.apiskrivforbindelse.login(miljo='prod')` (LtGlahn/nvdbapi-V2 skrivnvdb.py): POST
/// to `openAMurl` with the connection's headers plus `X-OpenAM-Username`/`-Password` and the
/// realm parameters, no body; it keeps `tokenId` from the JSON answer.
async fn skrivnvdb_login(s: &WriteServer, user: &str, password: HeaderValue) -> reqwest::Response {
    s.client
        .post(format!(
            "{}/openam/json/authenticate?realm=External&authIndexType=module&authIndexValue=LDAP",
            s.root
        ))
        .header("Content-Type", "application/json")
        .header("Accept", "application/json")
        .header("X-Client", "PythonNvdbskriv")
        .header("X-OpenAM-Username", user)
        .header("X-OpenAM-Password", password)
        .send()
        .await
        .expect("login request")
}

fn with_password(s: &WriteServer, user: &str, password: &str) {
    set_password(&s._data.path().join(USERS_FILE), user, password).expect("password set");
}

/// What skrivnvdb then sends: `self.headers['Cookie'] = openAmNavn + '= ' + tokenId`.
fn cookie(token: &str) -> String {
    format!("iPlanetDirectoryProOAM= {token}")
}

async fn overview_status(s: &WriteServer, cookie_value: &str) -> u16 {
    s.client
        .get(format!("{}{WRITE}/endringssett", s.root))
        .header("X-Client", "PythonNvdbskriv")
        .header("Accept", "application/json")
        .header("Cookie", cookie_value)
        .send()
        .await
        .expect("request")
        .status()
        .as_u16()
}

#[tokio::test]
async fn skrivnvdb_logs_in_and_writes_with_the_session_cookie() {
    let s = WriteServer::start().await;
    with_password(&s, "skriver", "Sommer2026!");
    let r = skrivnvdb_login(&s, "skriver", HeaderValue::from_static("Sommer2026!")).await;
    assert_eq!(r.status().as_u16(), 200);
    let body: Value = r.json().await.expect("json");
    let token = body["tokenId"].as_str().expect("tokenId").to_string();
    assert!(token.len() >= 32, "{body}");
    assert_ne!(token, s.writer_token, "a session, not the user's own token");
    // skrivnvdb `endringssett.registrer()`: POST /nvdb/apiskriv/rest/v2/endringssett with the
    // connection's headers, reading the links (`rel`, `src`) of the answer
    let (link, _) = usable_link(&s.store.current());
    let cs = changeset(json!({"registrer": {"vegObjekter": [skiltpunkt("1", link, 0.5)]}}));
    let r = s
        .client
        .post(format!("{}{WRITE}/endringssett", s.root))
        .header("Content-Type", "application/json")
        .header("Accept", "application/json")
        .header("X-Client", "PythonNvdbskriv")
        .header("Cookie", cookie(&token))
        .body(cs.to_string())
        .send()
        .await
        .expect("register");
    assert_eq!(r.status().as_u16(), 201);
    let links: Value = r.json().await.expect("links");
    let rels: Vec<&str> = links
        .as_array()
        .expect("links array")
        .iter()
        .filter_map(|l| l["rel"].as_str())
        .collect();
    assert!(
        rels.contains(&"start") && rels.contains(&"fremdrift"),
        "{links}"
    );
    // the session is the user: its changeset is in the user's overview (Bearer works too)
    let (status, list) = s.get_write("/endringssett", &token).await;
    assert_eq!(status, 200, "{list}");
    let (_, own) = s.get_write("/endringssett", &s.writer_token).await;
    assert_eq!(list, own);
    // skrivnvdb `loggut()`: GET <site>/openam/UI/Logout with the cookie ends the session
    let r = s
        .client
        .get(format!("{}/openam/UI/Logout", s.root))
        .header("Cookie", cookie(&token))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 204);
    assert_eq!(overview_status(&s, &cookie(&token)).await, 401);
    // the user's own token still works
    assert_eq!(overview_status(&s, &cookie(&s.writer_token)).await, 200);
}

#[tokio::test]
async fn wrong_credentials_are_one_answer_and_failures_are_rate_limited() {
    let s = WriteServer::start().await;
    with_password(&s, "skriver", "riktig");
    let answer = |r: reqwest::Response| async move {
        let status = r.status().as_u16();
        let retry = r.headers().get("retry-after").cloned();
        (status, retry, r.text().await.unwrap())
    };
    let wrong_password =
        answer(skrivnvdb_login(&s, "skriver", HeaderValue::from_static("galt")).await).await;
    let unknown_user =
        answer(skrivnvdb_login(&s, "ukjent", HeaderValue::from_static("riktig")).await).await;
    let no_password =
        answer(skrivnvdb_login(&s, "admin", HeaderValue::from_static("")).await).await;
    let nothing = answer(
        s.client
            .post(format!("{}/openam/json/authenticate", s.root))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(wrong_password.0, 401, "{}", wrong_password.2);
    let failed: Value = serde_json::from_str(&wrong_password.2).unwrap();
    assert_eq!(failed["message"], "Authentication Failed");
    for other in [&unknown_user, &no_password, &nothing] {
        assert_eq!(other, &wrong_password, "every failure answers the same");
    }
    // `skriver` has failed once; the limit locks the name, even for the right password
    for _ in 1..MAX_FAILED_LOGINS {
        let r = skrivnvdb_login(&s, "skriver", HeaderValue::from_static("galt")).await;
        assert_eq!(r.status().as_u16(), 401);
    }
    let locked =
        answer(skrivnvdb_login(&s, "skriver", HeaderValue::from_static("riktig")).await).await;
    assert_eq!(locked.0, 429, "{}", locked.2);
    let seconds: u64 = locked
        .1
        .expect("Retry-After")
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((800..=900).contains(&seconds), "{seconds}");
    // other names are not locked
    with_password(&s, "bare95", "annet");
    let r = skrivnvdb_login(&s, "bare95", HeaderValue::from_static("annet")).await;
    assert_eq!(r.status().as_u16(), 200);
}

/// A name longer than any user's (30 KB) is a 400 at once in OpenAM's shape,
/// many of them cost no verification, and the same name within the limit still logs in.
#[tokio::test]
async fn an_over_long_name_is_refused_at_once() {
    let s = WriteServer::start().await;
    let long = "n".repeat(30_000);
    let started = std::time::Instant::now();
    for _ in 0..50 {
        let r = skrivnvdb_login(&s, &long, HeaderValue::from_static("galt")).await;
        assert_eq!(r.status().as_u16(), 400);
        let v: Value = r.json().await.unwrap();
        assert_eq!(v["code"], 400);
        let message = v["message"].as_str().unwrap();
        assert!(
            message.contains("30000") && message.contains("256"),
            "{message}"
        );
    }
    // 50 argon2 verifications, two at a time, would take seconds
    assert!(
        started.elapsed() < std::time::Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    let longest = "n".repeat(256);
    vegdb::users::add_user(
        &s._data.path().join(USERS_FILE),
        &longest,
        vec![vegdb::users::Role::Write],
        None,
        None,
    )
    .expect("user added");
    with_password(&s, &longest, "riktig");
    let r = skrivnvdb_login(&s, &"n".repeat(256), HeaderValue::from_static("riktig")).await;
    assert_eq!(r.status().as_u16(), 200);
}

#[tokio::test]
async fn a_latin1_password_header_matches_the_utf8_password() {
    // Python `requests` sends str header values as Latin-1: 'blåbær' is b"bl\xe5b\xe6r"
    let s = WriteServer::start().await;
    with_password(&s, "skriver", "blåbær");
    let latin1 = HeaderValue::from_bytes(b"bl\xe5b\xe6r").unwrap();
    let r = skrivnvdb_login(&s, "skriver", latin1).await;
    assert_eq!(r.status().as_u16(), 200);
    let r = skrivnvdb_login(&s, "skriver", HeaderValue::from_str("blåbær").unwrap()).await;
    assert_eq!(r.status().as_u16(), 200, "UTF-8 works as well");
}

#[test]
fn user_add_password_stdin_stores_a_hash_that_logs_in() {
    let tmp = tempfile::tempdir().unwrap();
    let users = tmp.path().join("users.json");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_vegdb"))
        .args([
            "user",
            "add",
            "kari",
            "--roles",
            "skriv",
            "--password-stdin",
            "--users",
        ])
        .arg(&users)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("vegdb runs");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"hemmelig passord\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let stdout = String::from_utf8(out.stdout).unwrap();
    let token = stdout.lines().last().unwrap().trim().to_string();
    let text = std::fs::read_to_string(&users).unwrap();
    assert!(!text.contains("hemmelig"), "{text}");
    assert!(text.contains("$argon2id$"), "{text}");
    let u = Users::open(&users).unwrap();
    assert!(
        u.authenticate(&token).is_some(),
        "the printed token still works"
    );
    let session = u.login("kari", "hemmelig passord").expect("login");
    assert_eq!(u.authenticate(&session).unwrap().name, "kari");
    // an empty password is refused
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_vegdb"))
        .args([
            "user",
            "add",
            "ola",
            "--roles",
            "skriv",
            "--password-stdin",
            "--users",
        ])
        .arg(&users)
        .stdin(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"\n").unwrap();
    assert!(!child.wait_with_output().unwrap().status.success());
}

/// LtGlahn/nvdbapi-V2 apiforbindelse.py `__loginskriv`: a GET of `self.apiurl` (the site root)
/// with the connection's headers, `X-OpenAM-Username`/`-Password` and the realm parameters;
/// it keeps `tokenId` and sends `Cookie: <openAmNavn>= <tokenId>`.
#[tokio::test]
async fn apiforbindelse_logs_in_with_a_get_of_the_site_root() {
    let s = WriteServer::start().await;
    with_password(&s, "skriver", "vinter");
    let r = s
        .client
        .get(format!(
            "{}?realm=External&authIndexType=module&authIndexValue=LDAP",
            s.root
        ))
        .header("X-Client", "LtGlahn python")
        .header("User-Agent", "LtGlahn python requests")
        .header("X-Client-Session", "7d4f1a9e-3c1b-4f7e-9a55-0b6c2d9e8f10")
        .header("Accept", "application/json")
        .header("Content-Type", "application/json")
        .header("X-OpenAM-Username", "skriver")
        .header("X-OpenAM-Password", "vinter")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let token = r.json::<Value>().await.unwrap()["tokenId"]
        .as_str()
        .expect("tokenId")
        .to_string();
    assert_eq!(overview_status(&s, &cookie(&token)).await, 200);
    // the root without credentials is still an unknown path
    let r = s.client.get(format!("{}/", s.root)).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 404);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body[0]["code"], 4012);
}

/// Without `--public-url` the write API's links use the host the client connected to, as the
/// read API's hrefs do (skrivnvdb follows `start`/`fremdrift` links verbatim).
#[tokio::test]
async fn write_links_follow_the_host_the_client_connected_to() {
    let s = WriteServer::start_with(|c| c.base_from_request = true).await;
    let port = s.root.rsplit(':').next().unwrap();
    let root = format!("http://localhost:{port}");
    let (link, _) = usable_link(&s.store.current());
    let cs = changeset(json!({"registrer": {"vegObjekter": [skiltpunkt("1", link, 0.5)]}}));
    let r = s
        .client
        .post(format!("{root}{WRITE}/endringssett"))
        .headers(WriteServer::headers(&s.writer_token))
        .header("Content-Type", "application/json")
        .body(cs.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 201);
    let links: Value = r.json().await.unwrap();
    for l in links.as_array().unwrap() {
        let src = l["src"].as_str().unwrap();
        assert!(
            src.starts_with(&format!("{root}{WRITE}/endringssett/")),
            "{src}"
        );
    }
}
