// The real AI SDK chat client (ai 6.x and 7.x, `AbstractChat` + `DefaultChatTransport`,
// no React) against the hub's `/api/chat`, with the scripted upstream of upstream.mjs
// behind the hub; then turns that outlive their clients (ai 7): a tab that goes away
// and a new client that resumes, a second message that waits for the running turn,
// and stopping a turn. HUB_URL names the running hub, UPSTREAM_URL the upstream (see
// run.sh).

import { test } from "node:test";
import assert from "node:assert/strict";
import * as ai6 from "ai6";
import * as ai7 from "ai7";
import { ArrayState } from "../lib/chat-state.mjs";
import { HUGE_ANSWER, HUGE_PIECES, LONG_ANSWER } from "./upstream.mjs";
import { deltas, firstWords, held, queuedTurns, readChunks, release, settled, until } from "./live.mjs";

const HUB = process.env.HUB_URL;
assert.ok(HUB, "HUB_URL must name the running hub");
const UPSTREAM = process.env.UPSTREAM_URL;

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

for (const [name, lib] of [["ai6", ai6], ["ai7", ai7]]) {
  test(`${name}: the transport's body picks an agent, whose prompt and sampling reach the provider`, async () => {
    const id = `agent-${name}-${Date.now()}`;
    const chat = makeChat(lib, id, [], { agent: "poet" });
    await chat.sendMessage({ text: `Thanks, ${id}!` });
    assert.equal(chat.status, "ready", chat.error?.message);
    const a = chat.messages[1];
    assert.equal(a.metadata.agent, "poet", JSON.stringify(a.metadata));
    assert.equal(text(a), "You're welcome.");
    const requests = await (await fetch(`${UPSTREAM}/requests`)).json();
    const sent = requests.findLast((r) => JSON.stringify(r.messages).includes(id));
    assert.ok(sent, "the upstream got the agent's request");
    assert.equal(sent.temperature, 0.4);
    assert.match(sent.messages[0].content, /^You answer in verse\./);
    const unknown = await fetch(`${HUB}/api/chat`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ id: `${id}-x`, agent: "nobody", messages: [{ id: "u1", role: "user", parts: [{ type: "text", text: "hi" }] }] }),
    });
    assert.equal(unknown.status, 404);
    assert.equal((await unknown.json()).error.code, "agent_not_found");
  });
}

/// An ai 7 client of session `id` whose fetch reports each response's status as soon
/// as its headers arrive (`seen`: `{ method, status }` in order).
function watchedChat(id, messages = []) {
  const seen = [];
  const reporting = async (input, init) => {
    const r = await fetch(input, init);
    seen.push({ method: init?.method || "GET", status: r.status });
    return r;
  };
  class Chat extends ai7.AbstractChat {
    constructor(options) { super({ ...options, state: new ArrayState(messages) }); }
  }
  const chat = new Chat({ id, transport: new ai7.DefaultChatTransport({ api: `${HUB}/api/chat`, fetch: reporting }) });
  chat.seen = seen;
  return chat;
}

