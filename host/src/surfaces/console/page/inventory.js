// Part 2 of 5: what the hub has: plugins, MCP servers, plugin secrets and
// configuration (with the operators' form), operations (schema and a try-it form).
// ---- plugins -------------------------------------------------------------------
const STATE_ORDER = { rejected: 0, loading: 1, deprecated: 2, active: 3 };
// Plugins and MCP servers share these: rejected first, then by name; a state cell
// with its reason; a cell of one line per item.
function byState(items) {
  return items.slice().sort((a, b) =>
    ((STATE_ORDER[a.state] ?? 4) - (STATE_ORDER[b.state] ?? 4)) || String(a.name).localeCompare(String(b.name)));
}
function countLabel(items) {
  return items.length + " (" + items.filter((p) => p.state === "rejected").length + " rejected)";
}
function stateCell(p) {
  const st = el("td");
  st.appendChild(el("span", "badge state " + p.state, p.state));
  if (p.reason) st.appendChild(el("div", "reason", p.reason));
  return st;
}
function linesCell(items, cls) {
  const td = el("td");
  for (const item of items || []) td.appendChild(el("div", cls, item));
  return td;
}
function renderPlugins(plugins) {
  plugins = byState(plugins);
  $("plugins-count").textContent = countLabel(plugins);
  $("plugins").tBodies[0].replaceChildren(...plugins.map((p) => {
    const tr = el("tr", "plugin " + p.state);
    tr.dataset.plugin = p.name;
    const name = el("td");
    name.appendChild(el("strong", "name", p.name));
    if (p.wit_version) name.appendChild(el("div", "note", "wit " + p.wit_version));
    tr.appendChild(name);
    tr.appendChild(stateCell(p));
    tr.appendChild(linesCell(p.operations, null));
    tr.appendChild(linesCell(p.capabilities, "note"));
    const digest = el("td", "note", p.digest ? String(p.digest).slice(0, 12) : "");
    if (p.digest) digest.title = p.digest;
    tr.appendChild(digest);
    return tr;
  }));
}

// ---- MCP servers ---------------------------------------------------------------
function renderServers(servers) {
  servers = byState(servers);
  $("servers-count").textContent = countLabel(servers);
  $("servers").tBodies[0].replaceChildren(...servers.map((p) => {
    const tr = el("tr", "server " + p.state);
    tr.dataset.server = p.name;
    const name = el("td");
    name.appendChild(el("strong", "name", p.name));
    name.appendChild(el("div", "note", p.transport + (p.pid ? " · pid " + p.pid : "") + " · restarts " + p.restarts));
    tr.appendChild(name);
    tr.appendChild(stateCell(p));
    tr.appendChild(linesCell(p.operations, null));
    tr.appendChild(el("td", "note", p.target));
    tr.appendChild(linesCell(p.notes, "note"));
    return tr;
  }));
}

// ---- secrets and configuration ---------------------------------------------------
// Rows are rebuilt only when what they show changes, so a value being typed survives
// the periodic refresh. The typed value goes to the API once and is then cleared.
function secretState(s) {
  if (s.source === "stored") return "set " + new Date(s.updated_ms).toLocaleString();
  if (s.source === "reference") return "from " + s.reference;
  return "UNSET";
}
function renderSecrets(plugins) {
  const rows = [];
  const config = [];
  for (const p of plugins) {
    for (const s of p.secrets || []) rows.push({ plugin: p.name, s });
    for (const c of p.config || []) config.push({ plugin: p.name, c });
  }
  const key = JSON.stringify(rows.map((r) => [r.plugin, r.s.name, secretState(r.s)]).concat(config.map((r) => [r.plugin, r.c.name, r.c.value])));
  if (key === state.secretsKey) return;
  state.secretsKey = key;
  const unset = rows.filter((r) => r.s.source === "unset").length;
  $("secrets-count").textContent = rows.length + " (" + unset + " unset)";
  $("secrets").tBodies[0].replaceChildren(...rows.map(({ plugin, s }) => {
    const tr = el("tr", "secret " + (s.source || "unset"));
    tr.dataset.secret = plugin + "/" + s.name;
    tr.appendChild(el("td", null, plugin));
    const name = el("td");
    name.appendChild(el("strong", null, s.name));
    if (s.description) name.appendChild(el("div", "note", s.description));
    tr.appendChild(name);
    tr.appendChild(el("td", "note", s.use === "inject" ? "injected into " + (s.hosts || []).join(", ") : "revealed to the plugin"));
    tr.appendChild(el("td", s.source === "unset" ? "error" : null, secretState(s)));
    const form = el("td");
    const input = el("input");
    input.type = "password"; input.autocomplete = "off"; input.placeholder = "new value"; input.size = 24;
    const setB = el("button", null, "Set");
    const rmB = el("button", null, "Remove");
    const out = el("div");
    setB.onclick = () => setSecret(plugin, s.name, input, [setB, rmB], out);
    rmB.onclick = () => setSecret(plugin, s.name, null, [setB, rmB], out);
    rmB.disabled = s.source !== "stored";
    form.append(input, setB, rmB, out);
    tr.appendChild(form);
    return tr;
  }));
  $("config-out").replaceChildren(...config.map(({ plugin, c }) =>
    el("div", "note", plugin + " config " + c.name + " (" + c.type + ") = " + (c.value ?? "(not set)") + (c.description ? ": " + c.description : ""))));
}
async function setSecret(plugin, name, input, buttons, out) {
  const path = "/api/plugins/" + encodeURIComponent(plugin) + "/secrets/" + encodeURIComponent(name);
  if (input && !input.value) { out.replaceChildren(el("div", "error", "type a value first")); return; }
  for (const b of buttons) b.disabled = true;
  try {
    if (input) await api(path, { value: input.value }, "PUT");
    else await api(path, undefined, "DELETE");
    if (input) input.value = "";
    out.replaceChildren(el("div", "note", input ? "sealed and stored" : "removed"));
    state.secretsKey = null;
    refresh();
  } catch (e) {
    if (input) input.value = "";
    if (e.status === 403) out.replaceChildren(el("div", "error", "this token is not an operator"));
    else out.replaceChildren(errorBox(e));
  } finally {
    for (const b of buttons) b.disabled = false;
  }
}

