//! The MCP methods, independent of the transport: what each revision answers to
//! `initialize`, `server/discover`, `ping`, `tools/list`, `tools/call`, and the
//! empty `prompts/list` / `resources/list` / `resources/templates/list`.
//!
//! Results of the stateless revision carry `resultType: "complete"`, and its list
//! results carry the caching hints `ttlMs` and `cacheScope` (the tool list is the
//! same for every caller and never changes while the process runs, so it is
//! `public`). A tool result carries the output twice, as text JSON in `content` for
//! clients that only read text, and as `structuredContent` matching the tool's
//! `outputSchema`; tool-level failures are results with `isError: true`, while an
//! unknown tool name is a JSON-RPC -32602 error.

use super::approval::{self, Elicitor, McpClient};
use super::backend::{
    ApprovalNeed, BackendCall, ClientApproval, InvokeError, McpBackend, ProgressSink, ToolOutput, ToolSpec,
};
use super::jsonrpc::{self, Request, RpcError};
use super::method::McpMethod;
use super::request_state::RequestStates;
use super::revision::{self, Revision};
use crate::hub::auth::Caller;
use crate::hub::cancel::CancelToken;
use crate::race::{Race, race};
use serde_json::{Map, Value, json};
use std::sync::Arc;
use std::time::Duration;

/// How long clients may cache list results of the stateless revision, in ms.
const LIST_TTL_MS: u64 = 3_600_000;

const INSTRUCTIONS: &str = "This hub exposes its operations (plugin.operation) through four meta-tools: \
hub_search or hub_list to find operations, hub_schema to read one operation's input schema, and hub_call \
to run one or more operations in a single call.";

/// Everything a method needs besides its request.
pub(crate) struct CallCtx {
    pub revision: Revision,
    pub caller: Caller,
    pub cancel: CancelToken,
    /// Set when the client sent `_meta.progressToken` and the transport can
    /// deliver notifications.
    pub progress: Option<ProgressSink>,
    /// Set when the client declared `elicitation` at `initialize` and the
    /// transport can send it a request while this one runs (2025-11-25 era).
    pub elicitor: Option<Elicitor>,
    /// The MCP session the request belongs to (`Mcp-Session-Id`, handshake era).
    pub session: Option<String>,
    /// `network.transport` of the request: `tcp` (HTTP) or `pipe` (stdio).
    pub transport: &'static str,
}

/// The MCP methods over one backend.
pub(crate) struct Dispatcher {
    backend: Arc<dyn McpBackend>,
    tools: Vec<ToolSpec>,
    /// `tools/list`'s `tools` array, built once.
    tools_json: Value,
    server_info: Value,
    /// Issues and checks the `requestState` of 2026-07-28 `input_required` answers.
    states: RequestStates,
}

impl Dispatcher {
    /// A dispatcher with the default approval time (`server.mcp_approval_secs`).
    #[cfg(test)]
    pub(crate) fn new(backend: Arc<dyn McpBackend>) -> Dispatcher {
        let secs = crate::config::ServerConfig::default().mcp_approval_secs;
        Dispatcher::with_approval_time(backend, Duration::from_secs(secs))
    }

    /// A dispatcher whose approval questions wait `approval_time` for an answer
    /// (2025-11-25) or stay answerable that long (the 2026-07-28 `requestState`).
    pub(crate) fn with_approval_time(backend: Arc<dyn McpBackend>, approval_time: Duration) -> Dispatcher {
        let tools = backend.tools();
        let tools_json = Value::Array(tools.iter().map(tool_json).collect());
        let server_info =
            json!({ "name": "wasmhub", "title": "wasmhub tool hub", "version": env!("CARGO_PKG_VERSION") });
        Dispatcher {
            backend,
            tools,
            tools_json,
            server_info,
            states: RequestStates::new(approval_time),
        }
    }

