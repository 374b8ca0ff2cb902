//! External MCP servers (`[[mcp_servers]]`) behind the four meta-tools, with a
//! scripted server (`tests/data/mcp/fake_server.py`, over stdio and over
//! Streamable HTTP) beside a Wasm plugin: its tools are found, described and
//! called through the one call protocol (schemas, allowlists, approvals from the
//! annotations, audit records), `tools/list_changed` is seen, and each hostile
//! tool (a hang, a giant result, a flood, a line that is not JSON, a crash) and
//! hostile server (a crash loop, one that never answers) hits its own bound while
//! the Wasm operation keeps answering. Calls past `max_concurrent` wait in the
//! hub for a place while the server holds the others (at a `support::gate`).

use crate::support::hub::{Server, plugins, serve};
use crate::support::runtime::{Scratch, repo_root};
use crate::support::wait::{until, until_seen};
use http::Method;
use serde_json::{Value, json};
use wasmhub::config::{Config, McpServerConfig, TokenConfig};

pub(crate) fn script() -> String {
    repo_root()
        .join("host/tests/data/mcp/fake_server.py")
        .display()
        .to_string()
}

/// A `[[mcp_servers]]` entry from TOML lines after `name`.
pub(crate) fn server(name: &str, rest: &str) -> McpServerConfig {
    let text = format!("[[mcp_servers]]\nname = \"{name}\"\n{rest}");
    Config::parse(&text, std::path::Path::new("test.toml"))
        .expect("a valid entry")
        .mcp_servers
        .remove(0)
}

/// The fake server over stdio, with `extra` keys.
pub(crate) fn stdio_server(name: &str, extra: &str) -> McpServerConfig {
    server(
        name,
        &format!(
            "transport = \"stdio\"\ncommand = \"python3\"\nargs = [\"{}\"]\nrestart_min_ms = 50\n{extra}",
            script()
        ),
    )
}

pub(crate) async fn call(s: &Server, token: Option<&str>, tool: &str, input: Value) -> Value {
    let body = json!({ "calls": [{ "tool": tool, "input": input }] });
    let resp = s.request(Method::POST, "/api/hub/call", Some(&body), token).await;
    assert_eq!(resp.status.as_u16(), 200);
    resp.json().await["results"][0].clone()
}

/// `POST path` with `body` and `token`: the JSON answer.
async fn post(s: &Server, token: Option<&str>, path: &str, body: Value) -> Value {
    let resp = s.request(Method::POST, path, Some(&body), token).await;
    assert_eq!(resp.status.as_u16(), 200, "{path}");
    resp.json().await
}

/// `GET /api/mcp-servers`' entry for `name`, as the operator of a hub with tokens.
async fn status_as(s: &Server, token: Option<&str>, name: &str) -> Value {
    let all = s
        .request(Method::GET, "/api/mcp-servers", None, token)
        .await
        .json()
        .await;
    let servers = all["servers"].as_array().cloned().unwrap_or_default();
    servers
        .into_iter()
        .find(|e| e["name"] == name)
        .unwrap_or(Value::Null)
}

/// `GET /api/mcp-servers`' entry for `name`, as the loopback operator.
pub(crate) async fn status(s: &Server, name: &str) -> Value {
    status_as(s, None, name).await
}

/// Waits until `name` is active after at least `restarts` restarts.
pub(crate) async fn active(s: &Server, name: &str, restarts: u64) -> Value {
    active_as(s, None, name, restarts).await
}

async fn active_as(s: &Server, token: Option<&str>, name: &str, restarts: u64) -> Value {
    until_seen(&format!("{name} active"), || async {
        let e = status_as(s, token, name).await;
        let ready = e["state"] == "active" && e["restarts"].as_u64().unwrap_or(0) >= restarts;
        if ready { Ok(e) } else { Err(e) }
    })
    .await
}

