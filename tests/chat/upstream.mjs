// A scripted OpenAI-compatible upstream for the chat tests: `POST /v1/chat/completions`
// streams chat-completion chunks decided from the conversation it is sent, and
// `GET /v1/models` lists one model. It plays a model that uses the hub's meta-tools:
//
//   user asks                -> hub_search twice (a calculator, a text operation)
//   after the searches       -> hub_schema for the top hit of each
//   after the schemas        -> hub_call with both operations in one batch, inputs
//                               built from the schemas
//   after the call           -> a text answer quoting both results
//   any other user message   -> a plain text answer (no tools)
//
// "calc only" (needs only the calc plugin): one hub_call of calc.eval with 6*7 (no
// search, no schema), then the same kind of answer quoting the result.
//
// Approvals (the `examples` test guest's `wipe` is destructive, so the hub asks):
//   "wipe ... everything"     -> two hub_calls of examples.wipe in one step (call_w1,
//                               call_w2), then an answer saying what ran and what
//                               the user denied (with the reason)
//   "wipe ... table"          -> one hub_call of examples.wipe, then a Markdown answer
//                               with a table, a code block and a <script> tag
//
// A user message containing "slowly" makes each chunk wait 150 ms.
//
// A user message containing "hold KEY" stops its answer after the first chunk until
// `POST /v1/release/KEY` (in either order), so a test knows the turn is live for as
// long as it needs, without timing. `GET /v1/held` lists the keys an answer waits on
// now.
//
// A user message containing "long answer" is answered with LONG_ANSWER, one word a
// chunk; its "hold KEY"s (one or more) split its 62 words evenly: one stops it after
// "w30", two after "w19" and after "w40". "huge answer": HUGE_ANSWER, 4,000 chunks,
// its holds split as evenly.
//
// Fallback: a request for the model "broken" streams the start of an answer and of a
// tool call, then cuts the connection (a target failing mid-stream).
//
// Every request body is recorded so tests can check what the hub sent; `GET
// /v1/requests` lists them (oldest first) for a test in another process.

import http from "node:http";

export const MODEL = "scripted-1";

/// The "long answer": 60 numbered words and a last sentence, so a test can tell
/// every chunk arrived, to the last character.
export const LONG_WORDS = [...Array.from({ length: 60 }, (_, i) => `w${i + 1}`), "(the", "end)."];
export const LONG_ANSWER = LONG_WORDS.join(" ");

/// The "huge answer": 4,000 numbered pieces of 500 bytes (2 MB), far past the
/// suite's `agent.resume_buffer_kb`, so a reconnect gets a replay of the message.
export const HUGE_PIECES = Array.from({ length: 4000 }, (_, i) => `p${i + 1}:`.padEnd(499, "~") + " ");
export const HUGE_ANSWER = HUGE_PIECES.join("");

function chunk(delta, finish = null) {
  return { id: "chatcmpl-1", object: "chat.completion.chunk", created: 1, model: MODEL, choices: [{ index: 0, delta, finish_reason: finish }] };
}

function toolCalls(calls) {
  return calls.map((c, index) => chunk({ tool_calls: [{ index, id: `call_${c.id}`, type: "function", function: { name: c.name, arguments: JSON.stringify(c.args) } }] }));
}

/// A value for a schema property, chosen for the operation's kind.
function sample(name, schema, kind) {
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  if (schema.enum) return schema.enum[0];
  if (type === "number" || type === "integer") return /b|second|right|y/.test(name) ? 7 : 6;
  if (type === "boolean") return false;
  if (type === "array") return [sample(name, schema.items || { type: "string" }, kind)];
  if (type === "object") return {};
  return kind === "calc" ? "6*7" : "hello world";
}

function inputFor(schema, kind) {
  const input = {};
  const props = (schema && schema.properties) || {};
  const required = (schema && schema.required) || Object.keys(props).slice(0, 1);
  for (const name of required) input[name] = sample(name, props[name] || {}, kind);
  return input;
}

function parse(content) {
  try { return JSON.parse(content); } catch { return content; }
}

