// The official `openai` client against the hub's OpenAI-compatible proxy: streamed
// chunks must equal the recorded ones, a non-streamed body must arrive byte for
// byte, upstream errors keep their status and message, a stream cut or torn
// upstream raises instead of ending as if finished (in this client and, through
// py_openai.py, in the Python one, which also raises on a stalled one; the other
// surfaces and clients are in unfinished.test.mjs), the model list is the
// providers' union, and a fallback chain answers from its second target.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import OpenAI from "openai";
import { startUpstream, fixtureNames, fixtureLines, JSON_BODIES } from "./lib/upstream.mjs";
import { startHub } from "./lib/hub.mjs";
import { expected } from "./lib/expected.mjs";

let upstream;
let hub;
let client;
before(async () => {
  upstream = await startUpstream();
  hub = await startHub(upstream.baseUrl, { stalling: true });
  client = new OpenAI({ baseURL: `${hub.url}/v1`, apiKey: "client-key-not-forwarded", maxRetries: 0 });
});
after(async () => {
  await hub?.stop();
  await upstream?.close();
});

for (const name of fixtureNames()) {
  test(`stream: ${name} arrives event for event, byte for byte, and parses in the SDK`, async () => {
    const request = { model: `up/fixture:${name}`, messages: [{ role: "user", content: "hi" }], stream: true };
    // The wire: every event's data exactly as the provider sent it.
    const raw = await (await client.chat.completions.create(request).asResponse()).text();
    const datas = raw.split("\n\n").filter((f) => f.startsWith("data: ")).map((f) => f.slice("data: ".length));
    assert.deepEqual(datas, [...fixtureLines(name), "[DONE]"]);
    // The SDK's own parsing of the same stream.
    const stream = await client.chat.completions.create(request);
    let text = "";
    let finish = null;
    let n = 0;
    for await (const chunk of stream) {
      n += 1;
      for (const c of chunk.choices) {
        text += c.delta?.content ?? "";
        finish = c.finish_reason ?? finish;
      }
    }
    assert.equal(n, fixtureLines(name).length);
    assert.equal(text, expected(name).text);
    assert.ok(finish, "a finish reason arrived");
  });
}

test("non-stream: the body is relayed byte for byte and parses as a completion", async () => {
  const { data, response } = await client.chat.completions
    .create({ model: "up/json:basic", messages: [{ role: "user", content: "hi" }], metadata: { k: "v" } })
    .withResponse();
  assert.equal(data.choices[0].message.content, 'café ✓ "quoted"\nline two');
  const raw = await (await fetch(`${hub.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "up/json:basic", messages: [] }),
  })).text();
  assert.equal(raw, JSON_BODIES.basic);
  assert.equal(response.status, 200);
  const sent = JSON.parse(upstream.requests.findLast((r) => r.body.includes('"metadata"')).body);
  assert.equal(sent.model, "json:basic");
  assert.deepEqual(sent.metadata, { k: "v" }, "unknown fields pass through");
  assert.equal(upstream.requests.at(-1).headers.authorization, undefined, "the client's key is not forwarded");
});

test("errors keep their status and message", async () => {
  await assert.rejects(
    client.chat.completions.create({ model: "up/status:429", messages: [{ role: "user", content: "hi" }] }),
    (e) => e instanceof OpenAI.RateLimitError && e.status === 429 && /scripted 429/.test(e.message),
  );
  await assert.rejects(
    client.chat.completions.create({ model: "up/anything" }),
    (e) => e instanceof OpenAI.BadRequestError && /"messages" is required/.test(e.message),
  );
});

test("a mid-stream error frame becomes an APIError in the stream", async () => {
  const stream = await client.chat.completions.create({ model: "up/error-midstream", messages: [], stream: true });
  const got = [];
  await assert.rejects(
    (async () => {
      for await (const c of stream) got.push(c.choices[0].delta.content);
    })(),
    /The server had an error while processing your request/,
  );
  assert.deepEqual(got, ["Hel", "lo"]);
});

for (const [model, code] of [["cut-midstream", "upstream_incomplete"], ["torn-midstream", "upstream_malformed"]]) {
  test(`a stream that never reaches its end (${model}) raises an APIError in the SDK's iteration`, async () => {
    const stream = await client.chat.completions.create({ model: `up/${model}`, messages: [], stream: true });
    const got = [];
    await assert.rejects(
      (async () => {
        for await (const c of stream) got.push(c.choices[0].delta.content);
      })(),
      (e) => e instanceof OpenAI.APIError && e.code === code && /^provider "up": /.test(e.message),
    );
    assert.deepEqual(got, model === "cut-midstream" ? ["Hel", "lo"] : ["Hel"]);
  });
}

test("the Python openai client raises on a cut, torn or stalled stream too (py_openai.py)", async () => {
  assert.ok(process.env.WASMHUB_PYTHON_OPENAI, "run.sh installs the pinned client and sets WASMHUB_PYTHON_OPENAI");
  const script = path.join(path.dirname(fileURLToPath(import.meta.url)), "py_openai.py");
  // Asynchronously: the scripted upstream answering it lives in this process.
  const run = await new Promise((resolve) => {
    execFile(process.env.WASMHUB_PYTHON_OPENAI, [script, `${hub.url}/v1`], { timeout: 120_000 }, (error, stdout, stderr) =>
      resolve({ status: error ? (error.code ?? 1) : 0, stdout, stderr }),
    );
  });
  const lines = run.stdout.split("\n").filter((l) => /^(not )?ok - /.test(l));
  assert.equal(run.status, 0, `${run.stdout}\n${run.stderr}`);
  assert.equal(lines.filter((l) => l.startsWith("ok - ")).length, 13, run.stdout);
});

test("the model list names models as provider/model", async () => {
  const ids = [];
  for await (const m of client.models.list()) ids.push(m.id);
  assert.deepEqual(ids, ["up/gpt-4o", "once/gpt-4o", "local/gpt-4o", "slow/gpt-4o"]);
});

test("fallback: a 503 from the first target is answered by the second, one clean stream for the SDK", async () => {
  const request = { model: "fallback", messages: [{ role: "user", content: "hi" }], stream: true };
  const { data: stream, response } = await client.chat.completions.create(request).withResponse();
  assert.equal(response.headers.get("x-wasmhub-target"), "once/fixture:openai--openai-text");
  let text = "";
  for await (const chunk of stream) for (const c of chunk.choices) text += c.delta?.content ?? "";
  assert.equal(text, expected("openai--openai-text").text);
  const sent = upstream.requests.slice(-2).map((r) => JSON.parse(r.body));
  assert.deepEqual(sent.map((b) => b.model), ["status:503", "fixture:openai--openai-text"]);
  assert.deepEqual({ ...sent[0], model: null }, { ...sent[1], model: null }, "the same request to both targets");
});
