//! The four meta-tools, defined once: wire name, the description a model reads,
//! input JSON Schema and output JSON Schema. MCP's `tools/list`, the agent loop's
//! OpenAI function tools and the REST routes all take them from [`meta_tools`].
//! A request for one is a [`MetaToolRequest`]: the kind with its typed arguments,
//! made from JSON only after the arguments passed the input schema.
//!
//! The descriptions are the whole manual a model gets, so they teach the workflow
//! (search → schema → call, batch independent calls) in as few tokens as possible;
//! `hub_meta_tool_definitions_stay_small` in the tests guards their size.

use super::error::ToolError;
use super::search;
use super::validate;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};
use std::sync::OnceLock;

/// One meta-tool as every surface shows it.
pub struct MetaTool {
    /// Wire name (`hub_list`, …): valid as an OpenAI function name and an MCP tool name.
    pub name: &'static str,
    /// What the model reads: when to use the meta-tool and how.
    pub description: &'static str,
    /// JSON Schema of the arguments.
    pub input_schema: Value,
    /// JSON Schema of the result.
    pub output_schema: Value,
    /// Compiled `input_schema`, used to check arguments before the hub acts on them.
    pub(crate) validator: jsonschema::Validator,
}

/// Which meta-tool a name designates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetaToolKind {
    /// `hub_list`: the operations the caller may call.
    List,
    /// `hub_search`: operations ranked against a query.
    Search,
    /// `hub_schema`: one operation's input and output schemas.
    Schema,
    /// `hub_call`: a batch of operation calls.
    Call,
}

impl MetaToolKind {
    /// The four kinds, in the order of [`meta_tools`].
    pub const ALL: [MetaToolKind; 4] = [
        MetaToolKind::List,
        MetaToolKind::Search,
        MetaToolKind::Schema,
        MetaToolKind::Call,
    ];

    /// Accepts the wire name (`hub_call`) and the dotted spelling (`hub.call`), which
    /// docs/hub.md promises is accepted on input.
    pub fn parse(name: &str) -> Option<MetaToolKind> {
        let short = name.strip_prefix("hub_").or_else(|| name.strip_prefix("hub."))?;
        MetaToolKind::from_route(short)
    }

    /// The kind of the REST route `POST /api/hub/{list,search,schema,call}`.
    pub fn from_route(segment: &str) -> Option<MetaToolKind> {
        MetaToolKind::ALL
            .into_iter()
            .find(|k| &k.wire_name()["hub_".len()..] == segment)
    }

    /// The name clients send and see (`hub_list`, …).
    pub fn wire_name(self) -> &'static str {
        match self {
            MetaToolKind::List => "hub_list",
            MetaToolKind::Search => "hub_search",
            MetaToolKind::Schema => "hub_schema",
            MetaToolKind::Call => "hub_call",
        }
    }

    /// This kind's definition.
    pub fn tool(self) -> &'static MetaTool {
        let tools = meta_tools();
        &tools[self as usize]
    }
}

/// One meta-tool to run, with its arguments.
#[derive(Debug, Clone, PartialEq)]
pub enum MetaToolRequest {
    /// A `hub_list` request.
    List(ListArgs),
    /// A `hub_search` request.
    Search(SearchArgs),
    /// A `hub_schema` request.
    Schema(SchemaArgs),
    /// A `hub_call` request.
    Call(CallArgs),
}

/// `hub_list` arguments.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct ListArgs {
    /// Only this plugin's operations.
    pub namespace: Option<String>,
}

/// `hub_search` arguments.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct SearchArgs {
    /// What the caller wants to do; empty lists everything visible.
    #[serde(default)]
    pub q: String,
    /// Only this plugin's operations.
    pub namespace: Option<String>,
    /// At most this many results (1 to [`SEARCH_MAX_LIMIT`]; default
    /// [`SEARCH_DEFAULT_LIMIT`]).
    pub limit: Option<usize>,
}

/// `hub_schema` arguments.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct SchemaArgs {
    /// The operation, e.g. `text.slugify`.
    pub tool: String,
}

/// `hub_call` arguments.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct CallArgs {
    /// The batch, run concurrently; results come back in this order.
    pub calls: Vec<OperationCall>,
}

/// One operation call of a `hub_call` batch.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct OperationCall {
    /// The operation, `plugin.operation`.
    pub tool: String,
    /// The operation's input (`{}` when left out).
    #[serde(default)]
    pub input: Map<String, Value>,
}

