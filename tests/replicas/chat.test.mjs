// The AI SDK chat client (ai 7.x) through HAProxy in front of three replicas on one
// PostgreSQL: a multi-turn chat whose turns land on different replicas and whose
// history every replica serves, and a live turn joined (resumeStream) on a replica
// other than the one running it, which replays what was sent and continues live.

import { test } from "node:test";
import assert from "node:assert/strict";
import { LB, REPLICAS, getJSON, held, makeChat, release, text, toolParts, until } from "./lib.mjs";

test("a multi-turn chat through the balancer runs its turns on different replicas; every replica has it", async () => {
  const id = `multi-${Date.now()}`;
  const chat = makeChat(LB, id);
  await chat.sendMessage({ text: "compute 6*7" });
  assert.equal(chat.status, "ready", chat.error?.message);
  await chat.sendMessage({ text: "thanks" });
  assert.equal(chat.status, "ready", chat.error?.message);
  await chat.sendMessage({ text: "compute 2^10 now" });
  assert.equal(chat.status, "ready", chat.error?.message);

  assert.equal(chat.messages.length, 6);
  assert.equal(text(chat.messages[1]), "Computing. The answer is 42.");
  assert.equal(toolParts(chat.messages[1])[0].state, "output-available");
  assert.equal(text(chat.messages[3]), "You're welcome.");
  assert.equal(text(chat.messages[5]), "Computing. The answer is 1024.");

  const turns = chat.served.filter((s) => s.method === "POST");
  assert.equal(turns.length, 3);
  assert.ok(turns.every((s) => s.status === 200), JSON.stringify(turns));
  const replicas = new Set(turns.map((s) => s.replica));
  assert.ok(replicas.size >= 2, `the turns all ran on ${[...replicas]}: ${JSON.stringify(turns)}`);

  // Each replica serves the whole conversation, as the client holds it.
  for (const r of REPLICAS) {
    const stored = await getJSON(`${r.url}/api/sessions/${id}`);
    assert.deepEqual(stored.messages.map((m) => m.id), chat.messages.map((m) => m.id), r.name);
    assert.deepEqual(stored.messages.map(text), chat.messages.map(text), r.name);
    const listed = await getJSON(`${r.url}/api/sessions`);
    assert.ok(listed.sessions.some((s) => s.id === id), `${r.name} lists ${id}`);
  }
});

test("a live turn resumed on another replica replays what was sent and continues it", async () => {
  const id = `resume-${Date.now()}`;
  const gate = `resume${Date.now()}`;
  const first = makeChat(LB, id);
  const sending = first.sendMessage({ text: `compute 6*7 gate:${gate}` });
  // Step 1 (the tool call) has finished and step 2 has begun when the model holds.
  await held(gate);
  const running = await until("the turn's response headers", () => first.served.find((s) => s.method === "POST")?.replica);
  const other = REPLICAS.find((r) => r.name !== running);

  const second = makeChat(other.url, id, [structuredClone(first.messages[0])]);
  const resuming = second.resumeStream();
  // Replay: the finished step arrives from the other replica while the turn is held.
  await until("the replayed step on the resuming client", () => {
    const a = second.messages[1];
    return a && toolParts(a).some((p) => p.state === "output-available") && text(a).includes("The answer is");
  });
  assert.ok(!text(second.messages[1]).includes("42"), "nothing after the gate was sent yet");
  // Live: the rest of the turn, sent after the release, reaches both clients.
  await release(gate);
  await Promise.all([sending, resuming]);
  assert.equal(first.status, "ready", first.error?.message);
  assert.equal(second.status, "ready", second.error?.message);
  assert.equal(second.served[0].status, 200, JSON.stringify(second.served));
  assert.equal(second.messages.length, 2);
  assert.equal(second.messages[1].id, first.messages[1].id);
  assert.equal(text(second.messages[1]), "Computing. The answer is 42.");
  assert.equal(text(first.messages[1]), text(second.messages[1]));
  assert.deepEqual(toolParts(second.messages[1]).map((p) => p.output), toolParts(first.messages[1]).map((p) => p.output));

  // Nothing runs now: a resume on any replica is answered 204 and changes nothing.
  for (const r of REPLICAS) {
    const third = makeChat(r.url, id, structuredClone(second.messages));
    await third.resumeStream();
    assert.equal(third.served[0].status, 204, `${r.name}: ${JSON.stringify(third.served)}`);
    assert.equal(third.messages.length, 2);
  }
});
