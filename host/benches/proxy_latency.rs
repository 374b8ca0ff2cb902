//! Latency the hub adds to each streamed chunk
//! (`cargo bench -p wasmhub --bench proxy_latency`).
//!
//! A local upstream streams chunks whose content is the time they were written; a
//! client reads them directly, through `/v1/chat/completions`, and through
//! `/api/ui/chat/completions` of an in-process hub, and records write-to-read time
//! per chunk. The hub's added latency is the through-hub percentile minus the
//! direct one. Everything runs on 127.0.0.1 in this process.
//!
//! The last lines, `RESULT proxy_added_p99_us=<n>` and `RESULT ui_added_p99_us=<n>`,
//! are what `bench/llm.sh` reads.

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::sync::OnceLock;
use std::time::{Duration, Instant};
use wasmhub::sse;
use wasmhub::surfaces::Body;
use wasmtime_wasi_http::io::TokioIo;

const STREAMS: usize = 20;
const CHUNKS: usize = 200;
const GAP: Duration = Duration::from_millis(1);

fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

fn now_ns() -> u64 {
    epoch().elapsed().as_nanos() as u64
}

/// The upstream: every request gets CHUNKS chunks, GAP apart, each carrying its
/// write time, then a finish chunk and `[DONE]`.
async fn upstream() -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            stream.set_nodelay(true).unwrap();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(|_req: Request<Incoming>| async {
                    let (tx, body) = Body::channel(4);
                    tokio::spawn(async move {
                        for _ in 0..CHUNKS {
                            tokio::time::sleep(GAP).await;
                            let chunk = json!({"id": "b", "object": "chat.completion.chunk", "model": "bench",
                                "choices": [{"index": 0, "delta": {"content": now_ns().to_string()}, "finish_reason": null}]});
                            let mut buf = Vec::new();
                            sse::write_json(&mut buf, &chunk);
                            if tx.send(Bytes::from(buf)).await.is_err() {
                                return;
                            }
                        }
                        let finish = json!({"id": "b", "object": "chat.completion.chunk", "model": "bench",
                            "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]});
                        let mut buf = Vec::new();
                        sse::write_json(&mut buf, &finish);
                        buf.extend_from_slice(sse::DONE);
                        let _ = tx.send(Bytes::from(buf)).await;
                    });
                    let mut resp = Response::new(body);
                    resp.headers_mut()
                        .insert("content-type", "text/event-stream".parse().unwrap());
                    Ok::<_, std::convert::Infallible>(resp)
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    addr
}

/// The in-process hub, built exactly as the end-to-end tests build it.
#[path = "../tests/e2e/support/mod.rs"]
#[allow(dead_code)]
mod support;
use support::hub;

/// Streams one request and returns the write-to-read latency of each chunk, in µs.
async fn stream_once(addr: SocketAddr, path: &str) -> Vec<f64> {
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    tcp.set_nodelay(true).unwrap();
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
        .await
        .unwrap();
    tokio::spawn(conn);
    let body = json!({"model": "bench", "messages": [{"role": "user", "content": "x"}], "stream": true});
    let req = Request::post(path)
        .header("host", addr.to_string())
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(serde_json::to_vec(&body).unwrap())))
        .unwrap();
    let mut resp = sender.send_request(req).await.unwrap().into_body();
    let mut parser = sse::Parser::new(1 << 20);
    let mut out = Vec::with_capacity(CHUNKS);
    while let Some(frame) = resp.frame().await {
        let Ok(data) = frame.unwrap().into_data() else {
            continue;
        };
        let read_at = now_ns();
        parser
            .feed(&data, &mut |e| {
                let Ok(v) = serde_json::from_str::<Value>(e.data) else {
                    return;
                };
                // OpenAI chunk (direct, /v1) or UI text-delta (/api/ui).
                let sent = v["choices"][0]["delta"]["content"]
                    .as_str()
                    .or(v["delta"].as_str());
                if let Some(sent) = sent.and_then(|s| s.parse::<u64>().ok()) {
                    out.push((read_at - sent) as f64 / 1000.0);
                }
            })
            .unwrap();
    }
    assert_eq!(out.len(), CHUNKS, "{path}: every chunk arrived");
    out
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

async fn measure(addr: SocketAddr, path: &str) -> (f64, f64) {
    stream_once(addr, path).await; // warm-up: connections, pool
    let mut all = Vec::with_capacity(STREAMS * CHUNKS);
    for _ in 0..STREAMS {
        all.extend(stream_once(addr, path).await);
    }
    all.sort_by(|a, b| a.partial_cmp(b).unwrap());
    (percentile(&all, 0.5), percentile(&all, 0.99))
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        epoch();
        let up = upstream().await;
        let hub_running = hub::start(vec![hub::provider("b", &format!("http://{up}/v1"), &["*"], "")]).await;
        let hub = hub_running.addr;
        let direct = measure(up, "/v1/chat/completions").await;
        let proxy = measure(hub, "/v1/chat/completions").await;
        let ui = measure(hub, "/api/ui/chat/completions").await;
        println!("write-to-read latency per chunk, {STREAMS} streams x {CHUNKS} chunks, {GAP:?} apart (µs)");
        println!("  {:<34} {:>8} {:>8}", "", "p50", "p99");
        for (name, (p50, p99)) in [
            ("direct from the upstream", direct),
            ("through /v1/chat/completions", proxy),
            ("through /api/ui/chat/completions", ui),
        ] {
            println!("  {name:<34} {p50:>8.1} {p99:>8.1}");
        }
        println!(
            "  added by the hub (p99): proxy {:.1} µs, UI stream {:.1} µs",
            proxy.1 - direct.1,
            ui.1 - direct.1
        );
        println!("RESULT proxy_added_p99_us={:.1}", proxy.1 - direct.1);
        println!("RESULT ui_added_p99_us={:.1}", ui.1 - direct.1);
    });
}
