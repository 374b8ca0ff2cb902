// The native upstream's (native-upstream.mjs) fault scripts and the agent loop's
// tool round, in each provider's own wire format: error bodies (Anthropic
// "Errors": `{"type":"error","error":{type,message}}`, 529 overloaded_error and a
// mid-stream `event: error`; Gemini "Troubleshooting"/google.rpc.Status:
// `{"error":{code,message,status}}`, also as an SSE event; Ollama docs/api.md:
// `{"error":"..."}`, also as an NDJSON line), streams cut before their terminal
// event, and a hub_call round ended by the text "6*7 = 42".

const ERRORS = {
  400: ["invalid_request_error", "INVALID_ARGUMENT", "messages: text content blocks must be non-empty"],
  401: ["authentication_error", "UNAUTHENTICATED", "invalid x-api-key"],
  429: ["rate_limit_error", "RESOURCE_EXHAUSTED", "Number of request tokens has exceeded your per-minute rate limit"],
  503: ["overloaded_error", "UNAVAILABLE", "The model is overloaded. Please try again later."],
  529: ["overloaded_error", "UNAVAILABLE", "Overloaded"],
};

/** The provider's error body for a status. */
export function errorBody(dialect, status) {
  const [type, rpc, message] = ERRORS[status];
  if (dialect === "anthropic") return { type: "error", error: { type, message } };
  if (dialect === "gemini") return { error: { code: status, message, status: rpc } };
  return { error: message };
}

export const MIDSTREAM_MESSAGE = { anthropic: "Overloaded", gemini: "The model is overloaded. Please try again later.", ollama: "an error was encountered while running the model: unexpected EOF" };

/** One stream in a dialect: `open` starts it, `text`/`tool` add to it, `end` finishes it. */
function writer(dialect, res) {
  const anthropicEvent = (e) => res.write(`event: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`);
  const geminiEvent = (parts, extra = {}) =>
    res.write(`data: ${JSON.stringify({ candidates: [{ content: { role: "model", parts }, index: 0, ...extra }], modelVersion: "gemini-2.5-flash" })}\r\n\r\n`);
  const ollamaLine = (message, extra = {}) =>
    res.write(`${JSON.stringify({ model: "llama3.2", created_at: "2025-01-01T00:00:00Z", message: { role: "assistant", content: "", ...message }, done: false, ...extra })}\n`);
  let block = 0;
  return {
    open() {
      res.writeHead(200, { "content-type": { anthropic: "text/event-stream", gemini: "text/event-stream", ollama: "application/x-ndjson" }[dialect] });
      if (dialect === "anthropic") {
        anthropicEvent({ type: "message_start", message: { id: "msg_01fault", type: "message", role: "assistant", content: [], model: "claude-opus-4-6",
          stop_reason: null, stop_sequence: null, usage: { input_tokens: 11, output_tokens: 1 } } });
      }
    },
    text(pieces) {
      if (dialect === "anthropic") {
        anthropicEvent({ type: "content_block_start", index: block, content_block: { type: "text", text: "" } });
        for (const text of pieces) anthropicEvent({ type: "content_block_delta", index: block, delta: { type: "text_delta", text } });
        anthropicEvent({ type: "content_block_stop", index: block++ });
      } else if (dialect === "gemini") {
        for (const text of pieces) geminiEvent([{ text }]);
      } else {
        for (const content of pieces) ollamaLine({ content });
      }
    },
    tool(name, args) {
      if (dialect === "anthropic") {
        anthropicEvent({ type: "content_block_start", index: block, content_block: { type: "tool_use", id: "toolu_01hub", name, input: {} } });
        anthropicEvent({ type: "content_block_delta", index: block, delta: { type: "input_json_delta", partial_json: JSON.stringify(args) } });
        anthropicEvent({ type: "content_block_stop", index: block++ });
      } else if (dialect === "gemini") {
        geminiEvent([{ functionCall: { name, args } }]);
      } else {
        ollamaLine({ tool_calls: [{ function: { name, arguments: args } }] });
      }
    },
    end(reason) {
      if (dialect === "anthropic") {
        anthropicEvent({ type: "message_delta", delta: { stop_reason: reason, stop_sequence: null }, usage: { output_tokens: 2 } });
        anthropicEvent({ type: "message_stop" });
      } else if (dialect === "gemini") {
        geminiEvent([], { finishReason: "STOP" });
      } else {
        ollamaLine({}, { done: true, done_reason: "stop", prompt_eval_count: 11, eval_count: 2 });
      }
      res.end();
    },
    fail() {
      if (dialect === "anthropic") anthropicEvent({ type: "error", error: { type: "overloaded_error", message: MIDSTREAM_MESSAGE.anthropic } });
      else if (dialect === "gemini") res.write(`data: ${JSON.stringify(errorBody("gemini", 503))}\r\n\r\n`);
      else res.write(`${JSON.stringify({ error: MIDSTREAM_MESSAGE.ollama })}\n`);
      res.end();
    },
  };
}

