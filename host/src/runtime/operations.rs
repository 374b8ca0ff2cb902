//! Validating the operation specs a plugin lists at load: names, uniqueness, and
//! each JSON Schema (parsed, meta-validated, compiled once into a validator).

use super::bindings::{ExampleSpec, OperationSpec};
use super::budget::bounded;
use super::load_error::{ListError, LoadProblem};
use super::names::valid_operation_name;
use super::operation_problem::{MAX_EXAMPLE_BYTES, MAX_EXAMPLES, OperationProblem, SchemaRole};
use super::plugin::{Example, Operation};
use std::sync::Arc;

/// Longest plugin instructions kept, in bytes (cut with a marker beyond).
pub const MAX_INSTRUCTIONS_BYTES: usize = 8 * 1024;

/// Checks every spec, pushing one problem per broken rule; returns the operations
/// that passed, their descriptions cut at `text_cap` bytes (`limits.plugin_text_kb`).
pub(super) fn validate(
    specs: Vec<OperationSpec>,
    text_cap: usize,
    problems: &mut Vec<LoadProblem>,
) -> Vec<Operation> {
    let mut seen = std::collections::HashSet::new();
    let mut ops = Vec::new();
    if specs.is_empty() {
        problems.push(LoadProblem::List(ListError::Empty));
    }
    for spec in specs {
        let mut bad = |problem: OperationProblem| {
            problems.push(LoadProblem::Operation {
                op: spec.name.clone(),
                problem,
            })
        };
        if !valid_operation_name(&spec.name) {
            bad(OperationProblem::BadName);
            continue;
        }
        if !seen.insert(spec.name.clone()) {
            bad(OperationProblem::Duplicate);
            continue;
        }
        let input = compile_schema(&spec.input_schema, SchemaRole::Input);
        let output = spec
            .output_schema
            .as_deref()
            .map(|s| compile_schema(s, SchemaRole::Output));
        let (input_schema, input_validator) = match input {
            Ok(v) => v,
            Err(problem) => {
                bad(problem);
                continue;
            }
        };
        let (output_schema, output_validator) = match output.transpose() {
            Ok(v) => v.unzip(),
            Err(problem) => {
                bad(problem);
                continue;
            }
        };
        let examples = match examples(spec.examples, text_cap) {
            Ok(examples) => examples,
            Err(problem) => {
                bad(problem);
                continue;
            }
        };
        ops.push(Operation {
            name: spec.name,
            description: bounded(spec.description, text_cap),
            input_schema,
            output_schema,
            hints: spec.hints,
            input_validator,
            output_validator,
            examples,
        });
    }
    ops
}

/// The listed examples with their JSON parsed, descriptions cut at `text_cap`.
fn examples(specs: Vec<ExampleSpec>, text_cap: usize) -> Result<Vec<Example>, OperationProblem> {
    if specs.len() > MAX_EXAMPLES {
        return Err(OperationProblem::TooManyExamples { count: specs.len() });
    }
    let json = |index, part, text: &str| {
        if text.len() > MAX_EXAMPLE_BYTES {
            return Err(OperationProblem::ExampleTooLarge { index });
        }
        serde_json::from_str(text).map_err(|source| OperationProblem::ExampleNotJson { index, part, source })
    };
    specs
        .into_iter()
        .enumerate()
        .map(|(i, spec)| {
            Ok(Example {
                input: json(i + 1, "input", &spec.input)?,
                output: spec
                    .output
                    .as_deref()
                    .map(|o| json(i + 1, "output", o))
                    .transpose()?,
                description: bounded(spec.description, text_cap),
            })
        })
        .collect()
}

fn compile_schema(
    text: &str,
    role: SchemaRole,
) -> Result<(serde_json::Value, Arc<jsonschema::Validator>), OperationProblem> {
    let schema: serde_json::Value =
        serde_json::from_str(text).map_err(|source| OperationProblem::NotJson { role, source })?;
    let validator = compile_value(&schema, role)?;
    Ok((schema, validator))
}

/// `schema` checked (an input schema must describe an object), meta-validated and
/// compiled: for plugins' listed schemas and the schemas of other operation
/// sources (an MCP server's tools).
pub fn compile_value(
    schema: &serde_json::Value,
    role: SchemaRole,
) -> Result<Arc<jsonschema::Validator>, OperationProblem> {
    if role == SchemaRole::Input && schema.get("type").and_then(|t| t.as_str()) != Some("object") {
        return Err(OperationProblem::NotObject);
    }
    if let Err(e) = jsonschema::meta::validate(schema) {
        return Err(OperationProblem::NotJsonSchema {
            role,
            at: e.instance_path().to_string(),
            message: e.to_string(),
        });
    }
    let validator = jsonschema::validator_for(schema).map_err(|e| OperationProblem::Uncompilable {
        role,
        message: e.to_string(),
    })?;
    Ok(Arc::new(validator))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problem(text: &str, role: SchemaRole) -> String {
        compile_schema(text, role).unwrap_err().to_string()
    }

    #[test]
    fn schemas_are_meta_validated() {
        assert!(compile_schema(r#"{"type":"object"}"#, SchemaRole::Input).is_ok());
        let e = problem(r#"{"type":12}"#, SchemaRole::Input);
        assert!(e.contains("root needs"), "{e}");
        let e = problem(
            r#"{"type":"object","properties":{"a":{"type":12}}}"#,
            SchemaRole::Input,
        );
        assert!(e.contains("not valid JSON Schema at /properties/a/type"), "{e}");
        let e = problem(r#"{"type":"array"}"#, SchemaRole::Input);
        assert!(e.contains("must describe an object"), "{e}");
        let e = problem("{nope", SchemaRole::Output);
        assert!(e.contains("not JSON"), "{e}");
        assert!(compile_schema(r#"{"minimum":"zero"}"#, SchemaRole::Output).is_err());
    }
}