/// The Wasm plugin still answers.
pub(crate) async fn wasm_answers(s: &Server) {
    let echo = call(s, None, "examples.echo", json!({"text": "still here"})).await;
    assert_eq!(echo["ok"], true, "{echo}");
}

#[tokio::test]
async fn a_servers_tools_are_operations_behind_the_meta_tools() {
    let dir = plugins(&[("examples", "examples")], &[]);
    let secrets = Scratch::new("mcp-tokens");
    let token = |name: &str, allow: &str, operator: bool| {
        std::fs::write(secrets.path(name), format!("secret-{name}")).unwrap();
        TokenConfig {
            name: name.into(),
            secret_file: Some(secrets.path(name)),
            allow: vec![allow.into()],
            operator,
            ..TokenConfig::default()
        }
    };
    let tokens = vec![token("admin", "*", true), token("ci", "examples.*", false)];
    let s = serve(&dir, |c| {
        let roots = "roots = [{ uri = \"file:///srv/data\", name = \"data\" }]";
        c.mcp_servers = vec![stdio_server("fake", roots)];
        c.tokens = tokens;
    })
    .await;
    let admin = Some("secret-admin");
    let entry = active_as(&s, admin, "fake", 0).await;
    assert_eq!(entry["transport"], "stdio");
    assert_eq!(entry["target"], "python3");
    assert!(entry["pid"].as_u64().is_some(), "{entry}");
    let notes = entry["notes"].to_string();
    assert!(
        notes.contains("left out: its input schema nests deeper than 32 levels"),
        "{notes}"
    );
    assert!(
        entry["operations"]
            .as_array()
            .unwrap()
            .contains(&json!("fake.echo")),
        "{entry}"
    );

    let found = post(&s, admin, "/api/hub/search", json!({"q": "echo text back"})).await;
    assert_eq!(found["results"][0]["tool"], "fake.echo", "{found}");
    let schema = post(&s, admin, "/api/hub/schema", json!({"tool": "fake.add"})).await;
    assert_eq!(schema["outputSchema"]["required"], json!(["sum"]), "{schema}");
    let listed = post(&s, admin, "/api/hub/list", json!({"namespace": "fake"})).await;
    assert_eq!(
        listed["instructions"]["fake"], "Use fake.echo to repeat text.",
        "{listed}"
    );

    let echo = call(&s, admin, "fake.echo", json!({"text": "hi"})).await;
    assert_eq!(echo["result"], json!({"text": "hi"}), "{echo}");
    let add = call(&s, admin, "fake.add", json!({"a": 2, "b": 5})).await;
    assert_eq!(add["result"], json!({"sum": 7}), "{add}");
    // The hub's own validation runs before the server sees anything.
    let bad = call(&s, admin, "fake.add", json!({"a": "two"})).await;
    assert_eq!(bad["error"]["code"], "invalid_input", "{bad}");
    let failed = call(&s, admin, "fake.fail", json!({})).await;
    assert_eq!(failed["error"]["code"], "plugin_error", "{failed}");
    assert_eq!(
        failed["error"]["message"],
        "fake.fail: the fake tool failed on purpose"
    );
    // No annotations: destructive by MCP's defaults, so the approval policy asks.
    let wipe = call(&s, admin, "fake.wipe", json!({})).await;
    assert_eq!(wipe["error"]["code"], "approval_required", "{wipe}");
    // A token whose allowlist does not cover the server is refused.
    let refused = call(&s, Some("secret-ci"), "fake.echo", json!({"text": "x"})).await;
    assert_eq!(refused["error"]["code"], "forbidden", "{refused}");
    // What the server asks the hub: the operator's roots; sampling and
    // elicitation refused, each saying why, with -32021 (not "method not found").
    let ask = |method: &'static str| {
        let s = &s;
        async move {
            let answer = call(s, admin, "fake.ask", json!({ "method": method })).await;
            let text = answer["result"]["text"].as_str().expect("the reply as text");
            serde_json::from_str::<Value>(text).unwrap()
        }
    };
    assert_eq!(
        ask("roots/list").await,
        json!({"result": {"roots": [{"uri": "file:///srv/data", "name": "data"}]}})
    );
    for method in ["sampling/createMessage", "elicitation/create"] {
        let reply = ask(method).await;
        assert_eq!(reply["error"]["code"], -32021, "{reply}");
        let message = reply["error"]["message"].as_str().unwrap();
        assert!(message.starts_with(&format!("{method} refused: ")), "{message}");
    }
    assert_eq!(ask("tasks/list").await["error"]["code"], -32601);
    let audit = s.calls_of("fake.echo", admin).await;
    assert!(audit.iter().any(|r| r["outcome"] == "ok"), "{audit:?}");

    // tools/list_changed: the new tool becomes an operation.
    let changed = call(&s, admin, "fake.change", json!({})).await;
    assert_eq!(changed["ok"], true, "{changed}");
    until("fake.added listed", || async {
        let listed = post(&s, admin, "/api/hub/list", json!({"namespace": "fake"})).await;
        listed["operations"]
            .as_array()
            .is_some_and(|ops| ops.iter().any(|o| o["tool"] == "fake.added"))
            .then_some(())
    })
    .await;
    let added = call(&s, admin, "fake.added", json!({})).await;
    assert_eq!(added["ok"], true, "{added}");
    let plugin = call(&s, admin, "examples.echo", json!({"text": "wasm"})).await;
    assert_eq!(plugin["ok"], true, "{plugin}");
}

