use super::*;

fn checked(v: Value) -> Result<Checked, String> {
    check(v.to_string().as_bytes())
        .map(|(_, c)| c)
        .map_err(|e| e.to_string())
}

#[test]
fn required_fields_are_named_as_anthropic_names_them() {
    let ok = json!({"model": "up/m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]});
    assert_eq!(
        checked(ok.clone()),
        Ok(Checked {
            model: "up/m".into(),
            stream: false,
            has_tools: false
        })
    );
    let without = |key: &str| {
        let mut v = ok.clone();
        v.as_object_mut().unwrap().remove(key);
        checked(v).unwrap_err()
    };
    assert_eq!(without("max_tokens"), "max_tokens: Field required");
    assert_eq!(without("model"), "model: Field required");
    assert_eq!(without("messages"), "messages: Field required");
    let with = |key: &str, value: Value| {
        let mut v = ok.clone();
        v[key] = value;
        checked(v).unwrap_err()
    };
    assert_eq!(
        with("max_tokens", json!(0)),
        "max_tokens: must be an integer of at least 1"
    );
    assert_eq!(
        with("max_tokens", json!("5")),
        "max_tokens: must be an integer of at least 1"
    );
    assert_eq!(
        with("messages", json!([])),
        "messages: must contain at least one message"
    );
    assert_eq!(with("stream", json!("yes")), "stream: must be a boolean");
    assert_eq!(
        with("messages", json!([{"role": "system", "content": "x"}])),
        "messages.0.role: must be \"user\" or \"assistant\""
    );
    assert_eq!(
        with("messages", json!([{"role": "user"}])),
        "messages.0.content: Field required"
    );
    assert!(
        check(b"{not json")
            .unwrap_err()
            .to_string()
            .starts_with("the request body is not valid JSON")
    );
    assert_eq!(
        check(b"[1]").unwrap_err().to_string(),
        "the request body must be a JSON object"
    );
    let streamed = checked(
        json!({"model": "m", "max_tokens": 1, "stream": true, "tools": [{"name": "t"}],
        "messages": [{"role": "user", "content": []}]}),
    )
    .unwrap();
    assert!(streamed.stream && streamed.has_tools);
}

#[test]
fn a_tool_round_trip_translates_to_openai_messages_and_tools() {
    let body = json!({
        "model": "up/m", "max_tokens": 100, "temperature": 0.5, "top_k": 3,
        "stop_sequences": ["END"], "metadata": {"user_id": "u-1"},
        "system": [{"type": "text", "text": "be brief"}, {"type": "text", "text": "be kind"}],
        "tools": [{"name": "get_weather", "description": "Weather", "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}],
        "tool_choice": {"type": "any", "disable_parallel_tool_use": true},
        "messages": [
            {"role": "user", "content": "weather in Paris?"},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "hmm", "signature": "s"},
                {"type": "text", "text": "Checking."},
                {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "18C"}]},
                {"type": "text", "text": "and?"}
            ]},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_2", "name": "get_weather", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_2", "content": "down", "is_error": true}]}
        ]
    });
    let out = to_openai(&body, "m").unwrap();
    assert_eq!(
        out["messages"],
        json!([
            {"role": "system", "content": "be brief\n\nbe kind"},
            {"role": "user", "content": "weather in Paris?"},
            {"role": "assistant", "content": "Checking.",
             "extra_content": {"anthropic": {"thinking_blocks": [{"type": "thinking", "thinking": "hmm", "signature": "s"}]}},
             "tool_calls": [
                {"id": "toolu_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}
            ]},
            {"role": "tool", "tool_call_id": "toolu_1", "content": "18C"},
            {"role": "user", "content": "and?"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "toolu_2", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}
            ]},
            {"role": "tool", "tool_call_id": "toolu_2", "content": "{\"error\":\"down\"}"}
        ])
    );
    assert_eq!(out["model"], "m");
    assert_eq!(out["max_tokens"], 100);
    assert_eq!(out["temperature"], 0.5);
    assert_eq!(out["stop"], json!(["END"]));
    assert_eq!(out["user"], "u-1");
    assert!(out.get("top_k").is_none());
    assert_eq!(
        out["tools"],
        json!([{"type": "function", "function": {"name": "get_weather", "description": "Weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}])
    );
    assert_eq!(out["tool_choice"], "required");
    assert_eq!(out["parallel_tool_calls"], false);
}

#[test]
fn images_become_image_url_parts_and_tool_choices_map() {
    let body = json!({"max_tokens": 1, "messages": [{"role": "user", "content": [
        {"type": "text", "text": "what is this"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}},
        {"type": "image", "source": {"type": "url", "url": "https://example.com/a.jpg"}}
    ]}]});
    let out = to_openai(&body, "m").unwrap();
    assert_eq!(
        out["messages"][0]["content"],
        json!([
            {"type": "text", "text": "what is this"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
            {"type": "image_url", "image_url": {"url": "https://example.com/a.jpg"}}
        ])
    );
    let choice = |c: Value| {
        let body = json!({"messages": [], "tools": [{"name": "t", "input_schema": {}}], "tool_choice": c});
        to_openai(&body, "m").map(|o| o["tool_choice"].clone())
    };
    assert_eq!(choice(json!({"type": "auto"})).unwrap(), "auto");
    assert_eq!(choice(json!({"type": "none"})).unwrap(), "none");
    assert_eq!(
        choice(json!({"type": "tool", "name": "t"})).unwrap(),
        json!({"type": "function", "function": {"name": "t"}})
    );
    assert!(choice(json!({"type": "sometimes"})).is_err());
}

#[test]
fn what_cannot_be_forwarded_is_refused_by_name() {
    let refused = |body: Value| to_openai(&body, "m").unwrap_err().to_string();
    assert_eq!(
        refused(json!({"messages": [], "tools": [{"type": "web_search_20250305", "name": "web_search"}]})),
        "tools.0.type: the server tool \"web_search_20250305\" (only custom tools can be forwarded) is not \
         supported: this hub forwards requests to OpenAI-compatible providers"
    );
    assert!(
        refused(json!({"messages": [{"role": "user", "content": [{"type": "document", "source": {}}]}]}))
            .starts_with("messages.0.content.0: a \"document\" block in a user message is not supported")
    );
    assert_eq!(
        refused(json!({"messages": [], "tools": [{"name": "t"}]})),
        "tools.0.input_schema: Field required"
    );
    assert_eq!(
        refused(json!({"system": 5, "messages": []})),
        "system: must be a string or an array of text blocks"
    );
    assert_eq!(
        refused(
            json!({"messages": [{"role": "user", "content": [{"type": "image", "source": {"type": "base64"}}]}]})
        ),
        "messages.0.content.0.source: a base64 image needs media_type and data"
    );
}
