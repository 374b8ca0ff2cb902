//! The Gemini adapter on Google's published examples (Gemini API reference,
//! "Generating content": `GenerateContentResponse` with `usageMetadata`; the
//! "Function calling" guide's `schedule_meeting` / `get_current_temperature`
//! request and `functionCall` answer; the "Thinking" guide's `includeThoughts`
//! answer with `thought: true` parts; the "Troubleshooting" guide's error body).

use super::gemini_answer::{self, Events};
use super::prepare;
use super::sse_events::Sse;
use super::tests::{body_of, recode_all, transformed};
use super::whole::Whole;
use crate::llm::providers::{Providers, Route};
use crate::llm::ui::FinishReason;
use serde_json::{Value, json};

fn route(extra: &str, model: &str) -> Route {
    let text = format!(
        "name = \"g\"\nkind = \"gemini\"\nbase_url = \"https://generativelanguage.googleapis.com\"\n{extra}\n"
    );
    let ps = Providers::new(&[crate::toml::from_str(&text).unwrap()]).unwrap();
    ps.route(&format!("g/{model}")).unwrap()
}

fn sse(events: &[Value]) -> String {
    events.iter().map(|e| format!("data: {e}\r\n\r\n")).collect()
}

pub(super) fn thinking_tool_stream() -> Vec<Value> {
    let part = |parts: Value| {
        json!({"candidates": [{"content": {"parts": parts, "role": "model"}, "index": 0}],
        "modelVersion": "gemini-2.5-flash", "responseId": "mAitaLmkHPPlz7IPvtfUqQ4"})
    };
    let mut last =
        part(json!([{"functionCall": {"name": "get_current_temperature", "args": {"location": "London"}}}]));
    last["candidates"][0]["finishReason"] = json!("STOP");
    last["usageMetadata"] = json!({"promptTokenCount": 83, "candidatesTokenCount": 17, "totalTokenCount": 180,
        "cachedContentTokenCount": 40, "thoughtsTokenCount": 80,
        "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 83}]});
    vec![
        part(
            json!([{"text": "**Checking the weather**\n\nThe user wants the temperature in London.", "thought": true}]),
        ),
        part(json!([{"text": "Let me look that up"}])),
        part(json!([{"text": " for you."}])),
        last,
    ]
}

#[test]
fn a_gemini_stream_split_anywhere_reads_as_an_openai_stream() {
    let text = sse(&thinking_tool_stream());
    for step in [1, 3, 7, 100, 1 << 16] {
        let out = recode_all(&mut Sse::new(1 << 20, Events::new()), text.as_bytes(), step).unwrap();
        let (summary, events) = transformed(&out);
        assert_eq!(summary.text, "Let me look that up for you.", "pieces of {step}");
        assert_eq!(
            summary.reasoning,
            "**Checking the weather**\n\nThe user wants the temperature in London."
        );
        assert_eq!(summary.finish_reason, FinishReason::ToolCalls);
        let call = &summary.tool_calls[0];
        assert!(call.id.starts_with("call_"), "a fresh id: {}", call.id);
        assert_eq!(call.name, "get_current_temperature");
        assert_eq!(call.arguments.as_ref().unwrap(), &json!({"location": "London"}));
        let usage = summary.usage.unwrap();
        assert_eq!(
            (
                usage.input_tokens,
                usage.output_tokens,
                usage.cached_input_tokens,
                usage.reasoning_tokens
            ),
            (83, 97, Some(40), Some(80))
        );
        assert_eq!(events.last().map(String::as_str), Some("[DONE]"));
    }
}

#[test]
fn a_gemini_error_event_or_a_cut_stream_is_never_a_finished_answer() {
    let mut events = thinking_tool_stream()[..2].to_vec();
    events.push(json!({"error": {"code": 503, "message": "The model is overloaded. Please try again later.", "status": "UNAVAILABLE"}}));
    let out = recode_all(&mut Sse::new(1 << 20, Events::new()), sse(&events).as_bytes(), 5).unwrap();
    let (summary, raw) = transformed(&out);
    assert_eq!(
        (summary.finish_reason, summary.error.as_deref()),
        (
            FinishReason::Error,
            Some("The model is overloaded. Please try again later.")
        )
    );
    assert!(!raw.contains(&"[DONE]".to_string()));
    // Cut before the event with `finishReason`: the connection ended, nothing finished.
    let text = sse(&thinking_tool_stream()[..3]);
    for cut in [text.len(), text.len() - 9] {
        let out = recode_all(&mut Sse::new(1 << 20, Events::new()), &text.as_bytes()[..cut], 11).unwrap();
        let (summary, raw) = transformed(&out);
        assert_eq!(summary.finish_reason, FinishReason::Error, "cut at {cut}");
        assert!(!raw.contains(&"[DONE]".to_string()));
    }
    let err = recode_all(
        &mut Sse::new(64, Events::new()),
        sse(&thinking_tool_stream()).as_bytes(),
        1 << 16,
    )
    .unwrap_err();
    assert!(err.to_string().contains("unusable"), "{err}");
}

#[test]
fn finish_reasons_and_a_blocked_prompt() {
    let answer = |reason: &str| json!({"candidates": [{"content": {"parts": [{"text": "x"}], "role": "model"}, "finishReason": reason}]});
    for (reason, openai) in [
        ("STOP", "stop"),
        ("MAX_TOKENS", "length"),
        ("SAFETY", "content_filter"),
        ("RECITATION", "content_filter"),
        ("PROHIBITED_CONTENT", "content_filter"),
        ("OTHER", "stop"),
    ] {
        let c = gemini_answer::completion(answer(reason));
        assert_eq!(c["choices"][0]["finish_reason"], openai, "{reason}");
    }
    let blocked = json!({"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": {"promptTokenCount": 8, "totalTokenCount": 8}});
    let out = recode_all(
        &mut Sse::new(1 << 20, Events::new()),
        sse(&[blocked]).as_bytes(),
        4,
    )
    .unwrap();
    let (summary, raw) = transformed(&out);
    assert_eq!(summary.finish_reason, FinishReason::ContentFilter);
    assert_eq!(raw.last().map(String::as_str), Some("[DONE]"));
}

#[test]
fn a_whole_gemini_answer_and_its_errors_read_as_openai() {
    let answer = json!({"candidates": [{"content": {"parts": [
            {"text": "The user asks for a meeting.", "thought": true},
            {"functionCall": {"name": "schedule_meeting", "args": {"attendees": ["Bob", "Alice"], "date": "2025-03-27", "time": "10:00", "topic": "Q3 planning"}}}],
        "role": "model"}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 111, "candidatesTokenCount": 34, "totalTokenCount": 145},
        "modelVersion": "gemini-2.5-flash", "responseId": "resp-1"});
    let completion = gemini_answer::completion(answer.clone());
    let message = &completion["choices"][0]["message"];
    assert_eq!(message["reasoning_content"], "The user asks for a meeting.");
    assert_eq!(message["tool_calls"][0]["function"]["name"], "schedule_meeting");
    assert!(message["tool_calls"][0].get("index").is_none());
    assert_eq!(
        (
            &completion["choices"][0]["finish_reason"],
            &completion["usage"]["total_tokens"]
        ),
        (&json!("tool_calls"), &json!(145))
    );
    let mut whole = Whole::stream(1 << 20, gemini_answer::completion);
    let (summary, _) = transformed(&recode_all(&mut whole, answer.to_string().as_bytes(), 13).unwrap());
    assert_eq!(
        summary.tool_calls[0].arguments.as_ref().unwrap()["topic"],
        "Q3 planning"
    );
    let mut errors = Whole::errors(1 << 20);
    let body = br#"{"error": {"code": 400, "message": "API key not valid. Please pass a valid API key.", "status": "INVALID_ARGUMENT"}}"#;
    let v: Value = serde_json::from_slice(&recode_all(&mut errors, body, 7).unwrap()).unwrap();
    assert_eq!(
        v["error"]["message"],
        "API key not valid. Please pass a valid API key."
    );
}

#[test]
fn an_openai_request_as_gemini_takes_it() {
    let route = route(
        "options = { topK = 40, thinkingConfig = { thinkingBudget = 1024 } }\nthink = true",
        "gemini-2.5-flash",
    );
    assert_eq!(route.provider.base.path, "/v1beta");
    let body = json!({"model": "gemini-2.5-flash", "stream": true, "temperature": 0.2, "top_p": 0.9,
    "max_tokens": 500, "stop": "END", "seed": 3, "tool_choice": {"type": "function", "function": {"name": "get_weather"}},
    "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather",
        "parameters": {"type": "object", "$schema": "http://json-schema.org/draft-07/schema#", "additionalProperties": false,
            "properties": {"location": {"type": "string"}, "unit": {"type": ["string", "null"], "enum": ["c", "f"]}},
            "required": ["location"]}}},
        {"type": "function", "function": {"name": "now", "parameters": {"type": "object", "properties": {}}}}],
    "messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "developer", "content": "Use metric."},
        {"role": "user", "content": [{"type": "text", "text": "Weather here?"},
            {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,/9j/4AAQ"}}]},
        {"role": "assistant", "content": "Checking.", "reasoning_content": "hmm", "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"location\":\"Paris\"}"}},
            {"id": "call_2", "type": "function", "function": {"name": "now", "arguments": ""}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "{\"celsius\": 22}"},
        {"role": "tool", "tool_call_id": "call_2", "content": "noon"},
        {"role": "user", "content": "Thanks"},
    ]});
    let call = prepare(&route, &body).unwrap();
    assert_eq!(
        (call.path.as_str(), call.streams),
        ("/models/gemini-2.5-flash:streamGenerateContent?alt=sse", true)
    );
    assert_eq!(
        body_of(&call),
        json!({
        "systemInstruction": {"parts": [{"text": "Be brief.\n\nUse metric."}]},
        "contents": [
            {"role": "user", "parts": [{"text": "Weather here?"}, {"inlineData": {"mimeType": "image/jpeg", "data": "/9j/4AAQ"}}]},
            {"role": "model", "parts": [{"text": "Checking."},
                {"functionCall": {"name": "get_weather", "args": {"location": "Paris"}}, "thoughtSignature": "skip_thought_signature_validator"},
                {"functionCall": {"name": "now", "args": {}}}]},
            {"role": "user", "parts": [
                {"functionResponse": {"name": "get_weather", "response": {"celsius": 22}}},
                {"functionResponse": {"name": "now", "response": {"result": "noon"}}},
                {"text": "Thanks"}]},
        ],
        "tools": [{"functionDeclarations": [
            {"name": "get_weather", "description": "Weather", "parameters": {"type": "object",
                "properties": {"location": {"type": "string"}, "unit": {"type": "string", "nullable": true, "enum": ["c", "f"]}},
                "required": ["location"]}},
            {"name": "now"}]}],
        "toolConfig": {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["get_weather"]}},
        "generationConfig": {"topK": 40, "thinkingConfig": {"thinkingBudget": 1024, "includeThoughts": true},
            "temperature": 0.2, "topP": 0.9, "maxOutputTokens": 500, "stopSequences": ["END"], "seed": 3},
        })
    );
    let unstreamed = prepare(
        &route,
        &json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]}),
    )
    .unwrap();
    assert_eq!(unstreamed.path, "/models/gemini-2.5-flash:generateContent");
    assert!(!String::from_utf8_lossy(&unstreamed.body).contains("key"));
}