#[tokio::test]
async fn hostile_tools_hit_their_bounds_while_a_wasm_operation_answers() {
    let dir = plugins(&[("examples", "examples")], &[]);
    let scratch = Scratch::new("mcp-hostile");
    let cancel_log = scratch.path("cancelled.jsonl");
    let extra = format!(
        "call_timeout_ms = 1000\nmax_result_kb = 64\nmax_message_kb = 512\nenv = {{ CANCEL_LOG = \"{}\" }}",
        cancel_log.display()
    );
    let s = serve(&dir, |c| c.mcp_servers = vec![stdio_server("bad", &extra)]).await;
    active(&s, "bad", 0).await;

    let hang = call(&s, None, "bad.hang", json!({})).await;
    assert_eq!(hang["error"]["code"], "timeout", "{hang}");
    let message = hang["error"]["message"].as_str().unwrap();
    assert!(message.contains("mcp_servers.bad.call_timeout_ms"), "{message}");
    until("notifications/cancelled at the server", || async {
        std::fs::read_to_string(&cancel_log)
            .ok()
            .filter(|log| log.contains("requestId"))
    })
    .await;
    wasm_answers(&s).await;

    let giant = call(&s, None, "bad.giant", json!({})).await;
    assert_eq!(giant["error"]["code"], "output_limit", "{giant}");
    assert!(
        giant["error"]["message"]
            .as_str()
            .unwrap()
            .contains("mcp_servers.bad.max_result_kb"),
        "{giant}"
    );
    wasm_answers(&s).await;

    let flood = call(&s, None, "bad.flood", json!({})).await;
    assert_eq!(flood["error"]["code"], "plugin_error", "{flood}");
    let message = flood["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("larger than max_message_kb (512 KiB)"),
        "{message}"
    );
    wasm_answers(&s).await;
    active(&s, "bad", 1).await;

    let garbage = call(&s, None, "bad.badjson", json!({})).await;
    let message = garbage["error"]["message"].as_str().unwrap();
    assert!(message.contains("a line that is not JSON-RPC"), "{garbage}");
    active(&s, "bad", 2).await;

    let crash = call(&s, None, "bad.crash", json!({})).await;
    let message = crash["error"]["message"].as_str().unwrap();
    assert!(message.contains("the server exited with status 3"), "{crash}");
    wasm_answers(&s).await;
    // Restarted: its tools answer again.
    active(&s, "bad", 3).await;
    let echo = call(&s, None, "bad.echo", json!({"text": "back"})).await;
    assert_eq!(echo["result"], json!({"text": "back"}), "{echo}");
}

