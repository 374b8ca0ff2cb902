// The SDK's side of the `wasmhub:plugin/host@0.3.0` import: `log`, `call` and
// `revealSecret`, reached through whatever `bindHost` was given.
//
// The import itself lives only in the component entry (`component.js`), which
// calls `bindHost` with the real bindings; this module never imports it, so the
// SDK and a plugin's operations also load in plain Node for unit tests, where a
// test may bind a fake host instead.

import { Failed } from "./errors.js";
import { parse, stringify } from "./json.js";

const LEVELS = new Set(["trace", "debug", "info", "warn", "error"]);

let boundHost = null;

/**
 * Binds the host import (an object with `log(level, message)`,
 * `call(tool, inputJson)` and `revealSecret(name)` as componentize-js provides it).
 * Returns the previous binding so a test can restore it.
 */
export function bindHost(host) {
  const previous = boundHost;
  boundHost = host;
  return previous;
}

/**
 * Writes one line to the hub's log, tagged with the plugin and the call.
 * Outside a component (no host bound) the line goes to stderr.
 */
export function log(level, message) {
  if (!LEVELS.has(level)) {
    throw new TypeError(`log level must be one of ${[...LEVELS].join(", ")}, got ${JSON.stringify(level)}`);
  }
  const text = typeof message === "string" ? message : String(message);
  if (boundHost) boundHost.log(level, text);
  else console.error(`[${level}] ${text}`);
}

/** A nested call that failed; `code` is the hub's call-error code (`timeout`, `not-found`, ...). */
export class CallError extends Failed {
  constructor(tool, code, message) {
    super(`${tool} failed (${code}): ${message}`);
    this.tool = tool;
    this.code = code;
    this.detail = message;
  }
}

/**
 * Calls another operation (`plugin.operation`) through the hub with `input` (a
 * value, serialized exactly) and returns its parsed output (large integers as
 * BigInt). A failure throws CallError, which reaches the model as `failed` unless
 * the operation catches it.
 */
export function call(tool, input) {
  if (!boundHost) throw new Failed(`cannot call ${tool}: no host is bound (outside a component, bind one with bindHost)`);
  let output;
  try {
    output = boundHost.call(tool, stringify(input));
  } catch (e) {
    const err = e && Object.prototype.hasOwnProperty.call(e, "payload") ? e.payload : e;
    if (err && typeof err.code === "string") throw new CallError(tool, err.code, err.message);
    throw e;
  }
  return parse(output);
}

/**
 * The value of this plugin's secret `name`, declared `reveal = true` in its manifest
 * (`[secrets.NAME]`) and allowed by the operator (`allow_reveal`). Most plugins never
 * need it: an `inject` secret is added by the hub to requests to its declared host.
 * The hub scrubs a revealed value from everything the call returns or logs. Throws
 * Failed saying why there is none (not declared for reveal, not allowed, unset).
 */
export function revealSecret(name) {
  if (!boundHost) throw new Failed(`secret ${name}: no host is bound (outside a component, bind one with bindHost)`);
  try {
    return boundHost.revealSecret(name);
  } catch (e) {
    const why = e && Object.prototype.hasOwnProperty.call(e, "payload") ? e.payload : e;
    throw new Failed(`secret ${name}: ${why}`);
  }
}
