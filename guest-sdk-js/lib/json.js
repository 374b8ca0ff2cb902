// Exact JSON for plugins: a strict RFC 8259 parser that keeps every digit of
// large integers, and a serializer that writes BigInt as plain JSON digits.
//
// Why not JSON.parse: it turns 9223372036854775807 into 9223372036854775808
// (a double). Here an integer whose magnitude exceeds Number.MAX_SAFE_INTEGER
// becomes a BigInt, exact; every other number is a Number as usual. Schema-aware
// decoding (schema.js) then turns int64/uint64 fields into BigInt always, so an
// operation sees one type per field.

import { InvalidInput } from "./errors.js";

/** Deepest nesting accepted; deeper input is refused rather than overflowing the stack. */
export const MAX_DEPTH = 256;

const NUMBER = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
const PLAIN_CHARS = /[^"\\\u0000-\u001f]*/y;
const ESCAPES = { '"': '"', "\\": "\\", "/": "/", b: "\b", f: "\f", n: "\n", r: "\r", t: "\t" };
const SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/** Parses JSON text; large integers become BigInt. Throws InvalidInput naming the offset. */
export function parse(text) {
  const parser = new Parser(String(text));
  parser.skipSpace();
  const value = parser.value(0);
  parser.skipSpace();
  if (parser.pos < parser.text.length) parser.fail("unexpected text after the JSON value");
  return value;
}

class Parser {
  constructor(text) {
    this.text = text;
    this.pos = 0;
  }

  fail(what) {
    const ended = this.pos >= this.text.length ? ", but the input ended" : "";
    throw new InvalidInput(`input is not valid JSON: ${what}${ended} at offset ${this.pos}`);
  }

  skipSpace() {
    const t = this.text;
    while (this.pos < t.length) {
      const c = t.charCodeAt(this.pos);
      if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) break;
      this.pos++;
    }
  }

  value(depth) {
    if (depth > MAX_DEPTH) this.fail(`nesting deeper than ${MAX_DEPTH}`);
    const c = this.text[this.pos];
    if (c === "{") return this.object(depth + 1);
    if (c === "[") return this.array(depth + 1);
    if (c === '"') return this.string();
    if (c === "-" || (c >= "0" && c <= "9")) return this.number();
    for (const [word, val] of [["true", true], ["false", false], ["null", null]]) {
      if (this.text.startsWith(word, this.pos)) {
        this.pos += word.length;
        return val;
      }
    }
    return this.fail(c === undefined ? "expected a value" : `unexpected ${JSON.stringify(c)}`);
  }

  object(depth) {
    const out = {};
    this.pos++;
    this.skipSpace();
    if (this.text[this.pos] === "}") {
      this.pos++;
      return out;
    }
    for (;;) {
      if (this.text[this.pos] !== '"') this.fail("expected a string key");
      const key = this.string();
      this.skipSpace();
      this.expect(":");
      this.skipSpace();
      setOwn(out, key, this.value(depth));
      this.skipSpace();
      if (this.text[this.pos] === "}") {
        this.pos++;
        return out;
      }
      this.expect(",");
      this.skipSpace();
    }
  }

  array(depth) {
    const out = [];
    this.pos++;
    this.skipSpace();
    if (this.text[this.pos] === "]") {
      this.pos++;
      return out;
    }
    for (;;) {
      out.push(this.value(depth));
      this.skipSpace();
      if (this.text[this.pos] === "]") {
        this.pos++;
        return out;
      }
      this.expect(",");
      this.skipSpace();
    }
  }

  expect(ch) {
    if (this.text[this.pos] !== ch) this.fail(`expected ${JSON.stringify(ch)}`);
    this.pos++;
  }

  string() {
    let out = "";
    this.pos++;
    for (;;) {
      PLAIN_CHARS.lastIndex = this.pos;
      PLAIN_CHARS.exec(this.text);
      out += this.text.slice(this.pos, PLAIN_CHARS.lastIndex);
      this.pos = PLAIN_CHARS.lastIndex;
      const c = this.text[this.pos];
      if (c === '"') {
        this.pos++;
        return out;
      }
      if (c !== "\\") this.fail(c === undefined ? "unterminated string" : "control character in string");
      out += this.escape();
    }
  }

  escape() {
    const c = this.text[this.pos + 1];
    if (c === "u") {
      const hex = this.text.slice(this.pos + 2, this.pos + 6);
      if (!/^[0-9a-fA-F]{4}$/.test(hex)) this.fail("bad \\u escape");
      this.pos += 6;
      return String.fromCharCode(parseInt(hex, 16));
    }
    if (!(c in ESCAPES)) this.fail("bad escape");
    this.pos += 2;
    return ESCAPES[c];
  }

  number() {
    NUMBER.lastIndex = this.pos;
    const m = NUMBER.exec(this.text);
    if (!m) this.fail("bad number");
    this.pos = NUMBER.lastIndex;
    return numberFromText(m[0]);
  }
}

