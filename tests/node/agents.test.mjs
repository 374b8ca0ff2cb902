// Agents (issue 35) through the real clients: the official `openai` client (Node
// here, Python through py_agents.py) and `@anthropic-ai/sdk` chat with an agent by
// its name as `model`, streamed and not, against the wasmhub binary with a
// scripted upstream. The agent `calculator` answers with a real calc plugin: its
// first step calls calc.eval through hub_call, its second quotes the result. The
// upstream's received bodies show the agent's prompt and sampling parameters (and
// a request's override); the OpenAI answer carries only the agent's text, the
// Anthropic one the hub's calls as mcp_tool_use/mcp_tool_result blocks.
// Structured output through each SDK's own helper: openai's
// `chat.completions.parse` with `zodResponseFormat` (response_format json_schema)
// and the Anthropic SDK's `messages.parse` with `zodOutputFormat`
// (output_config.format): the agent `adder` first answers prose, gets the
// correction round, then valid JSON, which the SDK parses; `stubborn` never
// complies and the SDKs raise invalid_output without retrying it.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import OpenAI from "openai";
import Anthropic from "@anthropic-ai/sdk";
import { zodOutputFormat } from "@anthropic-ai/sdk/helpers/zod";
import { zodResponseFormat } from "openai/helpers/zod";
import { z } from "zod";
import { startAnthropicUpstream } from "./lib/anthropic-upstream.mjs";
import { startHub } from "./lib/hub.mjs";

const TOKEN = "sk-hub-agents-test";
const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, "../..");
const CALC = path.resolve(root, process.env.WASMHUB_PLUGINS ?? "dist/plugins", "calc.wasm");
const AGENT = [
  "[[agents]]",
  'name = "calculator"',
  'description = "Computes with the calc plugin"',
  'model = "up/hub"',
  'allow = ["calc.*"]',
  "temperature = 0.3",
  "top_p = 0.8",
  "max_output_tokens = 123",
  'system_prompt = "You compute exactly."',
  "[[agents]]",
  'name = "adder"',
  'model = "up/adder"',
  "[[agents]]",
  'name = "stubborn"',
  'model = "up/stubborn"',
];
const Sum = z.object({ sum: z.number().int() });
const addition = [{ role: "user", content: "Add 2 and 3." }];

/** How many model requests a structured-output agent's script got so far. */
function sentTo(script) {
  return upstream.requests.filter((r) => r.body.model === script).length;
}

let upstream;
let hub;
let openai;
let anthropic;
before(async () => {
  upstream = await startAnthropicUpstream();
  hub = await startHub(upstream.baseUrl, { plugins: [CALC], tokens: { sdk: TOKEN }, config: AGENT });
  openai = new OpenAI({ baseURL: `${hub.url}/v1`, apiKey: TOKEN, maxRetries: 0 });
  anthropic = new Anthropic({ baseURL: hub.url, apiKey: TOKEN, maxRetries: 0 });
});
after(async () => {
  await hub?.stop();
  await upstream?.close();
});

const question = [{ role: "user", content: "What is 6*7?" }];

/** The first model request of the latest turn (the one that offered the tools). */
function firstStep() {
  const steps = upstream.requests.filter((r) => r.body.tools);
  return steps.at(-1).body;
}

test("the model list names the agents before the providers' models", async () => {
  const models = [];
  for await (const m of openai.models.list()) models.push(m);
  const agents = ["adder", "calculator", "stubborn"];
  assert.deepEqual(models.slice(0, 3).map((m) => m.id), agents, "the agents, by name");
  assert.ok(models.slice(0, 3).every((m) => m.owned_by === "wasmhub-agent"));
  assert.equal(models[3].id, "up/gpt-4o");
  const page = await anthropic.models.list();
  assert.deepEqual(page.data.slice(0, 3).map((m) => m.id), agents);
});

test("openai (Node), not streamed: the agent's answer, its sampling upstream", async () => {
  const completion = await openai.chat.completions.create({ model: "calculator", messages: question });
  assert.equal(completion.model, "calculator");
  assert.equal(completion.choices[0].message.content, "6*7 = 42");
  assert.equal(completion.choices[0].finish_reason, "stop");
  assert.equal(completion.choices[0].message.tool_calls, undefined, "the hub's calls are not the client's");
  assert.deepEqual(completion.usage, { prompt_tokens: 22, completion_tokens: 4, total_tokens: 26 });
  const sent = firstStep();
  assert.equal(sent.model, "hub");
  assert.deepEqual([sent.temperature, sent.top_p, sent.max_tokens], [0.3, 0.8, 123]);
  assert.match(sent.messages[0].content, /^You compute exactly\./);
});

test("openai (Node), streamed: chunks then the end, a request's temperature over the agent's", async () => {
  const stream = await openai.chat.completions.create({
    model: "calculator",
    messages: question,
    stream: true,
    stream_options: { include_usage: true },
    temperature: 0.9,
  });
  let text = "";
  let finish = null;
  let usage = null;
  for await (const chunk of stream) {
    for (const c of chunk.choices) {
      text += c.delta?.content ?? "";
      finish = c.finish_reason ?? finish;
      assert.equal(c.delta?.tool_calls, undefined);
    }
    usage = chunk.usage ?? usage;
  }
  assert.equal(text, "6*7 = 42");
  assert.equal(finish, "stop");
  assert.equal(usage.total_tokens, 26);
  assert.equal(firstStep().temperature, 0.9);
});

