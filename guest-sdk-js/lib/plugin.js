// definePlugin: turns a table of operations into the object componentize-js
// exports as `wasmhub:plugin/operations@0.2.0` (`instructions`, `list`, `call`),
// checking the table once at definition so mistakes fail the build (or the unit
// test), not the first call from a model.

import { InvalidInput, NotFound, toPluginError } from "./errors.js";
import { parse, stringify } from "./json.js";
import { isShape, rootSchema } from "./schema.js";

const NAME = /^[a-z][a-z0-9_]*$/;
const MAX_NAME_BYTES = 64;
const MAX_INSTRUCTIONS_BYTES = 8192;
const MAX_EXAMPLE_INPUT_BYTES = 16384;

/** Hint names (snake_case as in the Rust SDK, kebab-case as in the WIT) to WIT flag fields. */
const HINTS = {
  read_only: "readOnly",
  "read-only": "readOnly",
  destructive: "destructive",
  idempotent: "idempotent",
  open_world: "openWorld",
  "open-world": "openWorld",
};

/**
 * Builds the `operations` export from
 * `{ instructions?, operations: { name: { description, input, output?, hints?, examples?, run } } }`.
 * `input`/`output` are `s.*` shapes or plain JSON Schema objects.
 */
export function definePlugin(definition) {
  if (typeof definition !== "object" || definition === null) throw new TypeError("definePlugin takes an object");
  const instructions = checkInstructions(definition.instructions);
  const table = definition.operations;
  if (typeof table !== "object" || table === null || Object.keys(table).length === 0) {
    throw new TypeError("definePlugin: `operations` must be an object with at least one operation");
  }
  const ops = new Map(Object.entries(table).map(([name, op]) => [name, prepare(name, op)]));
  const specs = [...ops.values()].map((op) => op.spec);
  return {
    instructions: () => instructions,
    list: () => specs,
    call: (name, inputJson) => dispatch(ops, name, inputJson),
  };
}

function checkInstructions(text) {
  if (text === undefined || text === null) return undefined;
  if (typeof text !== "string") throw new TypeError("definePlugin: `instructions` must be a string");
  if (utf8Length(text) > MAX_INSTRUCTIONS_BYTES) {
    throw new TypeError(`definePlugin: \`instructions\` is longer than ${MAX_INSTRUCTIONS_BYTES} bytes (the host keeps only that much)`);
  }
  return text.trim() === "" ? undefined : text;
}

function utf8Length(text) {
  return new TextEncoder().encode(text).length;
}

/** One operation checked and compiled: its WIT spec, input decoder and runner. */
function prepare(name, op) {
  const where = `operation "${name}"`;
  if (!NAME.test(name) || utf8Length(name) > MAX_NAME_BYTES) {
    throw new TypeError(`${where}: names must match [a-z][a-z0-9_]* and be at most ${MAX_NAME_BYTES} bytes`);
  }
  if (typeof op !== "object" || op === null) throw new TypeError(`${where}: must be an object`);
  if (typeof op.description !== "string" || op.description.trim() === "") {
    throw new TypeError(`${where}: needs a description (written for a language model)`);
  }
  if (typeof op.run !== "function") throw new TypeError(`${where}: needs a run(input) function`);
  const input = inputSchema(where, op.input);
  const decode = isShape(op.input) ? (value) => op.input.decode(value, "input") : decodePlainObject;
  const examples = (op.examples ?? []).map((ex, i) => example(`${where} example ${i}`, ex, decode));
  const spec = {
    name,
    description: op.description,
    inputSchema: stringify(input),
    outputSchema: op.output === undefined ? undefined : stringify(schemaOf(op.output)),
    hints: hintFlags(where, op.hints ?? []),
    examples,
  };
  return { spec, decode, run: op.run };
}

function inputSchema(where, input) {
  if (input === undefined) throw new TypeError(`${where}: needs an input schema (s.object({...}) or a JSON Schema object)`);
  const schema = schemaOf(input);
  if (schema.type !== "object") throw new TypeError(`${where}: the input schema's root must be "type": "object"`);
  return schema;
}

/** A Shape's root schema, or a plain JSON Schema object as given. */
function schemaOf(value) {
  if (isShape(value)) return rootSchema(value);
  if (typeof value === "object" && value !== null && !Array.isArray(value)) return value;
  throw new TypeError(`a schema must be built with s.* or be a JSON Schema object, got ${typeof value}`);
}

/** Input under a plain JSON Schema: the host validated it; only the root is re-checked. */
function decodePlainObject(value) {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new InvalidInput("input: expected a JSON object");
  }
  return value;
}

function hintFlags(where, hints) {
  if (!Array.isArray(hints)) throw new TypeError(`${where}: hints must be an array like ["read_only", "idempotent"]`);
  const flags = { readOnly: false, destructive: false, idempotent: false, openWorld: false };
  for (const hint of hints) {
    if (!(hint in HINTS)) {
      throw new TypeError(`${where}: unknown hint ${JSON.stringify(hint)} (use read_only, destructive, idempotent, open_world)`);
    }
    flags[HINTS[hint]] = true;
  }
  return flags;
}

/**
 * A worked example as the WIT record: input and output as JSON text. Its input
 * must decode under the operation's schema now, so a wrong example fails the
 * build instead of the hub's load-time verification. An example without `output`
 * (or with `output: undefined`) declares no fixed output.
 */
function example(where, ex, decode) {
  if (typeof ex !== "object" || ex === null) throw new TypeError(`${where}: must be an object`);
  if (typeof ex.description !== "string" || ex.description.trim() === "") {
    throw new TypeError(`${where}: needs a one-sentence description`);
  }
  const input = stringify(ex.input);
  if (utf8Length(input) > MAX_EXAMPLE_INPUT_BYTES) {
    throw new TypeError(`${where}: input is longer than ${MAX_EXAMPLE_INPUT_BYTES} bytes`);
  }
  try {
    decode(parse(input));
  } catch (e) {
    throw new TypeError(`${where}: input does not match the input schema: ${e.message}`);
  }
  const output = ex.output === undefined ? undefined : stringify(ex.output);
  return { description: ex.description, input, output };
}

/**
 * `call`: find, decode, run, encode. Every failure leaves as a PluginError (its
 * `payload` is the WIT error); an async `run` yields a promise, which
 * componentize-js awaits.
 */
function dispatch(ops, name, inputJson) {
  const op = ops.get(name);
  if (!op) {
    throw new NotFound(`no operation ${JSON.stringify(name)} in this plugin (it has: ${[...ops.keys()].join(", ")})`);
  }
  let result;
  try {
    result = op.run(op.decode(parse(inputJson)));
  } catch (e) {
    throw toPluginError(e);
  }
  if (result !== null && typeof result === "object" && typeof result.then === "function") {
    return result.then(encodeOutput, (e) => {
      throw toPluginError(e);
    });
  }
  return encodeOutput(result);
}

function encodeOutput(value) {
  let text;
  try {
    text = stringify(value);
  } catch (e) {
    throw toPluginError(new Error(`the operation's output cannot be written as JSON: ${e.message}`));
  }
  if (text === undefined) throw toPluginError(new Error("the operation returned no value (return a JSON value)"));
  return text;
}
