//! MCP against the real `wasmhub` binary with the example plugins: both revisions
//! over Streamable HTTP with two tokens (one allowed `*`, one only `text.*`), a
//! stdio session of `wasmhub mcp --stdio`, and a stdio server that answers at once
//! with an empty data folder while its plugins still load. (The real SDK clients
//! and the official conformance suite run in tests/mcp/run.sh.)

use crate::support::client::{ClientResp, send};
use crate::support::gate::Gate;
use crate::support::hub::plugins;
use crate::support::runtime::Scratch;
use bytes::Bytes;
use http::Method;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const ALL: &str = "e2e-mcp-secret-all";
const TEXT: &str = "e2e-mcp-secret-text";
const META: &str = "_meta";

struct Served {
    child: Child,
    addr: SocketAddr,
    _dirs: (Scratch, Scratch),
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve_with_tokens() -> Served {
    let dir = plugins(&[], &["text", "calc"]);
    let data = Scratch::new("mcp-data");
    std::fs::write(data.path("all.secret"), ALL).unwrap();
    std::fs::write(data.path("text.secret"), TEXT).unwrap();
    let config = format!(
        "[[tokens]]\nname = \"all\"\nsecret_file = {:?}\nallow = [\"*\"]\n\n\
         [[tokens]]\nname = \"text-only\"\nsecret_file = {:?}\nallow = [\"text.*\"]\n",
        data.path("all.secret"),
        data.path("text.secret"),
    );
    std::fs::write(data.path("wasmhub.toml"), config).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_wasmhub"))
        .args(["serve", "--listen", "127.0.0.1:0", "--config"])
        .arg(data.path("wasmhub.toml"))
        .arg("--plugins")
        .arg(&dir.0)
        .arg("--data")
        .arg(data.path("store"))
        .env("WASMHUB_LOG", "info")
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("start wasmhub serve");
    let addr = crate::support::binary::listen_addr(&mut child, Duration::from_secs(120));
    Served {
        child,
        addr,
        _dirs: (dir, data),
    }
}

async fn post(addr: SocketAddr, body: &Value, headers: &[(&str, &str)]) -> ClientResp {
    let mut all = vec![("accept", "application/json, text/event-stream")];
    all.extend_from_slice(headers);
    send(
        addr,
        Method::POST,
        "/mcp",
        Some(Bytes::from(body.to_string())),
        &all,
    )
    .await
}

fn stateless(method: &str, mut params: Value) -> Value {
    params[META] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params })
}

