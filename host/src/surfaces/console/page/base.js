"use strict";
// The console's script, part 1 of 5 (concatenated in this order into one inline
// script by console/mod.rs, so they share one scope): shared helpers, the token,
// the API client and its error box.
// Every piece of text from plugins, models and clients is set with textContent
// (through el()); nothing here parses strings as HTML.
const $ = (id) => document.getElementById(id);
const REFRESH_MS = 3000;
const SHOWN_MAX = 100;
const state = { token: "", schemas: new Map(), opsKey: null, secretsKey: null, prevSample: null, calls: [], outcomes: new Set(), sessions: [], acc: { next: null, records: [] } };

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = String(text);
  return e;
}
function pretty(v) {
  if (v === undefined) return "";
  try { return typeof v === "string" ? v : JSON.stringify(v, null, 2); } catch (_) { return String(v); }
}
function compact(v) {
  try { return typeof v === "string" ? v : JSON.stringify(v); } catch (_) { return String(v); }
}
// A time cell: the time of day (with the date when it is not today), the exact time as its title.
function timeCell(ms) {
  const when = new Date(ms);
  const td = el("td", "note time", when.toDateString() === new Date().toDateString() ? when.toLocaleTimeString() : when.toLocaleString());
  td.title = when.toISOString();
  return td;
}
function formatBytes(n) {
  if (typeof n !== "number") return "";
  if (n < 1024) return n + " B";
  return n < 1048576 ? (n / 1024).toFixed(1) + " KiB" : (n / 1048576).toFixed(1) + " MiB";
}
// The principal filter (in the header) applies to calls, sessions and accounting.
function principalShown(principal) {
  const f = $("f-caller").value.trim().toLowerCase();
  return !f || String(principal).toLowerCase().includes(f);
}
// Fills a table's body with `rows`, or one row saying `empty`.
function fillRows(id, rows, empty) {
  const table = $(id);
  if (!rows.length) {
    const td = el("td", "note empty", empty);
    td.colSpan = table.tHead.rows[0].cells.length;
    rows = [el("tr", "empty")];
    rows[0].appendChild(td);
  }
  table.tBodies[0].replaceChildren(...rows);
}
function setStatus(text, isError) {
  $("status").textContent = text;
  $("status").className = isError ? "error" : "";
}

// ---- the token ---------------------------------------------------------------
// The page's bearer token: from the URL fragment (#token=...; removed from the
// address bar at once) or the field, kept in sessionStorage for this tab. With no
// tokens configured, loopback clients need none.
function loadToken() {
  const m = /(?:^#|&)token=([^&]*)/.exec(location.hash);
  if (m) {
    sessionStorage.setItem("wasmhub.token", decodeURIComponent(m[1]));
    history.replaceState(null, "", location.pathname + location.search);
  }
  state.token = sessionStorage.getItem("wasmhub.token") || "";
  $("token").value = state.token;
}
$("token").onchange = () => {
  state.token = $("token").value.trim();
  if (state.token) sessionStorage.setItem("wasmhub.token", state.token);
  else sessionStorage.removeItem("wasmhub.token");
  state.schemas.clear(); state.opsKey = null;
  state.acc = { next: null, records: [] };
  refresh();
};

// ---- the API -------------------------------------------------------------------
class ApiError extends Error {
  constructor(status, body) {
    const err = body && body.error ? body.error : null;
    super(err && err.message ? err.message : ("HTTP " + status));
    this.status = status; this.code = err ? err.code : null; this.violations = err ? err.violations : null;
  }
}
async function api(path, body, method) {
  const headers = {};
  if (state.token) headers.authorization = "Bearer " + state.token;
  const init = { headers, cache: "no-store" };
  if (body !== undefined) { init.method = "POST"; headers["content-type"] = "application/json"; init.body = JSON.stringify(body); }
  if (method) init.method = method;
  const r = await fetch(path, init);
  const text = await r.text();
  let json = null;
  try { json = text ? JSON.parse(text) : null; } catch (_) { if (r.ok && !path.startsWith("/metrics")) throw new ApiError(r.status, null); }
  if (!r.ok) throw new ApiError(r.status, json);
  return json === null ? text : json;
}
function errorBox(e) {
  const box = el("div", "error");
  box.appendChild(el("strong", null, (e.code || "error") + (e.status ? " (HTTP " + e.status + ")" : "") + ": "));
  box.appendChild(document.createTextNode(e.message || String(e)));
  if (e.violations && e.violations.length) {
    const ul = el("ul", "violations");
    for (const v of e.violations) {
      const li = el("li");
      li.appendChild(el("code", null, v.path === "" ? "/" : v.path));
      li.appendChild(document.createTextNode(" " + v.message));
      ul.appendChild(li);
    }
    box.appendChild(ul);
  }
  return box;
}

