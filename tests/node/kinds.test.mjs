// The same client tests over each provider kind the hub speaks natively: the
// official `openai` client (streamed and not), the AI SDK's UI-stream client
// (ai 7) and the official Anthropic SDK (streamed and not), each against a hub
// whose providers `claude` (kind anthropic), `llama` (kind ollama) and `gem`
// (kind gemini) point at a scripted upstream speaking those APIs
// (lib/native-upstream.mjs).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import OpenAI from "openai";
import Anthropic from "@anthropic-ai/sdk";
import * as ai7 from "ai7";
import { REDACTED, nativeProviders, startNativeUpstream } from "./lib/native-upstream.mjs";
import { startHub } from "./lib/hub.mjs";

let upstream;
let hub;
let openai;
let anthropic;
before(async () => {
  upstream = await startNativeUpstream();
  hub = await startHub(upstream.baseUrl, { config: nativeProviders(upstream) });
  openai = new OpenAI({ baseURL: `${hub.url}/v1`, apiKey: "client-key", maxRetries: 0 });
  anthropic = new Anthropic({ baseURL: hub.url, apiKey: "client-key", maxRetries: 0 });
});
after(async () => {
  await hub?.stop();
  await upstream?.close();
});

const KINDS = [
  ["anthropic", "claude", /^\/v1\/messages$/],
  ["ollama", "llama", /^\/api\/chat$/],
  ["gemini", "gem", /^\/v1\/models\/(text|weather):(streamGenerateContent\?alt=sse|generateContent)$/],
];
const messages = [{ role: "user", content: "Hi there" }];

for (const [kind, provider, path] of KINDS) {
  test(`${kind}: the openai client streams text and gets whole answers and tool calls`, async () => {
    const stream = await openai.chat.completions.create({ model: `${provider}/text`, messages, stream: true });
    let text = "";
    let finish = null;
    for await (const chunk of stream) {
      for (const c of chunk.choices) {
        text += c.delta?.content ?? "";
        finish = c.finish_reason ?? finish;
      }
    }
    assert.equal(text, "Hello world");
    assert.equal(finish, "stop");
    assert.match(upstream.requests.at(-1).url, path, "the provider's own endpoint");
    const whole = await openai.chat.completions.create({ model: `${provider}/weather`, messages });
    const call = whole.choices[0].message.tool_calls[0];
    assert.equal(whole.choices[0].finish_reason, "tool_calls");
    assert.equal(call.function.name, "get_weather");
    assert.deepEqual(JSON.parse(call.function.arguments), { city: "Paris" });
    assert.equal(whole.usage.total_tokens, 13);
  });

  test(`${kind}: the AI SDK assembles the UI stream's reasoning and text`, async () => {
    const transport = new ai7.DefaultChatTransport({
      api: `${hub.url}/api/ui/chat/completions`,
      prepareSendMessagesRequest: () => ({ body: { model: `${provider}/text`, messages } }),
    });
    const stream = await transport.sendMessages({ chatId: "c1", messages: [], trigger: "submit-message", messageId: undefined, abortSignal: undefined });
    let message;
    for await (const m of ai7.readUIMessageStream({ stream, terminateOnError: true })) message = m;
    const part = (type) => message.parts.filter((p) => p.type === type).map((p) => p.text).join("");
    assert.equal(part("text"), "Hello world");
    assert.equal(part("reasoning"), "Greeting back.");
    assert.equal(message.metadata.provider, provider);
  });

  test(`${kind}: the AI SDK keeps what the provider wants back with a tool call`, async () => {
    const transport = new ai7.DefaultChatTransport({
      api: `${hub.url}/api/ui/chat/completions`,
      prepareSendMessagesRequest: () => ({ body: { model: `${provider}/weather`, messages } }),
    });
    const stream = await transport.sendMessages({ chatId: "c2", messages: [], trigger: "submit-message", messageId: undefined, abortSignal: undefined });
    let message;
    for await (const m of ai7.readUIMessageStream({ stream, terminateOnError: true })) message = m;
    const call = message.parts.find((p) => p.type === "tool-get_weather" || p.type === "dynamic-tool");
    assert.deepEqual(call.input, { city: "Paris" });
    const wanted = {
      anthropic: { anthropic: { thinking_blocks: [{ type: "thinking", thinking: "The weather tool.", signature: "EqQBCgIYAhIMweather" }] } },
      gemini: { google: { thought_signature: "c2lnLW5hdGl2ZQ==" } },
      ollama: undefined,
    }[kind];
    assert.deepEqual(call.callProviderMetadata, wanted, "the tool part's callProviderMetadata");
  });

  test(`${kind}: the Anthropic SDK gets text and tool_use, streamed and collected`, async () => {
    const ask = (model) => ({ model: `${provider}/${model}`, max_tokens: 64, messages });
    const stream = anthropic.messages.stream(ask("text"));
    const texts = [];
    stream.on("text", (t) => texts.push(t));
    const final = await stream.finalMessage();
    assert.equal(texts.join(""), "Hello world");
    assert.equal(final.stop_reason, "end_turn");
    assert.deepEqual(final.usage.output_tokens, 2);
    const tool = await anthropic.messages.create({ ...ask("weather"), tools: [{ name: "get_weather", input_schema: { type: "object" } }] });
    assert.equal(tool.stop_reason, "tool_use");
    const use = tool.content.find((b) => b.type === "tool_use");
    assert.deepEqual([use.name, use.input], ["get_weather", { city: "Paris" }]);
    const sent = upstream.requests.at(-1);
    assert.match(sent.url, path);
    const keyHeader = { anthropic: "x-api-key", gemini: "x-goog-api-key" }[kind];
    if (keyHeader) {
      assert.equal(sent.headers[keyHeader], "sk-ant-node-native", "the provider's key, not the client's");
      assert.equal(sent.headers.authorization, undefined);
      assert.ok(!sent.url.includes("sk-ant-node-native"), "the key is never in the URL");
    }
  });
}

