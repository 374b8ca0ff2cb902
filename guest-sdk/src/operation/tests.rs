//! Operations and the plugin table: names, dispatch, decoding errors with paths,
//! specs, examples and the checks `export_plugin!` runs.

use super::*;
use serde::Deserialize;
use serde_json::json;

#[test]
fn name_rules() {
    for good in ["a", "eval", "list_units", "x9_", &"a".repeat(64)] {
        assert_eq!(name_problem(good), None, "{good}");
    }
    for bad in ["", "Eval", "9a", "_a", "a-b", "a.b", "é", "a b", &"a".repeat(65)] {
        assert!(name_problem(bad).is_some(), "{bad:?} should be rejected");
    }
    assert_eq!(names_problem(&["a", "b"]), None);
    assert_eq!(
        names_problem(&["a", "b", "a"]),
        Some("operation names must be unique within a plugin")
    );
    assert!(names_problem(&[]).is_some());
}

// The compile-time check really runs at compile time: this is evaluated by rustc.
const _: () = assert_names(&["eval", "list_units"]);

#[test]
#[should_panic(expected = "unique")]
fn assert_names_panics_on_duplicates() {
    assert_names(&["a", "a"]);
}

#[test]
fn doc_lines_join_into_the_description() {
    assert_eq!(
        join_doc_lines(&[" First line.", " Second  ", "", " Third."]),
        "First line.\nSecond\n\nThird."
    );
    assert_eq!(join_doc_lines(&[]), "");
}

#[derive(Deserialize, Serialize, JsonSchema, Debug, PartialEq)]
struct Wide {
    big: u64,
    small: i64,
    list: Vec<Item>,
}

#[derive(Deserialize, Serialize, JsonSchema, Debug, PartialEq)]
struct Item {
    name: String,
}

#[test]
fn extreme_64_bit_integers_round_trip_exactly() {
    let json = r#"{"big":18446744073709551615,"small":-9223372036854775808,"list":[]}"#;
    let decoded: Wide = decode_input(json).unwrap();
    assert_eq!(decoded.big, u64::MAX);
    assert_eq!(decoded.small, i64::MIN);
    let reencoded = encode_output(&decoded).unwrap();
    assert!(reencoded.contains("18446744073709551615") && reencoded.contains("-9223372036854775808"));
    assert_eq!(decode_input::<Wide>(&reencoded).unwrap(), decoded);
    // Through an untyped value too (what a plugin passing JSON along sees).
    let value: Value = decode_input(json).unwrap();
    assert_eq!(value["big"].as_u64(), Some(u64::MAX));
    let expected = r#"{"big":18446744073709551615,"list":[],"small":-9223372036854775808}"#;
    assert_eq!(
        encode_output(&value).unwrap(),
        expected,
        "same digits; a Value sorts its keys"
    );
}

