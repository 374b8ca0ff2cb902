// Many clients call `hub_call` (calc.eval) at once through the balancer: the calls
// run on every replica, and the audit log read from each replica (`GET /api/calls`)
// holds exactly one record per call, the same records everywhere.

import { test } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import { LB, REPLICAS, TOKEN, getJSON, until } from "./lib.mjs";

const CLIENTS = 16;
const CALLS_EACH = 16;

/// POSTs `body` as JSON to `url` over `agent` (one client's own connections);
/// resolves to `{ status, replica, body }`.
function post(agent, url, body) {
  return new Promise((resolve, reject) => {
    const data = JSON.stringify(body);
    const req = http.request(url, {
      method: "POST",
      agent,
      headers: { "content-type": "application/json", "content-length": Buffer.byteLength(data), authorization: `Bearer ${TOKEN}` },
    }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (piece) => { text += piece; });
      res.on("end", () => resolve({ status: res.statusCode, replica: res.headers["x-served-by"], body: JSON.parse(text) }));
    });
    req.on("error", reject);
    req.end(data);
  });
}

test(`${CLIENTS} clients x ${CALLS_EACH} hub_calls: one audit record per call, readable from every replica`, async () => {
  const run = 100000 + Math.floor(Math.random() * 900000);
  const expression = (n) => `(${run}+${n})-${run}`;
  const served = [];
  await Promise.all(Array.from({ length: CLIENTS }, async (_, client) => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      for (let i = 0; i < CALLS_EACH; i++) {
        const n = client * CALLS_EACH + i;
        const r = await post(agent, `${LB}/api/hub/call`, { calls: [{ tool: "calc.eval", input: { expression: expression(n) } }] });
        assert.equal(r.status, 200, JSON.stringify(r.body));
        const [result] = r.body.results;
        assert.ok(result.ok, JSON.stringify(result));
        assert.equal(result.result.decimal, String(n));
        served.push(r.replica);
      }
    } finally {
      agent.destroy();
    }
  }));
  const total = CLIENTS * CALLS_EACH;
  assert.equal(served.length, total);
  const perReplica = Object.fromEntries(REPLICAS.map((r) => [r.name, served.filter((s) => s === r.name).length]));
  assert.ok(REPLICAS.every((r) => perReplica[r.name] > 0), `calls per replica: ${JSON.stringify(perReplica)}`);

  const expected = new Set(Array.from({ length: total }, (_, n) => expression(n)));
  const ours = (calls) => calls.filter((c) => typeof c.input?.expression === "string" && c.input.expression.endsWith(`-${run}`));
  let ids;
  for (const r of REPLICAS) {
    // Audit records are written in batches behind the calls: wait until they are all there.
    const records = await until(`${total} audit records on ${r.name}`, async () => {
      const found = ours((await getJSON(`${r.url}/api/calls?limit=1000`)).calls);
      assert.ok(found.length <= total, `${r.name}: ${found.length} records for ${total} calls`);
      return found.length === total ? found : null;
    }, 60);
    const byExpression = new Map();
    for (const c of records) byExpression.set(c.input.expression, (byExpression.get(c.input.expression) || 0) + 1);
    assert.deepEqual([...byExpression.keys()].sort(), [...expected].sort(), r.name);
    assert.ok([...byExpression.values()].every((n) => n === 1), `${r.name}: a call recorded twice`);
    assert.ok(records.every((c) => c.tool === "calc.eval" && c.outcome === "ok" && c.caller === "replicas"), r.name);
    const here = records.map((c) => c.id).sort();
    assert.equal(new Set(here).size, total, `${r.name}: record ids repeat`);
    if (ids) assert.deepEqual(here, ids, `${r.name} shows other records than ${REPLICAS[0].name}`);
    ids = here;
  }
});
