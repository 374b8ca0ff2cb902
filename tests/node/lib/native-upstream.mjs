// A scripted upstream speaking the providers' native APIs, on 127.0.0.1, for
// kinds.test.mjs: Anthropic's Messages API (`POST /v1/messages`, named SSE
// events), Ollama's (`POST /api/chat`, NDJSON) and Gemini's (`POST
// /v1/models/{model}:streamGenerateContent?alt=sse`, SSE of whole responses, or
// `:generateContent`). Shapes from the providers' published examples (Anthropic
// "Streaming Messages" and "Messages"; Ollama docs/api.md "Generate a chat
// completion"; Gemini API "Generating content", "Thinking", "Function
// calling"). The model picks the script:
//   text      thinking "Greeting back.", then "Hello world", usage 11 in / 2 out
//   weather   a get_weather call with {"city": "Paris"}
//   redacted  withheld reasoning (a `redacted_thinking` block), then the same call
//   hub       the agent loop's tool round: a hub_call of calc.eval {"6*7"} while
//             the conversation holds no tool result, then the text "6*7 = 42"
//   status-N  the provider's own error body with status N (429 with Retry-After: 7)
//   cut       "Hel", "lo", then the body ends before the provider's terminal event
//   error-midstream  "Hel", "lo", then the provider's mid-stream error
// A request with `stream: false` (for Gemini, to `:generateContent`) gets the
// whole answer. Every request is recorded. The fault scripts are in
// native-faults.mjs.
import http from "node:http";
import { faultAnswer, hubAnswer } from "./native-faults.mjs";

const THINKING = "Greeting back.";
const TEXT = ["Hello", " world"];
// Anthropic's withheld reasoning: encrypted, opaque, to be sent back as it came.
export const REDACTED = { type: "redacted_thinking", data: "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpPkNRj2YfWXGmKDxH4mPnZ5sQ7vB5URj" };

function anthropicEvents(model) {
  const start = { type: "message_start", message: { id: "msg_01native", type: "message", role: "assistant", content: [],
    model: "claude-opus-4-6", stop_reason: null, stop_sequence: null, usage: { input_tokens: 11, output_tokens: 1 } } };
  const end = (reason) => [
    { type: "message_delta", delta: { stop_reason: reason, stop_sequence: null }, usage: { output_tokens: 2 } },
    { type: "message_stop" },
  ];
  if (model === "redacted") {
    return [start,
      { type: "content_block_start", index: 0, content_block: REDACTED },
      { type: "content_block_stop", index: 0 },
      { type: "content_block_start", index: 1, content_block: { type: "tool_use", id: "toolu_01native", name: "get_weather", input: {} } },
      { type: "content_block_delta", index: 1, delta: { type: "input_json_delta", partial_json: "{\"city\": \"Paris\"}" } },
      { type: "content_block_stop", index: 1 }, ...end("tool_use")];
  }
  if (model === "weather") {
    return [start,
      { type: "content_block_start", index: 0, content_block: { type: "thinking", thinking: "" } },
      { type: "content_block_delta", index: 0, delta: { type: "thinking_delta", thinking: "The weather tool." } },
      { type: "content_block_delta", index: 0, delta: { type: "signature_delta", signature: "EqQBCgIYAhIMweather" } },
      { type: "content_block_stop", index: 0 },
      { type: "content_block_start", index: 1, content_block: { type: "tool_use", id: "toolu_01native", name: "get_weather", input: {} } },
      { type: "content_block_delta", index: 1, delta: { type: "input_json_delta", partial_json: "{\"city\":" } },
      { type: "content_block_delta", index: 1, delta: { type: "input_json_delta", partial_json: " \"Paris\"}" } },
      { type: "content_block_stop", index: 1 }, ...end("tool_use")];
  }
  return [start,
    { type: "content_block_start", index: 0, content_block: { type: "thinking", thinking: "" } },
    { type: "content_block_delta", index: 0, delta: { type: "thinking_delta", thinking: THINKING } },
    { type: "content_block_delta", index: 0, delta: { type: "signature_delta", signature: "EqQBCgIYAhIM" } },
    { type: "content_block_stop", index: 0 },
    { type: "content_block_start", index: 1, content_block: { type: "text", text: "" } },
    ...TEXT.map((text) => ({ type: "content_block_delta", index: 1, delta: { type: "text_delta", text } })),
    { type: "content_block_stop", index: 1 }, ...end("end_turn")];
}

function anthropicWhole(model) {
  if (model === "redacted") {
    return { id: "msg_01native", type: "message", role: "assistant", model: "claude-opus-4-6",
      content: [REDACTED, { type: "tool_use", id: "toolu_01native", name: "get_weather", input: { city: "Paris" } }],
      stop_reason: "tool_use", stop_sequence: null, usage: { input_tokens: 11, output_tokens: 2 } };
  }
  const content = model === "weather"
    ? [{ type: "thinking", thinking: "The weather tool.", signature: "EqQBCgIYAhIMweather" },
      { type: "tool_use", id: "toolu_01native", name: "get_weather", input: { city: "Paris" } }]
    : [{ type: "thinking", thinking: THINKING, signature: "EqQBCgIYAhIM" }, { type: "text", text: TEXT.join("") }];
  return { id: "msg_01native", type: "message", role: "assistant", model: "claude-opus-4-6", content,
    stop_reason: model === "weather" ? "tool_use" : "end_turn", stop_sequence: null, usage: { input_tokens: 11, output_tokens: 2 } };
}

