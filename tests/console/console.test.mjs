// The hub's operator console (`GET /console`) in headless Chromium against the real
// binary (see run.sh): HUB_URL is a hub without tokens (loopback clients need none)
// with the example plugins, the `examples` test guest and a rejected `broken.wasm`,
// approvals.wait_secs = 60, and no model provider (so no chat session);
// TOKENS_HUB_URL a hub with the tokens `ci` (not an operator) and `ops` (operator),
// the `calc` plugin and the chat suite's scripted upstream as its agent model;
// ARTIFACTS the folder for the screenshot.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { chromium } from "playwright-core";

const HUB = process.env.HUB_URL;
const TOKENS_HUB = process.env.TOKENS_HUB_URL;
const ARTIFACTS = process.env.ARTIFACTS;
const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";
const WAIT = { timeout: 20_000 };

let context, profile, page;
const problems = [];

before(async () => {
  assert.ok(HUB && TOKENS_HUB && ARTIFACTS, "HUB_URL, TOKENS_HUB_URL and ARTIFACTS must be set");
  profile = fs.mkdtempSync(path.join(os.tmpdir(), "wasmhub-chromium-"));
  context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1400, height: 1000 },
    args: [
      "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync",
    ],
  });
  page = context.pages()[0] || (await context.newPage());
  watch(page);
  const resp = await page.goto(`${HUB}/console`);
  assert.equal(resp.status(), 200);
  assert.match(resp.headers()["content-type"], /^text\/html/);
});

after(async () => {
  if (context) await context.close();
  if (profile) fs.rmSync(profile, { recursive: true, force: true });
  // No script error or CSP violation on any page.
  assert.deepEqual(problems, []);
});

function watch(p) {
  p.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  // Chromium logs every non-2xx response as a console error; 401/403 are expected here.
  p.on("console", (m) => { if (m.type() === "error" && !/Failed to load resource/.test(m.text())) problems.push(`console: ${m.text()}`); });
}

/// `hub_call` of `calls` ([{tool, input}]) with fetch, outside the page.
async function hubCall(hub, calls, token) {
  const headers = { "content-type": "application/json" };
  if (token) headers.authorization = `Bearer ${token}`;
  const r = await fetch(`${hub}/api/hub/call`, { method: "POST", headers, body: JSON.stringify({ calls }) });
  assert.equal(r.status, 200, await r.clone().text());
  return (await r.json()).results;
}

const CI = "ci-secret-123";
const OPS = "ops-secret-456";

/// One chat turn in session `id` as `token`'s principal (the scripted upstream answers
/// a message without a question with "You're welcome.", one model step, no tools).
async function chatTurn(hub, token, id, text) {
  const r = await fetch(`${hub}/api/chat`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
    body: JSON.stringify({ id, trigger: "submit-message", messages: [{ id: `${id}-u1`, role: "user", parts: [{ type: "text", text }] }] }),
  });
  const stream = await r.text();
  assert.equal(r.status, 200, stream);
  assert.match(stream, /welcome/);
}

/// The text of every cell of class `cls` in the rows `selector` matches.
const cells = (p, selector, cls) => p.locator(`${selector} td.${cls}`).allTextContents();

/// A page on the tokens hub whose document request and API calls carry `token`.
async function tokensPage(token) {
  const p = await context.newPage();
  watch(p);
  // The document request carries the token (as a proxy would add it); the page's
  // own API calls use the token it reads from the fragment.
  await p.route(`${TOKENS_HUB}/console`, (route) =>
    route.continue({ headers: { ...route.request().headers(), authorization: `Bearer ${token}` } }));
  const ok = await p.goto(`${TOKENS_HUB}/console#token=${token}`);
  assert.equal(ok.status(), 200);
  return p;
}

