//! The MCP backend over the real hub: `tools/list` is the hub's single definition
//! of the four meta-tools (plus MCP's display title and behaviour annotations),
//! authentication is the hub's tokens, and every `tools/call` goes through
//! [`Hub::invoke`], the call protocol every surface shares.

use super::backend::{
    ApprovalNeed, BackendCall, BoxFuture, ClientApproval, InvokeError, McpBackend, Progress, ToolOutput,
    ToolSpec,
};
use crate::hub::{
    AuthError, CallArgs, CallContext, Caller, Credentials, Hub, MetaToolKind, MetaToolRequest, ProgressEvent,
    ProgressFn, ToolError,
};
use crate::surfaces::auth::Gatekeeper;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// [`McpBackend`] for `Arc<Hub>`.
pub(crate) struct HubBackend {
    hub: Arc<Hub>,
}

impl HubBackend {
    /// Whether any operation named in `hub_call` arguments (read as they are, not
    /// yet checked) needs an approval for `caller`.
    fn may_ask(&self, arguments: &Value, caller: &Caller) -> bool {
        let Some(calls) = arguments.get("calls").and_then(Value::as_array) else {
            return false;
        };
        let tools = calls.iter().filter_map(|c| c.get("tool").and_then(Value::as_str));
        self.hub
            .approvals_needed(caller, tools)
            .iter()
            .any(Option::is_some)
    }

    pub(crate) fn new(hub: Arc<Hub>) -> HubBackend {
        HubBackend { hub }
    }
}

/// MCP's human title and `ToolAnnotations` of each meta-tool. Listing, searching
/// and reading schemas only read the registry; `hub_call` runs operations that may
/// do anything their plugin is granted, including reaching the network.
fn presentation(kind: MetaToolKind) -> (&'static str, Value) {
    let read_only = json!({ "readOnlyHint": true, "idempotentHint": true, "openWorldHint": false });
    match kind {
        MetaToolKind::List => ("List operations", read_only),
        MetaToolKind::Search => ("Search operations", read_only),
        MetaToolKind::Schema => ("Operation schema", read_only),
        MetaToolKind::Call => (
            "Call operations",
            json!({ "readOnlyHint": false, "openWorldHint": true }),
        ),
    }
}

#[async_trait::async_trait]
impl Gatekeeper for HubBackend {
    async fn authenticate(&self, creds: Credentials<'_>) -> Result<Caller, AuthError> {
        self.hub.authenticate(creds).await
    }

    fn local_operator(&self) -> Caller {
        self.hub.local_operator()
    }

    fn oauth_base(&self) -> Option<&str> {
        self.hub.oauth_base()
    }
}

impl McpBackend for HubBackend {
    fn instructions(&self, caller: &Caller) -> Option<String> {
        self.hub.instructions(caller)
    }

    fn tools(&self) -> Vec<ToolSpec> {
        MetaToolKind::ALL
            .into_iter()
            .map(|kind| {
                let t = kind.tool();
                let (title, annotations) = presentation(kind);
                ToolSpec {
                    name: t.name.to_string(),
                    title: Some(title.to_string()),
                    description: t.description.to_string(),
                    input_schema: t.input_schema.clone(),
                    output_schema: Some(t.output_schema.clone()),
                    annotations,
                }
            })
            .collect()
    }

    fn approvals_needed(&self, tool: &str, arguments: &Value, caller: &Caller) -> Vec<ApprovalNeed> {
        // Nearly every call needs none: the operation names say so without checking
        // and copying the arguments a second time (`invoke` does that).
        if MetaToolKind::parse(tool) != Some(MetaToolKind::Call) || !self.may_ask(arguments, caller) {
            return Vec::new();
        }
        // Invalid arguments need no approval: the call fails on its own.
        let Ok(MetaToolRequest::Call(args)) = MetaToolRequest::parse(tool, arguments.clone()) else {
            return Vec::new();
        };
        let asks = self
            .hub
            .approvals_needed(caller, args.calls.iter().map(|c| c.tool.as_str()));
        args.calls
            .into_iter()
            .zip(asks)
            .enumerate()
            .filter_map(|(index, (call, ask))| {
                let ask = ask?;
                Some(ApprovalNeed {
                    index,
                    tool: ask.tool,
                    description: ask.description,
                    input: Value::Object(call.input),
                    hints: ask.hints,
                    policy: ask.policy,
                })
            })
            .collect()
    }

    fn invoke(&self, call: BackendCall) -> BoxFuture<'_, Result<ToolOutput, InvokeError>> {
        Box::pin(async move {
            let mut request = MetaToolRequest::parse(&call.tool, call.arguments);
            let is_call = matches!(request, Ok(MetaToolRequest::Call(_)));
            // Declined: the asking operations fail here, the rest of the batch runs.
            let mut declined = Vec::new();
            if let (Some(answer), Ok(MetaToolRequest::Call(args))) = (&call.approval, &mut request)
                && !answer.approved
            {
                declined = self.decline(&call.caller, args, answer);
            }
            let ctx = CallContext {
                caller: call.caller,
                cancel: call.cancel,
                progress: call.progress.map(progress_fn),
                approved_by: call.approval.filter(|a| a.approved).map(|a| a.by),
                session: None,
                agent: None,
                parent: None,
            };
            let answer = match request {
                Ok(MetaToolRequest::Call(args)) if args.calls.is_empty() && !declined.is_empty() => {
                    Ok(json!({ "results": [] }))
                }
                Ok(request) => self.hub.invoke(request, ctx).await,
                Err(e) => Err(e),
            };
            let answer = answer.map(|value| splice(value, declined));
            match answer {
                Ok(value) => Ok(ToolOutput {
                    is_error: is_call && crate::hub::every_call_failed(&value),
                    value,
                }),
                Err(ToolError::UnknownTool { name, .. }) => Err(InvokeError::UnknownTool { name }),
                Err(ToolError::Cancelled) => Err(InvokeError::Cancelled),
                Err(e) => Err(InvokeError::Failed(e.to_json())),
            }
        })
    }
}

