//! The hub's shared tokenizers: each spec's ranks file is loaded once, on first use,
//! and every later count (any request, any thread) shares it. A file that failed to
//! load stays failed until the hub restarts, so a bad file is reported once, not on
//! every request, and counting falls back to the estimate.

use super::{LoadError, Spec, Tokenizer};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

type Loaded = Result<Arc<Tokenizer>, Arc<LoadError>>;

/// Tokenizers by spec, loaded from `dir` (`[tokenizers] dir`) with a size limit.
#[derive(Debug)]
pub(crate) struct Tokenizers {
    dir: PathBuf,
    max_file_kb: u64,
    loaded: Mutex<HashMap<Spec, Loaded>>,
}

impl Tokenizers {
    pub(crate) fn new(dir: PathBuf, max_file_kb: u64) -> Self {
        Self {
            dir,
            max_file_kb,
            loaded: Mutex::new(HashMap::new()),
        }
    }

    /// `spec`'s tokenizer, loading it on the first call. The lock is held while a
    /// file loads, so two requests never read the same file twice.
    pub(crate) fn get(&self, spec: &Spec) -> Loaded {
        let mut loaded = self
            .loaded
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(found) = loaded.get(spec) {
            return found.clone();
        }
        let result = Tokenizer::load(spec, &self.dir, self.max_file_kb)
            .map(Arc::new)
            .map_err(Arc::new);
        if let Err(e) = &result {
            crate::warn!("{e}; token counts for {spec} fall back to the 4-bytes estimate");
        }
        loaded.insert(spec.clone(), result.clone());
        result
    }
}
