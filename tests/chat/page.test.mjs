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

test("the chat page asks for approval, runs the approved call and renders Markdown without injection", async () => {
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
    // Every failed request is a problem (the browser's own favicon probe aside); the
    // console's "Failed to load resource" lines are covered by that.
    page.on("console", (m) => { if (m.type() === "error" && !/Failed to load resource/.test(m.text())) problems.push(`console: ${m.text()}`); });
    page.on("response", (r) => { if (r.status() >= 400 && !r.url().endsWith("/favicon.ico")) problems.push(`${r.status()} ${r.url()}`); });
    await page.goto(`${HUB}/`);
    await page.waitForSelector('#model option[value="scripted/scripted-1"]', { state: "attached", timeout: 10_000 });
    await page.selectOption("#model", "scripted/scripted-1");

    await page.fill("#input", "Wipe the cache, then show a table.");
    await page.click("#send");
    // The turn pauses on the destructive call: a card with the operation, its
    // plugin, input and hints, and Approve / Deny.
    await page.waitForFunction(() => document.querySelector("#status").textContent === "ready"
      && document.querySelector(".approval button.approve"), null, { timeout: 20_000 });
    const card = page.locator(".msg.assistant .approval");
    assert.equal(await card.count(), 1);
    // The hub_call holds the destructive wipe and a read-only echo: both are shown.
    assert.deepEqual(await card.locator(".operation").allTextContents(), ["examples.wipe", "examples.echo"]);
    assert.match(await card.locator(".reason").textContent(), /examples\.wipe is destructive/);
    assert.match(await card.textContent(), /plugin examples/);
    assert.match(await card.locator("pre.input").first().textContent(), /"scope": "cache"/);
    await page.waitForFunction(() => document.querySelectorAll(".approval .op")[1]?.querySelector(".hint"), null, { timeout: 10_000 });
    const ops = card.locator(".op");
    assert.deepEqual(await ops.nth(0).locator(".hint").allTextContents(), ["destructive"]);
    assert.deepEqual(await ops.nth(1).locator(".hint").allTextContents(), ["readOnly", "idempotent"]);
    assert.equal(await page.locator('details.tool[data-tool="hub_call"] .state').textContent(), "approval-requested");
    fs.mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: path.join(ARTIFACTS, "chat-page-approval-pending.png"), fullPage: false });

    await card.locator("button.approve").click();
    await page.waitForFunction(() => document.querySelector("#status").textContent === "ready"
      && document.querySelector(".msg.assistant .md table"), null, { timeout: 20_000 });
    const assistant = page.locator(".msg.assistant");
    assert.equal(await assistant.count(), 1, "the answer continues the same message");
    assert.equal(await page.locator(".approval").count(), 0);
    assert.equal(await assistant.locator('details.tool[data-tool="hub_call"] .state').textContent(), "output-available");
    // Markdown: a table, a code block, bold; HTML in the model's text stays text.
    assert.deepEqual(await assistant.locator(".md table th").allTextContents(), ["operation", "result"]);
    assert.deepEqual(await assistant.locator(".md table td").allTextContents(), ["examples.wipe", "wiped"]);
    assert.equal(await assistant.locator(".md pre code").textContent(), "const wiped = true; // <b>not bold</b>");
    assert.equal(await assistant.locator(".md pre code").getAttribute("data-lang"), "js");
    assert.equal(await assistant.locator(".md strong").first().textContent(), "wipe");
    assert.equal(await assistant.locator(".md script, .md img, .md b").count(), 0);
    assert.match(await assistant.locator(".md").last().textContent(), /<script>window\.__pwned = 1<\/script><img src=x onerror=/);
    assert.equal(await page.evaluate(() => window.__pwned), undefined);
    // Tool output with markup (the echo of the same approved hub_call) stays text too.
    const tool = assistant.locator('details.tool[data-tool="hub_call"]');
    assert.match(await tool.textContent(), /<script>window\.__pwnedTool = 1<\/script><img src=x onerror=/);
    assert.equal(await tool.locator("script, img").count(), 0);
    assert.equal(await page.evaluate(() => window.__pwnedTool), undefined);

    // The stored session has the approved call.
    const id = await page.evaluate(() => state.chatId);
    const s = await (await fetch(`${HUB}/api/sessions/${encodeURIComponent(id)}`)).json();
    const call = s.messages[1].parts.find((p) => p.type === "tool-hub_call");
    assert.equal(call.state, "output-available");
    assert.equal(call.approval.approved, true);

    await page.evaluate(() => { const log = document.querySelector("#log"); log.scrollTop = log.scrollHeight; });
    const shot = path.join(ARTIFACTS, "chat-page-approval.png");
    await page.screenshot({ path: shot, fullPage: false });
    console.log(`screenshot: ${shot}`);
    assert.deepEqual(problems, []);
  } finally {
    await context.close();
    fs.rmSync(profile, { recursive: true, force: true });
  }
});
