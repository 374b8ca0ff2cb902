//! WIT `wasmhub:plugin@0.3.0` (the SDKs'), 0.2.0 and 0.1.0: all served by one hub; operation
//! examples in `hub_schema`, run at load (a wrong one rejects its plugin, except
//! for `destructive`/`open-world` operations) and by `wasmhub plugin test`; plugin
//! instructions in `hub_list`, the agent's system prompt and MCP `initialize`;
//! `plugin check`, `plugin inspect` and `plugin wit` on the real binary.

use crate::support::chat::{self, post_chat, submit, text_step, user};
use crate::support::hub::{plugins, serve};
use crate::support::runtime::Scratch;
use crate::support::upstream::{CHAT, Upstream};
use serde_json::{Value, json};
use std::process::Command;

/// What the `examples` test guest gives as its instructions.
const INSTRUCTIONS: &str =
    "Examples plugin: echo returns its input unchanged; never call wipe without asking.";

fn plugin_state<'a>(plugins: &'a Value, name: &str) -> &'a Value {
    plugins
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == name)
        .unwrap_or_else(|| panic!("{name} in {plugins}"))
}

#[tokio::test]
async fn plugins_of_both_wit_versions_are_served_side_by_side() {
    let dir = plugins(
        &[
            ("adversary", "adversary"),
            ("examples", "examples"),
            ("badexample", "badexample"),
        ],
        &["calc"],
    );
    let server = serve(&dir, |_| {}).await;
    server.hub.app.hub.loaded().await;
    let resp = server
        .request(http::Method::GET, "/api/plugins", None, None)
        .await;
    let list = resp.json().await["plugins"].take();
    assert_eq!(plugin_state(&list, "adversary")["wit_version"], "0.1.0", "{list}");
    assert_eq!(plugin_state(&list, "examples")["wit_version"], "0.2.0", "{list}");
    assert_eq!(plugin_state(&list, "calc")["wit_version"], "0.3.0", "{list}");
    assert_eq!(plugin_state(&list, "examples")["instructions"], true);

    // A wrong example rejects its plugin, naming the example and the difference;
    // the wrong example of a destructive operation is never run at load.
    let bad = plugin_state(&list, "badexample");
    assert_eq!(bad["state"], "rejected", "{bad}");
    let reason = bad["reason"].as_str().unwrap();
    assert!(
        reason.contains(
            r#"verification failed: example 1 of double ("doubles two"): at /n: expected 6, got 4"#
        ),
        "{reason}"
    );
    assert_eq!(plugin_state(&list, "examples")["state"], "active");

    let (status, out) = server
        .post(
            "/api/hub/call",
            &json!({"calls": [
                {"tool": "adversary.echo", "input": {"a": 1}},
                {"tool": "examples.echo", "input": {"text": "both"}},
                {"tool": "calc.eval", "input": {"expression": "1/3 + 1/6"}}
            ]}),
        )
        .await;
    assert_eq!(status, 200, "{out}");
    for result in out["results"].as_array().unwrap() {
        assert_eq!(result["ok"], true, "{result}");
    }
    assert_eq!(out["results"][1]["result"], json!({"text": "both"}));
}

#[tokio::test]
async fn hub_schema_shows_examples_and_hub_list_the_instructions() {
    let dir = plugins(&[("examples", "examples"), ("adversary", "adversary")], &[]);
    let server = serve(&dir, |_| {}).await;
    server.hub.app.hub.loaded().await;
    let (status, schema) = server
        .post("/api/hub/schema", &json!({"tool": "examples.echo"}))
        .await;
    assert_eq!(status, 200, "{schema}");
    assert_eq!(
        schema["examples"],
        json!([{"description": "echoes a greeting", "input": {"text": "hi"}, "output": {"text": "hi"}}])
    );
    // A 0.1.0 operation has no examples: the key is absent, not empty.
    let (_, old) = server
        .post("/api/hub/schema", &json!({"tool": "adversary.echo"}))
        .await;
    assert!(old.get("examples").is_none(), "{old}");

    let (status, list) = server.post("/api/hub/list", &json!({})).await;
    assert_eq!(status, 200, "{list}");
    assert_eq!(list["instructions"], json!({"examples": INSTRUCTIONS}), "{list}");
    let (_, only_adversary) = server
        .post("/api/hub/list", &json!({"namespace": "adversary"}))
        .await;
    assert!(only_adversary.get("instructions").is_none(), "{only_adversary}");
}

