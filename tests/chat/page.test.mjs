// The hub's own chat page (`GET /`) in headless Chromium: send a message, see the
// tool calls and the final answer rendered, save a screenshot; approvals; a reload
// mid-turn that rejoins the turn, and Stop. Then the AI SDK 7 client itself in
// Chromium (bundled with esbuild at test time): a tab closed mid-answer, and a new
// tab that resumes it. HUB_URL names the running hub, UPSTREAM_URL the scripted
// upstream and ARTIFACTS the folder for the screenshot (see run.sh).

import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { chromium } from "playwright-core";
import * as esbuild from "esbuild";
import { LONG_ANSWER } from "./upstream.mjs";
import { firstWords, held, readChunks, release, settled, stored } from "./live.mjs";

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

/// Runs `fn(page, problems)` in a fresh headless Chromium on the hub's page, the model
/// picked; `problems` collects page errors, console errors and failed requests.
async function onThePage(fn) {
  await inChromium(async (context, watch) => {
    const page = context.pages()[0] || (await context.newPage());
    const problems = watch(page);
    await page.goto(`${HUB}/`);
    await page.waitForSelector('#model option[value="scripted/scripted-1"]', { state: "attached", timeout: 10_000 });
    await page.selectOption("#model", "scripted/scripted-1");
    await fn(page, problems);
  });
}

/// Runs `fn(context, watch)` in a fresh headless Chromium; `watch(page)` returns the
/// list that collects the page's errors, console errors and failed requests.
async function inChromium(fn) {
  assert.ok(HUB, "HUB_URL must be set");
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
  const watch = (page) => {
    const problems = [];
    page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
    page.on("console", (m) => { if (m.type() === "error" && !/Failed to load resource/.test(m.text())) problems.push(`console: ${m.text()}`); });
    page.on("response", (r) => { if (r.status() >= 400 && !r.url().endsWith("/favicon.ico")) problems.push(`${r.status()} ${r.url()}`); });
    return problems;
  };
  try {
    await fn(context, watch);
  } finally {
    await context.close();
    fs.rmSync(profile, { recursive: true, force: true });
  }
}

/// Sends `message` from the page's input.
async function send(page, message) {
  await page.fill("#input", message);
  await page.click("#send");
}

/// Waits until the page's last message is an assistant one whose text is `expected`
/// (and, when given, the status line says `status`).
async function lastAnswerIs(page, expected, status = null) {
  await page.waitForFunction(([want, st]) => {
    const all = document.querySelectorAll("#log .msg");
    const last = all[all.length - 1];
    if (!last || !last.classList.contains("assistant")) return false;
    const said = [...last.querySelectorAll(".text")].map((t) => t.textContent).join("");
    return said.trim() === want.trim() && (st === null || document.querySelector("#status").textContent === st);
  }, [expected, status], { timeout: 20_000 });
}

/// The status line, the last message's id, its text and its notes.
const lastMessage = (page) => page.evaluate(() => {
  const all = document.querySelectorAll("#log .msg");
  const last = all[all.length - 1];
  return {
    status: document.querySelector("#status").textContent,
    id: last.dataset.id,
    role: last.classList.contains("assistant") ? "assistant" : "user",
    text: [...last.querySelectorAll(".text")].map((t) => t.textContent).join(""),
    notes: [...last.querySelectorAll(".note")].map((n) => n.textContent),
  };
});

const textOf = (m) => m.parts.filter((p) => p.type === "text").map((p) => p.text).join("");

test("the chat page keeps a new chat in its address, so a reload mid-turn comes back to it", async () => {
  const key = `page-new-${Date.now()}`;
  try {
    await onThePage(async (page) => {
      await send(page, `Long answer please; hold ${key}.`);
      await held(key);
      await lastAnswerIs(page, firstWords(30), "streaming");
      const id = await page.evaluate(() => state.chatId);
      // The page reopens the session in location.hash on load: a new chat must be there.
      assert.equal(await page.evaluate(() => location.hash), `#${id}`,
        "a chat started on the page is named in its address (location.hash), so a reload reopens it");
      await page.reload();
      await lastAnswerIs(page, firstWords(30), "streaming");
      await release(key);
      await lastAnswerIs(page, LONG_ANSWER, "ready");
      const s = await settled(id);
      assert.equal(textOf(s.messages.at(-1)), LONG_ANSWER);
      assert.notEqual(s.messages.at(-1).metadata?.aborted, true);
    });
  } finally {
    await release(key);
  }
});