test("ai7: the tab goes away mid-answer; a new client of the same id resumes and gets the whole answer", async () => {
  const id = `gone-${Date.now()}`;
  const [k1, k2] = [`g1-${id}`, `g2-${id}`];
  // Two holds split the answer in thirds: the first third is read by the tab that
  // goes away, the second is produced while nobody watches, the last one live.
  const tab = watchedChat(id);
  const sending = tab.sendMessage({ text: `Long answer please; hold ${k1}, hold ${k2}.` });
  try {
    await held(k1);
    await until("the first third on the tab", () => tab.messages[1] && text(tab.messages[1]) === firstWords(19));
    // The tab goes away: it stops reading (the AI SDK aborts its fetch).
    await tab.stop();
    await sending;
    assert.equal(tab.status, "ready", tab.error?.message);
    assert.equal(text(tab.messages[1]), firstWords(19), "the tab saw only the first third");

    // The turn goes on with nobody watching it, up to the second hold.
    await release(k1);
    await held(k2);
    const midway = await stored(id);
    assert.equal(midway.active, true, "the turn still runs after its client left");

    // A new client (a reloaded app: the stored messages, then `resume: true`).
    const back = watchedChat(id, structuredClone(midway.messages));
    const resuming = back.resumeStream();
    // The replay: everything the turn sent so far, the part the tab never read too.
    await until("the replay of two thirds on the new client", () => {
      const last = back.messages.at(-1);
      return last?.role === "assistant" && text(last) === firstWords(40);
    });
    await release(k2);
    await resuming;
    assert.equal(back.status, "ready", back.error?.message);
    assert.deepEqual(back.seen, [{ method: "GET", status: 200 }]);
    assert.deepEqual(back.messages.map((m) => m.role), ["user", "assistant"]);
    const answer = back.messages[1];
    assert.equal(text(answer), LONG_ANSWER, "the whole answer, to its last character");
    assert.notEqual(answer.metadata?.aborted, true, JSON.stringify(answer.metadata));
    assert.equal(answer.metadata?.finishReason, "stop", JSON.stringify(answer.metadata));

    const s = await settled(id);
    assert.deepEqual(s.messages.map((m) => m.id), back.messages.map((m) => m.id));
    assert.equal(text(s.messages[1]), LONG_ANSWER);
    assert.notEqual(s.messages[1].metadata?.aborted, true, JSON.stringify(s.messages[1].metadata));
  } finally {
    // Whatever failed above, the turn ends, so nothing waits for the hub's timeouts.
    await release(k1);
    await release(k2);
  }
});

test("ai7: a 2 MB answer resumed half way comes back whole, replayed from the message past agent.resume_buffer_kb", async () => {
  const id = `huge-${Date.now()}`;
  const key = `h-${id}`;
  // The hold stops the answer before its 2,000th piece.
  const half = HUGE_PIECES.slice(0, 1999).join("");
  const tab = watchedChat(id);
  const sending = tab.sendMessage({ text: `A huge answer please; hold ${key}.` });
  try {
    await held(key);
    await until("the first half on the tab", () => tab.messages[1] && text(tab.messages[1]) === half);
    await tab.stop();
    await sending;
    const midway = await stored(id);
    assert.equal(midway.active, true, "the turn still runs after its client left");
    // A raw watcher too: what the hub sends a reconnect, chunk by chunk.
    const raw = fetch(`${HUB}/api/chat/${id}/stream`).then(readChunks);
    const back = watchedChat(id, structuredClone(midway.messages));
    const resuming = back.resumeStream();
    await until("the replay of the first half", () => {
      const last = back.messages.at(-1);
      return last?.role === "assistant" && text(last) === half;
    });
    await release(key);
    await resuming;
    assert.equal(back.status, "ready", back.error?.message);
    const answer = back.messages[1];
    assert.ok(text(answer) === HUGE_ANSWER, `the whole answer, to its last character (${text(answer).length} of ${HUGE_ANSWER.length})`);
    assert.equal(answer.metadata?.finishReason, "stop", JSON.stringify(answer.metadata));
    const chunks = await raw;
    assert.equal(deltas(chunks), HUGE_ANSWER);
    const first = chunks.find((c) => c.type === "text-delta");
    assert.equal(first.delta, half, "the first half comes back as one replayed delta, not 1,999 kept chunks");
    const s = await settled(id);
    assert.ok(text(s.messages[1]) === HUGE_ANSWER, "stored whole");
  } finally {
    await release(key);
  }
});

