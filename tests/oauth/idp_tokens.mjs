// JWT access tokens of a real external authorization server (idp.mjs, oidc-provider)
// against the hub, configured with it in [[oauth.issuers]] (discovery through its
// metadata, its key set fetched over loopback http by allow_private + allow_http):
//   - tokens it signs with RS256, ES256 and EdDSA for the hub's resource are
//     accepted; the TypeScript MCP SDK client, sending the RS256 one, lists the four
//     tools and calls calc.eval, recorded under the mapped principal (alice) with
//     the token's client_id (checked by run.sh in /api/calls);
//   - a token's scope claim narrows it: `chat` alone gets 403 insufficient_scope on
//     /mcp; a token without a scope claim has the issuer's default_scopes;
//   - refused with 401 and the reason in error_description: a token it issued for
//     another resource, one that expired (a client whose tokens live one second;
//     the check waits for the clock to pass its `exp`), one whose payload was
//     changed after signing, and one rebuilt with `alg: none`; a client the hub maps
//     to no principal gets 403;
//   - the provider rotates its keys (a new key signs first): the hub fetches the key
//     set again for the unknown `kid` and accepts the token.
// Prints one ok/not ok line per check; exits non-zero when one failed.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { assert, checks, env } from "../lib/checks.mjs";
import { listAndCall } from "./four_tools.mjs";

const MCP_URL = env("MCP_URL");
const ISSUER = env("ISSUER");
const SECRET = env("IDP_SECRET");
const OTHER_RESOURCE = env("OTHER_RESOURCE");
const REFETCH_MS = Number(env("REFETCH_SECS")) * 1000;

const { check, finish } = checks("oidc-provider");

/** A client_credentials access token of `client` for `resource`, with `scope` if given. */
async function token(client, { resource = MCP_URL, scope } = {}) {
  const form = new URLSearchParams({ grant_type: "client_credentials", client_id: client, client_secret: SECRET, resource });
  if (scope) form.set("scope", scope);
  const resp = await fetch(`${ISSUER}/token`, { method: "POST", body: form });
  const body = await resp.json();
  assert(resp.status === 200 && body.access_token, `token endpoint: ${resp.status} ${JSON.stringify(body)}`);
  return body.access_token;
}

const decode = (part) => JSON.parse(Buffer.from(part, "base64url").toString());
const encode = (value) => Buffer.from(JSON.stringify(value)).toString("base64url");

/** The hub's answer to an MCP initialize sent with `bearer`. */
async function initialize(bearer) {
  return fetch(MCP_URL, {
    method: "POST",
    headers: { authorization: `Bearer ${bearer}`, "content-type": "application/json", accept: "application/json, text/event-stream" },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "idp-tokens", version: "1" } },
    }),
  });
}

/** Asserts the hub refuses `bearer` with `status` and `description` (or `error`). */
async function refused(bearer, status, { description, error = "invalid_token" }) {
  const resp = await initialize(bearer);
  const challenge = resp.headers.get("www-authenticate") ?? "";
  assert(resp.status === status, `status ${resp.status}, challenge ${challenge}`);
  assert(challenge.startsWith(`Bearer error="${error}"`), challenge);
  if (description) assert(challenge.includes(`error_description="${description}"`), challenge);
  assert(challenge.includes(`resource_metadata="`) && challenge.includes(`scope="hub:tools"`), challenge);
  return challenge;
}

