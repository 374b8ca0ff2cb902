//! The `text` plugin: text chores a model gets wrong when it does them in its head —
//! URL slugs, exact counts, regex search and regex replace — each bounded in input
//! size, pattern size and output size so one call stays cheap.

use std::collections::BTreeMap;

use regex::{Regex, RegexBuilder};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use wasmhub_guest::Error;

/// Largest `text` accepted, in bytes (1 MiB).
pub const MAX_TEXT_BYTES: usize = 1 << 20;
/// Largest regex pattern or replacement, in bytes.
pub const MAX_PATTERN_BYTES: usize = 1000;
/// Most matches `find` reports in one call.
pub const MAX_MATCHES: usize = 1000;
/// Largest text `replace` may produce, in bytes (2 MiB).
pub const MAX_OUTPUT_BYTES: usize = 2 << 20;
/// Compiled-regex size cap: keeps pathological patterns (`\w{1000}{1000}`) from
/// exhausting guest memory; the regex crate never backtracks, so time is linear.
const REGEX_SIZE_LIMIT: usize = 1 << 20;

fn check_text(text: &str) -> Result<(), Error> {
    if text.len() > MAX_TEXT_BYTES {
        return Err(Error::invalid_input(format!(
            "text is {} bytes; the limit is {MAX_TEXT_BYTES} bytes",
            text.len()
        )));
    }
    Ok(())
}

/// Text to turn into a URL slug.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SlugifyInput {
    /// Any text, in any script: accents are stripped and other scripts transliterated
    /// to ASCII (`"Crème brûlée à Paris"` -> `"creme-brulee-a-paris"`).
    #[schemars(length(max = 1048576))]
    pub text: String,
    /// Separator between words (default `-`); at most 8 characters.
    #[schemars(length(max = 8))]
    pub separator: Option<String>,
    /// Cut the slug to at most this many bytes, at a word boundary when possible.
    #[schemars(range(min = 1))]
    pub max_length: Option<u32>,
}

/// The slug.
#[derive(Debug, Serialize, JsonSchema, PartialEq)]
pub struct SlugifyOutput {
    /// Lowercase ASCII letters and digits joined by the separator; empty if the text
    /// has no letters or digits.
    pub slug: String,
}

/// Lowercase ASCII words joined by a separator.
pub fn slugify(input: SlugifyInput) -> Result<SlugifyOutput, Error> {
    check_text(&input.text)?;
    let separator = input.separator.unwrap_or_else(|| "-".to_string());
    if separator.chars().count() > 8 {
        return Err(Error::invalid_input("separator must be at most 8 characters"));
    }
    let ascii = deunicode::deunicode(&input.text).to_lowercase();
    let words: Vec<&str> = ascii
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let mut slug = words.join(&separator);
    if let Some(max) = input.max_length {
        let max = max as usize;
        if slug.len() > max {
            // Prefer cutting before a whole word; fall back to a hard cut.
            let mut cut = String::new();
            for w in &words {
                let extra = if cut.is_empty() {
                    w.len()
                } else {
                    separator.len() + w.len()
                };
                if cut.len() + extra > max {
                    break;
                }
                if !cut.is_empty() {
                    cut.push_str(&separator);
                }
                cut.push_str(w);
            }
            if cut.is_empty() {
                cut = slug.chars().take(max).collect();
            }
            slug = cut;
        }
    }
    Ok(SlugifyOutput { slug })
}

/// Text to measure.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CountInput {
    /// The text.
    #[schemars(length(max = 1048576))]
    pub text: String,
}

/// Exact counts.
#[derive(Debug, Serialize, JsonSchema, PartialEq)]
pub struct CountOutput {
    /// Words: runs of characters between whitespace.
    pub words: u64,
    /// Unicode scalar values (what most languages call characters).
    pub chars: u64,
    /// Characters other than whitespace.
    pub non_whitespace_chars: u64,
    /// Lines: line breaks plus one for a last line without one; 0 for empty text.
    pub lines: u64,
    /// Bytes of UTF-8.
    pub bytes: u64,
    /// Sentences ending in `.`, `!` or `?` (a rough count, for prose).
    pub sentences: u64,
}