#[tokio::test]
async fn both_revisions_over_http_with_token_allowlists() {
    let hub = serve_with_tokens();
    let bearer_all = format!("Bearer {ALL}");
    let bearer_text = format!("Bearer {TEXT}");

    // 2025-11-25: handshake, session, tools/list from the hub's definition, a real call.
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "e2e", "version": "1"}}});
    let r = post(hub.addr, &init, &[]).await;
    assert_eq!(r.status, 401, "no token");
    assert!(r.header("www-authenticate").unwrap().starts_with("Bearer"));
    let r = post(hub.addr, &init, &[("authorization", &bearer_all)]).await;
    assert_eq!(r.status, 200);
    let sid = r.header("mcp-session-id").expect("a session id").to_string();
    assert_eq!(r.json().await["result"]["protocolVersion"], "2025-11-25");
    let session = [
        ("authorization", bearer_all.as_str()),
        ("mcp-session-id", &sid),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let list = post(
        hub.addr,
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        &session,
    )
    .await
    .json()
    .await;
    let tools = list["result"]["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["hub_list", "hub_search", "hub_schema", "hub_call"]);
    for t in tools {
        assert_eq!(t["inputSchema"]["type"], "object");
        assert_eq!(t["outputSchema"]["type"], "object");
        assert!(t["annotations"]["readOnlyHint"].is_boolean());
    }
    let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "hub_call",
        "arguments": {"calls": [{"tool": "text.slugify", "input": {"text": "Over MCP"}}]}}});
    let out = post(hub.addr, &call, &session).await.json().await;
    assert_eq!(
        out["result"]["structuredContent"]["results"][0]["result"]["slug"], "over-mcp",
        "{out}"
    );
    // Another token cannot use this session.
    let stolen = [("authorization", bearer_text.as_str()), ("mcp-session-id", &sid)];
    assert_eq!(post(hub.addr, &call, &stolen).await.status, 404);
    let bye = send(hub.addr, Method::DELETE, "/mcp", None, &session).await;
    assert_eq!(bye.status, 204);
    assert_eq!(post(hub.addr, &call, &session).await.status, 404);

    // 2026-07-28: stateless, with the text-only token.
    let post_stateless = |method: &'static str, name: Option<&'static str>, params: Value| {
        let bearer = bearer_text.clone();
        async move {
            let mut h = vec![
                ("authorization", bearer.as_str()),
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-method", method),
            ];
            if let Some(n) = name {
                h.push(("mcp-name", n));
            }
            post(hub.addr, &stateless(method, params), &h).await
        }
    };
    let d = post_stateless("server/discover", None, json!({})).await;
    assert_eq!(d.status, 200);
    assert!(d.header("mcp-session-id").is_none());
    assert_eq!(d.json().await["result"]["supportedVersions"][0], "2026-07-28");

    let forbidden = json!({"name": "hub_call", "arguments": {"calls": [{"tool": "calc.eval", "input": {"expression": "1+2"}}]}});
    let out = post_stateless("tools/call", Some("hub_call"), forbidden)
        .await
        .json()
        .await;
    assert_eq!(out["result"]["isError"], true, "{out}");
    assert_eq!(out["result"]["resultType"], "complete");
    assert_eq!(
        out["result"]["structuredContent"]["results"][0]["error"]["code"], "forbidden",
        "{out}"
    );

    let bad = json!({"name": "hub_call", "arguments": {"calls": "not a list"}});
    let out = post_stateless("tools/call", Some("hub_call"), bad)
        .await
        .json()
        .await;
    assert_eq!(
        out["result"]["isError"], true,
        "bad arguments are a tool result: {out}"
    );
    assert!(
        out["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("invalid_input"),
        "{out}"
    );

    let r = post_stateless(
        "tools/call",
        Some("no_such_tool"),
        json!({"name": "no_such_tool"}),
    )
    .await;
    assert_eq!(r.status, 400);
    assert_eq!(
        r.json().await["error"]["code"],
        -32602,
        "an unknown tool is a JSON-RPC error"
    );

    let r = post_stateless("ping", None, json!({})).await;
    assert_eq!(r.status, 404, "ping is not part of 2026-07-28");

    // DNS rebinding: a foreign Host is refused before anything else.
    let r = send(
        hub.addr,
        Method::POST,
        "/mcp",
        Some(Bytes::from(init.to_string())),
        &[("origin", "http://evil.example")],
    )
    .await;
    assert_eq!(r.status, 403);
}

#[test]
fn stdio_serves_one_session_and_keeps_stdout_for_the_protocol() {
    let dir = plugins(&[], &["text"]);
    let data = Scratch::new("mcp-stdio");
    let mut child = Command::new(env!("CARGO_BIN_EXE_wasmhub"))
        .args(["mcp", "--stdio", "--plugins"])
        .arg(&dir.0)
        .arg("--data")
        .arg(data.path("store"))
        // The call below may come while `text` still compiles: it waits for it.
        .args(["--set", "limits.load_wait_ms=600000"])
        .env("WASMHUB_LOG", "info")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start wasmhub mcp --stdio");
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut next = || -> Value {
        let line = lines.next().expect("a line").expect("readable stdout");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("stdout carries only JSON-RPC ({e}): {line}"))
    };
    let messages = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "e2e", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "hub.call", "arguments": {"calls": [{"tool": "text.slugify", "input": {"text": "Stdio Works"}}]}}}),
    ];
    for m in &messages {
        writeln!(stdin, "{m}").unwrap();
    }
    stdin.flush().unwrap();
    let init = next();
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18");
    let out = next();
    assert_eq!(out["id"], 2);
    assert_eq!(
        out["result"]["structuredContent"]["results"][0]["result"]["slug"], "stdio-works",
        "{out}"
    );
    drop(stdin);
    let status = child.wait().unwrap();
    assert!(
        status.success(),
        "closing stdin ends the server cleanly: {status}"
    );
}

/// The JSON-RPC messages a child writes to stdout, one per line, read on a thread.
struct StdoutLines(std::sync::mpsc::Receiver<String>);

impl StdoutLines {
    fn read(child: &mut Child) -> StdoutLines {
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        StdoutLines(rx)
    }

    /// The response with `id`, skipping others (requests run concurrently, so
    /// answers may come in any order); the bound only keeps a broken server from
    /// hanging the test.
    fn response(&self, id: u64, skipped: &mut Vec<Value>) -> Value {
        if let Some(i) = skipped.iter().position(|m| m["id"] == id) {
            return skipped.remove(i);
        }
        loop {
            let line = self
                .0
                .recv_timeout(Duration::from_secs(120))
                .unwrap_or_else(|e| panic!("no response {id} ({e}); other messages: {skipped:?}"));
            let m: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("stdout carries only JSON-RPC ({e}): {line}"));
            if m["id"] == id {
                return m;
            }
            skipped.push(m);
        }
    }
}

