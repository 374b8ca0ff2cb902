// A scripted OpenAI-compatible upstream on 127.0.0.1 for the node suites. The
// requested model name picks the script (the hub strips its `up/` prefix):
//   fixture:<name>   the recorded stream tests/fixtures/openai-streams/<name>.chunks.txt,
//                    replayed as SSE (each line as one event, then [DONE]);
//   json:<name>      an exact JSON body from JSON_BODIES (non-streamed answers);
//   status:<code>    an OpenAI-shaped error with that status;
//   error-midstream  two text chunks, then an error frame;
//   cut-midstream    two text chunks, then the body ends (no finish reason, no [DONE]);
//   torn-midstream   one text chunk, then half of the next one, and the body ends;
//   stall-midstream  two text chunks, then nothing more until the hub hangs up (a
//                    provider with a short idle_timeout_ms gives up on it);
//   cumulative       text deltas that each carry the whole text so far (some local
//                    servers), for a provider with stream_deltas = "cumulative".
// GET /v1/models lists a few models. Every request is recorded.
import http from "node:http";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
export const FIXTURES = path.resolve(here, "../../fixtures/openai-streams");

export function fixtureNames() {
  return fs.readdirSync(FIXTURES).filter((f) => f.endsWith(".chunks.txt")).map((f) => f.slice(0, -".chunks.txt".length)).sort();
}

export function fixtureLines(name) {
  return fs.readFileSync(path.join(FIXTURES, `${name}.chunks.txt`), "utf8").split("\n").filter((l) => l.trim() !== "");
}

/** Exact bytes, with escapes and unusual spacing, to check byte-faithful relaying. */
export const JSON_BODIES = {
  basic:
    '{"id":"chatcmpl-n1","object":"chat.completion","created":1770000000,"model":"basic","choices":[{"index":0,"message":{"role":"assistant","content":"caf\\u00e9 \\u2713 \\"quoted\\"\\nline two","refusal":null},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":5,"total_tokens":8},  "x_extra":{"kept":true}}',
};

function chunk(content) {
  return JSON.stringify({ id: "m", object: "chat.completion.chunk", created: 1, model: "scripted", choices: [{ index: 0, delta: { content }, finish_reason: null }] });
}

export async function startUpstream() {
  const requests = [];
  const server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (d) => (body += d));
    req.on("end", () => {
      requests.push({ method: req.method, url: req.url, headers: req.headers, body });
      if (req.method === "GET" && req.url === "/v1/models") {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ object: "list", data: [{ id: "gpt-4o", object: "model", created: 1, owned_by: "system" }] }));
        return;
      }
      const model = JSON.parse(body || "{}").model ?? "";
      const [kind, arg] = model.split(/:(.*)/s);
      if (kind === "fixture") {
        res.writeHead(200, { "content-type": "text/event-stream" });
        for (const line of fixtureLines(arg)) res.write(`data: ${line}\n\n`);
        res.end("data: [DONE]\n\n");
      } else if (kind === "json") {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON_BODIES[arg]);
      } else if (kind === "status") {
        res.writeHead(Number(arg), { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { message: `scripted ${arg}`, type: "invalid_request_error", param: null, code: null } }));
      } else if (kind === "cumulative") {
        res.writeHead(200, { "content-type": "text/event-stream" });
        for (const soFar of ["The", "The answer", "The answer is 4."]) res.write(`data: ${chunk(soFar)}\n\n`);
        res.write(`data: ${JSON.stringify({ id: "m", object: "chat.completion.chunk", created: 1, model: "scripted", choices: [{ index: 0, delta: {}, finish_reason: "stop" }] })}\n\n`);
        res.end("data: [DONE]\n\n");
      } else if (kind === "error-midstream") {
        res.writeHead(200, { "content-type": "text/event-stream" });
        res.write(`data: ${chunk("Hel")}\n\n`);
        res.write(`data: ${chunk("lo")}\n\n`);
        res.end(`data: ${JSON.stringify({ error: { message: "The server had an error while processing your request", type: "server_error", param: null, code: null } })}\n\n`);
      } else if (kind === "cut-midstream") {
        res.writeHead(200, { "content-type": "text/event-stream" });
        res.write(`data: ${chunk("Hel")}\n\n`);
        res.end(`data: ${chunk("lo")}\n\n`);
      } else if (kind === "stall-midstream") {
        res.writeHead(200, { "content-type": "text/event-stream" });
        res.write(`data: ${chunk("Hel")}\n\n`);
        res.write(`data: ${chunk("lo")}\n\n`);
      } else if (kind === "torn-midstream") {
        res.writeHead(200, { "content-type": "text/event-stream" });
        res.write(`data: ${chunk("Hel")}\n\n`);
        res.end(`data: ${chunk("lo").slice(0, 40)}`);
      } else {
        res.writeHead(400, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { message: `no script for model ${model}` } }));
      }
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address();
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(resolve); }),
  };
}
