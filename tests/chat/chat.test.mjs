// The real AI SDK chat client (ai 6.x and 7.x, `AbstractChat` + `DefaultChatTransport`,
// no React) against the hub's `/api/chat`, with the scripted upstream of upstream.mjs
// behind the hub. HUB_URL names the running hub (see run.sh).

import { test } from "node:test";
import assert from "node:assert/strict";
import * as ai6 from "ai6";
import * as ai7 from "ai7";
import { ArrayState } from "./chat-state.mjs";

const HUB = process.env.HUB_URL;
assert.ok(HUB, "HUB_URL must name the running hub");

function makeChat(lib, id, messages = [], body = undefined) {
  class Chat extends lib.AbstractChat {
    constructor(options) { super({ ...options, state: new ArrayState(messages) }); }
  }
  return new Chat({ id, transport: new lib.DefaultChatTransport({ api: `${HUB}/api/chat`, body }) });
}

const toolParts = (m, name) => m.parts.filter((p) => p.type === `tool-${name}`);
const text = (m) => m.parts.filter((p) => p.type === "text").map((p) => p.text).join("");

async function stored(id) {
  const r = await fetch(`${HUB}/api/sessions/${id}`);
  assert.equal(r.status, 200);
  return r.json();
}

for (const [name, lib] of [["ai6", ai6], ["ai7", ai7]]) {
  test(`${name}: a multi-turn conversation with hub tools ends ready with the expected parts`, async () => {
    const id = `chat-${name}-${Date.now()}`;
    const chat = makeChat(lib, id);
    await chat.sendMessage({ text: "What is 6*7? And make hello world loud." });
    assert.equal(chat.status, "ready", chat.error?.message);
    assert.equal(chat.messages.length, 2);
    const a = chat.messages[1];
    assert.equal(a.role, "assistant");
    const searches = toolParts(a, "hub_search");
    const schemas = toolParts(a, "hub_schema");
    const calls = toolParts(a, "hub_call");
    assert.equal(searches.length, 2, JSON.stringify(a.parts));
    assert.equal(schemas.length, 2);
    assert.equal(calls.length, 1);
    for (const p of [...searches, ...schemas, ...calls]) assert.equal(p.state, "output-available", JSON.stringify(p));
    assert.ok(searches[0].output.length > 0 || searches[0].output.results?.length > 0, "search found operations");
    assert.ok(schemas[0].output.inputSchema, "schema has an input schema");
    const results = Array.isArray(calls[0].output) ? calls[0].output : calls[0].output.results;
    assert.equal(results.length, 2);
    assert.ok(results.every((r) => r.ok), JSON.stringify(results));
    assert.match(results[0].tool, /^calc\./);
    assert.match(results[1].tool, /^text\./);
    assert.equal(a.parts.filter((p) => p.type === "step-start").length, 4);
    assert.match(text(a), /^Let me find the tools\.Done: calc\./);
    assert.equal(a.metadata.finishReason, "stop");
    assert.equal(a.metadata.usage.inputTokens, 40);

    await chat.sendMessage({ text: "thanks" });
    assert.equal(chat.status, "ready", chat.error?.message);
    assert.equal(chat.messages.length, 4);
    assert.equal(text(chat.messages[3]), "You're welcome.");

    const before = chat.messages[3].id;
    await chat.regenerate();
    assert.equal(chat.status, "ready", chat.error?.message);
    assert.equal(chat.messages.length, 4);
    assert.notEqual(chat.messages[3].id, before);

    // The stored session is what the client holds.
    const s = await stored(id);
    assert.deepEqual(s.messages.map((m) => m.id), chat.messages.map((m) => m.id));
    assert.equal(s.messages[1].parts.length, a.parts.length);
  });

  test(`${name}: editing the first message replaces the conversation after it`, async () => {
    const id = `edit-${name}-${Date.now()}`;
    const chat = makeChat(lib, id);
    await chat.sendMessage({ text: "hello" });
    await chat.sendMessage({ text: "thanks" });
    assert.equal(chat.messages.length, 4);
    const first = chat.messages[0].id;
    await chat.sendMessage({ text: "hello again" , messageId: first });
    assert.equal(chat.status, "ready", chat.error?.message);
    assert.equal(chat.messages.length, 2);
    const s = await stored(id);
    assert.equal(s.messages.length, 2);
    assert.equal(s.messages[0].parts[0].text, "hello again");
  });

  test(`${name}: a second client joins a running turn with resumeStream`, async () => {
    const id = `resume-${name}-${Date.now()}`;
    const first = makeChat(lib, id);
    const sending = first.sendMessage({ text: "Slowly: what is 6*7 and hello world loud?" });
    await new Promise((r) => setTimeout(r, 400));
    const user = first.messages[0];
    const second = makeChat(lib, id, [structuredClone(user)]);
    await second.resumeStream();
    await sending;
    assert.equal(first.status, "ready", first.error?.message);
    assert.equal(second.status, "ready", second.error?.message);
    assert.equal(second.messages.length, 2);
    assert.equal(second.messages[1].id, first.messages[1].id);
    assert.equal(text(second.messages[1]), text(first.messages[1]));
    assert.equal(toolParts(second.messages[1], "hub_call").length, 1);
    // Nothing running now: the resume request gets 204 and changes nothing.
    await second.resumeStream();
    assert.equal(second.status, "ready");
    assert.equal(second.messages.length, 2);
  });
}

