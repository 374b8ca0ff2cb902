//! Turning names, descriptions and queries into index terms: splitting
//! `snake_case`, `camelCase`, `kebab-case` and dotted names, lowercasing, dropping
//! stop words, and a light suffix-stripping stemmer.
//!
//! The stemmer is deliberately small (plural, `-ing`, `-ed`, `-er`, `-ion`, `-ly`,
//! final `-e`): it has to make "converts", "converted", "converter" and "conversion"
//! meet "convert" often enough, and it must never merge unrelated words, which the
//! full Porter algorithm does more eagerly than a tool catalogue needs.

/// Words that carry no meaning for finding a tool.
const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "any", "are", "as", "at", "be", "by", "can", "do", "does", "for", "from", "given",
    "how", "i", "in", "into", "is", "it", "its", "me", "my", "of", "on", "or", "some", "that", "the",
    "their", "this", "to", "tool", "use", "using", "want", "what", "which", "with", "you", "your",
];

/// Index terms of `text`, in order, stop words removed.
pub(crate) fn terms(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for_each_word(text, |word| {
        if !STOP_WORDS.contains(&word.as_str()) {
            out.push(stem(&word));
        }
    });
    out
}

/// Calls `f` with each lowercase word of `text`: split at anything that is not a
/// letter or digit, at lower→upper (`camelCase`), at the end of an acronym
/// (`HTTPServer`) and at letter↔digit boundaries.
fn for_each_word(text: &str, mut f: impl FnMut(String)) {
    let chars: Vec<char> = text.chars().collect();
    let mut word = String::new();
    for (i, &c) in chars.iter().enumerate() {
        if !c.is_alphanumeric() {
            flush(&mut word, &mut f);
            continue;
        }
        if let Some(&p) = i
            .checked_sub(1)
            .map(|j| &chars[j])
            .filter(|p| p.is_alphanumeric())
        {
            let camel = p.is_lowercase() && c.is_uppercase();
            let acronym_end =
                p.is_uppercase() && c.is_uppercase() && chars.get(i + 1).is_some_and(|n| n.is_lowercase());
            let digit_edge = p.is_ascii_digit() != c.is_ascii_digit();
            if camel || acronym_end || digit_edge {
                flush(&mut word, &mut f);
            }
        }
        word.extend(c.to_lowercase());
    }
    flush(&mut word, &mut f);
}

fn flush(word: &mut String, f: &mut impl FnMut(String)) {
    if !word.is_empty() {
        f(std::mem::take(word));
    }
}

/// Light stemming of one lowercase word.
pub(crate) fn stem(word: &str) -> String {
    if word.len() <= 3 || !word.is_ascii() {
        return word.to_string();
    }
    let mut w = word.to_string();
    // Plurals and third person.
    if let Some(base) = w.strip_suffix("ies").filter(|b| b.len() >= 2) {
        w = format!("{base}y");
    } else if w.ends_with("sses") || ["ches", "shes", "xes", "zes"].iter().any(|s| w.ends_with(s)) {
        w.truncate(w.len() - 2);
    } else if w.ends_with('s') && !w.ends_with("ss") && !w.ends_with("us") && !w.ends_with("is") {
        w.pop();
    }
    // Verb and noun endings, each only when a real stem (≥ 3 letters) remains.
    for suffix in ["ing", "ion", "ed", "er", "ly"] {
        if let Some(base) = w.strip_suffix(suffix) {
            let min = if suffix == "er" || suffix == "ion" { 4 } else { 3 };
            if base.len() >= min && base.bytes().any(is_vowel) {
                w = undouble(base);
                break;
            }
        }
    }
    // "encode" / "encoding" / "encoded" all end as "encod".
    if w.len() > 3 && w.ends_with('e') {
        w.pop();
    }
    w
}

fn is_vowel(b: u8) -> bool {
    matches!(b, b'a' | b'e' | b'i' | b'o' | b'u' | b'y')
}

/// "running" → "runn" → "run"; "stopped" → "stopp" → "stop" ("ll", "ss", "zz" stay).
fn undouble(base: &str) -> String {
    let b = base.as_bytes();
    let n = b.len();
    if n >= 3 && b[n - 1] == b[n - 2] && !is_vowel(b[n - 1]) && !matches!(b[n - 1], b'l' | b's' | b'z') {
        return base[..n - 1].to_string();
    }
    base.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_every_naming_style() {
        assert_eq!(terms("text.slugify"), ["text", "slugify"]);
        assert_eq!(terms("getUserProfile"), ["get", "user", "profil"]);
        assert_eq!(terms("max_retries-count"), ["max", "retry", "count"]);
        assert_eq!(terms("base64 sha256"), ["bas", "64", "sha", "256"]);
        assert_eq!(terms("HTTPServer getURL"), ["http", "serv", "get", "url"]);
    }

    #[test]
    fn drops_stop_words() {
        assert_eq!(
            terms("How do I convert a file to the PDF"),
            ["convert", "fil", "pdf"]
        );
    }

    #[test]
    fn word_families_meet() {
        for family in [
            &["convert", "converts", "converted", "converting", "converter"][..],
            &["encode", "encoding", "encoded", "encodes"],
            &["compress", "compression", "compresses"],
            &["query", "queries"],
            &["translate", "translation", "translates"],
            &["parse", "parser", "parsing", "parsed"],
            &["box", "boxes"],
            &["run", "running"],
        ] {
            let stems: Vec<String> = family.iter().map(|w| stem(w)).collect();
            assert!(stems.iter().all(|s| *s == stems[0]), "{family:?} -> {stems:?}");
        }
    }

    #[test]
    fn short_and_special_words_stay() {
        for w in ["bus", "status", "class", "analysis", "user", "url", "ssl", "all"] {
            let s = stem(w);
            assert!(s.len() >= 3, "{w} -> {s}");
        }
        assert_eq!(stem("status"), "status");
        assert_eq!(stem("user"), "user");
        assert_ne!(stem("sing"), stem("s"));
    }
}
