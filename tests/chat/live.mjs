// What the tests of live turns share: waiting for events (the scripted upstream's
// holds, the hub's queue, a stored session), and reading a UI message stream raw.
// UPSTREAM_URL names the scripted upstream (upstream.mjs), HUB_URL the open hub.

import assert from "node:assert/strict";
import { LONG_WORDS } from "./upstream.mjs";
import { deltas, readChunks } from "../lib/ui-stream.mjs";
export { deltas, readChunks };

const HUB = process.env.HUB_URL;
const UPSTREAM = process.env.UPSTREAM_URL;

/// The first `n` words of the long answer as a client has them then (each word
/// chunk ends with a space).
export const firstWords = (n) => LONG_WORDS.slice(0, n).map((w) => `${w} `).join("");

/// Polls `probe` until it returns a truthy value (returned), for at most `seconds`.
export async function until(what, probe, seconds = 30) {
  const deadline = Date.now() + seconds * 1000;
  let last;
  for (;;) {
    last = await probe();
    if (last) return last;
    assert.ok(Date.now() < deadline, `timed out after ${seconds} s waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/// Waits until the scripted upstream holds an answer at `key`.
export async function held(key) {
  await until(`the upstream to hold at ${key}`, async () => (await (await fetch(`${UPSTREAM}/held`)).json()).includes(key));
}

/// Lets the answers held at `key` go on (before or after they reach it).
export async function release(key) {
  const r = await fetch(`${UPSTREAM}/release/${key}`, { method: "POST" });
  assert.equal(r.status, 204);
}

/// `wasmhub_chat_queued_turns` from the hub's /metrics.
export async function queuedTurns(hub = HUB) {
  const text = await (await fetch(`${hub}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith("wasmhub_chat_queued_turns "));
  assert.ok(line, `no wasmhub_chat_queued_turns in /metrics:\n${text}`);
  return Number(line.split(" ")[1]);
}

/// The stored session `id` (GET /api/sessions/{id}, 200).
export async function stored(id, hub = HUB) {
  const r = await fetch(`${hub}/api/sessions/${encodeURIComponent(id)}`);
  assert.equal(r.status, 200, `GET /api/sessions/${id}`);
  return r.json();
}

/// The stored session `id` once no turn runs in it.
export async function settled(id, hub = HUB) {
  return until(`the turn of ${id} to end`, async () => {
    const s = await stored(id, hub);
    return s.active === false ? s : null;
  });
}

