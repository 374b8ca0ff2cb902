//! SentencePiece's normalizer, as its `normalizer.cc` runs it before encoding: each
//! step maps the longest prefix of the input (a user-defined symbol as it is, else the
//! longest rule of the precompiled character map, else one character), drops heading,
//! repeated and trailing spaces when `remove_extra_whitespaces`, adds the dummy prefix
//! space, and writes spaces as `▁` when `escape_whitespaces`. The character map (e.g.
//! `nmt_nfkc`) is a darts-clone double-array trie of rules followed by their
//! NUL-terminated replacements; `identity` (Gemma's) has none.

use super::Symbols;
use std::fmt;

/// The space symbol, U+2581.
pub(super) const SPACE: &str = "\u{2581}";

/// A precompiled character map that cannot be read.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct CharsmapError;

impl fmt::Display for CharsmapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("normalizer_spec.precompiled_charsmap is broken (its trie is larger than the map)")
    }
}

impl std::error::Error for CharsmapError {}

/// A precompiled character map: the trie's units and the replacement strings.
#[derive(Debug)]
struct Charsmap {
    units: Vec<u32>,
    replacements: Vec<u8>,
}

impl Charsmap {
    /// `<trie size: u32 LE><trie units: u32 LE each><replacements>`.
    fn parse(blob: &[u8]) -> Result<Self, CharsmapError> {
        let size = blob.get(..4).ok_or(CharsmapError)?;
        let size = u32::from_le_bytes(size.try_into().map_err(|_| CharsmapError)?) as usize;
        let rest = &blob[4..];
        if size > rest.len() {
            return Err(CharsmapError);
        }
        let units = rest[..size]
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes")))
            .collect();
        Ok(Self {
            units,
            replacements: rest[size..].to_vec(),
        })
    }

    /// The longest rule matching a prefix of `input`: its length and replacement.
    /// (darts-clone's common prefix search: a unit holds its label, the offset to its
    /// children and whether a value leaf hangs below it.)
    fn longest(&self, input: &[u8]) -> Option<(usize, &[u8])> {
        let unit = |pos: usize| self.units.get(pos).copied();
        let offset = |u: u32| ((u >> 10) << ((u & (1 << 9)) >> 6)) as usize;
        let mut pos = offset(unit(0)?);
        let mut found = None;
        for (i, &byte) in input.iter().enumerate() {
            pos ^= usize::from(byte);
            // A unit past the array (a broken map) ends the search like a mismatch.
            let Some(u) = unit(pos).filter(|u| u & ((1 << 31) | 0xff) == u32::from(byte)) else {
                break;
            };
            pos ^= offset(u);
            if (u >> 8) & 1 == 1
                && let Some(leaf) = unit(pos)
            {
                found = Some((i + 1, (leaf & ((1 << 31) - 1)) as usize));
            }
        }
        let (len, value) = found?;
        let tail = self.replacements.get(value..)?;
        let end = tail.iter().position(|&b| b == 0).unwrap_or(tail.len());
        Some((len, &tail[..end]))
    }
}

/// The normalizer of one model.
#[derive(Debug)]
pub(super) struct Normalizer {
    charsmap: Option<Charsmap>,
    pub(super) add_dummy_prefix: bool,
    pub(super) remove_extra_whitespaces: bool,
    pub(super) escape_whitespaces: bool,
    pub(super) treat_whitespace_as_suffix: bool,
}

impl Normalizer {
    pub(super) fn new(
        spec: &super::proto::NormalizerSpec,
        treat_whitespace_as_suffix: bool,
    ) -> Result<Self, CharsmapError> {
        let charsmap = match spec.precompiled_charsmap.is_empty() {
            true => None,
            false => Some(Charsmap::parse(&spec.precompiled_charsmap)?),
        };
        Ok(Self {
            charsmap,
            add_dummy_prefix: spec.add_dummy_prefix,
            remove_extra_whitespaces: spec.remove_extra_whitespaces,
            escape_whitespaces: spec.escape_whitespaces,
            treat_whitespace_as_suffix,
        })
    }

    /// What the longest prefix of `input` normalizes to, and its length.
    fn prefix<'a>(&'a self, input: &'a str, user: &Symbols) -> (&'a [u8], usize) {
        if let Some(len) = user.longest(input.as_bytes()) {
            return (&input.as_bytes()[..len], len);
        }
        if let Some((len, to)) = self.charsmap.as_ref().and_then(|m| m.longest(input.as_bytes())) {
            // A rule never ends inside a character of valid UTF-8 text unless the map
            // is odd; then take the character whole so the rest stays valid text.
            if input.is_char_boundary(len) {
                return (to, len);
            }
        }
        let len = input.chars().next().map_or(0, char::len_utf8);
        (&input.as_bytes()[..len], len)
    }

    /// `input` normalized, as bytes (a rule's replacement could in principle be any bytes).
    pub(super) fn normalize(&self, mut input: &str, user: &Symbols) -> Vec<u8> {
        let mut out = Vec::with_capacity(input.len() * 3 / 2);
        if self.remove_extra_whitespaces {
            while !input.is_empty() {
                let (to, len) = self.prefix(input, user);
                if to != b" " {
                    break;
                }
                input = &input[len..];
            }
        }
        if input.is_empty() {
            return out;
        }
        let space: &[u8] = if self.escape_whitespaces {
            SPACE.as_bytes()
        } else {
            b" "
        };
        if !self.treat_whitespace_as_suffix && self.add_dummy_prefix {
            out.extend_from_slice(space);
        }
        let mut prev_space = self.remove_extra_whitespaces;
        while !input.is_empty() {
            let (mut to, len) = self.prefix(input, user);
            while prev_space && to.first() == Some(&b' ') {
                to = &to[1..];
            }
            if !to.is_empty() {
                for &b in to {
                    match b {
                        b' ' => out.extend_from_slice(space),
                        b => out.push(b),
                    }
                }
                prev_space = to.ends_with(b" ");
            }
            input = &input[len..];
            if !self.remove_extra_whitespaces {
                prev_space = false;
            }
        }
        if self.remove_extra_whitespaces {
            while out.ends_with(space) {
                out.truncate(out.len() - space.len());
            }
        }
        if self.treat_whitespace_as_suffix && self.add_dummy_prefix {
            out.extend_from_slice(space);
        }
        out
    }
}
