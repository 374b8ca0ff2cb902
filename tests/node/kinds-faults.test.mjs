// What goes wrong, over each native provider kind, read by the real clients:
// the provider's error statuses (400, 401, 429 with Retry-After, overloaded 529 or
// 503) through the openai client, the Anthropic SDK and the AI SDK's transport;
// a stream cut before the provider's terminal event and a provider's mid-stream
// error through the openai client's iteration, the Anthropic SDK's stream and
// readUIMessageStream over both UI streams; the agent loop's tool round over each
// kind (the AI SDK over /api/chat, the Anthropic SDK's hub-tools mode), with what
// each upstream got back in its own dialect; and a fallback chain from an
// overloaded Anthropic target to a Gemini one through the openai client. The
// upstream speaks each provider's own API (lib/native-upstream.mjs and
// lib/native-faults.mjs, from the providers' published examples).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import OpenAI from "openai";
import Anthropic from "@anthropic-ai/sdk";
import * as ai7 from "ai7";
import { nativeProviders, startNativeUpstream } from "./lib/native-upstream.mjs";
import { errorBody, MIDSTREAM_MESSAGE, toolResults } from "./lib/native-faults.mjs";
import { startHub } from "./lib/hub.mjs";

let upstream;
let hub;
let openai;
let anthropic;
before(async () => {
  upstream = await startNativeUpstream();
  const chain = ["[[models]]", 'name = "mixed"', 'targets = ["claude/status-529", "gem/text"]'];
  hub = await startHub(upstream.baseUrl, {
    plugins: [`${process.env.WASMHUB_PLUGINS}/calc.wasm`],
    config: [...nativeProviders(upstream), ...chain],
  });
  openai = new OpenAI({ baseURL: `${hub.url}/v1`, apiKey: "client-key", maxRetries: 0 });
  anthropic = new Anthropic({ baseURL: hub.url, apiKey: "client-key", maxRetries: 0 });
});
after(async () => {
  await hub?.stop();
  await upstream?.close();
});

const KINDS = [
  ["anthropic", "claude", 529],
  ["ollama", "llama", 503],
  ["gemini", "gem", 503],
];
const messages = [{ role: "user", content: "Hi there" }];

/** What an upstream error's message is in the provider's body. */
function upstreamMessage(kind, status) {
  const body = errorBody(kind, status);
  return typeof body.error === "string" ? body.error : body.error.message;
}

/** The AI SDK's assembled message from a UI stream, or what it throws. */
async function uiMessage(surface, model, chatId) {
  const transport =
    surface === "/api/chat"
      ? new ai7.DefaultChatTransport({ api: `${hub.url}/api/chat`, body: { model } })
      : new ai7.DefaultChatTransport({ api: `${hub.url}/api/ui/chat/completions`, prepareSendMessagesRequest: () => ({ body: { model, messages } }) });
  const ui = [{ id: `${chatId}-u1`, role: "user", parts: [{ type: "text", text: "What is 6*7?" }] }];
  const stream = await transport.sendMessages({ chatId, messages: ui, trigger: "submit-message", messageId: undefined, abortSignal: undefined });
  let message;
  for await (const m of ai7.readUIMessageStream({ stream, terminateOnError: true })) message = m;
  return message;
}

/** The openai client's streamed text deltas and what its iteration throws. */
async function openaiDeltas(model) {
  const stream = await openai.chat.completions.create({ model, messages, stream: true });
  const got = [];
  try {
    for await (const c of stream) got.push(c.choices[0]?.delta?.content ?? "");
  } catch (error) {
    return { got: got.filter((t) => t !== ""), error };
  }
  return { got, error: null };
}

/** The Anthropic SDK's streamed texts and what its final message throws. */
async function anthropicTexts(model) {
  const stream = anthropic.messages.stream({ model, max_tokens: 64, messages });
  const texts = [];
  stream.on("text", (t) => texts.push(t));
  try {
    await stream.finalMessage();
  } catch (error) {
    return { texts, error };
  }
  return { texts, error: null };
}

