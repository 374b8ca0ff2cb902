"""The Python MCP SDK (2.x, as tests/mcp pins it) keeps one 2025-11-25 session while
HAProxy sends its requests round robin to three replicas.

The client runs in `legacy` mode (the 2025-11-25 handshake: `initialize`, then every
request carries the `Mcp-Session-Id` the replica that answered it chose). An httpx
response hook records which replica answered each request (HAProxy's `X-Served-By`)
and the session id the client sent. Prints one `ok`/`not ok` line per check; exits
non-zero when any failed. LB_URL, TOKEN and REPLICAS come from run.sh.
"""

import asyncio
import json
import os
import sys
import traceback

import httpx2
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT

URL = os.environ["LB_URL"] + "/mcp"
TOKEN = os.environ["TOKEN"]
REPLICAS = [r["name"] for r in json.loads(os.environ["REPLICAS"])]

failed = 0


def report(ok, name, detail=""):
    global failed
    if ok:
        print(f"ok - mcp: {name}", flush=True)
    else:
        failed += 1
        print(f"not ok - mcp: {name}: {detail}", flush=True)


async def session_across_replicas():
    seen = []  # (method, replica, session id sent, status)

    async def on_response(response):
        request = response.request
        seen.append(
            (
                request.method,
                response.headers.get("x-served-by"),
                request.headers.get("mcp-session-id"),
                response.status_code,
            )
        )

    http = httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {TOKEN}"},
        timeout=httpx2.Timeout(MCP_DEFAULT_TIMEOUT, read=MCP_DEFAULT_SSE_READ_TIMEOUT),
        event_hooks={"response": [on_response]},
    )
    results = []
    async with http, Client(streamable_http_client(URL, http_client=http), mode="legacy") as client:
        assert client.protocol_version == "2025-11-25", client.protocol_version
        names = sorted(t.name for t in (await client.list_tools()).tools)
        assert names == ["hub_call", "hub_list", "hub_schema", "hub_search"], names
        for n in range(9):
            r = await client.call_tool("hub_call", {"calls": [{"tool": "calc.eval", "input": {"expression": f"{n}*3"}}]})
            assert not r.is_error, r
            results.append(r.structured_content["results"][0]["result"]["decimal"])
        found = await client.call_tool("hub_search", {"q": "slugify"})
        assert not found.is_error and "text.slugify" in json.dumps(found.structured_content), found
    return seen, results


async def main():
    try:
        seen, results = await session_across_replicas()
    except Exception:  # noqa: BLE001 - reported as a failed check
        report(False, "one 2025-11-25 session through the balancer", traceback.format_exc())
        return
    report(True, "initialize, tools/list, 9 hub_calls and a hub_search in one 2025-11-25 session")
    report(results == [str(3 * n) for n in range(9)], "every hub_call answered", results)
    posts = [s for s in seen if s[0] == "POST"]
    sessions = {s[2] for s in posts[1:]}
    report(
        len(sessions) == 1 and None not in sessions,
        "every request after initialize carried the one session id",
        posts,
    )
    report(all(s[3] in (200, 202) for s in posts), "no request was refused", posts)
    after_init = {s[1] for s in posts[1:]}
    report(
        after_init == set(REPLICAS),
        f"the session's requests were served by all of {REPLICAS}",
        f"served by {sorted(x for x in after_init if x)}: {posts}",
    )


asyncio.run(main())
sys.exit(1 if failed else 0)
