"""The otel suite's checks, against a hub exporting to receiver.py: each drives the
hub with a real client (the PyPI `mcp` 2.x client, plain HTTP for /api/chat and
/metrics), then waits for the spans it must produce to reach the receiver (polling,
bounded by a deadline: the exporter sends every telemetry.flush_ms) and checks
their names, parents, kinds and attributes. Prints one `ok`/`not ok` line per
check; exits non-zero when any failed. Configuration comes from run.sh through
the environment.
"""

import asyncio
import http.client
import json
import os
import re
import sys
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "mcp"))
from checks import Checks  # noqa: E402
from mcp.client import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

HUB = os.environ["HUB_URL"]
RECEIVER = os.environ["RECEIVER_URL"]
UPSTREAM = os.environ["UPSTREAM_URL"]
SERVER, CLIENT, INTERNAL = 2, 3, 1
check = Checks("otel")


def get(url):
    with urllib.request.urlopen(url, timeout=30) as r:
        return r.read().decode()


def post(url, body, headers=None):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                 headers={"content-type": "application/json", **(headers or {})})
    with urllib.request.urlopen(req, timeout=60) as r:
        return r.status, r.read().decode()


def spans_of(trace_id, want, deadline=30):
    """The spans of `trace_id` once `want(spans)` holds; fails after `deadline` s."""
    until = time.monotonic() + deadline
    while True:
        got = json.loads(get(f"{RECEIVER}/spans"))
        assert not got["errors"], f"the receiver refused requests: {got['errors']}"
        spans = [s for s in got["spans"] if s["traceId"] == trace_id]
        if want(spans):
            return spans
        if time.monotonic() > until:
            raise AssertionError(f"spans of {trace_id} never matched; got {json.dumps(spans, indent=1)}")
        time.sleep(0.1)


def one(spans, name):
    found = [s for s in spans if s["name"] == name]
    assert len(found) == 1, f"{len(found)} spans named {name!r} in {[s['name'] for s in spans]}"
    return found[0]


def names(*wanted):
    return lambda spans: all(any(s["name"] == w for s in spans) for w in wanted)


def traceparent(n):
    trace = f"{n:032x}".replace("0", "a", 1)
    return trace, f"{n:016x}".replace("0", "b", 1), f"00-{trace}-{f'{n:016x}'.replace('0', 'b', 1)}-01"


def metric(name_and_labels):
    text = get(f"{HUB}/metrics")
    m = re.search(r"^" + re.escape(name_and_labels) + r" (\S+)$", text, re.M)
    return float(m.group(1)) if m else 0.0