/// The chunks of the next step for `messages` (the OpenAI request's messages).
export function script(messages) {
  let lastUser = -1;
  messages.forEach((m, i) => { if (m.role === "user") lastUser = i; });
  const after = messages.slice(lastUser + 1);
  const tools = after.filter((m) => m.role === "tool");
  const text = String(messages[lastUser]?.content ?? "");
  if (/huge answer/i.test(text)) {
    return [chunk({ role: "assistant", content: "" }), ...HUGE_PIECES.map((p) => chunk({ content: p })), chunk({}, "stop")];
  }
  if (/long answer/i.test(text)) {
    const words = LONG_WORDS.map((w, i) => chunk({ content: i < LONG_WORDS.length - 1 ? `${w} ` : w }));
    return [chunk({ role: "assistant", content: "" }), ...words, chunk({}, "stop")];
  }
  if (/wipe/i.test(text)) return wipeScript(text, tools);
  if (/calc only/i.test(text)) return calcOnlyScript(tools);
  const wantsTools = /calculat|compute|what is/i.test(text);
  if (!wantsTools) {
    return [chunk({ role: "assistant", content: "" }), chunk({ content: "You're " }), chunk({ content: "welcome." }), chunk({}, "stop")];
  }
  if (tools.length === 0) {
    return [
      chunk({ role: "assistant", content: "Let me find the tools." }),
      ...toolCalls([
        { id: "s1", name: "hub_search", args: { q: "calculate arithmetic expression", limit: 3 } },
        { id: "s2", name: "hub_search", args: { q: "slugify text", limit: 3 } },
      ]),
      chunk({}, "tool_calls"),
    ];
  }
  const results = tools.map((t) => parse(t.content));
  const hits = (r) => (Array.isArray(r) ? r : r.results || r.operations || []);
  if (tools.length === 2) {
    const calc = hits(results[0]).find((h) => h.tool.startsWith("calc.")) || hits(results[0])[0];
    const txt = hits(results[1]).find((h) => h.tool.startsWith("text.")) || hits(results[1])[0];
    return [
      chunk({ role: "assistant", content: null }),
      ...toolCalls([
        { id: "k1", name: "hub_schema", args: { tool: calc.tool } },
        { id: "k2", name: "hub_schema", args: { tool: txt.tool } },
      ]),
      chunk({}, "tool_calls"),
    ];
  }
  if (tools.length === 4) {
    const [calc, txt] = [results[2], results[3]];
    return [
      chunk({ role: "assistant" }),
      ...toolCalls([
        { id: "c1", name: "hub_call", args: { calls: [
          { tool: calc.tool, input: inputFor(calc.inputSchema, "calc") },
          { tool: txt.tool, input: inputFor(txt.inputSchema, "text") },
        ] } },
      ]),
      chunk({}, "tool_calls"),
    ];
  }
  return doneScript(results[results.length - 1]);
}

/// The answer after a hub_call: "Done: " and what each call of `batch` gave.
function doneScript(batch) {
  const items = Array.isArray(batch) ? batch : batch.results || [];
  const shown = items.map((r) => `${r.tool} gave ${JSON.stringify(r.ok ? r.result : r.error)}`).join("; ");
  return [chunk({ role: "assistant", content: "Done: " }), chunk({ content: shown + "." }), chunk({}, "stop")];
}

/// The "calc only" conversation (see the top of the file).
function calcOnlyScript(tools) {
  if (tools.length === 0) {
    const call = { id: "e1", name: "hub_call", args: { calls: [{ tool: "calc.eval", input: { expression: "6*7" } }] } };
    return [chunk({ role: "assistant", content: "Computing." }), ...toolCalls([call]), chunk({}, "tool_calls")];
  }
  return doneScript(parse(tools[0].content));
}

function wipeCall(id, scope) {
  return { id, name: "hub_call", args: { calls: [{ tool: "examples.wipe", input: { scope } }] } };
}

/// One hub_call of examples.wipe and of examples.echo with markup: the echo's output
/// (tool output the page shows) carries a script that must render as text.
function wipeAndEchoCall(id) {
  const markup = '<script>window.__pwnedTool = 1</script><img src=x onerror="window.__pwnedTool = 2">';
  return { id, name: "hub_call", args: { calls: [
    { tool: "examples.wipe", input: { scope: "cache" } },
    { tool: "examples.echo", input: { text: markup } },
  ] } };
}

/// The approval conversations (see the top of the file).
function wipeScript(text, tools) {
  const table = /table/i.test(text);
  if (tools.length === 0) {
    const calls = table ? [wipeAndEchoCall("w1")] : [wipeCall("w1", "cache"), wipeCall("w2", "everything")];
    return [chunk({ role: "assistant", content: "Asking first." }), ...toolCalls(calls), chunk({}, "tool_calls")];
  }
  if (table) {
    const ok = /"wiped":true/.test(tools[0].content);
    const answer = [
      `Done. The **wipe** ${ok ? "ran" : "did not run"}:`,
      "",
      "| operation | result |",
      "|-----------|--------|",
      `| examples.wipe | ${ok ? "wiped" : "not run"} |`,
      "",
      "```js",
      "const wiped = true; // <b>not bold</b>",
      "```",
      "",
      "<script>window.__pwned = 1</script><img src=x onerror=\"window.__pwned = 2\">",
    ].join("\n");
    return [chunk({ role: "assistant", content: "" }), chunk({ content: answer }), chunk({}, "stop")];
  }
  const said = tools.map((t) => {
    const r = parse(t.content);
    if (r && r.type === "execution-denied") return `${t.tool_call_id} was denied (${r.reason || "no reason"})`;
    const item = (r && r.results && r.results[0]) || {};
    return `${t.tool_call_id} ${item.ok && item.result && item.result.wiped ? "wiped" : "failed"}`;
  });
  return [chunk({ role: "assistant", content: "" }), chunk({ content: said.join("; ") + "." }), chunk({}, "stop")];
}