for (const [name, lib] of [["ai6", ai6], ["ai7", ai7]]) {
  test(`${name}: two destructive calls ask for approval; one approved, one denied, in one turn`, async () => {
    const id = `approve-${name}-${Date.now()}`;
    const chat = makeChat(lib, id);
    await chat.sendMessage({ text: "Wipe the cache, and wipe everything." });
    assert.equal(chat.status, "ready", chat.error?.message);
    assert.equal(chat.messages.length, 2);
    const asked = chat.messages[1];
    const calls = toolParts(asked, "hub_call");
    assert.equal(calls.length, 2, JSON.stringify(asked.parts));
    for (const p of calls) {
      assert.equal(p.state, "approval-requested", JSON.stringify(p));
      assert.match(p.approval.id, /^apr_/);
      // ai 7 keeps the hub's reason; ai 6 has no field for it.
      if (name === "ai7") assert.match(p.approval.requestReason, /examples\.wipe is destructive/);
    }
    assert.equal(asked.metadata.finishReason, "approval-requested");
    const stored0 = await stored(id);
    assert.deepEqual(toolParts(stored0.messages[1], "hub_call").map((p) => p.approval.id), calls.map((p) => p.approval.id));

    await chat.addToolApprovalResponse({ id: calls[0].approval.id, approved: true });
    await chat.addToolApprovalResponse({ id: calls[1].approval.id, approved: false, reason: "not everything" });
    // The answers go back as an ordinary submit of the same conversation.
    await chat.sendMessage();
    assert.equal(chat.status, "ready", chat.error?.message);
    assert.equal(chat.messages.length, 2);
    const a = chat.messages[1];
    assert.equal(a.id, asked.id, "the same assistant message goes on");
    const [w1, w2] = toolParts(a, "hub_call");
    assert.equal(w1.state, "output-available", JSON.stringify(w1));
    assert.equal(w1.output.results[0].result.wiped, true);
    assert.equal(w2.state, "output-denied", JSON.stringify(w2));
    assert.match(text(a), /call_w1 wiped; call_w2 was denied \(not everything\)\./);

    // The stored session has both outcomes, with the approvals.
    const s = await stored(id);
    assert.equal(s.messages.length, 2);
    const [s1, s2] = toolParts(s.messages[1], "hub_call");
    assert.equal(s1.state, "output-available");
    assert.deepEqual([s1.approval.id, s1.approval.approved], [calls[0].approval.id, true]);
    assert.equal(s2.state, "output-denied");
    assert.deepEqual([s2.approval.id, s2.approval.approved, s2.approval.reason], [calls[1].approval.id, false, "not everything"]);

    // A client cannot approve with an id the hub did not issue.
    const forged = structuredClone(a);
    for (const p of toolParts(forged, "hub_call")) {
      Object.assign(p, { state: "approval-responded", approval: { id: "apr_made_up", approved: true } });
      delete p.output;
    }
    const r = await fetch(`${HUB}/api/chat`, {
      method: "POST", headers: { "content-type": "application/json" },
      body: JSON.stringify({ id, trigger: "submit-message", messageId: a.id, messages: [chat.messages[0], forged] }),
    });
    assert.equal(r.status, 400);
    const err = await r.json();
    assert.equal(err.error.code, "invalid_approval");
    assert.match(err.error.message, /not issued by this hub/);
  });
}

for (const [name, lib] of [["ai6", ai6], ["ai7", ai7]]) {
  test(`${name}: a target that breaks mid-stream is replaced by the next; the session keeps the clean answer`, async () => {
    const id = `fallback-${name}-${Date.now()}`;
    const chat = makeChat(lib, id, [], { model: "flaky" });
    await chat.sendMessage({ text: "Thanks!" });
    assert.equal(chat.status, "ready", chat.error?.message);
    const a = chat.messages[1];
    const warning = a.parts.find((p) => p.type === "data-llm-fallback");
    assert.ok(warning, JSON.stringify(a.parts));
    assert.deepEqual([warning.data.from, warning.data.to, warning.data.discarded], ["scripted/broken", "backup/scripted-1", true]);
    const discarded = toolParts(a, "hub_list");
    assert.equal(discarded.length, 1, JSON.stringify(a.parts));
    assert.equal(discarded[0].state, "output-error");
    assert.match(discarded[0].errorText, /discarded, not run/);
    assert.ok(text(a).endsWith("You're welcome."), text(a));
    assert.equal(a.metadata.target, "backup/scripted-1");
    const saved = (await stored(id)).messages[1];
    assert.equal(text(saved), "You're welcome.");
    assert.ok(!JSON.stringify(saved).includes("Partial"), JSON.stringify(saved));
  });
}

test("a second turn in a busy session is refused with 409", async () => {
  const id = `busy-${Date.now()}`;
  const body = (mid) => JSON.stringify({ id, trigger: "submit-message", messages: [{ id: mid, role: "user", parts: [{ type: "text", text: "Slowly: what is 1+1?" }] }] });
  const firstResponse = await fetch(`${HUB}/api/chat`, { method: "POST", headers: { "content-type": "application/json" }, body: body("u1") });
  assert.equal(firstResponse.status, 200);
  const second = await fetch(`${HUB}/api/chat`, { method: "POST", headers: { "content-type": "application/json" }, body: body("u2") });
  assert.equal(second.status, 409);
  const err = await second.json();
  assert.equal(err.error.code, "turn_in_progress");
  await firstResponse.text();
});