#[tokio::test]
async fn a_crash_looping_and_a_silent_server_are_rejected_with_their_reason() {
    let dir = plugins(&[("examples", "examples")], &[]);
    let s = serve(&dir, |c| {
        c.mcp_servers = vec![
            stdio_server("loop", "env = { MODE = \"crashloop\" }\nrestart_max_ms = 200"),
            stdio_server("mute", "env = { MODE = \"silent\" }\nstart_timeout_ms = 300"),
            stdio_server("off", "enabled = false"),
        ];
    })
    .await;
    let crashing = until_seen("loop restarted twice", || async {
        let e = status(&s, "loop").await;
        let looped = e["state"] == "rejected" && e["restarts"].as_u64().unwrap_or(0) >= 2;
        if looped { Ok(e) } else { Err(e) }
    })
    .await;
    let reason = crashing["reason"].as_str().unwrap();
    assert!(
        reason.contains("initialize failed") && reason.contains("exited with status 1"),
        "{reason}"
    );
    assert!(reason.contains("next start in"), "{reason}");
    let mute = until_seen("mute rejected", || async {
        let e = status(&s, "mute").await;
        if e["state"] == "rejected" { Ok(e) } else { Err(e) }
    })
    .await;
    let reason = mute["reason"].as_str().unwrap();
    assert!(reason.contains("start_timeout_ms (300 ms)"), "{reason}");
    let off = status(&s, "off").await;
    assert_eq!(off["reason"], "disabled (enabled = false)", "{off}");
    let missing = call(&s, None, "off.echo", json!({})).await;
    let message = missing["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("its MCP server off is not running: disabled"),
        "{message}"
    );
    wasm_answers(&s).await;
}

/// The fake server in `mode` (`--http`, `--ws`) on a free loopback port, which
/// it writes to `portfile`; with the variable `env` set.
pub(crate) async fn listening_fake(
    mode: &str,
    portfile: &std::path::Path,
    env: (&str, &std::path::Path),
) -> (std::process::Child, String) {
    let child = std::process::Command::new("python3")
        .args([script(), mode.into(), portfile.display().to_string()])
        .env(env.0, env.1)
        .spawn()
        .expect("python3 runs the fake server");
    let port = until("the fake server's port", || async {
        std::fs::read_to_string(portfile).ok()
    })
    .await;
    (child, port)
}

#[tokio::test]
async fn a_server_over_streamable_http_serves_its_tools() {
    let dir = plugins(&[("examples", "examples")], &[]);
    let scratch = Scratch::new("mcp-http");
    let portfile = scratch.path("port");
    let deletes = scratch.path("deletes");
    let (mut child, port) = listening_fake("--http", &portfile, ("DELETE_LOG", &deletes)).await;
    let url = format!("http://127.0.0.1:{port}/mcp?key=hidden");
    let config = server(
        "web",
        &format!("transport = \"http\"\nurl = \"{url}\"\nheaders = {{ Authorization = \"env:PATH\" }}"),
    );
    let s = serve(&dir, |c| c.mcp_servers = vec![config]).await;
    let entry = active(&s, "web", 0).await;
    assert_eq!(
        entry["target"],
        format!("http://127.0.0.1:{port}/mcp"),
        "no query: {entry}"
    );
    let echo = call(&s, None, "web.echo", json!({"text": "over http"})).await;
    assert_eq!(echo["result"], json!({"text": "over http"}), "{echo}");
    let add = call(&s, None, "web.add", json!({"a": 1, "b": 2})).await;
    assert_eq!(add["result"], json!({"sum": 3}), "{add}");
    wasm_answers(&s).await;
    assert!(
        !deletes.exists(),
        "the session is not ended while the server runs"
    );
    // Stopping the servers ends the HTTP session: a DELETE with its id.
    s.hub.app.hub.stop_mcp_servers().await;
    assert_eq!(std::fs::read_to_string(&deletes).unwrap(), "s-1\n");
    child.kill().unwrap();
    child.wait().unwrap();
}

