"""External MCP servers behind the hub, with real servers and a real client: the
npm `@modelcontextprotocol/server-everything` over stdio (`everything`), over
Streamable HTTP (`everything-http`) and over the legacy HTTP+SSE transport
(`everything-sse`, which the hub falls back to), and a `fastmcp` server over stdio (`py`,
fastmcp_server.py), mounted by `[[mcp_servers]]` in the hub at SERVERS_URL. The
PyPI `mcp` client finds their tools with hub_search and calls them with hub_call;
REST calls them too and reads their audit records; the destructive fastmcp tool
needs an approval; a token whose allowlist leaves `py` out is refused; the py
server killed in the middle of a call gives that call its error and is started
again; the hub relisted everything's tools on its tools/list_changed. The same
fastmcp server over a real WebSocket server (`pyws`, ws_server.py) answers through
the hub with the configured header on its handshake; the fastmcp servers (mcp
2.x) are used over the stateless 2026-07-28 revision, server-everything over
2025-11-25; server-everything's get-roots-list reads the roots configured for it,
and its sampling and elicitation tools are not offered (the hub declares neither
capability); a server on the mcp SDK's MCPServer (`sdk`) adds a tool, which the hub
sees on its 2026-07-28 subscriptions/listen stream. Prints one `ok`/`not ok` line
per check."""

import asyncio
import json
import os
import signal
import urllib.request

from checks import Checks, text
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

URL = os.environ["SERVERS_URL"]
BASE = URL.rsplit("/mcp", 1)[0]
TOKEN = os.environ["SERVERS_TOKEN"]
TOKEN_SOME = os.environ["SERVERS_TOKEN_SOME"]
HUB_LOG = os.environ["SERVERS_HUB_LOG"]

check = Checks("mcp-servers")


def rest(method, path, body=None, token=TOKEN):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(BASE + path, data=data, method=method)
    req.add_header("Authorization", f"Bearer {token}")
    req.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(req, timeout=120) as resp:
        return json.loads(resp.read())


def rest_call(tool, args, token=TOKEN):
    return rest("POST", "/api/hub/call", {"calls": [{"tool": tool, "input": args}]}, token)["results"][0]


def server(name):
    return next(s for s in rest("GET", "/api/mcp-servers")["servers"] if s["name"] == name)


async def until(what, fn, within=120):
    for _ in range(int(within / 0.1)):
        value = fn()
        if value:
            return value
        await asyncio.sleep(0.1)
    raise AssertionError(f"waited {within} s for {what}")


