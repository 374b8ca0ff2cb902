"""The fastmcp server of fastmcp_server.py over a WebSocket, for the hub's
`transport = "websocket"`: a real WebSocket server (PyPI `websockets`, pinned in
servers-requirements.lock, subprotocol `mcp`) carrying the real MCP SDK server
loop (`mcp` 2.x, one JSON-RPC message per text message), bridged the way the
1.x SDK's websocket transport was. Listens on a free loopback port, written to
the file named by argv[1]; appends each connection's subprotocol and whether it
had an Authorization header to $WS_LOG."""

import os
import sys

import anyio
import mcp_types as types
from mcp.shared._context_streams import create_context_streams
from mcp.shared.message import SessionMessage
from websockets.asyncio.server import serve

from fastmcp_server import mcp


async def session(ws):
    if os.environ.get("WS_LOG"):
        auth = "yes" if ws.request.headers.get("Authorization") else "no"
        with open(os.environ["WS_LOG"], "a") as f:
            f.write(f"protocol {ws.subprotocol} auth {auth}\n")
    read_writer, read_stream = create_context_streams[SessionMessage | Exception](0)
    write_stream, write_reader = create_context_streams[SessionMessage](0)

    async def reader():
        async with read_writer:
            async for text in ws:
                try:
                    message = types.jsonrpc_message_adapter.validate_json(text, by_name=False)
                except Exception as exc:
                    await read_writer.send(exc)
                    continue
                await read_writer.send(SessionMessage(message))

    async def writer():
        async with write_reader:
            async for out in write_reader:
                await ws.send(out.message.model_dump_json(by_alias=True, exclude_unset=True))

    server = mcp._mcp_server
    async with anyio.create_task_group() as tg:
        tg.start_soon(reader)
        tg.start_soon(writer)
        await server.run(read_stream, write_stream, server.create_initialization_options())
        tg.cancel_scope.cancel()


async def main(portfile):
    async with mcp._lifespan_manager():
        async with serve(session, "127.0.0.1", 0, subprotocols=["mcp"]) as listening:
            port = listening.sockets[0].getsockname()[1]
            with open(portfile + ".tmp", "w") as f:
                f.write(str(port))
            os.rename(portfile + ".tmp", portfile)
            await listening.serve_forever()


if __name__ == "__main__":
    anyio.run(main, sys.argv[1])
