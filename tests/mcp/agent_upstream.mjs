// A scripted OpenAI-compatible model for py_agents.py (`node agent_upstream.mjs`
// prints its base URL): it plays an agent asked for JSON that first answers with
// the wrong type ({"sum": "5"}) and, once the hub sends its correction (a user
// message listing the violations), with {"sum": 5}. Streams chat-completion
// chunks; listens on 127.0.0.1 only.
import http from "node:http";

function chunk(delta, finish = null) {
  return { id: "chatcmpl-a", object: "chat.completion.chunk", created: 1, model: "m", choices: [{ index: 0, delta, finish_reason: finish }] };
}

const server = http.createServer(async (req, res) => {
  let body = "";
  for await (const piece of req) body += piece;
  if (req.method !== "POST" || req.url !== "/v1/chat/completions") {
    res.writeHead(404).end();
    return;
  }
  const messages = JSON.parse(body).messages ?? [];
  const last = String(messages.at(-1)?.content ?? "");
  const answer = /does not satisfy/.test(last) ? '{"sum": 5}' : '{"sum": "5"}';
  res.writeHead(200, { "content-type": "text/event-stream" });
  for (const c of [chunk({ role: "assistant", content: answer }), chunk({}, "stop")]) res.write(`data: ${JSON.stringify(c)}\n\n`);
  res.end("data: [DONE]\n\n");
});
server.listen(0, "127.0.0.1", () => console.log(`http://127.0.0.1:${server.address().port}/v1`));
