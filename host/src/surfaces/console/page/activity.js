// Part 3 of 5: what the hub did: recent calls, sessions, agents, accounting
// records, pending approvals (with the operators' decision).
// ---- recent calls --------------------------------------------------------------
function renderCalls() {
  const tool = $("f-tool").value.trim().toLowerCase();
  const outcome = $("f-outcome").value;
  const shown = state.calls.filter((c) =>
    (!tool || String(c.tool).toLowerCase().includes(tool)) && principalShown(c.caller) &&
    (!outcome || (outcome === "error" ? c.outcome !== "ok" : c.outcome === outcome)));
  $("calls-count").textContent = shown.length + " of " + state.calls.length;
  $("calls").tBodies[0].replaceChildren(...shown.map((c) => {
    const tr = el("tr", "call");
    tr.dataset.id = c.id;
    tr.appendChild(timeCell(c.started_ms));
    const tl = el("td", "tool", c.tool);
    if (c.parent) tl.appendChild(el("div", "note", "nested in " + c.parent));
    tr.appendChild(tl);
    // A grant's calls name the OAuth client it was made to.
    tr.appendChild(el("td", "principal", c.client ? c.caller + " via " + c.client : c.caller));
    const oc = el("td");
    oc.appendChild(el("span", "badge outcome " + (c.outcome === "ok" ? "ok" : "err"), c.outcome));
    tr.appendChild(oc);
    tr.appendChild(el("td", "note", formatDuration(c.duration_us / 1e6)));
    const input = el("td");
    if (c.input !== undefined) input.appendChild(el("code", "input", compact(c.input)));
    tr.appendChild(input);
    const detail = el("td");
    if (c.error) detail.appendChild(el("div", "reason error-text", c.error));
    if (c.approval) {
      const a = c.approval;
      detail.appendChild(el("div", "note approval", a.decision + (a.by ? " by " + a.by : "") + (a.reason ? ": " + a.reason : "") + (a.policy ? " (" + a.policy + ")" : "")));
    }
    tr.appendChild(detail);
    return tr;
  }));
}
function updateOutcomeFilter() {
  const sel = $("f-outcome");
  for (const c of state.calls) {
    if (c.outcome === "ok" || state.outcomes.has(c.outcome)) continue;
    state.outcomes.add(c.outcome);
    const o = el("option", null, c.outcome); o.value = c.outcome; sel.appendChild(o);
  }
}
$("f-tool").oninput = renderCalls;
$("f-caller").oninput = () => { renderCalls(); renderSessions(); renderAccounting(); };
$("f-outcome").onchange = renderCalls;
$("f-limit").onchange = () => refresh();

// ---- sessions ------------------------------------------------------------------
// GET /api/sessions: most recent first; a non-operator gets only its own.
function renderSessions() {
  const shown = state.sessions.filter((s) => principalShown(s.principal));
  $("sessions-count").textContent = shown.length + " of " + state.sessions.length +
    (shown.length > SHOWN_MAX ? " (" + SHOWN_MAX + " most recent listed)" : "");
  fillRows("sessions", shown.slice(0, SHOWN_MAX).map((s) => {
    const tr = el("tr", "session");
    tr.dataset.id = s.id;
    tr.appendChild(el("td")).appendChild(el("code", "id", s.id));
    tr.appendChild(el("td", "principal", s.principal));
    tr.appendChild(el("td", "title", s.title));
    tr.appendChild(el("td", "messages", s.messageCount));
    tr.appendChild(el("td", "note size", formatBytes(s.storedBytes)));
    tr.appendChild(timeCell(s.updatedAt));
    const active = tr.appendChild(el("td"));
    if (s.active) active.appendChild(el("span", "badge active", "active"));
    return tr;
  }), state.sessions.length ? "no session of this principal" : "no session yet");
}

