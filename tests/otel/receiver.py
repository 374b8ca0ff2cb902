"""Loopback peers of the otel suite, one process per role (`receiver.py ROLE`):

  receiver  an OTLP/HTTP trace receiver that decodes every POST /v1/traces with the
            official protocol definitions (PyPI opentelemetry-proto), strictly:
            `json_format.Parse(..., ignore_unknown_fields=False)` into
            ExportTraceServiceRequest, after turning the trace and span ids from the
            hex OTLP/JSON uses into the base64 protobuf's JSON mapping wants (the one
            difference the OTLP specification lists). A request that does not decode
            is answered 400 and kept in `errors`. GET /spans -> {"spans", "errors",
            "requests"}: every span so far, ids as hex, attributes as a dict.
  upstream  a scripted OpenAI-compatible model (POST /v1/chat/completions, streamed
            with usage): "compute EXPR" -> a hub_call of calc.eval, then "The answer
            is ..."; model `failing-1` answers 500; `slow-1` streams one word, then
            holds the stream until the client goes away. GET /echo answers "ok"
            (the fetch plugin's target). Every request's `traceparent` and
            `baggage` are kept: GET /seen -> [{"path", "traceparent", "baggage"}].
  mcp       an external MCP server over HTTP (JSON-RPC answered as JSON, the
            2025 handshake: `server/discover` is refused) with one tool, `whoami`;
            every tools/call's `params._meta` and trace headers are kept:
            GET /seen -> [{"meta", "traceparent", "baggage"}].

Each listens on a free loopback port (or the one given after the role) and prints its
base URL on the first line.
"""

import base64
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

lock = threading.Lock()
spans, errors, seen = [], [], []
requests = 0


def b64(hex_id, size):
    raw = bytes.fromhex(hex_id)
    if len(raw) != size:
        raise ValueError(f"id {hex_id!r} is not {size} bytes")
    return base64.b64encode(raw).decode()


def ids_to_base64(doc):
    """OTLP/JSON's hex ids as protobuf JSON's base64 (strictly: bad hex fails)."""
    for rs in doc.get("resourceSpans", []):
        for ss in rs.get("scopeSpans", []):
            for s in ss.get("spans", []):
                s["traceId"] = b64(s["traceId"], 16)
                s["spanId"] = b64(s["spanId"], 8)
                if "parentSpanId" in s:
                    s["parentSpanId"] = b64(s["parentSpanId"], 8)
                for link in s.get("links", []):
                    link["traceId"] = b64(link["traceId"], 16)
                    link["spanId"] = b64(link["spanId"], 8)


def value_of(any_value):
    kind = any_value.WhichOneof("value")
    return getattr(any_value, kind) if kind else None


def flat(span, resource):
    hexid = lambda b: b.hex()  # noqa: E731
    return {
        "traceId": hexid(span.trace_id),
        "spanId": hexid(span.span_id),
        "parentSpanId": hexid(span.parent_span_id),
        "traceState": span.trace_state,
        "name": span.name,
        "kind": span.kind,
        "start": span.start_time_unix_nano,
        "end": span.end_time_unix_nano,
        "attributes": {a.key: value_of(a.value) for a in span.attributes},
        "events": [{"name": e.name, "attributes": {a.key: value_of(a.value) for a in e.attributes}} for e in span.events],
        "links": [{"traceId": hexid(l.trace_id), "spanId": hexid(l.span_id)} for l in span.links],
        "status": {"code": span.status.code, "message": span.status.message},
        "resource": resource,
    }


def receive(body):
    from google.protobuf import json_format
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    doc = json.loads(body)
    ids_to_base64(doc)
    message = json_format.Parse(json.dumps(doc), ExportTraceServiceRequest(), ignore_unknown_fields=False)
    out = []
    for rs in message.resource_spans:
        resource = {a.key: value_of(a.value) for a in rs.resource.attributes}
        for ss in rs.scope_spans:
            out.extend(flat(s, resource) for s in ss.spans)
    return out


