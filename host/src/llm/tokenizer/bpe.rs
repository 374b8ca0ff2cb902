//! Byte-level BPE over ranks: parsing a `.tiktoken` file (one base64 token and its rank
//! per line) or compact ranks (`! OFFSET BASE64...`, as in `claude.json`) and encoding one pre-split piece into token ids by repeatedly
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
    /// Line `line` of compact ranks is not `! OFFSET BASE64...`.
    CompactLine { line: usize },
    /// Line `line` repeats a token an earlier line already ranked.
    Duplicate { line: usize },
    /// No line ranks the single byte `byte`, so some texts could not be encoded.
    MissingByte { byte: u8 },
}

impl fmt::Display for RanksError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Line { line } => write!(f, "line {line} is not `BASE64 RANK`"),
            Self::CompactLine { line } => write!(f, "line {line} is not `! OFFSET BASE64...`"),
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
        let mut ranks = Self { map: HashMap::new() };
        for (index, line) in text.lines().enumerate() {
            let line_no = index + 1;
            if line.trim().is_empty() {
                continue;
            }
            let mut fields = line.split_ascii_whitespace();
            let (Some(token), Some(rank), None) = (fields.next(), fields.next(), fields.next()) else {
                return Err(RanksError::Line { line: line_no });
            };
            let Ok(rank) = rank.parse::<Rank>() else {
                return Err(RanksError::Line { line: line_no });
            };
            ranks.insert(token, rank, line_no)?;
        }
        ranks.every_byte()
    }

    /// Parses the compact ranks of `js-tiktoken` and tokenizer JSON files such as
    /// Anthropic's `claude.json`: lines of `! OFFSET BASE64 BASE64 ...`, the tokens'
    /// ranks counting up from OFFSET.
    pub(crate) fn parse_compact(text: &str) -> Result<Self, RanksError> {
        let mut ranks = Self { map: HashMap::new() };
        for (index, line) in text.lines().enumerate() {
            let line_no = index + 1;
            let mut fields = line.split(' ');
            let (Some("!"), Some(offset)) = (fields.next(), fields.next()) else {
                return Err(RanksError::CompactLine { line: line_no });
            };
            let Ok(offset) = offset.parse::<Rank>() else {
                return Err(RanksError::CompactLine { line: line_no });
            };
            for (i, token) in fields.enumerate() {
                let rank = Rank::try_from(i)
                    .ok()
                    .and_then(|i| offset.checked_add(i))
                    .ok_or(RanksError::CompactLine { line: line_no })?;
                ranks.insert(token, rank, line_no).map_err(|e| match e {
                    RanksError::Line { line } => RanksError::CompactLine { line },
                    e => e,
                })?;
            }
        }
        ranks.every_byte()
    }

    fn insert(&mut self, token: &str, rank: Rank, line: usize) -> Result<(), RanksError> {
        let token = crate::base64::decode(token)
            .filter(|t| !t.is_empty())
            .ok_or(RanksError::Line { line })?;
        match self.map.insert(token, rank) {
            Some(_) => Err(RanksError::Duplicate { line }),
            None => Ok(()),
        }
    }

    /// `self` when every one of the 256 single bytes has a rank.
    fn every_byte(self) -> Result<Self, RanksError> {
        match (0..=255u8).find(|b| !self.map.contains_key(std::slice::from_ref(b))) {
            Some(byte) => Err(RanksError::MissingByte { byte }),
            None => Ok(self),
        }
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
    fn compact_ranks_count_up_from_their_offset() {
        // The 256 bytes from rank 3 on, then "ab" at 259, over two lines.
        let bytes: Vec<String> = (0..=255u8).map(|b| crate::base64::encode(&[b])).collect();
        let text = format!("! 3 {}\n! 259 {}", bytes.join(" "), crate::base64::encode(b"ab"));
        let r = Ranks::parse_compact(&text).unwrap();
        let mut out = Vec::new();
        r.encode_piece(b"abc", &mut out);
        assert_eq!(out, vec![259, u32::from(b'c') + 3]);
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
        assert_eq!(
            Ranks::parse_compact("! 0 IQ==\n1 IQ==").unwrap_err(),
            RanksError::CompactLine { line: 2 }
        );
        assert_eq!(
            Ranks::parse_compact("! 0 IQ== IQ==").unwrap_err(),
            RanksError::Duplicate { line: 1 }
        );
    }
}
