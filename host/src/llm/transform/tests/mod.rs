//! Transformer tests: every recorded provider stream with its exact UI chunk
//! sequence (`recorded`), then one test per provider deviation (`deviations`),
//! and the provider extensions a step keeps for its calls (`extensions`).
//! This file holds what both use.
//!
//! Long runs of deltas are compared in a compact form (`text-delta <id> xN "<joined>"`,
//! long text shown as head...tail with its length) so the expected sequences stay
//! readable; every other chunk is compared as full JSON.

use super::*;
use serde_json::json;

mod deviations;
mod extensions;
mod recorded;

pub(super) fn fixture(name: &str) -> Vec<String> {
    let text = std::fs::read_to_string(crate::test_dir::repo_path(&format!(
        "tests/fixtures/openai-streams/{name}.chunks.txt"
    )))
    .unwrap();
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_string)
        .collect()
}

pub(super) fn opts() -> StepOptions {
    StepOptions {
        tool_id_prefix: "gen".into(),
        ..StepOptions::default()
    }
}

/// Replays data payloads as a provider would (each as one event, then `[DONE]`).
pub(super) fn run<S: AsRef<str>>(datas: &[S], opts: StepOptions) -> (Vec<UiChunk>, StepSummary) {
    let mut t = StepTransformer::new(opts);
    let mut out = Vec::new();
    for d in datas {
        t.feed_data(d.as_ref(), &mut out);
    }
    let summary = t.finish(&mut out);
    (out, summary)
}

pub(super) fn run_fixture(name: &str) -> (Vec<UiChunk>, StepSummary) {
    let mut lines = fixture(name);
    lines.push("[DONE]".into());
    run(&lines, opts())
}

pub(super) fn shown(text: &str) -> String {
    if text.chars().count() <= 60 {
        format!("{text:?}")
    } else {
        let head: String = text.chars().take(25).collect();
        let tail: String = text
            .chars()
            .rev()
            .take(40)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        format!("{head:?}...{tail:?} ({} chars)", text.chars().count())
    }
}

/// Collapses runs of deltas of one part into one line; other chunks become JSON.
pub(super) fn compact(chunks: &[UiChunk]) -> Vec<String> {
    let mut lines: Vec<(String, String, usize, String)> = Vec::new(); // kind, id, count, text
    for chunk in chunks {
        let (kind, id, text) = match chunk {
            UiChunk::TextDelta { id, delta } => ("text-delta", id, delta),
            UiChunk::ReasoningDelta { id, delta } => ("reasoning-delta", id, delta),
            UiChunk::ToolInputDelta {
                tool_call_id,
                input_text_delta,
            } => ("tool-input-delta", tool_call_id, input_text_delta),
            other => {
                lines.push((
                    "json".into(),
                    String::new(),
                    0,
                    serde_json::to_string(other).unwrap(),
                ));
                continue;
            }
        };
        match lines.last_mut() {
            Some((k, i, n, t)) if k == kind && i == id => {
                *n += 1;
                t.push_str(text);
            }
            _ => lines.push((kind.into(), id.to_string(), 1, text.to_string())),
        }
    }
    lines
        .into_iter()
        .map(|(kind, id, n, text)| {
            if kind == "json" {
                text
            } else {
                format!("{kind} {id} x{n} {}", shown(&text))
            }
        })
        .collect()
}

pub(super) fn assert_chunks(chunks: &[UiChunk], want: &[&str]) {
    let got = compact(chunks);
    let same = got.len() == want.len()
        && got.iter().zip(want).all(|(g, w)| {
            if w.starts_with('{') {
                serde_json::from_str::<Value>(g).unwrap() == serde_json::from_str::<Value>(w).unwrap()
            } else {
                g == w
            }
        });
    assert!(same, "got:\n{}\nwant:\n{}", got.join("\n"), want.join("\n"));
}

/// An independent reading of a fixture: the concatenated content and reasoning.
pub(super) fn naive_text(name: &str) -> (String, String) {
    let (mut text, mut reasoning) = (String::new(), String::new());
    for line in fixture(name) {
        let v: Value = serde_json::from_str(&line).unwrap();
        for c in v["choices"].as_array().unwrap() {
            let d = &c["delta"];
            text.push_str(d["content"].as_str().unwrap_or(""));
            reasoning.push_str(
                d["reasoning_content"]
                    .as_str()
                    .or(d["reasoning"].as_str())
                    .unwrap_or(""),
            );
        }
    }
    (text, reasoning)
}