#[tokio::test]
async fn mcp_initialize_and_discovery_carry_the_plugins_instructions() {
    let dir = plugins(&[("examples", "examples")], &[]);
    let server = serve(&dir, |_| {}).await;
    server.hub.app.hub.loaded().await;
    let headers = [
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
    ];
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let resp = crate::support::client::send(
        server.addr,
        http::Method::POST,
        "/mcp",
        Some(init.to_string().into()),
        &headers,
    )
    .await;
    let answer = resp.json().await;
    let text = answer["result"]["instructions"].as_str().unwrap_or_default();
    assert!(text.contains("hub_search"), "the hub's own first: {text}");
    assert!(text.contains(&format!("## examples\n{INSTRUCTIONS}")), "{text}");

    let discover = json!({"jsonrpc": "2.0", "id": 2, "method": "server/discover", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}}}});
    let resp = crate::support::client::send(
        server.addr,
        http::Method::POST,
        "/mcp",
        Some(discover.to_string().into()),
        &[
            headers[0],
            headers[1],
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "server/discover"),
        ],
    )
    .await;
    let answer = resp.json().await;
    let text = answer["result"]["instructions"].as_str().unwrap_or_default();
    assert!(text.contains(INSTRUCTIONS), "{answer}");
    assert_eq!(
        answer["result"]["cacheScope"], "private",
        "per caller and per plugin set"
    );
}

#[tokio::test]
async fn the_agent_puts_the_instructions_into_its_system_prompt() {
    let upstream = Upstream::start().await;
    let hub = chat::hub_with(&upstream, chat::plugins(&["examples"]), |_| {}).await;
    upstream.push(text_step("Noted."));
    let resp = post_chat(hub.addr, &submit("chat-instr", vec![user("u1", "hi")])).await;
    chat::chunks(resp).await;
    let sent: Vec<_> = upstream
        .requests()
        .into_iter()
        .filter(|r| r.path == CHAT)
        .collect();
    let system = sent[0].json()["messages"][0].clone();
    assert_eq!(system["role"], "system", "{system}");
    let text = system["content"].as_str().unwrap();
    assert!(
        text.starts_with("You are a helpful assistant"),
        "the fixed prompt first"
    );
    assert!(
        text.contains(&format!("\n\n## examples\n{INSTRUCTIONS}\n")),
        "{text}"
    );
    // After the fixed prompt, in plugin-name order (a stable prefix for prompt caches).
    let headings: Vec<&str> = text.lines().filter(|l| l.starts_with("## ")).collect();
    let mut sorted = headings.clone();
    sorted.sort();
    assert_eq!(headings, sorted);
    assert!(
        headings.contains(&"## calc"),
        "calc gives instructions too: {headings:?}"
    );
}

/// Runs the real binary; exit code and stdout.
fn wasmhub(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_wasmhub"))
        .args(args)
        .output()
        .expect("run wasmhub");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[test]
fn plugin_test_runs_every_example_and_check_names_the_version() {
    let s = Scratch::new("cli-examples");
    let examples = s.plugin("examples", "examples", None);
    let (code, out) = wasmhub(&["plugin", "test", examples.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("ok    examples.echo example 1: echoes a greeting"),
        "{out}"
    );
    assert!(
        out.contains(
            "FAIL  examples.wipe example 1: claims nothing was wiped: at /wiped: expected false, got true"
        ),
        "{out}"
    );
    assert!(out.lines().any(|l| l == "examples: 1 passed, 1 failed"), "{out}");

    let (code, out) = wasmhub(&["plugin", "check", examples.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("ok: plugin examples (wasmhub:plugin@0.2.0) with 2 operation(s)"),
        "{out}"
    );
    let old = s.plugin("adversary", "adversary", None);
    let (code, out) = wasmhub(&["plugin", "check", old.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("(wasmhub:plugin@0.1.0)"), "{out}");
    let (code, out) = wasmhub(&["plugin", "test", old.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("no examples to run: it targets wasmhub:plugin@0.1.0"),
        "{out}"
    );

    let bad = s.plugin("badexample", "badexample", None);
    let (code, out) = wasmhub(&["plugin", "check", bad.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("error: verification failed: example 1 of double"),
        "{out}"
    );

    let (code, out) = wasmhub(&["plugin", "inspect", examples.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("wit:     wasmhub:plugin@0.2.0"), "{out}");
    assert!(out.contains(INSTRUCTIONS), "{out}");
    assert!(out.contains(r#"{"text":"hi"} -> {"text":"hi"}"#), "{out}");
}

#[test]
fn plugin_wit_writes_the_contract_the_binary_serves() {
    let s = Scratch::new("cli-wit");
    let out_dir = s.path("wit");
    let (code, out) = wasmhub(&["plugin", "wit", "--out", out_dir.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    let repo = crate::support::runtime::repo_root();
    // The binary writes the repository's own `wit/` layout: the newest (0.3.0) at the
    // top, each older one in its folder, wasi:config in deps/.
    for file in [
        "plugin.wit",
        "0.2.0/plugin.wit",
        "0.1.0/plugin.wit",
        "deps/config/store.wit",
    ] {
        assert_eq!(
            std::fs::read_to_string(out_dir.join(file)).unwrap(),
            std::fs::read_to_string(repo.join("wit").join(file)).unwrap(),
            "{file}"
        );
    }
    let (code, printed) = wasmhub(&["plugin", "wit"]);
    assert_eq!(code, 0);
    assert!(printed.contains("package wasmhub:plugin@0.3.0;"), "{printed}");
}
