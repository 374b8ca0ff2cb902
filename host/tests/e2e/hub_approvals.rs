//! Approvals of consequential calls over the real HTTP server: the default policy
//! (a `destructive` operation needs an approval nobody can give over REST, so it
//! fails with `approval_required` naming `approvals.destructive`), per-token and
//! rule-based policies, an operator approving and denying a waiting call through
//! `/api/approvals`, the audit record of who decided, MCP's `isError` answer, and
//! `wasmhub call --approve`. The `examples` test guest's `wipe` is hinted
//! destructive; its `echo` is read-only.

use crate::support::client;
use crate::support::hub::{Server, plugins, serve};
use crate::support::runtime::guest;
use http::Method;
use serde_json::{Value, json};
use wasmhub::config::{ApprovalAction, ApprovalRule, TokenApprovals, TokenConfig};

fn call_body(tool: &str, input: Value) -> Value {
    json!({ "calls": [{ "tool": tool, "input": input }] })
}

/// `hub_call` of one operation with `token` (or as the local operator): the
/// per-call result object.
async fn call_as(s: &Server, token: Option<&str>, tool: &str, input: Value) -> Value {
    let resp = s
        .request(
            Method::POST,
            "/api/hub/call",
            Some(&call_body(tool, input)),
            token,
        )
        .await;
    assert_eq!(resp.status.as_u16(), 200);
    resp.json().await["results"][0].clone()
}

/// Tokens `ci` (no operator) and `ops` (operator), each with a secret file.
fn tokens(dir: &crate::support::runtime::Scratch, ops_approvals: TokenApprovals) -> Vec<TokenConfig> {
    let token = |name: &str, operator: bool, approvals: TokenApprovals| {
        std::fs::write(dir.path(&format!("{name}.secret")), format!("secret-{name}")).unwrap();
        TokenConfig {
            name: name.into(),
            secret_file: Some(dir.path(&format!("{name}.secret"))),
            allow: vec!["*".into()],
            operator,
            approvals,
            ..TokenConfig::default()
        }
    };
    vec![
        token("ci", false, TokenApprovals::default()),
        token("ops", true, ops_approvals),
        token("qa", false, TokenApprovals::default()),
    ]
}

#[tokio::test]
async fn a_destructive_call_fails_with_approval_required_when_nobody_can_approve() {
    let dir = plugins(&[("examples", "examples")], &[]);
    let s = serve(&dir, |_| {}).await;
    s.hub.app.hub.loaded().await;
    let wipe = call_as(&s, None, "examples.wipe", json!({})).await;
    assert_eq!(wipe["ok"], false, "{wipe}");
    assert_eq!(wipe["error"]["code"], "approval_required", "{wipe}");
    assert_eq!(wipe["error"]["policy"], "approvals.destructive", "{wipe}");
    let message = wipe["error"]["message"].as_str().unwrap();
    assert!(message.contains("approvals.destructive = \"allow\""), "{message}");
    assert!(message.contains("approvals.wait_secs"), "{message}");
    // What a surface that can ask its user would ask about, before invoking.
    let hub = &s.hub.app.hub;
    let asks = hub.approvals_needed(
        &hub.local_operator(),
        ["examples.wipe", "examples.echo", "no.such"],
    );
    let ask = asks[0].as_ref().expect("wipe needs an approval");
    assert_eq!(
        (ask.policy.as_deref(), ask.hints.as_slice()),
        (Some("approvals.destructive"), &["destructive"][..])
    );
    assert!(asks[1].is_none() && asks[2].is_none(), "{asks:?}");
    // A read-only operation of the same plugin is not asked about.
    let echo = call_as(&s, None, "examples.echo", json!({"text": "hi"})).await;
    assert_eq!(echo["ok"], true, "{echo}");
    let records = s.calls_of("examples.wipe", None).await;
    let record = records.first().cloned().unwrap_or_default();
    assert_eq!(record["outcome"], "approval_required", "{records:?}");
}