async def mcp_checks():
    async with Client(streamable_http_client(f"{HUB}/mcp"), mode="auto") as client:

        async def parent_and_attributes():
            trace, parent, tp = traceparent(0x101)
            r = await client.call_tool("hub_call", {"calls": [{"tool": "calc.eval", "input": {"expression": "6*7"}}]},
                                       meta={"traceparent": tp, "tracestate": "suite=1"})
            assert not r.is_error, r
            spans = spans_of(trace, names("tools/call hub_call", "execute_tool calc.eval"))
            server = one(spans, "tools/call hub_call")
            assert server["parentSpanId"] == parent, server
            assert server["kind"] == SERVER, server
            a = server["attributes"]
            assert a["mcp.method.name"] == "tools/call", a
            assert a["gen_ai.tool.name"] == "hub_call", a
            assert a["gen_ai.operation.name"] == "execute_tool", a
            assert a["mcp.protocol.version"] == "2026-07-28", a
            assert a["network.transport"] == "tcp", a
            assert "jsonrpc.request.id" in a, a
            assert "error.type" not in a, a
            assert server["traceState"] == "suite=1", server
            # The HTTP request's own span is a link, not the parent.
            assert len(server["links"]) == 1, server
            link = server["links"][0]
            linked = spans_of(link["traceId"], lambda s: any(x["spanId"] == link["spanId"] for x in s))
            http = [x for x in linked if x["spanId"] == link["spanId"]][0]
            assert http["name"] == "POST /mcp" and http["attributes"]["http.route"] == "/mcp", http
            op = one(spans, "execute_tool calc.eval")
            assert op["parentSpanId"] == server["spanId"], op
            assert op["attributes"]["wasmhub.call.outcome"] == "ok", op
            assert op["attributes"]["gen_ai.tool.call.id"].startswith("call_"), op
            assert op["attributes"]["wasmhub.call.instantiate_us"] > 0, op
            assert op["attributes"]["wasmhub.call.guest_us"] > 0, op
            assert server["resource"]["service.name"] == "wasmhub-otel-suite", server

        await check("tools/call with _meta.traceparent: server span under it, operation span under that",
                    parent_and_attributes)

        async def outbound():
            trace, _, tp = traceparent(0x202)
            url = f"{UPSTREAM}/echo"
            r = await client.call_tool("hub_call", {"calls": [{"tool": "fetch.get", "input": {"url": url}}]},
                                       meta={"traceparent": tp, "baggage": "user=alice,tier=gold"})
            assert not r.is_error, r
            spans = spans_of(trace, names("tools/call hub_call", "execute_tool fetch.get", "GET"))
            op = one(spans, "execute_tool fetch.get")
            http = one(spans, "GET")
            assert http["parentSpanId"] == op["spanId"] and http["kind"] == CLIENT, http
            assert http["attributes"]["http.response.status_code"] == 200, http
            assert http["attributes"]["server.address"] == "127.0.0.1", http
            # network.trace_context = true: the request carried the span.
            sent = {s["traceparent"]: s["baggage"] for s in json.loads(get(f"{UPSTREAM}/seen")) if s["path"] == "/echo"}
            # ... and of the client's baggage only what telemetry.forward_baggage lets out.
            assert sent.get(f"00-{trace}-{http['spanId']}-01", "missing") == "tier=gold", sent

        await check("a plugin's outbound request is a CLIENT span under its call and carries traceparent", outbound)

        async def tool_error():
            trace, _, tp = traceparent(0x303)
            r = await client.call_tool("hub_call", {"calls": [{"tool": "calc.eval", "input": {"expression": "1/"}}]},
                                       meta={"traceparent": tp})
            assert r.is_error, r
            spans = spans_of(trace, names("tools/call hub_call", "execute_tool calc.eval"))
            server = one(spans, "tools/call hub_call")
            assert server["attributes"]["error.type"] == "tool_error", server
            assert server["status"]["code"] == 2, server
            op = one(spans, "execute_tool calc.eval")
            assert op["attributes"]["error.type"] != "", op

        await check("an isError result sets error.type = tool_error", tool_error)

        async def external_server():
            trace, _, tp = traceparent(0x707)
            r = await client.call_tool("hub_call", {"calls": [{"tool": "tracer.whoami", "input": {}}]},
                                       meta={"traceparent": tp, "baggage": "user=alice,tier=gold"})
            assert not r.is_error, r
            spans = spans_of(trace, names("execute_tool tracer.whoami", "tools/call whoami"))
            op = one(spans, "execute_tool tracer.whoami")
            out = one(spans, "tools/call whoami")
            assert out["kind"] == CLIENT and out["parentSpanId"] == op["spanId"], out
            assert out["attributes"]["mcp.method.name"] == "tools/call", out
            got = [s for s in json.loads(get(f"{os.environ['MCP_SERVER_URL']}/seen"))
                   if (s["meta"] or {}).get("traceparent", "").startswith(f"00-{trace}-")]
            assert len(got) == 1, got
            want = f"00-{trace}-{out['spanId']}-01"
            assert got[0]["meta"]["traceparent"] == want and got[0]["traceparent"] == want, got
            # telemetry.forward_baggage = ["tier"]: the client's other keys stay in the hub.
            assert got[0]["meta"]["baggage"] == "tier=gold" and got[0]["baggage"] == "tier=gold", got

        await check("an external MCP server gets the hub's span in _meta.traceparent and the header, "
                    "and only the forwarded baggage", external_server)


