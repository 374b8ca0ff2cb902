//! "Did you mean …" for a tool name that does not exist: the closest known names by
//! edit distance (typos: `text.slugfy`), then names sharing words with it
//! (`slugify` without its namespace, `text.make_slug`).

use super::text;

/// Most suggestions returned.
const MAX_SUGGESTIONS: usize = 3;

/// Up to three of `candidates` a caller most likely meant by `unknown`, best first.
pub(crate) fn suggest<'a>(unknown: &str, candidates: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let unknown_lower = unknown.trim().to_lowercase();
    let unknown_terms = text::terms(&unknown_lower);
    // Without a namespace, compare against the operation part too.
    let bare = !unknown_lower.contains('.');
    let mut ranked: Vec<(u32, usize, &str)> = Vec::new();
    for c in candidates {
        let op = c.split_once('.').map_or(c, |(_, op)| op);
        let mut distance = edit_distance(&unknown_lower, c);
        if bare {
            distance = distance.min(edit_distance(&unknown_lower, op));
        }
        let close = distance <= (unknown_lower.chars().count() / 3).max(2);
        let shared = text::terms(c)
            .iter()
            .filter(|t| unknown_terms.contains(t))
            .count();
        if close || shared > 0 {
            // Close spellings first (by distance), then by shared words.
            let rank = if close {
                distance as u32
            } else {
                1000 - shared.min(999) as u32
            };
            ranked.push((rank, distance, c));
        }
    }
    ranked.sort();
    ranked
        .into_iter()
        .take(MAX_SUGGESTIONS)
        .map(|(_, _, c)| c.to_string())
        .collect()
}

/// Optimal-string-alignment distance: insertions, deletions, substitutions and
/// adjacent transpositions ("slugfiy" is one edit from "slugify").
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let (n, m) = (a.len(), b.len());
    let mut prev2 = vec![0usize; m + 1];
    let mut prev: Vec<usize> = (0..=m).collect();
    let mut cur = vec![0usize; m + 1];
    for i in 1..=n {
        cur[0] = i;
        for j in 1..=m {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            cur[j] = (prev[j] + 1).min(cur[j - 1] + 1).min(prev[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                cur[j] = cur[j].min(prev2[j - 2] + 1);
            }
        }
        std::mem::swap(&mut prev2, &mut prev);
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[m]
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOOLS: &[&str] = &[
        "text.slugify",
        "text.word_count",
        "calc.eval",
        "json.format",
        "units.convert",
    ];

    #[test]
    fn typos_find_the_tool() {
        assert_eq!(suggest("text.slugfiy", TOOLS.iter().copied())[0], "text.slugify");
        assert_eq!(suggest("calc.evl", TOOLS.iter().copied())[0], "calc.eval");
    }

    #[test]
    fn missing_namespace_or_shared_words_find_the_tool() {
        assert_eq!(suggest("slugify", TOOLS.iter().copied())[0], "text.slugify");
        assert_eq!(
            suggest("convert_units", TOOLS.iter().copied())[0],
            "units.convert"
        );
        assert_eq!(
            suggest("count_words", TOOLS.iter().copied())[0],
            "text.word_count"
        );
    }

    #[test]
    fn unrelated_names_get_nothing() {
        assert!(suggest("weather.forecast", TOOLS.iter().copied()).is_empty());
    }

    #[test]
    fn edit_distance_counts_transpositions_once() {
        assert_eq!(edit_distance("abcd", "abdc"), 1);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }
}