/// Counts words, characters, lines, bytes and sentences.
pub fn count(input: CountInput) -> Result<CountOutput, Error> {
    check_text(&input.text)?;
    let t = &input.text;
    let mut sentences = 0u64;
    let mut in_sentence = false;
    for c in t.chars() {
        if matches!(c, '.' | '!' | '?') {
            if in_sentence {
                sentences += 1;
            }
            in_sentence = false;
        } else if c.is_alphanumeric() {
            in_sentence = true;
        }
    }
    if in_sentence {
        sentences += 1;
    }
    Ok(CountOutput {
        words: t.split_whitespace().count() as u64,
        chars: t.chars().count() as u64,
        non_whitespace_chars: t.chars().filter(|c| !c.is_whitespace()).count() as u64,
        lines: t.lines().count() as u64,
        bytes: t.len() as u64,
        sentences,
    })
}

/// A regex search.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FindInput {
    /// The text to search.
    #[schemars(length(max = 1048576))]
    pub text: String,
    /// A regular expression (Rust `regex` syntax: like PCRE without look-around or
    /// backreferences). Set `literal` to search for the text as is.
    #[schemars(length(min = 1, max = 1000))]
    pub pattern: String,
    /// Treat `pattern` as plain text, not a regex.
    #[serde(default)]
    pub literal: bool,
    /// Match letters regardless of case.
    #[serde(default)]
    pub case_insensitive: bool,
    /// Report at most this many matches (default 100, at most 1000); `total` still
    /// counts them all.
    #[schemars(range(min = 1, max = 1000))]
    pub max_matches: Option<u32>,
}

/// One match.
#[derive(Debug, Serialize, JsonSchema, PartialEq)]
pub struct Match {
    /// The matched text.
    pub text: String,
    /// Character offset where the match starts (0-based).
    pub start: u64,
    /// Character offset just past the match.
    pub end: u64,
    /// Line of the start (1-based).
    pub line: u64,
    /// Column of the start within its line, in characters (1-based).
    pub column: u64,
    /// Numbered capture groups 1..n (null for a group that did not take part).
    pub groups: Vec<Option<String>>,
    /// Named capture groups that took part.
    pub named: BTreeMap<String, String>,
}

/// Matches found.
#[derive(Debug, Serialize, JsonSchema, PartialEq)]
pub struct FindOutput {
    /// The first `max_matches` matches, in order.
    pub matches: Vec<Match>,
    /// All non-overlapping matches in the text.
    pub total: u64,
    /// Whether `matches` omits some (`total` > `max_matches`).
    pub truncated: bool,
}

fn compile(pattern: &str, literal: bool, case_insensitive: bool) -> Result<Regex, Error> {
    if pattern.len() > MAX_PATTERN_BYTES {
        return Err(Error::invalid_input(format!(
            "pattern is longer than {MAX_PATTERN_BYTES} bytes"
        )));
    }
    let source = if literal {
        regex::escape(pattern)
    } else {
        pattern.to_string()
    };
    RegexBuilder::new(&source)
        .case_insensitive(case_insensitive)
        .size_limit(REGEX_SIZE_LIMIT)
        .dfa_size_limit(REGEX_SIZE_LIMIT)
        .build()
        .map_err(|e| Error::invalid_input(format!("invalid pattern: {e}")))
}