impl HubBackend {
    /// Takes the operations that asked for an approval out of `args` and returns
    /// them, with their batch positions, as `approval_denied` results.
    fn decline(&self, caller: &Caller, args: &mut CallArgs, answer: &ClientApproval) -> Vec<(usize, Value)> {
        let asks = self
            .hub
            .approvals_needed(caller, args.calls.iter().map(|c| c.tool.as_str()));
        let mut denied = Vec::new();
        let mut kept = Vec::new();
        for (index, (call, ask)) in std::mem::take(&mut args.calls).into_iter().zip(asks).enumerate() {
            match ask {
                None => kept.push(call),
                Some(ask) => {
                    let mut error = json!({
                        "code": crate::hub::ErrorCode::ApprovalDenied.as_str(),
                        "message": format!(
                            "{} was not approved: {} declined it; do not retry it as it is",
                            call.tool, answer.by
                        ),
                    });
                    if let Some(policy) = ask.policy {
                        error["policy"] = policy.into();
                    }
                    denied.push((index, json!({ "tool": call.tool, "ok": false, "error": error })));
                }
            }
        }
        args.calls = kept;
        denied
    }
}

/// Puts the `denied` results back at their batch positions among `output`'s results.
fn splice(mut output: Value, denied: Vec<(usize, Value)>) -> Value {
    if denied.is_empty() {
        return output;
    }
    if let Some(results) = output.get_mut("results").and_then(Value::as_array_mut) {
        for (index, result) in denied {
            let at = index.min(results.len());
            results.insert(at, result);
        }
    }
    output
}

/// The hub reports each finished call of a batch; MCP wants a growing number.
fn progress_fn(sink: super::backend::ProgressSink) -> ProgressFn {
    let done = AtomicUsize::new(0);
    Arc::new(move |e: ProgressEvent| {
        let n = done.fetch_add(1, Ordering::Relaxed) + 1;
        let message = match e.error {
            None => format!("{} finished", e.tool),
            Some(code) => format!("{} failed: {}", e.tool, code.as_str()),
        };
        sink(Progress {
            progress: n as f64,
            total: Some(e.total as f64),
            message: Some(message),
        });
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hub;
    use crate::hub::every_call_failed;

    #[test]
    fn declined_results_go_back_to_their_positions() {
        let out = splice(
            json!({"results": [{"tool": "b"}, {"tool": "d"}]}),
            vec![(0, json!({"tool": "a"})), (2, json!({"tool": "c"}))],
        );
        let tools: Vec<&str> = out["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["tool"].as_str().unwrap())
            .collect();
        assert_eq!(tools, ["a", "b", "c", "d"]);
    }

    #[test]
    fn only_an_all_failed_batch_is_an_error() {
        assert!(every_call_failed(
            &json!({"results": [{"tool": "a.b", "ok": false, "error": {}}]})
        ));
        assert!(!every_call_failed(
            &json!({"results": [{"ok": false}, {"ok": true}]})
        ));
        assert!(!every_call_failed(&json!({"results": []})));
        assert!(!every_call_failed(&json!({"operations": []})));
    }

    #[test]
    fn progress_counts_finished_calls() {
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink_seen = seen.clone();
        let f = progress_fn(Arc::new(move |p: Progress| sink_seen.lock().unwrap().push(p)));
        for (index, error) in [(1, None), (0, Some(hub::ErrorCode::Forbidden))] {
            f(ProgressEvent {
                index,
                total: 2,
                tool: "text.upper".into(),
                error,
                duration: Default::default(),
            });
        }
        let seen = seen.lock().unwrap();
        assert_eq!(
            seen.iter().map(|p| p.progress).collect::<Vec<_>>(),
            vec![1.0, 2.0]
        );
        assert_eq!(seen[1].total, Some(2.0));
        assert_eq!(seen[1].message.as_deref(), Some("text.upper failed: forbidden"));
    }

    #[test]
    fn tools_come_from_the_hub_definition() {
        let names: Vec<&str> = hub::meta_tools().iter().map(|t| t.name).collect();
        assert_eq!(names, ["hub_list", "hub_search", "hub_schema", "hub_call"]);
        for t in hub::meta_tools() {
            let (title, annotations) = presentation(MetaToolKind::parse(t.name).unwrap());
            assert!(!title.is_empty());
            assert!(annotations["readOnlyHint"].is_boolean());
            assert_eq!(
                t.output_schema["type"], "object",
                "MCP 2025-11-25 requires object output schemas"
            );
        }
    }
}
