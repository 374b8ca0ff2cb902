// The plugin's configuration: the keys its manifest declares (`[config.NAME]`, with
// a type and a default) with the values the operator set (`[plugin.NAME] config`
// in the hub's TOML), read through the `wasi:config/store` import that
// `component.js` binds with `bindConfig`. The hub gives a plugin only its own keys,
// as text; the typed getters parse one and name the key when it does not parse.
//
// Outside a component (plain Node, unit tests) nothing is bound and every key is
// unset; a test may bind a fake store (`bindConfig(fakeStore({...}))`).
//
// Secrets are not configuration: a secret declared with `inject` is added by the
// hub to requests to its declared host and the plugin never holds it; the rare one
// declared `reveal = true` is read with `revealSecret` (host.js).

import { Failed } from "./errors.js";

let boundStore = null;

/**
 * Binds the `wasi:config/store` import (an object with `get(key)` and `getAll()` as
 * componentize-js provides it). Returns the previous binding so a test can restore it.
 */
export function bindConfig(store) {
  const previous = boundStore;
  boundStore = store;
  return previous;
}

/** A store over a plain object, for tests: `bindConfig(fakeStore({ retries: "3" }))`. */
export function fakeStore(values) {
  const entries = Object.entries(values).map(([k, v]) => [k, String(v)]);
  return {
    get: (key) => entries.find(([k]) => k === key)?.[1],
    getAll: () => entries.map(([k, v]) => [k, v]),
  };
}

function describe(e) {
  const payload = e && Object.prototype.hasOwnProperty.call(e, "payload") ? e.payload : e;
  if (payload && typeof payload.tag === "string") return `${payload.tag}: ${payload.val}`;
  return String(payload);
}

function read(key, what) {
  if (!boundStore) return undefined;
  try {
    return boundStore[what](key) ?? undefined;
  } catch (e) {
    throw new Failed(`configuration ${key}: ${describe(e)}`);
  }
}

function notA(key, text, type) {
  return new Failed(`configuration ${key} = ${JSON.stringify(text)} is not ${type}`);
}

const INTEGER = /^-?(0|[1-9][0-9]*)$/;
const NUMBER = /^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$/;

/** Typed getters; each returns `undefined` when the key has neither a value nor a default. */
export const config = {
  /** The value of `key` as text. */
  get(key) {
    return read(key, "get");
  },
  /** The value of `key` as text (the manifest type `string`). */
  getString(key) {
    return read(key, "get");
  },
  /** The value of an `integer` key: a Number, or a BigInt beyond 2^53 (exact, like parseJson). */
  getInteger(key) {
    const text = read(key, "get");
    if (text === undefined) return undefined;
    if (!INTEGER.test(text)) throw notA(key, text, "an integer");
    const big = BigInt(text);
    return big >= BigInt(Number.MIN_SAFE_INTEGER) && big <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(big) : big;
  },
  /** The value of a `number` key. */
  getNumber(key) {
    const text = read(key, "get");
    if (text === undefined) return undefined;
    if (!NUMBER.test(text)) throw notA(key, text, "a number");
    return Number(text);
  },
  /** The value of a `boolean` key. */
  getBoolean(key) {
    const text = read(key, "get");
    if (text === undefined) return undefined;
    if (text !== "true" && text !== "false") throw notA(key, text, "a boolean");
    return text === "true";
  },
  /** Every key with its value as text, as an object. */
  getAll() {
    if (!boundStore) return {};
    let pairs;
    try {
      pairs = boundStore.getAll();
    } catch (e) {
      throw new Failed(`configuration: ${describe(e)}`);
    }
    return Object.fromEntries(pairs);
  },
};
