//! Unit tests of the tokenizer: spec parsing, loading errors, and the pre-split of the
//! two named patterns on a tiny vocabulary (the exact-match test against the reference
//! `tiktoken` on real vocabularies is the node suite's `tokens.test.mjs`).

use super::*;

/// A ranks file of the 256 single bytes (rank = byte) plus `extra`, written to a
/// temporary file.
fn ranks_file(dir: &Path, extra: &[(&str, Rank)]) -> PathBuf {
    let extra: Vec<(&[u8], Rank)> = extra.iter().map(|(t, r)| (t.as_bytes(), *r)).collect();
    let path = dir.join("o200k_base.tiktoken");
    std::fs::write(&path, test_ranks(&extra)).unwrap();
    path
}

#[test]
fn specs_parse_and_print() {
    for s in [
        "tiktoken:o200k_base",
        "tiktoken:cl100k_base",
        "file:/x/y.tiktoken",
        "anthropic:claude",
        "sentencepiece:gemma",
        "sentencepiece:/srv/gemma/tokenizer.model",
    ] {
        assert_eq!(s.parse::<Spec>().unwrap().to_string(), s);
    }
    let dir = Path::new("/data/tokenizers");
    let path = |s: &str| s.parse::<Spec>().unwrap().path(dir);
    assert_eq!(path("sentencepiece:gemma"), dir.join("gemma.model"));
    assert_eq!(path("sentencepiece:/srv/t.model"), PathBuf::from("/srv/t.model"));
    assert_eq!(path("anthropic:claude"), dir.join("claude.json"));
    assert!("sentencepiece:".parse::<Spec>().is_err());
    let e = "tiktoken:p50k".parse::<Spec>().unwrap_err();
    assert!(
        e.to_string().contains("\"tiktoken:p50k\" is not a tokenizer"),
        "{e}"
    );
    assert!("file:".parse::<Spec>().is_err());
    assert!("o200k_base".parse::<Spec>().is_err());
}

#[test]
fn both_patterns_compile() {
    for e in [
        crate::config::Encoding::O200kBase,
        crate::config::Encoding::Cl100kBase,
    ] {
        fancy_regex::Regex::new(tiktoken::pattern(e)).unwrap();
    }
}

#[test]
fn splits_like_the_pattern_then_merges() {
    let dir = crate::test_dir::TempDir::new("tokenizer-split");
    ranks_file(
        dir.path(),
        &[
            ("He", 256),
            ("llo", 257),
            ("Hello", 258),
            (" world", 259),
            ("'s", 260),
        ],
    );
    let spec: Spec = "tiktoken:o200k_base".parse().unwrap();
    let t = Tokenizer::load(&spec, dir.path(), 64).unwrap();
    // "Hello" and " world" are pieces of their own and whole tokens; "'s" stays with
    // its word (o200k keeps contractions on the word), so "it's" is i, t, 's.
    assert_eq!(t.encode("Hello world"), vec![258, 259]);
    assert_eq!(t.encode("it's"), vec![u32::from(b'i'), u32::from(b't'), 260]);
    // Digits split in runs of at most three; "1234" is two pieces, 4 single bytes.
    assert_eq!(t.encode("1234").len(), 4);
    assert_eq!(t.count(""), 0);
    assert_eq!(t.spec(), &spec);
}

#[test]
fn load_errors_name_the_file_and_limit() {
    let dir = crate::test_dir::TempDir::new("tokenizer-load");
    let spec: Spec = "tiktoken:cl100k_base".parse().unwrap();
    let e = Tokenizer::load(&spec, dir.path(), 64).unwrap_err();
    assert!(matches!(e, LoadError::Read { .. }), "{e}");
    assert!(e.to_string().contains("cl100k_base.tiktoken"), "{e}");

    let path = ranks_file(dir.path(), &[]);
    let file = Spec::File(path);
    let e = Tokenizer::load(&file, dir.path(), 1).unwrap_err();
    assert!(
        e.to_string()
            .contains("larger than tokenizers.max_file_kb (1 KiB)"),
        "{e}"
    );

    let bad = dir.path().join("bad.tiktoken");
    std::fs::write(&bad, "IQ== 0\nIQ==\n").unwrap();
    let e = Tokenizer::load(&Spec::File(bad), dir.path(), 64).unwrap_err();
    assert!(
        e.to_string()
            .ends_with("bad.tiktoken: line 2 is not `BASE64 RANK`"),
        "{e}"
    );
    assert!(std::error::Error::source(&e).is_some());
}