impl MetaToolRequest {
    /// Meta-tool `name` (wire name or dotted alias) with its JSON arguments (`null`
    /// counts as `{}`).
    pub fn parse(name: &str, args: Value) -> Result<MetaToolRequest, ToolError> {
        let kind = MetaToolKind::parse(name).ok_or_else(|| ToolError::UnknownTool {
            name: name.to_string(),
            suggestions: search::suggest(name, meta_tools().iter().map(|t| t.name)),
        })?;
        MetaToolRequest::new(kind, args)
    }

    /// Checks `args` (`null` counts as `{}`) against `kind`'s input schema, then reads
    /// them into the typed arguments.
    pub fn new(kind: MetaToolKind, args: Value) -> Result<MetaToolRequest, ToolError> {
        let args = if args.is_null() {
            Value::Object(Map::new())
        } else {
            args
        };
        check_arguments(kind, &args)?;
        Ok(match kind {
            MetaToolKind::List => MetaToolRequest::List(typed(kind, args)?),
            MetaToolKind::Search => MetaToolRequest::Search(typed(kind, args)?),
            MetaToolKind::Schema => MetaToolRequest::Schema(typed(kind, args)?),
            MetaToolKind::Call => MetaToolRequest::Call(typed(kind, args)?),
        })
    }

    /// Which meta-tool this request runs.
    pub fn kind(&self) -> MetaToolKind {
        match self {
            MetaToolRequest::List(_) => MetaToolKind::List,
            MetaToolRequest::Search(_) => MetaToolKind::Search,
            MetaToolRequest::Schema(_) => MetaToolKind::Schema,
            MetaToolRequest::Call(_) => MetaToolKind::Call,
        }
    }
}

/// Validates meta-tool arguments against the meta-tool's input schema.
fn check_arguments(kind: MetaToolKind, args: &Value) -> Result<(), ToolError> {
    let tool = kind.tool();
    let (violations, extra) = validate::violations(
        &tool.validator,
        &tool.input_schema,
        args,
        validate::MAX_VIOLATIONS,
    );
    if violations.is_empty() {
        return Ok(());
    }
    Err(ToolError::InvalidArguments {
        message: format!(
            "invalid arguments for {}: {}",
            tool.name,
            validate::summary(&violations, extra)
        ),
        violations,
    })
}

/// Schema-valid arguments as their typed struct. Failing here means the input
/// schema accepts something the struct does not: a hub bug, reported as such.
fn typed<T: DeserializeOwned>(kind: MetaToolKind, args: Value) -> Result<T, ToolError> {
    serde_json::from_value(args).map_err(|e| ToolError::InvalidArguments {
        message: format!(
            "invalid arguments for {}: {e} (the arguments match the input schema, so this is a bug in the hub)",
            kind.wire_name()
        ),
        violations: Vec::new(),
    })
}

/// The four definitions, in the order list, search, schema, call.
pub fn meta_tools() -> &'static [MetaTool] {
    static TOOLS: OnceLock<Vec<MetaTool>> = OnceLock::new();
    TOOLS.get_or_init(build)
}

/// Default `limit` of `hub_search`.
pub const SEARCH_DEFAULT_LIMIT: usize = 10;
/// Largest `limit` `hub_search` accepts (its input schema's maximum).
pub const SEARCH_MAX_LIMIT: usize = 50;

fn build() -> Vec<MetaTool> {
    [
        list_definition(),
        search_definition(),
        schema_definition(),
        call_definition(),
    ]
    .into_iter()
    .map(|(name, description, input_schema, output_schema)| MetaTool {
        name,
        description,
        validator: jsonschema::validator_for(&input_schema).expect("meta-tool input schemas are valid"),
        input_schema,
        output_schema,
    })
    .collect()
}

/// Wire name, description, input schema and output schema of one meta-tool.
type Definition = (&'static str, &'static str, Value, Value);

fn list_definition() -> Definition {
    let entry = json!({
        "type": "object",
        "properties": {
            "tool": {"type": "string"},
            "description": {"type": "string"}
        },
        "required": ["tool", "description"]
    });
    (
        "hub_list",
        "List the operations you may call (optionally one namespace). Prefer hub_search to find one by purpose.",
        json!({
            "type": "object",
            "properties": {
                "namespace": {"type": "string", "description": "Plugin name, e.g. \"text\""}
            },
            "additionalProperties": false
        }),
        json!({
            "type": "object",
            "properties": {
                "operations": {"type": "array", "items": entry},
                "instructions": {"type": "object", "additionalProperties": {"type": "string"}}
            },
            "required": ["operations"]
        }),
    )
}