// ---- operations --------------------------------------------------------------
const HINTS = ["readOnly", "destructive", "idempotent", "openWorld"];
async function renderOperations(list) {
  const ops = list.operations || [];
  $("operations-count").textContent = String(ops.length);
  // Rebuilt only when the operations change, so a refresh keeps what is typed.
  const key = JSON.stringify(ops);
  if (key === state.opsKey) return;
  state.opsKey = key;
  const box = $("operations");
  const open = new Set([...box.querySelectorAll("details.op[open]")].map((d) => d.dataset.tool));
  const typed = new Map([...box.querySelectorAll("details.op")].map((d) => [d.dataset.tool, d.querySelector("textarea").value]));
  const cards = ops.map((op) => {
    const d = el("details", "op");
    d.dataset.tool = op.tool;
    if (open.has(op.tool)) d.open = true;
    const s = el("summary");
    s.appendChild(el("strong", null, op.tool));
    s.appendChild(document.createTextNode(" "));
    for (const h of HINTS) if (op[h]) s.appendChild(el("span", "badge hint", h));
    d.appendChild(s);
    const body = el("div", "body");
    body.appendChild(el("div", "desc", op.description || ""));
    const schemaBox = el("div", "schema");
    body.appendChild(schemaBox);
    const area = el("textarea", "input");
    area.spellcheck = false;
    area.setAttribute("aria-label", "input of " + op.tool);
    area.value = typed.get(op.tool) ?? "{}";
    body.appendChild(area);
    const run = el("button", "primary run", "Run");
    body.appendChild(run);
    const out = el("div", "result");
    body.appendChild(out);
    run.onclick = () => runOperation(op.tool, area, run, out);
    d.appendChild(body);
    fillSchema(op.tool, schemaBox, area, typed.has(op.tool));
    return d;
  });
  box.replaceChildren(...cards);
}
async function fillSchema(tool, box, area, keepTyped) {
  let schema = state.schemas.get(tool);
  try {
    if (!schema) { schema = await api("/api/hub/schema", { tool }); state.schemas.set(tool, schema); }
  } catch (e) { box.replaceChildren(errorBox(e)); return; }
  const examples = schema.examples || [];
  if (!keepTyped && examples.length && examples[0].input !== undefined) area.value = pretty(examples[0].input);
  const parts = [];
  const input = el("details");
  input.appendChild(el("summary", "note", "input schema"));
  input.appendChild(el("pre", "input-schema", pretty(schema.inputSchema)));
  parts.push(input);
  if (examples.length) {
    const ex = el("details");
    ex.appendChild(el("summary", "note", examples.length + " example" + (examples.length > 1 ? "s" : "")));
    for (const x of examples) {
      if (x.description) ex.appendChild(el("div", "note", x.description));
      ex.appendChild(el("pre", null, pretty(x.input)));
    }
    parts.push(ex);
  }
  box.replaceChildren(...parts);
}
async function runOperation(tool, area, button, out) {
  let input;
  try { input = JSON.parse(area.value); }
  catch (e) { out.replaceChildren(errorBox({ code: "invalid_json", message: "the input is not JSON: " + e.message })); return; }
  button.disabled = true;
  out.replaceChildren(el("div", "note", "running…"));
  try {
    const answer = await api("/api/hub/call", { calls: [{ tool, input }] });
    const r = answer.results[0];
    if (r.ok) {
      out.replaceChildren(el("div", "badge ok", "ok"), el("pre", "output", pretty(r.result)));
    } else {
      out.replaceChildren(errorBox(r.error || { message: "the call failed" }));
    }
  } catch (e) {
    out.replaceChildren(errorBox(e));
  } finally {
    button.disabled = false;
    refresh();
  }
}

