// Tenants: the AI SDK 7 chat client (`AbstractChat` + `DefaultChatTransport` with a
// bearer token) as two tenants, alice and bob, on one hub that also has an operator
// token, ops. Each tenant sees only its own sessions and records; another tenant's
// session answers exactly like an unknown id; the operator sees everyone's.
//
// TENANTS_HUB_URL names that hub, ALICE_TOKEN, BOB_TOKEN and OPS_TOKEN its secrets,
// and UPSTREAM_URL the scripted upstream (upstream.mjs) behind it (see run.sh).

import { test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { AbstractChat, DefaultChatTransport } from "ai7";
import { ArrayState } from "../lib/chat-state.mjs";

const HUB = process.env.TENANTS_HUB_URL;
const UPSTREAM = process.env.UPSTREAM_URL;
const SECRETS = { alice: process.env.ALICE_TOKEN, bob: process.env.BOB_TOKEN, ops: process.env.OPS_TOKEN };
assert.ok(HUB && UPSTREAM, "TENANTS_HUB_URL and UPSTREAM_URL must be set");
assert.ok(SECRETS.alice && SECRETS.bob && SECRETS.ops, "ALICE_TOKEN, BOB_TOKEN and OPS_TOKEN must be set");

const auth = (who) => ({ Authorization: `Bearer ${SECRETS[who]}` });

/// The sessions each tenant has made so far: what its own listing must hold, exactly.
const created = { alice: new Set(), bob: new Set() };

/// A `useChat`-like client of `who` for session `id`.
function chatAs(who, id, { messages = [], fetch = undefined } = {}) {
  class Chat extends AbstractChat {
    constructor(options) { super({ ...options, state: new ArrayState(messages) }); }
  }
  const transport = new DefaultChatTransport({ api: `${HUB}/api/chat`, headers: auth(who), fetch });
  return new Chat({ id, transport });
}

function api(who, path, init = {}) {
  return fetch(`${HUB}${path}`, { ...init, headers: { ...auth(who), ...init.headers } });
}

async function json(who, path) {
  const r = await api(who, path);
  const body = await r.text();
  assert.equal(r.status, 200, `${who}: GET ${path}: ${body}`);
  return JSON.parse(body);
}

/// A promise and its resolve function.
function deferred() {
  let resolve;
  const promise = new Promise((r) => { resolve = r; });
  return { promise, resolve };
}

/// A fetch for a transport that reports each response's status as soon as its
/// headers arrive (for a POST /api/chat: the turn runs).
const reporting = (report) => async (...args) => {
  const r = await fetch(...args);
  report(r.status);
  return r;
};

const text = (m) => m.parts.filter((p) => p.type === "text").map((p) => p.text).join("");
const ids = (sessions) => new Set(sessions.map((s) => s.id));

/// What `who` gets from `method path` for a session id nobody has used, with `id` in
/// its place: the answer another tenant's session `id` must give, byte for byte.
async function unknownAnswer(who, method, path, id) {
  const ghost = `ghost-${randomUUID()}`;
  const r = await api(who, path.replace("{id}", ghost), { method });
  const body = await r.text();
  return { status: r.status, type: r.headers.get("content-type"), body: body.replaceAll(ghost, id) };
}

async function assertAnswersLikeUnknown(who, method, path, id) {
  const expected = await unknownAnswer(who, method, path, id);
  const r = await api(who, path.replace("{id}", id), { method });
  const what = `${who}: ${method} ${path} with ${id}`;
  // Status first: the body of a stream wrongly joined would only end with the turn.
  assert.equal(r.status, expected.status, what);
  const got = { status: r.status, type: r.headers.get("content-type"), body: await r.text() };
  assert.deepEqual(got, expected, what);
  return got;
}

// The two conversations the tests look at, held once (the first test that needs them).
let held;
const conversations = () => (held ??= hold());

async function hold() {
  const alice = chatAs("alice", `alice-${randomUUID()}`);
  created.alice.add(alice.id);
  // One tool call (calc.eval) and a second turn.
  await alice.sendMessage({ text: "Calc only: what is 6*7?" });
  assert.equal(alice.status, "ready", alice.error?.message);
  await alice.sendMessage({ text: "thanks" });
  assert.equal(alice.status, "ready", alice.error?.message);
  const bob = chatAs("bob", `bob-${randomUUID()}`);
  created.bob.add(bob.id);
  await bob.sendMessage({ text: "hello" });
  assert.equal(bob.status, "ready", bob.error?.message);
  return { alice, bob };
}

test("alice and bob each hold a conversation; each lists only their own sessions, as their principal", async () => {
  const { alice, bob } = await conversations();
  assert.equal(alice.messages.length, 4);
  const [call] = alice.messages[1].parts.filter((p) => p.type === "tool-hub_call");
  assert.equal(call?.state, "output-available", JSON.stringify(alice.messages[1].parts));
  assert.deepEqual([call.output.results[0].tool, call.output.results[0].result.fraction], ["calc.eval", "42"]);
  assert.match(text(alice.messages[1]), /^Computing\.Done: calc\.eval gave /);
  assert.equal(text(alice.messages[3]), "You're welcome.");
  assert.equal(bob.messages.length, 2);
  assert.equal(text(bob.messages[1]), "You're welcome.");

  for (const [who, chat] of [["alice", alice], ["bob", bob]]) {
    const { sessions } = await json(who, "/api/sessions");
    assert.deepEqual(ids(sessions), created[who], `${who}'s listing`);
    for (const s of sessions) {
      assert.equal(s.principal, who, JSON.stringify(s));
      assert.ok(Number.isInteger(s.storedBytes) && s.storedBytes > 0, JSON.stringify(s));
    }
    const own = await json(who, `/api/sessions/${chat.id}`);
    assert.equal(own.principal, who);
    assert.deepEqual(own.messages.map((m) => m.id), chat.messages.map((m) => m.id));
  }
});

test("bob gets alice's session answered exactly like an unknown id: GET and DELETE 404, stream 204", async () => {
  const { alice } = await conversations();
  const before = await json("alice", `/api/sessions/${alice.id}`);

  const got = await assertAnswersLikeUnknown("bob", "GET", "/api/sessions/{id}", alice.id);
  assert.equal(got.status, 404);
  assert.deepEqual(JSON.parse(got.body), { error: { code: "not_found", message: `no session "${alice.id}"` } });
  const deleted = await assertAnswersLikeUnknown("bob", "DELETE", "/api/sessions/{id}", alice.id);
  assert.equal(deleted.status, 404);
  assert.equal(deleted.body, got.body);
  const stream = await assertAnswersLikeUnknown("bob", "GET", "/api/chat/{id}/stream", alice.id);
  assert.equal(stream.status, 204);

  // bob's DELETE removed nothing.
  assert.deepEqual(await json("alice", `/api/sessions/${alice.id}`), before);
});

test("while alice's turn runs, bob can neither join nor post to it; the operator and alice join it", async () => {
  const id = `alice-live-${randomUUID()}`;
  created.alice.add(id);
  const key = `hold-${randomUUID()}`;
  // The hub answers the POST once the turn runs; the upstream then holds the answer
  // after its first chunk until the test releases it.
  const aliceAnswered = deferred();
  const alice = chatAs("alice", id, { fetch: reporting(aliceAnswered.resolve) });
  const sending = alice.sendMessage({ text: `Hold ${key}: thanks` });
  const watchers = [];
  let bobsView;
  try {
    assert.equal(await aliceAnswered.promise, 200);

    const stream = await assertAnswersLikeUnknown("bob", "GET", "/api/chat/{id}/stream", id);
    assert.equal(stream.status, 204);
    // bob's AI SDK client resuming the id finds nothing to join. (Its status is
    // checked before waiting for it: a stream it wrongly joined ends only on release.)
    const bobAnswered = deferred();
    bobsView = chatAs("bob", id, { fetch: reporting(bobAnswered.resolve) });
    const resuming = bobsView.resumeStream();
    assert.equal(await bobAnswered.promise, 204);
    await resuming;
    assert.equal(bobsView.status, "ready", bobsView.error?.message);
    // A turn of bob's in it is refused as for an unknown session, not as a busy one.
    const post = await api("bob", "/api/chat", {
      method: "POST", headers: { "content-type": "application/json" },
      body: JSON.stringify({ id, trigger: "submit-message", messages: [{ id: `u-${randomUUID()}`, role: "user", parts: [{ type: "text", text: "hello" }] }] }),
    });
    assert.equal(post.status, 404);
    assert.deepEqual(await post.json(), { error: { code: "not_found", message: `no session "${id}"` } });

    // The turn is still live: the operator and alice join it.
    for (const who of ["ops", "alice"]) {
      const r = await api(who, `/api/chat/${id}/stream`);
      assert.equal(r.status, 200, `${who} joins the running turn`);
      watchers.push(r.text());
    }
  } finally {
    // Whatever failed above, the turn ends, so nothing waits for the hub's timeouts.
    const released = await fetch(`${UPSTREAM}/release/${key}`, { method: "POST" });
    assert.equal(released.status, 204);
  }
  await sending;
  assert.equal(alice.status, "ready", alice.error?.message);
  assert.equal(text(alice.messages[1]), "You're welcome.");
  for (const body of await Promise.all(watchers)) assert.match(body, /welcome\./);
  assert.deepEqual(bobsView.messages, []);
  // The session holds alice's turn only.
  const stored = await json("alice", `/api/sessions/${id}`);
  assert.deepEqual(stored.messages.map((m) => m.id), alice.messages.map((m) => m.id));
});

test("bob's AI SDK client cannot continue or regenerate alice's conversation; it stays as it was", async () => {
  const { alice } = await conversations();
  const before = await json("alice", `/api/sessions/${alice.id}`);
  const expected = await unknownAnswer("bob", "GET", "/api/sessions/{id}", alice.id);

  const continuing = chatAs("bob", alice.id, { messages: structuredClone(before.messages) });
  await continuing.sendMessage({ text: "And what did you tell alice?" });
  const regenerating = chatAs("bob", alice.id, { messages: structuredClone(before.messages) });
  await regenerating.regenerate();
  for (const [how, chat] of [["continue", continuing], ["regenerate", regenerating]]) {
    assert.equal(chat.status, "error", how);
    assert.equal(chat.error.statusCode, 404, `${how}: ${chat.error.message}`);
    assert.equal(chat.error.responseBody, expected.body, how);
  }

  assert.deepEqual(await json("alice", `/api/sessions/${alice.id}`), before);
});

test("the operator lists every tenant's sessions, one tenant's with ?principal=, and cannot continue them", async () => {
  const { alice } = await conversations();
  const { sessions } = await json("ops", "/api/sessions");
  const principals = new Map(sessions.map((s) => [s.id, s.principal]));
  for (const who of ["alice", "bob"]) {
    for (const id of created[who]) assert.equal(principals.get(id), who, `${id} in ${JSON.stringify(sessions)}`);
  }

  const only = (await json("ops", "/api/sessions?principal=alice")).sessions;
  assert.deepEqual(ids(only), created.alice);
  assert.ok(only.every((s) => s.principal === "alice"), JSON.stringify(only));

  const before = await json("ops", `/api/sessions/${alice.id}`);
  assert.equal(before.principal, "alice");
  // Only the owner goes on with a conversation.
  const ops = chatAs("ops", alice.id, { messages: structuredClone(before.messages) });
  await ops.sendMessage({ text: "An operator's word" });
  assert.equal(ops.status, "error");
  assert.equal(ops.error.statusCode, 403, ops.error.message);
  assert.equal(JSON.parse(ops.error.responseBody).error.code, "not_owner");
  assert.deepEqual(await json("alice", `/api/sessions/${alice.id}`), before);
});

test("bob's calls and accounting hold no record of alice's; the operator's hold hers", async () => {
  const { alice, bob } = await conversations();

  // The records exist: alice's calc.eval call and her model steps.
  const aliceCalls = (await json("ops", "/api/calls?limit=1000&principal=alice")).calls;
  assert.ok(aliceCalls.some((c) => c.tool === "calc.eval"), JSON.stringify(aliceCalls));
  assert.ok(aliceCalls.every((c) => c.caller === "alice"), JSON.stringify(aliceCalls));
  const aliceSteps = (await json("ops", "/api/accounting?limit=1000&principal=alice")).records;
  assert.ok(aliceSteps.some((r) => r.kind === "model_step" && r.session === alice.id), JSON.stringify(aliceSteps));
  assert.ok(aliceSteps.every((r) => r.caller === "alice"), JSON.stringify(aliceSteps));
  const own = (await json("alice", "/api/calls?limit=1000")).calls;
  assert.ok(own.some((c) => c.tool === "calc.eval"), JSON.stringify(own));

  // bob sees only his own: his model steps, none of alice's, even when he names her.
  const bobCalls = (await json("bob", "/api/calls?limit=1000")).calls;
  assert.ok(bobCalls.every((c) => c.caller === "bob"), JSON.stringify(bobCalls));
  const bobRecords = (await json("bob", "/api/accounting?limit=1000")).records;
  assert.ok(bobRecords.some((r) => r.kind === "model_step" && r.session === bob.id), JSON.stringify(bobRecords));
  assert.ok(bobRecords.every((r) => r.caller === "bob"), JSON.stringify(bobRecords));
  assert.deepEqual((await json("bob", "/api/calls?limit=1000&principal=alice")).calls, []);
  assert.deepEqual((await json("bob", "/api/accounting?limit=1000&principal=alice")).records, []);
});
