// The AI SDK's own client code (ai 6.x and 7.x): DefaultChatTransport fetches the
// hub's UI message stream and validates every chunk with the SDK's schemas;
// readUIMessageStream (terminateOnError) assembles the assistant message. Every
// recorded provider stream must assemble into the right text, reasoning and tool
// parts; an upstream error must end the stream with the provider's message.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import * as ai6 from "ai6";
import * as ai7 from "ai7";
import { startUpstream, fixtureNames } from "./lib/upstream.mjs";
import { startHub } from "./lib/hub.mjs";
import { expected } from "./lib/expected.mjs";

let upstream;
let hub;
before(async () => {
  upstream = await startUpstream();
  hub = await startHub(upstream.baseUrl);
});
after(async () => {
  await hub?.stop();
  await upstream?.close();
});

async function assemble(sdk, model) {
  const transport = new sdk.DefaultChatTransport({
    api: `${hub.url}/api/ui/chat/completions`,
    // The endpoint takes an OpenAI body, not the useChat one.
    prepareSendMessagesRequest: () => ({ body: { model, messages: [{ role: "user", content: "hi" }] } }),
  });
  const stream = await transport.sendMessages({ chatId: "c1", messages: [], trigger: "submit-message", messageId: undefined, abortSignal: undefined });
  let message;
  for await (const m of sdk.readUIMessageStream({ stream, terminateOnError: true })) message = m;
  return message;
}

for (const [label, sdk] of [["ai 6", ai6], ["ai 7", ai7]]) {
  for (const name of fixtureNames()) {
    test(`${label}: ${name} assembles into the recorded text, reasoning and tool calls`, async () => {
      const want = expected(name);
      const message = await assemble(sdk, `up/fixture:${name}`);
      assert.equal(message.role, "assistant");
      const text = message.parts.filter((p) => p.type === "text").map((p) => p.text).join("");
      const reasoning = message.parts.filter((p) => p.type === "reasoning").map((p) => p.text).join("");
      assert.equal(text, want.text);
      assert.equal(reasoning, want.reasoning);
      for (const p of message.parts.filter((p) => p.type === "text" || p.type === "reasoning")) assert.equal(p.state, "done");
      const tools = message.parts.filter((p) => p.type.startsWith("tool-"));
      assert.deepEqual(
        tools.map((p) => ({ id: p.toolCallId, name: p.type.slice("tool-".length), input: p.input, state: p.state })),
        want.tools.map((t) => ({ ...t, state: "input-available" })),
      );
      assert.equal(message.parts.filter((p) => p.type === "step-start").length, 1);
      assert.equal(message.metadata.provider, "up");
      assert.ok(message.metadata.usage.inputTokens > 0, JSON.stringify(message.metadata));
      assert.equal(typeof message.metadata.model, "string");
    });
  }

  test(`${label}: a provider's cumulative deltas assemble into the text once`, async () => {
    const message = await assemble(sdk, "local/cumulative");
    const text = message.parts.filter((p) => p.type === "text").map((p) => p.text).join("");
    assert.equal(text, "The answer is 4.");
    assert.equal(message.metadata.target, "local/cumulative");
  });

  test(`${label}: an upstream error mid-stream ends the stream with the provider's message`, async () => {
    await assert.rejects(assemble(sdk, "up/error-midstream"), /The server had an error while processing your request/);
  });

  test(`${label}: an upstream error status reaches the client as an error`, async () => {
    await assert.rejects(assemble(sdk, "up/status:401"), /answered 401 Unauthorized: scripted 401/);
  });

  test(`${label}: a hub-side error (no model) is a non-2xx whose body the client reports`, async () => {
    const transport = new sdk.DefaultChatTransport({
      api: `${hub.url}/api/ui/chat/completions`,
      prepareSendMessagesRequest: () => ({ body: { messages: [] } }),
    });
    await assert.rejects(
      transport.sendMessages({ chatId: "c1", messages: [], trigger: "submit-message", messageId: undefined, abortSignal: undefined }),
      /\\"model\\" is required/,
    );
  });
}
