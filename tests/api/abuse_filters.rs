//! Abusive filter parameters: deeply nested and very wide filter
//! expressions must end in a clean 4xx (or a 503 when the evaluation budget runs out) in the API
//! error shape, never in a crash, and must not starve other requests.
//!
//! The servers here run on a multi-threaded runtime with two workers, like a small production
//! machine, so CPU-bound work on the async workers would show up as a slow `/status`.

use std::time::{Duration, Instant};

use vegdb::api::state::{ApiConfig, AppState};

use crate::server::{store, TestServer};

/// Held by the tests that measure `/status` under load, so they do not load each other.
static TIMING: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// A server on 127.0.0.1:0 with an evaluation budget of `budget`.
async fn start_with_budget(budget: Duration) -> TestServer {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let mut config = ApiConfig::new(format!("http://{addr}"), Duration::from_secs(10));
    config.query_budget = budget;
    tokio::spawn(vegdb::server::serve(
        listener,
        AppState::read_only(store(), config),
        std::future::pending(),
    ));
    TestServer {
        base: format!("http://{addr}/nvdb/api/v2"),
        client: reqwest::Client::new(),
    }
}

fn nested(depth: usize, inner: &str) -> String {
    format!("{}{inner}{}", "(".repeat(depth), ")".repeat(depth))
}

fn nested_relations(depth: usize, child: u32, inner: &str) -> String {
    format!(
        "{}{inner}{}",
        format!("relasjon({child},").repeat(depth),
        ")".repeat(depth)
    )
}