async def chat_checks():
    async def agent_turn():
        trace, parent, tp = traceparent(0x404)
        body = {"id": "otel-chat-1", "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "compute 2+3"}]}]}
        status, text = post(f"{HUB}/api/chat", body, {"traceparent": tp, "baggage": "user=alice,tier=gold"})
        assert status == 200 and '"finish"' in text, text
        spans = spans_of(trace, names("POST /api/chat", "execute_tool calc.eval", "execute_tool hub_call")
                         and (lambda s: sum(x["name"] == "chat scripted-1" for x in s) == 2
                              and any(x["name"].startswith("invoke_agent") for x in s)))
        # The HTTP span is named by its route (the conventions' `{method} {http.route}`).
        http = one(spans, "POST /api/chat")
        assert http["parentSpanId"] == parent and http["kind"] == SERVER, http
        assert http["attributes"]["http.route"] == "/api/chat", http
        agent = [s for s in spans if s["name"].startswith("invoke_agent")][0]
        assert agent["parentSpanId"] == http["spanId"], agent
        assert agent["attributes"]["gen_ai.conversation.id"] == "otel-chat-1", agent
        assert agent["attributes"]["gen_ai.usage.input_tokens"] == 24, agent
        chats = [s for s in spans if s["name"] == "chat scripted-1"]
        for c in chats:
            assert c["parentSpanId"] == agent["spanId"] and c["kind"] == CLIENT, c
            assert c["attributes"]["gen_ai.usage.input_tokens"] == 12, c
            assert c["attributes"]["gen_ai.usage.output_tokens"] == 7, c
            assert c["attributes"]["gen_ai.provider.name"] == "scripted", c
        tool = one(spans, "execute_tool hub_call")
        assert tool["parentSpanId"] == agent["spanId"], tool
        op = one(spans, "execute_tool calc.eval")
        assert op["parentSpanId"] == tool["spanId"], op
        # telemetry.storage_wait_ms = 0: the lease wait and every save are spans.
        lease = one(spans, "wasmhub.session.lease")
        assert lease["parentSpanId"] == http["spanId"], lease
        saves = [s for s in spans if s["name"] == "wasmhub.session.save"]
        assert saves and all(s["parentSpanId"] == agent["spanId"] for s in saves), saves
        # Each model request carried its chat span, and of the client's baggage only
        # what telemetry.forward_baggage lets out.
        seen = {s["traceparent"]: s["baggage"] for s in json.loads(get(f"{UPSTREAM}/seen"))
                if s["path"] == "/v1/chat/completions"}
        for c in chats:
            assert seen.get(f"00-{trace}-{c['spanId']}-01", "missing") == "tier=gold", (c["spanId"], seen)

    await check("/api/chat: invoke_agent -> chat MODEL (usage) and execute_tool -> the operation", agent_turn)

    async def captured_messages():
        trace, _, tp = traceparent(0x606)
        text = "compute 2+3 with Authorization: Bearer sk-live-0123456789abcdef then " + "y" * 3000
        body = {"id": "otel-content", "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": text}]}]}
        status, answer = post(f"{HUB}/api/chat", body, {"traceparent": tp})
        assert status == 200 and '"finish"' in answer, answer
        spans = spans_of(trace, lambda s: sum(x["name"] == "chat scripted-1" for x in s) == 2)
        first, second = sorted((s for s in spans if s["name"] == "chat scripted-1"), key=lambda s: s["start"])
        for span in (first, second):
            for key in ("gen_ai.input.messages", "gen_ai.output.messages"):
                assert len(span["attributes"][key]) <= 2048, (key, len(span["attributes"][key]))
                assert "sk-live-0123456789abcdef" not in span["attributes"][key], span["attributes"][key]
        sent = json.loads(first["attributes"]["gen_ai.input.messages"])
        assert [m["role"] for m in sent] == ["system", "user"], sent
        user = sent[1]["parts"][0]
        assert user["type"] == "text" and "Bearer [redacted] then yyy" in user["content"], user
        assert user["content"].endswith("…[cut: telemetry.max_content_bytes]"), user["content"][-60:]
        out = json.loads(first["attributes"]["gen_ai.output.messages"])
        assert out[0]["role"] == "assistant" and out[0]["finish_reason"] == "tool_calls", out
        call = [p for p in out[0]["parts"] if p["type"] == "tool_call"][0]
        assert call["name"] == "hub_call" and call["arguments"]["calls"][0]["tool"] == "calc.eval", call
        later = json.loads(second["attributes"]["gen_ai.input.messages"])
        response = [p for m in later for p in m["parts"] if p["type"] == "tool_call_response"]
        assert response and response[0]["id"] == call["id"], later
        final = json.loads(second["attributes"]["gen_ai.output.messages"])
        assert final[0]["parts"][0]["content"].startswith("The answer is"), final

    await check("capture_content: chat spans carry the input and output messages, redacted and cut", captured_messages)


