// The TypeScript MCP SDK (1.x) client's OAuth through wasmhub's built-in
// authorization server: the first connect gets 401, discovers the protected
// resource and the server (RFC 9728, RFC 8414), registers (RFC 7591), and hands the
// authorization URL (PKCE S256) to redirectToAuthorization; a person (consent.mjs in
// Chromium) signs in with a one-time sign-in code and approves; finishAuth trades
// the code for tokens; the second connect lists the four tools and calls calc.eval.
// Then the refresh token rotates (the SDK refreshes on its own when the hub says the
// access token expired), and a stale one is refused. Prints one ok/not ok line per
// check; exits non-zero when one failed.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { approve } from "./consent.mjs";
import { assert, checks, env } from "../lib/checks.mjs";
import { listAndCall } from "./four_tools.mjs";

const MCP_URL = env("MCP_URL");
const SIGNIN_CODE = env("SIGNIN_CODE");
const CALLBACK = env("TS_CALLBACK");
const CLIENT_NAME = "wasmhub oauth suite (TypeScript SDK)";

const { check, finish } = checks("ts-sdk-oauth");

/** The OAuthClientProvider of a client app that keeps everything in memory. */
class MemoryProvider {
  constructor() {
    this.info = undefined;
    this.saved = undefined;
    this.verifier = undefined;
    this.authorizationUrl = undefined;
  }
  get redirectUrl() {
    return CALLBACK;
  }
  get clientMetadata() {
    return {
      client_name: CLIENT_NAME,
      redirect_uris: [CALLBACK],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    };
  }
  clientInformation() {
    return this.info;
  }
  saveClientInformation(info) {
    this.info = info;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens) {
    this.saved = tokens;
  }
  redirectToAuthorization(url) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(v) {
    this.verifier = v;
  }
  codeVerifier() {
    return this.verifier;
  }
}

const provider = new MemoryProvider();
const transport = () => new StreamableHTTPClientTransport(new URL(MCP_URL), { authProvider: provider });
let callbackUrl;

await check("401 leads to discovery, registration and an S256 authorization URL", async () => {
  const client = new Client({ name: "ts-oauth", version: "1.0.0" });
  let refused;
  try {
    await client.connect(transport());
  } catch (e) {
    refused = e;
  }
  assert(refused instanceof UnauthorizedError, `expected UnauthorizedError, got ${refused}`);
  assert(provider.info?.client_id, "no client registered");
  const url = provider.authorizationUrl;
  assert(url, "redirectToAuthorization was not called");
  assert(url.searchParams.get("code_challenge_method") === "S256", url.href);
  assert(url.searchParams.get("resource") === MCP_URL, `resource ${url.searchParams.get("resource")}`);
});

await check("the consent page in Chromium names the client and its redirect host; approving redirects to the loopback callback with code and iss", async () => {
  const shown = await approve({
    url: provider.authorizationUrl.href,
    credential: SIGNIN_CODE,
    callback: CALLBACK,
    expectClient: CLIENT_NAME,
  });
  assert(shown.redirectHost === "127.0.0.1", shown.redirectHost);
  assert(shown.scopes.includes("hub:tools"), shown.scopes);
  callbackUrl = new URL(shown.url);
  assert(callbackUrl.searchParams.get("code"), shown.url);
  assert(callbackUrl.searchParams.get("iss") === new URL(MCP_URL).origin, shown.url);
});

const client = new Client({ name: "ts-oauth", version: "1.0.0" });
await check("finishAuth trades the code (PKCE) for tokens, then connect, list the four tools and call calc.eval", async () => {
  const t = transport();
  await t.finishAuth(callbackUrl.searchParams.get("code"));
  assert(provider.saved?.access_token && provider.saved?.refresh_token, "no tokens saved");
  await client.connect(t);
  await listAndCall(client);
});
await client.close();

await check("an unknown access token gets 401 invalid_token naming why", async () => {
  const resp = await fetch(MCP_URL, {
    method: "POST",
    headers: { authorization: `Bearer ${provider.saved.access_token}x`, "content-type": "application/json", accept: "application/json, text/event-stream" },
    body: "{}",
  });
  assert(resp.status === 401, `status ${resp.status}`);
  const challenge = resp.headers.get("www-authenticate");
  assert(challenge.includes('error="invalid_token"') && challenge.includes("unknown"), challenge);
  assert(challenge.includes('resource_metadata="') && challenge.includes('scope="hub:tools"'), challenge);
});

console.log(JSON.stringify({ client_id: provider.info?.client_id }));
finish();