test("openai (Node): a temperature past the operator's limit is a 400 naming the key", async () => {
  await assert.rejects(
    openai.chat.completions.create({ model: "calculator", messages: question, temperature: 5 }),
    (e) => e instanceof OpenAI.BadRequestError && /agent\.temperature_limit/.test(e.message),
  );
});

test("Anthropic SDK, not streamed: the hub's calls as MCP blocks, then the text", async () => {
  const message = await anthropic.messages.create({ model: "calculator", max_tokens: 77, messages: question });
  assert.equal(message.model, "calculator");
  assert.deepEqual(message.content.map((b) => b.type), ["mcp_tool_use", "mcp_tool_result", "text"]);
  assert.equal(message.content[2].text, "6*7 = 42");
  assert.equal(message.stop_reason, "end_turn");
  const sent = firstStep();
  assert.deepEqual([sent.max_tokens, sent.temperature], [77, 0.3], "the request's max_tokens over the agent's");
});

test("Anthropic SDK, streamed: the same message from the events", async () => {
  const stream = anthropic.messages.stream({ model: "calculator", max_tokens: 77, messages: question });
  const texts = [];
  stream.on("text", (t) => texts.push(t));
  const message = await stream.finalMessage();
  assert.deepEqual(message.content.map((b) => b.type), ["mcp_tool_use", "mcp_tool_result", "text"]);
  assert.equal(texts.join(""), "6*7 = 42");
});

test("the Python openai client chats with the agent, streamed and not (py_agents.py)", async () => {
  assert.ok(process.env.WASMHUB_PYTHON_OPENAI, "run.sh installs the pinned client and sets WASMHUB_PYTHON_OPENAI");
  const script = path.join(here, "py_agents.py");
  // Asynchronously: the scripted upstream answering it lives in this process.
  const run = await new Promise((resolve) => {
    execFile(process.env.WASMHUB_PYTHON_OPENAI, [script, `${hub.url}/v1`, TOKEN], { timeout: 120_000 }, (error, stdout, stderr) =>
      resolve({ status: error ? (error.code ?? 1) : 0, stdout, stderr }),
    );
  });
  const lines = run.stdout.split("\n").filter((l) => /^(not )?ok - /.test(l));
  assert.equal(run.status, 0, `${run.stdout}\n${run.stderr}`);
  assert.equal(lines.filter((l) => l.startsWith("ok - ")).length, 4, run.stdout);
  assert.equal(firstStep().top_p, 0.5, "the Python client's top_p reached the provider");
});

test("openai (Node) chat.completions.parse with zodResponseFormat: the corrected JSON, parsed", async () => {
  const before = sentTo("adder");
  const completion = await openai.chat.completions.parse({
    model: "adder",
    messages: addition,
    response_format: zodResponseFormat(Sum, "sum"),
  });
  assert.deepEqual(completion.choices[0].message.parsed, { sum: 5 });
  assert.equal(completion.choices[0].finish_reason, "stop");
  const sent = upstream.requests.filter((r) => r.body.model === "adder").slice(before);
  assert.equal(sent.length, 2, "the answer, then the correction round");
  assert.match(sent[0].body.messages[0].content, /must satisfy this JSON Schema/);
  assert.match(sent[1].body.messages.at(-1).content, /does not satisfy the required JSON output/);
});

test("openai (Node): an answer that never complies is invalid_output, not retried; JSON does not stream", async () => {
  const retrying = new OpenAI({ baseURL: `${hub.url}/v1`, apiKey: TOKEN, maxRetries: 2 });
  const before = sentTo("stubborn");
  await assert.rejects(
    retrying.chat.completions.parse({ model: "stubborn", messages: addition, response_format: zodResponseFormat(Sum, "sum") }),
    (e) => e instanceof OpenAI.APIError && e.status === 502 && e.code === "invalid_output" && /\/sum/.test(e.message),
  );
  assert.equal(sentTo("stubborn") - before, 2, "one correction round, and the SDK did not send it again");
  await assert.rejects(
    openai.chat.completions.create({ model: "adder", messages: addition, stream: true, response_format: zodResponseFormat(Sum, "sum") }),
    (e) => e instanceof OpenAI.BadRequestError && /cannot stream/.test(e.message),
  );
});

test("Anthropic SDK messages.parse with zodOutputFormat: the corrected JSON, parsed", async () => {
  const before = sentTo("adder");
  const message = await anthropic.messages.parse({
    model: "adder",
    max_tokens: 100,
    messages: addition,
    output_config: { format: zodOutputFormat(Sum) },
  });
  assert.deepEqual(message.parsed_output, { sum: 5 });
  assert.equal(message.stop_reason, "end_turn");
  assert.equal(sentTo("adder") - before, 2, "the answer, then the correction round");
});

test("Anthropic SDK: an answer that never complies is a 502 naming the violation, not retried", async () => {
  const retrying = new Anthropic({ baseURL: hub.url, apiKey: TOKEN, maxRetries: 2 });
  const before = sentTo("stubborn");
  await assert.rejects(
    retrying.messages.parse({ model: "stubborn", max_tokens: 100, messages: addition, output_config: { format: zodOutputFormat(Sum) } }),
    (e) => e instanceof Anthropic.InternalServerError && e.status === 502 && /\/sum/.test(e.message),
  );
  assert.equal(sentTo("stubborn") - before, 2);
});
