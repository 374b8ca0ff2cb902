"""Drives wasmhub with the official Python MCP SDK (2.x) client in `auto` mode.

`auto` probes `server/discover` and adopts the stateless 2026-07-28 revision when
the server answers it (wasmhub does); `legacy` forces the 2025-11-25 handshake, so
both revisions are exercised through the same client. Prints one `ok`/`not ok` line
per check and exits non-zero when any check failed. Configuration comes from run.sh
through the environment.
"""

import asyncio
import json
import os
import sys

import mcp.types as types
from checks import Checks, text
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError

URL = os.environ["MCP_URL"]
TOKEN_ALL = os.environ["TOKEN_ALL"]
TOKEN_TEXT = os.environ["TOKEN_TEXT"]
OP = os.environ["OP_TOOL"]
OP_INPUT = json.loads(os.environ["OP_INPUT"])
OP_EXPECT = os.environ["OP_EXPECT"]
OP_BAD_INPUT = json.loads(os.environ["OP_BAD_INPUT"])
FORBIDDEN = os.environ["OP_FORBIDDEN"]
FORBIDDEN_INPUT = json.loads(os.environ["OP_FORBIDDEN_INPUT"])
# A hub without tokens whose plugins include the `examples` test guest: its `wipe`
# is destructive, so the default approval policy asks a person first.
APPROVALS_URL = os.environ["APPROVALS_URL"]
WIPE_AND_ECHO = {
    "calls": [
        {"tool": "examples.wipe", "input": {"all": True}},
        {"tool": "examples.echo", "input": {"text": "still runs"}},
    ]
}

check = Checks("py-sdk")


def connect(token, mode):
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    return Client(streamable_http_client(URL, http_client=http), mode=mode)


async def exercise(label, token, mode, expect_version, forbidden):
    async with connect(token, mode) as client:

        async def version():
            assert client.protocol_version == expect_version, client.protocol_version

        await check(f"{label}: negotiated {expect_version}", version)

        async def list_tools():
            tools = (await client.list_tools()).tools
            names = sorted(t.name for t in tools)
            assert names == ["hub_call", "hub_list", "hub_schema", "hub_search"], names

        await check(f"{label}: lists the four meta-tools", list_tools)

        async def search():
            r = await client.call_tool("hub_search", {"q": OP.split(".")[1]})
            assert not r.is_error, text(r)
            assert OP in text(r), text(r)

        await check(f"{label}: hub_search finds {OP}", search)

        async def schema():
            r = await client.call_tool("hub_schema", {"tool": OP})
            assert not r.is_error, text(r)
            assert "inputSchema" in text(r), text(r)

        await check(f"{label}: hub_schema returns {OP}'s schema", schema)

        async def call():
            r = await client.call_tool("hub_call", {"calls": [{"tool": OP, "input": OP_INPUT}]})
            assert not r.is_error, text(r)
            assert OP_EXPECT in text(r), text(r)
            assert r.structured_content is not None

        await check(f"{label}: hub_call runs {OP}", call)

        async def progress():
            seen = []

            async def on_progress(progress, total, message):
                seen.append((progress, total, message))

            r = await client.call_tool(
                "hub_call", {"calls": [{"tool": OP, "input": OP_INPUT}]}, progress_callback=on_progress
            )
            assert not r.is_error, text(r)
            assert seen and seen[-1][0] == 1 and seen[-1][1] == 1, seen

        await check(f"{label}: progress notifications arrive over SSE", progress)

        async def bad_input():
            r = await client.call_tool("hub_call", {"calls": [{"tool": OP, "input": OP_BAD_INPUT}]})
            body = text(r)
            assert r.is_error or '"ok":false' in body.replace(" ", ""), body

        await check(f"{label}: bad input is a readable error", bad_input)

        async def unknown_tool():
            try:
                await client.call_tool("no_such_tool", {})
            except MCPError as e:
                assert e.code == -32602, e
                return
            raise AssertionError("no error for an unknown tool")

        await check(f"{label}: an unknown tool name is a JSON-RPC error", unknown_tool)

        if forbidden:

            async def forbidden_call():
                r = await client.call_tool("hub_call", {"calls": [{"tool": FORBIDDEN, "input": FORBIDDEN_INPUT}]})
                body = text(r).lower()
                assert "forbidden" in body or "not allowed" in body, body

            await check(f"{label}: {FORBIDDEN} is forbidden for this token", forbidden_call)


async def approvals(mode, expect_version):
    """A client with an elicitation handler is asked (an elicitation/create request
    in 2025-11-25, an input_required round trip in 2026-07-28) and its answer
    decides; a client without one gets approval_required."""
    asked = []

    def answering(approve):
        async def on_elicit(context, params):
            asked.append(params.message)
            if approve:
                return types.ElicitResult(action="accept", content={"approve": True})
            return types.ElicitResult(action="decline")

        return on_elicit

    def results(r):
        return (r.structured_content or json.loads(text(r)))["results"]

    label = f"approvals, {mode} mode"
    for approve in (True, False):
        name = "accepts" if approve else "declines"

        async def run():
            asked.clear()
            client = Client(APPROVALS_URL, mode=mode, elicitation_callback=answering(approve))
            async with client:
                assert client.protocol_version == expect_version, client.protocol_version
                r = await client.call_tool("hub_call", WIPE_AND_ECHO)
            assert len(asked) == 1 and "examples.wipe" in asked[0], asked
            wipe, echo = results(r)
            if approve:
                assert wipe["ok"] and wipe["result"] == {"wiped": True}, wipe
            else:
                assert wipe["error"]["code"] == "approval_denied", wipe
            assert echo["ok"] and echo["result"] == {"text": "still runs"}, echo

        await check(f"{label}: a user who {name} decides the destructive call", run)

    async def no_handler():
        async with Client(APPROVALS_URL, mode=mode) as client:
            r = await client.call_tool("hub_call", WIPE_AND_ECHO)
        wipe, echo = results(r)
        assert wipe["error"]["code"] == "approval_required", wipe
        assert echo["ok"], echo

    await check(f"{label}: a client without elicitation gets approval_required", no_handler)


async def main():
    await approvals("auto", "2026-07-28")
    await approvals("legacy", "2025-11-25")
    await exercise("auto mode, token *", TOKEN_ALL, "auto", "2026-07-28", False)
    await exercise("auto mode, token text.*", TOKEN_TEXT, "auto", "2026-07-28", True)
    await exercise("legacy mode, token text.*", TOKEN_TEXT, "legacy", "2025-11-25", True)

    async def bad_token():
        try:
            async with connect("not-a-token", "auto") as client:
                await client.list_tools()
        except Exception:  # noqa: BLE001 - any refusal will do; success is the failure
            return
        raise AssertionError("an invalid token was accepted")

    await check("an invalid token is refused", bad_token)
    return check.summary()


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
