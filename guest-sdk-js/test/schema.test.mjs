// The schema helper: derived JSON Schema (draft 2020-12) and decoding with field paths.
import { test } from "node:test";
import assert from "node:assert/strict";
import { s, parseJson, stringifyJson, InvalidInput, WIDE_INTEGER_NOTE } from "../index.js";

/** The schema as the host receives it: JSON text, parsed back. */
const wire = (shape) => JSON.parse(stringifyJson(shape.schema));

const order = s.object({
  id: s.uint64("order id"),
  customer: s.object({ name: s.string({ description: "full name", minLength: 1, maxLength: 5 }), vip: s.optional(s.boolean()) }),
  items: s.array(s.object({ sku: s.string(), qty: s.int32({ minimum: 1, maximum: 99 }) }), { maxItems: 3 }),
  status: s.enum(["open", "paid"], "order state"),
  note: s.optional(s.nullable(s.string("free text")), null),
  ratio: s.optional(s.number({ minimum: 0, maximum: 1 })),
  count: s.optional(s.integer(), 10),
});

test("nested objects: properties, required (optionals left out), additionalProperties false", () => {
  const schema = wire(order);
  assert.equal(schema.type, "object");
  assert.equal(schema.additionalProperties, false);
  assert.deepEqual(schema.required, ["id", "customer", "items", "status"]);
  assert.deepEqual(schema.properties.customer, {
    type: "object",
    properties: {
      name: { type: "string", description: "full name", minLength: 1, maxLength: 5 },
      vip: { type: "boolean" },
    },
    additionalProperties: false,
    required: ["name"],
  });
  assert.deepEqual(schema.properties.items.items.required, ["sku", "qty"]);
  assert.equal(schema.properties.items.maxItems, 3);
});

test("enums, nullable and defaults", () => {
  const { status, note, count } = wire(order).properties;
  assert.deepEqual(status, { description: "order state", enum: ["open", "paid"], type: "string" });
  assert.deepEqual(note, { description: "free text", anyOf: [{ type: "string" }, { type: "null" }], default: null });
  assert.equal(count.default, 10);
  assert.deepEqual(s.enum([1, 2]).schema, { enum: [1, 2] });
});

test("integers carry their exact ranges, 64-bit ones digit for digit", () => {
  assert.equal(
    stringifyJson(s.int64().schema),
    `{"description":${JSON.stringify(WIDE_INTEGER_NOTE)},"type":"integer","minimum":-9223372036854775808,"maximum":9223372036854775807,"format":"int64"}`,
  );
  const u = wire(s.uint64("order id"));
  assert.equal(u.description, `order id (${WIDE_INTEGER_NOTE})`);
  assert.match(stringifyJson(s.uint64().schema), /"minimum":0,"maximum":18446744073709551615/);
  assert.deepEqual(wire(s.int32()), { type: "integer", minimum: -2147483648, maximum: 2147483647, format: "int32" });
  assert.deepEqual(wire(s.integer({ minimum: -5, maximum: 5 })), { type: "integer", minimum: -5, maximum: 5 });
  assert.deepEqual(wire(s.integer()), { type: "integer", minimum: -9007199254740991, maximum: 9007199254740991 });
  assert.match(stringifyJson(s.int64({ minimum: 0 }).schema), /"minimum":0,"maximum":9223372036854775807/);
  assert.throws(() => s.int32({ maximum: 2 ** 31 }), RangeError);
  assert.throws(() => s.integer({ minimum: 2n ** 60n }), RangeError);
});

test("decoding converts 64-bit fields to BigInt and keeps other integers Numbers", () => {
  const value = order.decode(
    parseJson('{"id": 18446744073709551615, "customer": {"name": "Ada"}, "items": [{"sku": "a", "qty": 2}], "status": "paid"}'),
    "input",
  );
  assert.deepEqual(value, {
    id: 18446744073709551615n,
    customer: { name: "Ada" },
    items: [{ sku: "a", qty: 2 }],
    status: "paid",
    note: null,
    count: 10,
  });
  assert.equal(s.int64().decode(7, "input.x"), 7n);
  assert.equal(s.int64().decode(-9223372036854775808n, "input.x"), -9223372036854775808n);
});

/** Decodes `json` under `order` and returns the InvalidInput message. */
function orderError(json) {
  try {
    order.decode(parseJson(json), "input");
  } catch (e) {
    assert.ok(e instanceof InvalidInput, `expected InvalidInput, got ${e}`);
    return e.message;
  }
  assert.fail(`decoded without error: ${json}`);
}

const ok = '"customer": {"name": "Ada"}, "items": [], "status": "open"';

test("decoding errors name the field path and say what was expected", () => {
  assert.equal(orderError(`{${ok}}`), "input.id: required field missing");
  assert.equal(orderError(`{"id": -1, ${ok}}`), "input.id: -1 is out of range for uint64 (0..18446744073709551615)");
  assert.equal(orderError(`{"id": 18446744073709551616, ${ok}}`), "input.id: 18446744073709551616 is out of range for uint64 (0..18446744073709551615)");
  assert.equal(orderError(`{"id": 1.5, ${ok}}`), "input.id: expected an integer (uint64), got a number 1.5");
  assert.equal(orderError(`{"id": "1", ${ok}}`), 'input.id: expected an integer (uint64), got a string "1"');
  assert.equal(
    orderError('{"id": 1, "customer": {"name": "Ada"}, "items": [{"sku": "a", "qty": 1}, {"sku": "b", "qty": 0}], "status": "open"}'),
    "input.items[1].qty: 0 is out of range for int32 (1..99)",
  );
  assert.equal(
    orderError('{"id": 1, "customer": {"name": "Ada"}, "items": [{"sku": 5, "qty": 1}], "status": "open"}'),
    "input.items[0].sku: expected a string, got an integer 5",
  );
  assert.equal(orderError('{"id": 1, "customer": {"name": "Adalbert"}, "items": [], "status": "open"}'), "input.customer.name: must be at most 5 characters long, got 8");
  assert.equal(orderError('{"id": 1, "customer": {"name": "Ada"}, "items": [], "status": "shipped"}'), 'input.status: must be one of "open", "paid"');
  assert.equal(orderError(`{"id": 1, ${ok}, "extra key": 1}`), 'input["extra key"]: unknown field (expected one of: id, customer, items, status, note, ratio, count)');
  assert.equal(orderError(`{"id": 1, ${ok}, "ratio": 2}`), "input.ratio: 2 is out of range (>= 0 and <= 1)");
  assert.equal(orderError(`{"id": 1, ${ok}, "note": 3}`), "input.note: expected a string, got an integer 3");
  assert.equal(orderError('{"id": 1, "customer": [], "items": [], "status": "open"}'), "input.customer: expected an object, got an array");
  assert.equal(orderError('{"id": 1, "customer": {"name": "Ada"}, "items": [{},{},{},{}], "status": "open"}'), "input.items: takes at most 3 items, got 4");
});

test("builders refuse what is not a shape", () => {
  assert.throws(() => s.object({ a: { type: "string" } }), /s.object property "a" must be built with s\.\*/);
  assert.throws(() => s.array("string"), TypeError);
  assert.throws(() => s.enum([]), TypeError);
});
