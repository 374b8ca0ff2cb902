"""The official Python MCP SDK (2.x, pinned in requirements.lock) over stdio: it
starts `wasmhub mcp --stdio` itself, as a desktop client does, with an empty data
folder (no compiled plugin yet), completes the 2025-11-25 `initialize` handshake,
lists the four tools, and calls `calc.eval`, which waits for calc to compile when
it comes first. Prints one `ok`/`not ok` line per check and exits non-zero when any
check failed. run.sh gives the binary, the config and the empty folder.
"""

import asyncio
import json
import os
import sys
import traceback

from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

BIN = os.environ["WASMHUB_BIN"]
CONFIG = os.environ["WASMHUB_CONFIG"]
COLD_DATA = os.environ["STDIO_COLD_DATA"]

passed = 0
failed = 0


async def check(name, fn):
    global passed, failed
    try:
        await fn()
        passed += 1
        print(f"ok - py-stdio: {name}", flush=True)
    except Exception:  # noqa: BLE001 - every failure is reported, none stops the run
        failed += 1
        print(f"not ok - py-stdio: {name}: {traceback.format_exc()}", flush=True)


async def main():
    assert not os.path.exists(COLD_DATA) or not os.listdir(COLD_DATA), f"{COLD_DATA} is not empty"
    server = StdioServerParameters(
        command=BIN,
        args=["mcp", "--stdio", "--config", CONFIG, "--data", COLD_DATA],
        env={"WASMHUB_LOG": "warn"},
    )

    async def session():
        async with Client(server, mode="legacy") as client:
            assert client.protocol_version == "2025-11-25", client.protocol_version
            tools = await client.list_tools()
            names = [t.name for t in tools.tools]
            assert names == ["hub_list", "hub_search", "hub_schema", "hub_call"], names
            r = await client.call_tool("hub_call", {"calls": [{"tool": "calc.eval", "input": {"expression": "6*7"}}]})
            text = "".join(getattr(c, "text", "") for c in r.content)
            result = json.loads(text)["results"][0]
            assert result["ok"] and result["result"]["decimal"] == "42", result
        assert os.path.isdir(os.path.join(COLD_DATA, "compiled")), "the compiled cache was written"

    await check("an empty data folder: initialize, tools/list, then calc.eval once calc has compiled", session)
    print(f"py-stdio: {passed} passed, {failed} failed", flush=True)
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