function ollamaLines(model) {
  const line = (message, extra = {}) => ({ model, created_at: "2023-08-04T08:52:19.385406455-07:00", message: { role: "assistant", content: "", ...message }, done: false, ...extra });
  const done = line({}, { done: true, done_reason: "stop", prompt_eval_count: 11, eval_count: 2 });
  if (model === "weather") {
    return [{ ...done, message: { role: "assistant", content: "", tool_calls: [{ function: { name: "get_weather", arguments: { city: "Paris" } } }] } }];
  }
  return [line({ thinking: THINKING }), ...TEXT.map((content) => line({ content })), done];
}

function geminiResponses(model) {
  const response = (parts, finish) => ({ candidates: [{ content: { role: "model", parts }, index: 0, ...(finish ? { finishReason: finish } : {}) }],
    modelVersion: "gemini-2.5-flash", responseId: "mAitaLmkHPPlz7IPvtfUqQ4",
    ...(finish ? { usageMetadata: { promptTokenCount: 11, candidatesTokenCount: 2, totalTokenCount: 13 } } : {}) });
  if (model === "weather") return [response([{ functionCall: { name: "get_weather", args: { city: "Paris" } }, thoughtSignature: "c2lnLW5hdGl2ZQ==" }], "STOP")];
  return [response([{ text: THINKING, thought: true }]), response([{ text: TEXT[0] }]), response([{ text: TEXT[1] }], "STOP")];
}

function gemini(res, model, stream) {
  const responses = geminiResponses(model);
  if (!stream) {
    const parts = responses.flatMap((r) => r.candidates[0].content.parts);
    const last = responses.at(-1);
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ ...last, candidates: [{ ...last.candidates[0], content: { role: "model", parts } }] }));
    return;
  }
  res.writeHead(200, { "content-type": "text/event-stream" });
  for (const r of responses) res.write(`data: ${JSON.stringify(r)}\r\n\r\n`);
  res.end();
}

function answer(req, res, body) {
  const stream = body.stream !== false;
  const generate = req.url.match(/^\/v1\/models\/([\w.-]+):(streamGenerateContent\?alt=sse|generateContent)$/);
  const dialect = generate ? "gemini" : { "/v1/messages": "anthropic", "/api/chat": "ollama" }[req.url];
  const model = generate ? generate[1] : body.model;
  if (dialect && faultAnswer(dialect, model, res)) return;
  if (dialect && model === "hub") {
    hubAnswer(dialect, body, generate ? generate[2] !== "generateContent" : stream, res);
    return;
  }
  if (generate) {
    gemini(res, generate[1], generate[2] !== "generateContent");
    return;
  }
  if (req.url === "/v1/messages") {
    if (!stream) {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify(anthropicWhole(body.model)));
      return;
    }
    res.writeHead(200, { "content-type": "text/event-stream" });
    for (const e of anthropicEvents(body.model)) res.write(`event: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`);
    res.end();
    return;
  }
  if (req.url === "/api/chat") {
    const lines = ollamaLines(body.model);
    if (!stream) {
      const whole = lines.at(-1);
      const text = lines.map((l) => l.message.content).join("");
      const thinking = lines.map((l) => l.message.thinking ?? "").join("");
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ ...whole, message: { ...whole.message, content: text, ...(thinking ? { thinking } : {}) } }));
      return;
    }
    res.writeHead(200, { "content-type": "application/x-ndjson" });
    for (const l of lines) res.write(`${JSON.stringify(l)}\n`);
    res.end();
    return;
  }
  res.writeHead(404, { "content-type": "application/json" });
  res.end(JSON.stringify({ error: `no script for ${req.url}` }));
}

export async function startNativeUpstream() {
  const requests = [];
  const server = http.createServer((req, res) => {
    let raw = "";
    req.on("data", (d) => (raw += d));
    req.on("end", () => {
      const body = raw ? JSON.parse(raw) : {};
      requests.push({ method: req.method, url: req.url, headers: req.headers, body });
      answer(req, res, body);
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address();
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(resolve); }),
  };
}

/**
 * The hub's config lines for providers `claude` (kind anthropic), `llama` (ollama)
 * and `gem` (gemini) on `upstream`, keyed by WASMHUB_TEST_NATIVE_KEY (set here),
 * without retries.
 */
export function nativeProviders(upstream) {
  process.env.WASMHUB_TEST_NATIVE_KEY = "sk-ant-node-native";
  const provider = (name, kind) => [
    "[[providers]]", `name = "${name}"`, `kind = "${kind}"`, `base_url = ${JSON.stringify(upstream.baseUrl)}`,
    'api_key_env = "WASMHUB_TEST_NATIVE_KEY"', "max_retries = 0",
  ];
  return [...provider("claude", "anthropic"), ...provider("llama", "ollama"), ...provider("gem", "gemini")];
}
