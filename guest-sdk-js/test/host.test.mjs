// The host wrapper: log and call through a bound (here fake) host import.
import { test } from "node:test";
import assert from "node:assert/strict";
import { bindHost, log, call, revealSecret, CallError, Failed } from "../index.js";

/** A fake of what componentize-js binds: records calls, answers from `reply`. */
function fakeHost(reply) {
  const seen = { logs: [], calls: [] };
  return {
    seen,
    log: (level, message) => seen.logs.push([level, message]),
    call: (tool, inputJson) => {
      seen.calls.push([tool, inputJson]);
      return reply(tool, inputJson);
    },
  };
}

/** Runs `fn` with `host` bound, restoring the previous binding after. */
function withHost(host, fn) {
  const previous = bindHost(host);
  try {
    return fn();
  } finally {
    bindHost(previous);
  }
}

test("log passes level and text to the host and checks the level", () => {
  const host = fakeHost();
  withHost(host, () => {
    log("info", "hello");
    log("warn", 42);
    assert.throws(() => log("verbose", "x"), /log level must be one of trace, debug, info, warn, error/);
  });
  assert.deepEqual(host.seen.logs, [["info", "hello"], ["warn", "42"]]);
});

test("call sends exact JSON and parses the output exactly", () => {
  const host = fakeHost(() => '{"sum": 18446744073709551615}');
  const out = withHost(host, () => call("calc.add", { a: 9223372036854775807n, b: -1 }));
  assert.deepEqual(host.seen.calls, [["calc.add", '{"a":9223372036854775807,"b":-1}']]);
  assert.deepEqual(out, { sum: 18446744073709551615n });
});

test("a failed nested call throws CallError with the hub's code (mapped to failed)", () => {
  const host = fakeHost(() => {
    const e = new Error("see payload");
    Object.defineProperty(e, "payload", { value: { code: "timeout", message: "deadline passed" } });
    throw e;
  });
  let caught;
  withHost(host, () => {
    try {
      call("slow.op", {});
    } catch (e) {
      caught = e;
    }
  });
  assert.ok(caught instanceof CallError && caught instanceof Failed, `got ${caught}`);
  assert.equal(caught.code, "timeout");
  assert.equal(caught.tool, "slow.op");
  assert.deepEqual(caught.payload, { tag: "failed", val: "slow.op failed (timeout): deadline passed" });
});

test("without a host, call fails clearly", () => {
  withHost(null, () => {
    assert.throws(() => call("x.y", {}), /cannot call x.y: no host is bound/);
  });
});

test("revealSecret returns the host's value and turns a refusal into Failed", () => {
  const host = {
    revealSecret: (name) => {
      if (name === "signing_key") return "s3cret";
      throw Object.assign(new Error("component error"), { payload: "not declared with reveal = true" });
    },
  };
  withHost(host, () => {
    assert.equal(revealSecret("signing_key"), "s3cret");
    assert.throws(() => revealSecret("other"), (e) => e instanceof Failed && e.message === "secret other: not declared with reveal = true");
  });
  assert.throws(() => revealSecret("signing_key"), /secret signing_key: no host is bound/);
});