def chat_stream(session, text, model, base=HUB, headers=None):
    """A POST /api/chat answered as a stream: the open connection and response."""
    conn = http.client.HTTPConnection(base.split("//")[1], timeout=60)
    body = {"id": session, "model": model,
            "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": text}]}]}
    conn.request("POST", "/api/chat", json.dumps(body), {"content-type": "application/json", **(headers or {})})
    resp = conn.getresponse()
    assert resp.status == 200, resp.status
    return conn, resp


def resume_stream(base, session):
    """GET /api/chat/{session}/stream: the open connection and response."""
    conn = http.client.HTTPConnection(base.split("//")[1], timeout=60)
    conn.request("GET", f"/api/chat/{session}/stream")
    resp = conn.getresponse()
    assert resp.status == 200, resp.status
    return conn, resp


def read_until(resp, needle):
    seen = b""
    while needle.encode() not in seen:
        line = resp.readline()
        assert line, f"the stream ended before {needle!r}: {seen[-400:]!r}"
        seen += line
    return seen.decode()


def wait_metric(name_and_labels, above, deadline=30):
    until = time.monotonic() + deadline
    while (value := metric(name_and_labels)) <= above:
        assert time.monotonic() < until, f"{name_and_labels} stayed at {value} (wanted > {above})"
        time.sleep(0.1)
    return value


async def metric_checks():
    labels = 'surface="chat",provider="scripted"'

    async def failing_upstream():
        errors = metric(f"wasmhub_chat_errors_total{{{labels}}}")
        requests = metric(f"wasmhub_chat_requests_total{{{labels}}}")
        conn, resp = chat_stream("otel-fail", "hello", "scripted/failing-1")
        text = resp.read().decode()
        conn.close()
        assert '"type":"error"' in text, text
        wait_metric(f"wasmhub_chat_errors_total{{{labels}}}", errors)
        wait_metric(f"wasmhub_chat_requests_total{{{labels}}}", requests)
        assert metric(f"wasmhub_chat_time_to_first_byte_seconds_count{{{labels}}}") >= 1
        assert metric(f"wasmhub_chat_turn_duration_seconds_count{{{labels}}}") >= 2

    await check("chat metrics: an upstream that fails counts an error and a request", failing_upstream)

    async def client_aborts():
        gone = 'wasmhub_chat_aborts_total{surface="chat",provider="unknown",by="client"}'
        before = metric(gone)
        conn, resp = chat_stream("otel-abort", "hello", "scripted/slow-1")
        read_until(resp, "Thinking")
        conn.close()
        wait_metric(gone, before)

    await check("chat metrics: a client that leaves mid-stream counts an abort by the client", client_aborts)

    async def server_aborts():
        stopped = 'wasmhub_chat_aborts_total{surface="chat",provider="unknown",by="server"}'
        before = metric(stopped)
        conn, resp = chat_stream("otel-stop", "hello", "scripted/slow-1")
        read_until(resp, "Thinking")
        status, _ = post(f"{HUB}/api/chat/otel-stop/stop", {})
        assert status in (200, 202, 204), status
        text = read_until(resp, '"type":"abort"')
        conn.close()
        assert '"type":"abort"' in text
        wait_metric(stopped, before)

    await check("chat metrics: a stopped turn counts an abort by the server", server_aborts)


def stream_post(path, body, headers=None):
    """A streamed POST: the open connection and response."""
    conn = http.client.HTTPConnection(HUB.split("//")[1], timeout=60)
    conn.request("POST", path, json.dumps(body), {"content-type": "application/json", **(headers or {})})
    return conn, conn.getresponse()


def proxy_body(model, stream=True):
    return {"model": model, "stream": stream, "messages": [{"role": "user", "content": "hello"}]}


def messages_body(model, stream=True):
    return {"model": model, "max_tokens": 64, "stream": stream, "messages": [{"role": "user", "content": "hello"}]}


ANTHROPIC = {"anthropic-version": "2023-06-01"}


