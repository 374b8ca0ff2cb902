//! Test guest: the right world, but every operation spec breaks a loader rule
//! (illegal name, duplicate name, invalid JSON Schema, non-object input root,
//! schema that is not JSON), so `check` must report each one on its own line.

wit_bindgen::generate!({ world: "plugin", path: "../../../wit/0.1.0" });

use exports::wasmhub::plugin::operations::{Error, Guest, OperationSpec};
use wasmhub::plugin::types::Hints;

struct BadSchema;

fn spec(name: &str, input: &str, output: Option<&str>) -> OperationSpec {
    OperationSpec {
        name: name.into(),
        description: "A broken operation.".into(),
        input_schema: input.into(),
        output_schema: output.map(String::from),
        hints: Hints::empty(),
    }
}

impl Guest for BadSchema {
    fn list() -> Vec<OperationSpec> {
        vec![
            spec("Bad-Name", r#"{"type":"object"}"#, None),
            spec("twice", r#"{"type":"object"}"#, None),
            spec("twice", r#"{"type":"object"}"#, None),
            spec("wrong_type", r#"{"type":12}"#, None),
            spec("array_root", r#"{"type":"array"}"#, None),
            spec("not_json", "{type: object", None),
            spec("bad_output", r#"{"type":"object"}"#, Some(r#"{"minimum":"zero"}"#)),
        ]
    }

    fn call(_name: String, _input_json: String) -> Result<String, Error> {
        Ok("{}".into())
    }
}

export!(BadSchema);