#[test]
fn what_gemini_cannot_take_is_a_clear_error() {
    let ok = route("", "gemini-2.5-pro");
    for (body, says) in [
        (
            json!({"messages": [{"role": "function", "content": "x"}]}),
            "messages[0]: role \"function\"",
        ),
        (
            json!({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "http://x/a.png"}}]}]}),
            "messages[0]: an image URL Gemini cannot fetch",
        ),
        (
            json!({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "https://x/a.bmp?v=1"}}]}]}),
            "does not end in .png",
        ),
        (
            json!({"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function", "function": {"name": "walk",
                "parameters": {"type": "object", "properties": {"n": {"$ref": "#/$defs/N"}},
                               "$defs": {"N": {"type": "object", "properties": {"next": {"$ref": "#/$defs/N"}}}}}}}]}),
            "tools[0] (\"walk\"): its parameters: $ref \"#/$defs/N\" refers to itself",
        ),
        (
            json!({"messages": [{"role": "tool", "tool_call_id": "call_9", "content": "x"}]}),
            "answers \"call_9\", which no earlier assistant message called",
        ),
    ] {
        let err = prepare(&ok, &body).unwrap_err().to_string();
        assert!(err.contains("a gemini provider") && err.contains(says), "{err}");
    }
    let err = prepare(&route("", "../v1/files?x"), &json!({"messages": []})).unwrap_err();
    assert!(err.to_string().contains("is not one Gemini has"), "{err}");
}

