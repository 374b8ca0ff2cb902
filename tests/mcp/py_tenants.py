"""Two tenants of one hub through the official Python MCP SDK (2.x) client.

alice and bob, two non-operator tokens of the same hub, each open a legacy
(2025-11-25 handshake) Streamable HTTP session with the PyPI `mcp` client and call
operations through `hub_call`. Then, as the tenants contract says (a principal is
a token's name; an MCP session belongs to the principal that opened it):

- a request by bob that carries alice's `Mcp-Session-Id` (a POST, and a DELETE) is
  answered exactly like one with an unknown session id (404, same body), runs
  nothing, and alice's session keeps working;
- `GET /api/calls` and `GET /api/accounting` give each of them only their own
  records (`caller`), and `?principal=` naming the other gives nothing;
- the operator token sees both principals' records, and `?principal=alice` only
  alice's.

Every input carries this run's random mark, so the records of these calls are told
apart from those of the other clients run against the same hub. Prints one
`ok`/`not ok` line per check and exits non-zero when any check failed.
Configuration comes from run.sh through the environment.
"""

import asyncio
import contextlib
import json
import os
import secrets
import sys

import httpx2
from checks import Checks, text
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

URL = os.environ["MCP_URL"]
BASE = URL.removesuffix("/mcp")
TOKEN_ALICE = os.environ["TOKEN_ALICE"]
TOKEN_BOB = os.environ["TOKEN_BOB"]
TOKEN_OPERATOR = os.environ["TOKEN_OPERATOR"]
HANDSHAKE = "2025-11-25"
SESSION_HEADER = "mcp-session-id"
# Tells this run's inputs apart from every other client's on the same hub.
MARK = secrets.token_hex(4)
# Big enough that no other client's calc.eval input can be the same expression.
BASE_NUMBER = secrets.randbelow(10**9) + 10**9

check = Checks("py-tenants")


class Tenant:
    """One principal: its token, its MCP client session, the calls it made."""

    def __init__(self, name, token):
        self.name = name
        self.token = token
        self.client = None
        # Mcp-Session-Id values the hub answered with, and the ones each request sent.
        self.given = []
        self.sent = []
        # (tool, input) of every hub_call this tenant made, in order.
        self.calls = []

    async def _on_request(self, request):
        self.sent.append(request.headers.get(SESSION_HEADER))

    async def _on_response(self, response):
        sid = response.headers.get(SESSION_HEADER)
        if sid is not None:
            self.given.append(sid)

    async def open(self, stack):
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {self.token}"})
        http.event_hooks = {"request": [self._on_request], "response": [self._on_response]}
        await stack.enter_async_context(http)
        client = Client(streamable_http_client(URL, http_client=http), mode="legacy")
        self.client = await stack.enter_async_context(client)

    @property
    def session_id(self):
        ids = set(self.given)
        assert len(ids) == 1, f"{self.name}: the hub gave session ids {self.given}"
        return self.given[0]

    async def call(self, tool, input):
        """Runs `tool` through hub_call and returns its result."""
        r = await self.client.call_tool("hub_call", {"calls": [{"tool": tool, "input": input}]})
        assert not r.is_error, text(r)
        (result,) = (r.structured_content or json.loads(text(r)))["results"]
        assert result["ok"], result
        self.calls.append((tool, input))
        return result["result"]

    def inputs(self):
        return [input for _, input in self.calls]


