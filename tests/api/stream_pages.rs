//! Streamed list pages (`/vegobjekter/{type}`, `/vegnett/lenker`,
//! `/vegobjekter/{type}/endringer?type=endret`): the bytes of a page sent chunk by chunk as the client
//! reads are those of the whole-page rendering, in every format, revision and `pretty`.
//! The oracle is the same server with `ApiConfig::stream_pages` off (each page rendered whole
//! into one buffer, the path before streaming).

use std::time::Duration;

use vegdb::api::state::{ApiConfig, AppState};

use super::server::store;

async fn start(stream_pages: bool) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    // both servers write the same hrefs
    let mut config = ApiConfig::new("http://vegdb.test", Duration::from_secs(30));
    config.stream_pages = stream_pages;
    let state = AppState::read_only(store(), config);
    tokio::spawn(vegdb::server::serve(
        listener,
        state,
        std::future::pending(),
    ));
    format!("http://{addr}/nvdb/api/v2")
}

async fn fetch(
    client: &reqwest::Client,
    base: &str,
    path: &str,
    accept: &str,
) -> (u16, String, Option<String>, Vec<u8>) {
    let r = client
        .get(format!("{base}{path}"))
        .header("Accept", accept)
        .send()
        .await
        .expect("request");
    let status = r.status().as_u16();
    let ct = r
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    let te = r
        .headers()
        .get("transfer-encoding")
        .map(|v| v.to_str().unwrap().to_string());
    (status, ct, te, r.bytes().await.expect("body").to_vec())
}

#[tokio::test]
async fn streamed_pages_equal_whole_pages() {
    let (streamed, whole) = (start(true).await, start(false).await);
    let client = reqwest::Client::new();
    let paths = [
        "/vegobjekter/241?antall=10000&inkluder=alle",
        "/vegobjekter/241?antall=10000&inkluder=alle&pretty=true",
        "/vegobjekter/105?inkluder=alle&srid=4326",
        "/vegobjekter/105?antall=7&inkluder=egenskaper,lokasjon&pretty=true",
        "/vegobjekter/105?antall=1",
        // light pages (id, href, metadata): written as JSON without serde on the streamed side
        "/vegobjekter/105?antall=10000&inkluder=minimum",
        "/vegobjekter/241?antall=3000",
        "/vegobjekter/105?antall=5000&inkluder=metadata&tidspunkt=2016-03-01",
        "/vegobjekter/105?antall=900&inkluder=minimum,egenskaper",
        "/vegobjekter/105?antall=3000&inkluder=geometri&geometritoleranse=30",
        "/vegobjekter/105.xml?antall=2000&inkluder=alle",
        "/vegobjekter/583?kommune=5001&inkluder=alle&segmentering=true",
        "/vegobjekter/105?egenskap=2021%3D9999999",
        "/vegnett/lenker?antall=10000",
        "/vegnett/lenker?antall=4000&srid=4326&pretty=true",
        "/vegnett/lenker?kommune=5001&antall=10",
        "/vegobjekter/105/endringer?type=endret&etter=2000-01-01&antall=10000",
        "/vegobjekter/241/endringer?type=endret&etter=2000-01-01&antall=500&pretty=true",
        "/vegobjekter/105/endringer?type=slettet&etter=2000-01-01",
    ];
    let accepts = [
        "application/json",
        "application/vnd.vegvesen.nvdb-v2-rev0+json",
        "application/vnd.vegvesen.nvdb-v2-rev1+json",
        "application/vnd.vegvesen.nvdb-v2+json",
        "application/xml",
        "application/vnd.vegvesen.nvdb-v2-rev1+xml",
    ];
    let mut chunked = 0;
    let mut big = 0;
    for path in paths {
        for accept in accepts {
            let a = fetch(&client, &streamed, path, accept).await;
            let b = fetch(&client, &whole, path, accept).await;
            assert_eq!((a.0, &a.1), (b.0, &b.1), "{path} {accept}: status/type");
            assert!(
                a.3 == b.3,
                "{path} {accept}: streamed body ({} bytes) differs from the whole page ({} bytes) at byte {:?}",
                a.3.len(),
                b.3.len(),
                a.3.iter().zip(&b.3).position(|(x, y)| x != y)
            );
            assert_eq!(
                a.0,
                200,
                "{path} {accept}: {}",
                String::from_utf8_lossy(&a.3)
            );
            // the whole page is one buffer with a length; the streamed one is chunked
            assert!(b.2.is_none(), "{path}: whole page sent chunked");
            if a.2.as_deref() == Some("chunked") {
                chunked += 1;
            }
            if a.3.len() > 1 << 20 {
                big += 1;
            }
        }
    }
    assert!(chunked >= 70, "only {chunked} responses were streamed");
    assert!(big >= 24, "only {big} pages above 1 MiB were compared");
}
