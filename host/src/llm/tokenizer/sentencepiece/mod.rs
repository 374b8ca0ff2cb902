//! SentencePiece models (`tokenizer.model`, as Gemini's Gemma family and many others
//! ship them): reading the `ModelProto` ([`proto`]), normalizing text ([`normalize`]),
//! BPE ([`bpe`]) or unigram ([`unigram`]) encoding and byte fallback, each exactly as
//! the `sentencepiece` library's `encode` does. Word and char models are refused with
//! an error naming the model type.

mod bpe;
mod normalize;
mod proto;
mod unigram;

pub(crate) use normalize::CharsmapError;
pub(crate) use proto::ProtoError;

use super::Rank;
use normalize::Normalizer;
use proto::{ModelProto, PieceType};
use std::collections::{HashMap, HashSet};
use std::fmt;

/// What is wrong with a SentencePiece model file (the caller adds the file name).
#[derive(Debug)]
pub(crate) enum ModelError {
    /// Not a protobuf `ModelProto`.
    Proto(ProtoError),
    /// The normalizer's character map cannot be read.
    Charsmap(CharsmapError),
    /// The model is neither BPE nor unigram (`trainer_spec.model_type`).
    ModelType { found: i32 },
    /// Piece `index` is empty or says the same text as an earlier piece of its kind.
    Piece { index: usize, problem: &'static str },
    /// No piece (or more than one) has type UNKNOWN.
    Unknown,
    /// `byte_fallback` is on, but not all 256 `<0xXX>` pieces exist (or it is off and
    /// one does).
    Bytes,
}

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Proto(e) => write!(f, "not a SentencePiece model: {e}"),
            Self::Charsmap(e) => e.fmt(f),
            Self::ModelType { found } => {
                let name = match found {
                    1 => "unigram",
                    3 => "word",
                    4 => "char",
                    _ => "unknown",
                };
                write!(
                    f,
                    "trainer_spec.model_type is {found} ({name}); the hub encodes SentencePiece unigram (1) and BPE (2, Gemma's) models"
                )
            }
            Self::Piece { index, problem } => write!(f, "piece {index} {problem}"),
            Self::Unknown => f.write_str("the model needs exactly one piece of type UNKNOWN"),
            Self::Bytes => f.write_str(
                "trainer_spec.byte_fallback needs the 256 byte pieces <0x00>..<0xFF>, and byte pieces need byte_fallback",
            ),
        }
    }
}

impl std::error::Error for ModelError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Proto(e) => Some(e),
            Self::Charsmap(e) => Some(e),
            _ => None,
        }
    }
}

/// The user-defined symbols: matched whole (longest first) and never merged.
#[derive(Debug, Default)]
pub(super) struct Symbols {
    set: HashSet<Vec<u8>>,
    /// The distinct lengths of the symbols, longest first.
    lengths: Vec<usize>,
}

impl Symbols {
    /// The length of the longest symbol `text` starts with.
    pub(super) fn longest(&self, text: &[u8]) -> Option<usize> {
        self.lengths
            .iter()
            .copied()
            .find(|&len| len <= text.len() && self.set.contains(&text[..len]))
    }
}

/// A loaded SentencePiece model.
#[derive(Debug)]
pub(super) struct Model {
    /// BPE (else unigram).
    bpe: bool,
    /// The lowest and highest score of a NORMAL piece (unigram's unknown and
    /// user-defined scores derive from them).
    score_range: (f32, f32),
    /// The longest piece, in bytes.
    longest: usize,
    /// NORMAL, USER_DEFINED and UNUSED pieces: what merges may form.
    pieces: HashMap<Vec<u8>, Rank>,
    /// The other pieces (UNKNOWN, CONTROL, BYTE), looked up first by text.
    reserved: HashMap<Vec<u8>, Rank>,
    scores: Vec<f32>,
    kinds: Vec<PieceType>,
    unknown: Rank,
    /// The ids of `<0x00>`..`<0xFF>` when `byte_fallback` is on.
    bytes: Option<Vec<Rank>>,
    user: Symbols,
    normalizer: Normalizer,
}