    /// This dispatcher, signing `requestState`s with `key` (the one every replica
    /// of the session store shares) instead of its own random key.
    pub(crate) fn with_state_key(mut self, key: &[u8]) -> Dispatcher {
        self.states = RequestStates::with_key(key, self.states.lifetime());
        self
    }

    /// Whether `req` is a `tools/call` some of whose operations `caller` needs a
    /// person's approval for (transports answer those as an event stream when
    /// they can ask the client).
    pub(crate) fn needs_approval(&self, req: &Request, caller: &Caller) -> bool {
        if req.known_method() != Some(McpMethod::ToolsCall) {
            return false;
        }
        let Ok(tool) = self.call_target(req) else {
            return false;
        };
        let empty = Value::Object(Map::new());
        let arguments = req
            .params_object()
            .and_then(|p| p.get("arguments"))
            .filter(|a| a.is_object())
            .unwrap_or(&empty);
        !self
            .backend
            .approvals_needed(&tool.name, arguments, caller)
            .is_empty()
    }

    pub(crate) fn backend(&self) -> &Arc<dyn McpBackend> {
        &self.backend
    }

    /// The tool `name` (wire or dotted spelling) names.
    pub(crate) fn tool(&self, name: &str) -> Option<&ToolSpec> {
        self.tools.iter().find(|t| t.answers_to(name))
    }

    /// The result of `initialize` for the negotiated handshake-era `version`.
    pub(crate) fn initialize_result(&self, version: &str, caller: &Caller) -> Value {
        json!({
            "protocolVersion": version,
            "capabilities": capabilities(),
            "serverInfo": self.server_info,
            "instructions": self.instructions(caller),
        })
    }

    /// The hub's own instructions, then those of the plugins `caller` may use.
    fn instructions(&self, caller: &Caller) -> String {
        match self.backend.instructions(caller) {
            Some(plugins) => format!("{INSTRUCTIONS}\n\n{plugins}"),
            None => INSTRUCTIONS.to_string(),
        }
    }

    /// The checks that need no work: the method exists in `revision`, and a
    /// `tools/call` is well formed and names a known tool. Transports run this
    /// before committing to a streamed response, so these errors keep their HTTP
    /// status.
    pub(crate) fn preflight(&self, revision: Revision, req: &Request) -> Result<(), RpcError> {
        if served_method(revision, req)? == McpMethod::ToolsCall {
            self.call_target(req)?;
        }
        Ok(())
    }

    /// Answers one request (`initialize` excepted: opening a session is the
    /// transport's business, see [`Dispatcher::initialize_result`]).
    pub(crate) async fn handle(&self, req: Request, ctx: CallCtx) -> Result<Value, RpcError> {
        let started = std::time::Instant::now();
        let method = req.known_method();
        let mut span = super::span::start(&req, &ctx);
        let answer = crate::telemetry::within(span.context().cloned(), self.answer(req, ctx)).await;
        super::span::finish(&mut span, &answer);
        super::metrics::observe(method, &answer, started.elapsed());
        answer
    }

    async fn answer(&self, req: Request, ctx: CallCtx) -> Result<Value, RpcError> {
        // The rest of preflight, the tools/call target, is checked by `call` itself.
        let method = served_method(ctx.revision, &req)?;
        let stateless = ctx.revision == Revision::Stateless;
        let mut result = match method {
            McpMethod::Ping => json!({}),
            McpMethod::ServerDiscover => self.discover_result(&ctx.caller),
            McpMethod::ToolsList => {
                reject_cursor(&req)?;
                json!({ "tools": self.tools_json })
            }
            McpMethod::PromptsList => {
                reject_cursor(&req)?;
                json!({ "prompts": [] })
            }
            McpMethod::ResourcesList => {
                reject_cursor(&req)?;
                json!({ "resources": [] })
            }
            McpMethod::ResourcesTemplatesList => {
                reject_cursor(&req)?;
                json!({ "resourceTemplates": [] })
            }
            McpMethod::ToolsCall => self.call(req, ctx).await?,
            McpMethod::Initialize => {
                return Err(RpcError::invalid_request(
                    "initialize is answered by the transport, not here",
                ));
            }
            // Not served: `served_method` has already refused them.
            McpMethod::PromptsGet
            | McpMethod::ResourcesRead
            | McpMethod::NotificationsCancelled
            | McpMethod::NotificationsProgress
            | McpMethod::ElicitationCreate => return Err(RpcError::method_not_found(method.as_str())),
        };
        if stateless && let Value::Object(obj) = &mut result {
            obj.entry("resultType").or_insert_with(|| "complete".into());
            if method.is_list() {
                obj.insert("ttlMs".into(), LIST_TTL_MS.into());
                obj.insert("cacheScope".into(), "public".into());
            }
        }
        Ok(result)
    }