/** Answers the fault scripts (`status-N`, `cut`, `error-midstream`); false for any other model. */
export function faultAnswer(dialect, model, res) {
  const status = /^status-(\d+)$/.exec(model ?? "");
  if (status) {
    const code = Number(status[1]);
    res.writeHead(code, { "content-type": "application/json", ...(code === 429 ? { "retry-after": "7" } : {}) });
    res.end(JSON.stringify(errorBody(dialect, code)));
    return true;
  }
  if (model !== "cut" && model !== "error-midstream") return false;
  const w = writer(dialect, res);
  w.open();
  w.text(["Hel", "lo"]);
  if (model === "cut") res.end();
  else w.fail();
  return true;
}

/** The tool results the conversation carries, in the dialect's own shape. */
export function toolResults(dialect, body) {
  if (dialect === "anthropic") return (body.messages ?? []).flatMap((m) => (Array.isArray(m.content) ? m.content : [])).filter((b) => b.type === "tool_result");
  if (dialect === "gemini") return (body.contents ?? []).flatMap((c) => c.parts ?? []).filter((p) => p.functionResponse);
  return (body.messages ?? []).filter((m) => m.role === "tool");
}

/** The agent loop's round: hub_call first, the answer once a tool result came back. */
export function hubAnswer(dialect, body, stream, res) {
  const done = toolResults(dialect, body).length > 0;
  const args = { calls: [{ tool: "calc.eval", input: { expression: "6*7" } }] };
  if (!stream) {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify(wholeHubAnswer(dialect, done, args)));
    return;
  }
  const w = writer(dialect, res);
  w.open();
  if (done) w.text(["6*7 = ", "42"]);
  else w.tool("hub_call", args);
  w.end(done ? "end_turn" : "tool_use");
}

function wholeHubAnswer(dialect, done, args) {
  if (dialect === "anthropic") {
    const content = done ? [{ type: "text", text: "6*7 = 42" }] : [{ type: "tool_use", id: "toolu_01hub", name: "hub_call", input: args }];
    return { id: "msg_01hub", type: "message", role: "assistant", model: "claude-opus-4-6", content,
      stop_reason: done ? "end_turn" : "tool_use", stop_sequence: null, usage: { input_tokens: 11, output_tokens: 2 } };
  }
  if (dialect === "gemini") {
    const part = done ? { text: "6*7 = 42" } : { functionCall: { name: "hub_call", args } };
    return { candidates: [{ content: { role: "model", parts: [part] }, index: 0, finishReason: "STOP" }],
      usageMetadata: { promptTokenCount: 11, candidatesTokenCount: 2, totalTokenCount: 13 }, modelVersion: "gemini-2.5-flash" };
  }
  const message = done ? { role: "assistant", content: "6*7 = 42" } : { role: "assistant", content: "", tool_calls: [{ function: { name: "hub_call", arguments: args } }] };
  return { model: "llama3.2", created_at: "2025-01-01T00:00:00Z", message, done: true, done_reason: "stop", prompt_eval_count: 11, eval_count: 2 };
}
