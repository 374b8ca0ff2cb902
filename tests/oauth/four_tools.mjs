// What every client of the OAuth suite does once connected: lists the hub's four
// meta-tools and calls calc.eval through hub_call (6*7), asserting both.
import { assert } from "../lib/checks.mjs";

/** Lists the four tools and calls calc.eval with the connected MCP SDK `client`. */
export async function listAndCall(client) {
  const names = (await client.listTools()).tools.map((t) => t.name).sort();
  assert(JSON.stringify(names) === JSON.stringify(["hub_call", "hub_list", "hub_schema", "hub_search"]), names);
  const out = await client.callTool({ name: "hub_call", arguments: { calls: [{ tool: "calc.eval", input: { expression: "6*7" } }] } });
  const text = out.content.map((c) => c.text || "").join("");
  assert(text.includes("42"), text);
}