for (const [kind, provider, overloaded] of KINDS) {
  for (const status of [400, 401, 429, overloaded]) {
    test(`${kind}: a ${status} from the provider reaches each client with its status and message`, async () => {
      const model = `${provider}/status-${status}`;
      const message = upstreamMessage(kind, status);
      const fromOpenai = await openai.chat.completions.create({ model, messages }).then(() => null, (e) => e);
      assert.ok(fromOpenai instanceof OpenAI.APIError, `${fromOpenai}`);
      assert.equal(fromOpenai.status, status);
      assert.ok(fromOpenai.message.includes(message), fromOpenai.message);
      const fromAnthropic = await anthropic.messages.create({ model, max_tokens: 64, messages }).then(() => null, (e) => e);
      assert.ok(fromAnthropic instanceof Anthropic.APIError, `${fromAnthropic}`);
      assert.equal(fromAnthropic.status, status);
      assert.ok(fromAnthropic.message.includes(message), fromAnthropic.message);
      if (status === 429) {
        assert.equal(fromOpenai.headers.get("retry-after"), "7");
        assert.equal(fromAnthropic.headers.get("retry-after"), "7");
        assert.ok(fromOpenai instanceof OpenAI.RateLimitError && fromAnthropic instanceof Anthropic.RateLimitError);
      }
      await assert.rejects(uiMessage("/api/ui/chat/completions", model, `status-${kind}-${status}`), (e) => e.message.includes(message));
    });
  }

  test(`${kind}: a stream cut before the provider's terminal event raises in every client`, async () => {
    const model = `${provider}/cut`;
    const fromOpenai = await openaiDeltas(model);
    assert.ok(fromOpenai.error instanceof OpenAI.APIError, `${fromOpenai.error}`);
    assert.equal(fromOpenai.error.code, "upstream_incomplete");
    assert.deepEqual(fromOpenai.got, ["Hel", "lo"]);
    const fromAnthropic = await anthropicTexts(model);
    assert.ok(fromAnthropic.error instanceof Anthropic.APIError, `${fromAnthropic.error}`);
    assert.match(fromAnthropic.error.message, /ended before the response was complete/);
    assert.deepEqual(fromAnthropic.texts, ["Hel", "lo"]);
    for (const surface of ["/api/ui/chat/completions", "/api/chat"]) {
      await assert.rejects(uiMessage(surface, model, `cut-${kind}-${surface.length}`), /ended before the response was complete/);
    }
  });

  test(`${kind}: a provider's mid-stream error raises in every client with its message`, async () => {
    const model = `${provider}/error-midstream`;
    const message = MIDSTREAM_MESSAGE[kind];
    const fromOpenai = await openaiDeltas(model);
    assert.ok(fromOpenai.error instanceof OpenAI.APIError, `${fromOpenai.error}`);
    assert.ok(fromOpenai.error.message.includes(message), fromOpenai.error.message);
    assert.deepEqual(fromOpenai.got, ["Hel", "lo"]);
    const fromAnthropic = await anthropicTexts(model);
    assert.ok(fromAnthropic.error instanceof Anthropic.APIError, `${fromAnthropic.error}`);
    assert.ok(fromAnthropic.error.message.includes(message), fromAnthropic.error.message);
    for (const surface of ["/api/ui/chat/completions", "/api/chat"]) {
      await assert.rejects(uiMessage(surface, model, `mid-${kind}-${surface.length}`), (e) => e.message.includes(message));
    }
  });

  test(`${kind}: the agent loop's tool round runs hub_call and sends the result back in the provider's dialect`, async () => {
    const before = upstream.requests.length;
    const message = await uiMessage("/api/chat", `${provider}/hub`, `hub-${kind}`);
    const tool = message.parts.find((p) => p.type === "tool-hub_call" || (p.type === "dynamic-tool" && p.toolName === "hub_call"));
    assert.ok(tool, JSON.stringify(message.parts));
    assert.equal(tool.state, "output-available");
    assert.deepEqual(tool.input, { calls: [{ tool: "calc.eval", input: { expression: "6*7" } }] });
    const text = message.parts.filter((p) => p.type === "text").map((p) => p.text).join("");
    assert.equal(text, "6*7 = 42");
    const rounds = upstream.requests.slice(before);
    assert.equal(rounds.length, 2, "a tool round, then the answer");
    assert.deepEqual(toolResults(kind, rounds[0].body), []);
    const [result] = toolResults(kind, rounds[1].body);
    const decimal42 = (text) => /\\?"decimal\\?":\\?"42\\?"/.test(text);
    if (kind === "anthropic") {
      assert.equal(result.tool_use_id, "toolu_01hub", "answers Anthropic's own tool_use id");
      assert.ok(decimal42(JSON.stringify(result.content)), JSON.stringify(result));
    } else if (kind === "gemini") {
      assert.equal(result.functionResponse.name, "hub_call");
      assert.ok(decimal42(JSON.stringify(result.functionResponse.response)), JSON.stringify(result));
    } else {
      assert.ok(decimal42(result.content), JSON.stringify(result));
    }
    // The Anthropic SDK's hub-tools mode over the same kind.
    const collected = await anthropic.messages.create(
      { model: `${provider}/hub`, max_tokens: 64, messages: [{ role: "user", content: "What is 6*7?" }] },
      { headers: { "x-wasmhub-tools": "hub" } },
    );
    assert.deepEqual(collected.content.map((b) => b.type), ["mcp_tool_use", "mcp_tool_result", "text"]);
    assert.equal(collected.content[2].text, "6*7 = 42");
  });
}

test("a fallback chain from an overloaded Anthropic target to a Gemini one: one clean stream for the openai client", async () => {
  const before = upstream.requests.length;
  const { data: stream, response } = await openai.chat.completions.create({ model: "mixed", messages, stream: true }).withResponse();
  assert.equal(response.headers.get("x-wasmhub-target"), "gem/text");
  let text = "";
  for await (const chunk of stream) for (const c of chunk.choices) text += c.delta?.content ?? "";
  assert.equal(text, "Hello world");
  const [first, second] = upstream.requests.slice(before);
  assert.equal(first.url, "/v1/messages");
  assert.deepEqual(first.body.messages, [{ role: "user", content: [{ type: "text", text: "Hi there" }] }]);
  assert.match(second.url, /^\/v1\/models\/text:streamGenerateContent\?alt=sse$/);
  assert.deepEqual(second.body.contents, [{ role: "user", parts: [{ text: "Hi there" }] }]);
});