#[test]
fn the_cache_loads_once_and_remembers_failures() {
    let dir = crate::test_dir::TempDir::new("tokenizer-cache");
    ranks_file(dir.path(), &[]);
    let cache = Tokenizers::new(dir.path().to_path_buf(), 64);
    let spec: Spec = "tiktoken:o200k_base".parse().unwrap();
    let a = cache.get(&spec).unwrap();
    let b = cache.get(&spec).unwrap();
    assert!(std::sync::Arc::ptr_eq(&a, &b));
    let missing: Spec = "tiktoken:cl100k_base".parse().unwrap();
    assert!(cache.get(&missing).is_err());
    // Writing the file afterwards does not change the remembered failure.
    std::fs::copy(
        dir.path().join("o200k_base.tiktoken"),
        dir.path().join("cl100k_base.tiktoken"),
    )
    .unwrap();
    assert!(cache.get(&missing).is_err());
}

/// A tokenizer JSON in `claude.json`'s shape: the 256 bytes from rank 2 on in compact
/// form, "ab" at 258, two special tokens at 0 and 1, and `pattern`.
fn json_file(dir: &Path, pattern: &str) -> PathBuf {
    let bytes: Vec<String> = (0..=255u8).map(|b| crate::base64::encode(&[b])).collect();
    let ranks = format!("! 2 {}\n! 258 {}", bytes.join(" "), crate::base64::encode(b"ab"));
    let json = serde_json::json!({
        "explicit_n_vocab": 259,
        "pat_str": pattern,
        "special_tokens": {"<EOT>": 0, "<EOT_LONG>": 1},
        "bpe_ranks": ranks,
    });
    let path = dir.join("claude.json");
    std::fs::write(&path, json.to_string()).unwrap();
    path
}

#[test]
fn claude_json_splits_by_its_own_pattern_and_knows_its_specials() {
    let dir = crate::test_dir::TempDir::new("tokenizer-json");
    let path = json_file(dir.path(), r" ?\p{L}+|\s+");
    let t = Tokenizer::load(&Spec::Anthropic, dir.path(), 64).unwrap();
    let b = |c: u8| u32::from(c) + 2;
    // " ab" is one piece: space, then "ab" merged; the longer special wins over its
    // prefix; "<EOT" alone is ordinary text.
    assert_eq!(t.encode("ab ab"), vec![258, b(b' '), 258]);
    assert_eq!(t.encode("a<EOT_LONG><EOT>b"), vec![b(b'a'), 1, 0, b(b'b')]);
    assert_eq!(t.encode("<EOT").len(), 4);
    // The same file named by `file:` (a .json name) reads the same way.
    let by_file = Tokenizer::load(&Spec::File(path), dir.path(), 64).unwrap();
    assert_eq!(by_file.encode("ab<EOT>"), vec![258, 0]);
    assert_eq!(t.spec().to_string(), "anthropic:claude");
}

#[test]
fn bad_claude_json_says_which_field() {
    let dir = crate::test_dir::TempDir::new("tokenizer-json-bad");
    json_file(dir.path(), r"(\p{L}");
    let e = Tokenizer::load(&Spec::Anthropic, dir.path(), 64).unwrap_err();
    assert!(
        e.to_string()
            .contains("claude.json: pat_str is not a usable pattern"),
        "{e}"
    );
    std::fs::write(
        dir.path().join("claude.json"),
        r#"{"pat_str": "x", "bpe_ranks": "! 0 IQ=="}"#,
    )
    .unwrap();
    let e = Tokenizer::load(&Spec::Anthropic, dir.path(), 64).unwrap_err();
    assert!(
        e.to_string()
            .ends_with("bpe_ranks: no line ranks the single byte 0x00, so not every text can be encoded"),
        "{e}"
    );
    std::fs::write(dir.path().join("claude.json"), "[]").unwrap();
    let e = Tokenizer::load(&Spec::Anthropic, dir.path(), 64).unwrap_err();
    assert!(e.to_string().contains("not a tokenizer JSON"), "{e}");
    assert!(std::error::Error::source(&e).is_some());
}
