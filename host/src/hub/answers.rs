//! The answers of the four meta-tools: what `hub_list`, `hub_search`, `hub_schema`
//! and `hub_call` return to one caller, from one registry snapshot and the agents
//! published (`agents.NAME`, `hub::agent_calls`), listed after the plugins'
//! operations. The [`Hub`] facade picks the snapshot and the caller; the shapes are
//! the output schemas in `meta_tools`.
//!
//! [`Hub`]: super::Hub

use super::agent_calls::{self, AgentSet};
use super::auth::Caller;
use super::error::ToolError;
use super::meta_tools::{CallArgs, ListArgs, SEARCH_DEFAULT_LIMIT, SchemaArgs, SearchArgs};
use super::protocol::{self, ProgressFn};
use super::registry::{OpRef, Registry};
use super::search;
use super::state::CallScope;
use serde_json::{Map, Value, json};

/// `hub_list`: the operations `caller` may call, in name order, and the
/// instructions of the plugins they belong to (plugin name → text, sorted), for the
/// plugins that give any.
pub(crate) fn list(registry: &Registry, agents: &AgentSet, caller: &Caller, args: &ListArgs) -> Value {
    let mut instructions = Map::new();
    let mut operations: Vec<Value> = callable(registry, caller, args.namespace.as_deref())
        .inspect(|op| {
            if let Some(text) = op.source.instructions() {
                instructions.insert(op.source.name().to_string(), json!(text));
            }
        })
        .map(entry)
        .collect();
    operations.extend(
        callable_agents(agents, caller, args.namespace.as_deref())
            .map(|(tool, a)| entry_of(tool, &a.description, &agent_calls::HINTS)),
    );
    let mut out = json!({ "operations": operations });
    if !instructions.is_empty() {
        out["instructions"] = Value::Object(instructions);
    }
    out
}

/// `hub_search`: the best matches `caller` may call, or everything visible in name
/// order when there is no query.
pub(crate) fn search(registry: &Registry, agents: &AgentSet, caller: &Caller, args: &SearchArgs) -> Value {
    let q = args.q.trim();
    let namespace = args.namespace.as_deref();
    let limit = args.limit.unwrap_or(SEARCH_DEFAULT_LIMIT);
    let result = |op: &OpRef, score: f32| json!({ "tool": op.tool, "description": op.operation().description, "score": (score * 1000.0).round() / 1000.0 });
    let agent = |tool: &str, description: &str, score: f32| json!({ "tool": tool, "description": description, "score": (score * 1000.0).round() / 1000.0 });
    let results: Vec<Value> = if q.is_empty() {
        callable(registry, caller, namespace)
            .map(|op| result(op, 0.0))
            .chain(
                callable_agents(agents, caller, namespace).map(|(tool, a)| agent(tool, &a.description, 0.0)),
            )
            .take(limit)
            .collect()
    } else {
        // The plugins' and the agents' hits, best first (each index scores its own).
        let index = &registry.index;
        let mut hits: Vec<(f32, Value)> = index
            .search(q, namespace, limit, |doc| caller.may_call(index.tool(doc)))
            .into_iter()
            .map(|hit| (hit.score, result(registry.visible_at(hit.doc), hit.score)))
            .collect();
        let own = &agents.index;
        hits.extend(
            own.search(q, namespace, limit, |doc| caller.may_call(own.tool(doc)))
                .into_iter()
                .map(|hit| {
                    (
                        hit.score,
                        agent(own.tool(hit.doc), &agents.ops[hit.doc].description, hit.score),
                    )
                }),
        );
        hits.sort_by(|a, b| b.0.total_cmp(&a.0));
        hits.into_iter().take(limit).map(|(_, v)| v).collect()
    };
    json!({ "results": results })
}

