// Upstream answers that never reach their terminal event, read through every
// surface that relays or transforms them by the real clients: the body ends
// without [DONE] or a finish reason (cut-midstream), it ends on a torn chunk
// (torn-midstream), or it stalls past its provider's idle_timeout_ms
// (stall-midstream, provider `slow`: 500 ms). Each client must raise, never return
// the partial answer as finished: the Node `openai` client's stream iteration
// (/v1/chat/completions), the AI SDK's readUIMessageStream in ai 6 and ai 7 over
// both UI streams (/api/ui/chat/completions and the agent loop's /api/chat), and
// the `@anthropic-ai/sdk` client's stream and collected answer (/v1/messages).
// Last, a SIGTERM to `wasmhub serve` while all of them are mid-answer: each ends
// in the same errors once the shutdown grace (1 s here) runs out.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import OpenAI from "openai";
import Anthropic from "@anthropic-ai/sdk";
import * as ai6 from "ai6";
import * as ai7 from "ai7";
import { startUpstream } from "./lib/upstream.mjs";
import { startHub } from "./lib/hub.mjs";

const KEY = "client-key-not-forwarded";

/** Each fault: the model that scripts it, the proxy's error code, the message. */
const FAULTS = [
  { name: "cut", model: "up/cut-midstream", code: "upstream_incomplete", message: /ended before the response was complete/ },
  { name: "torn", model: "up/torn-midstream", code: "upstream_malformed", message: /not valid JSON/ },
  { name: "stalled", model: "slow/stall-midstream", code: "upstream_broken", message: /the upstream sent nothing for 500 ms/ },
];

let upstream;
let hub;
before(async () => {
  upstream = await startUpstream();
  hub = await startHub(upstream.baseUrl, { stalling: true });
});
after(async () => {
  await hub?.stop();
  await upstream?.close();
});

/** The text deltas the Node openai client's iteration yields, and what it throws. */
async function openaiStream(url, model) {
  const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: KEY, maxRetries: 0 });
  const stream = await client.chat.completions.create({ model, messages: [{ role: "user", content: "hi" }], stream: true });
  const got = [];
  try {
    for await (const c of stream) got.push(c.choices[0]?.delta?.content ?? "");
  } catch (error) {
    return { got, error };
  }
  return { got, error: null };
}

/** The assistant message the AI SDK assembles from a UI stream, or what it throws. */
async function uiStream(sdk, url, surface, model, chatId) {
  const transport =
    surface === "/api/chat"
      ? new sdk.DefaultChatTransport({ api: `${url}/api/chat`, body: { model } })
      : new sdk.DefaultChatTransport({
          api: `${url}/api/ui/chat/completions`,
          prepareSendMessagesRequest: () => ({ body: { model, messages: [{ role: "user", content: "hi" }] } }),
        });
  const messages = [{ id: `${chatId}-u1`, role: "user", parts: [{ type: "text", text: "hi" }] }];
  try {
    const stream = await transport.sendMessages({ chatId, messages, trigger: "submit-message", messageId: undefined, abortSignal: undefined });
    let message;
    for await (const m of sdk.readUIMessageStream({ stream, terminateOnError: true })) message = m;
    return { message, error: null };
  } catch (error) {
    return { message: null, error };
  }
}

/** The Anthropic SDK's streamed answer (texts seen, what finalMessage throws). */
async function anthropicStream(url, model) {
  const client = new Anthropic({ baseURL: url, apiKey: KEY, maxRetries: 0 });
  const stream = client.messages.stream({ model, max_tokens: 64, messages: [{ role: "user", content: "hi" }] });
  const texts = [];
  stream.on("text", (t) => texts.push(t));
  try {
    await stream.finalMessage();
    return { texts, error: null };
  } catch (error) {
    return { texts, error };
  }
}

/** The Anthropic SDK's collected answer, or what it throws. */
async function anthropicCreate(url, model) {
  const client = new Anthropic({ baseURL: url, apiKey: KEY, maxRetries: 0 });
  try {
    return { message: await client.messages.create({ model, max_tokens: 64, messages: [{ role: "user", content: "hi" }] }), error: null };
  } catch (error) {
    return { message: null, error };
  }
}

