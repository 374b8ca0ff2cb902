// The typed schema helper `s`: each builder returns a Shape that knows its JSON
// Schema (draft 2020-12) and how to decode a parsed JSON value into what the
// operation receives, with errors that name the field path (`input.items[2].id`).
//
// The host validates every input against the schema before `call`, so decoding
// stays light: it re-checks types, ranges and enums (cheap, and it keeps direct
// callers such as unit tests honest) and converts 64-bit integers to BigInt.

import { InvalidInput } from "./errors.js";

const DRAFT = "https://json-schema.org/draft/2020-12/schema";

/** Told to clients in every 64-bit field's description, as the Rust SDK does. */
export const WIDE_INTEGER_NOTE =
  "64-bit integer: send it as a JSON integer (not a string); every digit is kept exactly, " +
  "but clients that parse numbers as doubles lose precision past 2^53.";

const INT32 = [-(2n ** 31n), 2n ** 31n - 1n];
const INT64 = [-(2n ** 63n), 2n ** 63n - 1n];
const UINT64 = [0n, 2n ** 64n - 1n];
const SAFE = [-BigInt(Number.MAX_SAFE_INTEGER), BigInt(Number.MAX_SAFE_INTEGER)];

/** A schema plus its decoder; `optional`/`defaultValue` only matter inside s.object. */
export class Shape {
  constructor(schema, decode, { optional = false, defaultValue } = {}) {
    this.schema = schema;
    this.decode = decode;
    this.optional = optional;
    this.defaultValue = defaultValue;
  }
}

/** True for a value built by `s`. */
export function isShape(value) {
  return value instanceof Shape;
}

/** The root JSON Schema of a Shape, tagged with the draft it follows. */
export function rootSchema(shape) {
  return { $schema: DRAFT, ...shape.schema };
}

/** Options given as a bare string are the description. */
function options(opts) {
  if (opts === undefined) return {};
  if (typeof opts === "string") return { description: opts };
  if (typeof opts === "object" && opts !== null) return opts;
  throw new TypeError(`schema options must be a description string or an object, got ${typeof opts}`);
}

/** Copies the JSON Schema keywords in `names` that `opts` sets. */
function keywords(opts, names) {
  const out = {};
  for (const name of ["description", "title", ...names]) {
    if (opts[name] !== undefined) out[name] = opts[name];
  }
  return out;
}

/** A readable name of a decoded JSON value's type, for error messages. */
function kindOf(value) {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "bigint") return "an integer";
  if (typeof value === "number") return Number.isInteger(value) ? "an integer" : "a number";
  if (typeof value === "object") return "an object";
  return `a ${typeof value}`;
}

function mismatch(path, expected, value) {
  return new InvalidInput(`${path}: expected ${expected}, got ${kindOf(value)}${shownValue(value)}`);
}

/** A scalar's value for an error message (strings quoted and cut); nothing for containers. */
function shownValue(value) {
  if (value === null || typeof value === "object") return "";
  if (typeof value !== "string") return ` ${String(value)}`;
  return ` ${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}...` : value)}`;
}

/** `path.key`, or `path["odd key"]` when the key is not an identifier. */
export function childPath(path, key) {
  return /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`;
}

function string(opts) {
  const o = options(opts);
  const schema = { type: "string", ...keywords(o, ["minLength", "maxLength", "pattern", "format"]) };
  const pattern = o.pattern === undefined ? null : new RegExp(o.pattern, "u");
  return new Shape(schema, (value, path) => {
    if (typeof value !== "string") throw mismatch(path, "a string", value);
    const length = [...value].length;
    if (o.minLength !== undefined && length < o.minLength) {
      throw new InvalidInput(`${path}: must be at least ${o.minLength} characters long, got ${length}`);
    }
    if (o.maxLength !== undefined && length > o.maxLength) {
      throw new InvalidInput(`${path}: must be at most ${o.maxLength} characters long, got ${length}`);
    }
    if (pattern && !pattern.test(value)) throw new InvalidInput(`${path}: must match the pattern ${o.pattern}`);
    return value;
  });
}

