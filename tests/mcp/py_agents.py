"""The official Python MCP SDK (2.x) reaching an agent through the hub's meta-tools:
`hub_search` finds `agents.adder`, `hub_schema` describes it, and `hub_call` runs it
as a sub-agent with `format: "json"` and a schema; the scripted model
(agent_upstream.mjs) first breaks the schema, the hub sends the violations back
once, and the validated answer arrives in `structuredContent`. Then a schema no
answer can meet gives `invalid_output` with the violations. Both MCP revisions.
Prints one `ok`/`not ok` line per check; exits non-zero when any failed."""

import asyncio
import os
import sys

from checks import Checks, text
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

URL = os.environ["AGENTS_URL"]
SCHEMA = {"type": "object", "required": ["sum"], "properties": {"sum": {"type": "integer"}}}
check = Checks("py-agents")


async def exercise(mode):
    http = create_mcp_http_client(headers={})
    async with Client(streamable_http_client(URL, http_client=http), mode=mode) as client:

        async def found():
            r = await client.call_tool("hub_search", {"q": "add numbers"})
            assert not r.is_error, text(r)
            assert r.structured_content["results"][0]["tool"] == "agents.adder", text(r)
            r = await client.call_tool("hub_schema", {"tool": "agents.adder"})
            assert r.structured_content["inputSchema"]["required"] == ["task"], text(r)

        await check(f"{mode}: hub_search and hub_schema find agents.adder", found)

        async def structured():
            task = {"task": "Add 2 and 3.", "format": "json", "schema": SCHEMA}
            r = await client.call_tool("hub_call", {"calls": [{"tool": "agents.adder", "input": task}]})
            assert not r.is_error, text(r)
            result = r.structured_content["results"][0]
            assert result["ok"], result
            assert result["result"] == {"output": {"sum": 5}, "corrections": 1}, result

        await check(f"{mode}: hub_call agents.adder answers validated JSON in structuredContent", structured)

        async def invalid():
            never = {"type": "object", "required": ["product"]}
            task = {"task": "Multiply 2 and 3.", "format": "json", "schema": never}
            r = await client.call_tool("hub_call", {"calls": [{"tool": "agents.adder", "input": task}]})
            result = r.structured_content["results"][0]
            assert not result["ok"], result
            assert result["error"]["code"] == "invalid_output", result
            assert result["error"]["violations"][0]["message"], result

        await check(f"{mode}: an answer that never complies is invalid_output with violations", invalid)


async def main():
    await exercise("auto")
    await exercise("legacy")
    return check.summary()


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
