// Drives wasmhub with the official TypeScript MCP SDK (1.x) client: over Streamable
// HTTP (2025-11-25 handshake, sessions) with both tokens, and over stdio against
// `wasmhub mcp --stdio`. Prints one `ok`/`not ok` line per check and exits non-zero
// when any check failed. Configuration comes from run.sh through the environment.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { assert, checks, env } from "../lib/checks.mjs";

const URL_ = env("MCP_URL");
const TOKEN_ALL = env("TOKEN_ALL");
const TOKEN_TEXT = env("TOKEN_TEXT");
const OP = env("OP_TOOL"); // an operation both tokens may call
const OP_INPUT = JSON.parse(env("OP_INPUT"));
const OP_EXPECT = env("OP_EXPECT"); // a substring of its result
const OP_BAD_INPUT = JSON.parse(env("OP_BAD_INPUT"));
const FORBIDDEN = env("OP_FORBIDDEN"); // an operation TOKEN_TEXT may not call
const FORBIDDEN_INPUT = JSON.parse(env("OP_FORBIDDEN_INPUT"));
// A hub without tokens serving the `examples` test guest, whose destructive `wipe`
// the default approval policy asks a person about.
const APPROVALS_URL = env("APPROVALS_URL");
const WIPE_AND_ECHO = {
  calls: [
    { tool: "examples.wipe", input: { all: true } },
    { tool: "examples.echo", input: { text: "still runs" } },
  ],
};

const { check, finish } = checks("ts-sdk");
const text = (r) => r.content.map((c) => c.text ?? "").join("");

async function exercise(label, client, { forbiddenFor }) {
  await check(`${label}: lists the four meta-tools`, async () => {
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name).sort();
    assert(JSON.stringify(names) === JSON.stringify(["hub_call", "hub_list", "hub_schema", "hub_search"]), `tools: ${names}`);
    for (const t of tools) assert(t.inputSchema?.type === "object", `${t.name} has no object inputSchema`);
  });
  await check(`${label}: hub_search finds ${OP}`, async () => {
    const r = await client.callTool({ name: "hub_search", arguments: { q: OP.split(".")[1] } });
    assert(!r.isError, text(r));
    assert(text(r).includes(OP), `search result lacks ${OP}: ${text(r)}`);
  });
  await check(`${label}: hub_schema returns ${OP}'s input schema`, async () => {
    const r = await client.callTool({ name: "hub_schema", arguments: { tool: OP } });
    assert(!r.isError, text(r));
    const s = r.structuredContent ?? JSON.parse(text(r));
    assert(JSON.stringify(s).includes("inputSchema"), `no inputSchema: ${text(r)}`);
  });
  await check(`${label}: hub_call runs ${OP}`, async () => {
    const r = await client.callTool({ name: "hub_call", arguments: { calls: [{ tool: OP, input: OP_INPUT }] } });
    assert(!r.isError, text(r));
    assert(text(r).includes(OP_EXPECT), `result lacks ${OP_EXPECT}: ${text(r)}`);
    assert(r.structuredContent !== undefined, "no structuredContent");
  });
  await check(`${label}: bad input is a readable error`, async () => {
    const r = await client.callTool({ name: "hub_call", arguments: { calls: [{ tool: OP, input: OP_BAD_INPUT }] } });
    assert(/"ok":\s*false/.test(text(r)) || r.isError, `expected a failed call: ${text(r)}`);
  });
  await check(`${label}: an unknown tool name is a JSON-RPC error`, async () => {
    let err;
    try {
      await client.callTool({ name: "no_such_tool", arguments: {} });
    } catch (e) {
      err = e;
    }
    assert(err && err.code === -32602, `expected -32602, got ${err?.code} ${err?.message}`);
  });
  if (forbiddenFor) {
    await check(`${label}: ${FORBIDDEN} is forbidden for this token`, async () => {
      const r = await client.callTool({
        name: "hub_call",
        arguments: { calls: [{ tool: FORBIDDEN, input: FORBIDDEN_INPUT }] },
      });
      assert(/forbidden|not allowed/i.test(text(r)), `expected a forbidden error: ${text(r)}`);
    });
  }
}