impl Model {
    /// Reads a `tokenizer.model` file's bytes.
    pub(super) fn parse(data: &[u8]) -> Result<Self, ModelError> {
        let proto = ModelProto::parse(data).map_err(ModelError::Proto)?;
        if ![proto::MODEL_TYPE_UNIGRAM, proto::MODEL_TYPE_BPE].contains(&proto.model_type) {
            return Err(ModelError::ModelType {
                found: proto.model_type,
            });
        }
        // As unigram_model.cc starts them: FLT_MAX and FLT_MIN (the smallest positive).
        let normal = proto.pieces.iter().filter(|p| p.kind == PieceType::Normal);
        let score_range = normal.fold((f32::MAX, f32::MIN_POSITIVE), |(lo, hi), p| {
            (lo.min(p.score), hi.max(p.score))
        });
        let normalizer = Normalizer::new(&proto.normalizer, proto.treat_whitespace_as_suffix)
            .map_err(ModelError::Charsmap)?;
        let mut model = Self {
            bpe: proto.model_type == proto::MODEL_TYPE_BPE,
            score_range,
            longest: proto.pieces.iter().map(|p| p.text.len()).max().unwrap_or(0),
            pieces: HashMap::new(),
            reserved: HashMap::new(),
            scores: proto.pieces.iter().map(|p| p.score).collect(),
            kinds: proto.pieces.iter().map(|p| p.kind).collect(),
            unknown: 0,
            bytes: None,
            user: Symbols::default(),
            normalizer,
        };
        let mut unknown = None;
        let mut bytes = vec![None; 256];
        for (index, piece) in proto.pieces.into_iter().enumerate() {
            let problem = |problem| ModelError::Piece { index, problem };
            let id = Rank::try_from(index).map_err(|_| problem("is past the largest id"))?;
            if piece.text.is_empty() || piece.text.contains('\0') {
                return Err(problem("is empty or holds a NUL character"));
            }
            let text = piece.text.into_bytes();
            match piece.kind {
                PieceType::UserDefined => {
                    model.user.set.insert(text.clone());
                }
                PieceType::Unknown if unknown.replace(id).is_some() => return Err(ModelError::Unknown),
                PieceType::Byte => match (proto.byte_fallback, byte_of(&text)) {
                    (true, Some(b)) => bytes[usize::from(b)] = Some(id),
                    _ => return Err(ModelError::Bytes),
                },
                _ => {}
            }
            let normal = matches!(
                piece.kind,
                PieceType::Normal | PieceType::UserDefined | PieceType::Unused
            );
            let map = if normal {
                &mut model.pieces
            } else {
                &mut model.reserved
            };
            if map.insert(text, id).is_some() {
                return Err(problem("says the same text as an earlier piece"));
            }
        }
        model.unknown = unknown.ok_or(ModelError::Unknown)?;
        if proto.byte_fallback {
            model.bytes = Some(
                bytes
                    .into_iter()
                    .collect::<Option<Vec<_>>>()
                    .ok_or(ModelError::Bytes)?,
            );
        }
        let mut lengths: Vec<usize> = model.user.set.iter().map(Vec::len).collect();
        lengths.sort_unstable_by(|a, b| b.cmp(a));
        lengths.dedup();
        model.user.lengths = lengths;
        Ok(model)
    }

    /// The id of a piece merges may form.
    fn piece(&self, text: &[u8]) -> Option<Rank> {
        self.pieces.get(text).copied()
    }

    /// The id of any piece (reserved ones first), as `PieceToId` finds it.
    fn id(&self, text: &[u8]) -> Option<Rank> {
        self.reserved.get(text).or_else(|| self.pieces.get(text)).copied()
    }

    fn score(&self, id: Rank) -> f32 {
        self.scores[id as usize]
    }

    fn is_unused(&self, id: Rank) -> bool {
        self.kinds[id as usize] == PieceType::Unused
    }

    fn is_user_defined(&self, id: Rank) -> bool {
        self.kinds[id as usize] == PieceType::UserDefined
    }

    fn score_range(&self) -> (f32, f32) {
        self.score_range
    }

    fn longest_piece(&self) -> usize {
        self.longest
    }

    /// Appends the ids of `text` to `out`: normalized, merged, and each piece with no id
    /// of its own spelled as its UTF-8 bytes (byte fallback), else the UNKNOWN id.
    pub(super) fn encode(&self, text: &str, out: &mut Vec<Rank>) {
        let normalized = self.normalizer.normalize(text, &self.user);
        if self.bpe {
            for piece in bpe::encode(self, &normalized) {
                self.push(piece, self.id(piece).filter(|&id| id != self.unknown), out);
            }
        } else {
            for (piece, unknown) in unigram::encode(self, &normalized) {
                self.push(piece, self.piece(piece).filter(|_| !unknown), out);
            }
        }
    }

    /// Appends `piece`'s id, or (none: unknown) its bytes' pieces with byte fallback,
    /// else the UNKNOWN id.
    fn push(&self, piece: &[u8], id: Option<Rank>, out: &mut Vec<Rank>) {
        match (id, &self.bytes) {
            (Some(id), _) => out.push(id),
            (None, Some(bytes)) => out.extend(piece.iter().map(|&b| bytes[usize::from(b)])),
            (None, None) => out.push(self.unknown),
        }
    }
}

/// The byte a `<0xXX>` piece stands for.
fn byte_of(text: &[u8]) -> Option<u8> {
    let hex = text.strip_prefix(b"<0x")?.strip_suffix(b">")?;
    let hex = std::str::from_utf8(hex).ok().filter(|h| {
        h.len() == 2
            && h.chars()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_lowercase())
    })?;
    u8::from_str_radix(hex, 16).ok()
}

#[cfg(test)]
mod tests;
