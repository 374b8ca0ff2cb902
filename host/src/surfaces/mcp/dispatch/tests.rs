//! The MCP methods over a scripted backend: each revision's answers, tool calls,
//! progress, cancellation and the approval round trips.

use super::*;
use crate::hub::{Allowlist, AuthError, Credentials};
use crate::surfaces::auth::Gatekeeper;
use crate::surfaces::mcp::backend::BoxFuture;

/// A scripted backend: `echo` returns its arguments (and the approval it got,
/// asking for one when the arguments hold `guarded`), `fail` fails, `wait`
/// blocks until cancelled (counting starts and cancellations), `progress`
/// reports two steps.
#[derive(Default)]
pub(crate) struct FakeBackend {
    pub started: Arc<std::sync::atomic::AtomicUsize>,
    pub cancelled: Arc<std::sync::atomic::AtomicUsize>,
}

#[async_trait::async_trait]
impl Gatekeeper for FakeBackend {
    async fn authenticate(&self, creds: Credentials<'_>) -> Result<Caller, AuthError> {
        match creds.bearer {
            Some("good") => Ok(local()),
            Some(_) => Err(AuthError::InvalidToken),
            None if creds.peer.ip().is_loopback() => Ok(local()),
            None => Err(AuthError::MissingToken),
        }
    }

    fn local_operator(&self) -> Caller {
        local()
    }
}

fn local() -> Caller {
    Caller::unchecked("local", Allowlist::all())
}

impl McpBackend for FakeBackend {
    fn tools(&self) -> Vec<ToolSpec> {
        ["hub_echo", "hub_fail", "hub_wait", "hub_progress"]
            .iter()
            .map(|n| ToolSpec {
                name: n.to_string(),
                title: None,
                description: format!("{n} test tool"),
                input_schema: json!({ "type": "object" }),
                output_schema: Some(json!({ "type": "object" })),
                annotations: json!({ "readOnlyHint": true }),
            })
            .collect()
    }

    fn approvals_needed(&self, tool: &str, arguments: &Value, _caller: &Caller) -> Vec<ApprovalNeed> {
        if tool != "hub_echo" || arguments.get("guarded").is_none() {
            return Vec::new();
        }
        vec![ApprovalNeed {
            index: 0,
            tool: "fake.guarded".into(),
            description: "Guarded.".into(),
            input: arguments.clone(),
            hints: vec!["destructive"],
            policy: Some("approvals.destructive".into()),
        }]
    }

    fn invoke(&self, call: BackendCall) -> BoxFuture<'_, Result<ToolOutput, InvokeError>> {
        Box::pin(async move {
            match call.tool.as_str() {
                "hub_echo" => {
                    let mut value = json!({ "echo": call.arguments });
                    if let Some(a) = &call.approval {
                        value["approval"] = json!({ "approved": a.approved, "by": a.by });
                    }
                    Ok(ToolOutput {
                        is_error: call.arguments.get("fail").is_some(),
                        value,
                    })
                }
                "hub_fail" => Err(InvokeError::Failed(
                    json!({ "code": "invalid_input", "message": "x is required" }),
                )),
                "hub_wait" => {
                    self.started.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    call.cancel.cancelled().await;
                    self.cancelled.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    Err(InvokeError::Cancelled)
                }
                "hub_progress" => {
                    if let Some(p) = &call.progress {
                        for i in 1..=2 {
                            p(super::super::backend::Progress {
                                progress: i as f64,
                                total: Some(2.0),
                                message: None,
                            });
                            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                        }
                    }
                    Ok(ToolOutput::ok(json!({ "done": true })))
                }
                other => Err(InvokeError::UnknownTool { name: other.into() }),
            }
        })
    }
}

fn dispatcher() -> Dispatcher {
    Dispatcher::new(Arc::new(FakeBackend::default()))
}

fn ctx(revision: Revision) -> CallCtx {
    CallCtx {
        revision,
        caller: local(),
        cancel: CancelToken::new(),
        progress: None,
        elicitor: None,
        session: None,
        transport: "tcp",
    }
}

fn req(method: &str, params: Value) -> Request {
    Request {
        id: json!(1),
        method: method.into(),
        params: Some(params),
    }
}

