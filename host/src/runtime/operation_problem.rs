//! What can be wrong with one operation spec a plugin lists ([`OperationProblem`]),
//! with the limits its messages quote: below the operation specs' validation
//! (`super::operations`) and the load errors (`super::load_error`) that carry it.

use super::names::MAX_NAME_LEN;
use std::error::Error;
use std::fmt;

/// Most examples one operation may list.
pub const MAX_EXAMPLES: usize = 16;
/// Largest example input or expected output, in bytes of JSON text.
pub const MAX_EXAMPLE_BYTES: usize = 16 * 1024;
/// Which schema of an operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SchemaRole {
    /// Must describe an object: tool arguments are a JSON object.
    Input,
    /// The optional output schema: outputs are checked against it.
    Output,
}

impl fmt::Display for SchemaRole {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SchemaRole::Input => "input schema",
            SchemaRole::Output => "output schema",
        })
    }
}

/// What is wrong with one operation spec.
#[derive(Debug)]
pub enum OperationProblem {
    /// The name is not `[a-z][a-z0-9_]*` of at most 64 bytes.
    BadName,
    /// Another operation of the plugin has the same name.
    Duplicate,
    /// The schema text is not JSON.
    NotJson {
        /// Which schema.
        role: SchemaRole,
        /// The JSON parse error.
        source: serde_json::Error,
    },
    /// The input schema's root is not `"type": "object"`.
    NotObject,
    /// The schema breaks the JSON Schema meta-schema at `at` (a JSON pointer).
    NotJsonSchema {
        /// Which schema.
        role: SchemaRole,
        /// JSON pointer to the offending part of the schema.
        at: String,
        /// The meta-schema validator's message.
        message: String,
    },
    /// The schema is valid but the validator cannot be built from it.
    Uncompilable {
        /// Which schema.
        role: SchemaRole,
        /// The validator builder's message.
        message: String,
    },
    /// More examples than [`MAX_EXAMPLES`].
    TooManyExamples {
        /// How many the operation lists.
        count: usize,
    },
    /// An example's input or expected output is over [`MAX_EXAMPLE_BYTES`].
    ExampleTooLarge {
        /// 1-based position of the example.
        index: usize,
    },
    /// An example's input or expected output is not JSON.
    ExampleNotJson {
        /// 1-based position of the example.
        index: usize,
        /// `input` or `output`.
        part: &'static str,
        /// The JSON parse error.
        source: serde_json::Error,
    },
}

impl fmt::Display for OperationProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OperationProblem::BadName => write!(
                f,
                "the name must match [a-z][a-z0-9_]* and be at most {MAX_NAME_LEN} bytes"
            ),
            OperationProblem::Duplicate => {
                f.write_str("the name is listed more than once; operation names must be unique")
            }
            OperationProblem::NotJson { role, source } => {
                write!(f, "the {role} is not JSON ({source}): return JSON Schema text")
            }
            OperationProblem::NotObject => write!(
                f,
                "the {} must describe an object: its root needs \"type\": \"object\"",
                SchemaRole::Input
            ),
            OperationProblem::NotJsonSchema { role, at, message } => {
                let at = if at.is_empty() {
                    String::new()
                } else {
                    format!(" at {at}")
                };
                write!(f, "the {role} is not valid JSON Schema{at}: {message}")
            }
            OperationProblem::Uncompilable { role, message } => {
                write!(f, "the {role} cannot be compiled: {message}")
            }
            OperationProblem::TooManyExamples { count } => {
                write!(
                    f,
                    "{count} examples listed; at most {MAX_EXAMPLES} are allowed: keep the most typical"
                )
            }
            OperationProblem::ExampleTooLarge { index } => write!(
                f,
                "example {index}: its input or output is over {} KiB of JSON: use a smaller example",
                MAX_EXAMPLE_BYTES / 1024
            ),
            OperationProblem::ExampleNotJson { index, part, source } => {
                write!(
                    f,
                    "example {index}: the {part} is not JSON ({source}): give JSON text"
                )
            }
        }
    }
}

impl Error for OperationProblem {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match self {
            OperationProblem::NotJson { source, .. } | OperationProblem::ExampleNotJson { source, .. } => {
                Some(source)
            }
            _ => None,
        }
    }
}