/// Starts the upstream on a free loopback port; resolves to `{ url, requests, close }`.
export function start({ delayMs = 0 } = {}) {
  const requests = [];
  // The "hold KEY" gates, made by whichever comes first: the answer or the release.
  const gates = new Map();
  const gate = (key) => {
    if (!gates.has(key)) {
      let open;
      const opened = new Promise((r) => { open = r; });
      gates.set(key, { opened, open });
    }
    return gates.get(key);
  };
  // The keys an answer waits on now.
  const waiting = new Set();
  const server = http.createServer(async (req, res) => {
    const release = req.method === "POST" && req.url.match(/^\/v1\/release\/([\w-]+)$/);
    if (release) {
      gate(release[1]).open();
      res.writeHead(204).end();
      return;
    }
    if (req.method === "GET" && req.url === "/v1/held") {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify([...waiting]));
      return;
    }
    if (req.method === "GET" && req.url === "/v1/requests") {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify(requests));
      return;
    }
    if (req.method === "GET" && req.url === "/v1/models") {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ object: "list", data: [{ id: MODEL, object: "model", created: 0, owned_by: "tests" }] }));
      return;
    }
    if (req.method !== "POST" || req.url !== "/v1/chat/completions") {
      res.writeHead(404).end();
      return;
    }
    let body = "";
    for await (const piece of req) body += piece;
    const request = JSON.parse(body);
    requests.push(request);
    res.writeHead(200, { "content-type": "text/event-stream" });
    if (request.model === "broken") {
      res.write(`data: ${JSON.stringify(chunk({ role: "assistant", content: "Partial ans" }))}\n\n`);
      const half = { index: 0, id: "call_x1", type: "function", function: { name: "hub_list", arguments: '{"names' } };
      res.write(`data: ${JSON.stringify(chunk({ tool_calls: [half] }))}\n\n`);
      await new Promise((r) => setTimeout(r, 100));
      req.socket.destroy();
      return;
    }
    // "slowly" in the user's message makes every chunk wait, so a turn lasts long
    // enough to join it or to collide with it.
    const lastUser = [...request.messages].reverse().find((m) => m.role === "user");
    const wait = /slowly/i.test(String(lastUser?.content ?? "")) ? 150 : delayMs;
    const said = String(lastUser?.content ?? "");
    const holds = [...said.matchAll(/\bhold ([\w-]+)/gi)].map((m) => m[1]);
    const chunks = script(request.messages);
    // Where each hold stops the answer: after the first chunk, or evenly through a
    // long answer's words (chunk 0 is the role, the last one the finish).
    const words = chunks.length - 2;
    const at = /(long|huge) answer/i.test(said)
      ? holds.map((_, j) => Math.floor(((j + 1) * words) / (holds.length + 1)))
      : holds.map(() => 1);
    for (const [i, c] of chunks.entries()) {
      if (wait) await new Promise((r) => setTimeout(r, wait));
      for (const [j, key] of holds.entries()) {
        if (at[j] !== i) continue;
        waiting.add(key);
        await gate(key).opened;
        waiting.delete(key);
      }
      res.write(`data: ${JSON.stringify(c)}\n\n`);
    }
    res.write(`data: ${JSON.stringify({ id: "chatcmpl-1", object: "chat.completion.chunk", created: 1, model: MODEL, choices: [], usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 } })}\n\n`);
    res.end("data: [DONE]\n\n");
  });
  return new Promise((resolve) => {
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      resolve({ url: `http://127.0.0.1:${port}/v1`, requests, close: () => new Promise((r) => server.close(r)) });
    });
  });
}

// `node upstream.mjs`: run standalone and print the base URL (for run.sh).
if (import.meta.url === `file://${process.argv[1]}`) {
  const { url } = await start({ delayMs: Number(process.env.UPSTREAM_DELAY_MS || 0) });
  console.log(url);
}
