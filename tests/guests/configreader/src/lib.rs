//! Test guest of WIT 0.2.0 that also imports `wasi:config/store`: `read` returns
//! `get-all` and `get` of the keys it is asked for, so tests can check that a
//! plugin reads only its own configuration, and nothing of any secret.

wit_bindgen::generate!({
    inline: "package test:configreader;
             world plugin {
               include wasmhub:plugin/plugin@0.2.0;
               import wasi:config/store@0.2.0-draft;
             }",
    path: ["../../../wit/0.2.0", "../../../wit/deps/config"],
    world: "test:configreader/plugin",
    generate_all,
});

use exports::wasmhub::plugin::operations::{Error, Guest, OperationSpec};
use serde_json::{Value, json};
use wasi::config::store;
use wasmhub::plugin::types::{Example, Hints};

struct ConfigReader;

impl Guest for ConfigReader {
    fn instructions() -> Option<String> {
        None
    }

    fn list() -> Vec<OperationSpec> {
        vec![OperationSpec {
            name: "read".into(),
            description: "Returns every configuration key and the values of `keys`.".into(),
            input_schema: r#"{"type":"object","properties":{"keys":{"type":"array","items":{"type":"string"}}}}"#.into(),
            output_schema: None,
            hints: Hints::READ_ONLY,
            examples: Vec::<Example>::new(),
        }]
    }

    fn call(_name: String, input_json: String) -> Result<String, Error> {
        let input: Value = serde_json::from_str(&input_json).map_err(|e| Error::InvalidInput(e.to_string()))?;
        let all = store::get_all().map_err(|e| Error::Failed(format!("{e:?}")))?;
        let mut got = serde_json::Map::new();
        for key in input["keys"].as_array().into_iter().flatten().filter_map(Value::as_str) {
            let value = store::get(key).map_err(|e| Error::Failed(format!("{e:?}")))?;
            got.insert(key.to_string(), json!(value));
        }
        Ok(json!({ "all": all, "get": got }).to_string())
    }
}

export!(ConfigReader);
