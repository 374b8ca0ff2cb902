//! A server's `tools/list` entries as the hub's operations: names checked, the
//! description cut like a plugin's, `inputSchema`/`outputSchema` bounded (size
//! and nesting: a schema bomb is refused with the reason) then meta-validated and
//! compiled once, and hints from the annotations, which are the server's claim:
//! MCP's defaults apply to what it leaves out (not read-only, destructive,
//! open-world), and the operator's `hints` for the tool replace any of them.
//!
//! A tool that cannot be used is left out and named in the server's notes; the
//! others are served.

use crate::config::{HintOverride, McpServerConfig};
use crate::runtime::{Hints, Operation, SchemaRole, bounded_text, compile_schema};
use serde_json::Value;
use std::collections::HashSet;

/// Deepest nesting of objects and arrays a schema may have.
pub(super) const MAX_SCHEMA_DEPTH: usize = 32;
/// Longest tool name taken, in bytes (MCP's own bound).
const MAX_TOOL_NAME: usize = 128;
/// Longest description kept, in bytes (like `limits.plugin_text_kb`'s default).
const MAX_DESCRIPTION: usize = 4 * 1024;

/// The usable tools of one listing, and a note per tool left out.
pub(super) struct Listed {
    pub operations: Vec<Operation>,
    pub notes: Vec<String>,
}

/// `tools` (every page's entries, in order) as operations.
pub(super) fn operations(tools: Vec<Value>, config: &McpServerConfig) -> Listed {
    let mut listed = Listed {
        operations: Vec::new(),
        notes: Vec::new(),
    };
    let mut seen = HashSet::new();
    for tool in tools {
        let name = tool
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        match operation(&tool, &name, config) {
            Ok(_) if !seen.insert(name.clone()) => {
                listed.notes.push(format!("tool {name:?} left out: listed twice"));
            }
            Ok(op) => listed.operations.push(op),
            Err(why) => listed.notes.push(format!(
                "tool {:?} left out: {why}",
                bounded_text(name, MAX_TOOL_NAME)
            )),
        }
    }
    listed
}

