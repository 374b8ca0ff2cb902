// What the replicas suite's node tests share: the set-up run.sh describes in the
// environment, the AI SDK chat client (ai 7.x, `AbstractChat` + `DefaultChatTransport`,
// no React) with a fetch that records which replica answered, and waiting for events.

import assert from "node:assert/strict";
import * as ai from "ai7";
import { ArrayState } from "../lib/chat-state.mjs";
import { deltas, readChunks } from "../lib/ui-stream.mjs";
export { deltas, readChunks };

/// `[{ name, url, pid }]`: the replicas, named as HAProxy names them.
export const REPLICAS = JSON.parse(process.env.REPLICAS || "[]");
/// The load balancer in front of them (HAProxy, round robin).
export const LB = process.env.LB_URL;
/// The scripted model's control endpoints (see upstream.mjs).
export const UPSTREAM = process.env.UPSTREAM_URL?.replace(/\/v1$/, "");
export const TOKEN = process.env.TOKEN;
export const LEASE_SECS = Number(process.env.LEASE_SECS);
assert.equal(REPLICAS.length, 3, "REPLICAS must name the three replicas");
assert.ok(LB && UPSTREAM && TOKEN && LEASE_SECS > 0, "LB_URL, UPSTREAM_URL, TOKEN and LEASE_SECS come from run.sh");

export const auth = { authorization: `Bearer ${TOKEN}` };
export const replica = (name) => REPLICAS.find((r) => r.name === name);

/// The replica HAProxy sent a response to (its `X-Served-By` header).
export const servedBy = (response) => response.headers.get("x-served-by");

/// A `useChat`-style client of `${base}/api/chat` for session `id`. `chat.served`
/// lists `{ method, status, replica }` of every response it got (the replica from
/// HAProxy's header; null when `base` is a replica itself).
/// `headers` are sent with every request besides the token (e.g. a cookie that pins
/// a replica behind HAProxy).
export function makeChat(base, id, messages = [], headers = {}) {
  const served = [];
  const recording = async (input, init) => {
    const response = await fetch(input, init);
    served.push({ method: init?.method || "GET", status: response.status, replica: servedBy(response) });
    return response;
  };
  class Chat extends ai.AbstractChat {
    constructor(options) { super({ ...options, state: new ArrayState(messages) }); }
  }
  const chat = new Chat({ id, transport: new ai.DefaultChatTransport({ api: `${base}/api/chat`, headers: { ...auth, ...headers }, fetch: recording }) });
  chat.served = served;
  return chat;
}

export const toolParts = (m) => m.parts.filter((p) => p.type === "tool-hub_call");
export const text = (m) => m.parts.filter((p) => p.type === "text").map((p) => p.text).join("");

/// GET `url` with the token; the parsed body of a 200.
export async function getJSON(url) {
  const r = await fetch(url, { headers: auth });
  assert.equal(r.status, 200, `${url}: ${r.status} ${await r.clone().text()}`);
  return r.json();
}

/// Polls `probe` until it returns a truthy value (returned), for at most `seconds`.
export async function until(what, probe, seconds = 30) {
  const deadline = Date.now() + seconds * 1000;
  for (;;) {
    const value = await probe();
    if (value) return value;
    assert.ok(Date.now() < deadline, `timed out after ${seconds} s waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/// Waits until the scripted model holds a step at `gate` (its step 1 has finished).
export async function held(gate) {
  await until(`the model to hold gate ${gate}`, async () => (await (await fetch(`${UPSTREAM}/held`)).json()).includes(gate), 60);
}

export async function release(gate) {
  const r = await fetch(`${UPSTREAM}/release/${gate}`, { method: "POST" });
  assert.equal(r.status, 204);
}


/// The stored session `id` on `base` once no turn runs in it.
export async function settled(base, id) {
  return until(`the turn of ${id} to end (${base})`, async () => {
    const s = await getJSON(`${base}/api/sessions/${id}`);
    return s.active === false ? s : null;
  });
}

/// `wasmhub_chat_queued_turns` from `base`'s /metrics.
export async function queuedTurns(base) {
  const r = await fetch(`${base}/metrics`, { headers: auth });
  const body = await r.text();
  assert.equal(r.status, 200, `${base}/metrics: ${body}`);
  const line = body.split("\n").find((l) => l.startsWith("wasmhub_chat_queued_turns "));
  assert.ok(line, `no wasmhub_chat_queued_turns in ${base}/metrics`);
  return Number(line.split(" ")[1]);
}