test("the chat page reloaded mid-turn follows the turn to the last character of its answer", async () => {
  const key = `page-reload-${Date.now()}`;
  try {
    await onThePage(async (page, problems) => {
      // A session opened from the list is in the page's address.
      await send(page, "hello");
      await lastAnswerIs(page, "You're welcome.", "ready");
      await page.waitForSelector("#sessions li.current", { timeout: 5_000 });
      await page.click("#sessions li.current");
      const id = await page.evaluate(() => state.chatId);
      await page.waitForFunction((want) => location.hash === want, `#${id}`, { timeout: 5_000 });

      await send(page, `Long answer please; hold ${key}.`);
      await held(key);
      await lastAnswerIs(page, firstWords(30), "streaming");
      const before = await lastMessage(page);

      // The reload drops the page's connection; the reloaded page reopens the session
      // from its address and joins the turn still running: the replay first.
      await page.reload();
      await lastAnswerIs(page, firstWords(30), "streaming");
      assert.equal(await page.evaluate(() => state.chatId), id);
      await release(key);
      await lastAnswerIs(page, LONG_ANSWER, "ready");
      const after = await lastMessage(page);
      assert.equal(after.text.trim(), LONG_ANSWER, "every word, to the last character");
      assert.ok(after.text.trim().endsWith("(the end)."));
      assert.ok(!after.notes.includes("stopped"), JSON.stringify(after.notes));
      assert.equal(after.id, before.id, "the same answer, joined");
      assert.equal(await page.locator("#log .msg.user").count(), 2);
      assert.equal(await page.locator("#log .msg.assistant").count(), 2);

      const s = await settled(id);
      assert.deepEqual(s.messages.map((m) => m.role), ["user", "assistant", "user", "assistant"]);
      const answer = s.messages[3];
      assert.equal(answer.id, after.id);
      assert.equal(textOf(answer), LONG_ANSWER);
      assert.notEqual(answer.metadata?.aborted, true, JSON.stringify(answer.metadata));
      assert.equal(answer.metadata?.finishReason, "stop", JSON.stringify(answer.metadata));
      assert.deepEqual(problems, []);
    });
  } finally {
    await release(key);
  }
});

test("the chat page's Stop stops the turn: its stream ends with an abort, the page says stopped, the stored message is aborted", async () => {
  const key = `page-stop-${Date.now()}`;
  try {
    await onThePage(async (page, problems) => {
      const stops = [];
      page.on("response", (r) => { if (r.url().endsWith("/stop")) stops.push({ method: r.request().method(), status: r.status() }); });
      await send(page, `Long answer please; hold ${key}.`);
      await held(key);
      await lastAnswerIs(page, firstWords(30), "streaming");
      const id = await page.evaluate(() => state.chatId);
      // Another client watches the turn, to see how its stream ends.
      const watcher = await fetch(`${HUB}/api/chat/${encodeURIComponent(id)}/stream`);
      assert.equal(watcher.status, 200);
      const watched = readChunks(watcher);

      await page.click("#stop");
      await page.waitForFunction(() => {
        const all = document.querySelectorAll("#log .msg.assistant");
        const last = all[all.length - 1];
        return document.querySelector("#status").textContent === "ready"
          && last && [...last.querySelectorAll(".note")].some((n) => n.textContent === "stopped");
      }, null, { timeout: 20_000 });
      assert.deepEqual(stops, [{ method: "POST", status: 204 }]);
      const shown = await lastMessage(page);
      assert.equal(shown.text.trim(), firstWords(30).trim(), "nothing after the stop");

      const chunks = await watched;
      assert.deepEqual(chunks.at(-1), { type: "abort", reason: "stopped on request" }, JSON.stringify(chunks.slice(-3)));
      assert.ok(!chunks.some((c) => c.type === "text-delta" && c.delta.startsWith("w31")), "the answer stopped where it was held");

      const s = await settled(id);
      const answer = s.messages.at(-1);
      assert.equal(answer.role, "assistant");
      assert.equal(answer.id, shown.id);
      assert.equal(answer.metadata?.aborted, true, JSON.stringify(answer.metadata));
      assert.equal(textOf(answer), firstWords(30));
      assert.deepEqual(problems, []);
    });
  } finally {
    await release(key);
  }
});

