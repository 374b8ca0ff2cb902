//! Unit tests of the SentencePiece reader on hand-written models: the protobuf reader's
//! errors, normalization, merging by score, user-defined symbols, UNUSED pieces,
//! byte fallback and unigram's best path (the exact-match test against the `sentencepiece` library on trained
//! models is the node suite's `tokens-sentencepiece.test.mjs`).

use super::proto::ProtoError;
use super::*;

fn varint(mut v: u64, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn bytes_field(field: u32, data: &[u8], out: &mut Vec<u8>) {
    varint(u64::from(field) << 3 | 2, out);
    varint(data.len() as u64, out);
    out.extend_from_slice(data);
}

fn varint_field(field: u32, v: u64, out: &mut Vec<u8>) {
    varint(u64::from(field) << 3, out);
    varint(v, out);
}

/// Piece types as the proto numbers them.
const NORMAL: u64 = 1;
const UNKNOWN: u64 = 2;
const USER: u64 = 4;
const UNUSED: u64 = 5;
const BYTE: u64 = 6;

/// A model file: `pieces` (text, score, type), then the 256 byte pieces when
/// `byte_fallback`, a trainer spec of `model_type` and an identity normalizer with
/// the dummy prefix and extra-whitespace removal on.
fn model_file(pieces: &[(&str, f32, u64)], model_type: u64, byte_fallback: bool) -> Vec<u8> {
    let mut all: Vec<(String, f32, u64)> = pieces.iter().map(|(t, s, k)| (t.to_string(), *s, *k)).collect();
    if byte_fallback {
        all.extend((0..=255u8).map(|b| (format!("<0x{b:02X}>"), 0.0, BYTE)));
    }
    let mut out = Vec::new();
    for (text, score, kind) in all {
        let mut p = Vec::new();
        bytes_field(1, text.as_bytes(), &mut p);
        varint(2 << 3 | 5, &mut p);
        p.extend_from_slice(&score.to_le_bytes());
        varint_field(3, kind, &mut p);
        bytes_field(1, &p, &mut out);
    }
    let mut trainer = Vec::new();
    varint_field(3, model_type, &mut trainer);
    varint_field(35, u64::from(byte_fallback), &mut trainer);
    bytes_field(2, &trainer, &mut out);
    let mut normalizer = Vec::new();
    bytes_field(1, b"identity", &mut normalizer);
    bytes_field(3, &normalizer, &mut out);
    out
}

fn ids(model: &Model, text: &str) -> Vec<Rank> {
    let mut out = Vec::new();
    model.encode(text, &mut out);
    out
}

/// ids: <unk> 0, ▁ 1, a 2, b 3, ab 4, ▁ab 5, <x> 6 (user-defined), c 7, bc 8 (UNUSED),
/// then the bytes from 9 on.
fn small_model() -> Model {
    let pieces = [
        ("<unk>", 0.0, UNKNOWN),
        ("\u{2581}", -1.0, NORMAL),
        ("a", -2.0, NORMAL),
        ("b", -3.0, NORMAL),
        ("ab", -0.5, NORMAL),
        ("\u{2581}ab", -0.6, NORMAL),
        ("<x>", 0.0, USER),
        ("c", -4.0, NORMAL),
        ("bc", -0.1, UNUSED),
    ];
    Model::parse(&model_file(&pieces, 2, true)).unwrap()
}

#[test]
fn normalizes_merges_by_score_and_falls_back_to_bytes() {
    let m = small_model();
    let byte = |b: u8| 9 + Rank::from(b);
    // Leading, repeated and trailing spaces go; the dummy prefix "▁" joins "ab".
    assert_eq!(ids(&m, "  ab   ab "), vec![5, 5]);
    // "bc" outscores "ab" but is UNUSED: it merges, then splits back into b, c.
    assert_eq!(ids(&m, "abc"), vec![1, 2, 3, 7]);
    // A user-defined symbol is one frozen piece; "é" has no piece: its two bytes.
    assert_eq!(ids(&m, "a<x>b é"), vec![1, 2, 6, 3, 1, byte(0xc3), byte(0xa9)]);
    assert_eq!(ids(&m, "   "), Vec::<Rank>::new());
}

#[test]
fn without_byte_fallback_unknown_text_is_the_unknown_id() {
    let m = Model::parse(&model_file(
        &[("<unk>", 0.0, UNKNOWN), ("a", -1.0, NORMAL)],
        2,
        false,
    ))
    .unwrap();
    // "▁" has no piece either.
    assert_eq!(ids(&m, "a é"), vec![0, 1, 0, 0]);
}

#[test]
fn unigram_takes_the_best_path_and_joins_unknown_runs() {
    // ids: <unk> 0, ▁ 1, a 2, b 3, ab 4, ▁a 5, <x> 6 (user-defined).
    let pieces = [
        ("<unk>", 0.0, UNKNOWN),
        ("\u{2581}", -1.0, NORMAL),
        ("a", -2.0, NORMAL),
        ("b", -2.0, NORMAL),
        ("ab", -3.0, NORMAL),
        ("\u{2581}a", -1.5, NORMAL),
        ("<x>", 0.0, USER),
    ];
    let m = Model::parse(&model_file(&pieces, 1, false)).unwrap();
    // ▁a + b (-3.5) beats ▁ + ab (-4) and ▁ + a + b (-5).
    assert_eq!(ids(&m, "ab"), vec![5, 3]);
    // Two characters no piece covers are one unknown piece; a user symbol is whole.
    assert_eq!(ids(&m, "a éé<x>"), vec![5, 1, 0, 6]);
}

#[test]
fn bad_models_say_what_is_wrong() {
    let e = Model::parse(&model_file(&[("<unk>", 0.0, UNKNOWN)], 3, false)).unwrap_err();
    assert!(e.to_string().contains("model_type is 3 (word)"), "{e}");
    let e = Model::parse(&model_file(&[("a", 0.0, NORMAL)], 2, false)).unwrap_err();
    assert!(matches!(e, ModelError::Unknown), "{e}");
    let e = Model::parse(&model_file(
        &[("<unk>", 0.0, UNKNOWN), ("a", 0.0, NORMAL), ("a", 0.0, NORMAL)],
        2,
        false,
    ))
    .unwrap_err();
    assert_eq!(e.to_string(), "piece 2 says the same text as an earlier piece");
    let e = Model::parse(&model_file(
        &[("<unk>", 0.0, UNKNOWN), ("<0x00>", 0.0, BYTE)],
        2,
        false,
    ))
    .unwrap_err();
    assert!(matches!(e, ModelError::Bytes), "{e}");
    // Protobuf errors name the byte.
    let mut data = model_file(&[("<unk>", 0.0, UNKNOWN)], 2, false);
    data.truncate(data.len() - 3);
    let e = Model::parse(&data).unwrap_err();
    assert!(
        matches!(e, ModelError::Proto(ProtoError::Truncated { .. })),
        "{e}"
    );
    let e = Model::parse(&[0x0f]).unwrap_err();
    assert!(
        matches!(
            e,
            ModelError::Proto(ProtoError::WireType {
                field: 1,
                wire: 7,
                at: 0
            })
        ),
        "{e}"
    );
    assert!(std::error::Error::source(&e).is_some());
}
