//! The scanner agrees with serde: same chunk whenever it answers, and it answers
//! for every recorded chunk.

use super::*;

/// Parses `text` both ways; panics if they disagree. Returns whether the scanner
/// answered.
fn agree(text: &str) -> bool {
    let mut chunk = ChatChunk::default();
    let fast = parse_into(text, &mut chunk).map(|()| chunk);
    let slow = serde_json::from_str::<ChatChunk>(text);
    match (&fast, &slow) {
        (Some(a), Ok(b)) => assert_eq!(format!("{a:?}"), format!("{b:?}"), "{text}"),
        (Some(a), Err(e)) => panic!("scanner read {a:?} where serde fails ({e}): {text}"),
        (None, _) => {}
    }
    fast.is_some()
}

#[test]
fn recorded_chunks_take_the_fast_path_with_the_same_result() {
    let dir = crate::test_dir::repo_path("tests/fixtures/openai-streams");
    let mut lines = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if !path.to_string_lossy().ends_with(".chunks.txt") {
            continue;
        }
        for line in std::fs::read_to_string(&path).unwrap().lines() {
            if line.trim().is_empty() {
                continue;
            }
            assert!(agree(line), "{}: {line}", path.display());
            lines += 1;
        }
    }
    assert!(lines > 3000, "{lines} recorded chunks");
}

#[test]
fn common_shapes_are_read_like_serde() {
    for text in [
        r#"{"choices":[{"delta":{"content":"a\nb\"\\\/\b\f\r\t\u00e9\ud83d\ude00 z"}}]}"#,
        r#"{"choices":[{"index":1,"delta":{"content":"x"}},{"index":0,"delta":{"content":"y"}},{"delta":{"content":"z"}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}},{"index":1,"function":null}]}}]}"#,
        r#"{"choices":[{"delta":null,"finish_reason":"stop","logprobs":{"a":[1,-2.5e+3,{"b":null}],"c":true,"d":false}}]}"#,
        r#" { "model" : "m" , "choices" : [ { "delta" : { "reasoning" : "r" , "tool_calls" : null } } ] , "usage" : null } "#,
        r#"{"object":"error","message":"bad","code":400}"#,
        r#"{"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2,"d":{"x":[1.5]}}}"#,
        r#"{"error":{"message":"overloaded","type":"server_error"}}"#,
        r#"{"error":"plain"}"#,
        r#"{"x_groq":{"id":"q","usage":{"prompt_tokens":1}}}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"f","arguments":"{}"},"extra_content":{"google":{"thought_signature":"c2ln"}}}]}}]}"#,
        r#"{"choices":[{"delta":{"extra_content":{"anthropic":{"thinking_blocks":[{"type":"thinking","thinking":"t","signature":"s"}]}}}}]}"#,
        r#"{"choices":[{"delta":{"extra_content":null}}]}"#,
        r#"{"choices":null}"#,
        r#"{"choices":[]}"#,
        r#"{"created":0,"n":-0.0E5,"s":"","e":{},"a":[]}"#,
        "{}",
    ] {
        assert!(agree(text), "the scanner should read {text}");
    }
}

#[test]
fn anything_unusual_is_left_to_serde() {
    let deep = format!("{{\"x\":{}1{}}}", "[".repeat(100), "]".repeat(100));
    for text in [
        r#"{"model":"a","model":"b"}"#,
        r#"{"choices":[{"delta":{"content":"a","content":"b"}}]}"#,
        r#"{"mod\u0065l":"x"}"#,
        r#"{"choices":[{"index":1.0}]}"#,
        r#"{"choices":[{"index":-1}]}"#,
        r#"{"choices":[{"index":4294967296}]}"#,
        r#"{"choices":[{"index":01}]}"#,
        r#"{"choices":[null]}"#,
        r#"{"choices":[[0]]}"#,
        r#"{"choices":[{"delta":{"content":5}}]}"#,
        r#"{"choices":[{"delta":{"content":"\ud800"}}]}"#,
        r#"{"choices":[{"delta":{"content":"\udc00x"}}]}"#,
        r#"{"choices":[{"delta":{"content":"\ud800\u0041"}}]}"#,
        r#"{"usage":{"a":1,"a":2},"usage":null}"#,
        r#"{"x_groq":{"usage":1,"usage":2}}"#,
        "{\"id\":\"a\u{1}b\"}",
        r#"{"id":"\x"}"#,
        r#"{"id":"\u12"}"#,
        r#"{"n":1.}"#,
        r#"{"n":.5}"#,
        r#"{"n":1e}"#,
        r#"{"n":tru}"#,
        r#"{"a":1} x"#,
        r#"{"a":1}}"#,
        r#"{"a":1,}"#,
        r#"{"a" 1}"#,
        r#"{"model":"m"#,
        r#"[1]"#,
        r#""x""#,
        "null",
        "",
        &deep,
    ] {
        assert!(!agree(text), "the scanner should leave {text} to serde");
    }
}
