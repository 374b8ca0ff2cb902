// The hub's own chat page (`GET /`) in headless Chromium: send a message, see the
// tool calls and the final answer rendered, save a screenshot. HUB_URL names the
// running hub and ARTIFACTS the folder for the screenshot (see run.sh).

import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { chromium } from "playwright-core";

const HUB = process.env.HUB_URL;
const ARTIFACTS = process.env.ARTIFACTS;
const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";

test("the chat page streams a tool-using answer from the hub", async () => {
  assert.ok(HUB && ARTIFACTS, "HUB_URL and ARTIFACTS must be set");
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), "wasmhub-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1280, height: 900 },
    args: [
      "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync",
    ],
  });
  const problems = [];
  try {
    const page = context.pages()[0] || (await context.newPage());
    page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
    // Chromium logs every non-2xx response as a console error; the 404 below is expected.
    page.on("console", (m) => { if (m.type() === "error" && !/Failed to load resource/.test(m.text())) problems.push(`console: ${m.text()}`); });
    await page.goto(`${HUB}/`);
    // The model picker is filled from /v1/models.
    await page.waitForSelector('#model option[value="scripted/scripted-1"]', { state: "attached", timeout: 10_000 });
    await page.selectOption("#model", "scripted/scripted-1");

    await page.fill("#input", "What is 6*7? And make hello world loud.");
    await page.click("#send");
    await page.waitForFunction(() => document.querySelector("#status").textContent === "ready"
      && document.querySelectorAll(".msg.assistant").length === 1
      && document.querySelector(".msg.assistant").textContent.includes("Done:"), null, { timeout: 20_000 });

    const assistant = page.locator(".msg.assistant");
    const call = assistant.locator('details.tool[data-tool="hub_call"]');
    assert.equal(await call.count(), 1);
    assert.equal(await call.locator(".state").textContent(), "output-available");
    assert.equal(await assistant.locator('details.tool[data-tool="hub_search"]').count(), 2);
    assert.equal(await assistant.locator('details.tool[data-tool="hub_schema"]').count(), 2);
    await call.locator("summary").click();
    const output = await call.locator("pre.output").textContent();
    assert.match(output, /"ok": true/);
    assert.match(output, /calc\./);
    const answer = await assistant.locator(".text").allTextContents();
    assert.match(answer.join(" "), /Done: calc\.\S+ gave /);
    // The conversation appears in the session list.
    await page.waitForFunction(() => document.querySelectorAll("#sessions li").length >= 1, null, { timeout: 5_000 });
    assert.match(await page.locator("#sessions li.current").textContent(), /What is 6\*7/);

    // Show the end of the conversation: the call's output and the final answer.
    await page.evaluate(() => { const log = document.querySelector("#log"); log.scrollTop = log.scrollHeight; });
    fs.mkdirSync(ARTIFACTS, { recursive: true });
    const shot = path.join(ARTIFACTS, "chat-page.png");
    await page.screenshot({ path: shot, fullPage: false });
    console.log(`screenshot: ${shot}`);

    // A request the hub refuses is shown plainly: a model no provider serves.
    await page.evaluate(() => {
      const o = document.createElement("option"); o.value = "nobody/none"; o.textContent = "nobody/none";
      document.querySelector("#model").appendChild(o);
    });
    await page.selectOption("#model", "nobody/none");
    await page.fill("#input", "hello");
    await page.click("#send");
    await page.waitForFunction(() => document.querySelector("#status").textContent === "error", null, { timeout: 10_000 });
    assert.match(await page.locator(".msg.error").textContent(), /nobody\/none/);
    assert.deepEqual(problems, []);
  } finally {
    await context.close();
    fs.rmSync(profile, { recursive: true, force: true });
  }
});
