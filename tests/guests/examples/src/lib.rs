//! Test guest of WIT 0.2.0 written against the raw bindings (no SDK): plugin
//! instructions, an `echo` whose example is right, and a `destructive` `wipe`
//! whose example is wrong. The hub must load it (examples of destructive
//! operations never run at load) while `wasmhub plugin test` reports `wipe`.

wit_bindgen::generate!({ world: "plugin", path: "../../../wit/0.2.0" });

use exports::wasmhub::plugin::operations::{Error, Guest, OperationSpec};
use wasmhub::plugin::types::{Example, Hints};

struct Examples;

/// The instructions the tests look for in prompts and MCP answers.
const INSTRUCTIONS: &str = "Examples plugin: echo returns its input unchanged; never call wipe without asking.";

impl Guest for Examples {
    fn instructions() -> Option<String> {
        Some(INSTRUCTIONS.into())
    }

    fn list() -> Vec<OperationSpec> {
        let text_schema = r#"{"type":"object","properties":{"text":{"type":"string"}},"required":["text"],"additionalProperties":false}"#;
        vec![
            OperationSpec {
                name: "echo".into(),
                description: "Return the input text unchanged.".into(),
                input_schema: text_schema.into(),
                output_schema: Some(text_schema.into()),
                hints: Hints::READ_ONLY | Hints::IDEMPOTENT,
                examples: vec![Example {
                    description: "echoes a greeting".into(),
                    input: r#"{"text": "hi"}"#.into(),
                    output: Some(r#"{"text":"hi"}"#.into()),
                }],
            },
            OperationSpec {
                name: "wipe".into(),
                description: "Pretend to wipe everything (for tests).".into(),
                input_schema: r#"{"type":"object"}"#.into(),
                output_schema: None,
                hints: Hints::DESTRUCTIVE,
                examples: vec![Example {
                    description: "claims nothing was wiped".into(),
                    input: "{}".into(),
                    output: Some(r#"{"wiped": false}"#.into()),
                }],
            },
        ]
    }

    fn call(name: String, input_json: String) -> Result<String, Error> {
        match name.as_str() {
            "echo" => Ok(input_json),
            "wipe" => Ok(r#"{"wiped":true}"#.into()),
            other => Err(Error::NotFound(format!("no operation {other}"))),
        }
    }
}

export!(Examples);
