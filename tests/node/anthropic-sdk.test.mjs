// The official Anthropic SDK (`@anthropic-ai/sdk`, pinned) against the hub's
// Anthropic Messages surface, with a scripted OpenAI-compatible upstream: plain
// text (collected and streamed), a tool-use round trip with the client's own tool,
// the hub's own tools (`x-wasmhub-tools: hub`, a real calc plugin), error shapes and
// statuses, usage, and the model list.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import path from "node:path";
import { fileURLToPath } from "node:url";
import Anthropic from "@anthropic-ai/sdk";
import { startAnthropicUpstream } from "./lib/anthropic-upstream.mjs";
import { startHub } from "./lib/hub.mjs";

const TOKEN = "sk-hub-anthropic-test";
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const CALC = path.resolve(root, process.env.WASMHUB_PLUGINS ?? "dist/plugins", "calc.wasm");
const WEATHER_TOOL = {
  name: "get_weather",
  description: "Current weather of a city",
  input_schema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
};

let upstream;
let hub;
let client;
before(async () => {
  upstream = await startAnthropicUpstream();
  hub = await startHub(upstream.baseUrl, { plugins: [CALC], tokens: { sdk: TOKEN } });
  client = new Anthropic({ baseURL: hub.url, apiKey: TOKEN, maxRetries: 0 });
});
after(async () => {
  await hub?.stop();
  await upstream?.close();
});

const ask = (model, extra = {}) => ({
  model,
  max_tokens: 64,
  messages: [{ role: "user", content: "Hi there" }],
  ...extra,
});

test("a collected answer: text, stop reason, usage, and what the upstream got", async () => {
  const message = await client.messages.create(ask("up/text", { system: "Be brief.", temperature: 0.2 }));
  assert.equal(message.type, "message");
  assert.equal(message.role, "assistant");
  assert.equal(message.model, "up/text");
  assert.match(message.id, /^msg_/);
  assert.deepEqual(message.content, [{ type: "text", text: "Hello world" }]);
  assert.equal(message.stop_reason, "end_turn");
  assert.deepEqual(message.usage, { input_tokens: 11, output_tokens: 2 });
  const sent = upstream.requests.at(-1);
  assert.equal(sent.body.model, "text");
  assert.equal(sent.body.stream, true, "the upstream always streams");
  assert.equal(sent.body.max_tokens, 64);
  assert.equal(sent.body.temperature, 0.2);
  assert.deepEqual(sent.body.messages, [
    { role: "system", content: "Be brief." },
    { role: "user", content: "Hi there" },
  ]);
  assert.equal(sent.headers.authorization, undefined, "the client's key is not forwarded");
  assert.equal(sent.headers["x-api-key"], undefined);
});

test("a streamed answer: Anthropic's event sequence, text events and the final message", async () => {
  const stream = client.messages.stream(ask("up/text"));
  const texts = [];
  stream.on("text", (t) => texts.push(t));
  const events = [];
  for await (const event of stream) events.push(event.type);
  assert.deepEqual(events, [
    "message_start",
    "content_block_start",
    "content_block_delta",
    "content_block_delta",
    "content_block_stop",
    "message_delta",
    "message_stop",
  ]);
  assert.deepEqual(texts, ["Hello", " world"]);
  const message = await stream.finalMessage();
  assert.deepEqual(message.content, [{ type: "text", text: "Hello world" }]);
  assert.equal(message.stop_reason, "end_turn");
  assert.equal(message.usage.input_tokens, 11);
  assert.equal(message.usage.output_tokens, 2);
  // The wire itself: named events, a ping after message_start.
  const raw = await (await fetch(`${hub.url}/v1/messages`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-api-key": TOKEN, "anthropic-version": "2023-06-01" },
    body: JSON.stringify({ ...ask("up/text"), stream: true }),
  })).text();
  const names = raw.split("\n\n").filter(Boolean).map((frame) => frame.split("\n")[0]);
  assert.deepEqual(names.slice(0, 3), ["event: message_start", "event: ping", "event: content_block_start"]);
  assert.equal(names.at(-1), "event: message_stop");
});

test("tool use round trip: tool_use block, tool_result back, the final text", async () => {
  const params = { ...ask("up/weather", { tools: [WEATHER_TOOL] }), messages: [{ role: "user", content: "Weather in Paris?" }] };
  const stream = client.messages.stream(params);
  const first = await stream.finalMessage();
  assert.equal(first.stop_reason, "tool_use");
  assert.deepEqual(first.content, [
    { type: "text", text: "Let me check." },
    { type: "tool_use", id: "call_w1", name: "get_weather", input: { city: "Paris" } },
  ]);
  const toolRequest = upstream.requests.at(-1).body;
  assert.deepEqual(toolRequest.tools, [
    { type: "function", function: { name: "get_weather", description: WEATHER_TOOL.description, parameters: WEATHER_TOOL.input_schema } },
  ]);
  const toolUse = first.content.find((b) => b.type === "tool_use");
  const second = await client.messages.create({
    ...params,
    messages: [
      ...params.messages,
      { role: "assistant", content: first.content },
      { role: "user", content: [{ type: "tool_result", tool_use_id: toolUse.id, content: "18°C" }] },
    ],
  });
  assert.deepEqual(second.content, [{ type: "text", text: "It is 18°C in Paris." }]);
  assert.equal(second.stop_reason, "end_turn");
  const sent = upstream.requests.at(-1).body.messages;
  assert.deepEqual(sent.slice(1), [
    {
      role: "assistant",
      content: "Let me check.",
      tool_calls: [{ id: "call_w1", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } }],
    },
    { role: "tool", tool_call_id: "call_w1", content: "18°C" },
  ]);
});

