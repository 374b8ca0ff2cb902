// Exact JSON: 64-bit round trips, BigInt only past 2^53, strict syntax errors.
import { test } from "node:test";
import assert from "node:assert/strict";
import { parseJson, stringifyJson, InvalidInput } from "../index.js";

const EXTREMES = ["9223372036854775807", "-9223372036854775808", "18446744073709551615"];

test("64-bit extremes parse to exact BigInt and write back digit for digit", () => {
  for (const digits of EXTREMES) {
    const value = parseJson(`{"n":${digits}}`).n;
    assert.equal(typeof value, "bigint");
    assert.equal(value, BigInt(digits));
    assert.equal(stringifyJson({ n: value }), `{"n":${digits}}`);
  }
});

test("safe integers and fractions stay Numbers; the boundary is 2^53 - 1", () => {
  assert.deepEqual(parseJson("[9007199254740991, -9007199254740991, 1.5, 0, -0.25]"), [
    9007199254740991, -9007199254740991, 1.5, 0, -0.25,
  ]);
  assert.equal(parseJson("9007199254740992"), 9007199254740992n);
  assert.equal(parseJson("-9007199254740992"), -9007199254740992n);
});

test("integers written with an exponent or a zero fraction are exact too", () => {
  assert.equal(parseJson("9.223372036854775807e18"), 9223372036854775807n);
  assert.equal(parseJson("1E19"), 10000000000000000000n);
  assert.equal(parseJson("18446744073709551615.000"), 18446744073709551615n);
  assert.equal(parseJson("1.5e1"), 15);
  assert.equal(parseJson("1.00000000000000000001e20"), 100000000000000000001n);
});

test("strings, escapes, nesting and literals decode like JSON.parse", () => {
  const text = String.raw`{"s":"a\"b\\c\/\n\u00e9\ud83d\ude00","t":[true,false,null],"o":{"k":{}}, "e":[] }`;
  assert.deepEqual(parseJson(text), JSON.parse(text));
});

test("__proto__ is an ordinary key, not a prototype change", () => {
  const value = parseJson('{"__proto__": {"polluted": 1}}');
  assert.equal(Object.getPrototypeOf(value), Object.prototype);
  assert.deepEqual(Object.keys(value), ["__proto__"]);
  assert.equal({}.polluted, undefined);
});

test("malformed JSON is InvalidInput naming the offset", () => {
  const cases = [
    ["{", /expected a string key, but the input ended at offset 1/],
    ['{"a":1,}', /expected a string key at offset 7/],
    ["[1 2]", /expected "," at offset 3/],
    ["01", /unexpected text after the JSON value at offset 1/],
    ['"a\tb"', /control character in string at offset 2/],
    ['"\\x"', /bad escape at offset 1/],
    ["nul", /unexpected "n" at offset 0/],
    ["", /expected a value, but the input ended at offset 0/],
    ['"abc', /unterminated string, but the input ended at offset 4/],
  ];
  for (const [text, message] of cases) {
    assert.throws(() => parseJson(text), (e) => e instanceof InvalidInput && message.test(e.message), text);
  }
});

test("nesting past the depth limit is refused, not a stack overflow", () => {
  assert.throws(() => parseJson("[".repeat(10000)), /nesting deeper than 256/);
});

test("stringify matches JSON.stringify on ordinary values", () => {
  const value = { a: [1, "x", null, undefined, () => 1], b: undefined, c: { d: -0, e: 1e21, f: "é\u2028" }, g: new Date(0) };
  assert.equal(stringifyJson(value), JSON.stringify(value));
});

test("stringify refuses NaN and Infinity instead of writing null", () => {
  assert.throws(() => stringifyJson({ x: NaN }), /NaN has no JSON form \(at "x"\)/);
  assert.throws(() => stringifyJson([Infinity]), /Infinity has no JSON form/);
});