/// `/status` answers 200 within `limit`; returns how long it took.
async fn status_answers(s: &TestServer, limit: Duration) -> Duration {
    let t = Instant::now();
    let r = s.get("/status").await;
    let took = t.elapsed();
    assert_eq!(r.status(), 200, "/status");
    assert!(took < limit, "/status took {took:?}");
    took
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_nested_levels_are_refused_and_the_server_survives() {
    let s = TestServer::start().await;
    // (a URL is at most 64 KB: 4,500 nested relations are the most that fit)
    let deep = 10_000;
    for path in [
        format!("/vegobjekter/105/?egenskap={}", nested(deep, "2021=2738")),
        format!(
            "/vegobjekter/105/statistikk/?egenskap={}",
            nested(deep, "2021=2738")
        ),
        format!(
            "/vegobjekter/95/?egenskap={}",
            nested_relations(4_500, 96, "5530!=null")
        ),
        format!(
            "/vegobjekter/95/?egenskap=relasjon(96,{})",
            nested(deep, "5530!=null")
        ),
        format!(
            "/vegobjekter/95/?overlapp=105({})",
            nested(deep, "2021=2738")
        ),
        format!(
            "/vegobjekter/105/statistikk/?overlapp=95({})",
            nested_relations(4_000, 96, "5530!=null")
        ),
    ] {
        let short = &path[..60];
        let r = s.get(&path).await;
        let status = r.status().as_u16();
        let body: serde_json::Value = r.json().await.expect("JSON error body");
        assert_eq!(status, 422, "{short}…: {body}");
        assert_eq!(body[0]["code"], 4005, "{short}…: {body}");
        assert!(body[0]["message"].is_string(), "{body}");
        assert!(body[0]["help_url"].is_string(), "{body}");
        status_answers(&s, Duration::from_secs(5)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nesting_depth_is_limited_to_32_levels() {
    let s = TestServer::start().await;
    // 32 levels of parentheses (and a relation inside 31) are fine…
    let ok = s
        .get_json(
            &format!(
                "/vegobjekter/105/statistikk/?egenskap={}",
                nested(32, "2021!=null")
            ),
            200,
        )
        .await;
    let plain = s
        .get_json("/vegobjekter/105/statistikk/?egenskap=2021!=null", 200)
        .await;
    assert_eq!(ok, plain, "parentheses do not change the answer");
    s.get_json(
        &format!(
            "/vegobjekter/95/statistikk/?egenskap={}",
            nested(31, "relasjon(96,5530!=null)")
        ),
        200,
    )
    .await;
    // …33 are not, with parentheses, relations or both
    for expr in [
        nested(33, "2021!=null"),
        nested_relations(33, 96, "5530!=null"),
        nested(16, &nested_relations(17, 96, "5530!=null")),
    ] {
        let m = s
            .expect_error(&format!("/vegobjekter/95/?egenskap={expr}"), 422, 4005)
            .await;
        assert!(m.contains("32"), "the message names the limit: {m}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expression_length_and_term_count_are_limited() {
    let s = TestServer::start().await;
    // 256 conditions are accepted and mean the same as one
    let or256 = vec!["2021!=null"; 256].join("%20OR%20");
    let a = s
        .get_json(
            &format!("/vegobjekter/105/statistikk/?egenskap={or256}"),
            200,
        )
        .await;
    let b = s
        .get_json("/vegobjekter/105/statistikk/?egenskap=2021!=null", 200)
        .await;
    assert_eq!(a, b);
    // 257 are not
    let or257 = vec!["2021!=null"; 257].join("%20OR%20");
    let m = s
        .expect_error(&format!("/vegobjekter/105/?egenskap={or257}"), 422, 4005)
        .await;
    assert!(m.contains("256"), "{m}");
    // more than 8,192 characters are refused before parsing, and the message does not echo them
    let long = format!("2021%20in%20[{}]", vec!["2738"; 2000].join(","));
    let m = s
        .expect_error(&format!("/vegobjekter/105/?egenskap={long}"), 422, 4005)
        .await;
    assert!(m.contains("8192") || m.contains("8 192"), "{m}");
    assert!(m.len() < 1_000, "message of {} bytes", m.len());
    // the same limits hold inside overlapp
    s.expect_error(
        &format!("/vegobjekter/95/?overlapp=105({or257})"),
        422,
        4005,
    )
    .await;
    s.expect_error(&format!("/vegobjekter/95/?overlapp=105({long})"), 422, 4005)
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_parameters_are_limited() {
    let s = TestServer::start().await;
    let overlaps = |n: usize| vec!["overlapp=105"; n].join("&");
    // 32 identical overlapp terms answer what one does
    let one = s
        .get_json("/vegobjekter/95/statistikk/?overlapp=105", 200)
        .await;
    let many = s
        .get_json(
            &format!("/vegobjekter/95/statistikk/?{}", overlaps(32)),
            200,
        )
        .await;
    assert_eq!(one, many);
    let m = s
        .expect_error(&format!("/vegobjekter/95/?{}", overlaps(33)), 422, 4006)
        .await;
    assert!(m.contains("32"), "{m}");
    let kommuner = vec!["5001"; 1001].join(",");
    let m = s
        .expect_error(&format!("/vegobjekter/95/?kommune={kommuner}"), 422, 4003)
        .await;
    assert!(m.contains("1000") || m.contains("1 000"), "{m}");
    let refs = vec!["Ev6"; 1001].join(",");
    s.expect_error(&format!("/vegobjekter/95/?vegreferanse={refs}"), 422, 4006)
        .await;
    // 1,000 of them are fine
    let kommuner = vec!["5001"; 1000].join(",");
    s.get_json(
        &format!("/vegobjekter/95/statistikk/?kommune={kommuner}"),
        200,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wide_overlapp_is_refused_fast_and_status_stays_responsive() {
    let _alone = TIMING.lock().await;
    let s = TestServer::start().await;
    // 4,500 × overlapp=105: a 58 KB URL
    let path = format!("/vegobjekter/95/?{}", vec!["overlapp=105"; 4_500].join("&"));
    let mut inflight = Vec::new();
    for _ in 0..4 {
        let (client, url) = (s.client.clone(), format!("{}{path}", s.base));
        inflight.push(tokio::spawn(async move {
            let t = Instant::now();
            let r = client.get(url).send().await.expect("request");
            let status = r.status().as_u16();
            let text = r.text().await.expect("body");
            let body: serde_json::Value = serde_json::from_str(&text)
                .unwrap_or_else(|e| panic!("{status}: not JSON ({e}): {text}"));
            (status, body, t.elapsed())
        }));
    }
    let mut worst = Duration::ZERO;
    for _ in 0..5 {
        worst = worst.max(status_answers(&s, Duration::from_millis(500)).await);
    }
    for h in inflight {
        let (status, body, took) = h.await.expect("task");
        assert_eq!(status, 422, "{body}");
        assert_eq!(body[0]["code"], 4006, "{body}");
        assert!(took < Duration::from_secs(2), "answered after {took:?}");
    }
    eprintln!("slowest /status while 4 wide requests were in flight: {worst:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expensive_evaluation_runs_off_the_async_workers() {
    let _alone = TIMING.lock().await;
    // 32 distinct overlapp terms with OR-chains of 100 scans each: within every limit, and
    // about the most work a URL under 64 KB can ask for
    let s = TestServer::start().await;
    let terms: Vec<String> = (0..32)
        .map(|i| {
            let conds: Vec<String> = (0..100).map(|k| format!("2021!={}", i * 100 + k)).collect();
            format!("overlapp=105({})", conds.join("%20OR%20"))
        })
        .collect();
    let path = format!("/vegobjekter/95/statistikk/?{}", terms.join("&"));
    let mut inflight = Vec::new();
    for _ in 0..4 {
        let (client, url) = (s.client.clone(), format!("{}{path}", s.base));
        inflight.push(tokio::spawn(async move {
            let r = client.get(url).send().await.expect("request");
            let status = r.status().as_u16();
            let text = r.text().await.expect("body");
            let body: serde_json::Value = serde_json::from_str(&text)
                .unwrap_or_else(|e| panic!("{status}: not JSON ({e}): {text}"));
            (status, body)
        }));
    }
    for _ in 0..5 {
        status_answers(&s, Duration::from_millis(500)).await;
    }
    // each answers, or (on a loaded machine) runs out of its 8 s budget: never anything else
    for h in inflight {
        let (status, body) = h.await.expect("task");
        match status {
            200 => assert!(body["antall"].is_u64(), "{body}"),
            503 => assert_eq!(body[0]["code"], 5003, "{body}"),
            other => panic!("{other}: {body}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exhausted_budget_is_a_503_in_the_api_error_shape() {
    let s = start_with_budget(Duration::ZERO).await;
    for path in [
        "/vegobjekter/105/?egenskap=2021!=null",
        "/vegobjekter/105/statistikk/?egenskap=2021!=null",
        "/vegobjekter/95/?overlapp=105",
        // a grouped answer within the same budget
        "/vegobjekter/105/statistikk/gruppert?gruppering=kommune&egenskap=2021!=null",
    ] {
        let m = s.expect_error(path, 503, 5003).await;
        assert!(m.contains("budsjett"), "{m}");
    }
    status_answers(&s, Duration::from_secs(5)).await;
    // a budget that is large enough answers normally
    let s = start_with_budget(Duration::from_secs(10)).await;
    s.get_json("/vegobjekter/95/?overlapp=105", 200).await;
}
