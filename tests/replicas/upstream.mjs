// A scripted OpenAI-compatible upstream for the replicas suite, shared by the three
// replicas: `POST /v1/chat/completions` streams chat-completion chunks decided from the
// conversation it is sent. It plays a model that uses the calculator:
//
//   "compute EXPR ..."          -> step 1: hub_call of calc.eval with EXPR
//                                  step 2: "The answer is " + the result's decimal
//   any other user message      -> one step: "You're welcome."
//
// Gates make a turn stop in the middle on purpose: a user message containing
// `gate:NAME` streams the first words of step 2 ("The answer is ") and then holds the
// rest until the test releases NAME. Step 1 has then finished (the hub saved it and
// published its chunks), and step 2 is unfinished: what a resume must replay and
// continue, and what a replica killed now may lose. With two gates (`gate:A gate:B`)
// step 1 also stops, after "Computing. " and before its tool call, at the first.
//
//   GET  /held            -> ["NAME", ...]: the gates a step is waiting on now
//   POST /release/NAME    -> 204; the held step (and any later one) goes on
//
// `node upstream.mjs` listens on a free loopback port and prints its base URL.

import http from "node:http";

const MODEL = "scripted-1";

function chunk(delta, finish = null) {
  return { id: "chatcmpl-r", object: "chat.completion.chunk", created: 1, model: MODEL, choices: [{ index: 0, delta, finish_reason: finish }] };
}

function callChunk(id, args) {
  const call = { index: 0, id, type: "function", function: { name: "hub_call", arguments: JSON.stringify(args) } };
  return chunk({ tool_calls: [call] });
}

/// The result's decimal from the hub_call output in a tool message.
function answerOf(toolMessage) {
  try {
    const out = JSON.parse(toolMessage.content);
    const first = (Array.isArray(out) ? out : out.results)[0];
    return first.ok ? first.result.decimal : `an error (${first.error.code})`;
  } catch {
    return "unreadable";
  }
}

/// `{ before, after, gate }`: the chunks to send, and the gate (if any) to wait on
/// between `before` and `after`.
function script(messages) {
  let lastUser = -1;
  messages.forEach((m, i) => { if (m.role === "user") lastUser = i; });
  const text = String(messages[lastUser]?.content ?? "");
  const tools = messages.slice(lastUser + 1).filter((m) => m.role === "tool");
  const compute = /compute (\S+)/i.exec(text);
  const gates = [...text.matchAll(/gate:([A-Za-z0-9_-]+)/g)].map((m) => m[1]);
  if (!compute) {
    return { before: [chunk({ role: "assistant", content: "You're " }), chunk({ content: "welcome." }), chunk({}, "stop")], after: [] };
  }
  if (tools.length === 0) {
    const id = `call_${Date.now().toString(36)}`;
    const call = [callChunk(id, { calls: [{ tool: "calc.eval", input: { expression: compute[1] } }] }), chunk({}, "tool_calls")];
    const gate = gates.length > 1 ? gates[0] : undefined;
    return gate
      ? { before: [chunk({ role: "assistant", content: "Computing. " })], gate, after: call }
      : { before: [chunk({ role: "assistant", content: "Computing. " }), ...call], after: [] };
  }
  return {
    before: [chunk({ role: "assistant", content: "The answer " }), chunk({ content: "is " })],
    gate: gates.at(-1),
    after: [chunk({ content: `${answerOf(tools[tools.length - 1])}.` }), chunk({}, "stop")],
  };
}

const held = new Map(); // gate name -> resolve functions of the steps waiting on it
const released = new Set();

/// Resolves when `gate` is released or `res` closes (a replica killed while its step
/// is held); a closed step no longer counts as held.
function waitFor(gate, res) {
  if (!gate || released.has(gate)) return Promise.resolve();
  return new Promise((resolve) => {
    held.set(gate, [...(held.get(gate) || []), resolve]);
    res.on("close", () => {
      const left = (held.get(gate) || []).filter((r) => r !== resolve);
      if (left.length) held.set(gate, left);
      else held.delete(gate);
      resolve();
    });
  });
}

function send(res, c) {
  res.write(`data: ${JSON.stringify(c)}\n\n`);
}

async function completions(req, res) {
  let body = "";
  for await (const piece of req) body += piece;
  const request = JSON.parse(body);
  const { before, gate, after } = script(request.messages);
  res.writeHead(200, { "content-type": "text/event-stream" });
  for (const c of before) send(res, c);
  await waitFor(gate, res);
  if (res.destroyed || res.writableEnded) return;
  for (const c of after) send(res, c);
  send(res, { id: "chatcmpl-r", object: "chat.completion.chunk", created: 1, model: MODEL, choices: [], usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 } });
  res.end("data: [DONE]\n\n");
}

const server = http.createServer(async (req, res) => {
  if (req.method === "GET" && req.url === "/v1/models") {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ object: "list", data: [{ id: MODEL, object: "model", created: 0, owned_by: "tests" }] }));
  } else if (req.method === "POST" && req.url === "/v1/chat/completions") {
    await completions(req, res);
  } else if (req.method === "GET" && req.url === "/held") {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify([...held.keys()]));
  } else if (req.method === "POST" && req.url.startsWith("/release/")) {
    const gate = decodeURIComponent(req.url.slice("/release/".length));
    released.add(gate);
    for (const resolve of held.get(gate) || []) resolve();
    held.delete(gate);
    res.writeHead(204).end();
  } else {
    res.writeHead(404).end();
  }
});

server.listen(0, "127.0.0.1", () => {
  console.log(`http://127.0.0.1:${server.address().port}/v1`);
});
