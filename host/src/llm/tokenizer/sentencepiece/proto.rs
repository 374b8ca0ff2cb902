//! A small protobuf reader for SentencePiece's `ModelProto` (`sentencepiece_model.proto`):
//! the wire format (varints, fixed 32/64-bit, length-delimited fields) and the fields
//! encoding needs: the pieces (text, score, type), the trainer spec's model type,
//! `byte_fallback` and `treat_whitespace_as_suffix`, and the normalizer spec (name,
//! precompiled character map, `add_dummy_prefix`, `remove_extra_whitespaces`,
//! `escape_whitespaces`). Training-only options (`split_digits`, `split_by_*`...) shape
//! the vocabulary, not how a trained model encodes, so they are skipped like unknown
//! fields.

use std::fmt;

/// Where and why the bytes are not a protobuf message.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum ProtoError {
    /// The data ends inside a field at byte `at`.
    Truncated { at: usize },
    /// Wire type `wire` (field `field`, at byte `at`) is not one the format has.
    WireType { field: u32, wire: u8, at: usize },
    /// A varint longer than ten bytes at byte `at`.
    Varint { at: usize },
    /// Field `field` holds text that is not UTF-8.
    NotText { field: &'static str },
}

impl fmt::Display for ProtoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Truncated { at } => write!(f, "the data ends inside a field (byte {at})"),
            Self::WireType { field, wire, at } => {
                write!(
                    f,
                    "field {field} at byte {at} has wire type {wire}, which protobuf does not have"
                )
            }
            Self::Varint { at } => write!(f, "the varint at byte {at} is longer than 10 bytes"),
            Self::NotText { field } => write!(f, "{field} is not UTF-8 text"),
        }
    }
}

impl std::error::Error for ProtoError {}

/// One field's value as the wire carries it.
#[derive(Debug, Clone, Copy)]
pub(super) enum Value<'a> {
    Varint(u64),
    Fixed64,
    Bytes(&'a [u8]),
    Fixed32(u32),
}

impl Value<'_> {
    fn as_bool(self) -> Option<bool> {
        match self {
            Self::Varint(v) => Some(v != 0),
            _ => None,
        }
    }

    fn as_i32(self) -> Option<i32> {
        match self {
            // Enums and int32 are varints; negative ones are sign-extended to 64 bits.
            Self::Varint(v) => Some(v as i64 as i32),
            _ => None,
        }
    }
}

/// The fields of one message, in order. `base` is the message's offset in the file,
/// so errors name a byte of the file.
pub(super) struct Fields<'a> {
    buf: &'a [u8],
    at: usize,
    base: usize,
}

impl<'a> Fields<'a> {
    pub(super) fn new(buf: &'a [u8], base: usize) -> Self {
        Self { buf, at: 0, base }
    }

    fn varint(&mut self) -> Result<u64, ProtoError> {
        let start = self.base + self.at;
        let mut value = 0u64;
        for shift in (0..70).step_by(7) {
            let Some(&byte) = self.buf.get(self.at) else {
                return Err(ProtoError::Truncated { at: start });
            };
            self.at += 1;
            value |= u64::from(byte & 0x7f).checked_shl(shift).unwrap_or(0);
            if byte < 0x80 {
                return Ok(value);
            }
        }
        Err(ProtoError::Varint { at: start })
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], ProtoError> {
        let start = self.base + self.at;
        let end = self.at.checked_add(n).filter(|&e| e <= self.buf.len());
        let end = end.ok_or(ProtoError::Truncated { at: start })?;
        let bytes = &self.buf[self.at..end];
        self.at = end;
        Ok(bytes)
    }

    /// The next field: its number, its value and the file offset of the value.
    pub(super) fn next_field(&mut self) -> Result<Option<(u32, Value<'a>, usize)>, ProtoError> {
        if self.at >= self.buf.len() {
            return Ok(None);
        }
        let key_at = self.base + self.at;
        let key = self.varint()?;
        let field = (key >> 3) as u32;
        let wire = (key & 7) as u8;
        let value_at = self.base + self.at;
        let value = match wire {
            0 => Value::Varint(self.varint()?),
            1 => {
                self.take(8)?;
                Value::Fixed64
            }
            2 => {
                let len =
                    usize::try_from(self.varint()?).map_err(|_| ProtoError::Truncated { at: value_at })?;
                let value_at = self.base + self.at;
                return Ok(Some((field, Value::Bytes(self.take(len)?), value_at)));
            }
            5 => Value::Fixed32(u32::from_le_bytes(self.take(4)?.try_into().expect("4 bytes"))),
            _ => {
                return Err(ProtoError::WireType {
                    field,
                    wire,
                    at: key_at,
                });
            }
        };
        Ok(Some((field, value, value_at)))
    }
}

