//! LtGlahn's nvdbapi-V2 (github.com/LtGlahn/nvdbapi-V2, not on a package registry): the exact
//! requests its read client `nvdbapi.py`, its GeoJSON export `nvdb2geojson.py` and its SKRIV v2
//! helper `skrivnvdb.py` send, and the response fields and JSON types their code reads.
//!
//! Written from the source at these commits: `nvdbapi.py` @08db98c, `nvdb2geojson.py` @08c86cb,
//! `skrivnvdb.py` @0ebc970, `apiforbindelse.py` @389627e. Each assertion group names the file,
//! the function and the source line it stands for (quoted, as line numbers move between commits).

use std::time::{Duration, Instant};

use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::{json, Value};

use super::bin_server::{BinServer, NewUser};
use super::server::TestServer;

/// nvdbapi.py `nvdbVegnett.headers`:
/// `{ 'accept' : 'application/vnd.vegvesen.nvdb-v2+json', 'X-Client' : 'nvdbapi.py', 'X-Kontaktperson' : 'Anonymous'}`
fn read_headers() -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert(
        "accept",
        HeaderValue::from_static("application/vnd.vegvesen.nvdb-v2+json"),
    );
    h.insert("X-Client", HeaderValue::from_static("nvdbapi.py"));
    h.insert("X-Kontaktperson", HeaderValue::from_static("Anonymous"));
    h
}

/// nvdbapi.py `anrope`: `requests.get(url, params=parametre, headers=self.headers)`; anything but
/// 200 raises `Exception('Http error: ...')`, otherwise `r.json()`.
async fn anrope(client: &reqwest::Client, url: &str) -> Value {
    let r = client
        .get(url)
        .headers(read_headers())
        .send()
        .await
        .expect("request");
    let status = r.status().as_u16();
    let text = r.text().await.expect("body");
    assert_eq!(status, 200, "GET {url}: {text}");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("GET {url}: not JSON ({e}): {text}"))
}

/// nvdbapi.py `nestePaginering` / `nesteForekomst`: the first page must say `metadata.antall > 0`
/// (`if self.data['metadata']['antall'] > 0:`), then the client fetches
/// `self.data['metadata']['neste']['href']` verbatim until `metadata.returnert` is 0.
/// Returns (first page's `antall`, every object in order).
async fn page_like_nvdbapi(client: &reqwest::Client, first_url: &str) -> (u64, Vec<Value>) {
    let mut page = anrope(client, first_url).await;
    let antall = page["metadata"]["antall"]
        .as_u64()
        .unwrap_or_else(|| panic!("metadata.antall is read as a number: {}", page["metadata"]));
    let mut objects = Vec::new();
    let mut pages = 0;
    loop {
        let returned = page["metadata"]["returnert"]
            .as_u64()
            .expect("metadata.returnert is a number");
        if returned == 0 {
            break;
        }
        let items = page["objekter"].as_array().expect("objekter");
        assert_eq!(items.len() as u64, returned, "returnert counts objekter");
        objects.extend(items.iter().cloned());
        let next = page["metadata"]["neste"]["href"]
            .as_str()
            .unwrap_or_else(|| panic!("metadata.neste.href on every page: {}", page["metadata"]))
            .to_string();
        page = anrope(client, &next).await;
        pages += 1;
        assert!(pages < 1000, "paging does not end");
    }
    (antall, objects)
}

