// Part 5 of 5: the refresh loop over every panel, OAuth sign-in codes, start-up.
// ---- refresh -------------------------------------------------------------------
let running = null, again = false;
function refresh() {
  if (running) { again = true; return running; }
  running = refreshOnce().finally(() => {
    running = null;
    if (again) { again = false; refresh(); }
  });
  return running;
}
async function refreshOnce() {
  const limit = $("f-limit").value;
  const settled = await Promise.allSettled([
    api("/api/plugins"),
    api("/api/hub/list", {}),
    api("/api/calls?limit=" + encodeURIComponent(limit)),
    api("/api/approvals"),
    api("/metrics"),
    api("/api/sessions"),
    fetchAccounting(),
    api("/api/mcp-servers"),
    api("/api/agents"),
  ]);
  const [plugins, list, calls, approvals, metrics, sessions, accounting, servers, agents] = settled;
  const failed = settled.filter((s, i) => s.status === "rejected" && !(i === 3 && s.reason.status === 403));
  if (plugins.status === "fulfilled") { renderPlugins(plugins.value.plugins); renderSecrets(plugins.value.plugins); }
  if (servers.status === "fulfilled") renderServers(servers.value.servers);
  if (list.status === "fulfilled") await renderOperations(list.value);
  if (calls.status === "fulfilled") { state.calls = calls.value.calls; updateOutcomeFilter(); renderCalls(); }
  if (approvals.status === "fulfilled") renderApprovals({ approvals: approvals.value.approvals });
  else renderApprovals(approvals.reason.status === 403 ? { forbidden: true } : { error: approvals.reason });
  if (metrics.status === "fulfilled") renderMetrics(metrics.value);
  if (sessions.status === "fulfilled") { state.sessions = sessions.value.sessions; renderSessions(); }
  if (accounting.status === "fulfilled") renderAccounting();
  if (agents.status === "fulfilled") renderAgents(agents.value);
  if (failed.length) {
    const e = failed[0].reason;
    const hint = e.status === 401 ? " (set the token above)" : "";
    setStatus("refresh failed: " + (e.message || String(e)) + hint, true);
  } else {
    setStatus("updated " + new Date().toLocaleTimeString());
  }
}

// ---- OAuth sign-in codes ---------------------------------------------------------
async function createSigninCode() {
  const out = $("signin-out");
  const principal = $("signin-principal").value.trim();
  if (!principal) { out.replaceChildren(el("div", "error", "name a principal (a configured token's name)")); return; }
  $("signin-create").disabled = true;
  try {
    const r = await api("/api/oauth/signin-codes", { principal });
    const box = el("div");
    box.appendChild(document.createTextNode("sign-in code for " + r.principal + " (once, within " + r.expires_in + " s): "));
    box.appendChild(el("code", "signin-code", r.code));
    out.replaceChildren(box);
  } catch (e) {
    if (e.status === 403) out.replaceChildren(el("div", "error", "this token is not an operator"));
    else if (e.status === 404) out.replaceChildren(el("div", "error", "the hub's built-in OAuth server is off ([oauth] builtin = true)"));
    else out.replaceChildren(errorBox(e));
  } finally {
    $("signin-create").disabled = false;
  }
}
$("signin-create").onclick = () => createSigninCode();
$("refresh").onclick = () => refresh();
loadToken();
refresh();
setInterval(() => { if (!document.hidden) refresh(); }, REFRESH_MS);
