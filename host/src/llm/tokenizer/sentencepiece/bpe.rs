//! SentencePiece's BPE encoding of normalized text, as its `bpe_model.cc` does it:
//! the text starts as single characters (a user-defined symbol is one frozen symbol),
//! then the adjacent pair whose joined text is a piece with the highest score merges,
//! the leftmost among equals, until no pair is a piece. A merged piece of type UNUSED
//! is split back into the two parts it was merged from.

use super::Model;
use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, HashMap};

/// A candidate merge, ordered as the heap pops it: the highest score, then the
/// leftmost; it also holds its right symbol and joined length.
type Pair = (Score, Reverse<usize>, usize, usize);

/// A score ordered as a total order (scores are finite in real models).
#[derive(Debug, PartialEq)]
struct Score(f32);

impl Eq for Score {}

impl PartialOrd for Score {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Score {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// One symbol: where its text starts and ends in the normalized text, its neighbours
/// and whether it may merge.
#[derive(Debug, Clone, Copy)]
struct Symbol {
    start: usize,
    end: usize,
    prev: Option<usize>,
    next: Option<usize>,
    frozen: bool,
}

/// The pieces (as byte ranges of `text`) BPE splits `text` into.
pub(super) fn encode<'t>(model: &Model, text: &'t [u8]) -> Vec<&'t [u8]> {
    let mut symbols = Vec::with_capacity(text.len());
    let mut at = 0;
    while at < text.len() {
        let (len, frozen) = match model.user.longest(&text[at..]) {
            Some(len) => (len, true),
            None => (one_char_len(text[at]).min(text.len() - at), false),
        };
        let index = symbols.len();
        symbols.push(Symbol {
            start: at,
            end: at + len,
            prev: index.checked_sub(1),
            next: (at + len < text.len()).then_some(index + 1),
            frozen,
        });
        at += len;
    }
    let mut heap = BinaryHeap::new();
    let mut split_back: HashMap<&[u8], (&[u8], &[u8])> = HashMap::new();
    let mut add =
        |heap: &mut BinaryHeap<Pair>, symbols: &[Symbol], left: Option<usize>, right: Option<usize>| {
            let (Some(left), Some(right)) = (left, right) else {
                return;
            };
            let (l, r) = (symbols[left], symbols[right]);
            if l.frozen || r.frozen {
                return;
            }
            let joined = &text[l.start..r.end];
            let Some(id) = model.piece(joined) else {
                return;
            };
            heap.push((Score(model.score(id)), Reverse(left), right, joined.len()));
            if model.is_unused(id) {
                split_back.insert(joined, (&text[l.start..l.end], &text[r.start..r.end]));
            }
        };
    for i in 1..symbols.len() {
        add(&mut heap, &symbols, Some(i - 1), Some(i));
    }
    while let Some((_, Reverse(left), right, len)) = heap.pop() {
        let (l, r) = (symbols[left], symbols[right]);
        let empty = |s: Symbol| s.start == s.end;
        if empty(l) || empty(r) || (l.end - l.start) + (r.end - r.start) != len {
            continue;
        }
        symbols[left].end = r.end;
        symbols[left].next = r.next;
        if let Some(next) = r.next {
            symbols[next].prev = Some(left);
        }
        symbols[right].end = symbols[right].start;
        let prev = symbols[left].prev;
        add(&mut heap, &symbols, prev, Some(left));
        let next = symbols[left].next;
        add(&mut heap, &symbols, Some(left), next);
    }
    let mut out = Vec::with_capacity(symbols.len());
    let mut index = (!symbols.is_empty()).then_some(0);
    while let Some(i) = index {
        resegment(
            model,
            &split_back,
            &text[symbols[i].start..symbols[i].end],
            &mut out,
        );
        index = symbols[i].next;
    }
    out
}

/// Splits a merged UNUSED piece back into the parts it was merged from.
fn resegment<'t>(
    model: &Model,
    split_back: &HashMap<&[u8], (&'t [u8], &'t [u8])>,
    piece: &'t [u8],
    out: &mut Vec<&'t [u8]>,
) {
    let unused = model.id(piece).is_some_and(|id| model.is_unused(id));
    match split_back.get(piece).filter(|_| unused) {
        Some((left, right)) => {
            resegment(model, split_back, left, out);
            resegment(model, split_back, right, out);
        }
        None => out.push(piece),
    }
}

/// The length of the UTF-8 character starting with `lead` (1 for a stray byte), as
/// SentencePiece's `OneCharLen` reads it.
pub(super) fn one_char_len(lead: u8) -> usize {
    [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4][usize::from(lead >> 4)]
}
