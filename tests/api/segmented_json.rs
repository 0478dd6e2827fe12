//! `/vegnett/segmentert`'s compact JSON pages, written by hand piece by piece when streamed,
//! against the same pages rendered whole through serde (`ApiConfig::stream_pages` off): the
//! bytes are equal, on random requests (types, chosen values, `egenskap` filters, `kun_dekket`,
//! areas, srid, response revision, page size and the next page) over the tiny data and the
//! demo snapshot.

use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use vegdb::api::state::{ApiConfig, AppState};
use vegdb::generation::{Generation, GenerationStore};

use super::server::store;

fn demo_store() -> Arc<GenerationStore> {
    static STORE: OnceLock<Arc<GenerationStore>> = OnceLock::new();
    STORE
        .get_or_init(|| {
            let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("snapshots/demo");
            let current = std::fs::read_to_string(root.join("CURRENT")).unwrap();
            let dir = root.join(format!("gen-{:06}", current.trim().parse::<u64>().unwrap()));
            Arc::new(GenerationStore::new(
                Generation::load(&dir, &|_| {}).unwrap().0,
            ))
        })
        .clone()
}

async fn start(store: Arc<GenerationStore>, stream_pages: bool) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let mut config = ApiConfig::new("http://vegdb.test", Duration::from_secs(60));
    config.stream_pages = stream_pages;
    let state = AppState::read_only(store, config);
    tokio::spawn(vegdb::server::serve(
        listener,
        state,
        std::future::pending(),
    ));
    format!("http://{addr}/nvdb/api/v2")
}

/// xorshift64: the random requests, the same on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn pick<'a, T>(&mut self, v: &'a [T]) -> &'a T {
        &v[self.below(v.len())]
    }
}

/// The object types with stretch placements, and the counties and municipalities of the network.
struct Pools {
    types: Vec<u32>,
    counties: Vec<u8>,
    municipalities: Vec<u16>,
}

fn pools(g: &Generation) -> Pools {
    let mut types: Vec<u32> = g
        .objects
        .iter()
        .filter(|(_, d)| {
            (0..d.table.loc_from.len()).any(|p| d.table.loc_from[p] < d.table.loc_to[p])
        })
        .map(|(&t, _)| t)
        .collect();
    types.sort_unstable();
    let mut counties = g.network.county.clone();
    counties.sort_unstable();
    counties.dedup();
    let mut municipalities = g.network.municipality.clone();
    municipalities.sort_unstable();
    municipalities.dedup();
    Pools {
        types,
        counties,
        municipalities,
    }
}

/// One random query (without `antall`).
fn query(g: &Generation, p: &Pools, rng: &mut Rng) -> String {
    let mut types: Vec<u32> = Vec::new();
    for _ in 0..1 + rng.below(3) {
        let t = *rng.pick(&p.types);
        if !types.contains(&t) {
            types.push(t);
        }
    }
    // the common ones often: values every piece carries
    if rng.below(2) == 0 && !types.contains(&105) && p.types.contains(&105) {
        types.push(105);
    }
    let list: Vec<String> = types.iter().map(u32::to_string).collect();
    let mut q = format!("typer={}", list.join(","));
    let mut chosen = Vec::new();
    for &t in &types {
        let Some(ot) = g.catalog.object_type(t) else {
            continue;
        };
        let values: Vec<&vegdb::catalog::PropertyType> = ot
            .value_properties()
            .filter(|v| v.sensitivity == 0)
            .collect();
        match rng.below(4) {
            0 => chosen.push(format!("{t}()")),
            1 if !values.is_empty() => {
                let ids: Vec<String> = (0..1 + rng.below(3))
                    .map(|_| rng.pick(&values).id.to_string())
                    .collect::<std::collections::BTreeSet<_>>()
                    .into_iter()
                    .collect();
                chosen.push(format!("{t}({})", ids.join(",")));
            }
            _ => {}
        }
        let enums: Vec<_> = values.iter().filter(|v| v.is_enum()).collect();
        if rng.below(4) == 0 && !enums.is_empty() {
            let v = rng.pick(&enums);
            let allowed = v.allowed_values.as_deref().unwrap_or_default();
            if !allowed.is_empty() {
                let a = rng.pick(allowed);
                q += &format!("&egenskap={t}({}!={})", v.id, a.id);
            }
        }
    }
    if !chosen.is_empty() {
        q += &format!("&egenskaper={}", chosen.join(","));
    }
    if rng.below(3) == 0 {
        q += "&kun_dekket=true";
    }
    match rng.below(4) {
        0 => q += &format!("&fylke={}", rng.pick(&p.counties)),
        1 => q += &format!("&kommune={}", rng.pick(&p.municipalities)),
        2 => q += "&vegreferanse=E,R,F",
        _ => {}
    }
    match rng.below(4) {
        0 => q += "&srid=4326",
        1 => q += "&srid=25833",
        _ => {}
    }
    q
}

async fn body(client: &reqwest::Client, url: &str, accept: &str) -> (u16, Vec<u8>) {
    let r = client
        .get(url)
        .header("Accept", accept)
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.bytes().await.unwrap().to_vec())
}

/// The pieces compared.
async fn compare(store: Arc<GenerationStore>, seed: u64, cases: usize) -> usize {
    let g = store.current();
    let p = pools(&g);
    let (streamed, whole) = (start(store.clone(), true).await, start(store, false).await);
    let client = reqwest::Client::new();
    let accepts = [
        "application/json",
        "application/vnd.vegvesen.nvdb-v2-rev0+json",
        "application/vnd.vegvesen.nvdb-v2-rev1+json",
    ];
    let mut rng = Rng(seed);
    let mut pieces = 0;
    for _ in 0..cases {
        let q = query(&g, &p, &mut rng);
        let accept = *rng.pick(&accepts);
        let antall = *rng.pick(&[1usize, 7, 100, 2000, 10_000]);
        let mut path = format!("/vegnett/segmentert?{q}&antall={antall}");
        // the first page, and the next one when there is one
        for _ in 0..2 {
            let a = body(&client, &format!("{streamed}{path}"), accept).await;
            let b = body(&client, &format!("{whole}{path}"), accept).await;
            assert_eq!(a.0, b.0, "{path}");
            assert!(
                a.1 == b.1,
                "{path} {accept}: written ({} bytes) differs from serde ({} bytes) at byte {:?}",
                a.1.len(),
                b.1.len(),
                a.1.iter().zip(&b.1).position(|(x, y)| x != y)
            );
            assert_eq!(a.0, 200, "{path}: {}", String::from_utf8_lossy(&a.1));
            let page: serde_json::Value = serde_json::from_slice(&a.1).unwrap();
            pieces += page["objekter"].as_array().unwrap().len();
            let Some(start) = page["metadata"]["neste"]["start"].as_str() else {
                break;
            };
            path = format!("/vegnett/segmentert?{q}&antall={antall}&start={start}");
        }
    }
    pieces
}

#[tokio::test]
async fn written_pieces_equal_serde_on_tiny() {
    let pieces = compare(store(), 0x5eed_0001, 40).await;
    assert!(pieces > 2_000, "only {pieces} pieces compared");
}

#[tokio::test]
async fn written_pieces_equal_serde_on_demo() {
    let pieces = compare(demo_store(), 0x5eed_0002, 12).await;
    assert!(pieces > 2_000, "only {pieces} pieces compared");
}