async def stdio_checks():
    """`wasmhub mcp --stdio`, started by the client as a desktop client does, traces
    too: its tools/call span is under the client's _meta.traceparent."""
    server = StdioServerParameters(
        command=os.environ["WASMHUB_BIN"],
        args=["mcp", "--stdio", "--config", os.environ["WASMHUB_CONFIG"], "--data", os.environ["STDIO_DATA"]],
        env={"WASMHUB_LOG": "warn"},
    )

    async def traced():
        trace, parent, tp = traceparent(0x505)
        async with Client(server, mode="legacy") as client:
            r = await client.call_tool("hub_call", {"calls": [{"tool": "calc.eval", "input": {"expression": "1+1"}}]},
                                       meta={"traceparent": tp})
            assert not r.is_error, r
        spans = spans_of(trace, names("tools/call hub_call", "execute_tool calc.eval"))
        call = one(spans, "tools/call hub_call")
        assert call["parentSpanId"] == parent and call["kind"] == SERVER, call
        assert call["attributes"]["network.transport"] == "pipe", call
        assert call["resource"]["service.name"] == "wasmhub-otel-suite", call
        assert one(spans, "execute_tool calc.eval")["parentSpanId"] == call["spanId"]

    await check("mcp --stdio: tools/call with _meta.traceparent, a server span under it (network.transport pipe)", traced)


async def surface_metric_checks():
    """The chat metrics and the GenAI client metrics of the OpenAI proxy, the UI
    completions and the Anthropic surface, each under a scripted client."""
    surfaces = [("openai", "/v1/chat/completions", proxy_body, {}),
                ("anthropic", "/v1/messages", messages_body, ANTHROPIC)]
    for surface, path, body, headers in surfaces:
        labels = f'surface="{surface}",provider="scripted"'

        async def answered(surface=surface, path=path, body=body, headers=headers, labels=labels):
            requests = metric(f"wasmhub_chat_requests_total{{{labels}}}")
            unknown = metric(f"wasmhub_chat_unknown_upstream_events_total{{{labels}}}")
            conn, resp = stream_post(path, body("scripted/garbled-1"), headers)
            text = resp.read().decode()
            conn.close()
            assert resp.status == 200 and "welcome" in text, (resp.status, text[-400:])
            wait_metric(f"wasmhub_chat_requests_total{{{labels}}}", requests)
            assert metric(f"wasmhub_chat_unknown_upstream_events_total{{{labels}}}") == unknown + 1
            assert metric(f"wasmhub_chat_time_to_first_byte_seconds_count{{{labels}}}") >= 1
            assert metric(f"wasmhub_chat_turn_duration_seconds_count{{{labels}}}") >= 1

        await check(f"{surface} metrics: a streamed answer counts a request, its first byte and an unknown upstream event", answered)

        async def failing(surface=surface, path=path, body=body, headers=headers, labels=labels):
            errors = metric(f"wasmhub_chat_errors_total{{{labels}}}")
            conn, resp = stream_post(path, body("scripted/failing-1"), headers)
            text = resp.read().decode()
            conn.close()
            assert resp.status == 500, (resp.status, text)
            wait_metric(f"wasmhub_chat_errors_total{{{labels}}}", errors)

        await check(f"{surface} metrics: an upstream that fails counts an error", failing)

        async def aborts(surface=surface, path=path, body=body, headers=headers, labels=labels):
            gone = f'wasmhub_chat_aborts_total{{{labels},by="client"}}'
            before = metric(gone)
            conn, resp = stream_post(path, body("scripted/slow-1"), headers)
            read_until(resp, "Thinking")
            conn.close()
            wait_metric(gone, before)

        await check(f"{surface} metrics: a client that leaves mid-stream counts an abort by the client", aborts)

    async def ui_completions():
        labels = 'surface="ui_completions",provider="scripted"'
        errors = metric(f"wasmhub_chat_errors_total{{{labels}}}")
        conn, resp = stream_post("/api/ui/chat/completions", proxy_body("scripted/failing-1"))
        text = resp.read().decode()
        conn.close()
        assert '"type":"error"' in text, text
        wait_metric(f"wasmhub_chat_errors_total{{{labels}}}", errors)

    await check("ui_completions metrics: an upstream that fails counts an error", ui_completions)

    async def genai_client():
        labels = 'gen_ai_operation_name="chat",gen_ai_provider_name="scripted",gen_ai_request_model="scripted-1"'
        assert metric(f"gen_ai_client_operation_duration_seconds_count{{{labels}}}") >= 1
        assert metric(f'gen_ai_client_token_usage_sum{{{labels},gen_ai_token_type="input"}}') >= 12
        assert metric(f'gen_ai_client_token_usage_sum{{{labels},gen_ai_token_type="output"}}') >= 7
        failed = 'gen_ai_provider_name="scripted",gen_ai_request_model="failing-1",error_type="upstream_error"'
        assert metric(f'gen_ai_client_operation_duration_seconds_count{{gen_ai_operation_name="chat",{failed}}}') >= 3

    await check("/metrics: gen_ai_client_operation_duration_seconds and gen_ai_client_token_usage", genai_client)


