//! Byte-level BPE over a `.tiktoken` ranks file: parsing the file (one base64 token and
//! its rank per line) and encoding one pre-split piece into token ids by repeatedly
//! merging the adjacent pair whose joined bytes have the lowest rank (leftmost first).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::fmt;

/// A token id: its rank in the ranks file.
pub(crate) type Rank = u32;

/// The mergeable byte sequences of an encoding and their ranks.
#[derive(Debug)]
pub(crate) struct Ranks {
    map: HashMap<Vec<u8>, Rank>,
}

/// What is wrong with a ranks file (the caller adds the file name).
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum RanksError {
    /// Line `line` is not `BASE64 RANK`.
    Line { line: usize },
    /// Line `line` repeats a token an earlier line already ranked.
    Duplicate { line: usize },
    /// No line ranks the single byte `byte`, so some texts could not be encoded.
    MissingByte { byte: u8 },
}

impl fmt::Display for RanksError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Line { line } => write!(f, "line {line} is not `BASE64 RANK`"),
            Self::Duplicate { line } => write!(f, "line {line} ranks a token an earlier line already ranked"),
            Self::MissingByte { byte } => {
                write!(
                    f,
                    "no line ranks the single byte 0x{byte:02x}, so not every text can be encoded"
                )
            }
        }
    }
}

impl std::error::Error for RanksError {}

impl Ranks {
    /// Parses a `.tiktoken` file's text. Every one of the 256 single bytes must have a
    /// rank, so that encoding never meets a byte it cannot name.
    pub(crate) fn parse(text: &str) -> Result<Self, RanksError> {
        let mut map = HashMap::new();
        for (index, line) in text.lines().enumerate() {
            let line_no = index + 1;
            if line.trim().is_empty() {
                continue;
            }
            let mut fields = line.split_ascii_whitespace();
            let (Some(token), Some(rank), None) = (fields.next(), fields.next(), fields.next()) else {
                return Err(RanksError::Line { line: line_no });
            };
            let token = crate::base64::decode(token).filter(|t| !t.is_empty());
            let (Some(token), Ok(rank)) = (token, rank.parse::<Rank>()) else {
                return Err(RanksError::Line { line: line_no });
            };
            if map.insert(token, rank).is_some() {
                return Err(RanksError::Duplicate { line: line_no });
            }
        }
        if let Some(byte) = (0..=255u8).find(|b| !map.contains_key(std::slice::from_ref(b))) {
            return Err(RanksError::MissingByte { byte });
        }
        Ok(Self { map })
    }

    fn rank(&self, bytes: &[u8]) -> Option<Rank> {
        self.map.get(bytes).copied()
    }

    /// Appends the ids of one pre-split piece to `out`.
    pub(crate) fn encode_piece(&self, piece: &[u8], out: &mut Vec<Rank>) {
        if let Some(rank) = self.rank(piece) {
            out.push(rank);
            return;
        }
        let starts = self.merge(piece);
        for pair in starts.windows(2) {
            // Every merged part was ranked (single bytes are checked at parse time).
            out.extend(self.rank(&piece[pair[0]..pair[1]]));
        }
    }

    /// The start offsets of the parts `piece` merges into, plus `piece.len()`.
    ///
    /// Each round merges the lowest-ranked adjacent pair, the leftmost among equals.
    /// Pairs wait in a heap ordered by (rank, start), so a long piece costs
    /// O(n log n), not O(n²); an entry whose parts changed since it was pushed is
    /// skipped when it comes up. `next[i]` is the start of the part after the one
    /// starting at `i` (`n`: none), `prev[i]` the one before.
    fn merge(&self, piece: &[u8]) -> Vec<usize> {
        let n = piece.len();
        let mut next: Vec<usize> = (1..=n).collect();
        let mut prev: Vec<Option<usize>> = (0..n).map(|i| i.checked_sub(1)).collect();
        let mut alive = vec![true; n];
        let mut heap = BinaryHeap::new();
        let push = |heap: &mut BinaryHeap<Reverse<(Rank, usize, usize)>>, next: &[usize], i: usize| {
            let j = next[i];
            if j < n {
                let end = next[j];
                if let Some(rank) = self.rank(&piece[i..end]) {
                    heap.push(Reverse((rank, i, end)));
                }
            }
        };
        for i in 0..n {
            push(&mut heap, &next, i);
        }
        while let Some(Reverse((_, i, end))) = heap.pop() {
            let j = next[i];
            if !alive[i] || j >= n || next[j] != end {
                continue;
            }
            alive[j] = false;
            next[i] = end;
            if end < n {
                prev[end] = Some(i);
            }
            push(&mut heap, &next, i);
            if let Some(p) = prev[i] {
                push(&mut heap, &next, p);
            }
        }
        let mut starts = Vec::new();
        let mut i = 0;
        while i < n {
            starts.push(i);
            i = next[i];
        }
        starts.push(n);
        starts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ranks(extra: &[(&[u8], Rank)]) -> Ranks {
        Ranks::parse(&super::super::test_ranks(extra)).unwrap()
    }

    #[test]
    fn merges_lowest_rank_first() {
        // "ab" (300) beats "bc" (301); then "abc" (302) is one token.
        let r = ranks(&[(b"ab", 300), (b"bc", 301), (b"abc", 302)]);
        let mut out = Vec::new();
        r.encode_piece(b"abcd", &mut out);
        assert_eq!(out, vec![302, u32::from(b'd')]);
        // With "bc" ranked first, "ab" can no longer form: a + bc.
        let r = ranks(&[(b"bc", 300), (b"ab", 301)]);
        let mut out = Vec::new();
        r.encode_piece(b"abc", &mut out);
        assert_eq!(out, vec![u32::from(b'a'), 300]);
    }

    #[test]
    fn bad_files_are_named_by_line() {
        assert_eq!(
            Ranks::parse("IQ== 0\nnot-base64! 1\n").unwrap_err(),
            RanksError::Line { line: 2 }
        );
        assert_eq!(
            Ranks::parse("IQ== x\n").unwrap_err(),
            RanksError::Line { line: 1 }
        );
        assert_eq!(
            Ranks::parse("IQ== 0\nIQ== 1\n").unwrap_err(),
            RanksError::Duplicate { line: 2 }
        );
        assert_eq!(
            Ranks::parse("IQ== 0\n").unwrap_err(),
            RanksError::MissingByte { byte: 0 }
        );
    }
}
