//! The four meta-tools, defined once: wire name, the description a model reads,
//! input JSON Schema and output JSON Schema. MCP's `tools/list`, the agent loop's
//! OpenAI function tools and the REST routes all take them from [`meta_tools`].
//!
//! The descriptions are the whole manual a model gets, so they teach the workflow
//! (search → schema → call, batch independent calls) in as few tokens as possible;
//! `hub_meta_tool_definitions_stay_small` in the tests guards their size.

use serde_json::{Value, json};
use std::sync::OnceLock;

/// One meta-tool as every surface shows it.
pub struct MetaTool {
    /// Wire name (`hub_list`, …): valid as an OpenAI function name and an MCP tool name.
    pub name: &'static str,
    pub description: &'static str,
    pub input_schema: Value,
    pub output_schema: Value,
    /// Compiled `input_schema`, used to check arguments before the hub acts on them.
    pub(crate) validator: jsonschema::Validator,
}

/// Which meta-tool a name designates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetaToolKind {
    List,
    Search,
    Schema,
    Call,
}

impl MetaToolKind {
    /// Accepts the wire name (`hub_call`) and the design documents' dotted alias
    /// (`hub.call`).
    pub fn parse(name: &str) -> Option<MetaToolKind> {
        match name {
            "hub_list" | "hub.list" => Some(MetaToolKind::List),
            "hub_search" | "hub.search" => Some(MetaToolKind::Search),
            "hub_schema" | "hub.schema" => Some(MetaToolKind::Schema),
            "hub_call" | "hub.call" => Some(MetaToolKind::Call),
            _ => None,
        }
    }

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

/// The four definitions, in the order list, search, schema, call.
pub fn meta_tools() -> &'static [MetaTool] {
    static TOOLS: OnceLock<Vec<MetaTool>> = OnceLock::new();
    TOOLS.get_or_init(build)
}

/// Default and largest `limit` of `hub_search`.
pub const SEARCH_DEFAULT_LIMIT: usize = 10;
pub const SEARCH_MAX_LIMIT: usize = 50;

fn build() -> Vec<MetaTool> {
    let entry = json!({
        "type": "object",
        "properties": {
            "tool": {"type": "string"},
            "description": {"type": "string"}
        },
        "required": ["tool", "description"]
    });
    let definitions = [
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
                "properties": {"operations": {"type": "array", "items": entry}},
                "required": ["operations"]
            }),
        ),
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
        ),
        (
            "hub_schema",
            "Get an operation's description and the JSON Schema of its input (and output). Read it before the first call.",
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
                    "outputSchema": {"type": "object"}
                },
                "required": ["tool", "description", "inputSchema"]
            }),
        ),
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
                "properties": {"results": {"type": "array", "items": {
                    "type": "object",
                    "properties": {
                        "tool": {"type": "string"},
                        "ok": {"type": "boolean"},
                        "result": {},
                        "error": {
                            "type": "object",
                            "properties": {
                                "code": {"type": "string"},
                                "message": {"type": "string"}
                            },
                            "required": ["code", "message"]
                        }
                    },
                    "required": ["tool", "ok"]
                }}},
                "required": ["results"]
            }),
        ),
    ];
    definitions
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn four_tools_in_kind_order_with_valid_wire_names() {
        let tools = meta_tools();
        assert_eq!(tools.len(), 4);
        for kind in [
            MetaToolKind::List,
            MetaToolKind::Search,
            MetaToolKind::Schema,
            MetaToolKind::Call,
        ] {
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
