//! A real server with the write path: its own data directory (a copy of the tiny dataset), the
//! writer thread and a users file with one user per role.

use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::{json, Value};
use vegdb::api::state::{ApiConfig, AppState};
use vegdb::changeset::writer::Writer;
use vegdb::generation::{Generation, GenerationStore};
use vegdb::snapshot::store::DataDir;
use vegdb::users::{add_user, Role, Users, USERS_FILE};

use super::server::tiny_generation_dir;

pub const WRITE: &str = "/nvdb/apiskriv/rest/v2";

pub struct WriteServer {
    pub root: String,
    /// (used by the tests that inject faults: `failpoints` feature)
    #[cfg_attr(not(feature = "failpoints"), allow(dead_code))]
    pub writer: Arc<Writer>,
    pub client: reqwest::Client,
    pub store: Arc<GenerationStore>,
    pub admin: String,
    pub writer_token: String,
    pub sensitive_token: String,
    /// skriv, limited to type 95.
    pub limited_token: String,
    /// skriv, limited to a municipality no test link lies in.
    pub elsewhere_token: String,
    /// The users file (tests add and change users in it).
    pub users_path: std::path::PathBuf,
    /// Keeps the data directory alive as long as the server.
    pub _data: tempfile::TempDir,
}

impl WriteServer {
    pub async fn start() -> WriteServer {
        Self::start_with(|_| {}).await
    }

    pub async fn start_with(configure: impl FnOnce(&mut ApiConfig)) -> WriteServer {
        let tmp = tempfile::tempdir().expect("temp dir");
        let data = DataDir::open(tmp.path()).expect("data dir");
        let source = tiny_generation_dir();
        data.init_from(&DataDir::read_only(source.parent().expect("data root")))
            .expect("copy of the tiny dataset");
        let current = data.current().unwrap().unwrap();
        let (g, _) = Generation::load(&data.generation_dir(current), &|_| {}).expect("loads");
        let store = Arc::new(GenerationStore::new(g));
        let users_path = tmp.path().join(USERS_FILE);
        let add = |name: &str, roles: Vec<Role>, types, kommuner| {
            add_user(&users_path, name, roles, types, kommuner).expect("user")
        };
        let admin = add("admin", vec![Role::Admin], None, None);
        let writer_token = add("skriver", vec![Role::Write], None, None);
        let sensitive_token = add("leser", vec![Role::Sensitive], None, None);
        let limited_token = add("bare95", vec![Role::Write], Some(vec![95]), None);
        let elsewhere_token = add("annenkommune", vec![Role::Write], None, Some(vec![9999]));
        let users = Arc::new(Users::open(&users_path).expect("users"));
        // the writer checks each changeset against its owner's rights as the file says then
        let writer = Writer::start_with_rights(data.clone(), store.clone(), users.rights_source())
            .expect("writer starts");
        let writer_handle = writer.clone();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let mut config = ApiConfig::new(format!("http://{addr}"), Duration::from_secs(30));
        configure(&mut config);
        let state = AppState {
            store: store.clone(),
            config: Arc::new(config),
            writer: Some(writer),
            users,
            request_base: Default::default(),
            resources: Default::default(),
        };
        tokio::spawn(vegdb::server::serve(
            listener,
            state,
            std::future::pending(),
        ));
        WriteServer {
            root: format!("http://{addr}"),
            writer: writer_handle,
            client: reqwest::Client::new(),
            store,
            admin,
            writer_token,
            sensitive_token,
            limited_token,
            elsewhere_token,
            users_path,
            _data: tmp,
        }
    }

    pub fn headers(token: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert("X-Client", HeaderValue::from_static("vegdb-test"));
        h.insert(
            "Authorization",
            HeaderValue::from_str(&format!("Bearer {token}")).unwrap(),
        );
        h
    }