#[test]
fn decode_errors_are_invalid_input_with_the_field_path() {
    let e = decode_input::<Wide>(r#"{"big":1,"small":2,"list":[{"name":"a"},{"name":7}]}"#).unwrap_err();
    assert!(matches!(e, Error::InvalidInput(_)));
    assert!(
        e.message()
            .starts_with("input.list[1].name: invalid type: integer `7`"),
        "{e}"
    );

    let e = decode_input::<Wide>(r#"{"big":-1,"small":2,"list":[]}"#).unwrap_err();
    assert!(
        e.message().starts_with("input.big: invalid value: integer `-1`"),
        "{e}"
    );

    let e = decode_input::<Wide>(r#"{"big":18446744073709551616,"small":0,"list":[]}"#).unwrap_err();
    assert!(e.message().starts_with("input.big:"), "{e}");

    let e = decode_input::<Wide>(r#"{"small":2,"list":[]}"#).unwrap_err();
    assert!(e.message().starts_with("input: missing field `big`"), "{e}");

    let e = decode_input::<Wide>("not json").unwrap_err();
    assert!(matches!(e, Error::InvalidInput(_)), "{e}");
}

#[derive(Deserialize, JsonSchema)]
struct Num {
    n: i64,
}

fn plugin() -> Plugin {
    Plugin::new(vec![
        Operation::new("double", "Doubles n.".into(), Hints::READ_ONLY, |i: Num| {
            i.n.checked_mul(2)
                .map(|n| json!({ "n": n }))
                .ok_or_else(|| Error::invalid_input("n is too large"))
        }),
        Operation::new(
            "fail",
            "Always fails.".into(),
            Hints::empty(),
            |_: Num| -> Result<Value, Error> { Err(Error::forbidden("no")) },
        ),
    ])
}

#[test]
fn dispatch_maps_names_inputs_and_errors() {
    let p = plugin();
    assert_eq!(p.call("double", r#"{"n":21}"#).unwrap(), r#"{"n":42}"#);
    assert_eq!(p.call_value("double", &json!({"n": 4})).unwrap(), json!({"n": 8}));
    assert_eq!(
        p.call("double", &format!(r#"{{"n":{}}}"#, i64::MAX)),
        Err(Error::invalid_input("n is too large"))
    );
    assert_eq!(p.call("fail", r#"{"n":1}"#), Err(Error::forbidden("no")));
    let e = p.call("triple", "{}").unwrap_err();
    assert!(
        matches!(&e, Error::NotFound(m) if m.contains("double, fail")),
        "{e}"
    );
}

#[test]
fn specs_carry_schemas_and_hints() {
    let specs = plugin().specs();
    assert_eq!(specs.len(), 2);
    assert_eq!(specs[0].name, "double");
    assert_eq!(specs[0].hints, Hints::READ_ONLY);
    let input: Value = serde_json::from_str(&specs[0].input_schema).unwrap();
    assert_eq!(input["properties"]["n"]["minimum"].as_i64(), Some(i64::MIN));
    assert_eq!(specs[0].output_schema, None, "a Value output declares no schema");
}

#[test]
fn check_rejects_non_object_inputs_missing_docs_and_bad_names() {
    let scalar = Plugin::new(vec![Operation::new("s", "d".into(), Hints::empty(), |n: u32| {
        Ok(n)
    })]);
    assert!(
        scalar
            .check()
            .unwrap_err()
            .to_string()
            .contains("must serialize as a JSON object")
    );
    let undocumented = Plugin::new(vec![Operation::new(
        "s",
        String::new(),
        Hints::empty(),
        |n: Num| Ok(n.n),
    )]);
    assert!(
        undocumented
            .check()
            .unwrap_err()
            .to_string()
            .contains("no description")
    );
    let bad = Plugin::new(vec![Operation::new(
        "Bad",
        "d".into(),
        Hints::empty(),
        |n: Num| Ok(n.n),
    )]);
    assert!(bad.check().unwrap_err().to_string().contains("lowercase"));
}

#[test]
#[should_panic(expected = "invalid wasmhub plugin")]
fn specs_refuse_an_invalid_plugin() {
    Plugin::new(vec![Operation::new("s", "d".into(), Hints::empty(), |n: u32| {
        Ok(n)
    })])
    .specs();
}

fn double(examples: Vec<Example>) -> Plugin {
    let op = Operation::new("double", "Doubles n.".into(), Hints::READ_ONLY, |i: Num| {
        i.n.checked_mul(2)
            .map(|n| json!({ "n": n }))
            .ok_or_else(|| Error::invalid_input("n is too large"))
    });
    Plugin::new(vec![examples.into_iter().fold(op, Operation::with_example)])
}

fn example_failure(examples: Vec<Example>) -> (CheckError, String) {
    let e = double(examples).check().unwrap_err();
    let message = e.to_string();
    (e, message)
}

#[test]
fn examples_that_hold_pass_check() {
    let p = double(vec![
        Example::new("Doubles 21", json!({"n": 21})).with_output(json!({"n": 42})),
        Example::new("Any output will do", json!({"n": -4})),
    ]);
    assert_eq!(p.check(), Ok(()));
    assert_eq!(p.operations()[0].examples().len(), 2);
}

#[test]
fn an_example_whose_output_differs_fails_check_naming_it() {
    let (e, message) = example_failure(vec![
        Example::new("Doubles 21", json!({"n": 21})).with_output(json!({"n": 42})),
        Example::new("Doubles 2", json!({"n": 2})).with_output(json!({"n": 5})),
    ]);
    assert_eq!(
        message,
        r#"operation `double`, example 2 ("Doubles 2"): at /n: expected 5, got 4"#
    );
    assert!(matches!(
        e,
        CheckError::Example {
            index: 2,
            problem: ExampleProblem::OutputDiffers(_),
            ..
        }
    ));
    let (_, message) = example_failure(vec![
        Example::new("Float", json!({"n": 1})).with_output(json!({"n": 2.0})),
    ]);
    assert!(message.ends_with("at /n: expected 2.0, got 2"), "{message}");
}

#[test]
fn an_example_that_fails_or_does_not_decode_fails_check() {
    let (e, message) = example_failure(vec![Example::new("Too large", json!({"n": i64::MAX}))]);
    assert_eq!(
        e,
        CheckError::Example {
            operation: "double".into(),
            index: 1,
            description: "Too large".into(),
            problem: ExampleProblem::CallFailed(Error::invalid_input("n is too large")),
        }
    );
    assert!(message.contains("an example must succeed"), "{message}");
    let (_, message) = example_failure(vec![Example::new("Typo", json!({"m": 1}))]);
    assert_eq!(
        message,
        r#"operation `double`, example 1 ("Typo"): its input does not decode: invalid-input: input: missing field `n` at line 1 column 7"#
    );
}

#[test]
fn malformed_examples_are_declaration_errors_that_list_refuses() {
    let p = double(vec![Example::new("Not an object", json!([21]))]);
    let e = p.check_declarations().unwrap_err();
    assert_eq!(
        e.to_string(),
        r#"operation `double`, example 1 ("Not an object"): its input is not a JSON object"#
    );
    let refused = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| p.specs()));
    assert!(
        refused.is_err(),
        "list must trap rather than return a malformed example"
    );
    assert!(
        double(vec![Example::new("", json!({"n": 1}))])
            .check_declarations()
            .is_err()
    );
}

#[test]
fn open_world_and_destructive_examples_are_decoded_but_not_run() {
    for hints in [Hints::OPEN_WORLD, Hints::DESTRUCTIVE | Hints::IDEMPOTENT] {
        let reaches_out = |_: Num| -> Result<Value, Error> { panic!("must not run at check") };
        let op = Operation::new("get", "Fetches.".into(), hints, reaches_out)
            .with_example(Example::new("Network", json!({"n": 1})));
        assert!(!op.examples_run_at_load());
        assert_eq!(Plugin::new(vec![op]).check(), Ok(()));
        let typo = Operation::new("get", "Fetches.".into(), hints, reaches_out)
            .with_example(Example::new("Typo", json!({"url": "x"})));
        let e = Plugin::new(vec![typo]).check().unwrap_err();
        assert!(matches!(
            e,
            CheckError::Example {
                problem: ExampleProblem::InputRejected(_),
                ..
            }
        ));
    }
    assert!(plugin().operations()[0].examples_run_at_load());
}

#[test]
fn specs_carry_examples_as_json_text() {
    let p = double(vec![
        Example::new("Doubles 21", json!({"n": 21})).with_output(json!({"n": 42})),
        Example::new("Free", json!({"n": 1})),
    ]);
    let examples = &p.specs()[0].examples;
    assert_eq!(examples.len(), 2);
    assert_eq!(examples[0].description, "Doubles 21");
    assert_eq!(examples[0].input, r#"{"n":21}"#);
    assert_eq!(examples[0].output.as_deref(), Some(r#"{"n":42}"#));
    assert_eq!(examples[1].output, None);
    assert!(plugin().specs()[0].examples.is_empty());
}

#[test]
fn instructions_are_optional_bounded_and_not_blank() {
    assert_eq!(plugin().instructions(), None);
    let p = plugin().with_instructions("Numbers are 64-bit.");
    assert_eq!(p.instructions(), Some("Numbers are 64-bit."));
    assert_eq!(p.check(), Ok(()));
    let blank = plugin().with_instructions(" \n");
    assert_eq!(blank.check_declarations(), Err(CheckError::BlankInstructions));
    let long = plugin().with_instructions("x".repeat(MAX_INSTRUCTIONS_BYTES + 1));
    assert_eq!(
        long.check(),
        Err(CheckError::InstructionsTooLong {
            bytes: MAX_INSTRUCTIONS_BYTES + 1
        })
    );
    let limit = plugin().with_instructions("x".repeat(MAX_INSTRUCTIONS_BYTES));
    assert_eq!(limit.check(), Ok(()));
}