/// Finds regex matches with their positions and groups.
pub fn find(input: FindInput) -> Result<FindOutput, Error> {
    check_text(&input.text)?;
    let re = compile(&input.pattern, input.literal, input.case_insensitive)?;
    let limit = input.max_matches.unwrap_or(100) as usize;
    if limit == 0 || limit > MAX_MATCHES {
        return Err(Error::invalid_input(format!(
            "max_matches must be between 1 and {MAX_MATCHES}"
        )));
    }
    let text = &input.text;
    let names: Vec<Option<&str>> = re.capture_names().collect();
    let mut matches = Vec::new();
    let mut total = 0u64;
    // Walk positions once, converting byte offsets to characters and lines incrementally.
    let (mut byte_pos, mut char_pos, mut line, mut line_start_char) = (0usize, 0u64, 1u64, 0u64);
    let mut advance_to = |target: usize| {
        for c in text[byte_pos..target].chars() {
            char_pos += 1;
            if c == '\n' {
                line += 1;
                line_start_char = char_pos;
            }
        }
        byte_pos = target;
        (char_pos, line, line_start_char)
    };
    for caps in re.captures_iter(text) {
        total += 1;
        if matches.len() >= limit {
            continue;
        }
        let whole = caps.get(0).expect("group 0 always takes part");
        let (start, line, line_start) = advance_to(whole.start());
        let length = whole.as_str().chars().count() as u64;
        let groups = (1..caps.len())
            .map(|i| caps.get(i).map(|m| m.as_str().to_string()))
            .collect();
        let named = names
            .iter()
            .enumerate()
            .filter_map(|(i, n)| Some(((*n)?.to_string(), caps.get(i)?.as_str().to_string())))
            .collect();
        matches.push(Match {
            text: whole.as_str().to_string(),
            start,
            end: start + length,
            line,
            column: start - line_start + 1,
            groups,
            named,
        });
    }
    Ok(FindOutput {
        truncated: total > matches.len() as u64,
        matches,
        total,
    })
}

/// A regex replacement.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReplaceInput {
    /// The text to edit.
    #[schemars(length(max = 1048576))]
    pub text: String,
    /// A regular expression (Rust `regex` syntax), or plain text with `literal`.
    #[schemars(length(min = 1, max = 1000))]
    pub pattern: String,
    /// The replacement: `$1` or `${name}` insert capture groups, `$$` a dollar sign
    /// (unless `literal`, which inserts it as is).
    #[schemars(length(max = 1000))]
    pub replacement: String,
    /// Treat `pattern` and `replacement` as plain text.
    #[serde(default)]
    pub literal: bool,
    /// Match letters regardless of case.
    #[serde(default)]
    pub case_insensitive: bool,
    /// Replace only the first this many matches (default: all).
    #[schemars(range(min = 1))]
    pub max_replacements: Option<u32>,
}

/// The edited text.
#[derive(Debug, Serialize, JsonSchema, PartialEq)]
pub struct ReplaceOutput {
    /// The text after replacement.
    pub text: String,
    /// How many matches were replaced.
    pub replacements: u64,
}

/// Replaces regex matches, expanding capture references.
pub fn replace(input: ReplaceInput) -> Result<ReplaceOutput, Error> {
    check_text(&input.text)?;
    if input.replacement.len() > MAX_PATTERN_BYTES {
        return Err(Error::invalid_input(format!(
            "replacement is longer than {MAX_PATTERN_BYTES} bytes"
        )));
    }
    let re = compile(&input.pattern, input.literal, input.case_insensitive)?;
    let max = input.max_replacements.map_or(usize::MAX, |m| m as usize);
    let text = &input.text;
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    let mut replacements = 0u64;
    for caps in re.captures_iter(text).take(max) {
        let m = caps.get(0).expect("group 0 always takes part");
        out.push_str(&text[last..m.start()]);
        if input.literal {
            out.push_str(&input.replacement);
        } else {
            caps.expand(&input.replacement, &mut out);
        }
        last = m.end();
        replacements += 1;
        // Checked as it grows, so `.` -> 1000 bytes cannot build a gigabyte first.
        if out.len() > MAX_OUTPUT_BYTES {
            return Err(Error::invalid_input(format!(
                "the result would exceed {MAX_OUTPUT_BYTES} bytes; replace fewer matches or a shorter text"
            )));
        }
    }
    out.push_str(&text[last..]);
    if out.len() > MAX_OUTPUT_BYTES {
        return Err(Error::invalid_input(format!(
            "the result would exceed {MAX_OUTPUT_BYTES} bytes"
        )));
    }
    Ok(ReplaceOutput {
        text: out,
        replacements,
    })
}

