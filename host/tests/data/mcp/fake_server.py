#!/usr/bin/env python3
"""A scripted MCP server for the hub's end-to-end tests, over stdio (default) or
Streamable HTTP (`--http PORTFILE`: listens on a free loopback port, writes it to
PORTFILE). Standard library only.

Well-behaved tools: echo (read-only), add (structured output), wipe (no
annotations: destructive by MCP's defaults), fail (isError), change (adds a tool,
then sends notifications/tools/list_changed), ask (stdio: sends the request
`method` to the client and answers its reply as JSON text), gate (GETs
$GATE_URL, which holds it, and answers the most gate calls it saw running at
once). Hostile ones: hang (never answers;
the cancellation it receives is appended to $CANCEL_LOG), giant (a 256 KiB result),
flood (an endless line on stdout), badjson (a line that is not JSON), crash
(exits with status 3 mid-call). A `bomb` tool with a 40-level input schema is
listed and must be left out.

MODE=crashloop exits at once; MODE=silent never answers initialize. Over HTTP,
a DELETE of the session appends its Mcp-Session-Id to $DELETE_LOG. Over a
WebSocket (`--ws PORTFILE`, RFC 6455 by hand: it pings first, splits messages
longer than 64 bytes into two frames) $WS_LOG gets the handshake's subprotocol
and whether it had an Authorization header, the pong, and the close code. Each
tools/call appends the tool's name to $CALL_LOG when set.
"""

import json
import os
import sys
import threading

MODE = os.environ.get("MODE", "")
CANCEL_LOG = os.environ.get("CANCEL_LOG")
DELETE_LOG = os.environ.get("DELETE_LOG")
CALL_LOG = os.environ.get("CALL_LOG")

OBJ = {"type": "object"}


def bomb():
    schema = {"type": "object"}
    for _ in range(40):
        schema = {"type": "object", "properties": {"a": schema}}
    return schema


TOOLS = [
    {"name": "echo", "description": "Echo the text back unchanged",
     "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
     "annotations": {"readOnlyHint": True}},
    {"name": "add", "description": "Add two numbers and return their sum",
     "inputSchema": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                     "required": ["a", "b"]},
     "outputSchema": {"type": "object", "properties": {"sum": {"type": "number"}}, "required": ["sum"]},
     "annotations": {"readOnlyHint": True}},
    {"name": "wipe", "description": "Delete every record", "inputSchema": OBJ},
    {"name": "fail", "description": "Always fails", "inputSchema": OBJ, "annotations": {"readOnlyHint": True}},
    {"name": "change", "description": "Adds the tool added", "inputSchema": OBJ, "annotations": {"readOnlyHint": True}},
    {"name": "ask", "description": "Asks the client something",
     "inputSchema": {"type": "object", "properties": {"method": {"type": "string"}}, "required": ["method"]},
     "annotations": {"readOnlyHint": True}},
    {"name": "gate", "description": "Waits at the test's gate", "inputSchema": OBJ,
     "annotations": {"readOnlyHint": True}},
    {"name": "hang", "description": "Never answers", "inputSchema": OBJ, "annotations": {"readOnlyHint": True}},
    {"name": "giant", "description": "Answers 256 KiB", "inputSchema": OBJ, "annotations": {"readOnlyHint": True}},
    {"name": "flood", "description": "Floods stdout", "inputSchema": OBJ, "annotations": {"readOnlyHint": True}},
    {"name": "badjson", "description": "Answers garbage", "inputSchema": OBJ, "annotations": {"readOnlyHint": True}},
    {"name": "crash", "description": "Exits mid-call", "inputSchema": OBJ, "annotations": {"readOnlyHint": True}},
    {"name": "bomb", "description": "A schema bomb", "inputSchema": bomb()},
]

lock = threading.Lock()
# Gate calls running now, and the most seen at once.
gates = {"inside": 0, "peak": 0}
gates_lock = threading.Lock()
# Requests this server sent to the client: id -> [threading.Event, reply].
asked = {}


def text(t):
    return {"content": [{"type": "text", "text": t}]}


