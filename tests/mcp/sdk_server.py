"""A server on the PyPI `mcp` SDK's own `MCPServer` (2.x, pinned in
servers-requirements.lock), which run.sh mounts in a hub as `[[mcp_servers]]
name = "sdk"` over stdio. It speaks the stateless 2026-07-28 revision, where a
tool list change reaches a client only on its `subscriptions/listen` stream:
`grow` adds the tool `grown` and publishes that change."""

from mcp.server.mcpserver import Context, MCPServer

mcp = MCPServer("sdk-grows")


def grown() -> str:
    """A tool added at run time."""
    return "grown"


@mcp.tool()
def echo(text: str) -> str:
    """Repeat the text back."""
    return text


@mcp.tool()
async def grow(ctx: Context) -> str:
    """Add the tool grown, and tell listening clients."""
    mcp.add_tool(grown, name="grown")
    await ctx.notify_tools_changed()
    return "added grown"


if __name__ == "__main__":
    mcp.run()