#[tokio::test]
async fn nvdbfagdata_lists_every_object_with_its_empty_named_parameter() {
    let s = TestServer::start().await;
    // nvdbapi.py `nvdbFagdata.__init__`: `self.objektTypeDef = self.anrope('/'.join(('vegobjekttyper', str(objTypeID))))`;
    // `info` prints `self.objektTypeDef['navn']`, `egenskaper` prints `eg['id'], eg['navn'], eg['datatype_tekst']`.
    let def = anrope(&s.client, &format!("{}/vegobjekttyper/105", s.base)).await;
    assert!(def["navn"].is_string(), "{def}");
    for eg in def["egenskapstyper"].as_array().expect("egenskapstyper") {
        assert!(eg["id"].is_u64() && eg["navn"].is_string() && eg["datatype_tekst"].is_string());
    }
    // nvdbapi.py `statistikk`: `stat = self.anrope(.../statistikk, parametre=self.allfilters())`;
    // `self.antall = stat['antall']`, `self.strekningslengde = stat['strekningslengde']`.
    let stat = anrope(&s.client, &format!("{}/vegobjekter/105/statistikk", s.base)).await;
    let total = stat["antall"].as_u64().expect("statistikk.antall");
    assert!(stat["strekningslengde"].is_number(), "{stat}");
    assert!(total > 1000, "the test needs more than one page");
    // nvdbapi.py `nvdbFagdata.__init__`: `self.respons = { 'inkluder' : ['alle'], 'srid' : 32633,
    // 'geometritoleranse' : None, '' : True }`, merged with `{ 'antall' : 1000 }` in `nestePaginering`;
    // requests drops the None and sends the rest in this order (`&=True` included).
    let url = format!(
        "{}/vegobjekter/105?inkluder=alle&srid=32633&=True&antall=1000",
        s.base
    );
    let (antall, objects) = page_like_nvdbapi(&s.client, &url).await;
    assert_eq!(antall, total, "metadata.antall is the number of matches");
    assert_eq!(objects.len() as u64, total, "every object exactly once");
    let mut ids: Vec<u64> = objects.iter().map(|o| o["id"].as_u64().unwrap()).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len() as u64, total, "no object twice across pages");
    // `inkluder=alle` on a list: every part, vegsegmenter included, in the shape
    // the GeoJSON export reads (stedfesting, geometri.wkt, vegreferanse.kortform).
    for o in &objects {
        for part in [
            "metadata",
            "egenskaper",
            "geometri",
            "lokasjon",
            "vegsegmenter",
        ] {
            assert!(!o[part].is_null(), "inkluder=alle without {part}: {o}");
        }
        assert_eq!(o["geometri"]["srid"], 32633);
        let segments = o["vegsegmenter"].as_array().expect("vegsegmenter array");
        assert!(!segments.is_empty(), "{o}");
        for seg in segments {
            assert!(seg["stedfesting"]["veglenkeid"].is_u64(), "{seg}");
            assert!(seg["geometri"]["wkt"].is_string(), "{seg}");
            assert!(seg["vegreferanse"]["kortform"].is_string(), "{seg}");
        }
    }
}

#[tokio::test]
async fn nvdbvegnett_pages_links_that_the_geojson_export_can_convert() {
    let s = TestServer::start().await;
    // nvdbapi.py `nestePaginering` for `nvdbVegnett`: `parametre = merge_dicts(self.geofilter,
    // { 'antall' : self.paginering['antall'] })`; `self.anrope('vegnett/lenker', parametre=parametre)`.
    let url = format!("{}/vegnett/lenker?kommune=5031&antall=1000", s.base);
    let (antall, links) = page_like_nvdbapi(&s.client, &url).await;
    assert!(antall > 0);
    assert_eq!(links.len() as u64, antall);
    // nvdb2geojson.py `vegnett2geojson`: `wktgeom = v['geometri'].pop('wkt')`,
    // `vegref = v.pop('vegreferanse')`, `vegref['vrefkortform'] = vegref.pop('kortform')`, then
    // `shapely.wkt.loads(wktgeom)`: every link has a WKT line and a road reference.
    for v in &links {
        let wkt = v["geometri"]["wkt"].as_str().expect("geometri.wkt");
        assert!(wkt.starts_with("LINESTRING"), "{wkt}");
        assert!(v["vegreferanse"]["kortform"].is_string(), "{v}");
        assert!(v["veglenkeid"].is_u64(), "{v}");
    }
}