test("the plugins are listed with their state, the rejected one first with its reason", async () => {
  await page.waitForSelector('#plugins tr[data-plugin="calc"]', WAIT);
  const rows = page.locator("#plugins tbody tr");
  const first = rows.first();
  assert.equal(await first.getAttribute("data-plugin"), "broken");
  assert.equal(await first.locator(".state").textContent(), "rejected");
  assert.match(await first.locator(".reason").textContent(), /not a WebAssembly file/);
  const names = await rows.evaluateAll((trs) => trs.map((tr) => tr.dataset.plugin));
  for (const name of ["calc", "text", "examples"]) assert.ok(names.includes(name), `${name} in ${names}`);
  const calc = page.locator('#plugins tr[data-plugin="calc"]');
  assert.equal(await calc.locator(".state").textContent(), "active");
  assert.match(await calc.textContent(), /calc\.eval/);
  assert.match(await calc.textContent(), /wit \d+\.\d+\.\d+/);
  assert.match(await calc.textContent(), /pure compute/);
  assert.match(await page.locator("#plugins-count").textContent(), /\(1 rejected\)/);
});

test("the MCP servers are listed with their state, operations and notes", async () => {
  await page.waitForSelector('#servers tr[data-server="fake"].active', WAIT);
  const first = page.locator("#servers tbody tr").first();
  assert.equal(await first.getAttribute("data-server"), "off");
  assert.equal(await first.locator(".state").textContent(), "rejected");
  assert.equal(await first.locator(".reason").textContent(), "disabled (enabled = false)");
  const fake = page.locator('#servers tr[data-server="fake"]');
  assert.match(await fake.textContent(), /fake\.echo/);
  assert.match(await fake.textContent(), /stdio · pid \d+ · restarts 0/);
  assert.match(await fake.textContent(), /"bomb" left out: its input schema nests deeper than 32 levels/);
  assert.match(await page.locator("#servers-count").textContent(), /^2 \(1 rejected\)/);
  // Its tools are operations like the plugins'.
  await page.locator('details.op[data-tool="fake.echo"]').waitFor(WAIT);
});

test("an operation's form is prefilled from its first example and runs it", async () => {
  const card = page.locator('details.op[data-tool="calc.eval"]');
  await card.waitFor(WAIT);
  await card.locator(":scope > summary").click();
  assert.match(await card.locator(".desc").textContent(), /rational arithmetic/);
  assert.match(await card.locator(":scope > summary").textContent(), /readOnly/);
  const area = card.locator("textarea.input");
  await page.waitForFunction(() => document.querySelector('details.op[data-tool="calc.eval"] textarea').value.includes("1/3 + 1/6"), null, WAIT);
  assert.deepEqual(JSON.parse(await area.inputValue()), { expression: "1/3 + 1/6" });
  // The input schema is shown.
  assert.match(await card.locator("pre.input-schema").textContent(), /"expression"/);
  // The destructive hint of examples.wipe is shown too.
  assert.match(await page.locator('details.op[data-tool="examples.wipe"] > summary').textContent(), /destructive/);

  await card.locator("button.run").click();
  await card.locator(".result pre.output").waitFor(WAIT);
  const output = JSON.parse(await card.locator(".result pre.output").textContent());
  assert.equal(output.fraction, "1/2");

  // An input the schema refuses: the code, the message and the violations.
  await area.fill('{"expression": 1}');
  await card.locator("button.run").click();
  await card.locator(".result .error").waitFor(WAIT);
  const error = card.locator(".result .error");
  assert.match(await error.textContent(), /^invalid_input: /);
  assert.match(await error.locator("ul.violations li").first().textContent(), /^\/expression expected string/);

  // What is typed survives the periodic refresh (3 s).
  await area.fill('{"expression": "6*7"}');
  await page.waitForTimeout(3500);
  assert.equal(await area.inputValue(), '{"expression": "6*7"}');
  await card.locator("button.run").click();
  await page.waitForFunction(() => {
    const out = document.querySelector('details.op[data-tool="calc.eval"] .result pre.output');
    return out && out.textContent.includes('"fraction": "42"');
  }, null, WAIT);

  // Input that is not JSON never leaves the page.
  await area.fill("{nope");
  await card.locator("button.run").click();
  assert.match(await card.locator(".result .error").textContent(), /^invalid_json: the input is not JSON/);
});

