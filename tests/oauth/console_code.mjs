// The operator's side in headless Chromium: opens the hub's console (GET /console)
// with an operator token, creates a one-time sign-in code for a principal in the
// "OAuth sign-in codes" section, and prints it. The console is behind the bearer
// check: the document request carries the token (as a proxy would add it), the
// page's own API calls use the token from the URL fragment.
// Usage: node console_code.mjs HUB_URL OPERATOR_TOKEN PRINCIPAL
import { chromium } from "playwright-core";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

const [hub, token, principal] = process.argv.slice(2);
const profile = fs.mkdtempSync(path.join(os.tmpdir(), "wasmhub-oauth-console-"));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  headless: true,
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"],
});
try {
  const page = context.pages()[0] || (await context.newPage());
  await page.route(`${hub}/console`, (route) =>
    route.continue({ headers: { ...route.request().headers(), authorization: `Bearer ${token}` } }));
  const resp = await page.goto(`${hub}/console#token=${token}`);
  if (resp.status() !== 200) throw new Error(`the console answered ${resp.status()}`);
  await page.fill("#signin-principal", principal);
  await page.click("#signin-create");
  const code = page.locator("#signin-out code.signin-code");
  await code.waitFor({ timeout: 20_000 }).catch(async (e) => {
    throw new Error(`${e.message}; the console says: ${await page.textContent("#signin-out")}`);
  });
  console.log((await code.textContent()).trim());
} finally {
  await context.close();
  fs.rmSync(profile, { recursive: true, force: true });
}