    /// [`Dispatcher::handle`] as the JSON-RPC response object to send.
    pub(crate) async fn respond(&self, req: Request, ctx: CallCtx) -> Value {
        let id = req.id.clone();
        match self.handle(req, ctx).await {
            Ok(result) => jsonrpc::result_response(&id, result),
            Err(error) => jsonrpc::error_response(&id, &error),
        }
    }

    /// The plugins' part of the instructions depends on the caller's allowlist and
    /// on the plugins loaded now, so this answer may be cached privately only.
    fn discover_result(&self, caller: &Caller) -> Value {
        json!({
            "supportedVersions": revision::SUPPORTED_VERSIONS,
            "capabilities": capabilities(),
            "instructions": self.instructions(caller),
            "ttlMs": LIST_TTL_MS,
            "cacheScope": "private",
            "_meta": { revision::META_SERVER_INFO: self.server_info },
        })
    }

    /// The tool and arguments of a `tools/call`, or the -32602 error saying what is wrong.
    fn call_target<'s>(&'s self, req: &Request) -> Result<&'s ToolSpec, RpcError> {
        let params = req
            .params_object()
            .ok_or_else(|| RpcError::invalid_params("tools/call needs params {\"name\", \"arguments\"}"))?;
        let name = params
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| RpcError::invalid_params("params.name must be a string naming a tool"))?;
        let tool = self.tool(name).ok_or_else(|| self.unknown_tool(name))?;
        match params.get("arguments") {
            None | Some(Value::Null | Value::Object(_)) => Ok(tool),
            Some(_) => Err(RpcError::invalid_params("params.arguments must be an object")),
        }
    }

    fn unknown_tool(&self, name: &str) -> RpcError {
        let known: Vec<&str> = self.tools.iter().map(|t| t.name.as_str()).collect();
        RpcError::invalid_params(format!(
            "unknown tool {name:?}; this server's tools are {}",
            known.join(", ")
        ))
    }

    async fn call(&self, req: Request, ctx: CallCtx) -> Result<Value, RpcError> {
        let tool = self.call_target(&req)?;
        let meta = req.meta();
        let client = McpClient::read(
            meta.and_then(|m| m.get(revision::META_CLIENT_INFO)),
            meta.and_then(|m| m.get(revision::META_CLIENT_CAPABILITIES)),
        );
        // Checked by call_target: absent, null or an object. Moved, not copied.
        let mut params = match req.params {
            Some(Value::Object(params)) => params,
            _ => Map::new(),
        };
        let arguments = params
            .remove("arguments")
            .filter(Value::is_object)
            .unwrap_or_else(|| Value::Object(Map::new()));
        let needs = self.backend.approvals_needed(&tool.name, &arguments, &ctx.caller);
        let approval = if needs.is_empty() {
            None
        } else if ctx.revision == Revision::Stateless {
            let retry = (params.remove("requestState"), params.remove("inputResponses"));
            match retry {
                (None, None) if client.elicitation => {
                    return Ok(self.input_required(&needs, &ctx.caller, &tool.name, &arguments));
                }
                (None, None) => None,
                (state, responses) => Some(self.read_retry(
                    state.as_ref(),
                    responses.as_ref(),
                    &ctx.caller,
                    &tool.name,
                    &arguments,
                    &client,
                )?),
            }
        } else if let Some(elicitor) = &ctx.elicitor {
            self.elicit(elicitor, &needs, &ctx.cancel).await?
        } else {
            None
        };
        let call = BackendCall {
            tool: tool.name.clone(),
            arguments,
            caller: ctx.caller,
            cancel: ctx.cancel,
            progress: ctx.progress,
            approval,
        };
        match self.backend.invoke(call).await {
            Ok(output) => Ok(tool_result(output, tool.output_schema.is_some())),
            Err(InvokeError::UnknownTool { name }) => Err(self.unknown_tool(&name)),
            Err(InvokeError::Cancelled) => Err(cancelled()),
            Err(InvokeError::Failed(error)) => Ok(tool_error_result(error)),
        }
    }

    /// Asks the client over its connection (2025-11-25) and waits for the answer,
    /// at most the approval time; `None` when none came (nobody decided).
    async fn elicit(
        &self,
        elicitor: &Elicitor,
        needs: &[ApprovalNeed],
        cancel: &CancelToken,
    ) -> Result<Option<ClientApproval>, RpcError> {
        let asked = (elicitor.send)(approval::elicitation_params(needs));
        let waited = race(
            tokio::time::timeout(self.states.lifetime(), asked),
            cancel.cancelled(),
        )
        .await;
        let answer = match waited {
            Race::Second(()) => return Err(cancelled()),
            Race::First(Ok(Some(Ok(result)))) => approval::read_answer(&result, &elicitor.by),
            Race::First(Ok(Some(Err(error)))) => {
                crate::warn!(
                    "mcp: {} answered the approval question with an error: {error}",
                    elicitor.by
                );
                None
            }
            Race::First(Ok(None)) => None,
            Race::First(Err(_elapsed)) => {
                crate::info!(
                    "mcp: {} did not answer the approval question within {} s",
                    elicitor.by,
                    self.states.lifetime().as_secs()
                );
                None
            }
        };
        Ok(answer)
    }

    /// The 2026-07-28 answer asking the client for the approval.
    fn input_required(
        &self,
        needs: &[ApprovalNeed],
        caller: &Caller,
        tool: &str,
        arguments: &Value,
    ) -> Value {
        let state = self
            .states
            .issue(caller.name(), tool, arguments, crate::clock::now_ms());
        json!({
            "resultType": "input_required",
            "inputRequests": {
                approval::INPUT_KEY: {
                    "method": McpMethod::ElicitationCreate.as_str(),
                    "params": approval::elicitation_params(needs),
                }
            },
            "requestState": state,
        })
    }

    /// The approval a 2026-07-28 retry carries, once its `requestState` proves
    /// this server asked this caller about this very call.
    fn read_retry(
        &self,
        state: Option<&Value>,
        responses: Option<&Value>,
        caller: &Caller,
        tool: &str,
        arguments: &Value,
        client: &McpClient,
    ) -> Result<ClientApproval, RpcError> {
        let state = state.and_then(Value::as_str).ok_or_else(|| {
            RpcError::invalid_params(
                "inputResponses needs the requestState of the input_required answer, echoed as a string",
            )
        })?;
        self.states
            .verify(state, caller.name(), tool, arguments, crate::clock::now_ms())
            .map_err(|e| RpcError::invalid_params(e.to_string()))?;
        let by = format!("MCP client {} of token {}", client.name, caller.name());
        responses
            .and_then(|r| r.get(approval::INPUT_KEY))
            .and_then(|answer| approval::read_answer(answer, &by))
            .ok_or_else(|| {
                RpcError::invalid_params(format!(
                    "inputResponses.{} must be the elicitation result {{\"action\": \"accept\"|\"decline\"|\"cancel\", \"content\"?}}",
                    approval::INPUT_KEY
                ))
            })
    }
}

