//! What [`Plugin::check`](crate::Plugin::check) finds wrong with a plugin: one typed
//! case per reason the host would reject it, each naming the operation (and the
//! example) so that the failing `cargo test` says what to fix.

use std::fmt;

use serde_json::Value;

use crate::example::ExampleProblem;

/// Most bytes of instructions the host keeps (the rest would be cut silently).
pub const MAX_INSTRUCTIONS_BYTES: usize = 8 * 1024;

/// Why the host would reject a plugin.
#[derive(Debug, Clone, PartialEq)]
pub enum CheckError {
    /// An operation name is invalid or repeated, or there are no operations.
    Names {
        /// What is wrong.
        problem: &'static str,
        /// Every operation name, in declaration order.
        names: Vec<String>,
    },
    /// An operation has no description.
    Undocumented {
        /// The operation.
        operation: String,
    },
    /// An operation's input schema does not describe a JSON object.
    InputNotObject {
        /// The operation.
        operation: String,
        /// The derived input schema.
        schema: Value,
    },
    /// The instructions are blank (leave them out instead).
    BlankInstructions,
    /// The instructions are longer than [`MAX_INSTRUCTIONS_BYTES`].
    InstructionsTooLong {
        /// Their length in bytes.
        bytes: usize,
    },
    /// An example does not hold.
    Example {
        /// The operation it belongs to.
        operation: String,
        /// Its 1-based position among the operation's examples.
        index: usize,
        /// Its description.
        description: String,
        /// What is wrong.
        problem: ExampleProblem,
    },
}

impl fmt::Display for CheckError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CheckError::Names { problem, names } => write!(f, "{problem} (operations: {names:?})"),
            CheckError::Undocumented { operation } => {
                write!(
                    f,
                    "operation `{operation}` has no description: write a doc comment on it"
                )
            }
            CheckError::InputNotObject { operation, schema } => write!(
                f,
                "operation `{operation}`: the input type must serialize as a JSON object (a struct), \
                 but its schema is {schema}"
            ),
            CheckError::BlankInstructions => {
                write!(
                    f,
                    "the plugin's instructions are blank: leave `instructions` out instead"
                )
            }
            CheckError::InstructionsTooLong { bytes } => write!(
                f,
                "the plugin's instructions are {bytes} bytes; the host keeps only {MAX_INSTRUCTIONS_BYTES}"
            ),
            CheckError::Example {
                operation,
                index,
                description,
                problem,
            } => write!(
                f,
                "operation `{operation}`, example {index} ({description:?}): {problem}"
            ),
        }
    }
}

impl std::error::Error for CheckError {}
