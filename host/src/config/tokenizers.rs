//! `[tokenizers]`: where the files of named tokenizers (`tiktoken:NAME`,
//! `anthropic:claude`, `sentencepiece:NAME`) are read from, how large one may be, and
//! the tokenizer spec a provider or model names (`tokenizer = "tiktoken:o200k_base"`);
//! `llm::tokenizer` loads and runs them.

use serde::Deserialize;
use std::fmt;
use std::path::{Path, PathBuf};

/// `[tokenizers]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TokenizersConfig {
    /// Folder of `NAME.tiktoken`, `claude.json` and `NAME.model` files (default
    /// `<data_dir>/tokenizers`).
    pub dir: Option<PathBuf>,
    /// Largest ranks file, in KiB (o200k_base's is about 3.5 MiB).
    pub max_file_kb: u64,
}

impl Default for TokenizersConfig {
    fn default() -> Self {
        TokenizersConfig {
            dir: None,
            max_file_kb: 16 * 1024,
        }
    }
}

impl TokenizersConfig {
    /// The folder of `tiktoken:NAME` files, with `data_dir` the hub's data folder.
    pub fn dir(&self, data_dir: &Path) -> PathBuf {
        self.dir.clone().unwrap_or_else(|| data_dir.join("tokenizers"))
    }

    /// The first value that cannot be used, said for the operator.
    pub(super) fn mismatch(&self) -> Option<String> {
        (self.max_file_kb == 0).then(|| "tokenizers.max_file_kb must be greater than 0".to_string())
    }
}

/// A configured tokenizer: which file, in which format.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Deserialize)]
#[serde(try_from = "String")]
pub enum Spec {
    /// `tiktoken:NAME`: `NAME.tiktoken` in `[tokenizers] dir`, split by NAME's pattern.
    Tiktoken(Encoding),
    /// `anthropic:claude`: `claude.json` (from npm `@anthropic-ai/tokenizer`) in
    /// `[tokenizers] dir`.
    Anthropic,
    /// `file:PATH`: a `.tiktoken` ranks file split by the `o200k_base` pattern, or (a
    /// name ending in `.json`) a tokenizer JSON like `claude.json`.
    File(PathBuf),
    /// `sentencepiece:PATH` (a `/` in it) or `sentencepiece:NAME` (`NAME.model` in
    /// `[tokenizers] dir`): a SentencePiece model (Gemini and Gemma's).
    SentencePiece(String),
}

/// The named encodings whose pre-split pattern the hub knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Encoding {
    /// `o200k_base` (GPT-4o and later).
    O200kBase,
    /// `cl100k_base` (GPT-4, GPT-3.5).
    Cl100kBase,
}

impl Encoding {
    /// The encoding's name, as `tiktoken` and its file name say it.
    pub fn name(self) -> &'static str {
        match self {
            Self::O200kBase => "o200k_base",
            Self::Cl100kBase => "cl100k_base",
        }
    }
}

/// A tokenizer spec that is none of the accepted forms.
#[derive(Debug, PartialEq, Eq)]
pub struct SpecError(pub String);

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:?} is not a tokenizer; use \"tiktoken:o200k_base\", \"tiktoken:cl100k_base\", \"anthropic:claude\", \"sentencepiece:NAME\" (NAME.model in tokenizers.dir), \"sentencepiece:/path/tokenizer.model\" or \"file:/path/x.tiktoken\" (or .json)",
            self.0
        )
    }
}

impl std::error::Error for SpecError {}

impl std::str::FromStr for Spec {
    type Err = SpecError;

    fn from_str(s: &str) -> Result<Self, SpecError> {
        match s.split_once(':') {
            Some(("tiktoken", "o200k_base")) => Ok(Self::Tiktoken(Encoding::O200kBase)),
            Some(("tiktoken", "cl100k_base")) => Ok(Self::Tiktoken(Encoding::Cl100kBase)),
            Some(("anthropic", "claude")) => Ok(Self::Anthropic),
            Some(("file", path)) if !path.is_empty() => Ok(Self::File(PathBuf::from(path))),
            Some(("sentencepiece", name)) if !name.is_empty() => Ok(Self::SentencePiece(name.to_owned())),
            _ => Err(SpecError(s.to_owned())),
        }
    }
}

impl fmt::Display for Spec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Tiktoken(e) => write!(f, "tiktoken:{}", e.name()),
            Self::Anthropic => f.write_str("anthropic:claude"),
            Self::File(path) => write!(f, "file:{}", path.display()),
            Self::SentencePiece(name) => write!(f, "sentencepiece:{name}"),
        }
    }
}

impl Spec {
    /// The file this spec reads, with `dir` the `[tokenizers] dir`.
    pub fn path(&self, dir: &Path) -> PathBuf {
        match self {
            Self::Tiktoken(e) => dir.join(format!("{}.tiktoken", e.name())),
            Self::Anthropic => dir.join("claude.json"),
            Self::File(path) => path.clone(),
            Self::SentencePiece(name) if name.contains('/') => PathBuf::from(name),
            Self::SentencePiece(name) => dir.join(format!("{name}.model")),
        }
    }
}

impl TryFrom<String> for Spec {
    type Error = SpecError;

    fn try_from(s: String) -> Result<Self, SpecError> {
        s.parse()
    }
}
