//! The recorded provider streams of `tests/fixtures/openai-streams`, each with its
//! exact UI chunk sequence.

use super::*;

#[test]
fn azure_model_router_skips_the_leading_filter_chunk() {
    let (chunks, summary) = run_fixture("openai--azure-model-router.1");
    assert_chunks(
        &chunks,
        &[
            r#"{"type":"start"}"#,
            r#"{"type":"start-step"}"#,
            r#"{"type":"text-start","id":"text-0-0"}"#,
            r#"text-delta text-0-0 x4 "Capital of Denmark.""#,
            r#"{"type":"text-end","id":"text-0-0"}"#,
            r#"{"type":"finish-step"}"#,
            r#"{"type":"finish","finishReason":"stop","messageMetadata":{"model":"gpt-5-nano-2025-08-07","usage":{"inputTokens":15,"outputTokens":78,"totalTokens":93,"reasoningTokens":64,"cachedInputTokens":0}}}"#,
        ],
    );
    assert_eq!(summary.text, "Capital of Denmark.");
    assert_eq!(summary.finish_reason, FinishReason::Stop);
    assert_eq!(summary.upstream_finish_reason.as_deref(), Some("stop"));
}

#[test]
fn openai_text_with_usage_in_a_trailing_chunk() {
    let (chunks, summary) = run_fixture("openai--openai-text");
    assert_chunks(
        &chunks,
        &[
            r#"{"type":"start"}"#,
            r#"{"type":"start-step"}"#,
            r#"{"type":"text-start","id":"text-0-0"}"#,
            r#"text-delta text-0-0 x300 "**Holiday Name:** Harmony"..."ed human experiences and mutual respect." (1724 chars)"#,
            r#"{"type":"text-end","id":"text-0-0"}"#,
            r#"{"type":"finish-step"}"#,
            r#"{"type":"finish","finishReason":"stop","messageMetadata":{"model":"gpt-4.1-nano-2025-04-14","usage":{"inputTokens":16,"outputTokens":300,"totalTokens":316,"reasoningTokens":0,"cachedInputTokens":0}}}"#,
        ],
    );
    assert_eq!(summary.text, naive_text("openai--openai-text").0);
}

#[test]
fn deepseek_text_with_usage_on_the_length_finish_chunk() {
    let (chunks, summary) = run_fixture("deepseek--deepseek-text");
    assert_chunks(
        &chunks,
        &[
            r#"{"type":"start"}"#,
            r#"{"type":"start-step"}"#,
            r#"{"type":"text-start","id":"text-0-0"}"#,
            r###"text-delta text-0-0 x400 "## **Holiday Name:** Star"..." observe 15 minutes of silent looking at" (1855 chars)"###,
            r#"{"type":"text-end","id":"text-0-0"}"#,
            r#"{"type":"finish-step"}"#,
            r#"{"type":"finish","finishReason":"length","messageMetadata":{"model":"deepseek-chat","usage":{"inputTokens":13,"outputTokens":400,"totalTokens":413,"cachedInputTokens":0}}}"#,
        ],
    );
    assert_eq!(summary.text, naive_text("deepseek--deepseek-text").0);
    assert_eq!(summary.finish_reason, FinishReason::Length);
}

#[test]
fn deepseek_reasoning_then_text() {
    let (chunks, summary) = run_fixture("deepseek--deepseek-reasoning");
    assert_chunks(
        &chunks,
        &[
            r#"{"type":"start"}"#,
            r#"{"type":"start-step"}"#,
            r#"{"type":"reasoning-start","id":"reasoning-0-0"}"#,
            r#"reasoning-delta reasoning-0-0 x205 "We need to count the numb"..."nd 9. So yes, 3.\n\nThus, the answer is 3." (606 chars)"#,
            r#"{"type":"reasoning-end","id":"reasoning-0-0"}"#,
            r#"{"type":"text-start","id":"text-0-1"}"#,
            r#"text-delta text-0-1 x13 "The word \"strawberry\" contains three \"r\"s.""#,
            r#"{"type":"text-end","id":"text-0-1"}"#,
            r#"{"type":"finish-step"}"#,
            r#"{"type":"finish","finishReason":"stop","messageMetadata":{"model":"deepseek-reasoner","usage":{"inputTokens":18,"outputTokens":219,"totalTokens":237,"reasoningTokens":205,"cachedInputTokens":0}}}"#,
        ],
    );
    let (text, reasoning) = naive_text("deepseek--deepseek-reasoning");
    assert_eq!((summary.text, summary.reasoning), (text, reasoning));
}

