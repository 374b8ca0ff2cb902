//! Records the writer had no room for: counted per span and stored as one summary
//! record ("N records not written, calls X..Y"), so a gap in the audit log is
//! visible in `GET /api/calls` and in the hub log, never only in a metric.

use super::record::{CallOutcome, CallRecord};
use crate::hub::error::ErrorCode;
use serde_json::json;

/// The `tool` of a summary record.
pub(crate) const SUMMARY_TOOL: &str = "hub.audit";

/// The first and last call of a span that was not written.
#[derive(Debug, Clone)]
struct Mark {
    id: String,
    started_ms: u64,
}

/// A run of records that were not written, oldest first.
#[derive(Debug, Clone)]
pub(super) struct Unwritten {
    count: u64,
    first: Mark,
    last: Mark,
}

impl Unwritten {
    /// A span starting with `record`.
    pub(super) fn starting(record: &CallRecord) -> Unwritten {
        let mark = Mark {
            id: record.id.clone(),
            started_ms: record.started_ms,
        };
        Unwritten {
            count: 1,
            first: mark.clone(),
            last: mark,
        }
    }

    /// Adds `record` to the span.
    pub(super) fn add(&mut self, record: &CallRecord) {
        self.count += 1;
        self.last = Mark {
            id: record.id.clone(),
            started_ms: record.started_ms,
        };
    }

    /// What the operator reads, in the summary record and the hub log.
    pub(super) fn message(&self) -> String {
        format!(
            "{} records not written, calls {}..{}: the audit writer fell behind (raise audit.queue, or the call rate is higher than the store can take)",
            self.count, self.first.id, self.last.id
        )
    }

    /// The record stored in place of the span: it starts when the first unwritten
    /// call started and lasts until the last one started.
    pub(super) fn summary(&self) -> CallRecord {
        CallRecord {
            agent: None,
            id: crate::ids::new_id("audit"),
            tool: SUMMARY_TOOL.into(),
            caller: "hub".into(),
            client: None,
            parent: None,
            started_ms: self.first.started_ms,
            duration_us: self.last.started_ms.saturating_sub(self.first.started_ms) * 1000,
            input_bytes: 0,
            output_bytes: 0,
            outcome: CallOutcome::Failed {
                code: ErrorCode::CallLimit,
                message: self.message(),
            },
            input: Some(json!({
                "not_written": self.count,
                "first_call": self.first.id,
                "last_call": self.last.id,
            })),
            approval: None,
        }
    }
}