test("a destructive call waits for an operator; Approve in the console lets it finish ok", async () => {
  const waiting = hubCall(HUB, [{ tool: "examples.wipe", input: { all: true } }]);
  const row = page.locator('#approvals tr.approval[data-tool="examples.wipe"]');
  await row.waitFor(WAIT);
  assert.equal(await row.locator(".principal").textContent(), "local");
  assert.match(await row.textContent(), /destructive/);
  assert.match(await row.textContent(), /approvals\.destructive/);
  assert.equal(await row.locator("code.input").textContent(), '{"all":true}');
  await row.locator("input.reason-input").fill("console test");
  await row.locator("button.approve").click();
  const [result] = await waiting;
  assert.equal(result.ok, true, JSON.stringify(result));
  assert.deepEqual(result.result, { wiped: true });
  // The list empties and the audit log shows who approved it.
  await page.waitForFunction(() => !document.querySelector("#approvals tr.approval"), null, WAIT);
  const call = page.locator("#calls tr.call", { hasText: "examples.wipe" }).first();
  await call.waitFor(WAIT);
  assert.equal(await call.locator(".outcome").textContent(), "ok");
  assert.match(await call.locator(".approval").textContent(), /^approved by local: console test/);

  // Deny: the call fails with approval_denied.
  const denied = hubCall(HUB, [{ tool: "examples.wipe", input: {} }]);
  await row.waitFor(WAIT);
  await row.locator("button.deny").click();
  const [refused] = await denied;
  assert.equal(refused.ok, false);
  assert.equal(refused.error.code, "approval_denied");
});

test("recent calls filter by tool, principal and outcome, and render client text as text", async () => {
  const hostile = "<script>window.pwned=1</script><img src=x onerror=window.pwned=2>";
  const [echo] = await hubCall(HUB, [{ tool: "examples.echo", input: { text: hostile } }]);
  assert.equal(echo.ok, true, JSON.stringify(echo));
  // A failing call whose input and error carry markup.
  await hubCall(HUB, [{ tool: "calc.eval", input: { expression: '<img src=x onerror="window.pwned=3">' } }]);

  const echoRow = page.locator("#calls tr.call", { hasText: "examples.echo" }).first();
  await echoRow.waitFor(WAIT);
  assert.ok((await echoRow.locator("code.input").textContent()).includes(hostile));
  const calcRow = page.locator("#calls tr.call", { hasText: "onerror" }).filter({ hasText: "calc.eval" }).first();
  await calcRow.waitFor(WAIT);
  assert.notEqual(await calcRow.locator(".outcome").textContent(), "ok");
  // Nothing ran and no element came from the text.
  assert.equal(await page.evaluate(() => window.pwned), undefined);
  assert.equal(await page.locator("#calls script, #calls img, #operations img, #plugins img, #servers img").count(), 0);

  // Filters, client-side.
  const tools = () => page.locator("#calls tr.call td.tool").evaluateAll((tds) => tds.map((td) => td.firstChild.textContent));
  await page.fill("#f-tool", "echo");
  let shown = await tools();
  assert.ok(shown.length >= 1);
  assert.ok(shown.every((t) => t === "examples.echo"), shown.join());
  await page.fill("#f-tool", "");
  await page.selectOption("#f-outcome", "invalid_input");
  const outcomes = await page.locator("#calls tr.call .outcome").allTextContents();
  assert.ok(outcomes.length >= 2 && outcomes.every((o) => o === "invalid_input"), outcomes.join());
  await page.selectOption("#f-outcome", "error");
  assert.ok((await page.locator("#calls tr.call .outcome").allTextContents()).every((o) => o !== "ok"));
  await page.selectOption("#f-outcome", "");
  await page.fill("#f-caller", "nobody");
  assert.equal(await page.locator("#calls tr.call").count(), 0);
  assert.match(await page.locator("#calls-count").textContent(), /^0 of \d+/);
  await page.fill("#f-caller", "local");
  assert.ok((await page.locator("#calls tr.call").count()) >= 5);
  assert.deepEqual(await page.locator("#calls thead th").allTextContents(),
    ["time", "tool", "principal", "outcome", "duration", "input", "error / approval"]);
  assert.ok((await cells(page, "#calls tr.call", "principal")).every((p) => p === "local"));
});

