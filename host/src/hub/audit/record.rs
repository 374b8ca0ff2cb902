//! One audit record: what a call was, how it ended, and its stored JSON (the same
//! fields every version wrote, so old records keep decoding).

use crate::hub::approval::ApprovalRecord;
use crate::hub::error::ErrorCode;
use serde::de::value::StrDeserializer;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One call, as stored and as `GET /api/calls` shows it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CallRecord {
    /// The call's id (`call_...`), also its audit key.
    pub id: String,
    /// The operation called, `plugin.operation`.
    pub tool: String,
    /// The token name the call ran under (never the secret).
    pub caller: String,
    /// The OAuth client the call came through, for a grant (`None` for a
    /// configured token or the local operator).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
    /// The call that made this one through `host.call`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// The named agent whose turn made the call (`agent::profiles`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// Start, in milliseconds since the Unix epoch.
    pub started_ms: u64,
    /// Wall time of the call, in microseconds.
    pub duration_us: u64,
    /// Size of the call's JSON input, in bytes.
    pub input_bytes: u64,
    /// Size of the call's JSON output, in bytes (0 when there was none).
    pub output_bytes: u64,
    /// Stored as `"outcome"` (`ok` or the error code) and, for a failed call,
    /// `"error"` (the message).
    #[serde(flatten)]
    pub outcome: CallOutcome,
    /// The input with sensitive fields redacted, cut to about 1 KiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<Value>,
    /// How a person approved or refused the call, when one was asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<ApprovalRecord>,
}

/// How a call ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "OutcomeFields", try_from = "OutcomeFields")]
pub enum CallOutcome {
    /// The operation returned a result.
    Ok,
    /// The call ended in an error.
    Failed {
        /// The error code the caller saw.
        code: ErrorCode,
        /// What went wrong, as the caller was told.
        message: String,
    },
}

impl CallOutcome {
    /// `ok` or the error code: the stored `outcome` and the metrics label.
    pub fn as_str(&self) -> &'static str {
        match self {
            CallOutcome::Ok => "ok",
            CallOutcome::Failed { code, .. } => code.as_str(),
        }
    }
}

/// The stored shape of a [`CallOutcome`]; the `error` of a failure may be missing
/// (it is optional in the stored format).
#[derive(Serialize, Deserialize)]
struct OutcomeFields {
    outcome: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

impl From<CallOutcome> for OutcomeFields {
    fn from(outcome: CallOutcome) -> OutcomeFields {
        match outcome {
            CallOutcome::Ok => OutcomeFields {
                outcome: "ok".into(),
                error: None,
            },
            CallOutcome::Failed { code, message } => OutcomeFields {
                outcome: code.as_str().into(),
                error: Some(message),
            },
        }
    }
}

impl TryFrom<OutcomeFields> for CallOutcome {
    type Error = serde::de::value::Error;

    fn try_from(fields: OutcomeFields) -> Result<CallOutcome, Self::Error> {
        if fields.outcome == "ok" {
            return Ok(CallOutcome::Ok);
        }
        let code = ErrorCode::deserialize(StrDeserializer::new(&fields.outcome))?;
        Ok(CallOutcome::Failed {
            code,
            message: fields.error.unwrap_or_default(),
        })
    }
}