// A thinking block (`block`, first in the answer of the scripted `model`) reaches
// the Anthropic SDK whole, streamed and collected, and goes back to the provider
// as it came when the client echoes the assistant turn in its tool loop.
async function thinkingRoundTrip(model, block, streamedWhy) {
  const tools = [{ name: "get_weather", input_schema: { type: "object" } }];
  const ask = { model, max_tokens: 64, messages, tools };
  const streamed = await anthropic.messages.stream(ask).finalMessage();
  assert.deepEqual(streamed.content[0], block, streamedWhy);
  const collected = await anthropic.messages.create(ask);
  assert.deepEqual(collected.content[0], block, "collected");
  const use = streamed.content.find((b) => b.type === "tool_use");
  const round = [...messages, { role: "assistant", content: streamed.content },
    { role: "user", content: [{ type: "tool_result", tool_use_id: use.id, content: "18°C" }] }];
  await anthropic.messages.create({ ...ask, model: "claude/text", messages: round });
  const sent = upstream.requests.at(-1).body.messages;
  assert.deepEqual(sent[1].content[0], block, "the provider gets the block back as it came");
  assert.equal(sent[1].content[1].type, "tool_use");
}

test("anthropic: the Anthropic SDK gets the signed thinking block on /v1/messages and sends it back in the tool loop", async () => {
  const signed = { type: "thinking", thinking: "The weather tool.", signature: "EqQBCgIYAhIMweather" };
  await thinkingRoundTrip("claude/weather", signed, "streamed: a signature_delta before the block's stop");
});

test("anthropic: withheld reasoning (redacted_thinking) reaches the Anthropic SDK whole and goes back, and ai 7 sees it as the AI SDK shows it", async () => {
  await thinkingRoundTrip("claude/redacted", REDACTED, "streamed");
  const transport = new ai7.DefaultChatTransport({
    api: `${hub.url}/api/ui/chat/completions`,
    prepareSendMessagesRequest: () => ({ body: { model: "claude/redacted", messages } }),
  });
  const stream = await transport.sendMessages({ chatId: "c3", messages: [], trigger: "submit-message", messageId: undefined, abortSignal: undefined });
  let message;
  for await (const m of ai7.readUIMessageStream({ stream, terminateOnError: true })) message = m;
  const reasoning = message.parts.find((p) => p.type === "reasoning");
  assert.deepEqual([reasoning.text, reasoning.providerMetadata], ["", { anthropic: { redactedData: REDACTED.data } }]);
});