async def relay_span_checks():
    """A model call the proxy relays (and one /v1/messages forwards) is a `chat
    MODEL` CLIENT span under the request's server span, with usage, finish reason
    and the captured messages; the provider's request carries that span as its
    parent."""
    surfaces = [("POST /v1/chat/completions", "/v1/chat/completions", proxy_body, {}, 0x808),
                ("POST /v1/messages", "/v1/messages", messages_body, ANTHROPIC, 0x809)]
    for server_name, path, body, headers, n in surfaces:
        async def relayed(server_name=server_name, path=path, body=body, headers=headers, n=n):
            trace, parent, tp = traceparent(n)
            conn, resp = stream_post(path, body("scripted/scripted-1"), {**headers, "traceparent": tp})
            text = resp.read().decode()
            conn.close()
            assert resp.status == 200 and "welcome" in text, (resp.status, text[-400:])
            spans = spans_of(trace, names(server_name, "chat scripted-1"))
            server = one(spans, server_name)
            assert server["parentSpanId"] == parent, server
            chat = one(spans, "chat scripted-1")
            assert chat["parentSpanId"] == server["spanId"] and chat["kind"] == CLIENT, chat
            attrs = chat["attributes"]
            assert (attrs["gen_ai.usage.input_tokens"], attrs["gen_ai.usage.output_tokens"]) == (12, 7), attrs
            assert attrs["gen_ai.response.finish_reasons"] == "stop", attrs
            assert attrs["gen_ai.provider.name"] == "scripted", attrs
            sent = json.loads(attrs["gen_ai.input.messages"])
            assert sent[-1]["role"] == "user" and sent[-1]["parts"][0]["content"] == "hello", sent
            out = json.loads(attrs["gen_ai.output.messages"])
            assert out[0]["parts"] == [{"type": "text", "content": "You're welcome."}], out
            got = [s for s in json.loads(get(f"{UPSTREAM}/seen"))
                   if (s.get("traceparent") or "").startswith(f"00-{trace}-")]
            assert [s["traceparent"] for s in got] == [f"00-{trace}-{chat['spanId']}-01"], got

        await check(f"{server_name}: the relayed model call is a chat span (usage, finish reason, messages) "
                    "and the provider's request is under it", relayed)