def same_shape(sid):
    """A random session id shaped like `sid` (its prefix, then as many hex digits)."""
    prefix, sep, tail = sid.rpartition("_")
    return prefix + sep + secrets.token_hex((len(tail) + 1) // 2)[: len(tail)]


async def main():
    alice = Tenant("alice", TOKEN_ALICE)
    bob = Tenant("bob", TOKEN_BOB)
    # What bob sends on alice's session: it must never run.
    intrusion = {"text": f"bob {MARK} through alice's session"}

    async with contextlib.AsyncExitStack() as stack, httpx2.AsyncClient(timeout=60) as raw:

        async def open_sessions():
            await alice.open(stack)
            await bob.open(stack)
            for t in (alice, bob):
                assert t.client.protocol_version == HANDSHAKE, (t.name, t.client.protocol_version)
            assert alice.session_id != bob.session_id, (alice.given, bob.given)

        await check(f"alice and bob each open a {HANDSHAKE} session with their own token", open_sessions)

        async def alice_slugify():
            out = await alice.call("text.slugify", {"text": f"Alice {MARK} Crème"})
            assert out == {"slug": f"alice-{MARK}-creme"}, out

        await check("alice: hub_call runs text.slugify", alice_slugify)

        async def bob_calls():
            out = await bob.call("text.slugify", {"text": f"Bob {MARK} Brûlée"})
            assert out == {"slug": f"bob-{MARK}-brulee"}, out
            out = await bob.call("calc.eval", {"expression": f"{BASE_NUMBER}+2"})
            assert out["fraction"] == str(BASE_NUMBER + 2), out

        await check("bob: hub_call runs text.slugify and calc.eval", bob_calls)

        def as_bob(sid):
            return {
                "Authorization": f"Bearer {bob.token}",
                "Accept": "application/json, text/event-stream",
                "Content-Type": "application/json",
                "MCP-Protocol-Version": HANDSHAKE,
                "Mcp-Session-Id": sid,
            }

        def answer(r):
            return {
                "status": r.status_code,
                "content-type": r.headers.get("content-type"),
                "session header": r.headers.get(SESSION_HEADER),
                "body": r.text,
            }

        async def bob_posts_on_alice_session():
            request = {
                "jsonrpc": "2.0",
                "id": 7,
                "method": "tools/call",
                "params": {
                    "name": "hub_call",
                    "arguments": {"calls": [{"tool": "text.slugify", "input": intrusion}]},
                },
            }
            on_alice = await raw.post(URL, headers=as_bob(alice.session_id), json=request)
            on_unknown = await raw.post(URL, headers=as_bob(same_shape(alice.session_id)), json=request)
            assert on_unknown.status_code == 404, answer(on_unknown)
            assert answer(on_alice) == answer(on_unknown), (answer(on_alice), answer(on_unknown))

        await check(
            "bob's POST carrying alice's Mcp-Session-Id is answered like an unknown session id (404)",
            bob_posts_on_alice_session,
        )

        async def bob_deletes_alice_session():
            on_alice = await raw.delete(URL, headers=as_bob(alice.session_id))
            on_unknown = await raw.delete(URL, headers=as_bob(same_shape(alice.session_id)))
            assert on_unknown.status_code == 404, answer(on_unknown)
            assert answer(on_alice) == answer(on_unknown), (answer(on_alice), answer(on_unknown))

        await check(
            "bob's DELETE of alice's Mcp-Session-Id is answered like an unknown session id (404)",
            bob_deletes_alice_session,
        )

        async def alice_still_works():
            out = await alice.call("calc.eval", {"expression": f"{BASE_NUMBER}+1"})
            assert out["fraction"] == str(BASE_NUMBER + 1), out
            # Every request after initialize went on the one session the hub gave her,
            # the last one (this call) included.
            sent = [s for s in alice.sent if s is not None]
            assert sent and set(sent) == {alice.session_id}, alice.sent
            assert alice.sent[-1] == alice.session_id, alice.sent

        await check("alice's session still works afterwards (hub_call calc.eval on it)", alice_still_works)

        async def get(token, path):
            r = await raw.get(BASE + path, headers={"Authorization": f"Bearer {token}"})
            assert r.status_code == 200, (path, r.status_code, r.text)
            return r.json()

        async def calls(token, query=""):
            return (await get(token, f"/api/calls?limit=1000{query}"))["calls"]

        async def accounting(token, query=""):
            """Every accounting record `token` may read, paging with `next`."""
            records, since = [], None
            for _ in range(100):
                after = "" if since is None else f"&since={since}"
                page = await get(token, f"/api/accounting?limit=1000{query}{after}")
                if not page["records"]:
                    return records
                records += page["records"]
                assert since is None or page["next"] > since, (since, page["next"])
                since = page["next"]
            raise AssertionError("/api/accounting did not run out of pages")

        def callers(records):
            return sorted({r.get("caller") for r in records})

        def records_of(tenant, records):
            """The call records of `tenant`'s calls, one per call, in call order."""
            found = []
            for tool, input in tenant.calls:
                hits = [r for r in records if r.get("tool") == tool and r.get("input") == input]
                assert len(hits) == 1, (tenant.name, tool, input, hits)
                found.append(hits[0])
            return found

        def tool_calls(records):
            return {r["call_id"]: r for r in records if r.get("kind") == "tool_call"}

        # The call ids of each tenant's calls, as its own GET /api/calls shows them.
        ids = {}

        def ids_of(name):
            assert name in ids, f"no call ids of {name}: the check of {name}'s own GET /api/calls failed"
            return ids[name]

        def own_calls(tenant, other):
            async def run():
                records = await calls(tenant.token)
                assert records, f"{tenant.name} sees no call records"
                assert callers(records) == [tenant.name], callers(records)
                mine = records_of(tenant, records)
                assert all(r["caller"] == tenant.name and r["outcome"] == "ok" for r in mine), mine
                ids[tenant.name] = [r["id"] for r in mine]
                inputs = [r.get("input") for r in records]
                assert not any(i in inputs for i in other.inputs()), (other.name, inputs)
                named = await calls(tenant.token, f"&principal={tenant.name}")
                assert [r["id"] for r in named] == [r["id"] for r in records], (named, records)

            return run

        await check("bob's GET /api/calls lists only his records (caller bob, his calls, none of alice's)",
                    own_calls(bob, alice))
        await check("alice's GET /api/calls lists only her records (caller alice, her calls, none of bob's)",
                    own_calls(alice, bob))

        async def bob_names_alice():
            records = await calls(bob.token, "&principal=alice")
            assert records == [], records

        await check("bob's GET /api/calls?principal=alice is an empty list", bob_names_alice)

        async def operator_calls():
            records = await calls(TOKEN_OPERATOR)
            assert {"alice", "bob"} <= set(callers(records)), callers(records)
            for t in (alice, bob):
                mine = records_of(t, records)
                assert all(r["caller"] == t.name for r in mine), mine
                assert [r["id"] for r in mine] == ids_of(t.name), (t.name, mine, ids_of(t.name))

        await check("the operator's GET /api/calls has both alice's and bob's records", operator_calls)

        async def intrusion_ran_nothing():
            records = await calls(TOKEN_OPERATOR)
            ran = [r for r in records if r.get("input") == intrusion]
            assert ran == [], ran

        await check("bob's request on alice's session ran nothing (no call record of it)", intrusion_ran_nothing)

        async def operator_names_alice():
            records = await calls(TOKEN_OPERATOR, "&principal=alice")
            assert callers(records) == ["alice"], callers(records)
            assert [r["id"] for r in records_of(alice, records)] == ids_of("alice"), records
            assert not any(r.get("input") in bob.inputs() for r in records), records

        await check("the operator's GET /api/calls?principal=alice has only alice's records", operator_names_alice)

        def own_accounting(tenant, other):
            async def run():
                records = await accounting(tenant.token)
                assert callers(records) == [tenant.name], callers(records)
                seen = tool_calls(records)
                assert set(ids_of(tenant.name)) <= set(seen), (ids_of(tenant.name), sorted(seen))
                assert not set(ids_of(other.name)) & set(seen), (ids_of(other.name), sorted(seen))

            return run

        await check("bob's GET /api/accounting has his tool calls and no record of alice",
                    own_accounting(bob, alice))
        await check("alice's GET /api/accounting has her tool calls and no record of bob",
                    own_accounting(alice, bob))

        async def bob_names_alice_accounting():
            records = await accounting(bob.token, "&principal=alice")
            assert records == [], records

        await check("bob's GET /api/accounting?principal=alice is empty", bob_names_alice_accounting)

        async def operator_accounting():
            records = await accounting(TOKEN_OPERATOR)
            seen = tool_calls(records)
            for name in ("alice", "bob"):
                mine = ids_of(name)
                assert set(mine) <= set(seen), (name, mine, sorted(seen))
                assert all(seen[i]["caller"] == name for i in mine), [seen[i] for i in mine]
            named = await accounting(TOKEN_OPERATOR, "&principal=alice")
            assert callers(named) == ["alice"], callers(named)
            seen = tool_calls(named)
            assert set(ids_of("alice")) <= set(seen), (ids_of("alice"), sorted(seen))
            assert not set(ids_of("bob")) & set(seen), (ids_of("bob"), sorted(seen))

        await check(
            "the operator's GET /api/accounting has both principals' tool calls, ?principal=alice only alice's",
            operator_accounting,
        )

    return check.summary()


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
