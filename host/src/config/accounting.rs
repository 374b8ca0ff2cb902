//! `[accounting]`: where usage and cost records go, how many are kept, and the
//! per-model prices cost is computed from. The records themselves are
//! `hub::accounting`'s; this is the shape of the file.

use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Accounting records of model steps and tool calls.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AccountingConfig {
    /// Most records kept in the store; older ones are dropped first.
    pub retention: usize,
    /// Records waiting for the writer; past it, records are counted, not stored.
    pub queue: usize,
    /// A file every record is also appended to, one JSON object per line.
    pub jsonl: Option<PathBuf>,
    /// Prices by model, `provider/model` or the model name alone (the first wins).
    pub prices: BTreeMap<String, ModelPrice>,
}

impl Default for AccountingConfig {
    fn default() -> Self {
        AccountingConfig {
            retention: 100_000,
            queue: 8192,
            jsonl: None,
            prices: BTreeMap::new(),
        }
    }
}

/// One model's prices, in a currency of the operator's choice per million tokens.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelPrice {
    /// Per million input (prompt) tokens not served from the provider's cache.
    pub input: f64,
    /// Per million output (completion) tokens, reasoning tokens included.
    pub output: f64,
    /// Per million cached input tokens; the input price when absent.
    #[serde(default)]
    pub cached_input: Option<f64>,
}

impl AccountingConfig {
    /// The first value that cannot work, said for the operator.
    pub(super) fn mismatch(&self) -> Option<String> {
        if self.queue == 0 {
            return Some("accounting.queue must be greater than 0".into());
        }
        for (model, p) in &self.prices {
            let prices = [Some(p.input), Some(p.output), p.cached_input];
            if prices.into_iter().flatten().any(|v| !v.is_finite() || v < 0.0) {
                return Some(format!(
                    "accounting.prices.{model:?}: prices must be finite and not negative"
                ));
            }
        }
        None
    }
}
