//! `wasmhub serve` listens before its plugins have loaded: while a plugin compiles
//! and runs `list()`, `/health` says "loading", `GET /api/plugins` lists it as
//! `loading`, and a call to its operation waits for it (up to
//! `limits.load_wait_ms`). The `gatedlist` guest's `list()` returns only when a
//! loopback "gate" server answers, so the test decides when loading ends.

use crate::support::client::{ClientResp, post, send};
use crate::support::runtime::{Scratch, read_request_head};
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::sync::oneshot;

/// A loopback server that takes one request and answers it when `open` fires.
async fn gate() -> (u16, oneshot::Sender<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let (open, opened) = oneshot::channel::<()>();
    tokio::spawn(async move {
        let (mut sock, _) = listener.accept().await.unwrap();
        let _ = read_request_head(&mut sock).await;
        let _ = opened.await;
        let _ = sock
            .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
            .await;
    });
    (port, open)
}

/// `wasmhub serve` on a folder holding the gated plugin `gated`, with `settings`
/// (`--set` values); returns once it listens.
fn serve_gated(dir: &Scratch, data: &Scratch, port: u16, settings: &[&str]) -> (Child, SocketAddr) {
    let manifest = format!("[network]\nallow = [\"127.0.0.1:{port}\"]\n[env]\nvars = [\"GATE_URL\"]\n");
    dir.plugin("gatedlist", "gated", Some(&manifest));
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_wasmhub"));
    cmd.env("WASMHUB_LOG", "info")
        .env("GATE_URL", format!("http://127.0.0.1:{port}/gate"))
        .args(["serve", "--listen", "127.0.0.1:0", "--plugins"])
        .arg(&dir.0)
        .arg("--data")
        .arg(&data.0);
    // `list()` runs within the lower of the first two: longer than any test waits.
    let always = ["limits.load_timeout_ms=600000", "limits.timeout_ms=600000"];
    for setting in always.iter().chain(settings) {
        cmd.args(["--set", setting]);
    }
    let mut child = cmd
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("start wasmhub serve");
    let (addr, _stderr) = crate::support::binary::listening(&mut child, Duration::from_secs(60));
    (child, addr)
}

async fn get(addr: SocketAddr, path: &str) -> (u16, Value) {
    let resp = send(addr, http::Method::GET, path, None, &[]).await;
    (resp.status.as_u16(), resp.json().await)
}

/// The state `GET /api/plugins` gives the plugin `name`.
async fn plugin_state(addr: SocketAddr, name: &str) -> String {
    let (_, body) = get(addr, "/api/plugins").await;
    let plugin = body["plugins"]
        .as_array()
        .and_then(|all| all.iter().find(|p| p["name"] == name))
        .unwrap_or_else(|| panic!("{name} is listed: {body}"));
    plugin["state"].as_str().expect("a state").to_string()
}

fn echo_call() -> Value {
    json!({"calls": [{"tool": "gated.echo", "input": {"said": "hello"}}]})
}

#[tokio::test]
async fn the_hub_listens_while_a_plugin_loads_and_a_call_waits_for_it() {
    let (dir, data) = (Scratch::new("loading-plugins"), Scratch::new("loading-data"));
    let (port, open) = gate().await;
    let (mut child, addr) = serve_gated(&dir, &data, port, &["limits.load_wait_ms=60000"]);

    // The gate holds `list()`, so the plugin cannot have loaded yet.
    let (status, health) = get(addr, "/health").await;
    assert_eq!(status, 200);
    assert_eq!(health["status"], "loading", "{health}");
    assert_eq!(health["plugins"]["loading"], 1, "{health}");
    assert_eq!(plugin_state(addr, "gated").await, "loading");
    // The readiness probe keeps traffic away until the load is done.
    let (status, ready) = get(addr, "/health?ready").await;
    assert_eq!(status, 503, "{ready}");
    assert_eq!(ready["status"], "loading", "{ready}");

    let call = tokio::spawn(async move { post(addr, "/api/hub/call", &echo_call()).await });
    // The call is waiting inside the hub (counted in flight) before loading ends.
    crate::support::wait::in_flight_at(addr, 1).await;
    assert_eq!(plugin_state(addr, "gated").await, "loading");
    open.send(()).expect("the gate server waits");

    let resp: ClientResp = call.await.expect("the call task");
    assert_eq!(resp.status, 200);
    let out = resp.json().await;
    assert_eq!(out["results"][0]["ok"], true, "{out}");
    assert_eq!(out["results"][0]["result"], json!({"said": "hello"}), "{out}");
    assert_eq!(plugin_state(addr, "gated").await, "active");
    let (_, health) = get(addr, "/health").await;
    assert_eq!(health["status"], "ok", "{health}");
    assert_eq!(health["plugins"]["active"], 1, "{health}");
    let (status, _) = get(addr, "/health?ready").await;
    assert_eq!(status, 200);
    let _ = child.kill();
    let _ = child.wait();
}

#[tokio::test]
async fn a_call_stops_waiting_for_a_loading_plugin_after_load_wait_ms() {
    let (dir, data) = (Scratch::new("loading-plugins"), Scratch::new("loading-data"));
    // The gate never opens while the call waits.
    let (port, _open) = gate().await;
    let (mut child, addr) = serve_gated(&dir, &data, port, &["limits.load_wait_ms=200"]);

    let out = post(addr, "/api/hub/call", &echo_call()).await.json().await;
    let error = &out["results"][0]["error"];
    assert_eq!(error["code"], "timeout", "{out}");
    assert!(
        error["message"]
            .as_str()
            .unwrap_or("")
            .contains("limits.load_wait_ms"),
        "{out}"
    );
    assert_eq!(plugin_state(addr, "gated").await, "loading");
    let _ = child.kill();
    let _ = child.wait();
}