function number(opts) {
  const o = options(opts);
  const schema = { type: "number", ...keywords(o, ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"]) };
  return new Shape(schema, (value, path) => {
    if (typeof value === "bigint") value = Number(value);
    if (typeof value !== "number") throw mismatch(path, "a number", value);
    const bad =
      (o.minimum !== undefined && value < o.minimum) ||
      (o.maximum !== undefined && value > o.maximum) ||
      (o.exclusiveMinimum !== undefined && value <= o.exclusiveMinimum) ||
      (o.exclusiveMaximum !== undefined && value >= o.exclusiveMaximum);
    if (bad) throw new InvalidInput(`${path}: ${value} is out of range (${describeBounds(o)})`);
    return value;
  });
}

function describeBounds(o) {
  const parts = [];
  if (o.minimum !== undefined) parts.push(`>= ${o.minimum}`);
  if (o.exclusiveMinimum !== undefined) parts.push(`> ${o.exclusiveMinimum}`);
  if (o.maximum !== undefined) parts.push(`<= ${o.maximum}`);
  if (o.exclusiveMaximum !== undefined) parts.push(`< ${o.exclusiveMaximum}`);
  return parts.join(" and ");
}

/**
 * An integer within [lo, hi] of a type's range, narrowed by `minimum`/`maximum`.
 * `big` decides what the operation receives: BigInt (64-bit types) or Number.
 */
function integerShape(typeName, [lo, hi], big, opts) {
  const o = options(opts);
  const min = o.minimum === undefined ? lo : BigInt(o.minimum);
  const max = o.maximum === undefined ? hi : BigInt(o.maximum);
  if (min < lo || max > hi || min > max) {
    throw new RangeError(`${typeName}: minimum ${min} / maximum ${max} must lie within ${lo}..${hi}`);
  }
  const description = big ? joinDescription(o.description, WIDE_INTEGER_NOTE) : o.description;
  const schema = { type: "integer", minimum: big ? min : Number(min), maximum: big ? max : Number(max) };
  if (typeName !== "integer") schema.format = typeName;
  const full = { ...keywords({ ...o, description }, []), ...schema };
  return new Shape(full, (value, path) => {
    const exact = integerValue(value);
    if (exact === null) throw mismatch(path, typeName === "integer" ? "an integer" : `an integer (${typeName})`, value);
    if (exact < min || exact > max) {
      throw new InvalidInput(`${path}: ${exact} is out of range for ${typeName} (${min}..${max})`);
    }
    return big ? exact : Number(exact);
  });
}

/** The exact integer a decoded JSON number holds, or null for non-integers. */
function integerValue(value) {
  if (typeof value === "bigint") return value;
  if (typeof value === "number" && Number.isInteger(value)) return BigInt(value);
  return null;
}

function joinDescription(own, note) {
  return own ? `${own} (${note})` : note;
}

function boolean(opts) {
  const o = options(opts);
  return new Shape({ type: "boolean", ...keywords(o, []) }, (value, path) => {
    if (typeof value !== "boolean") throw mismatch(path, "a boolean", value);
    return value;
  });
}

function array(items, opts) {
  requireShape(items, "s.array(items)");
  const o = options(opts);
  const schema = { type: "array", items: items.schema, ...keywords(o, ["minItems", "maxItems", "uniqueItems"]) };
  return new Shape(schema, (value, path) => {
    if (!Array.isArray(value)) throw mismatch(path, "an array", value);
    if (o.minItems !== undefined && value.length < o.minItems) {
      throw new InvalidInput(`${path}: needs at least ${o.minItems} items, got ${value.length}`);
    }
    if (o.maxItems !== undefined && value.length > o.maxItems) {
      throw new InvalidInput(`${path}: takes at most ${o.maxItems} items, got ${value.length}`);
    }
    return value.map((item, i) => items.decode(item, `${path}[${i}]`));
  });
}

function enumOf(values, opts) {
  if (!Array.isArray(values) || values.length === 0) throw new TypeError("s.enum needs a non-empty array of values");
  const o = options(opts);
  const schema = { ...keywords(o, []), enum: [...values] };
  if (values.every((v) => typeof v === "string")) schema.type = "string";
  return new Shape(schema, (value, path) => {
    if (!values.includes(value)) {
      throw new InvalidInput(`${path}: must be one of ${values.map((v) => JSON.stringify(v)).join(", ")}`);
    }
    return value;
  });
}

function object(properties, opts) {
  const o = options(opts);
  const entries = Object.entries(properties);
  for (const [key, shape] of entries) requireShape(shape, `s.object property "${key}"`);
  const required = entries.filter(([, shape]) => !shape.optional).map(([key]) => key);
  const schema = {
    type: "object",
    ...keywords(o, []),
    properties: Object.fromEntries(entries.map(([key, shape]) => [key, shape.schema])),
    additionalProperties: false,
  };
  if (required.length > 0) schema.required = required;
  const known = new Set(entries.map(([key]) => key));
  return new Shape(schema, (value, path) => {
    if (typeof value !== "object" || value === null || Array.isArray(value)) throw mismatch(path, "an object", value);
    for (const key of Object.keys(value)) {
      if (!known.has(key)) {
        const expected = entries.length ? `expected one of: ${[...known].join(", ")}` : "expected no fields";
        throw new InvalidInput(`${childPath(path, key)}: unknown field (${expected})`);
      }
    }
    const out = {};
    for (const [key, shape] of entries) {
      const field = decodeField(value, key, shape, childPath(path, key));
      if (field !== undefined) out[key] = field;
    }
    return out;
  });
}

function decodeField(value, key, shape, path) {
  if (Object.prototype.hasOwnProperty.call(value, key)) return shape.decode(value[key], path);
  if (!shape.optional) throw new InvalidInput(`${path}: required field missing`);
  return shape.defaultValue;
}

function optional(shape, defaultValue) {
  requireShape(shape, "s.optional(shape)");
  const schema = defaultValue === undefined ? shape.schema : { ...shape.schema, default: defaultValue };
  return new Shape(schema, shape.decode, { optional: true, defaultValue });
}

function nullable(shape, opts) {
  requireShape(shape, "s.nullable(shape)");
  const o = options(opts);
  const { description, ...inner } = shape.schema;
  const outer = o.description ?? description;
  const schema = { ...(outer === undefined ? {} : { description: outer }), anyOf: [inner, { type: "null" }] };
  return new Shape(schema, (value, path) => (value === null ? null : shape.decode(value, path)));
}

function any(opts) {
  const o = options(opts);
  return new Shape(keywords(o, []), (value) => value);
}

function requireShape(value, where) {
  if (!isShape(value)) throw new TypeError(`${where} must be built with s.* (got ${kindOf(value)})`);
}

/** The schema helper: `s.object({ a: s.int64("first addend") })`. */
export const s = Object.freeze({
  string,
  number,
  integer: (opts) => integerShape("integer", SAFE, false, opts),
  int32: (opts) => integerShape("int32", INT32, false, opts),
  int64: (opts) => integerShape("int64", INT64, true, opts),
  uint64: (opts) => integerShape("uint64", UINT64, true, opts),
  boolean,
  array,
  enum: enumOf,
  object,
  optional,
  nullable,
  any,
});