#[test]
fn deepseek_tool_call_in_fragments_after_reasoning() {
    let (chunks, summary) = run_fixture("deepseek--deepseek-tool-call");
    assert_chunks(
        &chunks,
        &[
            r#"{"type":"start"}"#,
            r#"{"type":"start-step"}"#,
            r#"{"type":"reasoning-start","id":"reasoning-0-0"}"#,
            r#"reasoning-delta reasoning-0-0 x39 "The user is asking for th"..."cation parameter set to \"San Francisco\"." (191 chars)"#,
            r#"{"type":"reasoning-end","id":"reasoning-0-0"}"#,
            r#"{"type":"tool-input-start","toolCallId":"call_00_ioIn7yN9p1ZOMNpDLwd4MgAF","toolName":"weather"}"#,
            r#"tool-input-delta call_00_ioIn7yN9p1ZOMNpDLwd4MgAF x10 "{\"location\": \"San Francisco\"}""#,
            r#"{"type":"tool-input-available","toolCallId":"call_00_ioIn7yN9p1ZOMNpDLwd4MgAF","toolName":"weather","input":{"location":"San Francisco"}}"#,
            r#"{"type":"finish-step"}"#,
            r#"{"type":"finish","finishReason":"tool-calls","messageMetadata":{"model":"deepseek-reasoner","usage":{"inputTokens":339,"outputTokens":83,"totalTokens":422,"reasoningTokens":39,"cachedInputTokens":320}}}"#,
        ],
    );
    assert_eq!(
        summary.tool_calls,
        vec![ModelToolCall {
            id: "call_00_ioIn7yN9p1ZOMNpDLwd4MgAF".into(),
            name: "weather".into(),
            arguments: Ok(json!({"location": "San Francisco"}))
        }]
    );
}

#[test]
fn groq_reasoning_field_and_x_groq_usage() {
    let (chunks, summary) = run_fixture("groq--groq-reasoning");
    assert_chunks(
        &chunks,
        &[
            r#"{"type":"start"}"#,
            r#"{"type":"start-step"}"#,
            r#"{"type":"reasoning-start","id":"reasoning-0-0"}"#,
            r#"reasoning-delta reasoning-0-0 x963 "Okay, let me try to figur"..."number of R's in \"strawberry\" is three.\n" (2952 chars)"#,
            r#"{"type":"reasoning-end","id":"reasoning-0-0"}"#,
            r#"{"type":"text-start","id":"text-0-1"}"#,
            r#"text-delta text-0-1 x139 "The word **\"strawberry\"**"..."awberry\".\n\n**Final Answer**: $\\boxed{3}$" (347 chars)"#,
            r#"{"type":"text-end","id":"text-0-1"}"#,
            r#"{"type":"finish-step"}"#,
            r#"{"type":"finish","finishReason":"stop","messageMetadata":{"model":"qwen/qwen3-32b","usage":{"inputTokens":17,"outputTokens":1107,"totalTokens":1124,"reasoningTokens":963}}}"#,
        ],
    );
    let (text, reasoning) = naive_text("groq--groq-reasoning");
    assert_eq!((summary.text, summary.reasoning), (text, reasoning));
}

#[test]
fn groq_text() {
    let (chunks, summary) = run_fixture("groq--groq-text");
    assert_chunks(
        &chunks,
        &[
            r#"{"type":"start"}"#,
            r#"{"type":"start-step"}"#,
            r#"{"type":"text-start","id":"text-0-0"}"#,
            r#"text-delta text-0-0 x661 "Introducing \"Luminaria\" -"..."per appreciation for the magic of light." (3189 chars)"#,
            r#"{"type":"text-end","id":"text-0-0"}"#,
            r#"{"type":"finish-step"}"#,
            r#"{"type":"finish","finishReason":"stop","messageMetadata":{"model":"llama-3.3-70b-versatile","usage":{"inputTokens":45,"outputTokens":662,"totalTokens":707}}}"#,
        ],
    );
    assert_eq!(summary.text, naive_text("groq--groq-text").0);
}