async def main():
    for name in ("everything", "everything-http", "everything-sse", "py", "pyws", "sdk"):
        async def active(name=name):
            s = await until(f"{name} active", lambda: server(name)["state"] == "active" and server(name))
            assert s["operations"], s

        await check(f"{name} is active with its tools", active)

    http = create_mcp_http_client(headers={"Authorization": f"Bearer {TOKEN}"})
    async with Client(streamable_http_client(URL, http_client=http), mode="legacy") as client:
        async def search():
            r = await client.call_tool("hub_search", {"q": "sum of two numbers"})
            found = [x["tool"] for x in json.loads(text(r))["results"]]
            for tool in ("everything.get-sum", "everything-http.get-sum"):
                assert tool in found, found

        await check("hub_search finds server-everything's get-sum on both transports", search)

        async def search_py():
            r = await client.call_tool("hub_search", {"q": "add two integers"})
            found = [x["tool"] for x in json.loads(text(r))["results"]]
            assert "py.add" in found, found

        await check("hub_search finds the fastmcp server's add", search_py)

        async def schema():
            r = await client.call_tool("hub_schema", {"tool": "everything.get-sum"})
            schema = json.loads(text(r))["inputSchema"]
            assert set(schema["required"]) == {"a", "b"}, schema

        await check("hub_schema gives get-sum's inputSchema", schema)

        async def calls():
            batch = {"calls": [
                {"tool": "everything.echo", "input": {"message": "hello"}},
                {"tool": "everything.get-sum", "input": {"a": 2, "b": 3}},
                {"tool": "everything-http.get-sum", "input": {"a": 4, "b": 5}},
                {"tool": "py.add", "input": {"a": 6, "b": 7}},
                {"tool": "py.echo", "input": {"text": "from python"}},
                {"tool": "everything-sse.get-sum", "input": {"a": 10, "b": 1}},
            ]}
            r = await client.call_tool("hub_call", batch)
            results = json.loads(text(r))["results"]
            assert all(x["ok"] for x in results), results
            assert "hello" in results[0]["result"]["text"], results[0]
            assert "5" in results[1]["result"]["text"], results[1]
            assert "9" in results[2]["result"]["text"], results[2]
            assert results[3]["result"] == {"result": 13}, results[3]
            assert results[4]["result"] == {"result": "from python"}, results[4]
            assert "11" in results[5]["result"]["text"], results[5]

        await check("hub_call runs tools of every server in one batch", calls)

        async def destructive():
            r = await client.call_tool("hub_call", {"calls": [{"tool": "py.delete_all_notes", "input": {}}]})
            body = text(r)
            assert "approval_required" in body, body

        await check("the tool annotated destructive asks for an approval", destructive)

    async def via_rest():
        r = rest_call("everything-http.get-sum", {"a": 20, "b": 22})
        assert r["ok"] and "42" in r["result"]["text"], r
        calls = rest("GET", "/api/calls?limit=200")["calls"]
        tools = {c["tool"] for c in calls}
        for tool in ("everything.get-sum", "everything-http.get-sum", "py.add", "py.delete_all_notes"):
            assert tool in tools, sorted(tools)

    await check("REST calls them and the audit log records every call", via_rest)

    async def forbidden():
        r = rest_call("py.echo", {"text": "x"}, token=TOKEN_SOME)
        assert r["error"]["code"] == "forbidden", r
        ok = rest_call("everything.get-sum", {"a": 1, "b": 1}, token=TOKEN_SOME)
        assert ok["ok"], ok

    await check("a token without py.* is refused py.echo and may call everything.*", forbidden)

    async def killed():
        before = server("py")
        loop = asyncio.get_running_loop()
        slow = loop.run_in_executor(None, rest_call, "py.slow", {"seconds": 60})

        def in_flight():
            metrics = urllib.request.Request(BASE + "/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
            with urllib.request.urlopen(metrics, timeout=30) as resp:
                for line in resp.read().decode().splitlines():
                    if line.startswith("wasmhub_calls_in_flight "):
                        return float(line.split()[1]) >= 1
            return False

        await until("py.slow in flight", in_flight)
        os.kill(before["pid"], signal.SIGKILL)
        r = await slow
        assert r["ok"] is False, r
        assert "was ended by signal 9" in r["error"]["message"], r
        after = await until(
            "py restarted",
            lambda: (s := server("py"))["state"] == "active" and s["restarts"] > before["restarts"] and s,
        )
        assert after["pid"] != before["pid"], (before, after)
        again = rest_call("py.echo", {"text": "back"})
        assert again["ok"] and again["result"] == {"result": "back"}, again

    await check("py killed mid-call: the call gets its error, the server restarts", killed)

    async def revisions():
        names = ("everything", "everything-http", "everything-sse", "py", "pyws", "sdk")
        got = {n: server(n).get("protocol") for n in names}
        want = {n: "2025-11-25" if n.startswith("everything") else "2026-07-28" for n in names}
        assert got == want, got

    await check("fastmcp (mcp 2.x) is used over 2026-07-28, server-everything over 2025-11-25", revisions)

    async def websocket():
        r = rest_call("pyws.echo", {"text": "over a websocket"})
        assert r["ok"] and r["result"] == {"result": "over a websocket"}, r
        with open(os.environ["SERVERS_WS_LOG"]) as f:
            log = f.read()
        assert "protocol mcp auth yes" in log, log

    await check("the fastmcp server over a WebSocket answers, the handshake had mcp and the header", websocket)

    async def roots():
        r = rest_call("everything.get-roots-list", {})
        assert r["ok"] and "URI: file:///srv/suite" in r["result"]["text"], r
        ops = server("everything")["operations"]
        for tool in ("trigger-sampling-request", "trigger-elicitation-request"):
            assert f"everything.{tool}" not in ops, ops

    await check("everything's get-roots-list reads the configured roots; no sampling or elicitation tools", roots)

    async def listen():
        r = rest_call("sdk.grow", {})
        assert r["ok"], r
        await until("sdk.grown listed", lambda: "sdk.grown" in server("sdk")["operations"])
        r = rest_call("sdk.grown", {})
        assert r["ok"] and r["result"] == {"result": "grown"}, r

    await check("the mcp SDK server's added tool is seen on its subscriptions/listen stream (2026-07-28)", listen)

    async def list_changed():
        def seen():
            with open(HUB_LOG) as f:
                return "mcp server everything: its tools changed; relisted" in f.read()

        await until("everything's tools/list_changed in the hub log", seen)

    await check("the hub relisted everything's tools on tools/list_changed", list_changed)
    return check.summary()


raise SystemExit(asyncio.run(main()))
