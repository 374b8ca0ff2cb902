// A browser-based MCP client's view of the hub's OAuth endpoints (as the MCP
// Inspector or a web connector has it): a page served from another loopback
// origin, in headless Chromium (playwright-core driving /usr/bin/chromium), calls
// them with fetch(). Chromium enforces CORS itself, so each check passes only if
// the hub answers the preflight and the request the way browsers require:
//   - the protected resource and server metadata read with the MCP SDKs'
//     MCP-Protocol-Version header (a preflighted GET);
//   - a JSON registration (a preflighted POST) creates a client the page can read;
//   - the token endpoint's error (a wrong code) and revocation are readable;
//   - the consent form (POST /oauth/authorize) is not: the browser refuses the
//     cross-origin read, so it stays same-origin.
// Prints one ok/not ok line per check; exits non-zero when one failed.
import { chromium } from "playwright-core";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { assert, checks, env } from "../lib/checks.mjs";

const HUB = env("HUB_URL");
const CALLBACK = env("CORS_CALLBACK");
const { check, finish } = checks("browser-cors");

const server = http.createServer((_req, res) => {
  res.writeHead(200, { "content-type": "text/html" });
  res.end("<!doctype html><title>a browser MCP client</title>");
});
await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
const origin = `http://127.0.0.1:${server.address().port}`;
assert(new URL(HUB).origin !== origin, `the page's origin ${origin} is the hub's`);

const profile = fs.mkdtempSync(path.join(os.tmpdir(), "wasmhub-oauth-cors-"));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  headless: true,
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"],
});
const page = context.pages()[0] || (await context.newPage());
await page.goto(origin);

/** fetch(url, init) in the page; its status and JSON body, or the browser's error. */
const pageFetch = (url, init) =>
  page.evaluate(
    async ([url, init]) => {
      try {
        const resp = await fetch(url, init);
        const text = await resp.text();
        return { status: resp.status, body: text ? JSON.parse(text) : null };
      } catch (e) {
        return { error: String(e) };
      }
    },
    [url, init],
  );

try {
  await check("the metadata documents are readable with MCP-Protocol-Version (preflighted)", async () => {
    for (const doc of ["/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-authorization-server"]) {
      const got = await pageFetch(`${HUB}${doc}`, { headers: { "MCP-Protocol-Version": "2025-11-25" } });
      assert(got.status === 200, `${doc}: ${JSON.stringify(got)}`);
      assert(got.body.resource === `${HUB}/mcp` || got.body.issuer === HUB, JSON.stringify(got.body));
    }
  });

  let clientId;
  await check("a JSON registration (preflighted POST) creates a client the page reads", async () => {
    const got = await pageFetch(`${HUB}/oauth/register`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ client_name: "browser client", redirect_uris: [CALLBACK], token_endpoint_auth_method: "none" }),
    });
    assert(got.status === 201 && got.body.client_id, JSON.stringify(got));
    clientId = got.body.client_id;
  });

  await check("the token endpoint's error for a wrong code is readable", async () => {
    const got = await pageFetch(`${HUB}/oauth/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({
        grant_type: "authorization_code",
        code: "wh_ac_not-a-code",
        client_id: clientId,
        redirect_uri: CALLBACK,
        code_verifier: "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk",
      }).toString(),
    });
    assert(got.status === 400 && got.body.error === "invalid_grant", JSON.stringify(got));
  });

  await check("revocation answers the page", async () => {
    const got = await pageFetch(`${HUB}/oauth/revoke`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: "token=wh_at_not-a-token",
    });
    assert(got.status === 200, JSON.stringify(got));
  });

  await check("the consent form stays same-origin: the browser refuses the cross-origin read", async () => {
    const got = await pageFetch(`${HUB}/oauth/authorize`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: "csrf=x",
    });
    assert(got.error && /fetch/i.test(got.error), JSON.stringify(got));
  });
} finally {
  await context.close();
  server.close();
  fs.rmSync(profile, { recursive: true, force: true });
}
finish();