// A tiny app on the AI SDK 7 client in the browser, as `useChat({ id, resume: true,
// transport: new DefaultChatTransport({ api: "/api/chat" }) })` sets it up: the chat
// of `location.hash`, new, or (`?resume`) reopened with its stored messages and
// `resumeStream()` on mount. Served at the hub's origin (Playwright answers these two paths;
// everything else is the hub's).
const APP = `<!doctype html><meta charset="utf-8"><title>ai 7 app</title>
<script src="/__tests/ai7.js"></script>
<script type="module">
class Chat extends ai7.AbstractChat {
  constructor(options, messages) { super({ ...options, state: new ai7.ArrayState(messages) }); }
}
const id = decodeURIComponent(location.hash.slice(1));
const reopen = new URLSearchParams(location.search).has("resume");
const messages = reopen ? (await (await fetch("/api/sessions/" + encodeURIComponent(id))).json()).messages : [];
window.chat = new Chat({ id, transport: new ai7.DefaultChatTransport({ api: "/api/chat" }) }, messages);
if (reopen) {
  window.resumed = false;
  chat.resumeStream().then(() => { window.resumed = true; });
}
</script>`;

/// The ai 7 client bundled for the browser, with the tests' chat state:
/// `window.ai7 = { AbstractChat, DefaultChatTransport, ArrayState }`.
async function ai7Bundle() {
  const out = await esbuild.build({
    stdin: {
      contents: 'import { AbstractChat, DefaultChatTransport } from "ai7"; import { ArrayState } from "../lib/chat-state.mjs"; window.ai7 = { AbstractChat, DefaultChatTransport, ArrayState };',
      resolveDir: import.meta.dirname,
      loader: "js",
    },
    bundle: true, format: "iife", platform: "browser", write: false, logLevel: "warning",
  });
  return out.outputFiles[0].text;
}

/// The app's chat: status, error and messages.
const appChat = (page) => page.evaluate(() => window.chat && ({ status: chat.status, error: chat.error?.message, messages: chat.messages }));

test("the AI SDK 7 client in Chromium: a tab closed mid-answer, a new tab of the chat resumes it to the last character", async () => {
  const id = `browser-${Date.now()}`;
  const [k1, k2] = [`b1-${id}`, `b2-${id}`];
  const bundle = await ai7Bundle();
  try {
    await inChromium(async (context, watch) => {
      await context.route((url) => url.origin === HUB && url.pathname === "/__tests/app.html", (route) => route.fulfill({ contentType: "text/html", body: APP }));
      await context.route(`${HUB}/__tests/ai7.js`, (route) => route.fulfill({ contentType: "text/javascript", body: bundle }));
      const tab = context.pages()[0] || (await context.newPage());
      const tabProblems = watch(tab);
      await tab.goto(`${HUB}/__tests/app.html#${id}`);
      await tab.waitForFunction(() => window.chat, null, { timeout: 10_000 });
      await tab.evaluate((message) => { window.sending = chat.sendMessage({ text: message }); }, `Long answer please; hold ${k1}, hold ${k2}.`);
      await held(k1);
      await tab.waitForFunction((want) => chat.messages[1]?.parts.filter((p) => p.type === "text").map((p) => p.text).join("") === want,
        firstWords(19), { timeout: 20_000 });
      assert.deepEqual(tabProblems, []);
      // The tab goes away; the turn goes on with nobody watching, up to the second hold.
      await tab.close();
      await release(k1);
      await held(k2);
      assert.equal((await stored(id)).active, true, "the turn still runs after its tab closed");

      // A new tab of the same chat: its stored messages, then resume on mount.
      const again = await context.newPage();
      const problems = watch(again);
      await again.goto(`${HUB}/__tests/app.html?resume#${id}`);
      await again.waitForFunction((want) => {
        const last = window.chat?.messages.at(-1);
        return last?.role === "assistant" && last.parts.filter((p) => p.type === "text").map((p) => p.text).join("") === want;
      }, firstWords(40), { timeout: 20_000 }).catch(async (e) => {
        throw new Error(`${e.message}; the new tab has ${JSON.stringify(await appChat(again))}; ${problems}`);
      });
      await release(k2);
      await again.waitForFunction(() => window.resumed === true, null, { timeout: 20_000 });
      const view = await appChat(again);
      assert.equal(view.status, "ready", view.error);
      assert.deepEqual(view.messages.map((m) => m.role), ["user", "assistant"]);
      const answer = view.messages[1];
      assert.equal(textOf(answer), LONG_ANSWER, "the whole answer, to its last character");
      assert.notEqual(answer.metadata?.aborted, true, JSON.stringify(answer.metadata));
      assert.equal(answer.metadata?.finishReason, "stop", JSON.stringify(answer.metadata));
      assert.deepEqual(problems, []);

      const s = await settled(id);
      assert.deepEqual(s.messages.map((m) => m.id), view.messages.map((m) => m.id));
      assert.equal(textOf(s.messages[1]), LONG_ANSWER);
      assert.notEqual(s.messages[1].metadata?.aborted, true);
    });
  } finally {
    await release(k1);
    await release(k2);
  }
});