/// The operations a `hub_list` response names.
fn listed_tools(response: &Value) -> Vec<String> {
    response["result"]["structuredContent"]["operations"]
        .as_array()
        .unwrap_or_else(|| panic!("a hub_list result: {response}"))
        .iter()
        .map(|op| op["tool"].as_str().expect("a tool name").to_string())
        .collect()
}

fn hub_call(id: u64, tool: &str, input: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "hub_call", "arguments": {"calls": [{"tool": tool, "input": input}]}}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_answers_at_once_with_an_empty_data_folder_and_calls_wait_for_their_plugin() {
    // The example plugins, and `gated`, whose `list()` returns only once the gate
    // opens: until then the first load provably is not over.
    let dir = plugins(&[], &["calc", "text"]);
    let gate = Gate::start().await;
    let manifest = format!("{}[env]\nvars = [\"GATE_URL\"]\n", gate.grant());
    dir.plugin("gatedlist", "gated", Some(&manifest));
    let data = Scratch::new("mcp-stdio-cold");
    assert!(!data.path("store").exists(), "no compiled cache to start from");
    let mut child = Command::new(env!("CARGO_BIN_EXE_wasmhub"))
        .args(["mcp", "--stdio", "--plugins"])
        .arg(&dir.0)
        .arg("--data")
        .arg(data.path("store"))
        // A call waits for a loading plugin longer than any test runs.
        .args([
            "--set",
            "limits.load_wait_ms=600000",
            "--set",
            "limits.load_timeout_ms=600000",
        ])
        .args(["--set", "limits.timeout_ms=600000"])
        .env("GATE_URL", format!("http://{}/gate", gate.authority()))
        .env("WASMHUB_LOG", "info")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start wasmhub mcp --stdio");
    let mut stdin = child.stdin.take().unwrap();
    let out = StdoutLines::read(&mut child);
    let mut skipped = Vec::new();
    let mut send = |m: Value| {
        writeln!(stdin, "{m}").unwrap();
        stdin.flush().unwrap();
    };

    send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "e2e", "version": "1"}}}),
    );
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    send(json!({"jsonrpc": "2.0", "id": 2, "method": "ping"}));
    send(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}));
    send(
        json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "hub_list", "arguments": {}}}),
    );
    let init = out.response(1, &mut skipped);
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25", "{init}");
    assert_eq!(out.response(2, &mut skipped)["result"], json!({}));
    let tools = out.response(3, &mut skipped);
    let names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{tools}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["hub_list", "hub_search", "hub_schema", "hub_call"]);
    // The gate holds `gated`'s `list()`: its load has begun and cannot end until
    // the gate opens, so everything above was answered before the first load was
    // over, and `hub_list` (answered now) does not know `gated.echo` yet.
    gate.holds(1).await;
    assert!(!listed_tools(&out.response(4, &mut skipped)).contains(&"gated.echo".to_string()));

    // calc compiles from nothing (no cache) and answers its call once it has.
    send(hub_call(5, "calc.eval", json!({"expression": "6*7"})));
    let calc = out.response(5, &mut skipped);
    let result = &calc["result"]["structuredContent"]["results"][0];
    assert_eq!(result["ok"], true, "{calc}");
    assert_eq!(result["result"]["decimal"], "42", "{calc}");

    // A call to the still-loading plugin waits for it: it is read (the ping after
    // it is answered) while the gate is closed, and answers once the gate opens.
    send(hub_call(6, "gated.echo", json!({"said": "hello"})));
    send(json!({"jsonrpc": "2.0", "id": 7, "method": "ping"}));
    assert_eq!(out.response(7, &mut skipped)["result"], json!({}));
    gate.open();
    let echoed = out.response(6, &mut skipped);
    let result = &echoed["result"]["structuredContent"]["results"][0];
    assert_eq!(result["ok"], true, "{echoed}");
    assert_eq!(result["result"], json!({"said": "hello"}), "{echoed}");
    send(
        json!({"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {"name": "hub_list", "arguments": {}}}),
    );
    let listed = listed_tools(&out.response(8, &mut skipped));
    // (`text` may still be compiling: this asks only about the two that answered.)
    for tool in ["calc.eval", "gated.echo"] {
        assert!(
            listed.contains(&tool.to_string()),
            "{tool} once loaded: {listed:?}"
        );
    }

    drop(stdin);
    let status = child.wait().unwrap();
    assert!(status.success(), "closing stdin ends the server: {status}");
}