fn search_definition() -> Definition {
    (
        "hub_search",
        "Find operations by what they do, best match first. Then read the input schema with hub_schema and run it with hub_call.",
        json!({
            "type": "object",
            "properties": {
                "q": {"type": "string", "description": "What you want to do, in words"},
                "namespace": {"type": "string"},
                "limit": {"type": "integer", "minimum": 1, "maximum": SEARCH_MAX_LIMIT, "default": SEARCH_DEFAULT_LIMIT}
            },
            "additionalProperties": false
        }),
        json!({
            "type": "object",
            "properties": {"results": {"type": "array", "items": {
                "type": "object",
                "properties": {
                    "tool": {"type": "string"},
                    "description": {"type": "string"},
                    "score": {"type": "number"}
                },
                "required": ["tool", "description", "score"]
            }}},
            "required": ["results"]
        }),
    )
}

fn schema_definition() -> Definition {
    (
        "hub_schema",
        "Get an operation's description, the JSON Schema of its input (and output) and worked examples. Read it before the first call.",
        json!({
            "type": "object",
            "properties": {
                "tool": {"type": "string", "description": "Operation, e.g. \"text.slugify\""}
            },
            "required": ["tool"],
            "additionalProperties": false
        }),
        json!({
            "type": "object",
            "properties": {
                "tool": {"type": "string"},
                "description": {"type": "string"},
                "inputSchema": {"type": "object"},
                "outputSchema": {"type": "object"},
                "examples": {"type": "array", "items": {
                    "type": "object",
                    "properties": {"description": {"type": "string"}, "input": {"type": "object"}, "output": {}},
                    "required": ["description", "input"]
                }}
            },
            "required": ["tool", "description", "inputSchema"]
        }),
    )
}

