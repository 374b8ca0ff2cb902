//! Token counts from real tokenizers: a tokenizer spec from the configuration
//! (`tiktoken:o200k_base`, `tiktoken:cl100k_base`, `anthropic:claude`,
//! `sentencepiece:NAME`, `file:/path/x.tiktoken`), loading its file under a size limit,
//! and encoding text into token ids the way the reference tokenizer does: OpenAI's
//! `tiktoken` and Anthropic's tokenizer JSON pre-split by a pattern, then byte-level BPE
//! per piece ([`tiktoken`], [`bpe`]); SentencePiece models (Gemini/Gemma) normalized
//! and merged by their scores ([`sentencepiece`]). No vocabulary is compiled into the binary: the operator supplies the
//! files. [`Tokenizers`] loads each spec once and shares it.

mod bpe;
mod cache;
mod sentencepiece;
mod tiktoken;

pub(crate) use bpe::{Rank, RanksError};
pub(crate) use cache::Tokenizers;
pub(crate) use sentencepiece::ModelError;
pub(crate) use tiktoken::JsonError;

pub(crate) use crate::config::Spec;

use bpe::Ranks;
use std::fmt;
use std::path::{Path, PathBuf};
use tiktoken::ByteLevel;

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
    /// The tokenizer JSON file's content is wrong.
    Json { path: PathBuf, source: JsonError },
    /// The SentencePiece model file's content is wrong.
    Model { path: PathBuf, source: ModelError },
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
            Self::Json { path, source } => write!(f, "tokenizer file {}: {source}", path.display()),
            Self::Model { path, source } => write!(f, "tokenizer file {}: {source}", path.display()),
        }
    }
}

impl std::error::Error for LoadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Read { source, .. } => Some(source),
            Self::Ranks { source, .. } => Some(source),
            Self::Json { source, .. } => Some(source),
            Self::Model { source, .. } => Some(source),
            Self::TooLarge { .. } | Self::NotText { .. } => None,
        }
    }
}

/// A loaded tokenizer and the spec it came from.
#[derive(Debug)]
pub(crate) struct Tokenizer {
    spec: Spec,
    kind: Kind,
}

/// How a tokenizer encodes.
#[derive(Debug)]
enum Kind {
    /// Pre-split by a pattern, byte-level BPE per piece.
    ByteLevel(ByteLevel),
    /// A SentencePiece BPE model.
    SentencePiece(sentencepiece::Model),
}

impl Tokenizer {
    /// Reads `spec`'s file (in `dir` for named specs), refusing one larger than
    /// `max_file_kb` KiB.
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
        let kind = match spec {
            Spec::SentencePiece(_) => sentencepiece::Model::parse(&data)
                .map(Kind::SentencePiece)
                .map_err(|source| LoadError::Model { path, source })?,
            Spec::Anthropic => Self::json(data, path)?,
            Spec::File(file) if file.extension().is_some_and(|e| e == "json") => Self::json(data, path)?,
            Spec::Tiktoken(encoding) => {
                Kind::ByteLevel(ByteLevel::named(*encoding, Self::ranks(data, path)?))
            }
            Spec::File(_) => Kind::ByteLevel(ByteLevel::named(
                crate::config::Encoding::O200kBase,
                Self::ranks(data, path)?,
            )),
        };
        Ok(Self {
            spec: spec.clone(),
            kind,
        })
    }

    fn text(data: Vec<u8>, path: &Path) -> Result<String, LoadError> {
        String::from_utf8(data).map_err(|_| LoadError::NotText {
            path: path.to_path_buf(),
        })
    }

    fn ranks(data: Vec<u8>, path: PathBuf) -> Result<Ranks, LoadError> {
        Ranks::parse(&Self::text(data, &path)?).map_err(|source| LoadError::Ranks { path, source })
    }

    fn json(data: Vec<u8>, path: PathBuf) -> Result<Kind, LoadError> {
        ByteLevel::json(&Self::text(data, &path)?)
            .map(Kind::ByteLevel)
            .map_err(|source| LoadError::Json { path, source })
    }
    /// The spec this tokenizer was loaded from (what an accounting record names).
    pub(crate) fn spec(&self) -> &Spec {
        &self.spec
    }

    /// The token ids of `text`. Special tokens are recognised only where the reference
    /// counts them in text (`claude.json`'s, as its `countTokens` does).
    pub(crate) fn encode(&self, text: &str) -> Vec<Rank> {
        let mut out = Vec::with_capacity(text.len() / 3);
        match &self.kind {
            Kind::ByteLevel(b) => b.encode(text, &mut out),
            Kind::SentencePiece(m) => m.encode(text, &mut out),
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
