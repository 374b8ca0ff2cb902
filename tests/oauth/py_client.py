"""The official Python MCP SDK (2.x) OAuth client through wasmhub's built-in
authorization server: `OAuthClientProvider` discovers the protected resource and the
authorization server (RFC 9728, RFC 8414), registers (RFC 7591), builds a PKCE S256
authorization URL and hands it to the redirect handler; a person (consent.mjs in
headless Chromium) signs in with a one-time sign-in code the operator created in
the console and approves; the callback handler
returns the code, state and issuer (RFC 9207), which the SDK checks; then the client
lists the four tools and calls calc.eval. Prints one `ok`/`not ok` line per check
and exits non-zero when one failed. Configuration comes from run.sh.
"""

import asyncio
import json
import os
import subprocess
import sys
from urllib.parse import parse_qs, urlparse

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "mcp"))

from checks import Checks, text  # noqa: E402
from mcp.client import Client  # noqa: E402
from mcp.client.auth import OAuthClientProvider  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402
from mcp.shared._httpx_utils import create_mcp_http_client  # noqa: E402
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata  # noqa: E402

URL = os.environ["MCP_URL"]
CREDENTIAL = os.environ["SIGNIN_CODE"]
CALLBACK = os.environ["PY_CALLBACK"]
NODE = os.environ["NODE"]
CONSENT = os.path.join(os.path.dirname(__file__), "consent.mjs")
CLIENT_NAME = "wasmhub oauth suite (Python SDK)"

check = Checks("py-sdk-oauth")


class MemoryStorage:
    """The SDK's TokenStorage, in memory."""

    def __init__(self):
        self.tokens = None
        self.client_info = None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens):
        self.tokens = tokens

    async def get_client_info(self):
        return self.client_info

    async def set_client_info(self, client_info):
        self.client_info = client_info


class Person:
    """Opens the authorization URL in Chromium and approves; remembers what it saw."""

    def __init__(self):
        self.authorization_url = None
        self.shown = None

    async def redirect(self, url):
        self.authorization_url = url
        out = await asyncio.to_thread(
            subprocess.run,
            [NODE, CONSENT, url, CREDENTIAL, CALLBACK, CLIENT_NAME],
            capture_output=True,
            text=True,
            check=True,
        )
        self.shown = json.loads(out.stdout.strip().splitlines()[-1])

    async def callback(self):
        query = parse_qs(urlparse(self.shown["url"]).query)
        one = lambda name: query.get(name, [None])[0]  # noqa: E731
        return AuthorizationCodeResult(code=one("code"), state=one("state"), iss=one("iss"))


async def main():
    storage = MemoryStorage()
    person = Person()
    metadata = OAuthClientMetadata(
        client_name=CLIENT_NAME,
        redirect_uris=[CALLBACK],
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="none",
        scope="hub:tools",
    )
    auth = OAuthClientProvider(
        server_url=URL,
        client_metadata=metadata,
        storage=storage,
        redirect_handler=person.redirect,
        callback_handler=person.callback,
    )
    http = create_mcp_http_client(auth=auth)
    async with Client(streamable_http_client(URL, http_client=http), mode="legacy") as client:

        async def flow():
            assert storage.client_info and storage.client_info.client_id.startswith("client_"), storage.client_info
            query = parse_qs(urlparse(person.authorization_url).query)
            assert query["code_challenge_method"] == ["S256"], query
            assert query["resource"] == [URL], query
            assert person.shown["client"] == CLIENT_NAME, person.shown
            assert person.shown["redirectHost"] == "127.0.0.1", person.shown
            assert "hub:tools" in person.shown["scopes"], person.shown
            assert storage.tokens and storage.tokens.refresh_token, storage.tokens
            assert storage.tokens.scope == "hub:tools", storage.tokens.scope

        await check("discovery, registration, PKCE, consent in Chromium with the console's sign-in code, code exchange", flow)

        async def list_tools():
            names = sorted(t.name for t in (await client.list_tools()).tools)
            assert names == ["hub_call", "hub_list", "hub_schema", "hub_search"], names

        await check("lists the four tools", list_tools)

        async def call():
            out = await client.call_tool("hub_call", {"calls": [{"tool": "calc.eval", "input": {"expression": "6*7"}}]})
            assert "42" in text(out), text(out)

        await check("calls calc.eval through hub_call", call)
    print(json.dumps({"client_id": storage.client_info.client_id}), flush=True)
    return check.summary()


sys.exit(asyncio.run(main()))