#[tokio::test]
async fn methods_differ_by_revision() {
    let d = dispatcher();
    assert_eq!(
        d.handle(req("ping", json!({})), ctx(Revision::Handshake))
            .await
            .unwrap(),
        json!({})
    );
    let e = d
        .handle(req("ping", json!({})), ctx(Revision::Stateless))
        .await
        .unwrap_err();
    assert_eq!(e.code, jsonrpc::METHOD_NOT_FOUND);
    let e = d
        .handle(req("server/discover", json!({})), ctx(Revision::Handshake))
        .await
        .unwrap_err();
    assert_eq!(e.code, jsonrpc::METHOD_NOT_FOUND);
    let discover = d
        .handle(req("server/discover", json!({})), ctx(Revision::Stateless))
        .await
        .unwrap();
    assert_eq!(discover["supportedVersions"][0], "2026-07-28");
    assert_eq!(discover["resultType"], "complete");
    assert_eq!(discover["_meta"][revision::META_SERVER_INFO]["name"], "wasmhub");
    let e = d
        .handle(req("logging/setLevel", json!({})), ctx(Revision::Handshake))
        .await
        .unwrap_err();
    assert_eq!(e.code, jsonrpc::METHOD_NOT_FOUND);
}

#[tokio::test]
async fn lists_carry_caching_hints_only_when_stateless() {
    let d = dispatcher();
    let legacy = d
        .handle(req("tools/list", json!({})), ctx(Revision::Handshake))
        .await
        .unwrap();
    assert_eq!(legacy["tools"].as_array().unwrap().len(), 4);
    assert!(legacy.get("resultType").is_none() && legacy.get("ttlMs").is_none());
    let tool = &legacy["tools"][0];
    assert_eq!(tool["name"], "hub_echo");
    assert_eq!(tool["inputSchema"]["type"], "object");
    assert_eq!(tool["annotations"]["readOnlyHint"], true);
    for method in [
        "tools/list",
        "prompts/list",
        "resources/list",
        "resources/templates/list",
    ] {
        let r = d
            .handle(req(method, json!({})), ctx(Revision::Stateless))
            .await
            .unwrap();
        assert_eq!(r["resultType"], "complete", "{method}");
        assert_eq!(r["cacheScope"], "public", "{method}");
        assert!(r["ttlMs"].as_u64().is_some(), "{method}");
    }
    let e = d
        .handle(
            req("tools/list", json!({"cursor": "x"})),
            ctx(Revision::Handshake),
        )
        .await
        .unwrap_err();
    assert_eq!(e.code, jsonrpc::INVALID_PARAMS);
}

#[tokio::test]
async fn tool_calls_map_results_errors_and_unknown_tools() {
    let d = dispatcher();
    let ok = d
        .handle(
            req("tools/call", json!({"name": "hub.echo", "arguments": {"a": 1}})),
            ctx(Revision::Handshake),
        )
        .await
        .unwrap();
    assert_eq!(ok["structuredContent"], json!({"echo": {"a": 1}}));
    assert_eq!(ok["content"][0]["type"], "text");
    let text: Value = serde_json::from_str(ok["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(text, ok["structuredContent"]);
    assert!(ok.get("isError").is_none());
    let flagged = d
        .handle(
            req(
                "tools/call",
                json!({"name": "hub_echo", "arguments": {"fail": 1}}),
            ),
            ctx(Revision::Handshake),
        )
        .await
        .unwrap();
    assert_eq!(flagged["isError"], true);
    assert_eq!(
        flagged["structuredContent"]["echo"]["fail"], 1,
        "the output stays readable"
    );

    let failed = d
        .handle(
            req("tools/call", json!({"name": "hub_fail"})),
            ctx(Revision::Stateless),
        )
        .await
        .unwrap();
    assert_eq!(failed["isError"], true);
    assert_eq!(failed["resultType"], "complete");
    assert!(
        failed["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("x is required")
    );

    for params in [
        json!({"name": "nope"}),
        json!({"arguments": {}}),
        json!({"name": "hub_echo", "arguments": 3}),
    ] {
        let e = d
            .handle(req("tools/call", params.clone()), ctx(Revision::Handshake))
            .await
            .unwrap_err();
        assert_eq!(e.code, jsonrpc::INVALID_PARAMS, "{params}");
    }
    let e = d
        .handle(
            req("tools/call", json!({"name": "nope"})),
            ctx(Revision::Handshake),
        )
        .await
        .unwrap_err();
    assert!(
        e.message.contains("hub_echo"),
        "the error names the real tools: {}",
        e.message
    );
}

#[tokio::test]
async fn cancelling_the_token_ends_the_call() {
    let d = dispatcher();
    let c = ctx(Revision::Handshake);
    let token = c.cancel.clone();
    let call = req("tools/call", json!({"name": "hub_wait"}));
    let (r, ()) = tokio::join!(d.handle(call, c), async { token.cancel() });
    assert_eq!(r.unwrap_err().code, jsonrpc::REQUEST_CANCELLED);
}

#[test]
fn initialize_result_echoes_the_version() {
    let r = dispatcher().initialize_result("2025-06-18", &local());
    assert_eq!(r["protocolVersion"], "2025-06-18");
    assert_eq!(r["capabilities"]["tools"]["listChanged"], false);
    assert_eq!(r["serverInfo"]["name"], "wasmhub");
}