// The examples double as tests: `cargo test` runs each one (the macro's generated
// test), and so does the hub when it loads the component.
wasmhub_guest::export_plugin! {
    instructions: "Positions are in Unicode characters, not bytes: `start`/`end` are 0-based offsets, \
        `line`/`column` 1-based. Patterns are Rust regex syntax (like PCRE without look-around or \
        backreferences); set `literal: true` to search or replace plain text. Inside JSON a regex \
        backslash is written twice: \"\\\\d+\".",
    /// Turn text into a URL slug: lowercase ASCII words joined by "-", accents removed, other scripts transliterated.
    #[hints(read_only, idempotent)]
    #[example("Strips accents and punctuation", {"text": "Crème brûlée à Paris!"} => {"slug": "creme-brulee-a-paris"})]
    #[example("A custom separator, cut at a word boundary",
        {"text": "Alpha beta gamma", "separator": "_", "max_length": 12} => {"slug": "alpha_beta"})]
    slugify => slugify,
    /// Count words, characters, non-whitespace characters, lines, bytes and sentences of a text, exactly.
    #[hints(read_only, idempotent)]
    #[example("Counts a short text", {"text": "Hello, world! How are you?\nFine."}
        => {"words": 6, "chars": 32, "non_whitespace_chars": 27, "lines": 2, "bytes": 32, "sentences": 3})]
    #[example("Characters are not bytes; a final line break adds no line", {"text": "Grüße aus Köln!\nBis bald.\n"}
        => {"words": 5, "chars": 26, "non_whitespace_chars": 21, "lines": 2, "bytes": 29, "sentences": 2})]
    count => count,
    /// Find regular-expression (or literal) matches in a text, with character offsets, line/column and capture groups.
    #[hints(read_only, idempotent)]
    #[example("Finds numbers; max_matches caps the list, total counts all",
        {"text": "a1 b22\nc333", "pattern": "\\d+", "max_matches": 2}
        => {"matches": [
                {"text": "1", "start": 1, "end": 2, "line": 1, "column": 2, "groups": [], "named": {}},
                {"text": "22", "start": 4, "end": 6, "line": 1, "column": 5, "groups": [], "named": {}}
            ], "total": 3, "truncated": true})]
    #[example("Named capture groups",
        {"text": "Due: 2024-05-17", "pattern": "(?P<year>\\d{4})-(?P<month>\\d{2})"}
        => {"matches": [{"text": "2024-05", "start": 5, "end": 12, "line": 1, "column": 6,
                "groups": ["2024", "05"], "named": {"year": "2024", "month": "05"}}],
            "total": 1, "truncated": false})]
    find => find,
    /// Replace regular-expression (or literal) matches in a text; the replacement may use $1 or ${name} for groups.
    #[hints(read_only, idempotent)]
    #[example("Reorders a date with capture groups",
        {"text": "due 2024-05-17", "pattern": "(\\d{4})-(\\d{2})-(\\d{2})", "replacement": "$3/$2/$1"}
        => {"text": "due 17/05/2024", "replacements": 1})]
    #[example("Case-insensitive, only the first two matches",
        {"text": "Cat cat CAT", "pattern": "cat", "replacement": "dog", "case_insensitive": true, "max_replacements": 2}
        => {"text": "dog dog CAT", "replacements": 2})]
    #[example("Literal: $ in the replacement is inserted as is",
        {"text": "price: 5", "pattern": "5", "replacement": "$5", "literal": true}
        => {"text": "price: $5", "replacements": 1})]
    replace => replace,
}

#[cfg(test)]
mod tests;
