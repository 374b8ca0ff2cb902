// checkExamples: runs every declared example through the plugin's own `call` and
// compares outputs as JSON values, the check `wasmhub plugin test` and the hub's
// load-time verification make, so a plugin's unit tests catch a wrong example
// before the component is even built.

import { parse } from "./json.js";

/**
 * Runs the examples of every operation of `operations` (a definePlugin result).
 * Resolves to a list of problems, one readable line each; empty when all pass.
 */
export async function checkExamples(operations) {
  const problems = [];
  for (const spec of operations.list()) {
    for (const [i, ex] of spec.examples.entries()) {
      const problem = await runExample(operations, spec.name, ex);
      if (problem) problems.push(`${spec.name} example ${i} (${ex.description}): ${problem}`);
    }
  }
  return problems;
}

async function runExample(operations, name, ex) {
  let output;
  try {
    output = await operations.call(name, ex.input);
  } catch (e) {
    const err = e?.payload ?? { tag: "thrown", val: String(e) };
    return `failed with ${err.tag}: ${err.val}`;
  }
  if (ex.output === undefined) return null;
  return sameJson(parse(output), parse(ex.output)) ? null : `got ${output}, expected ${ex.output}`;
}

/** JSON value equality: object key order ignored, numbers compared exactly. */
export function sameJson(a, b) {
  if (isInteger(a) && isInteger(b)) return BigInt(a) === BigInt(b);
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return a === b;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a);
  if (ka.length !== Object.keys(b).length) return false;
  return ka.every((k) => Object.prototype.hasOwnProperty.call(b, k) && sameJson(a[k], b[k]));
}

function isInteger(v) {
  return typeof v === "bigint" || Number.isInteger(v);
}