/// `hub_schema`: an operation's description and schemas, if `caller` may call it.
pub(crate) fn schema(
    registry: &Registry,
    agents: &AgentSet,
    caller: &Caller,
    args: &SchemaArgs,
) -> Result<Value, ToolError> {
    let tool = args.tool.as_str();
    if registry.get(tool).is_none()
        && let Some(a) = agents.get(tool)
    {
        if !caller.may_call(tool) {
            return Err(ToolError::Forbidden {
                tool: tool.to_string(),
                caller: caller.name().to_string(),
            });
        }
        return Ok(json!({
            "tool": tool, "description": a.description,
            "inputSchema": agent_calls::input_schema(), "outputSchema": agent_calls::output_schema(),
        }));
    }
    let Some(op) = registry.get(tool) else {
        let suggestions = search::suggest(tool, registry.tool_names().filter(|t| caller.may_call(t)));
        return Err(ToolError::NotFound {
            tool: tool.to_string(),
            suggestions,
        });
    };
    if !caller.may_call(tool) {
        return Err(ToolError::Forbidden {
            tool: tool.to_string(),
            caller: caller.name().to_string(),
        });
    }
    let operation = op.operation();
    let mut out = json!({
        "tool": op.tool,
        "description": operation.description,
        "inputSchema": operation.input_schema,
    });
    if let Some(output) = &operation.output_schema {
        out["outputSchema"] = output.clone();
    }
    if !operation.examples.is_empty() {
        out["examples"] = json!(operation.examples);
    }
    Ok(out)
}

/// `hub_call`: runs the batch (at most `max_batch` calls) and reports every call's
/// result or error, in input order.
pub(crate) async fn call(
    scope: &CallScope<'_>,
    max_batch: usize,
    args: CallArgs,
    progress: Option<&ProgressFn>,
) -> Result<Value, ToolError> {
    let calls = args.calls;
    if calls.len() > max_batch {
        return Err(ToolError::BatchTooLarge {
            count: calls.len(),
            limit: max_batch,
        });
    }
    let tools: Vec<String> = calls.iter().map(|c| c.tool.clone()).collect();
    let outcomes = protocol::call_batch(scope, calls, progress).await;
    if scope.cancel.is_cancelled() {
        return Err(ToolError::Cancelled);
    }
    // Built from their parts: `json!` would copy each output once more.
    let results: Vec<Value> = tools
        .into_iter()
        .zip(outcomes)
        .map(|(tool, outcome)| {
            let mut entry = Map::new();
            entry.insert("tool".into(), Value::String(tool));
            match outcome {
                Ok(result) => {
                    entry.insert("ok".into(), true.into());
                    entry.insert("result".into(), result);
                }
                Err(error) => {
                    entry.insert("ok".into(), false.into());
                    entry.insert("error".into(), error.to_json());
                }
            }
            Value::Object(entry)
        })
        .collect();
    let mut answer = Map::new();
    answer.insert("results".into(), Value::Array(results));
    Ok(Value::Object(answer))
}

/// One `hub_list` entry of an operation.
fn entry(op: &OpRef) -> Value {
    let operation = op.operation();
    entry_of(&op.tool, &operation.description, &operation.hints)
}

/// One `hub_list` entry: tool, description and the hints that hold.
fn entry_of(tool: &str, description: &str, hints: &crate::runtime::Hints) -> Value {
    let mut out = Map::new();
    out.insert("tool".into(), json!(tool));
    out.insert("description".into(), json!(description));
    for (name, set) in [
        ("readOnly", hints.read_only),
        ("destructive", hints.destructive),
        ("idempotent", hints.idempotent),
        ("openWorld", hints.open_world),
    ] {
        if set {
            out.insert(name.into(), Value::Bool(true));
        }
    }
    Value::Object(out)
}

/// Visible operations `caller` may call, in name order, optionally one namespace.
/// The agents `caller` may call, in `namespace` (`agents`) or any.
fn callable_agents<'a>(
    agents: &'a AgentSet,
    caller: &'a Caller,
    namespace: Option<&'a str>,
) -> impl Iterator<Item = (&'a str, &'a agent_calls::AgentOperation)> {
    let shown = namespace.is_none_or(|ns| ns == agent_calls::NAMESPACE);
    agents
        .tools()
        .filter(move |(tool, _)| shown && caller.may_call(tool))
}

fn callable<'a>(
    registry: &'a Registry,
    caller: &'a Caller,
    namespace: Option<&'a str>,
) -> impl Iterator<Item = &'a OpRef> {
    registry
        .visible()
        .filter(move |op| namespace.is_none_or(|ns| op.source.name() == ns) && caller.may_call(&op.tool))
}

/// Whether `output` is a `hub_call` answer every call of which failed: a tool
/// error for the model (MCP's `isError`, the spans' `error.type = tool_error`).
pub(crate) fn every_call_failed(output: &Value) -> bool {
    output["results"]
        .as_array()
        .is_some_and(|r| !r.is_empty() && r.iter().all(|c| c["ok"] == Value::Bool(false)))
}