test("hub tools: the hub runs hub_call on the calc plugin and the client gets the answer", async () => {
  const options = { headers: { "x-wasmhub-tools": "hub" } };
  const params = { ...ask("up/hub"), messages: [{ role: "user", content: "What is 6*7?" }] };
  const message = await client.messages.create(params, options);
  assert.equal(message.stop_reason, "end_turn");
  assert.deepEqual(
    message.content.map((b) => b.type),
    ["mcp_tool_use", "mcp_tool_result", "text"],
  );
  assert.equal(message.content[0].name, "hub_call");
  assert.equal(message.content[0].server_name, "wasmhub");
  assert.deepEqual(message.content[0].input, { calls: [{ tool: "calc.eval", input: { expression: "6*7" } }] });
  const [result] = JSON.parse(message.content[1].content[0].text).results;
  assert.equal(result.ok, true);
  assert.equal(result.result.decimal, "42");
  assert.equal(message.content[2].text, "6*7 = 42");
  assert.deepEqual(message.usage, { input_tokens: 22, output_tokens: 4 }, "both steps' usage");
  const step = upstream.requests.at(-1).body;
  assert.deepEqual(step.tools.map((t) => t.function.name).sort(), ["hub_call", "hub_list", "hub_schema", "hub_search"]);
  // Streamed, the SDK sees the same answer.
  const stream = client.messages.stream(params, options);
  const texts = [];
  stream.on("text", (t) => texts.push(t));
  const streamed = await stream.finalMessage();
  assert.deepEqual(texts, ["6*7 = 42"]);
  assert.deepEqual(streamed.content.map((b) => b.type), ["mcp_tool_use", "mcp_tool_result", "text"]);
  // The Messages API is stateless: the turns left no sessions behind.
  const sessions = await (await fetch(`${hub.url}/api/sessions`, { headers: { authorization: `Bearer ${TOKEN}` } })).json();
  assert.deepEqual(sessions.sessions, []);
  // The hub's tools and the client's own do not mix.
  await assert.rejects(
    client.messages.create({ ...params, tools: [WEATHER_TOOL] }, options),
    (e) => e instanceof Anthropic.BadRequestError && /may not send tools/.test(e.message),
  );
});

test("errors: Anthropic's shape with the right status and type", async () => {
  const post = (body, headers = {}) =>
    fetch(`${hub.url}/v1/messages`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": TOKEN, ...headers },
      body,
    });
  const bad = await post("{not json");
  assert.equal(bad.status, 400);
  const badBody = await bad.json();
  assert.equal(badBody.type, "error");
  assert.equal(badBody.error.type, "invalid_request_error");
  assert.match(badBody.error.message, /not valid JSON/);

  await assert.rejects(
    client.messages.create({ model: "up/text", messages: [{ role: "user", content: "hi" }] }),
    (e) =>
      e instanceof Anthropic.BadRequestError &&
      e.status === 400 &&
      e.error.type === "error" &&
      e.error.error.type === "invalid_request_error" &&
      e.error.error.message === "max_tokens: Field required",
  );
  const stranger = new Anthropic({ baseURL: hub.url, apiKey: "wrong-key", maxRetries: 0 });
  await assert.rejects(
    stranger.messages.create(ask("up/text")),
    (e) => e instanceof Anthropic.AuthenticationError && e.status === 401 && e.error.error.type === "authentication_error",
  );
  const bearer = new Anthropic({ baseURL: hub.url, apiKey: null, authToken: TOKEN, maxRetries: 0 });
  assert.equal((await bearer.messages.create(ask("up/text"))).content[0].text, "Hello world", "a bearer token works too");
  await assert.rejects(
    client.messages.create(ask("up/status:429")),
    (e) =>
      e instanceof Anthropic.RateLimitError &&
      e.error.error.type === "rate_limit_error" &&
      /scripted 429/.test(e.message) &&
      e.headers.get("retry-after") === "120",
  );
});

test("a mid-stream upstream error ends the stream with an error event", async () => {
  const stream = client.messages.stream(ask("up/error-midstream"));
  const texts = [];
  stream.on("text", (t) => texts.push(t));
  await assert.rejects(stream.finalMessage(), (e) => e instanceof Anthropic.APIError && /had an error/.test(e.message));
  assert.deepEqual(texts, ["Hel", "lo"]);
  // Collected, the same failure is a 502 api_error.
  await assert.rejects(
    client.messages.create(ask("up/error-midstream")),
    (e) => e instanceof Anthropic.InternalServerError && e.status === 502 && e.error.error.type === "api_error",
  );
});

test("the model list in Anthropic's shape", async () => {
  const models = [];
  for await (const m of client.models.list()) models.push(m);
  // One entry per provider of the test hub (`up`, `once`, `local`: one scripted upstream).
  assert.deepEqual(
    models,
    ["up", "once", "local"].map((p) => ({
      type: "model",
      id: `${p}/gpt-4o`,
      display_name: `${p}/gpt-4o`,
      created_at: "2026-01-01T00:00:00.000Z",
    })),
  );
  // Without anthropic-version the same route answers in OpenAI's shape.
  const openai = await (await fetch(`${hub.url}/v1/models`, { headers: { authorization: `Bearer ${TOKEN}` } })).json();
  assert.equal(openai.object, "list");
});
