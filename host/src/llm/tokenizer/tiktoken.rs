//! Tokenizers of the `tiktoken` kind: a pre-split pattern, byte-level BPE per piece
//! ([`Ranks`]) and optional special tokens. Owns the named encodings' patterns
//! (`o200k_base`, `cl100k_base`) and the tokenizer JSON format Anthropic publishes in
//! npm `@anthropic-ai/tokenizer` (`claude.json`: `bpe_ranks` in compact form,
//! `special_tokens`, `pat_str`).

use super::bpe::{Rank, Ranks, RanksError};
use crate::config::Encoding;
use serde::Deserialize;
use std::collections::HashMap;
use std::fmt;

/// The pre-split pattern of `o200k_base` (GPT-4o and later), as `tiktoken` publishes it.
pub(super) const O200K_PATTERN: &str = concat!(
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+",
);

/// The pre-split pattern of `cl100k_base` (GPT-4, GPT-3.5).
pub(super) const CL100K_PATTERN: &str = concat!(
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}",
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
);

/// The pre-split pattern of a named encoding.
pub(super) fn pattern(encoding: Encoding) -> &'static str {
    match encoding {
        Encoding::O200kBase => O200K_PATTERN,
        Encoding::Cl100kBase => CL100K_PATTERN,
    }
}

/// What is wrong with a tokenizer JSON file (the caller adds the file name).
#[derive(Debug)]
pub(crate) enum JsonError {
    /// Not JSON of the expected shape.
    Json(serde_json::Error),
    /// `bpe_ranks` is wrong.
    Ranks(RanksError),
    /// `pat_str` does not compile as a pattern.
    Pattern(Box<fancy_regex::Error>),
    /// A special token is empty.
    EmptySpecial,
}

impl fmt::Display for JsonError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Json(e) => write!(
                f,
                "not a tokenizer JSON (bpe_ranks, special_tokens, pat_str): {e}"
            ),
            Self::Ranks(e) => write!(f, "bpe_ranks: {e}"),
            Self::Pattern(e) => write!(f, "pat_str is not a usable pattern: {e}"),
            Self::EmptySpecial => f.write_str("special_tokens has an empty token"),
        }
    }
}

impl std::error::Error for JsonError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Json(e) => Some(e),
            Self::Ranks(e) => Some(e),
            Self::Pattern(e) => Some(e.as_ref()),
            Self::EmptySpecial => None,
        }
    }
}

/// The fields of a tokenizer JSON file the hub reads (others, such as
/// `explicit_n_vocab`, are ignored).
#[derive(Deserialize)]
struct JsonFile {
    bpe_ranks: String,
    #[serde(default)]
    special_tokens: HashMap<String, Rank>,
    pat_str: String,
}

/// A pre-split pattern, its ranks and the special tokens recognised in text.
#[derive(Debug)]
pub(super) struct ByteLevel {
    ranks: Ranks,
    split: fancy_regex::Regex,
    /// Special tokens and their ids, longest first (so that of two starting at the
    /// same place the longer wins).
    specials: Vec<(String, Rank)>,
}

impl ByteLevel {
    /// A named encoding's ranks with its pattern, no special tokens.
    pub(super) fn named(encoding: Encoding, ranks: Ranks) -> Self {
        // The two patterns are constants this module's tests compile.
        let split = fancy_regex::Regex::new(pattern(encoding)).expect("the tokenizer patterns compile");
        Self {
            ranks,
            split,
            specials: Vec::new(),
        }
    }

    /// A tokenizer JSON file (`claude.json`): its ranks, its own pattern and its
    /// special tokens, which are recognised in text the way the package's
    /// `countTokens` does (every special allowed).
    pub(super) fn json(text: &str) -> Result<Self, JsonError> {
        let file: JsonFile = serde_json::from_str(text).map_err(JsonError::Json)?;
        let ranks = Ranks::parse_compact(&file.bpe_ranks).map_err(JsonError::Ranks)?;
        let split = fancy_regex::Regex::new(&file.pat_str).map_err(|e| JsonError::Pattern(Box::new(e)))?;
        if file.special_tokens.keys().any(String::is_empty) {
            return Err(JsonError::EmptySpecial);
        }
        let mut specials: Vec<(String, Rank)> = file.special_tokens.into_iter().collect();
        specials.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then_with(|| a.0.cmp(&b.0)));
        Ok(Self {
            ranks,
            split,
            specials,
        })
    }

    /// Appends the ids of `text` to `out`: the ordinary text between special tokens
    /// pre-split and merged, each special token its own id.
    pub(super) fn encode(&self, text: &str, out: &mut Vec<Rank>) {
        let mut rest = text;
        while let Some((at, special, id)) = self.next_special(rest) {
            self.encode_ordinary(&rest[..at], out);
            out.push(id);
            rest = &rest[at + special.len()..];
        }
        self.encode_ordinary(rest, out);
    }

    /// The first special token in `text`: where it starts, it, and its id.
    fn next_special(&self, text: &str) -> Option<(usize, &str, Rank)> {
        let mut best: Option<(usize, &str, Rank)> = None;
        for (special, id) in &self.specials {
            if let Some(at) = text.find(special.as_str())
                && best.is_none_or(|(b, _, _)| at < b)
            {
                best = Some((at, special, *id));
            }
        }
        best
    }

    /// Ordinary text, special tokens not recognised.
    ///
    /// Should the pattern engine give up on a piece (its backtracking limit), the rest
    /// of the text is encoded as one piece: still a valid encoding, only not the one the
    /// pattern would have split. Text a pattern does not match is counted too (the
    /// named patterns and `claude.json`'s match every character).
    fn encode_ordinary(&self, text: &str, out: &mut Vec<Rank>) {
        let mut at = 0;
        for found in self.split.find_iter(text) {
            match found {
                Ok(m) => {
                    if m.start() > at {
                        // Text a file's own pattern left between two matches.
                        self.ranks.encode_piece(&text.as_bytes()[at..m.start()], out);
                    }
                    self.ranks.encode_piece(m.as_str().as_bytes(), out);
                    at = m.end();
                }
                Err(_) => break,
            }
        }
        if at < text.len() {
            // Reached when the engine stopped early, or when a file's own pattern
            // leaves text unmatched at the end.
            self.ranks.encode_piece(&text.as_bytes()[at..], out);
        }
    }
}
