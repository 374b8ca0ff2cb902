//! The text operations natively: slugs, counts, finds, replaces, their bounds and
//! the examples.

use super::*;
use serde_json::json;

fn slug(text: &str, sep: Option<&str>, max: Option<u32>) -> String {
    slugify(SlugifyInput {
        text: text.into(),
        separator: sep.map(Into::into),
        max_length: max,
    })
    .unwrap()
    .slug
}

#[test]
fn slugify_transliterates_and_cuts_at_words() {
    assert_eq!(slug("Crème brûlée à Paris!", None, None), "creme-brulee-a-paris");
    assert_eq!(slug("  Hello,   World  ", Some("_"), None), "hello_world");
    assert_eq!(slug("Straße 42", None, None), "strasse-42");
    assert_eq!(slug("北京", None, None), "bei-jing");
    assert_eq!(slug("!!!", None, None), "");
    assert_eq!(slug("alpha beta gamma", None, Some(12)), "alpha-beta");
    assert_eq!(slug("supercalifragilistic", None, Some(5)), "super");
    let e = slugify(SlugifyInput {
        text: "a".into(),
        separator: Some("123456789".into()),
        max_length: None,
    });
    assert!(matches!(e, Err(Error::InvalidInput(_))));
}

#[test]
fn count_is_exact() {
    let c = count(CountInput {
        text: "Héllo wörld.\nSecond line!\n".into(),
    })
    .unwrap();
    assert_eq!(
        c,
        CountOutput {
            words: 4,
            chars: 26,
            non_whitespace_chars: 22,
            lines: 2,
            bytes: 28,
            sentences: 2
        }
    );
    let empty = count(CountInput { text: String::new() }).unwrap();
    assert_eq!((empty.words, empty.lines, empty.sentences), (0, 0, 0));
    assert_eq!(
        count(CountInput {
            text: "no end".into()
        })
        .unwrap()
        .lines,
        1
    );
    assert_eq!(
        count(CountInput {
            text: "Dr. Who? Yes".into()
        })
        .unwrap()
        .sentences,
        3
    );
}

fn find_in(text: &str, pattern: &str) -> FindInput {
    FindInput {
        text: text.into(),
        pattern: pattern.into(),
        literal: false,
        case_insensitive: false,
        max_matches: None,
    }
}

#[test]
fn find_reports_char_positions_lines_and_groups() {
    let out = find(find_in("été 2024\nnext: 2025-01", r"(?<year>\d{4})(-(\d\d))?")).unwrap();
    assert_eq!(out.total, 2);
    assert!(!out.truncated);
    assert_eq!(
        out.matches[0],
        Match {
            text: "2024".into(),
            start: 4,
            end: 8,
            line: 1,
            column: 5,
            groups: vec![Some("2024".into()), None, None],
            named: BTreeMap::from([("year".into(), "2024".into())]),
        }
    );
    let second = &out.matches[1];
    assert_eq!((second.start, second.line, second.column), (15, 2, 7));
    assert_eq!(
        second.groups,
        vec![Some("2025".into()), Some("-01".into()), Some("01".into())]
    );

    let mut capped = find_in(&"ab ".repeat(50), "ab");
    capped.max_matches = Some(3);
    let out = find(capped).unwrap();
    assert_eq!((out.matches.len(), out.total, out.truncated), (3, 50, true));

    let mut lit = find_in("a.b a+b", "a.b");
    lit.literal = true;
    assert_eq!(find(lit).unwrap().total, 1);
    let mut ci = find_in("Rust rust RUST", "rust");
    ci.case_insensitive = true;
    assert_eq!(find(ci).unwrap().total, 3);
}

#[test]
fn find_and_replace_enforce_limits() {
    let e = find(find_in("x", "(")).unwrap_err();
    assert!(
        matches!(&e, Error::InvalidInput(m) if m.starts_with("invalid pattern")),
        "{e}"
    );
    let e = find(find_in("x", r"\w{1000}{1000}")).unwrap_err();
    assert!(
        matches!(&e, Error::InvalidInput(m) if m.contains("size limit")),
        "{e}"
    );
    let e = find(find_in("x", &"a".repeat(1001))).unwrap_err();
    assert!(
        matches!(&e, Error::InvalidInput(m) if m.contains("longer than")),
        "{e}"
    );
    let e = count(CountInput {
        text: "a".repeat(MAX_TEXT_BYTES + 1),
    })
    .unwrap_err();
    assert!(matches!(e, Error::InvalidInput(_)));
    let mut zero = find_in("x", "x");
    zero.max_matches = Some(0);
    assert!(find(zero).is_err());
    // 1 MiB of single-byte matches each replaced by 1000 bytes: refused, not built.
    let e = replace(ReplaceInput {
        text: "a".repeat(MAX_TEXT_BYTES),
        pattern: "a".into(),
        replacement: "b".repeat(1000),
        literal: false,
        case_insensitive: false,
        max_replacements: None,
    })
    .unwrap_err();
    assert!(
        matches!(&e, Error::InvalidInput(m) if m.contains("exceed")),
        "{e}"
    );
}

#[test]
fn replace_expands_groups_and_counts() {
    let r = |pattern: &str, replacement: &str, literal, max| {
        replace(ReplaceInput {
            text: "2024-01-31 and 2025-12-01".into(),
            pattern: pattern.into(),
            replacement: replacement.into(),
            literal,
            case_insensitive: false,
            max_replacements: max,
        })
        .unwrap()
    };
    let out = r(r"(?<y>\d{4})-(\d\d)-(\d\d)", "$3/$2/${y}", false, None);
    assert_eq!(
        out,
        ReplaceOutput {
            text: "31/01/2024 and 01/12/2025".into(),
            replacements: 2
        }
    );
    assert_eq!(
        r(r"\d{4}", "YEAR", false, Some(1)).text,
        "YEAR-01-31 and 2025-12-01"
    );
    assert_eq!(r("-", "$1", true, None).text, "2024$101$131 and 2025$112$101");
    assert_eq!(r("x", "y", false, None).replacements, 0);
}

#[test]
fn operations_are_exported() {
    let p = wasmhub_plugin();
    let names: Vec<&str> = p.operations().iter().map(|o| o.name()).collect();
    assert_eq!(names, ["slugify", "count", "find", "replace"]);
    let out = p.call_value("slugify", &json!({"text": "Hello World"})).unwrap();
    assert_eq!(out, json!({"slug": "hello-world"}));
}

#[test]
fn every_operation_has_exact_examples_and_the_plugin_instructions() {
    let plugin = wasmhub_plugin();
    for op in plugin.operations() {
        assert!(
            (1..=3).contains(&op.examples().len()),
            "{}: 1 to 3 examples",
            op.name()
        );
        let exact = op.examples().iter().all(|e| e.output().is_some());
        assert!(
            exact && op.examples_run_at_load(),
            "{}: a pure operation's examples are exact",
            op.name()
        );
    }
    assert!(
        plugin
            .instructions()
            .is_some_and(|i| i.contains("Unicode characters"))
    );
}