#[tokio::test]
async fn the_agent_loop_and_a_plugins_nested_call_reach_a_servers_tool() {
    use crate::support::chat::{call_args, chunks, hub_with, post_chat, submit, text_step, tool_step, user};
    use crate::support::upstream::Upstream;
    let upstream = Upstream::start().await;
    let dir = plugins(&[("adversary", "adversary")], &[]);
    let hub = hub_with(&upstream, dir.0.clone(), |c| {
        c.mcp_servers = vec![stdio_server("fake", "")]
    })
    .await;
    until("fake active", || async {
        hub.app
            .hub
            .mcp_servers()
            .iter()
            .any(|s| s.name == "fake" && s.state == wasmhub::hub::PluginStatus::Active)
            .then_some(())
    })
    .await;
    // The server's instructions join the plugins' in the agent's system prompt.
    let instructions = hub
        .app
        .hub
        .instructions(&hub.app.hub.local_operator())
        .unwrap_or_default();
    assert!(
        instructions.contains("## fake\nUse fake.echo to repeat text."),
        "{instructions}"
    );
    // The scripted model calls the server's tool directly, and through a plugin's
    // nested host.call.
    upstream.push(tool_step(
        None,
        &[(
            "call_f",
            "hub_call",
            call_args(json!([
                {"tool": "fake.echo", "input": {"text": "via the agent"}},
                {"tool": "adversary.nested", "input": {"tool": "fake.add", "input": {"a": 1, "b": 2}}}
            ])),
        )],
    ));
    upstream.push(text_step("Done."));
    let chunks =
        chunks(post_chat(hub.addr, &submit("chat-mcp", vec![user("u1", "Echo and add.")])).await).await;
    let system = upstream.requests()[0].json()["messages"][0]["content"].to_string();
    assert!(system.contains("Use fake.echo to repeat text."), "{system}");
    let output = crate::support::llm::tool_output(&chunks).expect("the hub_call's output");
    assert_eq!(
        output["results"][0]["result"],
        json!({"text": "via the agent"}),
        "{output}"
    );
    assert_eq!(
        output["results"][1]["result"],
        json!({"ok": {"sum": 3}}),
        "{output}"
    );
    // Both calls are in the audit log, the nested one under its parent.
    let records = hub.app.hub.calls(50, &wasmhub::hub::Visible::All).unwrap();
    let add = records
        .iter()
        .find(|r| r.tool == "fake.add")
        .expect("fake.add recorded");
    assert!(add.parent.is_some(), "{add:?}");
    assert!(records.iter().any(|r| r.tool == "fake.echo"), "{records:?}");
}

#[tokio::test]
async fn serve_stops_its_stdio_servers_before_it_exits() {
    let dir = plugins(&[], &[]);
    let data = Scratch::new("mcp-shutdown");
    let entry = format!(
        "mcp_servers=[{{name = \"fake\", transport = \"stdio\", command = \"python3\", args = [\"{}\"]}}]",
        script()
    );
    let mut served = crate::support::binary::serve(&dir.0, &data.0, &[&entry]);
    let addr = served.addr;
    let pid = until("fake active with a pid", || async move {
        let resp = crate::support::client::send(addr, Method::GET, "/api/mcp-servers", None, &[]).await;
        let all = resp.json().await;
        let fake = all["servers"][0].clone();
        (fake["state"] == "active")
            .then(|| fake["pid"].as_u64())
            .flatten()
    })
    .await;
    let proc_dir = std::path::PathBuf::from(format!("/proc/{pid}"));
    assert!(proc_dir.exists(), "the server runs");
    // SAFETY: kill(2) on our own child's pid.
    assert_eq!(unsafe { libc::kill(served.child.id() as i32, libc::SIGTERM) }, 0);
    let status = crate::hub_binary::exit_within(&mut served.child, std::time::Duration::from_secs(60))
        .expect("the hub exits");
    assert!(status.success(), "{status:?}");
    // Stopped and reaped by the hub before it exited: no process, not even a zombie.
    assert!(!proc_dir.exists(), "the stdio server outlived the hub");
}

