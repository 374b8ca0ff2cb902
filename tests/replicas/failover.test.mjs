// `kill -9` of the replica running a turn: no finished step is lost (every other
// replica serves it), a new turn is refused 409 while the dead replica's lease is
// live, and the chat goes on on another replica once the lease expired. Runs last:
// the killed replica stays down (HAProxy's health check takes it out).

import { test } from "node:test";
import assert from "node:assert/strict";
import { LB, LEASE_SECS, REPLICAS, getJSON, held, makeChat, replica, text, toolParts, until } from "./lib.mjs";

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

  // The dead replica's lease is still live: another replica refuses a new turn.
  const refused = makeChat(others[0].url, id, structuredClone(stored.messages));
  await refused.sendMessage({ text: "thanks" });
  assert.equal(refused.served[0].status, 409, JSON.stringify(refused.served));
  assert.equal(refused.status, "error");
  assert.match(refused.error.message, /turn_in_progress/);

  // Once it expires (bounded), the chat continues through the balancer on a live replica.
  const resumed = await until("the lease to expire and a new turn to be accepted", async () => {
    const chat = makeChat(LB, id, structuredClone(stored.messages));
    await chat.sendMessage({ text: "thanks" });
    if (chat.status === "ready") return chat;
    assert.equal(chat.served.at(-1)?.status, 409, chat.error?.message);
    await new Promise((r) => setTimeout(r, 200));
    return null;
  }, LEASE_SECS * 4 + 30);
  const turn = resumed.served.find((s) => s.method === "POST" && s.status === 200);
  assert.notEqual(turn.replica, victim.name);
  assert.equal(text(resumed.messages.at(-1)), "You're welcome.");

  for (const r of others) {
    const after = await getJSON(`${r.url}/api/sessions/${id}`);
    assert.equal(after.messages.length, 4, r.name);
    assert.deepEqual(after.messages[1].parts.filter((p) => p.type === "tool-hub_call"), calls, r.name);
    assert.equal(text(after.messages[3]), "You're welcome.");
  }
});
