//! `[llm_trace]`: the wire trace of upstream model calls (`wasmhub serve
//! --trace-llm`), a debugging aid that writes every provider request and response
//! to a file of bounded size, secrets redacted (`llm::trace`). The section was
//! `[trace]` before; that name is refused with an error naming this one (it sat
//! beside `[telemetry]`, the OpenTelemetry traces, and was taken for them).

use serde::Deserialize;
use std::path::PathBuf;

/// `[llm_trace]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LlmTraceConfig {
    /// Trace every upstream model request and response (also `--trace-llm`).
    pub enabled: bool,
    /// The trace file (default `<data_dir>/logs/llm-trace.log`).
    pub file: Option<PathBuf>,
    /// Largest trace file, in MB: past it the file is renamed to `<file>.1`
    /// (replacing the one before) and a new one starts.
    pub max_mb: u64,
}

impl Default for LlmTraceConfig {
    fn default() -> Self {
        LlmTraceConfig {
            enabled: false,
            file: None,
            max_mb: 64,
        }
    }
}

impl LlmTraceConfig {
    /// The first value that cannot be used, said for the operator.
    pub(super) fn mismatch(&self) -> Option<String> {
        (self.max_mb == 0).then(|| "llm_trace.max_mb must be greater than 0".to_string())
    }
}

/// The error for a file that still has the section's old name `[trace]`.
pub(super) const RENAMED: &str = "[trace] was renamed [llm_trace] (keys: llm -> enabled, llm_file -> file, llm_max_mb -> max_mb); \
     [telemetry] is the OpenTelemetry traces";
