// The person in the loop: opens an authorization URL of wasmhub's built-in
// authorization server in headless Chromium (playwright-core driving
// /usr/bin/chromium), checks that the consent page names the client, its redirect
// host and the scopes, signs in with a credential (a one-time sign-in code or a hub
// token) and approves. The browser's redirect lands on the client's loopback
// callback, which this module listens on (as a desktop client does): the callback
// URL, with its `code`, `state` and `iss`, is the result.
//
// As a module: `approve({ url, credential, callback, expectClient })`.
// As a command (for the Python client): `node consent.mjs URL CREDENTIAL CALLBACK
// CLIENT_NAME` prints the result as JSON.
import { chromium } from "playwright-core";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";

const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";

/** Listens on the callback's loopback port; `reached` resolves to the first URL
 * the browser brings there. */
async function listen(callback) {
  const target = new URL(callback);
  let arrived;
  const reached = new Promise((resolve) => (arrived = resolve));
  const server = http.createServer((req, res) => {
    res.writeHead(200, { "content-type": "text/plain" });
    res.end("signed in; you may close this window");
    arrived(new URL(req.url, target.origin).href);
  });
  await new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(Number(target.port), target.hostname, resolve);
  });
  return { reached, close: () => server.close() };
}

export async function approve({ url, credential, callback, expectClient }) {
  const listener = await listen(callback);
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), "wasmhub-oauth-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync",
    ],
  });
  try {
    const page = context.pages()[0] || (await context.newPage());
    const resp = await page.goto(url);
    if (resp.status() !== 200) throw new Error(`the consent page answered ${resp.status()}: ${await page.content()}`);
    const csp = resp.headers()["content-security-policy"] || "";
    if (!csp.includes("frame-ancestors 'none'")) throw new Error(`no frame-ancestors 'none' in ${csp}`);
    const shown = {
      client: (await page.textContent("#client")).trim(),
      redirectHost: (await page.textContent("#redirect-host")).trim(),
      scopes: (await page.textContent("#scopes")).trim(),
    };
    if (expectClient && shown.client !== expectClient) {
      throw new Error(`the page names the client ${JSON.stringify(shown.client)}, not ${expectClient}`);
    }
    await page.fill("#credential", credential);
    const problems = [];
    page.on("console", (m) => problems.push(`console: ${m.text()}`));
    page.on("requestfailed", (r) => problems.push(`failed: ${r.url()} ${r.failure()?.errorText}`));
    try {
      await Promise.all([
        page.waitForURL((u) => u.href.startsWith(callback), { timeout: 20_000 }),
        page.click("#approve"),
      ]);
    } catch (e) {
      const text = await page.textContent("body").catch(() => "");
      throw new Error(`${e.message}\nthe page says: ${text}\n${problems.join("\n")}`);
    }
    return { ...shown, url: await listener.reached };
  } finally {
    listener.close();
    await context.close();
    fs.rmSync(profile, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [url, credential, callback, expectClient] = process.argv.slice(2);
  const result = await approve({ url, credential, callback, expectClient });
  console.log(JSON.stringify(result));
}
