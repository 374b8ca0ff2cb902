//! Hub benchmarks (own timing loop, medians; run with `cargo bench --bench hub`):
//!
//! 1. `hub_call` overhead: a trivial operation (`noop` of the adversarial test
//!    guest) called directly through `Plugin::call`, then through
//!    `Hub::invoke` of `hub_call` (argument validation, registry lookup, input schema
//!    validation, call id, graph frame, metrics, audit record), interleaved; the
//!    overhead is the difference of the medians. Target ≤ 10 µs.
//! 2. `hub_search` ranking over 1,008 operations (the relevance corpus under nine
//!    namespaces), the 56 corpus queries in turn. Target median ≤ 100 µs.
//! 3. `hub_call` throughput in process: 64 concurrent callers of the trivial
//!    operation through `Hub::invoke`, with the audit log on disk; calls/s. The
//!    ceiling every HTTP surface works under.
//! 4. REST `hub_call` of the trivial operation against the real `wasmhub serve`
//!    over loopback: 64 concurrent keep-alive clients for a fixed time;
//!    requests/s and latency percentiles. Client and server share the machine.

use http_body_util::{BodyExt, Full};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use wasmhub::config::Config;
use wasmhub::hub::{CallContext, Hub, MetaToolRequest};
use wasmhub::hub::{SearchDoc, SearchIndex};
use wasmhub::runtime::{Invocation, NoNestedCalls};
use wasmhub::storage::{Backend, Storage};
use wasmtime_wasi_http::io::TokioIo;

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf();
    let guest = test_guest(&root);
    let plugins = scratch(&root, "bench-plugins");
    std::fs::copy(&guest, plugins.join("a.wasm")).unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(call_overhead(&plugins));
    rt.block_on(call_throughput(&root, &plugins));
    search_latency(&root);
    rt.block_on(rest_load(&root, &plugins));
    let _ = std::fs::remove_dir_all(&plugins);
}

/// `target/test-guests/adversary.wasm`, built by `tests/guests/build.sh` if missing.
fn test_guest(root: &Path) -> PathBuf {
    let path = root.join("target/test-guests/adversary.wasm");
    if !path.exists() {
        let ok = std::process::Command::new("bash")
            .arg(root.join("tests/guests/build.sh"))
            .status()
            .unwrap()
            .success();
        assert!(ok, "tests/guests/build.sh failed");
    }
    path
}

