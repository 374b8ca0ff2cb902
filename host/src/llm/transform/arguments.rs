//! A finished tool call's arguments: parsed JSON, or why the call cannot run
//! together with the text the model sent (which the loop reports back to it).

use serde_json::{Map, Value};
use std::sync::Arc;

/// Why a tool call's arguments cannot be used. Each variant holds the arguments
/// text as the model sent it.
#[derive(Debug, Clone)]
pub enum ArgumentsError {
    /// The response ended with an error before the call was complete.
    Incomplete(String),
    /// The model named no function.
    NoName(String),
    /// The text is not JSON (`Arc`: the summary holding this is `Clone`).
    InvalidJson {
        raw: String,
        source: Arc<serde_json::Error>,
    },
}

impl ArgumentsError {
    /// The arguments text as the model sent it.
    pub fn raw(&self) -> &str {
        match self {
            ArgumentsError::Incomplete(raw) | ArgumentsError::NoName(raw) => raw,
            ArgumentsError::InvalidJson { raw, .. } => raw,
        }
    }
}

/// Same kind and same text (the parse error follows from the text).
impl PartialEq for ArgumentsError {
    fn eq(&self, other: &Self) -> bool {
        std::mem::discriminant(self) == std::mem::discriminant(other) && self.raw() == other.raw()
    }
}

impl std::fmt::Display for ArgumentsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ArgumentsError::Incomplete(_) => {
                f.write_str("the response ended with an error before this tool call was complete")
            }
            ArgumentsError::NoName(_) => f.write_str("the model sent a tool call without a function name"),
            ArgumentsError::InvalidJson { source, .. } => {
                write!(f, "the tool arguments are not valid JSON: {source}")
            }
        }
    }
}

impl std::error::Error for ArgumentsError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ArgumentsError::InvalidJson { source, .. } => Some(&**source),
            _ => None,
        }
    }
}

/// The arguments of a call to `name` whose text is `raw`; `failed`: the response
/// ended with an error before the call was complete.
pub(super) fn parse(name: &str, raw: String, failed: bool) -> Result<Value, ArgumentsError> {
    if failed {
        Err(ArgumentsError::Incomplete(raw))
    } else if name.is_empty() {
        Err(ArgumentsError::NoName(raw))
    } else if raw.trim().is_empty() {
        // Models send "" for tools without parameters.
        Ok(Value::Object(Map::new()))
    } else {
        serde_json::from_str::<Value>(&raw).map_err(|e| ArgumentsError::InvalidJson {
            raw,
            source: Arc::new(e),
        })
    }
}