// ---- agents ----------------------------------------------------------------------
// GET /api/agents lists the profiles; an agent's last run is the newest accounting
// record naming it among those the Accounting panel holds.
function renderAgents(result) {
  const agents = result.agents || [];
  const rejected = result.rejected || [];
  $("agents-count").textContent = agents.length + (rejected.length ? " (" + rejected.length + " files left out)" : "");
  const last = new Map();
  for (const r of state.acc.records) if (r.agent) last.set(r.agent, r);
  fillRows("agents", agents.map((a) => {
    const tr = el("tr", "agent");
    tr.dataset.agent = a.name;
    const name = tr.appendChild(el("td"));
    name.appendChild(el("strong", "name", a.name));
    if (a.description) name.appendChild(el("div", "note", a.description));
    tr.appendChild(el("td", "note source", a.file || a.source));
    tr.appendChild(el("td", "models", (a.models || []).join(", ")));
    tr.appendChild(el("td", "allow", a.allow ? a.allow.join(", ") : "(the caller's)"));
    const sampling = [["temperature", a.temperature], ["top_p", a.topP], ["max tokens", a.maxOutputTokens]]
      .filter(([, v]) => v !== null && v !== undefined).map(([k, v]) => k + " " + v);
    tr.appendChild(el("td", "note sampling", sampling.join(", ") + (sampling.length ? "; " : "") + a.maxSteps + " steps"));
    const run = last.get(a.name);
    if (run) {
      const td = timeCell(run.time_ms);
      td.classList.add("last-run");
      td.appendChild(el("div", "note", run.caller + (run.session ? " · " + run.session : "")));
      tr.appendChild(td);
    } else {
      tr.appendChild(el("td", "note last-run", a.default ? "" : "no run among the records shown"));
    }
    return tr;
  }), "no agent");
  $("agents-rejected").replaceChildren(...rejected.map((r) => el("div", "reason rejected-agent", r.file + ": " + r.problem)));
}

// ---- accounting ----------------------------------------------------------------
// GET /api/accounting pages forward from `since`, oldest first. The panel keeps the
// newest SHOWN_MAX records: it starts from the longest of (everything kept, the last
// hour, 10 minutes, the last minute) that fits in one page, then follows `next`.
const ACC_PAGE = 1000;
async function fetchAccounting() {
  const acc = state.acc; // replaced when the token changes
  const page = (since) => api("/api/accounting?limit=" + ACC_PAGE + (since ? "&since=" + encodeURIComponent(since) : ""));
  let p;
  if (acc.next === null) {
    for (const back of [0, 3600e3, 600e3, 60e3]) {
      p = await page(back ? new Date(Date.now() - back).toISOString() : "");
      if (p.records.length < ACC_PAGE) break;
    }
    acc.records = p.records.slice(-SHOWN_MAX); acc.next = p.next;
    return;
  }
  for (let i = 0; i < 3; i++) {
    p = await page(String(acc.next));
    acc.records = acc.records.concat(p.records).slice(-SHOWN_MAX); acc.next = p.next;
    if (p.records.length < ACC_PAGE) return;
  }
  acc.next = null; // still behind: start again from a recent window
}
function accountingDetail(r) {
  const td = el("td", "detail");
  const n = (v) => (v === null || v === undefined ? "?" : String(v));
  if (r.kind === "model_step") {
    td.appendChild(el("span", "model", r.provider + "/" + r.model));
    td.appendChild(el("span", "note tokens", " " + n(r.input_tokens) + " in / " + n(r.output_tokens) + " out" +
      (typeof r.cost === "number" ? ", cost " + r.cost.toFixed(4) : "")));
  } else if (r.kind === "tool_call") {
    td.append(el("span", "tool", r.tool), " ");
    td.appendChild(el("span", "badge outcome " + (r.outcome === "ok" ? "ok" : "err"), r.outcome));
  } else if (r.kind === "context_guard") {
    td.appendChild(el("span", "note", r.provider + "/" + r.model + ": " + r.trigger + " " + r.outcome +
      " (" + r.projected_tokens + " of " + r.limit_tokens + " tokens)"));
  }
  return td;
}
function renderAccounting() {
  const all = state.acc.records;
  const shown = all.filter((r) => principalShown(r.caller)).reverse();
  $("accounting-count").textContent = shown.length + " of the last " + all.length;
  fillRows("accounting", shown.map((r) => {
    const tr = el("tr", "record " + r.kind);
    tr.dataset.id = r.id;
    tr.dataset.kind = r.kind;
    tr.appendChild(timeCell(r.time_ms));
    tr.appendChild(el("td", "principal", r.client ? r.caller + " via " + r.client : r.caller));
    tr.appendChild(el("td")).appendChild(el("span", "badge kind", r.kind));
    tr.appendChild(el("td")).appendChild(el("code", "session", r.session || ""));
    tr.appendChild(accountingDetail(r));
    return tr;
  }), all.length ? "no record of this principal" : "no record yet");
}

