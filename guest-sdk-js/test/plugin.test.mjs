// definePlugin: list() specs as the WIT bindings read them, dispatch, error mapping.
import { test } from "node:test";
import assert from "node:assert/strict";
import { definePlugin, s, InvalidInput, NotFound, Forbidden, Failed, checkExamples } from "../index.js";

const plugin = definePlugin({
  instructions: "Integers are exact.",
  operations: {
    add: {
      description: "Add two 64-bit integers exactly.",
      input: s.object({ a: s.int64("first addend"), b: s.int64() }),
      output: s.object({ sum: s.int64() }),
      hints: ["read_only", "idempotent"],
      examples: [
        { description: "Adds small numbers.", input: { a: 2, b: 40 }, output: { sum: 42 } },
        { description: "Keeps every digit.", input: { a: 9223372036854775806n, b: 1 }, output: { sum: 9223372036854775807n } },
      ],
      run: ({ a, b }) => {
        const sum = a + b;
        if (sum > 2n ** 63n - 1n || sum < -(2n ** 63n)) throw new InvalidInput("the sum overflows int64");
        return { sum };
      },
    },
    echo: {
      description: "Return the input object unchanged.",
      input: { type: "object", properties: { x: {} } },
      hints: ["read-only", "open-world", "destructive"],
      examples: [{ description: "Anything goes.", input: { x: 18446744073709551615n } }],
      run: (input) => input,
    },
    fail: {
      description: "Fail the way the input says.",
      input: s.object({ how: s.enum(["not_found", "forbidden", "failed", "type_error", "string", "async", "nan", "nothing"]) }),
      run: ({ how }) => {
        if (how === "not_found") throw new NotFound("no such thing");
        if (how === "forbidden") throw new Forbidden("not granted");
        if (how === "failed") throw new Failed("it broke");
        if (how === "type_error") return null.x;
        if (how === "string") throw "plain string";
        if (how === "async") return Promise.reject(new NotFound("later"));
        if (how === "nan") return { x: NaN };
        return undefined;
      },
    },
    later: {
      description: "Answer asynchronously.",
      input: s.object({}),
      run: async () => ({ n: 2n ** 64n - 1n }),
    },
  },
});

test("instructions and list() specs carry what the WIT record needs", () => {
  assert.equal(plugin.instructions(), "Integers are exact.");
  const [add, echo, fail] = plugin.list();
  assert.equal(add.name, "add");
  assert.equal(add.description, "Add two 64-bit integers exactly.");
  const input = JSON.parse(add.inputSchema);
  assert.equal(input.$schema, "https://json-schema.org/draft/2020-12/schema");
  assert.equal(input.type, "object");
  assert.deepEqual(input.required, ["a", "b"]);
  assert.match(add.inputSchema, /"maximum":9223372036854775807/);
  assert.equal(JSON.parse(add.outputSchema).properties.sum.format, "int64");
  assert.deepEqual(add.hints, { readOnly: true, destructive: false, idempotent: true, openWorld: false });
  assert.deepEqual(echo.hints, { readOnly: true, destructive: true, idempotent: false, openWorld: true });
  assert.equal(echo.outputSchema, undefined);
  assert.equal(echo.inputSchema, '{"type":"object","properties":{"x":{}}}');
  assert.deepEqual(fail.examples, []);
});

test("examples become JSON text, 64-bit values exact, a missing output as none", () => {
  const [add, echo] = plugin.list();
  assert.deepEqual(add.examples, [
    { description: "Adds small numbers.", input: '{"a":2,"b":40}', output: '{"sum":42}' },
    { description: "Keeps every digit.", input: '{"a":9223372036854775806,"b":1}', output: '{"sum":9223372036854775807}' },
  ]);
  assert.deepEqual(echo.examples, [{ description: "Anything goes.", input: '{"x":18446744073709551615}', output: undefined }]);
});

test("call round-trips 64-bit extremes exactly", () => {
  assert.equal(plugin.call("add", '{"a": 9223372036854775806, "b": 1}'), '{"sum":9223372036854775807}');
  assert.equal(plugin.call("add", '{"a": -9223372036854775807, "b": -1}'), '{"sum":-9223372036854775808}');
  assert.equal(plugin.call("echo", '{"x": 18446744073709551615}'), '{"x":18446744073709551615}');
  assert.equal(plugin.call("echo", '{"x": [-9223372036854775808, 1.5]}'), '{"x":[-9223372036854775808,1.5]}');
});