async def agent_metric_checks():
    """The chat metrics of the answers the agent loop gives: the upstream events its
    steps skipped, per surface that asked for the turn, and the non-streamed
    answers (no time to first byte)."""
    labels = lambda surface: f'surface="{surface}",provider="scripted"'  # noqa: E731
    turns = [("chat", "/api/chat", {"id": "otel-garbled", "model": "scripted/garbled-1", "messages": [
                 {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hello"}]}]}, {}),
             ("agents", "/v1/agents/garbler", {"input": "hello", "stream": True}, {}),
             ("openai", "/v1/chat/completions", proxy_body("garbler"), {}),
             ("anthropic", "/v1/messages", messages_body("garbler"), ANTHROPIC)]
    for surface, path, body, headers in turns:
        async def unknown_events(surface=surface, path=path, body=body, headers=headers):
            sample = f"wasmhub_chat_unknown_upstream_events_total{{{labels(surface)}}}"
            before = metric(sample)
            conn, resp = stream_post(path, body, headers)
            text = resp.read().decode()
            conn.close()
            assert resp.status == 200 and "welcome" in text, (resp.status, text[-400:])
            wait_metric(sample, before)
            assert metric(sample) == before + 1, metric(sample)

        await check(f"{surface} metrics: an agent turn's step counts its unknown upstream event", unknown_events)

    async def not_streamed():
        requests = f"wasmhub_chat_requests_total{{{labels('agents')}}}"
        duration = f"wasmhub_chat_turn_duration_seconds_count{{{labels('agents')}}}"
        first = f"wasmhub_chat_time_to_first_byte_seconds_count{{{labels('agents')}}}"
        before = [metric(s) for s in (requests, duration, first)]
        status, text = post(f"{HUB}/v1/agents/garbler", {"input": "hello"})
        assert status == 200 and "welcome" in text, text
        assert [metric(s) for s in (requests, duration, first)] == [before[0] + 1, before[1] + 1, before[2]]

    await check("agents metrics: a non-streamed answer counts a request and its duration, no first byte", not_streamed)

    async def json_answers():
        for surface, path, body, headers in [
                ("openai", "/v1/chat/completions",
                 {**proxy_body("garbler", stream=False), "response_format": {"type": "json_object"},
                  "messages": [{"role": "user", "content": "json please"}]}, {}),
                ("anthropic", "/v1/messages",
                 {**messages_body("garbler", stream=False), "messages": [{"role": "user", "content": "json please"}],
                  "output_config": {"format": {"type": "json_schema", "schema": {"type": "object"}}}}, ANTHROPIC)]:
            requests = f"wasmhub_chat_requests_total{{{labels(surface)}}}"
            errors = f"wasmhub_chat_errors_total{{{labels(surface)}}}"
            before = metric(requests), metric(errors)
            status, text = post(f"{HUB}{path}", body, headers)
            assert status == 200 and "sum" in text, (surface, text)
            assert (metric(requests), metric(errors)) == (before[0] + 1, before[1]), surface

    await check("openai and anthropic metrics: the JSON answers of an agent count as requests", json_answers)


async def replica_checks():
    r1, r2 = os.environ["R1_URL"], os.environ["R2_URL"]

    async def one_trace():
        trace, parent, tp = traceparent(0x505)
        conn1, resp1 = chat_stream("otel-replicas", "hello", "scripted/slow-1", r1, {"traceparent": tp})
        read_until(resp1, "Thinking")
        # Followed from the other replica (through PostgreSQL), then stopped there.
        conn2, resp2 = resume_stream(r2, "otel-replicas")
        read_until(resp2, "Thinking")
        status, _ = post(f"{r2}/api/chat/otel-replicas/stop", {})
        assert status in (200, 202, 204), status
        read_until(resp2, '"type":"abort"')
        read_until(resp1, '"type":"abort"')
        conn1.close()
        conn2.close()
        spans = spans_of(trace, lambda s: any(x["name"] == "resume_turn" for x in s)
                         and any(x["name"].startswith("invoke_agent") for x in s))
        start = [s for s in spans if s["name"] == "POST /api/chat" and s["parentSpanId"] == parent]
        assert len(start) == 1, spans
        start = start[0]
        agent = [s for s in spans if s["name"].startswith("invoke_agent")][0]
        assert agent["parentSpanId"] == start["spanId"], agent
        resume = one(spans, "resume_turn")
        assert resume["parentSpanId"] == start["spanId"], resume
        assert resume["attributes"]["gen_ai.conversation.id"] == "otel-replicas", resume
        instance = lambda s: s["resource"]["service.instance.id"]  # noqa: E731
        assert instance(resume) != instance(start), (instance(resume), instance(start))
        assert instance(agent) == instance(start), agent
        # The resuming request's own span is linked.
        assert len(resume["links"]) == 1, resume

    await check("a turn followed from another replica stays in one trace (resume_turn under the turn's request)",
                one_trace)


async def main():
    if sys.argv[1:] == ["replicas"]:
        await replica_checks()
        return check.summary()
    await mcp_checks()
    await chat_checks()
    await metric_checks()
    await surface_metric_checks()
    await relay_span_checks()
    await agent_metric_checks()
    await stdio_checks()

    async def mcp_metric():
        assert metric('mcp_server_operation_duration_seconds_count{mcp_method_name="tools/call",error_type="tool_error"}') >= 1
        assert metric('mcp_server_operation_duration_seconds_count{mcp_method_name="tools/call",error_type=""}') >= 2
        assert metric("wasmhub_telemetry_spans_exported_total") > 0

    await check("/metrics: mcp_server_operation_duration_seconds and exported spans", mcp_metric)
    return check.summary()


sys.exit(asyncio.run(main()))