test("ai7: a message sent while a turn runs waits for it; both are answered, in order", async () => {
  const id = `queued-${Date.now()}`;
  const key = `q-${id}`;
  const first = watchedChat(id);
  const sendingFirst = first.sendMessage({ text: `Long answer please; hold ${key}.` });
  try {
    await held(key);
    // A second tab of the same session, opened now, sends a message of its own.
    const now = await stored(id);
    assert.equal(now.active, true);
    const second = watchedChat(id, structuredClone(now.messages));
    const sendingSecond = second.sendMessage({ text: "Calc only: what is 6*7?" });
    // The hub holds the request back (no response yet) until the turn ends.
    await until("the second message to wait in the hub's queue", async () => {
      assert.deepEqual(second.seen, [], "no answer to the second message while the first turn runs");
      return (await queuedTurns()) === 1;
    });
    assert.equal(second.status, "submitted");

    await release(key);
    await Promise.all([sendingFirst, sendingSecond]);
    assert.equal(first.status, "ready", first.error?.message);
    assert.equal(second.status, "ready", second.error?.message);
    assert.deepEqual(first.seen, [{ method: "POST", status: 200 }]);
    assert.deepEqual(second.seen, [{ method: "POST", status: 200 }]);
    assert.equal(text(first.messages[1]), LONG_ANSWER);
    assert.notEqual(first.messages[1].metadata?.aborted, true);
    const answer = second.messages.at(-1);
    assert.equal(answer.role, "assistant");
    assert.match(text(answer), /^Computing\.Done: calc\.eval gave /);
    assert.equal(toolParts(answer, "hub_call")[0]?.state, "output-available", JSON.stringify(answer.parts));
    assert.equal(await queuedTurns(), 0);

    // The session holds both turns, the first one's before the second's.
    const s = await settled(id);
    assert.deepEqual(s.messages.map((m) => m.role), ["user", "assistant", "user", "assistant"]);
    assert.deepEqual(s.messages.map((m) => m.id), [first.messages[0].id, first.messages[1].id, second.messages.at(-2).id, answer.id]);
    assert.equal(text(s.messages[1]), LONG_ANSWER);
    assert.equal(text(s.messages[3]), text(answer));
  } finally {
    await release(key);
  }
});

test("ai7: the README's stopTurn (POST /api/chat/{id}/stop, then stop()) ends the turn for every client; the stored answer says aborted", async () => {
  const id = `stopturn-${Date.now()}`;
  const key = `s-${id}`;
  const chat = watchedChat(id);
  const sending = chat.sendMessage({ text: `Long answer please; hold ${key}.` });
  try {
    await held(key);
    await until("the first half on the client", () => chat.messages[1] && text(chat.messages[1]) === firstWords(30));
    // Another client follows the turn, to see how its stream ends.
    const watcher = await fetch(`${HUB}/api/chat/${id}/stream`);
    assert.equal(watcher.status, 200);
    const watched = readChunks(watcher);

    const stop = await fetch(`${HUB}/api/chat/${id}/stop`, { method: "POST" });
    assert.equal(stop.status, 204);
    await chat.stop();
    await sending;
    assert.equal(chat.status, "ready", chat.error?.message);
    assert.equal(text(chat.messages[1]), firstWords(30));

    const chunks = await watched;
    assert.deepEqual(chunks.at(-1), { type: "abort", reason: "stopped on request" }, JSON.stringify(chunks.slice(-3)));
    assert.equal(deltas(chunks), firstWords(30), "nothing after the hold");
    const s = await settled(id);
    const answer = s.messages.at(-1);
    assert.equal(answer.role, "assistant");
    assert.equal(answer.metadata?.aborted, true, JSON.stringify(answer.metadata));
    assert.equal(answer.metadata?.finishReason, "aborted", JSON.stringify(answer.metadata));
    assert.equal(text(answer), firstWords(30));

    // Nothing runs now: a resume gets 204, and the conversation goes on.
    const later = watchedChat(id, structuredClone(s.messages));
    await later.resumeStream();
    assert.deepEqual(later.seen, [{ method: "GET", status: 204 }]);
    await later.sendMessage({ text: "thanks" });
    assert.equal(later.status, "ready", later.error?.message);
    assert.equal(text(later.messages.at(-1)), "You're welcome.");
  } finally {
    await release(key);
  }
});