async function http(token, label, opts) {
  const transport = new StreamableHTTPClientTransport(new URL(URL_), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  const client = new Client({ name: "wasmhub-ts-sdk-test", version: "1.0.0" });
  await client.connect(transport);
  await check(`${label}: negotiated a session`, async () => {
    assert(transport.sessionId, "no Mcp-Session-Id");
    assert(client.getServerVersion()?.name === "wasmhub", JSON.stringify(client.getServerVersion()));
  });
  await check(`${label}: ping`, async () => {
    await client.ping();
  });
  await exercise(label, client, opts);
  await check(`${label}: progress notifications arrive over SSE`, async () => {
    const seen = [];
    const r = await client.callTool(
      { name: "hub_call", arguments: { calls: [{ tool: OP, input: OP_INPUT }] } },
      undefined,
      { onprogress: (p) => seen.push(p) },
    );
    assert(!r.isError, text(r));
    assert(seen.length >= 1 && seen[seen.length - 1].progress === 1, `progress: ${JSON.stringify(seen)}`);
  });
  await transport.terminateSession();
  await client.close();
}

await check("a request without a token is refused", async () => {
  const r = await fetch(URL_, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "x", version: "1" } } }),
  });
  assert(r.status === 401, `status ${r.status}`);
  assert(/^Bearer/.test(r.headers.get("www-authenticate") ?? ""), "no WWW-Authenticate: Bearer");
});

// Human approval: a client with an elicitation handler is sent elicitation/create
// on the call's stream; one without gets approval_required.
async function approvals() {
  const results = (r) => (r.structuredContent ?? JSON.parse(text(r))).results;
  for (const approve of [true, false]) {
    await check(`approvals: a user who ${approve ? "accepts" : "declines"} decides the destructive call`, async () => {
      const client = new Client({ name: "wasmhub-ts-sdk-approvals", version: "1.0.0" }, { capabilities: { elicitation: {} } });
      const asked = [];
      client.setRequestHandler(ElicitRequestSchema, async (request) => {
        asked.push(request.params);
        return approve ? { action: "accept", content: { approve: true } } : { action: "decline" };
      });
      const transport = new StreamableHTTPClientTransport(new URL(APPROVALS_URL));
      await client.connect(transport);
      try {
        const r = await client.callTool({ name: "hub_call", arguments: WIPE_AND_ECHO });
        assert(asked.length === 1 && asked[0].message.includes("examples.wipe"), `asked: ${JSON.stringify(asked)}`);
        assert(asked[0].requestedSchema?.properties?.approve?.type === "boolean", JSON.stringify(asked[0]));
        const [wipe, echo] = results(r);
        if (approve) assert(wipe.ok && wipe.result.wiped === true, JSON.stringify(wipe));
        else assert(wipe.error?.code === "approval_denied", JSON.stringify(wipe));
        assert(echo.ok && echo.result.text === "still runs", JSON.stringify(echo));
      } finally {
        await transport.terminateSession();
        await client.close();
      }
    });
  }
  await check("approvals: a client without elicitation gets approval_required", async () => {
    const client = new Client({ name: "wasmhub-ts-sdk-no-elicitation", version: "1.0.0" });
    const transport = new StreamableHTTPClientTransport(new URL(APPROVALS_URL));
    await client.connect(transport);
    try {
      const r = await client.callTool({ name: "hub_call", arguments: WIPE_AND_ECHO });
      const [wipe, echo] = results(r);
      assert(wipe.error?.code === "approval_required", JSON.stringify(wipe));
      assert(echo.ok, JSON.stringify(echo));
    } finally {
      await transport.terminateSession();
      await client.close();
    }
  });
}

await approvals();
await http(TOKEN_ALL, "http (token allowing *)", { forbiddenFor: false });
await http(TOKEN_TEXT, "http (token allowing text.*)", { forbiddenFor: true });

if (process.env.WASMHUB_BIN) {
  const args = ["mcp", "--stdio", "--config", env("WASMHUB_CONFIG")];
  const transport = new StdioClientTransport({ command: env("WASMHUB_BIN"), args, stderr: "pipe" });
  const client = new Client({ name: "wasmhub-ts-sdk-stdio-test", version: "1.0.0" });
  await client.connect(transport);
  // The stdio server answers at once while its plugins compile: a call made right
  // away waits for its plugin (until then search and schema do not know its
  // operations), so it comes first here.
  await check(`stdio: a hub_call made at once waits for ${OP}'s plugin and runs`, async () => {
    const r = await client.callTool({ name: "hub_call", arguments: { calls: [{ tool: OP, input: OP_INPUT }] } });
    assert(!r.isError, text(r));
    assert(text(r).includes(OP_EXPECT), `result lacks ${OP_EXPECT}: ${text(r)}`);
  });
  await exercise("stdio", client, { forbiddenFor: false });
  await client.close();
}

finish();