def handle(msg, send, raw):
    """Answers one message; `send` writes a message, `raw` writes bytes (stdio)."""
    method, mid = msg.get("method"), msg.get("id")
    params = msg.get("params") or {}
    if method == "notifications/cancelled":
        if CANCEL_LOG:
            with open(CANCEL_LOG, "a") as f:
                f.write(json.dumps(params) + "\n")
        return
    if mid is None:
        return
    if method is None:
        waiting = asked.get(mid)
        if waiting:
            waiting[1] = msg
            waiting[0].set()
        return
    if method == "initialize":
        if MODE == "silent":
            return
        send({"jsonrpc": "2.0", "id": mid, "result": {
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {"listChanged": True}},
            "serverInfo": {"name": "fake", "version": "1"},
            "instructions": "Use fake.echo to repeat text."}})
    elif method == "tools/list":
        # Two pages, to exercise pagination.
        cursor = params.get("cursor")
        half = len(TOOLS) // 2
        if cursor is None:
            send({"jsonrpc": "2.0", "id": mid, "result": {"tools": TOOLS[:half], "nextCursor": "page2"}})
        else:
            send({"jsonrpc": "2.0", "id": mid, "result": {"tools": TOOLS[half:]}})
    elif method == "tools/call":
        call(mid, params.get("name"), params.get("arguments") or {}, send, raw)
    elif method == "ping":
        send({"jsonrpc": "2.0", "id": mid, "result": {}})
    else:
        send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "no " + str(method)}})


def call(mid, name, args, send, raw):
    if CALL_LOG:
        with open(CALL_LOG, "a") as f:
            f.write(str(name) + "\n")
    def ok(result):
        send({"jsonrpc": "2.0", "id": mid, "result": result})
    if name == "echo":
        ok(text(args.get("text", "")))
    elif name == "add":
        s = args["a"] + args["b"]
        ok({"content": [{"type": "text", "text": str(s)}], "structuredContent": {"sum": s}})
    elif name == "wipe":
        ok(text("wiped"))
    elif name == "added":
        ok(text("added"))
    elif name == "fail":
        ok({"isError": True, "content": [{"type": "text", "text": "the fake tool failed on purpose"}]})
    elif name == "change":
        if not any(t["name"] == "added" for t in TOOLS):
            TOOLS.append({"name": "added", "description": "A tool added at run time", "inputSchema": OBJ,
                          "annotations": {"readOnlyHint": True}})
        ok(text("changed"))
        send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
    elif name == "ask":
        rid = "ask-" + str(mid)
        asked[rid] = [threading.Event(), None]
        send({"jsonrpc": "2.0", "id": rid, "method": args["method"], "params": {}})
        asked[rid][0].wait()
        reply = asked.pop(rid)[1]
        reply.pop("jsonrpc", None)
        reply.pop("id", None)
        ok(text(json.dumps(reply, sort_keys=True)))
    elif name == "gate":
        import urllib.request
        with gates_lock:
            gates["inside"] += 1
            gates["peak"] = max(gates["peak"], gates["inside"])
        urllib.request.urlopen(os.environ["GATE_URL"]).read()
        with gates_lock:
            gates["inside"] -= 1
            peak = gates["peak"]
        ok(text(str(peak)))
    elif name == "hang":
        return
    elif name == "giant":
        ok(text("x" * (256 * 1024)))
    elif name == "flood":
        chunk = b"x" * 65536
        while True:
            raw(chunk)
    elif name == "badjson":
        raw(b"this is not json\n")
    elif name == "crash":
        os._exit(3)
    else:
        send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32602, "message": "unknown tool"}})


def stdio():
    out = sys.stdout.buffer

    def raw(b):
        with lock:
            out.write(b)
            out.flush()

    def send(m):
        raw(json.dumps(m).encode() + b"\n")

    print("fake server started", file=sys.stderr, flush=True)
    for line in sys.stdin.buffer:
        if line.strip():
            msg = json.loads(line)
            # Calls run on threads, so a hanging one does not block the others.
            threading.Thread(target=handle, args=(msg, send, raw), daemon=True).start()