test("sessions and accounting: the principal of each record; the principal filter applies to every table", async () => {
  // The calls of the tests above are accounted as tool calls of `local`, newest first.
  const echo = page.locator("#accounting tr.record.tool_call", { hasText: "examples.echo" }).first();
  await echo.waitFor(WAIT);
  assert.equal(await echo.locator(".principal").textContent(), "local");
  assert.equal(await echo.locator(".kind").textContent(), "tool_call");
  assert.equal(await echo.locator(".detail").textContent(), "examples.echo ok");
  assert.equal(await echo.locator(".session").textContent(), "");
  const invalid = page.locator("#accounting tr.record.tool_call", { hasText: "invalid_input" }).first();
  assert.match(await invalid.locator(".detail").textContent(), /^calc\.eval invalid_input$/);
  const principals = await cells(page, "#accounting tr.record", "principal");
  assert.ok(principals.length >= 5 && principals.every((p) => p === "local"), principals.join());
  const ids = await page.locator("#accounting tr.record").evaluateAll((trs) => trs.map((tr) => Number(tr.dataset.id)));
  assert.deepEqual(ids, ids.slice().sort((a, b) => b - a), "newest first");
  assert.match(await page.locator("#accounting-count").textContent(), /^\d+ of the last \d+$/);
  // This hub has no model provider: no chat session.
  assert.equal(await page.locator("#sessions tbody").textContent(), "no session yet");
  assert.equal(await page.locator("#sessions-count").textContent(), "0 of 0");

  // A principal nobody is: every table is empty and says why.
  await page.fill("#f-caller", "nobody");
  assert.equal(await page.locator("#calls tr.call, #accounting tr.record, #sessions tr.session").count(), 0);
  assert.equal(await page.locator("#accounting tbody").textContent(), "no record of this principal");
  assert.match(await page.locator("#accounting-count").textContent(), /^0 of the last [1-9]\d*$/);
  await page.fill("#f-caller", "LOC");
  assert.equal((await cells(page, "#accounting tr.record", "principal")).length, principals.length);
  await page.fill("#f-caller", "");
});

test("the figures of /metrics: calls/s, errors by code, p99 latency", async () => {
  // Calls in one refresh interval make calls/s positive.
  await hubCall(HUB, Array.from({ length: 20 }, (_, i) => ({ tool: "calc.eval", input: { expression: `${i}+1` } })));
  await page.waitForFunction(() => Number(document.querySelector("#m-rate").textContent) > 0, null, WAIT);
  const metrics = await (await fetch(`${HUB}/metrics`)).text();
  const total = metrics.split("\n").filter((l) => l.startsWith("wasmhub_calls_total{"))
    .reduce((n, l) => n + Number(l.split(" ").pop()), 0);
  await page.waitForFunction((t) => Number(document.querySelector("#m-total").textContent) >= t, total, WAIT);
  assert.match(await page.locator("#m-p99").textContent(), /^\d+(\.\d+)? (µs|ms|s)$/);
  const codes = await page.locator("#m-errors .error-code").evaluateAll((bs) => bs.map((b) => b.dataset.code));
  assert.ok(codes.includes("invalid_input"), codes.join());
  assert.ok(codes.includes("approval_denied"), codes.join());

  fs.mkdirSync(ARTIFACTS, { recursive: true });
  const shot = path.join(ARTIFACTS, "console.png");
  await page.screenshot({ path: shot, fullPage: true });
  console.log(`screenshot: ${shot}`);
});

