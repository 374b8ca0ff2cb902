//! SentencePiece's unigram encoding of normalized text, as its `unigram_model.cc`
//! (`EncodeOptimized`) does it: the best-scoring segmentation by Viterbi over every
//! piece that starts at each character (user-defined pieces score
//! `length * max_score - 0.1`, UNUSED pieces are skipped), a character no piece
//! covers costs `min_score - 10` as the unknown piece, and consecutive unknown
//! pieces join into one.

use super::Model;
use super::bpe::one_char_len;

/// The best path's last piece ending at one position.
#[derive(Debug, Clone, Copy)]
struct Best {
    score: f32,
    /// Where the piece starts; `None`: no path ends here yet.
    start: Option<usize>,
    unknown: bool,
}

/// The pieces (as byte ranges of `text`) and whether each is unknown.
pub(super) fn encode<'t>(model: &Model, text: &'t [u8]) -> Vec<(&'t [u8], bool)> {
    let (min, max) = model.score_range();
    let unknown_score = min - 10.0;
    let mut best = vec![
        Best {
            score: 0.0,
            start: None,
            unknown: false,
        };
        text.len() + 1
    ];
    let mut start = 0;
    while start < text.len() {
        let here = f64::from(best[start].score);
        let char_len = one_char_len(text[start]).min(text.len() - start);
        let mut single = false;
        let longest = model.longest_piece().min(text.len() - start);
        for len in 1..=longest {
            let Some(id) = model.piece(&text[start..start + len]) else {
                continue;
            };
            if model.is_unused(id) {
                continue;
            }
            let score = match model.is_user_defined(id) {
                true => f64::from(len as f32 * max) - 0.1,
                false => f64::from(model.score(id)),
            };
            update(&mut best[start + len], start, score + here, false);
            single |= len == char_len;
        }
        if !single {
            // The C++ adds the unknown score in single precision.
            let candidate = f64::from(unknown_score + best[start].score);
            update(&mut best[start + char_len], start, candidate, true);
        }
        start += char_len;
    }
    let mut pieces: Vec<(usize, usize, bool)> = Vec::new();
    let mut end = text.len();
    while end > 0 {
        let node = best[end];
        // Every position a character ends at was reached (the unknown piece at least).
        let from = node.start.unwrap_or(0);
        match pieces.last_mut() {
            Some(last) if node.unknown && last.2 => last.0 = from,
            _ => pieces.push((from, end, node.unknown)),
        }
        end = from;
    }
    pieces.reverse();
    pieces
        .into_iter()
        .map(|(s, e, unknown)| (&text[s..e], unknown))
        .collect()
}

/// Makes `candidate` the best path ending at `node` if none is yet or it scores higher.
fn update(node: &mut Best, start: usize, candidate: f64, unknown: bool) {
    if node.start.is_none() || candidate > f64::from(node.score) {
        *node = Best {
            score: candidate as f32,
            start: Some(start),
            unknown,
        };
    }
}