#[tokio::test]
async fn hrefs_use_the_host_the_client_connected_to() {
    // Later nvdbapi.py versions warn when `neste.href` points at another host than the base URL
    // they were given (api-facts §7, commit de334c2), and every version follows that href
    // verbatim: a server started without --public-url must answer with the Host the client used.
    let server = BinServer::start(&[]).await;
    let client = reqwest::Client::new();
    let base = format!("http://localhost:{}/nvdb/api/v2", server.port);
    // (Without the empty-named parameter, so that this test stands for gap 10 alone.)
    let page = anrope(
        &client,
        &format!("{base}/vegobjekter/105?inkluder=alle&srid=32633&antall=10"),
    )
    .await;
    let next = page["metadata"]["neste"]["href"].as_str().expect("href");
    assert!(next.starts_with(&format!("{base}/")), "{next}");
    let own = page["objekter"][0]["href"].as_str().expect("object href");
    assert!(own.starts_with(&format!("{base}/")), "{own}");
    anrope(&client, next).await;
}

/// skrivnvdb.py `apiskrivforbindelse.__init__`: `self.headers = { "Content-Type" : "application/json",
/// "Accept" : "application/json", "X-Client" : "PythonNvdbskriv" }`.
fn write_headers() -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert("Content-Type", HeaderValue::from_static("application/json"));
    h.insert("Accept", HeaderValue::from_static("application/json"));
    h.insert("X-Client", HeaderValue::from_static("PythonNvdbskriv"));
    h
}

/// skrivnvdb.py `login(miljo='prod')`: `self.requestsession.post(url=openAMurl, headers=headers,
/// params = { 'realm' : 'External', 'authIndexType' : 'module', 'authIndexValue' : 'LDAP'})` with
/// `headers = self.SVVpassord(...)` = the connection headers plus `X-OpenAM-Username` /
/// `X-OpenAM-Password`, and no body.
async fn openam_login(
    client: &reqwest::Client,
    root: &str,
    user: &str,
    password: &str,
) -> reqwest::Response {
    let mut h = write_headers();
    h.insert("X-OpenAM-Username", HeaderValue::from_str(user).unwrap());
    h.insert(
        "X-OpenAM-Password",
        HeaderValue::from_str(password).unwrap(),
    );
    client
        .post(format!(
            "{root}/openam/json/authenticate?realm=External&authIndexType=module&authIndexValue=LDAP"
        ))
        .headers(h)
        .send()
        .await
        .expect("login request")
}

