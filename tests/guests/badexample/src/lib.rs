//! Test guest of WIT 0.2.0 whose example is wrong: `double` doubles, but its
//! example expects triple. The hub must reject it at load with `verification
//! failed: …` naming the example and the difference.

wit_bindgen::generate!({ world: "plugin", path: "../../../wit/0.2.0" });

use exports::wasmhub::plugin::operations::{Error, Guest, OperationSpec};
use wasmhub::plugin::types::{Example, Hints};

struct BadExample;

impl Guest for BadExample {
    fn instructions() -> Option<String> {
        None
    }

    fn list() -> Vec<OperationSpec> {
        let schema = r#"{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}"#;
        vec![OperationSpec {
            name: "double".into(),
            description: "Double a number.".into(),
            input_schema: schema.into(),
            output_schema: Some(schema.into()),
            hints: Hints::READ_ONLY,
            examples: vec![Example {
                description: "doubles two".into(),
                input: r#"{"n": 2}"#.into(),
                output: Some(r#"{"n": 6}"#.into()),
            }],
        }]
    }

    fn call(_name: String, input_json: String) -> Result<String, Error> {
        let input: serde_json::Value =
            serde_json::from_str(&input_json).map_err(|e| Error::InvalidInput(e.to_string()))?;
        let n = input["n"].as_i64().ok_or_else(|| Error::InvalidInput("n must be an integer".into()))?;
        Ok(serde_json::json!({ "n": n * 2 }).to_string())
    }
}

export!(BadExample);