fn cancelled() -> RpcError {
    RpcError::new(jsonrpc::REQUEST_CANCELLED, "the request was cancelled")
}

/// `req`'s method when it is a request method of `revision`, else -32601.
fn served_method(revision: Revision, req: &Request) -> Result<McpMethod, RpcError> {
    req.known_method()
        .filter(|m| served_in(revision, *m))
        .ok_or_else(|| RpcError::method_not_found(&req.method))
}

/// Whether `method` is a request method of `revision` (notifications excluded).
pub(crate) fn served_in(revision: Revision, method: McpMethod) -> bool {
    match method {
        McpMethod::ToolsList
        | McpMethod::ToolsCall
        | McpMethod::PromptsList
        | McpMethod::ResourcesList
        | McpMethod::ResourcesTemplatesList => true,
        McpMethod::Initialize | McpMethod::Ping => revision == Revision::Handshake,
        McpMethod::ServerDiscover => revision == Revision::Stateless,
        McpMethod::PromptsGet
        | McpMethod::ResourcesRead
        | McpMethod::NotificationsCancelled
        | McpMethod::NotificationsProgress
        | McpMethod::ElicitationCreate => false,
    }
}

/// Tools never change; prompts and resources exist (empty) so clients that list
/// them get an answer, not an error.
fn capabilities() -> Value {
    json!({
        "tools": { "listChanged": false },
        "prompts": { "listChanged": false },
        "resources": { "subscribe": false, "listChanged": false },
    })
}