// ---- approvals -----------------------------------------------------------------
function renderApprovals(result) {
  const box = $("approvals");
  if (result.forbidden) {
    $("approvals-count").textContent = "";
    box.replaceChildren(el("div", "note forbidden", "this token is not an operator"));
    return;
  }
  if (result.error) { box.replaceChildren(errorBox(result.error)); return; }
  const list = result.approvals;
  $("approvals-count").textContent = String(list.length);
  if (!list.length) { box.replaceChildren(el("div", "note", "no call is waiting for an approval")); return; }
  const table = el("table", "approvals");
  const head = el("tr");
  for (const h of ["tool", "principal", "hints / policy", "input", "waiting", ""]) head.appendChild(el("th", null, h));
  table.appendChild(el("thead")).appendChild(head);
  const tbody = el("tbody");
  for (const a of list) {
    const tr = el("tr", "approval");
    tr.dataset.id = a.id;
    tr.dataset.tool = a.tool;
    tr.appendChild(el("td", "tool", a.tool));
    tr.appendChild(el("td", "principal", a.caller));
    const hints = el("td");
    for (const h of a.hints || []) hints.appendChild(el("span", "badge hint", h));
    if (a.policy) hints.appendChild(el("div", "note", a.policy));
    tr.appendChild(hints);
    const input = el("td");
    input.appendChild(el("code", "input", compact(a.input)));
    tr.appendChild(input);
    const left = Math.max(0, Math.round((a.expires_ms - Date.now()) / 1000));
    tr.appendChild(el("td", "note", Math.round((Date.now() - a.requested_ms) / 1000) + " s (" + left + " s left)"));
    const actions = el("td");
    const reason = el("input", "reason-input");
    reason.placeholder = "reason (optional)"; reason.size = 16;
    const approve = el("button", "primary approve", "Approve");
    const deny = el("button", "deny", "Deny");
    const out = el("div");
    approve.onclick = () => decide(a.id, true, reason.value, [approve, deny], out);
    deny.onclick = () => decide(a.id, false, reason.value, [approve, deny], out);
    actions.append(reason, " ", approve, " ", deny, out);
    tr.appendChild(actions);
    tbody.appendChild(tr);
  }
  table.appendChild(tbody);
  // Keep a reason being typed: only rebuild when the waiting calls change.
  const key = list.map((a) => a.id).join(",");
  if (box.dataset.key === key && box.querySelector("table")) {
    const rows = box.querySelectorAll("tr.approval");
    const fresh = tbody.querySelectorAll("tr.approval");
    rows.forEach((row, i) => { row.children[4].textContent = fresh[i].children[4].textContent; });
    return;
  }
  box.dataset.key = key;
  box.replaceChildren(table);
}
async function decide(id, approved, reason, buttons, out) {
  buttons.forEach((b) => { b.disabled = true; });
  const body = { approved };
  if (reason.trim()) body.reason = reason.trim();
  try {
    await api("/api/approvals/" + encodeURIComponent(id), body);
  } catch (e) {
    out.replaceChildren(e.status === 403 ? el("div", "error", "this token is not an operator") : errorBox(e));
    buttons.forEach((b) => { b.disabled = false; });
  }
  refresh();
}

