//! Structured output: an agent's final answer as one JSON value satisfying a JSON
//! Schema (the request's, else the profile's `output_schema`; none: any JSON).
//!
//! A target whose provider takes OpenAI's `response_format: {type:
//! "json_schema"}` (`providers[].json_schema = true`) gets the schema that way;
//! any other is told it at the end of the system prompt ([`JsonOutput::prepare`],
//! per target, so a fallback chain mixing both is right for each). The answer is
//! checked whole ([`JsonOutput::check`]: one optional Markdown code fence is
//! tolerated); a caller that got violations asks once for a correction
//! ([`JsonOutput::correction`]) and then fails with `invalid_output`.

use crate::hub::validate::{Violation, violations};
use crate::llm::Route;
use serde_json::{Value, json};
use std::sync::Arc;

/// Most violations reported for an answer.
const MAX_VIOLATIONS: usize = 20;

/// A schema that does not compile (400 for a request's, a config error for a
/// profile's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaError(
    /// Why, from the JSON Schema compiler.
    pub String,
);

impl std::fmt::Display for SchemaError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "schema: not a valid JSON Schema: {}", self.0)
    }
}

impl std::error::Error for SchemaError {}

/// A JSON answer, with or without a schema.
#[derive(Clone)]
pub struct JsonOutput {
    schema: Option<Arc<(Value, jsonschema::Validator)>>,
}

impl std::fmt::Debug for JsonOutput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JsonOutput")
            .field("schema", &self.schema.as_ref().map(|s| &s.0))
            .finish()
    }
}

/// Whether `schema` compiles; why not.
pub fn check_schema(schema: &Value) -> Result<(), SchemaError> {
    jsonschema::validator_for(schema)
        .map(drop)
        .map_err(|e| SchemaError(e.to_string()))
}

impl JsonOutput {
    /// JSON satisfying `schema` (any JSON without one).
    pub fn new(schema: Option<Value>) -> Result<JsonOutput, SchemaError> {
        let schema = match schema {
            None => None,
            Some(schema) => {
                let validator = jsonschema::validator_for(&schema).map_err(|e| SchemaError(e.to_string()))?;
                Some(Arc::new((schema, validator)))
            }
        };
        Ok(JsonOutput { schema })
    }

    /// The schema, if any.
    pub fn schema(&self) -> Option<&Value> {
        self.schema.as_ref().map(|s| &s.0)
    }

    /// What a model without a JSON-schema response format is told.
    fn instruction(&self) -> String {
        let mut text = String::from(
            "Your final answer must be exactly one JSON value and nothing else: no prose, \
             no Markdown code fence.",
        );
        if let Some(schema) = self.schema() {
            text.push_str(" It must satisfy this JSON Schema:\n");
            text.push_str(&schema.to_string());
        }
        text
    }

    /// Sets how `route`'s model is asked for JSON on `body`: the provider's
    /// `response_format` when it takes one, else the instruction after the system
    /// prompt.
    pub(crate) fn prepare(&self, route: &Route, body: &mut Value) {
        if route.provider.config.json_schema {
            let schema = self.schema().cloned().unwrap_or_else(|| json!({}));
            body["response_format"] = match self.schema() {
                Some(_) => {
                    json!({ "type": "json_schema", "json_schema": { "name": "output", "schema": schema } })
                }
                None => json!({ "type": "json_object" }),
            };
            return;
        }
        let instruction = self.instruction();
        let is_system = body.pointer("/messages/0/role") == Some(&json!("system"));
        if is_system && let Some(Value::String(system)) = body.pointer_mut("/messages/0/content") {
            system.push_str("\n\n");
            system.push_str(&instruction);
        }
    }

    /// The answer `text` as JSON satisfying the schema, or what is wrong with it.
    pub(crate) fn check(&self, text: &str) -> Result<Value, Vec<Violation>> {
        let value: Value = serde_json::from_str(unfenced(text)).map_err(|e| {
            vec![Violation {
                path: String::new(),
                message: format!("the answer is not one JSON value: {e}"),
            }]
        })?;
        if let Some(compiled) = &self.schema {
            let (found, _) = violations(&compiled.1, &compiled.0, &value, MAX_VIOLATIONS);
            if !found.is_empty() {
                return Err(found);
            }
        }
        Ok(value)
    }

    /// The message asking for a corrected answer.
    pub(crate) fn correction(&self, found: &[Violation]) -> String {
        let mut text = String::from("Your answer does not satisfy the required JSON output:\n");
        for v in found {
            let at = if v.path.is_empty() {
                "(the answer)"
            } else {
                &v.path
            };
            text.push_str(&format!("- {at}: {}\n", v.message));
        }
        text.push_str("Answer again with only the corrected JSON value.");
        text
    }
}

/// `text` without surrounding whitespace and one Markdown code fence around it.
fn unfenced(text: &str) -> &str {
    let text = text.trim();
    let Some(rest) = text.strip_prefix("```") else {
        return text;
    };
    let Some(body) = rest.strip_suffix("```") else {
        return text;
    };
    // The info string (`json`) runs to the first line break.
    body.split_once('\n').map_or(body, |(_, b)| b).trim()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn output() -> JsonOutput {
        JsonOutput::new(Some(json!({
            "type": "object", "required": ["sum"], "additionalProperties": false,
            "properties": {"sum": {"type": "integer"}}
        })))
        .unwrap()
    }

    #[test]
    fn answers_are_checked_against_the_schema() {
        assert_eq!(output().check(" {\"sum\": 5} "), Ok(json!({"sum": 5})));
        assert_eq!(
            output().check("```json\n{\"sum\": 5}\n```"),
            Ok(json!({"sum": 5}))
        );
        let wrong = output().check("{\"sum\": \"5\", \"x\": 1}").unwrap_err();
        let paths: Vec<&str> = wrong.iter().map(|v| v.path.as_str()).collect();
        assert_eq!(paths, ["/sum", "/x"], "{wrong:?}");
        let prose = output().check("The sum is 5.").unwrap_err();
        assert!(
            prose[0].message.starts_with("the answer is not one JSON value"),
            "{prose:?}"
        );
        let correction = output().correction(&wrong);
        assert!(correction.contains("- /sum: "), "{correction}");
        assert_eq!(JsonOutput::new(None).unwrap().check("[1]"), Ok(json!([1])));
        let bad = JsonOutput::new(Some(json!({"type": 5}))).unwrap_err();
        assert!(
            bad.to_string().starts_with("schema: not a valid JSON Schema"),
            "{bad}"
        );
    }
}