test("with tokens: the page needs one, takes it from the fragment, and a non-operator sees only its own waiting calls", async () => {
  const p = await context.newPage();
  watch(p);
  try {
    const refused = await p.goto(`${TOKENS_HUB}/console`);
    assert.equal(refused.status(), 401);
    assert.equal(refused.headers()["www-authenticate"], 'Bearer realm="wasmhub"');
    assert.doesNotMatch(await p.content(), /wasmhub console/);

    // (A fresh document: a goto that only adds a fragment would not load the page again.)
    await p.goto("about:blank");
    // The document request carries the ci token (as a proxy would add it); the page's
    // own API calls use the token it reads from the fragment.
    await p.route(`${TOKENS_HUB}/console`, (route) =>
      route.continue({ headers: { ...route.request().headers(), authorization: `Bearer ${CI}` } }));
    const ok = await p.goto(`${TOKENS_HUB}/console#token=${CI}`);
    assert.equal(ok.status(), 200);
    await p.waitForSelector('#plugins tr[data-plugin="broken"]', WAIT);
    assert.equal(await p.evaluate(() => location.hash), "", "the token left the address bar");
    // A non-operator sees the calls waiting for an approval that are its own (none).
    await p.waitForFunction(() => document.querySelector("#approvals").textContent === "no call is waiting for an approval", null, WAIT);

    // An operator's token: the (empty) list of waiting calls.
    await p.fill("#token", "ops-secret-456");
    await p.dispatchEvent("#token", "change");
    await p.waitForFunction(() => document.querySelector("#approvals").textContent === "no call is waiting for an approval", null, WAIT);

    // A wrong token: the refresh says so.
    await p.fill("#token", "wrong");
    await p.dispatchEvent("#token", "change");
    await p.waitForFunction(() => /refresh failed: .*set the token above/.test(document.querySelector("#status").textContent), null, WAIT);
  } finally {
    await p.close();
  }
});

test("with tokens: the weather plugin's secret shows unset; an operator sets it with the form, a non-operator cannot, and the value is never shown", async () => {
  const value = `wk-console-${Date.now()}`;
  const row = '#secrets tr[data-secret="weather/WEATHER_API_KEY"]';
  const ci = await tokensPage(CI);
  const ops = await tokensPage(OPS);
  try {
    await ci.waitForSelector(row, WAIT);
    assert.match(await ci.locator(`${row} td`).nth(3).textContent(), /UNSET/);
    assert.match(await ci.locator("#config-out").textContent(), /^$/);
    // A non-operator's Set is refused and the field is cleared.
    await ci.fill(`${row} input[type=password]`, value);
    await ci.click(`${row} button:text("Set")`);
    await ci.waitForFunction((r) => /not an operator/.test(document.querySelector(r).textContent), row, WAIT);
    assert.equal(await ci.inputValue(`${row} input[type=password]`), "");

    await ops.waitForSelector(row, WAIT);
    await ops.fill(`${row} input[type=password]`, value);
    await ops.click(`${row} button:text("Set")`);
    await ops.waitForFunction((r) => /^set /.test(document.querySelector(r).querySelectorAll("td")[3].textContent), row, WAIT);
    // Every other page sees it set at its next refresh; no page holds the value.
    await ci.click("#refresh");
    await ci.waitForFunction((r) => /^set /.test(document.querySelector(r).querySelectorAll("td")[3].textContent), row, WAIT);
    for (const p of [ci, ops]) assert.doesNotMatch(await p.content(), new RegExp(value));
    const api = await fetch(`${TOKENS_HUB}/api/plugins`, { headers: { authorization: `Bearer ${CI}` } });
    const listed = await api.text();
    assert.match(listed, /"source":"stored"/);
    assert.doesNotMatch(listed, new RegExp(value));

    // Remove: unset again.
    await ops.click(`${row} button:text("Remove")`);
    await ops.waitForFunction((r) => /UNSET/.test(document.querySelector(r).querySelectorAll("td")[3].textContent), row, WAIT);
  } finally {
    await ci.close();
    await ops.close();
  }
});