#[test]
fn groq_whole_tool_call_in_one_chunk() {
    let (chunks, summary) = run_fixture("groq--groq-tool-call");
    assert_chunks(
        &chunks,
        &[
            r#"{"type":"start"}"#,
            r#"{"type":"start-step"}"#,
            r#"{"type":"tool-input-start","toolCallId":"tk85n1k4m","toolName":"weather"}"#,
            r#"tool-input-delta tk85n1k4m x1 "{}""#,
            r#"{"type":"tool-input-available","toolCallId":"tk85n1k4m","toolName":"weather","input":{}}"#,
            r#"{"type":"finish-step"}"#,
            r#"{"type":"finish","finishReason":"tool-calls","messageMetadata":{"model":"llama-3.3-70b-versatile","usage":{"inputTokens":210,"outputTokens":15,"totalTokens":225}}}"#,
        ],
    );
    assert_eq!(summary.tool_calls[0].arguments, Ok(json!({})));
}

#[test]
fn mistral_tool_call_without_index_and_finish_on_the_same_chunk() {
    let (chunks, summary) = run_fixture("mistral--mistral-tool-call");
    assert_chunks(
        &chunks,
        &[
            r#"{"type":"start"}"#,
            r#"{"type":"start-step"}"#,
            r#"{"type":"tool-input-start","toolCallId":"gSIMJiOkT","toolName":"weather"}"#,
            r#"tool-input-delta gSIMJiOkT x1 "{\"location\": \"San Francisco\"}""#,
            r#"{"type":"tool-input-available","toolCallId":"gSIMJiOkT","toolName":"weather","input":{"location":"San Francisco"}}"#,
            r#"{"type":"finish-step"}"#,
            r#"{"type":"finish","finishReason":"tool-calls","messageMetadata":{"model":"mistral-small-latest","usage":{"inputTokens":124,"outputTokens":22,"totalTokens":146}}}"#,
        ],
    );
    assert_eq!(summary.finish_reason, FinishReason::ToolCalls);
}

#[test]
fn xai_reasoning_content_then_one_word() {
    let (chunks, _) = run_fixture("openai-compatible--xai-text");
    assert_chunks(
        &chunks,
        &[
            r#"{"type":"start"}"#,
            r#"{"type":"start-step"}"#,
            r#"{"type":"reasoning-start","id":"reasoning-0-0"}"#,
            r#"reasoning-delta reasoning-0-0 x340 "First, the user said: \"Sa"..."possible, just the word.\n\nResponse: Grok" (1455 chars)"#,
            r#"{"type":"reasoning-end","id":"reasoning-0-0"}"#,
            r#"{"type":"text-start","id":"text-0-1"}"#,
            r#"text-delta text-0-1 x2 "Grok""#,
            r#"{"type":"text-end","id":"text-0-1"}"#,
            r#"{"type":"finish-step"}"#,
            r#"{"type":"finish","finishReason":"stop","messageMetadata":{"model":"grok-3-mini","usage":{"inputTokens":12,"outputTokens":2,"totalTokens":354,"reasoningTokens":340,"cachedInputTokens":11}}}"#,
        ],
    );
}

#[test]
fn xai_tool_call_after_reasoning() {
    let (chunks, summary) = run_fixture("openai-compatible--xai-tool-call");
    assert_chunks(
        &chunks,
        &[
            r#"{"type":"start"}"#,
            r#"{"type":"start-step"}"#,
            r#"{"type":"reasoning-start","id":"reasoning-0-0"}"#,
            r#"reasoning-delta reasoning-0-0 x227 "First, the user is asking"..." for now, this is the logical next step." (1069 chars)"#,
            r#"{"type":"reasoning-end","id":"reasoning-0-0"}"#,
            r#"{"type":"tool-input-start","toolCallId":"call_79382389","toolName":"weather"}"#,
            r#"tool-input-delta call_79382389 x1 "{\"location\":\"San Francisco\"}""#,
            r#"{"type":"tool-input-available","toolCallId":"call_79382389","toolName":"weather","input":{"location":"San Francisco"}}"#,
            r#"{"type":"finish-step"}"#,
            r#"{"type":"finish","finishReason":"tool-calls","messageMetadata":{"model":"grok-3-mini","usage":{"inputTokens":307,"outputTokens":26,"totalTokens":560,"reasoningTokens":227,"cachedInputTokens":306}}}"#,
        ],
    );
    assert_eq!(
        summary.reasoning,
        naive_text("openai-compatible--xai-tool-call").1
    );
}