#[test]
fn wasmhub_call_runs_a_servers_tool_and_leaves_no_process() {
    let dir = plugins(&[], &[]);
    let data = Scratch::new("mcp-cli");
    let pids = data.path("pids");
    let entry = format!(
        "mcp_servers=[{{name = \"fake\", transport = \"stdio\", command = \"sh\", args = [\"-c\", \"echo $$ >> {} && exec python3 {}\"], env_allow = [\"PATH\"]}}]",
        pids.display(),
        script()
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_wasmhub"))
        .args(["call", "fake.echo", r#"{"text": "from the cli"}"#, "--plugins"])
        .arg(&dir.0)
        .arg("--data")
        .arg(&data.0)
        .args(["--set", &entry])
        .output()
        .expect("run wasmhub call");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let result: Value = serde_json::from_slice(&out.stdout).expect("stdout is the result JSON");
    assert_eq!(result, json!({"text": "from the cli"}));
    // The server (sh exec'd into python3, same pid) was stopped and reaped.
    let pid = std::fs::read_to_string(&pids).unwrap();
    assert!(
        !std::path::Path::new(&format!("/proc/{}", pid.trim())).exists(),
        "pid {pid} outlived the call"
    );
}

/// `wasmhub_calls_in_flight` of `GET /metrics`.
async fn in_flight(s: &Server) -> u64 {
    let resp = s.request(Method::GET, "/metrics", None, None).await;
    let text = String::from_utf8_lossy(&resp.bytes().await).to_string();
    text.lines()
        .find_map(|l| l.strip_prefix("wasmhub_calls_in_flight "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0)
}

#[tokio::test]
async fn calls_past_max_concurrent_wait_for_a_place() {
    let gate = crate::support::gate::Gate::start().await;
    let dir = plugins(&[("examples", "examples")], &[]);
    let extra = format!(
        "max_concurrent = 2\nenv = {{ GATE_URL = \"http://{}/\" }}",
        gate.authority()
    );
    let s = serve(&dir, |c| c.mcp_servers = vec![stdio_server("held", &extra)]).await;
    active(&s, "held", 0).await;
    wasm_answers(&s).await;
    let addr = s.addr;
    let calls: Vec<_> = (0..3)
        .map(|_| {
            tokio::spawn(async move {
                let body = json!({ "calls": [{ "tool": "held.gate", "input": {} }] });
                let resp = crate::support::client::post(addr, "/api/hub/call", &body).await;
                resp.json().await["results"][0].clone()
            })
        })
        .collect();
    // Two calls are held at the gate by the server; the third is in the hub,
    // waiting for one of the server's two places.
    gate.holds(2).await;
    until("three calls in flight", || async {
        (in_flight(&s).await == 3).then_some(())
    })
    .await;
    assert_eq!(gate.received(), 2, "the third call reached the server");
    gate.open();
    let mut peaks = Vec::new();
    for call in calls {
        let answer = call.await.unwrap();
        assert_eq!(answer["ok"], true, "{answer}");
        peaks.push(answer["result"]["text"].as_str().unwrap().to_string());
    }
    assert_eq!(gate.received(), 3);
    // The server never saw more than max_concurrent of them at once.
    assert!(peaks.iter().all(|p| p == "2"), "{peaks:?}");
}