#[tokio::test]
async fn token_policies_and_rules_allow_ask_or_deny() {
    let dir = plugins(&[("examples", "examples")], &[]);
    let ops_allows_destructive = TokenApprovals {
        destructive: Some(ApprovalAction::Allow),
        ..TokenApprovals::default()
    };
    let tokens = tokens(&dir, ops_allows_destructive);
    let s = serve(&dir, |c| {
        c.tokens = tokens;
        c.approvals.rules = vec![ApprovalRule {
            tools: vec!["examples.echo".into()],
            action: ApprovalAction::Deny,
        }];
    })
    .await;
    s.hub.app.hub.loaded().await;
    let by_ops = call_as(&s, Some("secret-ops"), "examples.wipe", json!({})).await;
    assert_eq!(by_ops["ok"], true, "ops' own policy allows it: {by_ops}");
    let by_ci = call_as(&s, Some("secret-ci"), "examples.wipe", json!({})).await;
    assert_eq!(by_ci["error"]["code"], "approval_required", "{by_ci}");
    assert_eq!(by_ci["error"]["policy"], "approvals.destructive");
    // A rule by name outranks the read-only hint, and a token without its own rule.
    let echo = call_as(&s, Some("secret-ops"), "examples.echo", json!({"text": "x"})).await;
    assert_eq!(echo["error"]["code"], "approval_required", "{echo}");
    assert_eq!(echo["error"]["policy"], "approvals.rules[0]");
    assert!(
        echo["error"]["message"]
            .as_str()
            .unwrap()
            .contains("denied by the approval policy")
    );
}

/// The calls waiting for a decision, as operator `ops` sees them, once there are `n`.
async fn waiting(s: &Server, n: usize) -> Vec<Value> {
    crate::support::wait::until("the call to wait for an approval", || async move {
        let resp = s
            .request(Method::GET, "/api/approvals", None, Some("secret-ops"))
            .await;
        let list = resp.json().await["approvals"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        (list.len() == n).then_some(list)
    })
    .await
}

#[tokio::test]
async fn an_operator_approves_or_denies_a_waiting_call() {
    let dir = plugins(&[("examples", "examples")], &[]);
    let tokens = tokens(&dir, TokenApprovals::default());
    let s = std::sync::Arc::new(
        serve(&dir, |c| {
            c.tokens = tokens;
            c.approvals.wait_secs = 60;
        })
        .await,
    );
    s.hub.app.hub.loaded().await;
    let spawn_wipe = |s: std::sync::Arc<Server>| {
        tokio::spawn(
            async move { call_as(&s, Some("secret-ci"), "examples.wipe", json!({"all": true})).await },
        )
    };

    let first = spawn_wipe(s.clone());
    let pending = waiting(&s, 1).await;
    let approval = &pending[0];
    assert_eq!(approval["tool"], "examples.wipe");
    assert_eq!(approval["caller"], "ci");
    assert_eq!(approval["policy"], "approvals.destructive");
    assert_eq!(approval["input"], json!({"all": true}));
    assert_eq!(approval["hints"], json!(["destructive"]));
    let id = approval["id"].as_str().unwrap().to_string();
    // A caller sees its own waiting calls, and no one else's; only operators decide.
    let listed_by = |token: &'static str| {
        let s = s.clone();
        async move {
            let resp = s.request(Method::GET, "/api/approvals", None, Some(token)).await;
            assert_eq!(resp.status.as_u16(), 200);
            resp.json().await["approvals"].clone()
        }
    };
    let own = listed_by("secret-ci").await;
    assert_eq!(own.as_array().map(Vec::len), Some(1), "{own}");
    assert_eq!(own[0]["id"], id.as_str());
    assert_eq!(
        listed_by("secret-qa").await,
        json!([]),
        "another principal's call is not listed"
    );
    let path = format!("/api/approvals/{id}");
    let resp = s
        .request(
            Method::POST,
            &path,
            Some(&json!({"approved": true})),
            Some("secret-ci"),
        )
        .await;
    assert_eq!(resp.status.as_u16(), 403);
    assert_eq!(waiting(&s, 1).await[0]["id"], id.as_str(), "still waiting");

    let resp = s
        .request(
            Method::POST,
            &path,
            Some(&json!({"approved": true, "reason": "planned"})),
            Some("secret-ops"),
        )
        .await;
    assert_eq!(resp.status.as_u16(), 200);
    let result = first.await.unwrap();
    assert_eq!(result["ok"], true, "{result}");
    assert_eq!(result["result"], json!({"wiped": true}));
    // Decided already: the id is gone.
    let resp = s
        .request(
            Method::POST,
            &path,
            Some(&json!({"approved": true})),
            Some("secret-ops"),
        )
        .await;
    assert_eq!(resp.status.as_u16(), 404);

    let second = spawn_wipe(s.clone());
    let id = waiting(&s, 1).await[0]["id"].as_str().unwrap().to_string();
    let deny = json!({"approved": false, "reason": "not during business hours"});
    let resp = s
        .request(
            Method::POST,
            &format!("/api/approvals/{id}"),
            Some(&deny),
            Some("secret-ops"),
        )
        .await;
    assert_eq!(resp.status.as_u16(), 200);
    let result = second.await.unwrap();
    assert_eq!(result["error"]["code"], "approval_denied", "{result}");
    let message = result["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("ops denied it: not during business hours"),
        "{message}"
    );

    // The audit log says who decided what, and when.
    let records = s.calls_of("examples.wipe", Some("secret-ops")).await;
    let approvals: Vec<&Value> = records.iter().map(|c| &c["approval"]).collect();
    assert_eq!(approvals.len(), 2, "{records:?}");
    let decisions: Vec<(&str, &str)> = approvals
        .iter()
        .map(|a| (a["decision"].as_str().unwrap(), a["by"].as_str().unwrap()))
        .collect();
    assert!(decisions.contains(&("approved", "ops")), "{decisions:?}");
    assert!(decisions.contains(&("denied", "ops")), "{decisions:?}");
    assert!(
        approvals
            .iter()
            .all(|a| a["policy"] == "approvals.destructive" && a["decided_ms"].is_u64())
    );
}