    /// POST a JSON body to a write path; returns (status, headers, body text).
    pub async fn post_json(
        &self,
        path: &str,
        token: &str,
        body: &Value,
    ) -> (u16, reqwest::header::HeaderMap, String) {
        let r = self
            .client
            .post(format!("{}{WRITE}{path}", self.root))
            .headers(Self::headers(token))
            .header("Content-Type", "application/json")
            .body(body.to_string())
            .send()
            .await
            .expect("request");
        let status = r.status().as_u16();
        let headers = r.headers().clone();
        (status, headers, r.text().await.expect("body"))
    }

    pub async fn get_write(&self, path: &str, token: &str) -> (u16, String) {
        let r = self
            .client
            .get(format!("{}{WRITE}{path}", self.root))
            .headers(Self::headers(token))
            .send()
            .await
            .expect("request");
        (r.status().as_u16(), r.text().await.expect("body"))
    }

    /// Register a changeset (expects 201); returns its id.
    pub async fn register(&self, token: &str, changeset: &Value) -> String {
        let (status, headers, body) = self.post_json("/endringssett", token, changeset).await;
        assert_eq!(status, 201, "register: {body}");
        let location = headers["location"].to_str().unwrap().to_string();
        location.rsplit('/').next().unwrap().to_string()
    }

    pub async fn start_changeset(&self, token: &str, id: &str) {
        let (status, _, body) = self
            .post_json(&format!("/endringssett/{id}/start"), token, &json!({}))
            .await;
        assert_eq!(status, 200, "start: {body}");
    }

    /// Poll fremdrift until it is final; returns the status document.
    pub async fn wait(&self, token: &str, id: &str) -> Value {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let (status, body) = self
                .get_write(&format!("/endringssett/{id}/fremdrift"), token)
                .await;
            assert_eq!(status, 200, "fremdrift: {body}");
            let p: String = serde_json::from_str(&body).expect("a bare JSON string");
            if [
                "AVVIST",
                "UTFØRT",
                "UTFØRT_OG_ETTERBEHANDLET",
                "KANSELLERT",
                "VENTER",
            ]
            .contains(&p.as_str())
            {
                let (_, s) = self
                    .get_write(&format!("/endringssett/{id}/status"), token)
                    .await;
                return serde_json::from_str(&s).expect("status json");
            }
            assert!(Instant::now() < deadline, "changeset {id} still {p}");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Register, start and wait.
    pub async fn run(&self, token: &str, changeset: &Value) -> Value {
        let id = self.register(token, changeset).await;
        self.start_changeset(token, &id).await;
        self.wait(token, &id).await
    }

    /// GET a read-API path (optionally with a token); returns (status, body).
    pub async fn read(&self, path: &str, token: Option<&str>) -> (u16, Value) {
        let mut req = self.client.get(format!("{}/nvdb/api/v2{path}", self.root));
        if let Some(t) = token {
            req = req.header("Authorization", format!("Bearer {t}"));
        }
        let r = req.send().await.expect("request");
        let status = r.status().as_u16();
        let text = r.text().await.expect("body");
        (status, serde_json::from_str(&text).unwrap_or(Value::Null))
    }
}

/// A link row that is not a connection link: (link id, municipality).
pub fn usable_link(g: &Generation) -> (u64, u16) {
    let n = &g.network;
    let row = n.plain_link_rows().next().expect("a plain link");
    (n.link_id[row], n.municipality[row])
}

/// The changeset envelope around parts.
pub fn changeset(parts: Value) -> Value {
    let mut c = json!({"effektDato": "2026-11-01", "datakatalogversjon": vegdb::catalog::Catalog::embedded().version.version});
    for (k, v) in parts.as_object().expect("parts").iter() {
        c[k] = v.clone();
    }
    c
}

/// A Skiltpunkt (95) with one enum value at `link`@`pos`.
pub fn skiltpunkt(temp: &str, link: u64, pos: f64) -> Value {
    json!({"typeId": 95, "tempId": temp,
        "egenskaper": [{"typeId": 1876, "enum": [2868]}],
        "lokasjon": {"punkt": [{"lenkeId": link, "posisjon": pos}]}})
}
