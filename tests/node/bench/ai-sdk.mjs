// The AI SDK's own pipeline on the recorded streams, as the baseline for the hub's
// transformer (host/benches/transform.rs): `streamText` with `@ai-sdk/openai`'s chat
// model reading the SSE bytes from a mock fetch, then `toUIMessageStreamResponse`
// (UI chunks encoded as SSE) read to the end. One thread, median of several
// samples, upstream chunks per second of CPU time (process.cpuUsage) and of wall
// time. The last line, `RESULT aisdk_chunks_per_sec=<n>`, is what
// bench/llm.sh reads.
import { streamText, tool } from "ai7";
import { createOpenAI } from "@ai-sdk/openai";
import { z } from "zod";
import { fixtureNames, fixtureLines } from "../lib/upstream.mjs";

const SAMPLES = 9;
const SAMPLE_MS = 400;
const READ = 16 * 1024;

const streams = fixtureNames().map((name) => {
  const lines = fixtureLines(name);
  const sse = Buffer.from(lines.map((l) => `data: ${l}\n\n`).join("") + "data: [DONE]\n\n");
  return { name, sse, chunks: lines.length };
});

function mockFetch(sse) {
  return async () => {
    const body = new ReadableStream({
      start(controller) {
        for (let i = 0; i < sse.length; i += READ) controller.enqueue(new Uint8Array(sse.subarray(i, i + READ)));
        controller.close();
      },
    });
    return new Response(body, { status: 200, headers: { "content-type": "text/event-stream" } });
  };
}

const tools = { weather: tool({ description: "weather", inputSchema: z.object({ location: z.string().optional() }) }) };

async function runOnce(s) {
  const provider = createOpenAI({ apiKey: "bench", fetch: mockFetch(s.sse) });
  const result = streamText({ model: provider.chat("gpt-bench"), prompt: "hi", tools, onError: () => {} });
  const reader = result.toUIMessageStreamResponse().body.getReader();
  let bytes = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    bytes += value.length;
  }
  return bytes;
}

async function measure(list) {
  const perPass = list.reduce((n, s) => n + s.chunks, 0);
  const cpu = [];
  const wall = [];
  for (let i = 0; i < SAMPLES; i++) {
    const start = performance.now();
    const c0 = process.cpuUsage();
    let chunks = 0;
    while (performance.now() - start < SAMPLE_MS) {
      for (const s of list) await runOnce(s);
      chunks += perPass;
    }
    const c = process.cpuUsage(c0);
    cpu.push(chunks / ((c.user + c.system) / 1e6));
    wall.push(chunks / ((performance.now() - start) / 1000));
  }
  cpu.sort((a, b) => a - b);
  wall.sort((a, b) => a - b);
  return { cpu: cpu[SAMPLES >> 1], wall: wall[SAMPLES >> 1] };
}

await measure(streams); // warm-up: JIT
console.log(`AI SDK ${(await import("ai7/package.json", { with: { type: "json" } })).default.version} streamText + toUIMessageStreamResponse, median of ${SAMPLES} samples of ${SAMPLE_MS} ms`);
console.log(`  ${"stream".padEnd(40)} ${"chunks".padStart(6)}  ${"chunks/cpu-s".padStart(14)}  ${"chunks/wall-s".padStart(14)}`);
for (const s of streams) {
  const r = await measure([s]);
  console.log(`  ${s.name.padEnd(40)} ${String(s.chunks).padStart(6)}  ${r.cpu.toFixed(0).padStart(14)}  ${r.wall.toFixed(0).padStart(14)}`);
}
const all = await measure(streams);
const total = streams.reduce((n, s) => n + s.chunks, 0);
console.log(`  ${"all streams".padEnd(40)} ${String(total).padStart(6)}  ${all.cpu.toFixed(0).padStart(14)}  ${all.wall.toFixed(0).padStart(14)}`);
console.log(`RESULT aisdk_chunks_per_sec=${all.cpu.toFixed(0)}`);
