//! Approvals and agents: a profile's own approval policy (`approvals` of
//! `[[agents]]`) tightens its caller's for every call its turn makes, a
//! sub-agent's policy adds to its caller agent's, and a call to `agents.NAME` is
//! itself checked by the approval policy (an operator can make invoking an agent
//! ask, and approve it through `/api/approvals`); a chat turn asks its user
//! before it calls an agent its profile asks about.

use crate::support::chat::{
    MODEL, call_args, chunks, hub_alone, plugins, post_chat, submit, text_step, tool_step, user,
};
use crate::support::client;
use crate::support::upstream::Upstream;
use crate::support::wait;
use serde_json::{Value, json};
use wasmhub::config::{AgentProfileConfig, ApprovalAction, ApprovalRule, ModelChoice, TokenApprovals};
use wasmhub::llm::UiChunk;

fn agent(name: &str, deny: Option<&str>) -> AgentProfileConfig {
    AgentProfileConfig {
        name: name.into(),
        description: format!("The {name} agent"),
        model: Some(ModelChoice::One(MODEL.into())),
        approvals: deny.map(|pattern| TokenApprovals {
            rules: vec![ApprovalRule {
                tools: vec![pattern.into()],
                action: ApprovalAction::Deny,
            }],
            ..TokenApprovals::default()
        }),
        ..AgentProfileConfig::default()
    }
}

async fn hub_call(addr: std::net::SocketAddr, calls: Value) -> Value {
    let resp = client::post(addr, "/api/hub/call", &json!({ "calls": calls })).await;
    assert_eq!(resp.status, 200);
    resp.json().await["results"][0].clone()
}

/// The first result of the `hub_call` tool message the model was sent in
/// upstream request `i`.
fn tool_result(upstream: &Upstream, i: usize) -> Value {
    let request = upstream.requests()[i].json();
    let tool = request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "tool")
        .cloned()
        .unwrap_or_else(|| panic!("no tool message in request {i}: {request}"));
    let result: Value = serde_json::from_str(tool["content"].as_str().unwrap()).unwrap();
    result["results"][0].clone()
}

#[tokio::test]
async fn a_profile_policy_tightens_its_calls_and_a_sub_agents_adds_to_its_callers() {
    let upstream = Upstream::start().await;
    let hub = hub_alone(&upstream, plugins(&[]), |c| {
        c.agents = vec![agent("outer", Some("text.*")), agent("inner", Some("calc.*"))];
    })
    .await;
    let eval = call_args(json!([{"tool": "calc.eval", "input": {"expression": "6*7"}}]));
    let slug = call_args(json!([{"tool": "text.slugify", "input": {"text": "Hello World"}}]));

    // The inner agent's own rule denies calc.eval; the same call outside it runs.
    upstream.push(tool_step(None, &[("c1", "hub_call", eval.clone())]));
    upstream.push(text_step("I may not compute."));
    let out = hub_call(
        hub.addr,
        json!([{"tool": "agents.inner", "input": {"task": "6*7?"}}]),
    )
    .await;
    assert_eq!(out["result"]["output"], "I may not compute.", "{out}");
    let denied = tool_result(&upstream, 1);
    assert_eq!(denied["error"]["code"], "approval_required", "{denied}");
    assert_eq!(
        denied["error"]["policy"], "agents[name=inner].approvals.rules[0]",
        "{denied}"
    );
    let direct = hub_call(
        hub.addr,
        json!([{"tool": "calc.eval", "input": {"expression": "6*7"}}]),
    )
    .await;
    assert_eq!(direct["ok"], true, "{direct}");

    // outer calls inner, whose text.slugify is allowed by inner's policy but denied
    // by outer's: a sub-agent runs under both.
    upstream.push(tool_step(
        None,
        &[(
            "o1",
            "hub_call",
            call_args(json!([{"tool": "agents.inner", "input": {"task": "slugify"}}])),
        )],
    ));
    upstream.push(tool_step(None, &[("i1", "hub_call", slug.clone())]));
    upstream.push(text_step("Not allowed."));
    upstream.push(text_step("The inner agent could not."));
    let out = hub_call(
        hub.addr,
        json!([{"tool": "agents.outer", "input": {"task": "delegate"}}]),
    )
    .await;
    assert_eq!(out["result"]["output"], "The inner agent could not.", "{out}");
    let denied = tool_result(&upstream, 4);
    assert_eq!(
        denied["error"]["policy"], "agents[name=outer].approvals.rules[0]",
        "{denied}"
    );
    // ... and inner's own rule holds there too.
    upstream.push(tool_step(
        None,
        &[(
            "o2",
            "hub_call",
            call_args(json!([{"tool": "agents.inner", "input": {"task": "compute"}}])),
        )],
    ));
    upstream.push(tool_step(None, &[("i2", "hub_call", eval)]));
    upstream.push(text_step("No."));
    upstream.push(text_step("No."));
    hub_call(
        hub.addr,
        json!([{"tool": "agents.outer", "input": {"task": "delegate"}}]),
    )
    .await;
    let denied = tool_result(&upstream, 8);
    assert_eq!(
        denied["error"]["policy"], "agents[name=inner].approvals.rules[0]",
        "{denied}"
    );
}