test("with tokens: a non-operator sees only its own calls, sessions and accounting; an operator sees every principal's", async () => {
  const stamp = Date.now();
  const sessions = { ci: `console-ci-${stamp}`, ops: `console-ops-${stamp}` };
  const [ciCall] = await hubCall(TOKENS_HUB, [{ tool: "calc.eval", input: { expression: "1+2" } }], CI);
  assert.equal(ciCall.ok, true, JSON.stringify(ciCall));
  const [opsCall] = await hubCall(TOKENS_HUB, [{ tool: "calc.eval", input: { expression: "2+3" } }], OPS);
  assert.equal(opsCall.ok, true, JSON.stringify(opsCall));
  // The title is the user's text: markup in it stays text.
  const title = 'Thanks from <b>ci</b><img src=x onerror="window.pwned=4">';
  await chatTurn(TOKENS_HUB, CI, sessions.ci, title);
  await chatTurn(TOKENS_HUB, OPS, sessions.ops, "Thanks from ops");

  const p = await tokensPage(CI);
  try {
    // ci: its call, its session, its records; nothing of ops.
    await p.locator("#calls tr.call", { hasText: "1+2" }).waitFor(WAIT);
    await p.locator(`#sessions tr.session[data-id="${sessions.ci}"]`).waitFor(WAIT);
    await p.locator("#accounting tr.record.model_step").waitFor(WAIT);
    assert.deepEqual(await cells(p, "#calls tr.call", "principal"), ["ci"]);
    assert.equal(await p.locator("#calls tr.call", { hasText: "2+3" }).count(), 0);
    const session = p.locator("#sessions tr.session");
    assert.equal(await session.count(), 1);
    assert.equal(await session.locator(".id").textContent(), sessions.ci);
    assert.equal(await session.locator(".principal").textContent(), "ci");
    assert.equal(await session.locator(".title").textContent(), title);
    assert.equal(await p.locator("#sessions b, #sessions img").count(), 0);
    assert.equal(await p.evaluate(() => window.pwned), undefined);
    assert.equal(await session.locator(".messages").textContent(), "2");
    assert.match(await session.locator(".size").textContent(), /^[1-9][\d.]* (B|KiB)$/);
    assert.match(await session.locator(".time").getAttribute("title"), /^\d{4}-\d\d-\d\dT/);
    assert.equal(await session.locator(".badge.active").count(), 0);
    assert.equal(await p.locator("#sessions-count").textContent(), "1 of 1");
    const step = p.locator("#accounting tr.record.model_step");
    assert.equal(await step.count(), 1);
    assert.equal(await step.locator(".principal").textContent(), "ci");
    assert.equal(await step.locator(".session").textContent(), sessions.ci);
    assert.equal(await step.locator(".detail").textContent(), "scripted/scripted-1 10 in / 5 out");
    const tool = p.locator("#accounting tr.record.tool_call");
    assert.equal(await tool.count(), 1);
    assert.equal(await tool.locator(".detail").textContent(), "calc.eval ok");
    assert.deepEqual(await cells(p, "#accounting tr.record", "principal"), ["ci", "ci"]);

    // ops (an operator): both principals' calls, sessions and records.
    await p.fill("#token", OPS);
    await p.dispatchEvent("#token", "change");
    await p.waitForFunction((ids) => ids.every((id) => document.querySelector(`#sessions tr.session[data-id="${id}"]`)), Object.values(sessions), WAIT);
    await p.waitForFunction(() => document.querySelectorAll("#accounting tr.record.model_step").length === 2, null, WAIT);
    await p.waitForFunction(() => document.querySelectorAll("#calls tr.call").length === 2, null, WAIT);
    assert.deepEqual((await cells(p, "#calls tr.call", "principal")).sort(), ["ci", "ops"]);
    assert.match(await p.locator("#calls tr.call", { hasText: "2+3" }).locator(".principal").textContent(), /^ops$/);
    assert.deepEqual((await cells(p, "#sessions tr.session", "principal")).sort(), ["ci", "ops"]);
    assert.equal(await p.locator(`#sessions tr.session[data-id="${sessions.ops}"] .principal`).textContent(), "ops");
    assert.deepEqual((await cells(p, "#accounting tr.record", "principal")).sort(), ["ci", "ci", "ops", "ops"]);
    assert.equal(await p.locator("#accounting tr.record.model_step", { hasText: sessions.ops }).locator(".principal").textContent(), "ops");
    // The approvals an operator sees: none waiting.
    await p.waitForFunction(() => document.querySelector("#approvals").textContent === "no call is waiting for an approval", null, WAIT);
    fs.mkdirSync(ARTIFACTS, { recursive: true });
    const shot = path.join(ARTIFACTS, "console-principals.png");
    await p.screenshot({ path: shot, fullPage: true });
    console.log(`screenshot: ${shot}`);

    // The principal filter narrows all three tables to one principal.
    for (const who of ["ci", "ops"]) {
      await p.fill("#f-caller", who);
      // A refresh may land in between: wait for the filtered accounting rows.
      await p.waitForFunction(
        (who) => [...document.querySelectorAll("#accounting tr.record .principal")].map((e) => e.textContent).join() === `${who},${who}`,
        who,
        WAIT,
      );
      assert.deepEqual(await cells(p, "#calls tr.call", "principal"), [who]);
      assert.deepEqual(await cells(p, "#sessions tr.session", "principal"), [who]);
      assert.equal(await p.locator("#sessions tr.session .id").textContent(), sessions[who]);
      assert.deepEqual(await cells(p, "#accounting tr.record", "principal"), [who, who]);
      assert.equal(await p.locator("#sessions-count").textContent(), "1 of 2");
    }
    await p.fill("#f-caller", "");
    assert.equal(await p.locator("#sessions tr.session").count(), 2);
  } finally {
    await p.close();
  }
});