#[test]
fn a_function_calls_thought_signature_goes_back_with_it() {
    let answer = json!({"candidates": [{"content": {"role": "model", "parts": [
        {"functionCall": {"name": "check_flight", "args": {"flight": "AA100"}}, "thoughtSignature": "<Sig_A>"}]},
        "finishReason": "STOP"}]});
    let completion = gemini_answer::completion(answer);
    let call = completion["choices"][0]["message"]["tool_calls"][0].clone();
    assert_eq!(call["extra_content"]["google"]["thought_signature"], "<Sig_A>");
    let body = json!({"messages": [
        {"role": "user", "content": "Check flight AA100"},
        {"role": "assistant", "content": null, "tool_calls": [call.clone()]},
        {"role": "tool", "tool_call_id": call["id"], "content": "{\"status\": \"delayed\"}"},
    ]});
    let sent = body_of(&prepare(&route("", "gemini-3-pro-preview"), &body).unwrap());
    assert_eq!(
        sent["contents"][1]["parts"][0],
        json!({"functionCall": {"name": "check_flight", "args": {"flight": "AA100"}}, "thoughtSignature": "<Sig_A>"})
    );
    assert_eq!(
        sent["contents"][2]["parts"][0]["functionResponse"],
        json!({"name": "check_flight", "response": {"status": "delayed"}})
    );
}

#[test]
fn images_by_url_go_as_files() {
    let body = json!({"messages": [{"role": "user", "content": [
        {"type": "text", "text": "Caption these."},
        {"type": "image_url", "image_url": {"url": "https://storage.googleapis.com/generativeai-downloads/images/scones.jpg"}},
        {"type": "image_url", "image_url": {"url": "gs://cloud-samples-data/generative-ai/image/Cat.PNG?x=1#y"}}]}]});
    let sent = body_of(&prepare(&route("", "gemini-2.5-flash"), &body).unwrap());
    assert_eq!(
        sent["contents"][0]["parts"],
        json!([{"text": "Caption these."},
               {"fileData": {"mimeType": "image/jpeg", "fileUri": "https://storage.googleapis.com/generativeai-downloads/images/scones.jpg"}},
               {"fileData": {"mimeType": "image/png", "fileUri": "gs://cloud-samples-data/generative-ai/image/Cat.PNG?x=1#y"}}])
    );
}