async fn waiting(addr: std::net::SocketAddr) -> Vec<Value> {
    wait::until("the agent call to wait for an approval", || async move {
        let resp = client::send(addr, http::Method::GET, "/api/approvals", None, &[]).await;
        let list = resp.json().await["approvals"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        (!list.is_empty()).then_some(list)
    })
    .await
}

#[tokio::test]
async fn calling_an_agent_is_checked_by_the_approval_policy() {
    let upstream = Upstream::start().await;
    let hub = hub_alone(&upstream, plugins(&[]), |c| {
        c.agents = vec![agent("helper", None), agent("banned", None)];
        c.approvals.wait_secs = 60;
        c.approvals.rules = vec![
            ApprovalRule {
                tools: vec!["agents.banned".into()],
                action: ApprovalAction::Deny,
            },
            ApprovalRule {
                tools: vec!["agents.*".into()],
                action: ApprovalAction::Ask,
            },
        ];
    })
    .await;
    let denied = hub_call(
        hub.addr,
        json!([{"tool": "agents.banned", "input": {"task": "x"}}]),
    )
    .await;
    assert_eq!(denied["error"]["code"], "approval_required", "{denied}");
    assert_eq!(denied["error"]["policy"], "approvals.rules[0]", "{denied}");
    assert!(upstream.requests().is_empty(), "a denied agent never runs");

    // What a surface that can ask its user (the chat loop, MCP) is told.
    let api = &hub.app.hub;
    let asks = api.approvals_needed(&api.local_operator(), ["agents.helper"]);
    let ask = asks[0].as_ref().expect("calling helper asks");
    assert_eq!(
        (ask.policy.as_deref(), ask.hints.as_slice()),
        (Some("approvals.rules[1]"), &["open_world"][..])
    );

    // Over REST an operator approves the waiting call; then the agent runs.
    upstream.push(text_step("Helped."));
    let addr = hub.addr;
    let call = tokio::spawn(async move {
        hub_call(
            addr,
            json!([{"tool": "agents.helper", "input": {"task": "help"}}]),
        )
        .await
    });
    let pending = waiting(addr).await;
    assert_eq!(
        (&pending[0]["tool"], &pending[0]["policy"]),
        (&json!("agents.helper"), &json!("approvals.rules[1]")),
        "{pending:?}"
    );
    assert!(upstream.requests().is_empty(), "it waits before it runs");
    let id = pending[0]["id"].as_str().unwrap();
    let resp = client::post(addr, &format!("/api/approvals/{id}"), &json!({"approved": true})).await;
    assert_eq!(resp.status, 200);
    let out = call.await.unwrap();
    assert_eq!(
        out["result"],
        json!({"output": "Helped.", "corrections": 0}),
        "{out}"
    );
}

#[tokio::test]
async fn a_chat_turn_asks_its_user_before_calling_an_agent_its_profile_asks_about() {
    let upstream = Upstream::start().await;
    let hub = hub_alone(&upstream, plugins(&[]), |c| {
        let mut guarded = agent("guarded", None);
        guarded.approvals = Some(TokenApprovals {
            open_world: Some(ApprovalAction::Ask),
            ..TokenApprovals::default()
        });
        c.agents = vec![guarded, agent("helper", None)];
    })
    .await;
    let args = call_args(json!([{"tool": "agents.helper", "input": {"task": "help"}}]));
    upstream.push(tool_step(None, &[("g1", "hub_call", args)]));
    let mut body = submit("chat-guarded", vec![user("u1", "get help")]);
    body["agent"] = json!("guarded");
    let seen = chunks(post_chat(hub.addr, &body).await).await;
    let reasons: Vec<String> = seen
        .iter()
        .filter_map(|c| match c {
            UiChunk::ToolApprovalRequest { reason, .. } => reason.clone(),
            _ => None,
        })
        .collect();
    assert_eq!(reasons.len(), 1, "{seen:?}");
    assert!(
        reasons[0]
            .starts_with("agents.helper is open-world (agents[name=guarded].approvals.open_world = \"ask\")"),
        "{reasons:?}"
    );
    assert_eq!(upstream.requests().len(), 1, "the helper did not run");
}