fn call_definition() -> Definition {
    (
        "hub_call",
        "Run operations. Put independent calls in one request: they run concurrently. Results come in order as {tool, ok, result} or {tool, ok:false, error}; on invalid_input fix what error.violations lists and retry.",
        json!({
            "type": "object",
            "properties": {
                "calls": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "properties": {
                            "tool": {"type": "string"},
                            "input": {"type": "object"}
                        },
                        "required": ["tool"],
                        "additionalProperties": false
                    }
                }
            },
            "required": ["calls"],
            "additionalProperties": false
        }),
        json!({
            "type": "object",
            "properties": {"results": {
                "description": "One entry per call, in the order of calls.",
                "type": "array",
                "items": {"oneOf": [
                    {
                        "type": "object",
                        "properties": {
                            "tool": {"type": "string"},
                            "ok": {"const": true},
                            "result": {
                                "description": "The operation's output, as its outputSchema (hub_schema) describes.",
                                "type": ["object", "array", "string", "number", "boolean", "null"]
                            }
                        },
                        "required": ["tool", "ok", "result"]
                    },
                    {
                        "type": "object",
                        "properties": {
                            "tool": {"type": "string"},
                            "ok": {"const": false},
                            "error": {
                                "type": "object",
                                "properties": {
                                    "code": {"type": "string"},
                                    "message": {"type": "string"},
                                    "violations": {"type": "array", "items": {"type": "object"}},
                                    "suggestions": {"type": "array", "items": {"type": "string"}},
                                    "limit": {"type": "string"},
                                    "policy": {"type": "string"}
                                },
                                "required": ["code", "message"]
                            }
                        },
                        "required": ["tool", "ok", "error"]
                    }
                ]}
            }},
            "required": ["results"]
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn four_tools_in_kind_order_with_valid_wire_names() {
        let tools = meta_tools();
        assert_eq!(tools.len(), 4);
        for kind in MetaToolKind::ALL {
            assert_eq!(kind.tool().name, kind.wire_name());
            assert_eq!(MetaToolKind::parse(kind.wire_name()), Some(kind));
            assert_eq!(
                MetaToolKind::parse(&kind.wire_name().replace('_', ".")),
                Some(kind)
            );
            let name = kind.wire_name();
            assert!(
                name.len() <= 64
                    && name
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
            );
            jsonschema::validator_for(&kind.tool().output_schema).unwrap();
        }
        assert_eq!(MetaToolKind::parse("hub_lists"), None);
        assert_eq!(MetaToolKind::parse("list"), None);
        assert_eq!(MetaToolKind::from_route("schema"), Some(MetaToolKind::Schema));
        assert_eq!(MetaToolKind::from_route("hub_schema"), None);
    }

    #[test]
    fn requests_carry_typed_arguments_read_after_the_schema_check() {
        let request = MetaToolRequest::parse("hub.search", json!({"q": "slug", "limit": 5})).unwrap();
        assert_eq!(
            request,
            MetaToolRequest::Search(SearchArgs {
                q: "slug".into(),
                namespace: None,
                limit: Some(5),
            })
        );
        let MetaToolRequest::Call(args) =
            MetaToolRequest::new(MetaToolKind::Call, json!({"calls": [{"tool": "a.b"}]})).unwrap()
        else {
            panic!("a hub_call request")
        };
        assert_eq!(args.calls[0].input, Map::new());
        assert_eq!(
            MetaToolRequest::new(MetaToolKind::List, Value::Null).unwrap(),
            MetaToolRequest::List(ListArgs::default())
        );
        let e = MetaToolRequest::new(MetaToolKind::Schema, json!({})).unwrap_err();
        assert!(matches!(e, ToolError::InvalidArguments { .. }), "{e:?}");
        let e = MetaToolRequest::parse("hub_lists", json!({})).unwrap_err();
        assert!(matches!(e, ToolError::UnknownTool { .. }), "{e:?}");
    }

    #[test]
    fn input_schemas_accept_the_documented_shapes_and_reject_strays() {
        let ok = |kind: MetaToolKind, v: Value| kind.tool().validator.is_valid(&v);
        assert!(ok(MetaToolKind::List, json!({})));
        assert!(ok(MetaToolKind::Search, json!({"q": "slug", "limit": 5})));
        assert!(!ok(MetaToolKind::Search, json!({"query": "slug"})));
        assert!(!ok(MetaToolKind::Search, json!({"limit": 0})));
        assert!(ok(MetaToolKind::Schema, json!({"tool": "text.slugify"})));
        assert!(!ok(MetaToolKind::Schema, json!({})));
        assert!(ok(
            MetaToolKind::Call,
            json!({"calls": [{"tool": "a.b"}, {"tool": "a.c", "input": {"x": 1}}]})
        ));
        assert!(!ok(MetaToolKind::Call, json!({"calls": []})));
        assert!(!ok(
            MetaToolKind::Call,
            json!({"calls": [{"tool": "a.b", "input": "{}"}]})
        ));
    }

    #[test]
    fn the_call_output_schema_holds_every_kind_of_result() {
        let schema = &MetaToolKind::Call.tool().output_schema;
        let validator = jsonschema::validator_for(schema).expect("a valid schema");
        let results = |r: Value| json!({ "results": r });
        let ok = json!({"tool": "calc.eval", "ok": true, "result": 42});
        let text = json!({"tool": "text.upper", "ok": true, "result": "HI"});
        let none = json!({"tool": "kv.put", "ok": true, "result": null});
        let failed = crate::hub::CallError::new(crate::hub::ErrorCode::InvalidInput, "bad").to_json();
        let failed = json!({"tool": "calc.eval", "ok": false, "error": failed});
        assert!(
            validator.is_valid(&results(json!([ok, text, none, failed]))),
            "a partly failed batch"
        );
        assert!(validator.is_valid(&results(json!([]))));
        assert!(
            !validator.is_valid(&results(json!([{"tool": "a.b", "ok": true}]))),
            "ok without result"
        );
        assert!(
            !validator.is_valid(&results(json!([{"tool": "a.b", "ok": false}]))),
            "failed without error"
        );
        assert!(!validator.is_valid(&results(
            json!([{"tool": "a.b", "ok": false, "error": {"code": "x"}}])
        )));
    }

    /// The definitions are sent with every model request: keep them small. The
    /// bound is on the JSON bytes (name + description + input schema), about four
    /// bytes a token.
    #[test]
    fn hub_meta_tool_definitions_stay_small() {
        let bytes: usize = meta_tools()
            .iter()
            .map(|t| t.name.len() + t.description.len() + t.input_schema.to_string().len())
            .sum();
        assert!(bytes < 1800, "meta-tool definitions grew to {bytes} bytes");
    }
}