for (const fault of FAULTS) {
  test(`${fault.name}: the openai client's stream iteration throws an APIError after the chunks that came`, async () => {
    const { got, error } = await openaiStream(hub.url, fault.model);
    assert.ok(error instanceof OpenAI.APIError, `${error}`);
    assert.equal(error.code, fault.code);
    assert.match(error.message, fault.message);
    assert.deepEqual(got, fault.name === "torn" ? ["Hel"] : ["Hel", "lo"]);
  });

  for (const [label, sdk] of [["ai 6", ai6], ["ai 7", ai7]]) {
    for (const surface of ["/api/ui/chat/completions", "/api/chat"]) {
      test(`${fault.name}: ${label}'s readUIMessageStream over ${surface} ends in the error`, async () => {
        const { message, error } = await uiStream(sdk, hub.url, surface, fault.model, `unfinished-${fault.name}-${label.replace(" ", "")}`);
        assert.ok(error, `no error; the message: ${JSON.stringify(message)}`);
        assert.match(error.message, fault.message);
      });
    }
  }

  test(`${fault.name}: the Anthropic SDK's stream throws, and its collected answer is a 502`, async () => {
    const streamed = await anthropicStream(hub.url, fault.model);
    assert.ok(streamed.error instanceof Anthropic.APIError, `${streamed.error}`);
    assert.match(streamed.error.message, fault.message);
    assert.deepEqual(streamed.texts, fault.name === "torn" ? ["Hel"] : ["Hel", "lo"]);
    const collected = await anthropicCreate(hub.url, fault.model);
    assert.ok(collected.error instanceof Anthropic.InternalServerError, `${collected.error}`);
    assert.equal(collected.error.status, 502);
    assert.equal(collected.error.error.error.type, "api_error");
    assert.match(collected.error.message, fault.message);
  });
}

test("SIGTERM mid-answer: every client raises once the shutdown grace runs out", async () => {
  // Provider `up` waits 120 s for a silent upstream: only the shutdown ends these.
  const own = await startHub(upstream.baseUrl, { config: ["[server]", "shutdown_grace_secs = 1"] });
  const model = "up/stall-midstream";
  const before = upstream.requests.length;
  const answers = {
    openai: openaiStream(own.url, model),
    ai6ui: uiStream(ai6, own.url, "/api/ui/chat/completions", model, "sigterm-ai6-ui"),
    ai7chat: uiStream(ai7, own.url, "/api/chat", model, "sigterm-ai7-chat"),
    anthropicStream: anthropicStream(own.url, model),
    anthropicCreate: anthropicCreate(own.url, model),
  };
  // Every answer is under way once the upstream has its request (and has sent
  // "Hel" and "lo" on each).
  const deadline = Date.now() + 30_000;
  while (upstream.requests.length < before + Object.keys(answers).length) {
    assert.ok(Date.now() < deadline, "the upstream got every request");
    await new Promise((r) => setTimeout(r, 20));
  }
  const stopped = own.stop();
  const shutdown = /the hub is shutting down/;
  const openai = await answers.openai;
  assert.ok(openai.error instanceof OpenAI.APIError, `${openai.error}`);
  assert.equal(openai.error.code, "hub_shutting_down");
  assert.match(openai.error.message, shutdown);
  for (const key of ["ai6ui", "ai7chat"]) {
    const { error, message } = await answers[key];
    assert.ok(error, `${key}: no error; the message: ${JSON.stringify(message)}`);
    assert.match(error.message, shutdown, key);
  }
  const streamed = await answers.anthropicStream;
  assert.ok(streamed.error instanceof Anthropic.APIError, `${streamed.error}`);
  assert.match(streamed.error.message, shutdown);
  const collected = await answers.anthropicCreate;
  assert.ok(collected.error instanceof Anthropic.InternalServerError, `${collected.error}`);
  assert.match(collected.error.message, shutdown);
  await stopped;
});
