// The component entry componentize-js builds: binds the SDK to the real
// `wasmhub:plugin/host@0.3.0` and `wasi:config/store` imports, then exports the
// operations. Only this file imports them, so plugin.js stays loadable in plain
// Node for the tests.
import * as host from "wasmhub:plugin/host@0.3.0";
import * as store from "wasi:config/store@0.2.0-draft";
import { bindConfig, bindHost } from "./wasmhub-plugin/index.js";

bindHost(host);
bindConfig(store);

export { operations } from "./plugin.js";