/// `ModelProto.SentencePiece.Type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum PieceType {
    Normal,
    Unknown,
    Control,
    UserDefined,
    Unused,
    Byte,
}

impl PieceType {
    fn from_i32(v: i32) -> Self {
        match v {
            2 => Self::Unknown,
            3 => Self::Control,
            4 => Self::UserDefined,
            5 => Self::Unused,
            6 => Self::Byte,
            // 1 is NORMAL, and the format's default for values it does not know.
            _ => Self::Normal,
        }
    }
}

/// `ModelProto.SentencePiece`.
#[derive(Debug)]
pub(super) struct Piece {
    pub(super) text: String,
    pub(super) score: f32,
    pub(super) kind: PieceType,
}

/// `TrainerSpec.ModelType`: 1 unigram (the format's default), 2 BPE, 3 word, 4 char.
pub(super) const MODEL_TYPE_UNIGRAM: i32 = 1;
pub(super) const MODEL_TYPE_BPE: i32 = 2;

/// The parts of `ModelProto` encoding reads.
#[derive(Debug)]
pub(super) struct ModelProto {
    pub(super) pieces: Vec<Piece>,
    pub(super) model_type: i32,
    pub(super) byte_fallback: bool,
    pub(super) treat_whitespace_as_suffix: bool,
    pub(super) normalizer: NormalizerSpec,
}

/// `NormalizerSpec`, with the format's defaults.
#[derive(Debug)]
pub(super) struct NormalizerSpec {
    pub(super) name: String,
    pub(super) precompiled_charsmap: Vec<u8>,
    pub(super) add_dummy_prefix: bool,
    pub(super) remove_extra_whitespaces: bool,
    pub(super) escape_whitespaces: bool,
}

fn text(bytes: &[u8], field: &'static str) -> Result<String, ProtoError> {
    String::from_utf8(bytes.to_vec()).map_err(|_| ProtoError::NotText { field })
}

impl ModelProto {
    /// Reads a `tokenizer.model` file's bytes.
    pub(super) fn parse(data: &[u8]) -> Result<Self, ProtoError> {
        let mut model = Self {
            pieces: Vec::new(),
            model_type: 1,
            byte_fallback: false,
            treat_whitespace_as_suffix: false,
            normalizer: NormalizerSpec {
                name: String::new(),
                precompiled_charsmap: Vec::new(),
                add_dummy_prefix: true,
                remove_extra_whitespaces: true,
                escape_whitespaces: true,
            },
        };
        let mut fields = Fields::new(data, 0);
        while let Some((field, value, at)) = fields.next_field()? {
            match (field, value) {
                (1, Value::Bytes(b)) => model.pieces.push(Self::piece(b, at)?),
                (2, Value::Bytes(b)) => model.trainer(b, at)?,
                (3, Value::Bytes(b)) => model.normalizer(b, at)?,
                _ => {}
            }
        }
        Ok(model)
    }

    fn piece(data: &[u8], base: usize) -> Result<Piece, ProtoError> {
        let mut piece = Piece {
            text: String::new(),
            score: 0.0,
            kind: PieceType::Normal,
        };
        let mut fields = Fields::new(data, base);
        while let Some((field, value, _)) = fields.next_field()? {
            match (field, value) {
                (1, Value::Bytes(b)) => piece.text = text(b, "a piece")?,
                (2, Value::Fixed32(bits)) => piece.score = f32::from_bits(bits),
                (3, v) => piece.kind = PieceType::from_i32(v.as_i32().unwrap_or(1)),
                _ => {}
            }
        }
        Ok(piece)
    }

    fn trainer(&mut self, data: &[u8], base: usize) -> Result<(), ProtoError> {
        let mut fields = Fields::new(data, base);
        while let Some((field, value, _)) = fields.next_field()? {
            match field {
                3 => self.model_type = value.as_i32().unwrap_or(self.model_type),
                24 => self.treat_whitespace_as_suffix = value.as_bool().unwrap_or(false),
                35 => self.byte_fallback = value.as_bool().unwrap_or(false),
                _ => {}
            }
        }
        Ok(())
    }

    fn normalizer(&mut self, data: &[u8], base: usize) -> Result<(), ProtoError> {
        let spec = &mut self.normalizer;
        let mut fields = Fields::new(data, base);
        while let Some((field, value, _)) = fields.next_field()? {
            match (field, value) {
                (1, Value::Bytes(b)) => spec.name = text(b, "normalizer_spec.name")?,
                (2, Value::Bytes(b)) => spec.precompiled_charsmap = b.to_vec(),
                (3, v) => spec.add_dummy_prefix = v.as_bool().unwrap_or(true),
                (4, v) => spec.remove_extra_whitespaces = v.as_bool().unwrap_or(true),
                (5, v) => spec.escape_whitespaces = v.as_bool().unwrap_or(true),
                _ => {}
            }
        }
        Ok(())
    }
}
