"""A small `fastmcp` server (pinned in servers-requirements.lock) that run.sh
mounts in a hub as `[[mcp_servers]] name = "py"` over stdio: a read-only echo and
sum, a tool annotated destructive (the hub's default policy asks before it), and
a slow one (the suite kills the server while it runs)."""

import asyncio

from fastmcp import FastMCP

mcp = FastMCP("py-notes", instructions="Keeps notes; py.echo repeats text.")

READ_ONLY = {"readOnlyHint": True, "destructiveHint": False}


@mcp.tool(annotations=READ_ONLY)
def echo(text: str) -> str:
    """Repeat the text back."""
    return text


@mcp.tool(annotations=READ_ONLY)
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@mcp.tool(annotations={"readOnlyHint": False, "destructiveHint": True})
def delete_all_notes() -> str:
    """Delete every note for good."""
    return "deleted"


@mcp.tool(annotations=READ_ONLY)
async def slow(seconds: float) -> str:
    """Wait, then answer."""
    await asyncio.sleep(seconds)
    return "done"


if __name__ == "__main__":
    mcp.run(show_banner=False)
