//! One audit record: what a call was, how it ended, and its stored JSON (the same
//! fields every version wrote, so old records keep decoding).

use crate::hub::approval::ApprovalRecord;
use crate::hub::error::ErrorCode;
use serde::de::value::StrDeserializer;
use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;

/// One call, as stored and as `GET /api/calls` shows it. Serialized by hand
/// ([`CallRecord::serialize`]): serde's `flatten` and `into` copied the outcome into
/// a new struct and buffered it for every record the writer thread encodes.
#[derive(Debug, Clone, Deserialize, PartialEq)]
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

impl Serialize for CallRecord {
    /// The members in the order the derived form wrote them, optional ones left
    /// out when empty, the outcome as `outcome` (and `error` for a failure).
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("id", &self.id)?;
        map.serialize_entry("tool", &self.tool)?;
        map.serialize_entry("caller", &self.caller)?;
        for (key, value) in [
            ("client", &self.client),
            ("parent", &self.parent),
            ("agent", &self.agent),
        ] {
            if let Some(value) = value {
                map.serialize_entry(key, value)?;
            }
        }
        map.serialize_entry("started_ms", &self.started_ms)?;
        map.serialize_entry("duration_us", &self.duration_us)?;
        map.serialize_entry("input_bytes", &self.input_bytes)?;
        map.serialize_entry("output_bytes", &self.output_bytes)?;
        map.serialize_entry("outcome", self.outcome.as_str())?;
        if let CallOutcome::Failed { message, .. } = &self.outcome {
            map.serialize_entry("error", message)?;
        }
        if let Some(input) = &self.input {
            map.serialize_entry("input", input)?;
        }
        if let Some(approval) = &self.approval {
            map.serialize_entry("approval", approval)?;
        }
        map.end()
    }
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