def chunk(delta, finish=None, model="scripted-1"):
    return {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def script(messages):
    last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
    text = str(messages[last_user].get("content", "")) if last_user >= 0 else ""
    tools = [m for m in messages[last_user + 1:] if m.get("role") == "tool"]
    words = text.split()
    if "compute" in words and not tools:
        expr = words[words.index("compute") + 1]
        args = json.dumps({"calls": [{"tool": "calc.eval", "input": {"expression": expr}}]})
        call = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "hub_call", "arguments": args}}
        return [chunk({"role": "assistant", "tool_calls": [call]}), chunk({}, "tool_calls")]
    if "json" in words and not tools:
        return [chunk({"role": "assistant", "content": '{"sum": 5}'}), chunk({}, "stop")]
    if tools:
        return [chunk({"role": "assistant", "content": "The answer is "}), chunk({"content": tools[-1]["content"][:40]}), chunk({}, "stop")]
    return [chunk({"role": "assistant", "content": "You're "}), chunk({"content": "welcome."}), chunk({}, "stop")]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, status, body, ctype="application/json"):
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", ctype)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def body(self):
        return self.rfile.read(int(self.headers.get("content-length", "0")))

    def remember(self):
        with lock:
            seen.append({"path": self.path, "traceparent": self.headers.get("traceparent"),
                         "baggage": self.headers.get("baggage")})

    def do_GET(self):
        global requests
        if ROLE == "receiver" and self.path == "/spans":
            with lock:
                return self.reply(200, {"spans": spans, "errors": errors, "requests": requests})
        if ROLE == "mcp" and self.path == "/mcp":
            return self.reply(405, {"error": "no server stream"})
        if ROLE in ("upstream", "mcp") and self.path == "/seen":
            with lock:
                return self.reply(200, seen)
        if ROLE == "upstream" and self.path.startswith("/echo"):
            self.remember()
            return self.reply(200, b"ok", "text/plain")
        self.reply(404, {"error": self.path})

    def do_POST(self):
        global requests
        body = self.body()
        if ROLE == "receiver" and self.path == "/v1/traces":
            if self.headers.get("content-type") != "application/json":
                with lock:
                    errors.append(f"content-type {self.headers.get('content-type')!r}")
                return self.reply(415, {})
            try:
                got = receive(body)
            except Exception as e:  # noqa: BLE001 - any decode failure is the finding
                with lock:
                    errors.append(f"{type(e).__name__}: {e}")
                return self.reply(400, {"error": str(e)})
            with lock:
                requests += 1
                spans.extend(got)
            return self.reply(200, {})
        if ROLE == "upstream" and self.path == "/v1/chat/completions":
            self.remember()
            return self.complete(json.loads(body))
        if ROLE == "mcp" and self.path == "/mcp":
            return self.mcp(json.loads(body))
        self.reply(404, {"error": self.path})

    def mcp(self, msg):
        if "id" not in msg:
            return self.reply(202, b"", "text/plain")
        method, params = msg.get("method"), msg.get("params") or {}
        answer = lambda result: self.reply(200, {"jsonrpc": "2.0", "id": msg["id"], "result": result})  # noqa: E731
        if method == "initialize":
            return answer({"protocolVersion": params.get("protocolVersion"), "capabilities": {"tools": {}},
                           "serverInfo": {"name": "otel-tracer", "version": "1.0.0"}})
        if method == "tools/list":
            return answer({"tools": [{"name": "whoami", "description": "Says hello.",
                                      "inputSchema": {"type": "object", "properties": {}},
                                      "annotations": {"readOnlyHint": True}}]})
        if method == "tools/call":
            with lock:
                seen.append({"meta": params.get("_meta"), "traceparent": self.headers.get("traceparent"),
                             "baggage": self.headers.get("baggage")})
            return answer({"content": [{"type": "text", "text": "hello"}], "isError": False})
        self.reply(200, {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": f"no {method}"}})

    def complete(self, req):
        model = req.get("model", "")
        if model == "failing-1":
            return self.reply(500, {"error": {"message": "the scripted model fails", "type": "server_error"}})
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("connection", "close")
        self.end_headers()
        if model == "slow-1":
            self.wfile.write(b"data: " + json.dumps(chunk({"role": "assistant", "content": "Thinking "}, model=model)).encode() + b"\n\n")
            self.wfile.flush()
            # Held until the hub drops the request (its client went away).
            try:
                while True:
                    time.sleep(0.2)
                    self.wfile.write(b": hold\n\n")
                    self.wfile.flush()
            except OSError:
                return
        if model == "garbled-1":
            # An event the hub cannot read (not a JSON chunk): skipped and counted.
            self.wfile.write(b"data: {not json\n\n")
        for c in script(req.get("messages", [])):
            self.wfile.write(b"data: " + json.dumps(c).encode() + b"\n\n")
        usage = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "scripted-1", "choices": [],
                 "usage": {"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19}}
        self.wfile.write(b"data: " + json.dumps(usage).encode() + b"\n\ndata: [DONE]\n\n")
        self.wfile.flush()
        self.close_connection = True


ROLE = sys.argv[1]
# An optional port: the receiver started again where it was (the hub's probe finds it).
server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[2]) if len(sys.argv) > 2 else 0), Handler)
print(f"http://127.0.0.1:{server.server_address[1]}", flush=True)
server.serve_forever()