/** Assigns without `__proto__` changing the object's prototype. */
function setOwn(obj, key, value) {
  if (key === "__proto__") {
    Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
  } else {
    obj[key] = value;
  }
}

/**
 * A JSON number token as a Number, or as an exact BigInt when it is an integer
 * (also `1.5e20` or `2E19`) whose magnitude exceeds 2^53 - 1.
 */
export function numberFromText(text) {
  const n = Number(text);
  if (Number.isSafeInteger(n) || !Number.isInteger(n)) return n;
  const exact = exactInteger(text);
  return exact === null ? n : exact;
}

/** The exact integer a decimal token denotes, or null when it has a fraction. */
function exactInteger(text) {
  const m = /^(-?)([0-9]+)(?:\.([0-9]+))?(?:[eE]([+-]?[0-9]+))?$/.exec(text);
  const [, sign, int, frac = "", exp = "0"] = m;
  let digits = int + frac;
  let shift = Number(exp) - frac.length;
  while (shift < 0 && digits.endsWith("0")) {
    digits = digits.slice(0, -1);
    shift++;
  }
  if (shift < 0) return null;
  // A huge exponent would build a huge BigInt: past 1e400 it is no integer anyone sends.
  if (shift > 400) return null;
  const value = BigInt(digits) * 10n ** BigInt(shift);
  const signed = sign ? -value : value;
  return signed > SAFE || signed < -SAFE ? signed : Number(signed);
}

/**
 * Serializes like JSON.stringify (compact; undefined and functions skipped in
 * objects, null in arrays; toJSON honoured) except that a BigInt is written as
 * its exact digits and NaN/Infinity throw instead of silently becoming null.
 */
export function stringify(value) {
  return write(value, 0, "");
}

function write(value, depth, key) {
  if (depth > MAX_DEPTH) throw new TypeError(`JSON output nested deeper than ${MAX_DEPTH} (a cycle?)`);
  if (value !== null && typeof value === "object" && typeof value.toJSON === "function") {
    value = value.toJSON(key);
  }
  switch (typeof value) {
    case "string":
      return JSON.stringify(value);
    case "bigint":
      return value.toString();
    case "boolean":
      return value ? "true" : "false";
    case "number":
      if (!Number.isFinite(value)) throw new TypeError(`${value} has no JSON form${key ? ` (at "${key}")` : ""}`);
      return Object.is(value, -0) ? "0" : String(value);
    case "object":
      if (value === null) return "null";
      return Array.isArray(value) ? writeArray(value, depth) : writeObject(value, depth);
    default:
      return undefined;
  }
}

function writeArray(items, depth) {
  const parts = items.map((item, i) => write(item, depth + 1, String(i)) ?? "null");
  return `[${parts.join(",")}]`;
}

function writeObject(obj, depth) {
  const parts = [];
  for (const key of Object.keys(obj)) {
    const text = write(obj[key], depth + 1, key);
    if (text !== undefined) parts.push(`${JSON.stringify(key)}:${text}`);
  }
  return `{${parts.join(",")}}`;
}