let rs256;
await check("an RS256 token for the hub's resource: the MCP SDK client lists the four tools and calls calc.eval as alice", async () => {
  rs256 = await token("hub-agent", { scope: "hub:tools" });
  const [header, payload] = rs256.split(".").slice(0, 2).map(decode);
  assert(header.alg === "RS256" && header.typ === "at+jwt" && header.kid === "rsa-1", JSON.stringify(header));
  assert(payload.aud === MCP_URL && payload.iss === ISSUER && payload.scope === "hub:tools", JSON.stringify(payload));
  const client = new Client({ name: "idp-tokens", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(MCP_URL), {
    requestInit: { headers: { authorization: `Bearer ${rs256}` } },
  });
  await client.connect(transport);
  await listAndCall(client);
  await client.close();
});
// The hub had the key set by then; a refetch for an unknown kid is allowed
// REFETCH_MS after that.
const keysFetchedBy = Date.now();

await check("ES256 and EdDSA tokens of the same provider are accepted", async () => {
  for (const [client, alg] of [["hub-agent-es", "ES256"], ["hub-agent-ed", "EdDSA"]]) {
    const t = await token(client, { scope: "hub:tools" });
    assert(decode(t.split(".")[0]).alg === alg, `${client}: ${t.split(".")[0]}`);
    const resp = await initialize(t);
    assert(resp.status === 200, `${alg}: ${resp.status} ${resp.headers.get("www-authenticate")}`);
  }
});

await check("a token without a scope claim has the issuer's default_scopes (hub:tools chat)", async () => {
  const t = await token("hub-agent");
  assert(!("scope" in decode(t.split(".")[1])), "the provider wrote a scope claim");
  const resp = await initialize(t);
  assert(resp.status === 200, `${resp.status} ${resp.headers.get("www-authenticate")}`);
});

await check("a token whose scope is only chat gets 403 insufficient_scope on /mcp", async () => {
  await refused(await token("hub-agent", { scope: "chat" }), 403, { error: "insufficient_scope" });
});

await check("a token the provider issued for another resource is refused: another resource", async () => {
  const t = await token("hub-agent", { resource: OTHER_RESOURCE, scope: "hub:tools" });
  assert(decode(t.split(".")[1]).aud === OTHER_RESOURCE, "aud");
  await refused(t, 401, { description: "the access token was issued for another resource" });
});

await check("an expired token of the provider is refused: expired", async () => {
  const t = await token("hub-short", { scope: "hub:tools" });
  const { exp } = decode(t.split(".")[1]);
  // The hub's skew for this issuer is 0: the token is expired once the clock reaches exp.
  while (Date.now() < exp * 1000) {
    await new Promise((resolve) => setTimeout(resolve, exp * 1000 - Date.now()));
  }
  await refused(t, 401, { description: "the access token expired" });
});

await check("a token whose payload was changed after signing is refused: the signature", async () => {
  const [h, p, s] = rs256.split(".");
  const bytes = Buffer.from(p, "base64url");
  // Flip one byte of the jti's value: still JSON, no longer what was signed.
  const at = bytes.indexOf(Buffer.from('"jti":"')) + 7;
  bytes[at] = bytes[at] === 0x41 ? 0x42 : 0x41;
  await refused(`${h}.${bytes.toString("base64url")}.${s}`, 401, {
    description: "the access token's signature does not verify",
  });
});

await check("the provider's token rebuilt with alg none is refused: the algorithm", async () => {
  const [h, p] = rs256.split(".");
  const none = encode({ ...decode(h), alg: "none" });
  await refused(`${none}.${p}.`, 401, {
    description: "the access token's algorithm is refused: this hub accepts RS256, ES256 and EdDSA",
  });
});

await check("a valid token of a client mapped to no principal gets 403", async () => {
  await refused(await token("stranger", { scope: "hub:tools" }), 403, {
    description: "the access token's subject maps to no principal of this hub",
  });
});

await check("the provider rotates its keys: the hub fetches the set again for the new kid", async () => {
  const resp = await fetch(`${ISSUER}/suite/rotate`, { method: "POST" });
  assert(resp.status === 200, `rotate: ${resp.status}`);
  const t = await token("hub-agent", { scope: "hub:tools" });
  const kid = decode(t.split(".")[0]).kid;
  assert(kid === "rsa-2", `kid ${kid}`);
  // One refetch per REFETCH_MS: wait for the window since the first fetch to pass.
  while (Date.now() < keysFetchedBy + REFETCH_MS) {
    await new Promise((resolve) => setTimeout(resolve, keysFetchedBy + REFETCH_MS - Date.now()));
  }
  const answer = await initialize(t);
  assert(answer.status === 200, `${answer.status} ${answer.headers.get("www-authenticate")}`);
});

if (rs256) console.log(JSON.stringify({ client_id: decode(rs256.split(".")[1]).client_id }));
finish();
