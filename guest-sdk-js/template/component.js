// The component entry componentize-js builds: binds the SDK to the real
// `wasmhub:plugin/host@0.2.0` import, then exports the operations. Only this file
// imports the host, so plugin.js stays loadable in plain Node for the tests.
import * as host from "wasmhub:plugin/host@0.2.0";
import { bindHost } from "./wasmhub-plugin/index.js";

bindHost(host);

export { operations } from "./plugin.js";
