//! The outbound HTTP policy against a local server on 127.0.0.1: an IP-literal grant
//! reaches it; a host-name grant that resolves to loopback, an ungranted host and an
//! ungranted port are refused before any connection is made.

use crate::support::runtime::*;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tokio::io::AsyncWriteExt;
use wasmhub::runtime::{CallFailure, ErrorCode};

/// A one-route HTTP/1.1 server answering `hello`; counts connections. With `hang`,
/// it accepts and never answers.
async fn server(hang: bool) -> (u16, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let count = Arc::new(AtomicUsize::new(0));
    let seen = count.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            seen.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                let Some(buf) = read_request_head(&mut sock).await else {
                    return;
                };
                if hang {
                    tokio::time::sleep(Duration::from_secs(30)).await;
                    return;
                }
                let head = String::from_utf8_lossy(&buf).to_string();
                let host = head
                    .lines()
                    .find_map(|l| l.strip_prefix("host: ").or(l.strip_prefix("Host: ")))
                    .unwrap_or("");
                let body = format!("hello {host}");
                let reply = format!(
                    "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = sock.write_all(reply.as_bytes()).await;
            });
        }
    });
    (port, count)
}

fn get(url: &str) -> String {
    format!("{{\"url\":\"{url}\"}}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ip_literal_grant_reaches_the_local_server() {
    let (port, count) = server(false).await;
    let s = Scratch::new("net-ok");
    let manifest = format!("[network]\nallow = [\"127.0.0.1:{port}\"]\n");
    let p = runtime()
        .load(&s.plugin("fetcher", "fetcher", Some(&manifest)))
        .await
        .unwrap();
    let out = p
        .call("get", &get(&format!("http://127.0.0.1:{port}/x")), inv())
        .await
        .unwrap();
    assert_eq!(
        out.json,
        format!("{{\"body\":\"hello 127.0.0.1:{port}\",\"status\":200}}")
    );
    assert_eq!(count.load(Ordering::SeqCst), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_name_grant_that_resolves_to_loopback_is_refused() {
    let (port, count) = server(false).await;
    let s = Scratch::new("net-rebind");
    let manifest = format!("[network]\nallow = [\"localhost:{port}\"]\n");
    let p = runtime()
        .load(&s.plugin("fetcher", "fetcher", Some(&manifest)))
        .await
        .unwrap();
    let err = p
        .call("get", &get(&format!("http://localhost:{port}/")), inv())
        .await
        .unwrap_err();
    match &err {
        CallFailure::Plugin {
            code: ErrorCode::PluginError,
            message,
        } => {
            assert!(message.contains("DestinationIpProhibited"), "{message}")
        }
        other => panic!("expected the guest to see DestinationIpProhibited, got {other:?}"),
    }
    assert_eq!(count.load(Ordering::SeqCst), 0, "no connection may be made");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ungranted_hosts_and_ports_are_denied_before_connecting() {
    let (port, count) = server(false).await;
    let s = Scratch::new("net-deny");
    let manifest = format!(
        "[network]\nallow = [\"example.com\", \"127.0.0.1:{}\"]\n",
        port.wrapping_add(1).max(1)
    );
    let p = runtime()
        .load(&s.plugin("fetcher", "fetcher", Some(&manifest)))
        .await
        .unwrap();
    for url in [
        format!("http://127.0.0.1:{port}/"),
        format!("http://[::1]:{port}/"),
        "http://example.org/".to_string(),
        "http://example.com:8080/".to_string(),
    ] {
        let err = p.call("get", &get(&url), inv()).await.unwrap_err();
        assert_eq!(
            err,
            CallFailure::Plugin {
                code: ErrorCode::Forbidden,
                message: "HTTP request denied".into()
            },
            "{url}"
        );
    }
    assert_eq!(count.load(Ordering::SeqCst), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_answers_is_cut_at_the_call_deadline() {
    let (port, _) = server(true).await;
    let s = Scratch::new("net-hang");
    let manifest = format!("[network]\nallow = [\"127.0.0.1:{port}\"]\n[limits]\ntimeout_ms = 300\n");
    let p = runtime()
        .load(&s.plugin("fetcher", "fetcher", Some(&manifest)))
        .await
        .unwrap();
    let started = Instant::now();
    let err = p
        .call("get", &get(&format!("http://127.0.0.1:{port}/")), inv())
        .await
        .unwrap_err();
    assert!(
        matches!(err, CallFailure::Timeout { limit_ms: 300 }) || err.to_string().contains("Timeout"),
        "{err:?}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
}