#[tokio::test]
async fn an_mcp_client_that_cannot_ask_gets_an_error_result_it_can_read() {
    let dir = plugins(&[("examples", "examples")], &[]);
    let s = serve(&dir, |_| {}).await;
    s.hub.app.hub.loaded().await;
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}});
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "hub_call", "arguments": call_body("examples.wipe", json!({})), "_meta": meta}});
    let headers = [
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "hub_call"),
    ];
    let resp = client::send(
        s.addr,
        Method::POST,
        "/mcp",
        Some(body.to_string().into()),
        &headers,
    )
    .await;
    let answer = resp.json().await;
    let result = &answer["result"];
    assert_eq!(
        result["structuredContent"]["results"][0]["error"]["code"], "approval_required",
        "{answer}"
    );
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    assert!(
        text.contains("approvals.destructive"),
        "the model can read why: {text}"
    );
}

#[test]
fn wasmhub_call_approve_runs_what_the_policy_asks_about() {
    let dir = crate::support::runtime::Scratch::new("cli-approve");
    std::fs::copy(guest("examples"), dir.path("examples.wasm")).unwrap();
    let data = dir.path("data");
    let run = |extra: &[&str]| {
        let mut args = vec![
            "call",
            "examples.wipe",
            "{}",
            "--plugins",
            dir.0.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--data", data.to_str().unwrap()]);
        std::process::Command::new(env!("CARGO_BIN_EXE_wasmhub"))
            .args(&args)
            .output()
            .expect("run wasmhub call")
    };
    let refused = run(&[]);
    assert_eq!(refused.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("approval_required"), "{stderr}");
    let approved = run(&["--approve"]);
    assert_eq!(
        approved.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&approved.stderr)
    );
    assert!(String::from_utf8_lossy(&approved.stdout).contains("\"wiped\": true"));
}
