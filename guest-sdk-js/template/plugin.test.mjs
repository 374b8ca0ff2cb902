// Tests of the {{name}} operations in plain Node (no component needed): `npm test`.
import { test } from "node:test";
import assert from "node:assert/strict";
import { bindConfig, checkExamples, fakeStore } from "./wasmhub-plugin/index.js";
import { operations } from "./plugin.js";

test("every declared example holds", async () => {
  assert.deepEqual(await checkExamples(operations), []);
});

test("repeat joins copies with the separator", () => {
  assert.equal(operations.call("repeat", '{"text": "ab", "times": 3, "separator": ", "}'), '{"text":"ab, ab, ab"}');
  assert.equal(operations.call("repeat", '{"text": "ab", "times": 0}'), '{"text":""}');
});

test("without a separator in the input, the operator's one is used", () => {
  const previous = bindConfig(fakeStore({ separator: "+" }));
  try {
    assert.equal(operations.call("repeat", '{"text": "ab", "times": 3}'), '{"text":"ab+ab+ab"}');
  } finally {
    bindConfig(previous);
  }
});

test("bad input is reported with its field", () => {
  assert.throws(() => operations.call("repeat", '{"text": "ab", "times": "3"}'), (e) => {
    assert.deepEqual(e.payload, { tag: "invalid-input", val: 'input.times: expected an integer, got a string "3"' });
    return true;
  });
  assert.throws(() => operations.call("repeat", JSON.stringify({ text: "x".repeat(1000), times: 100 })), (e) => {
    assert.equal(e.payload.tag, "invalid-input");
    return true;
  });
});
