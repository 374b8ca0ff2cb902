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
    ] {
        assert_eq!(s.parse::<Spec>().unwrap().to_string(), s);
    }
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
    for e in [Encoding::O200kBase, Encoding::Cl100kBase] {
        fancy_regex::Regex::new(pattern(&Spec::Tiktoken(e))).unwrap();
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