fn scratch(root: &Path, tag: &str) -> PathBuf {
    let dir = root.join("target/test-scratch").join(wasmhub::ids::new_id(tag));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The `hub_call` request for `args`, read and validated as a surface does on
/// every call (so the timings include it).
fn call_request(args: &Value) -> MetaToolRequest {
    MetaToolRequest::parse("hub_call", args.clone()).unwrap()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

async fn call_overhead(plugins: &Path) {
    let config = Config {
        plugins_dir: plugins.to_path_buf(),
        ..Config::default()
    };
    let (hub, _watcher) = Hub::start(&config, Backend::temporary().unwrap(), None)
        .await
        .unwrap();
    let plugin = hub.runtime().load(&plugins.join("a.wasm")).await.unwrap();
    let args = json!({"calls": [{"tool": "a.noop", "input": {}}]});
    let direct = || async {
        let inv = Invocation {
            tenant: "test".into(),
            call_id: "bench".into(),
            deadline: (tokio::time::Instant::now() + Duration::from_secs(10)).into(),
            trace: None,
            nested: Arc::new(NoNestedCalls),
        };
        let t = Instant::now();
        plugin.call("noop", "{}", inv).await.unwrap();
        t.elapsed().as_secs_f64() * 1e6
    };
    let through_hub = || async {
        let t = Instant::now();
        let out = hub
            .invoke(call_request(&args), CallContext::new(hub.local_operator()))
            .await
            .unwrap();
        let us = t.elapsed().as_secs_f64() * 1e6;
        assert_eq!(out["results"][0]["ok"], true);
        us
    };
    for _ in 0..300 {
        direct().await;
        through_hub().await;
    }
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for _ in 0..5000 {
        a.push(direct().await);
        b.push(through_hub().await);
    }
    let (da, db) = (median(a), median(b));
    println!(
        "hub_call overhead: Plugin::call median {da:.1} µs, hub_call median {db:.1} µs, overhead {:.1} µs (5000 interleaved runs each)",
        db - da
    );
}

async fn call_throughput(root: &Path, plugins: &Path) {
    const CALLERS: usize = 64;
    const RUN: Duration = Duration::from_secs(5);
    let data = scratch(root, "bench-throughput");
    let config = Config {
        plugins_dir: plugins.to_path_buf(),
        ..Config::default()
    };
    let (hub, _watcher) = Hub::start(&config, Backend::Embedded(Storage::open(&data).unwrap()), None)
        .await
        .unwrap();
    let hub = Arc::new(hub);
    let args = json!({"calls": [{"tool": "a.echo", "input": {"text": "hi"}}]});
    let run = |until: Instant| {
        let mut tasks = tokio::task::JoinSet::new();
        for _ in 0..CALLERS {
            let (hub, args) = (hub.clone(), args.clone());
            tasks.spawn(async move {
                let mut n = 0u64;
                while Instant::now() < until {
                    let out = hub
                        .invoke(call_request(&args), CallContext::new(hub.local_operator()))
                        .await
                        .unwrap();
                    assert_eq!(out["results"][0]["ok"], true);
                    n += 1;
                }
                n
            });
        }
        tasks
    };
    run(Instant::now() + Duration::from_secs(1)).join_all().await;
    let started = Instant::now();
    let calls: u64 = run(started + RUN).join_all().await.into_iter().sum();
    println!(
        "hub_call throughput in process: {:.0} calls/s ({CALLERS} concurrent callers, {calls} calls, audit on disk)",
        calls as f64 / started.elapsed().as_secs_f64()
    );
    drop(hub);
    let _ = std::fs::remove_dir_all(&data);
}

fn search_latency(root: &Path) {
    let corpus: Value = serde_json::from_str(
        &std::fs::read_to_string(root.join("host/tests/data/search_corpus.json")).unwrap(),
    )
    .unwrap();
    let mut ops: Vec<(String, String, Value)> = Vec::new();
    for copy in 0..9 {
        for op in corpus["operations"].as_array().unwrap() {
            let tool = op["tool"].as_str().unwrap();
            let (ns, name) = tool.split_once('.').unwrap();
            let properties: serde_json::Map<String, Value> = op["properties"]
                .as_object()
                .unwrap()
                .iter()
                .map(|(k, d)| (k.clone(), json!({"type": "string", "description": d})))
                .collect();
            ops.push((
                format!(
                    "{ns}{}.{name}",
                    if copy == 0 {
                        String::new()
                    } else {
                        copy.to_string()
                    }
                ),
                op["description"].as_str().unwrap().to_string(),
                json!({"type": "object", "properties": properties}),
            ));
        }
    }
    let started = Instant::now();
    let index = SearchIndex::build(ops.iter().map(|(tool, description, schema)| SearchDoc {
        tool,
        description,
        input_schema: schema,
    }));
    let build_ms = started.elapsed().as_secs_f64() * 1e3;
    let queries: Vec<&str> = corpus["queries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| q["q"].as_str().unwrap())
        .collect();
    let mut samples = Vec::new();
    for round in 0..200 {
        for q in &queries {
            let t = Instant::now();
            let hits = index.search(q, None, 10, |_| true);
            let us = t.elapsed().as_secs_f64() * 1e6;
            std::hint::black_box(hits);
            if round >= 20 {
                samples.push(us);
            }
        }
    }
    samples.sort_by(f64::total_cmp);
    println!(
        "hub_search over {} operations: median {:.1} µs, p99 {:.1} µs ({} queries; index built in {build_ms:.1} ms)",
        index.len(),
        percentile(&samples, 0.5),
        percentile(&samples, 0.99),
        samples.len()
    );
}

async fn rest_load(root: &Path, plugins: &Path) {
    let data = scratch(root, "bench-data");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_wasmhub"))
        .args(["serve", "--listen", "127.0.0.1:0", "--plugins"])
        .arg(plugins)
        .arg("--data")
        .arg(&data)
        .env("WASMHUB_LOG", "info")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start wasmhub serve");
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(addr) = line.split("listening on http://").nth(1) {
                let _ = tx.send(addr.trim().to_string());
            }
        }
    });
    let addr: std::net::SocketAddr = rx
        .recv_timeout(Duration::from_secs(120))
        .unwrap()
        .parse()
        .unwrap();
    let body =
        bytes::Bytes::from(serde_json::to_vec(&json!({"calls": [{"tool": "a.noop", "input": {}}]})).unwrap());
    const CLIENTS: usize = 64;
    let warmup = Duration::from_secs(1);
    let measure = Duration::from_secs(5);
    let start = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..CLIENTS {
        let body = body.clone();
        tasks.push(tokio::spawn(async move {
            let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
            tcp.set_nodelay(true).unwrap();
            let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
                .await
                .unwrap();
            tokio::spawn(conn);
            let mut latencies = Vec::new();
            while start.elapsed() < warmup + measure {
                let req = http::Request::post("/api/hub/call")
                    .header("host", addr.to_string())
                    .header("content-type", "application/json")
                    .body(Full::new(body.clone()))
                    .unwrap();
                let t = Instant::now();
                let resp = sender.send_request(req).await.unwrap();
                assert_eq!(resp.status(), 200);
                let _ = resp.into_body().collect().await.unwrap();
                if start.elapsed() > warmup {
                    latencies.push(t.elapsed().as_secs_f64() * 1e3);
                }
            }
            latencies
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&data);
    all.sort_by(f64::total_cmp);
    println!(
        "REST hub_call over loopback, {CLIENTS} keep-alive clients, {}s: {:.0} requests/s, latency p50 {:.2} ms, p99 {:.2} ms",
        measure.as_secs(),
        all.len() as f64 / measure.as_secs_f64(),
        percentile(&all, 0.5),
        percentile(&all, 0.99)
    );
}
