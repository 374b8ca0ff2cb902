// wasmhub-plugin: the JavaScript SDK for wasmhub plugins (WIT wasmhub:plugin@0.3.0).
// Everything an author imports comes from here; see README.md for the whole path.
//
// This module and everything it imports are plain ES modules without the
// component's imports, so plugins load in plain Node for unit tests; the
// component entry binds the real host with `bindHost` and the configuration store
// with `bindConfig`.

export { definePlugin } from "./lib/plugin.js";
export { s, Shape, WIDE_INTEGER_NOTE } from "./lib/schema.js";
export { PluginError, InvalidInput, NotFound, Forbidden, Failed } from "./lib/errors.js";
export { log, call, revealSecret, bindHost, CallError } from "./lib/host.js";
export { config, bindConfig, fakeStore } from "./lib/config.js";
export { parse as parseJson, stringify as stringifyJson } from "./lib/json.js";
export { checkExamples, sameJson } from "./lib/examples.js";