/** The WIT error a call throws, as componentize-js reads it (the own `payload`). */
function witError(fn) {
  try {
    fn();
  } catch (e) {
    assert.ok(Object.prototype.hasOwnProperty.call(e, "payload"), `thrown value has no payload: ${e}`);
    return e.payload;
  }
  assert.fail("did not throw");
}

test("errors map onto the WIT error cases", () => {
  const fail = (how) => witError(() => plugin.call("fail", JSON.stringify({ how })));
  assert.deepEqual(fail("not_found"), { tag: "not-found", val: "no such thing" });
  assert.deepEqual(fail("forbidden"), { tag: "forbidden", val: "not granted" });
  assert.deepEqual(fail("failed"), { tag: "failed", val: "it broke" });
  assert.equal(fail("type_error").tag, "failed");
  assert.match(fail("type_error").val, /^TypeError: Cannot read properties of null/);
  assert.deepEqual(fail("string"), { tag: "failed", val: "plain string" });
  assert.deepEqual(fail("nan"), { tag: "failed", val: `the operation's output cannot be written as JSON: NaN has no JSON form (at "x")` });
  assert.deepEqual(fail("nothing"), { tag: "failed", val: "the operation returned no value (return a JSON value)" });
  assert.deepEqual(witError(() => plugin.call("add", '{"a": 9223372036854775807, "b": 1}')), {
    tag: "invalid-input",
    val: "the sum overflows int64",
  });
});

test("unknown operations, bad JSON and bad fields are typed errors", () => {
  assert.deepEqual(witError(() => plugin.call("nope", "{}")), {
    tag: "not-found",
    val: 'no operation "nope" in this plugin (it has: add, echo, fail, later)',
  });
  assert.deepEqual(witError(() => plugin.call("add", '{"a": 1,')), {
    tag: "invalid-input",
    val: "input is not valid JSON: expected a string key, but the input ended at offset 8",
  });
  assert.deepEqual(witError(() => plugin.call("add", '{"a": 1, "b": "2"}')), {
    tag: "invalid-input",
    val: 'input.b: expected an integer (int64), got a string "2"',
  });
  assert.deepEqual(witError(() => plugin.call("echo", "[]")), { tag: "invalid-input", val: "input: expected a JSON object" });
});

test("async operations resolve to JSON text and reject with a payload", async () => {
  assert.equal(await plugin.call("later", "{}"), '{"n":18446744073709551615}');
  await assert.rejects(plugin.call("fail", '{"how": "async"}'), (e) => {
    assert.deepEqual(e.payload, { tag: "not-found", val: "later" });
    return true;
  });
});

test("checkExamples runs every example and reports mismatches", async () => {
  assert.deepEqual(await checkExamples(plugin), []);
  const wrong = definePlugin({
    operations: {
      double: {
        description: "Double a number.",
        input: s.object({ n: s.integer() }),
        examples: [
          { description: "Right.", input: { n: 2 }, output: { n: 4 } },
          { description: "Wrong.", input: { n: 3 }, output: { n: 7 } },
        ],
        run: ({ n }) => ({ n: n * 2 }),
      },
    },
  });
  assert.deepEqual(await checkExamples(wrong), ['double example 1 (Wrong.): got {"n":6}, expected {"n":7}']);
});

test("definePlugin refuses malformed tables with the reason", () => {
  const op = { description: "d", input: s.object({}), run: () => ({}) };
  const bad = (operations, extra = {}) => () => definePlugin({ operations, ...extra });
  assert.throws(bad({ "Bad-Name": op }), /operation "Bad-Name": names must match/);
  assert.throws(bad({ x: { ...op, description: "" } }), /needs a description/);
  assert.throws(bad({ x: { ...op, run: undefined } }), /needs a run\(input\) function/);
  assert.throws(bad({ x: { ...op, input: s.string() } }), /root must be "type": "object"/);
  assert.throws(bad({ x: { ...op, hints: ["fast"] } }), /unknown hint "fast"/);
  assert.throws(bad({ x: { ...op, examples: [{ description: "e", input: { y: 1 } }] } }), /example 0: input does not match the input schema: input.y: unknown field/);
  assert.throws(bad({}), /at least one operation/);
  assert.throws(bad({ x: op }, { instructions: "x".repeat(9000) }), /longer than 8192 bytes/);
  assert.equal(definePlugin({ operations: { x: op } }).instructions(), undefined);
});