#[tokio::test]
async fn skrivnvdb_logs_in_through_openam_and_writes_a_changeset() {
    let server = BinServer::start(&[NewUser {
        name: "kari",
        roles: "skriv",
        password: "hemmelig passord 42",
    }])
    .await;
    let client = reqwest::Client::new();
    let root = server.root.clone();

    // skrivnvdb.py `login`: `if self.loginrespons.ok: temp = self.loginrespons.json();
    // if 'tokenId' in temp.keys(): self.headers['Cookie'] = openAmNavn + '= ' + temp['tokenId']`
    // with `openAmNavn = 'iPlanetDirectoryProOAM'` (prod). Note the space after '='.
    let r = openam_login(&client, &root, "kari", "hemmelig passord 42").await;
    let status = r.status().as_u16();
    let text = r.text().await.expect("body");
    assert_eq!(status, 200, "login: {text}");
    let answer: Value = serde_json::from_str(&text).expect("login answer is JSON");
    let token = answer["tokenId"].as_str().expect("tokenId").to_string();
    let mut headers = write_headers();
    headers.insert(
        "Cookie",
        HeaderValue::from_str(&format!("iPlanetDirectoryProOAM= {token}")).unwrap(),
    );

    // Wrong credentials: not ok (skrivnvdb prints "Fikk ikke logget på"), and the answer does not
    // tell a wrong password from an unknown user.
    let wrong = openam_login(&client, &root, "kari", "feil").await;
    assert_eq!(wrong.status().as_u16(), 401);
    let wrong_body = wrong.text().await.unwrap();
    let unknown = openam_login(&client, &root, "ola", "hemmelig passord 42").await;
    assert_eq!(unknown.status().as_u16(), 401);
    assert_eq!(unknown.text().await.unwrap(), wrong_body);

    // A changeset like the README's, on a plain link of this dataset, in the catalogue version the
    // service reports.
    let base = format!("{root}/nvdb/api/v2");
    let version =
        anrope(&client, &format!("{base}/status")).await["datakatalog"]["versjon"].clone();
    let links = anrope(
        &client,
        &format!("{base}/vegnett/lenker?kommune=5001&antall=100"),
    )
    .await;
    let link = links["objekter"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["konnekteringslenke"] == false)
        .expect("a plain link")["veglenkeid"]
        .clone();
    let data = json!({"effektDato": "2026-11-01", "datakatalogversjon": version,
        "registrer": {"vegObjekter": [{"typeId": 95, "tempId": "1",
            "egenskaper": [{"typeId": 1876, "enum": [2868]}],
            "lokasjon": {"punkt": [{"lenkeId": link, "posisjon": 0.5}]}}]}});
    let post = |url: String, body: Value| {
        let req = client.post(url).headers(headers.clone()).json(&body);
        async move {
            let r = req.send().await.expect("request");
            let status = r.status();
            (status, r.text().await.expect("body"))
        }
    };

    // skrivnvdb.py `endringssett.valider`: `skrivtil('/nvdb/apiskriv/rest/v2/endringssett/validator', self.data)`;
    // `finnvalideringsfeil` reads `self.validertresultat['resultat']['vegObjekter']` and each `ff['feil']`.
    let (st, body) = post(
        format!("{root}/nvdb/apiskriv/rest/v2/endringssett/validator"),
        data.clone(),
    )
    .await;
    assert!(st.is_success(), "validator: {st} {body}");
    let valid: Value = serde_json::from_str(&body).expect("validator JSON");
    for ff in valid["resultat"]["vegObjekter"]
        .as_array()
        .expect("resultat.vegObjekter")
    {
        assert_eq!(ff["feil"], json!([]), "{valid}");
    }

    // skrivnvdb.py `registrer`: `skrivtil('/nvdb/apiskriv/rest/v2/endringssett', self.data)`; if ok,
    // `for rel in json.loads(...)`: `rel['rel']` in self/start/kanseller/status/fremdrift → `rel['src']`.
    let (st, body) = post(
        format!("{root}/nvdb/apiskriv/rest/v2/endringssett"),
        data.clone(),
    )
    .await;
    assert!(st.is_success(), "registrer: {st} {body}");
    let rels: Vec<Value> = serde_json::from_str(&body).expect("links");
    let src = |name: &str| -> String {
        rels.iter()
            .find(|r| r["rel"] == name)
            .unwrap_or_else(|| panic!("no link {name}: {body}"))["src"]
            .as_str()
            .expect("src")
            .to_string()
    };
    let (start, status_link, progress) = (src("start"), src("status"), src("fremdrift"));
    src("self");
    src("kanseller");

    // skrivnvdb.py `startskriving`: `self.forbindelse.skrivtil(self.startlenke, self.data)` — the
    // absolute link, with the changeset as body again.
    let (st, body) = post(start, data.clone()).await;
    assert!(st.is_success(), "start: {st} {body}");

    // skrivnvdb.py `sjekkfremdrift`: `self.forbindelse.les(self.fremdriftlenke)`, the text kept
    // as status; `sjekkstatus`: `b.text == '"UTFØRT"'` or `b.json()`.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let r = client
            .get(&progress)
            .headers(headers.clone())
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 200);
        let text = r.text().await.unwrap();
        if text.starts_with("\"UTFØRT") || text == "\"AVVIST\"" {
            assert_ne!(text, "\"AVVIST\"");
            break;
        }
        assert!(Instant::now() < deadline, "still {text}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // skrivnvdb.py `finnskrivefeil`: `b = self.sjekkstatus(returjson=True)`, `b['fremdrift']`,
    // `for ff in b['resultat']['vegObjekter']: if ff['feil']: ... ff['nvdbId']`.
    let r = client
        .get(&status_link)
        .headers(headers.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let b: Value = r.json().await.expect("status JSON");
    assert!(
        b["fremdrift"].as_str().unwrap().starts_with("UTFØRT"),
        "{b}"
    );
    let written = &b["resultat"]["vegObjekter"][0];
    assert_eq!(written["feil"], json!([]), "{b}");
    let nvdb_id = written["nvdbId"].as_u64().expect("nvdbId");
    // The new object is readable through the read API.
    let obj = anrope(&client, &format!("{base}/vegobjekter/95/{nvdb_id}")).await;
    assert_eq!(obj["id"].as_u64(), Some(nvdb_id));
}
