// A scripted OpenAI-compatible upstream for the Anthropic SDK tests, on 127.0.0.1.
// The hub always asks it to stream; the requested model (the hub strips `up/`)
// picks the script, and the conversation it is sent decides the step:
//   text            "Hello world", usage 11 in / 2 out
//   weather         no tool result yet: "Let me check." and a get_weather call
//                   (arguments in fragments); after the result: a sentence quoting it
//   hub             the hub's meta-tools: a hub_call of calc.eval on 6*7, then an
//                   answer quoting the result's decimal
//   status:<code>   an OpenAI-shaped error with that status (retry-after: 120 on 429, longer than the hub waits itself)
//   error-midstream two text chunks, then an error frame
//   adder           structured output: first "The sum is 5." (not JSON); asked for a
//                   correction (an assistant answer is in the conversation), {"sum": 5}
//   stubborn        structured output that never complies: {"sum": "five"}
// Every request is recorded (method, url, headers, parsed body).
import http from "node:http";

const USAGE = { prompt_tokens: 11, completion_tokens: 2, total_tokens: 13 };

function chunk(delta, finish = null) {
  return { id: "chatcmpl-a", object: "chat.completion.chunk", created: 1, model: "scripted", choices: [{ index: 0, delta, finish_reason: finish }] };
}

function call(index, fields) {
  return chunk({ tool_calls: [{ index, ...fields }] });
}

function afterLastUser(messages) {
  let last = -1;
  messages.forEach((m, i) => { if (m.role === "user") last = i; });
  return messages.slice(last + 1);
}

function script(kind, messages) {
  const tools = afterLastUser(messages).filter((m) => m.role === "tool");
  if (kind === "text") {
    return [chunk({ role: "assistant", content: "Hello" }), chunk({ content: " world" }), chunk({}, "stop")];
  }
  if (kind === "weather") {
    if (tools.length > 0) return [chunk({ content: `It is ${tools[0].content} in Paris.` }), chunk({}, "stop")];
    return [
      chunk({ role: "assistant", content: "Let me check." }),
      call(0, { id: "call_w1", type: "function", function: { name: "get_weather", arguments: "" } }),
      call(0, { function: { arguments: '{"city":' } }),
      call(0, { function: { arguments: '"Paris"}' } }),
      chunk({}, "tool_calls"),
    ];
  }
  if (kind === "hub") {
    if (tools.length > 0) {
      const [answer] = JSON.parse(tools[0].content).results;
      return [chunk({ content: `6*7 = ${answer.result.decimal}` }), chunk({}, "stop")];
    }
    const args = JSON.stringify({ calls: [{ tool: "calc.eval", input: { expression: "6*7" } }] });
    return [call(0, { id: "call_h1", type: "function", function: { name: "hub_call", arguments: args } }), chunk({}, "tool_calls")];
  }
  if (kind === "adder") {
    const corrected = messages.some((m) => m.role === "assistant");
    return [chunk({ role: "assistant", content: corrected ? '{"sum": 5}' : "The sum is 5." }), chunk({}, "stop")];
  }
  if (kind === "stubborn") {
    return [chunk({ role: "assistant", content: '{"sum": "five"}' }), chunk({}, "stop")];
  }
  return null;
}

function answer(res, body) {
  const [kind, arg] = String(body.model ?? "").split(/:(.*)/s);
  if (kind === "status") {
    const headers = { "content-type": "application/json" };
    if (arg === "429") headers["retry-after"] = "120";
    res.writeHead(Number(arg), headers);
    res.end(JSON.stringify({ error: { message: `scripted ${arg}`, type: "invalid_request_error", param: null, code: null } }));
    return;
  }
  if (kind === "error-midstream") {
    res.writeHead(200, { "content-type": "text/event-stream" });
    res.write(`data: ${JSON.stringify(chunk({ content: "Hel" }))}\n\n`);
    res.write(`data: ${JSON.stringify(chunk({ content: "lo" }))}\n\n`);
    res.end(`data: ${JSON.stringify({ error: { message: "The server had an error while processing your request", type: "server_error" } })}\n\n`);
    return;
  }
  const chunks = script(kind, body.messages ?? []);
  if (!chunks) {
    res.writeHead(400, { "content-type": "application/json" });
    res.end(JSON.stringify({ error: { message: `no script for model ${body.model}` } }));
    return;
  }
  res.writeHead(200, { "content-type": "text/event-stream" });
  for (const c of chunks) res.write(`data: ${JSON.stringify(c)}\n\n`);
  res.write(`data: ${JSON.stringify({ ...chunk({}), choices: [], usage: USAGE })}\n\n`);
  res.end("data: [DONE]\n\n");
}

export async function startAnthropicUpstream(listenPort = 0) {
  const requests = [];
  const server = http.createServer((req, res) => {
    let raw = "";
    req.on("data", (d) => (raw += d));
    req.on("end", () => {
      const body = raw ? JSON.parse(raw) : {};
      requests.push({ method: req.method, url: req.url, headers: req.headers, body });
      if (req.method === "GET" && req.url === "/v1/models") {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ object: "list", data: [{ id: "gpt-4o", object: "model", created: 1767225600, owned_by: "system" }] }));
        return;
      }
      answer(res, body);
    });
  });
  await new Promise((resolve) => server.listen(listenPort, "127.0.0.1", resolve));
  const { port } = server.address();
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(resolve); }),
  };
}
