//! Token counts from real tokenizers: a tokenizer spec from the configuration
//! (`tiktoken:o200k_base`, `tiktoken:cl100k_base`, `file:/path/x.tiktoken`), loading
//! its ranks file under a size limit, and encoding text into token ids the way OpenAI's
//! `tiktoken` does (pre-split by the encoding's pattern, then byte-level BPE per piece,
//! [`bpe`]). No vocabulary is compiled into the binary: the operator supplies the
//! `.tiktoken` files. [`Tokenizers`] loads each spec once and shares it.

mod bpe;
mod cache;

pub(crate) use bpe::{Rank, RanksError};
pub(crate) use cache::Tokenizers;

pub(crate) use crate::config::Spec;

use crate::config::Encoding;

use bpe::Ranks;
use std::fmt;
use std::path::{Path, PathBuf};

/// The pre-split pattern of `o200k_base` (GPT-4o and later), as `tiktoken` publishes it.
const O200K_PATTERN: &str = concat!(
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+",
);

/// The pre-split pattern of `cl100k_base` (GPT-4, GPT-3.5).
const CL100K_PATTERN: &str = concat!(
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}",
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
);

/// The pre-split pattern of `spec`'s encoding (`file:` specs use `o200k_base`'s).
fn pattern(spec: &Spec) -> &'static str {
    match spec {
        Spec::Tiktoken(Encoding::O200kBase) | Spec::File(_) => O200K_PATTERN,
        Spec::Tiktoken(Encoding::Cl100kBase) => CL100K_PATTERN,
    }
}

/// Why a tokenizer could not be loaded; each names the file.
#[derive(Debug)]
pub(crate) enum LoadError {
    /// The ranks file could not be read.
    Read { path: PathBuf, source: std::io::Error },
    /// The ranks file is larger than `tokenizers.max_file_kb`.
    TooLarge {
        path: PathBuf,
        bytes: u64,
        limit_kb: u64,
    },
    /// The ranks file is not UTF-8 text.
    NotText { path: PathBuf },
    /// The ranks file's content is wrong.
    Ranks { path: PathBuf, source: RanksError },
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Read { path, source } => {
                write!(f, "cannot read tokenizer file {}: {source}", path.display())
            }
            Self::TooLarge {
                path,
                bytes,
                limit_kb,
            } => write!(
                f,
                "tokenizer file {} is {bytes} bytes, larger than tokenizers.max_file_kb ({limit_kb} KiB)",
                path.display()
            ),
            Self::NotText { path } => write!(f, "tokenizer file {} is not UTF-8 text", path.display()),
            Self::Ranks { path, source } => write!(f, "tokenizer file {}: {source}", path.display()),
        }
    }
}

impl std::error::Error for LoadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Read { source, .. } => Some(source),
            Self::Ranks { source, .. } => Some(source),
            Self::TooLarge { .. } | Self::NotText { .. } => None,
        }
    }
}

/// A loaded tokenizer: a ranks table and the pattern that pre-splits text.
#[derive(Debug)]
pub(crate) struct Tokenizer {
    spec: Spec,
    ranks: Ranks,
    split: fancy_regex::Regex,
}

impl Tokenizer {
    /// Reads `spec`'s ranks file (in `dir` for `tiktoken:` specs), refusing one larger
    /// than `max_file_kb` KiB.
    pub(crate) fn load(spec: &Spec, dir: &Path, max_file_kb: u64) -> Result<Self, LoadError> {
        let path = spec.path(dir);
        let read = |source| LoadError::Read {
            path: path.clone(),
            source,
        };
        let bytes = std::fs::metadata(&path).map_err(read)?.len();
        if bytes > max_file_kb.saturating_mul(1024) {
            return Err(LoadError::TooLarge {
                path,
                bytes,
                limit_kb: max_file_kb,
            });
        }
        let data = std::fs::read(&path).map_err(read)?;
        let text = String::from_utf8(data).map_err(|_| LoadError::NotText { path: path.clone() })?;
        let ranks = Ranks::parse(&text).map_err(|source| LoadError::Ranks { path, source })?;
        Ok(Self::new(spec.clone(), ranks))
    }

    fn new(spec: Spec, ranks: Ranks) -> Self {
        // The two patterns are constants this module's tests compile.
        let split = fancy_regex::Regex::new(pattern(&spec)).expect("the tokenizer patterns compile");
        Self { spec, ranks, split }
    }

    /// The spec this tokenizer was loaded from (what an accounting record names).
    pub(crate) fn spec(&self) -> &Spec {
        &self.spec
    }

    /// The token ids of `text` (ordinary text: special tokens are not recognised).
    ///
    /// Should the pattern engine give up on a piece (its backtracking limit), the rest
    /// of the text is encoded as one piece: still a valid encoding, only not the one the
    /// pattern would have split.
    pub(crate) fn encode(&self, text: &str) -> Vec<Rank> {
        let mut out = Vec::with_capacity(text.len() / 3);
        let mut at = 0;
        for found in self.split.find_iter(text) {
            match found {
                Ok(m) => {
                    self.ranks.encode_piece(m.as_str().as_bytes(), &mut out);
                    at = m.end();
                }
                Err(_) => break,
            }
        }
        if at < text.len() {
            // Only reached when the engine stopped early: the pattern's last
            // alternatives match any leftover character.
            self.ranks.encode_piece(&text.as_bytes()[at..], &mut out);
        }
        out
    }

    /// How many tokens `text` takes.
    pub(crate) fn count(&self, text: &str) -> u64 {
        self.encode(text).len() as u64
    }
}

/// For tests: a ranks file's text, the 256 single bytes (rank = the byte) and then
/// `extra`.
#[cfg(test)]
pub(crate) fn test_ranks(extra: &[(&[u8], Rank)]) -> String {
    let mut text = String::new();
    for b in 0..=255u8 {
        text.push_str(&format!("{} {b}\n", crate::base64::encode(&[b])));
    }
    for (token, rank) in extra {
        text.push_str(&format!("{} {rank}\n", crate::base64::encode(token)));
    }
    text
}

#[cfg(test)]
mod tests;