/// We never hand out cursors, so any cursor is one we did not issue.
fn reject_cursor(req: &Request) -> Result<(), RpcError> {
    match req.params_object().and_then(|p| p.get("cursor")) {
        None | Some(Value::Null) => Ok(()),
        Some(_) => Err(RpcError::invalid_params(
            "invalid cursor: every list fits in one page",
        )),
    }
}

fn tool_json(t: &ToolSpec) -> Value {
    let mut obj = Map::new();
    obj.insert("name".into(), t.name.clone().into());
    if let Some(title) = &t.title {
        obj.insert("title".into(), title.clone().into());
    }
    obj.insert("description".into(), t.description.clone().into());
    obj.insert("inputSchema".into(), t.input_schema.clone());
    if let Some(out) = &t.output_schema {
        obj.insert("outputSchema".into(), out.clone());
    }
    if t.annotations.as_object().is_some_and(|a| !a.is_empty()) {
        obj.insert("annotations".into(), t.annotations.clone());
    }
    Value::Object(obj)
}

/// A call that returned: the output as text JSON and, when the tool declares an
/// output schema (which describes an object), as `structuredContent`.
pub(crate) fn tool_result(output: ToolOutput, structured: bool) -> Value {
    let ToolOutput { value, is_error } = output;
    // `serde_json::to_string`, not `Value`'s `Display` (through the formatter, twice as slow).
    let text = serde_json::to_string(&value).expect("a JSON value always serializes");
    let mut obj = Map::new();
    obj.insert("content".into(), text_content(text));
    if structured && value.is_object() {
        obj.insert("structuredContent".into(), value);
    }
    if is_error {
        obj.insert("isError".into(), true.into());
    }
    Value::Object(obj)
}

/// A tool-level failure the model can read and act on: `{"error": {code, message, …}}`
/// as text.
pub(crate) fn tool_error_result(error: Value) -> Value {
    let text = format!("{{\"error\":{error}}}");
    let mut obj = Map::new();
    obj.insert("content".into(), text_content(text));
    obj.insert("isError".into(), true.into());
    Value::Object(obj)
}

/// `[{"type": "text", "text": text}]`, the text moved in (`json!` would copy it).
fn text_content(text: String) -> Value {
    let mut part = Map::new();
    part.insert("type".into(), "text".into());
    part.insert("text".into(), Value::String(text));
    Value::Array(vec![Value::Object(part)])
}

#[cfg(test)]
pub(crate) mod tests;
