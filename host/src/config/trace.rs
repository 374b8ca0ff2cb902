//! `[trace]`: the wire trace of upstream model calls (`wasmhub serve --trace-llm`),
//! a debugging aid that writes every provider request and response to a file of
//! bounded size, secrets redacted (`llm::trace`).

use serde::Deserialize;
use std::path::PathBuf;

/// `[trace]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TraceConfig {
    /// Trace every upstream model request and response (also `--trace-llm`).
    pub llm: bool,
    /// The trace file (default `<data_dir>/logs/llm-trace.log`).
    pub llm_file: Option<PathBuf>,
    /// Largest trace file, in MB: past it the file is renamed to `<file>.1`
    /// (replacing the one before) and a new one starts.
    pub llm_max_mb: u64,
}

impl Default for TraceConfig {
    fn default() -> Self {
        TraceConfig {
            llm: false,
            llm_file: None,
            llm_max_mb: 64,
        }
    }
}

impl TraceConfig {
    /// The first value that cannot be used, said for the operator.
    pub(super) fn mismatch(&self) -> Option<String> {
        (self.llm_max_mb == 0).then(|| "trace.llm_max_mb must be greater than 0".to_string())
    }
}
