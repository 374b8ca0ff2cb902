// The AI SDK chat client (ai 7.x) through HAProxy in front of three replicas on one
// PostgreSQL: a multi-turn chat whose turns land on different replicas and whose
// history every replica serves, and a live turn joined (resumeStream) on a replica
// other than the one running it, which replays what was sent and continues live; a
// client that left a turn mid-answer and comes back at another replica gets all of
// it; `POST /api/chat/{id}/stop` sent to a replica that does not run the turn stops it.

import { test } from "node:test";
import assert from "node:assert/strict";
import {
  LB, REPLICAS, auth, deltas, getJSON, held, makeChat, readChunks, release, servedBy, settled, text, toolParts, until,
} from "./lib.mjs";

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

// Once straight at the replicas, once through HAProxy (which may hold its side of
// the tab's connection open until it has something to forward, so the running
// replica sees the tab leave late; a cookie makes the reload land elsewhere).
for (const via of ["replica", "HAProxy"]) test(`a client that left a turn mid-answer comes back at another replica (via ${via}) and gets the whole answer`, async () => {
  const id = `away-${via}-${Date.now()}`;
  // Two gates: the model holds before its tool call (the tab reads up to there and
  // leaves), then at the start of step 2, so the tool call runs with nobody watching.
  const [g1, g2] = [`away1${via}${Date.now()}`, `away2${via}${Date.now()}`];
  const tab = makeChat(via === "HAProxy" ? LB : REPLICAS[0].url, id);
  const sending = tab.sendMessage({ text: `compute 6*7 gate:${g1} gate:${g2}` });
  try {
    await held(g1);
    await until("the start of the answer on the tab", () => tab.messages[1] && text(tab.messages[1]) === "Computing. ");
    const running = via === "HAProxy" ? tab.served[0]?.replica : REPLICAS[0].name;
    assert.ok(REPLICAS.some((r) => r.name === running), `the turn runs on a replica: ${JSON.stringify(tab.served)}`);
    // The tab goes away mid-answer: the AI SDK aborts its fetch.
    await tab.stop();
    await sending;
    assert.equal(tab.status, "ready", tab.error?.message);
    assert.equal(text(tab.messages[1]), "Computing. ");
    assert.deepEqual(toolParts(tab.messages[1]), []);

    // The turn goes on unwatched: the tool call runs and step 2 begins.
    await release(g1);
    await held(g2);

    // The client comes back at another replica: the stored messages there, then resume.
    const other = REPLICAS.find((r) => r.name !== running);
    const midway = await getJSON(`${other.url}/api/sessions/${id}`);
    assert.equal(midway.active, true, `${other.name} sees the turn still running on ${running}`);
    const back = via === "HAProxy"
      ? makeChat(LB, id, structuredClone(midway.messages), { cookie: `SERVERID=${other.name}` })
      : makeChat(other.url, id, structuredClone(midway.messages));
    const resuming = back.resumeStream();
    await until("the replay on the client that came back", () => {
      const last = back.messages.at(-1);
      return last?.role === "assistant" && text(last) === "Computing. The answer is ";
    });
    await release(g2);
    await resuming;
    assert.equal(back.status, "ready", back.error?.message);
    assert.deepEqual(back.served, [{ method: "GET", status: 200, replica: via === "HAProxy" ? other.name : null }]);
    assert.deepEqual(back.messages.map((m) => m.role), ["user", "assistant"]);
    const answer = back.messages[1];
    assert.equal(text(answer), "Computing. The answer is 42.", "the whole answer, to its last character");
    const [call] = toolParts(answer);
    assert.equal(call?.state, "output-available", JSON.stringify(answer.parts));
    assert.equal(call.output.results[0].result.decimal, "42");
    assert.notEqual(answer.metadata?.aborted, true, JSON.stringify(answer.metadata));
    assert.equal(answer.metadata?.finishReason, "stop", JSON.stringify(answer.metadata));

    for (const r of REPLICAS) {
      const s = await settled(r.url, id);
      assert.deepEqual(s.messages.map((m) => m.id), back.messages.map((m) => m.id), r.name);
      assert.equal(text(s.messages[1]), "Computing. The answer is 42.", r.name);
      assert.notEqual(s.messages[1].metadata?.aborted, true, r.name);
    }
  } finally {
    await release(g1);
    await release(g2);
  }
});

test("a stop sent to a replica that does not run the turn stops it: every stream ends with an abort", async () => {
  const id = `stop-${Date.now()}`;
  const gate = `stop${Date.now()}`;
  try {
    const response = await fetch(`${LB}/api/chat`, {
      method: "POST",
      headers: { ...auth, "content-type": "application/json" },
      body: JSON.stringify({ id, trigger: "submit-message", messages: [{ id: `u-${id}`, role: "user", parts: [{ type: "text", text: `compute 6*7 gate:${gate}` }] }] }),
    });
    assert.equal(response.status, 200);
    const running = servedBy(response);
    const posted = readChunks(response);
    await held(gate);
    const [stopAt, watchAt] = REPLICAS.filter((r) => r.name !== running);
    // A watcher on the third replica too.
    const watching = await fetch(`${watchAt.url}/api/chat/${id}/stream`, { headers: auth });
    assert.equal(watching.status, 200);
    const watched = readChunks(watching);

    const stop = await fetch(`${stopAt.url}/api/chat/${id}/stop`, { method: "POST", headers: auth });
    assert.equal(stop.status, 204, `POST /api/chat/${id}/stop at ${stopAt.name} (the turn runs on ${running})`);
    for (const [who, chunks] of [[`the POST on ${running}`, await posted], [`the watcher on ${watchAt.name}`, await watched]]) {
      assert.deepEqual(chunks.at(-1), { type: "abort", reason: "stopped on request" }, `${who}: ${JSON.stringify(chunks.slice(-3))}`);
      assert.equal(deltas(chunks), "Computing. The answer is ", who);
    }
    for (const r of REPLICAS) {
      const s = await settled(r.url, id);
      const answer = s.messages.at(-1);
      assert.equal(answer.role, "assistant", r.name);
      assert.equal(answer.metadata?.aborted, true, `${r.name}: ${JSON.stringify(answer.metadata)}`);
      assert.equal(text(answer), "Computing. The answer is ", r.name);
      assert.equal(toolParts(answer)[0]?.state, "output-available", "the finished step stays");
    }
    // No turn runs now: a stop anywhere is the same 204.
    const again = await fetch(`${stopAt.url}/api/chat/${id}/stop`, { method: "POST", headers: auth });
    assert.equal(again.status, 204);
  } finally {
    await release(gate);
  }
});
