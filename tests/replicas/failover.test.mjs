// `kill -9` of the replica running a turn: no finished step is lost (every other
// replica serves it), a new message waits while the dead replica's lease is live,
// and the chat goes on on another replica once the lease expired. Runs last:
// the killed replica stays down (HAProxy's health check takes it out).

import { test } from "node:test";
import assert from "node:assert/strict";
import { LB, LEASE_SECS, REPLICAS, getJSON, held, makeChat, queuedTurns, replica, text, toolParts, until } from "./lib.mjs";

test("a replica killed mid-turn loses no finished step; the chat continues elsewhere after its lease", async () => {
  const id = `failover-${Date.now()}`;
  const gate = `kill${Date.now()}`;
  const first = makeChat(LB, id);
  const sending = first.sendMessage({ text: `compute 6*7 gate:${gate}` });
  await held(gate);
  const victim = replica(await until("the turn's response headers", () => first.served.find((s) => s.method === "POST")?.replica));
  assert.ok(victim, JSON.stringify(first.served));
  const others = REPLICAS.filter((r) => r !== victim);

  process.kill(victim.pid, "SIGKILL");
  await sending; // its stream broke with the replica
  assert.notEqual(first.status, "streaming");

  // The finished step (the calculator call and its result) is stored, and every
  // live replica serves it.
  const stored = await getJSON(`${others[0].url}/api/sessions/${id}`);
  assert.equal(stored.messages.length, 2, JSON.stringify(stored.messages));
  const calls = toolParts(stored.messages[1]);
  assert.equal(calls.length, 1, JSON.stringify(stored.messages[1].parts));
  assert.equal(calls[0].state, "output-available");
  assert.equal(calls[0].output.results[0].result.decimal, "42");
  const again = await getJSON(`${others[1].url}/api/sessions/${id}`);
  assert.deepEqual(again.messages, stored.messages);

  // The dead replica's lease is still live: a new message at another replica waits
  // for it (in that replica's queue, unanswered) and runs once it expired (bounded).
  const waiting = makeChat(others[0].url, id, structuredClone(stored.messages));
  const sendingAgain = waiting.sendMessage({ text: "thanks" });
  await until("the new message to wait for the dead replica's lease", async () => {
    assert.deepEqual(waiting.served, [], "no answer while the dead replica's lease is live");
    return (await queuedTurns(others[0].url)) === 1;
  });
  await until("the lease to expire and the waiting message to be answered", () => waiting.status !== "submitted" && waiting.status !== "streaming", LEASE_SECS * 4 + 30);
  await sendingAgain;
  assert.equal(waiting.status, "ready", waiting.error?.message);
  assert.deepEqual(waiting.served.map((s) => s.status), [200]);
  assert.equal(text(waiting.messages.at(-1)), "You're welcome.");
  assert.equal(await queuedTurns(others[0].url), 0);

  for (const r of others) {
    const after = await getJSON(`${r.url}/api/sessions/${id}`);
    assert.equal(after.messages.length, 4, r.name);
    assert.deepEqual(after.messages[1].parts.filter((p) => p.type === "tool-hub_call"), calls, r.name);
    assert.equal(text(after.messages[3]), "You're welcome.");
  }
});