test("agents: each agent with its source and sampling, and its last run from the accounting records", async () => {
  const r = await fetch(`${TOKENS_HUB}/v1/agents/poet`, {
    method: "POST",
    headers: { authorization: `Bearer ${OPS}`, "content-type": "application/json" },
    body: JSON.stringify({ input: "Thanks, poet!" }),
  });
  assert.equal(r.status, 200, await r.clone().text());
  assert.equal((await r.json()).output, "You're welcome.");
  const p = await tokensPage(OPS);
  try {
    const row = p.locator('#agents tr.agent[data-agent="poet"]');
    await row.locator("td.last-run.time").waitFor(WAIT);
    assert.equal(await row.locator(".source").textContent(), "config");
    assert.equal(await row.locator(".models").textContent(), "scripted/scripted-1");
    assert.match(await row.locator(".sampling").textContent(), /^temperature 0\.4; \d+ steps$/);
    assert.match(await row.locator(".last-run .note").textContent(), /^ops/);
    assert.equal(await p.locator('#agents tr.agent[data-agent="default"]').count(), 1);
    assert.equal(await p.locator("#agents-count").textContent(), "2");
  } finally {
    await p.close();
  }
});

test("a browser MCP client on another origin: its preflighted JSON-RPC reaches /mcp and its script reads the session id", async () => {
  // The same hub under another loopback name is another origin (the Origin check
  // accepts loopback names), as the MCP Inspector's direct mode is at localhost:6274.
  const otherOrigin = HUB.replace("127.0.0.1", "localhost");
  const other = await context.newPage();
  watch(other);
  await other.goto(`${otherOrigin}/health`);
  const seen = await other.evaluate(async (hub) => {
    const headers = {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": "2025-11-25",
    };
    const post = (body, session) =>
      fetch(`${hub}/mcp`, { method: "POST", headers: session ? { ...headers, "mcp-session-id": session } : headers, body: JSON.stringify(body) });
    const init = await post({
      jsonrpc: "2.0", id: 1, method: "initialize",
      params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "browser-client", version: "1.0.0" } },
    });
    const session = init.headers.get("mcp-session-id");
    const initText = await init.text();
    await post({ jsonrpc: "2.0", method: "notifications/initialized" }, session);
    const list = await post({ jsonrpc: "2.0", id: 2, method: "tools/list" }, session);
    return { origin: location.origin, status: init.status, session, initText, listStatus: list.status, listText: await list.text() };
  }, HUB);
  await other.close();
  assert.notEqual(seen.origin, new URL(HUB).origin);
  assert.equal(seen.status, 200, seen.initText);
  assert.ok(seen.session, "the script read Mcp-Session-Id");
  assert.match(seen.initText, /"serverInfo"/);
  assert.equal(seen.listStatus, 200, seen.listText);
  for (const tool of ["hub_list", "hub_search", "hub_schema", "hub_call"]) assert.match(seen.listText, new RegExp(`"${tool}"`));
});