def http(portfile):
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def do_GET(self):
            self.send_response(405)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_DELETE(self):
            if DELETE_LOG:
                with open(DELETE_LOG, "a") as f:
                    f.write(str(self.headers.get("Mcp-Session-Id")) + "\n")
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            msg = json.loads(body)
            if msg.get("method") != "initialize" and self.headers.get("Mcp-Session-Id") != "s-1":
                # As server-everything answers: an error without the request's id.
                data = json.dumps({"jsonrpc": "2.0", "id": None,
                                   "error": {"code": -32000, "message": "Bad Request: Server not initialized"}})
                self.send_response(400)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data.encode())
                return
            answers = []
            handle(msg, answers.append, lambda b: None)
            if not answers:
                self.send_response(202)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            if msg.get("method") == "tools/call":
                # An event stream: the answer as one event.
                data = b"".join(b"event: message\ndata: " + json.dumps(a).encode() + b"\n\n" for a in answers)
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
            else:
                data = json.dumps(answers[0]).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
            if msg.get("method") == "initialize":
                self.send_header("Mcp-Session-Id", "s-1")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    with open(portfile + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(portfile + ".tmp", portfile)
    server.serve_forever()


def ws(portfile):
    import base64
    import hashlib
    import socketserver
    import struct

    guid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

    def note(line):
        if os.environ.get("WS_LOG"):
            with open(os.environ["WS_LOG"], "a") as f:
                f.write(line + "\n")

    def frame(op, payload, fin=True):
        n = len(payload)
        head = bytes([(0x80 if fin else 0) | op])
        if n < 126:
            head += bytes([n])
        elif n < 65536:
            head += bytes([126]) + struct.pack(">H", n)
        else:
            head += bytes([127]) + struct.pack(">Q", n)
        return head + payload

    class Handler(socketserver.StreamRequestHandler):
        def handle(self):
            headers = {}
            while True:
                line = self.rfile.readline().decode().strip()
                if not line:
                    break
                if ":" in line:
                    k, v = line.split(":", 1)
                    headers[k.strip().lower()] = v.strip()
            note("protocol %s auth %s" % (headers.get("sec-websocket-protocol"),
                                           "yes" if headers.get("authorization") else "no"))
            accept = base64.b64encode(hashlib.sha1((headers["sec-websocket-key"] + guid).encode()).digest())
            self.wfile.write(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                             b"Connection: Upgrade\r\nSec-WebSocket-Protocol: mcp\r\n"
                             b"Sec-WebSocket-Accept: " + accept + b"\r\n\r\n")
            wlock = threading.Lock()

            def raw(b):
                with wlock:
                    try:
                        self.wfile.write(b)
                        self.wfile.flush()
                    except (OSError, ValueError):
                        pass  # the hub closed the connection (a message too large)

            def send(m):
                data = json.dumps(m).encode()
                if len(data) > 64:
                    raw(frame(0x1, data[:32], fin=False) + frame(0x0, data[32:]))
                else:
                    raw(frame(0x1, data))

            raw(frame(0x9, b"hello"))
            while True:
                head = self.rfile.read(2)
                if len(head) < 2:
                    return
                op, n = head[0] & 0x0F, head[1] & 0x7F
                if n == 126:
                    n = struct.unpack(">H", self.rfile.read(2))[0]
                elif n == 127:
                    n = struct.unpack(">Q", self.rfile.read(8))[0]
                mask = self.rfile.read(4) if head[1] & 0x80 else None
                if mask is None:
                    note("unmasked frame")
                    return
                payload = bytes(b ^ mask[i % 4] for i, b in enumerate(self.rfile.read(n)))
                if op == 0x8:
                    note("close %d" % struct.unpack(">H", payload[:2])[0])
                    return
                if op == 0xA:
                    note("pong " + payload.decode())
                elif op == 0x1:
                    msg = json.loads(payload)
                    threading.Thread(target=handle, args=(msg, send, lambda b: None), daemon=True).start()

    class Server(socketserver.ThreadingTCPServer):
        daemon_threads = True

    server = Server(("127.0.0.1", 0), Handler)
    with open(portfile + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(portfile + ".tmp", portfile)
    server.serve_forever()


if __name__ == "__main__":
    if MODE == "crashloop":
        print("fake server: crashing at start", file=sys.stderr, flush=True)
        sys.exit(1)
    if len(sys.argv) > 2 and sys.argv[1] == "--http":
        http(sys.argv[2])
    elif len(sys.argv) > 2 and sys.argv[1] == "--ws":
        ws(sys.argv[2])
    else:
        stdio()