fn operation(tool: &Value, name: &str, config: &McpServerConfig) -> Result<Operation, String> {
    if !valid_tool_name(name) {
        return Err("its name is not 1 to 128 of A-Z a-z 0-9 _ - .".into());
    }
    let description = tool
        .get("description")
        .or_else(|| tool.get("title"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    let input_schema = tool.get("inputSchema").cloned().ok_or("it has no inputSchema")?;
    let input_validator = checked(&input_schema, SchemaRole::Input, config)?;
    let output_schema = tool.get("outputSchema").cloned();
    let output_validator = output_schema
        .as_ref()
        .map(|s| checked(s, SchemaRole::Output, config))
        .transpose()?;
    let annotations = tool.get("annotations").unwrap_or(&Value::Null);
    let hints = hints(annotations, config.hints.get(name));
    Ok(Operation {
        name: name.to_string(),
        description: bounded_text(description.to_string(), MAX_DESCRIPTION),
        input_schema,
        output_schema,
        hints,
        input_validator,
        output_validator,
        examples: Vec::new(),
    })
}

/// Whether `name` is a tool name the hub serves as `SERVER.name`.
fn valid_tool_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_TOOL_NAME
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

/// A schema within `max_schema_kb` and `MAX_SCHEMA_DEPTH`, then compiled.
fn checked(
    schema: &Value,
    role: SchemaRole,
    config: &McpServerConfig,
) -> Result<std::sync::Arc<jsonschema::Validator>, String> {
    if depth(schema) > MAX_SCHEMA_DEPTH {
        return Err(format!("its {role} nests deeper than {MAX_SCHEMA_DEPTH} levels"));
    }
    let limit = (config.max_schema_kb * 1024) as usize;
    let size = serde_json::to_vec(schema).map_or(usize::MAX, |b| b.len());
    if size > limit {
        return Err(format!(
            "its {role} is {size} bytes, larger than max_schema_kb ({} KiB)",
            config.max_schema_kb
        ));
    }
    compile_schema(schema, role).map_err(|problem| problem.to_string())
}

/// Nesting depth of objects and arrays (a scalar is 0).
fn depth(value: &Value) -> usize {
    // Iterative, so a deep value cannot overflow the stack.
    let mut deepest = 0;
    let mut stack = vec![(value, 1usize)];
    while let Some((v, d)) = stack.pop() {
        let children: Box<dyn Iterator<Item = &Value>> = match v {
            Value::Object(map) => Box::new(map.values()),
            Value::Array(items) => Box::new(items.iter()),
            _ => continue,
        };
        deepest = deepest.max(d);
        if d > MAX_SCHEMA_DEPTH {
            break;
        }
        stack.extend(children.map(|c| (c, d + 1)));
    }
    deepest
}

/// The hints of a tool: its annotations with MCP's defaults, then the operator's.
fn hints(annotations: &Value, operator: Option<&HintOverride>) -> Hints {
    let flag = |key: &str, default: bool| annotations.get(key).and_then(Value::as_bool).unwrap_or(default);
    let read_only = flag("readOnlyHint", false);
    let mut hints = Hints {
        read_only,
        // MCP: meaningful only when not read-only; defaults to true.
        destructive: !read_only && flag("destructiveHint", true),
        idempotent: flag("idempotentHint", false),
        open_world: flag("openWorldHint", true),
    };
    if let Some(o) = operator {
        hints.read_only = o.read_only.unwrap_or(hints.read_only);
        hints.destructive = o.destructive.unwrap_or(hints.destructive);
        hints.idempotent = o.idempotent.unwrap_or(hints.idempotent);
        hints.open_world = o.open_world.unwrap_or(hints.open_world);
    }
    hints
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn config() -> McpServerConfig {
        let text = "[[mcp_servers]]\nname = \"s\"\ntransport = \"stdio\"\ncommand = \"x\"\nmax_schema_kb = 1\nhints = { wipe = { destructive = false } }";
        crate::config::Config::parse(text, std::path::Path::new("t.toml"))
            .unwrap()
            .mcp_servers
            .remove(0)
    }

    #[test]
    fn tools_become_operations_and_bad_ones_are_named() {
        let mut bomb = json!({"type": "object"});
        for _ in 0..40 {
            bomb = json!({"type": "object", "properties": {"a": bomb}});
        }
        let tools = vec![
            json!({"name": "echo", "description": "Echo", "inputSchema": {"type": "object"},
                   "annotations": {"readOnlyHint": true}}),
            json!({"name": "wipe", "inputSchema": {"type": "object"}}),
            json!({"name": "plain", "inputSchema": {"type": "object"}}),
            json!({"name": "big", "inputSchema": {"type": "object", "description": "x".repeat(2000)}}),
            json!({"name": "deep", "inputSchema": bomb}),
            json!({"name": "arr", "inputSchema": {"type": "array"}}),
            json!({"name": "bad name!", "inputSchema": {"type": "object"}}),
            json!({"name": "echo", "inputSchema": {"type": "object"}}),
        ];
        let listed = operations(tools, &config());
        let names: Vec<&str> = listed.operations.iter().map(|o| o.name.as_str()).collect();
        assert_eq!(names, ["echo", "wipe", "plain"]);
        let echo = &listed.operations[0];
        assert!(echo.hints.read_only && !echo.hints.destructive && echo.hints.open_world);
        // The server said nothing: MCP's defaults; the operator overrode it.
        assert!(!listed.operations[1].hints.destructive);
        assert!(listed.operations[2].hints.destructive);
        let notes = listed.notes.join("\n");
        assert!(
            notes.contains(
                "\"big\" left out: its input schema is 2034 bytes, larger than max_schema_kb (1 KiB)"
            ),
            "{notes}"
        );
        assert!(
            notes.contains("\"deep\" left out: its input schema nests deeper than 32 levels"),
            "{notes}"
        );
        assert!(notes.contains("\"arr\" left out"), "{notes}");
        assert!(notes.contains("\"bad name!\" left out: its name"), "{notes}");
        assert!(notes.contains("\"echo\" left out: listed twice"), "{notes}");
    }
}
