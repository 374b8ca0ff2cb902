// The configuration getters over a bound (here fake) wasi:config/store.
import { test } from "node:test";
import assert from "node:assert/strict";
import { bindConfig, config, fakeStore, Failed } from "../index.js";

function withStore(store, fn) {
  const previous = bindConfig(store);
  try {
    return fn();
  } finally {
    bindConfig(previous);
  }
}

test("unbound (plain Node), every key is unset", () => {
  assert.equal(config.get("retries"), undefined);
  assert.equal(config.getInteger("retries"), undefined);
  assert.deepEqual(config.getAll(), {});
});

test("each getter parses its type", () => {
  const store = fakeStore({ name: "x", retries: "3", big: "9007199254740993", ratio: "0.25", verbose: "true" });
  withStore(store, () => {
    assert.equal(config.getString("name"), "x");
    assert.equal(config.getInteger("retries"), 3);
    assert.equal(config.getInteger("big"), 9007199254740993n);
    assert.equal(config.getNumber("ratio"), 0.25);
    assert.equal(config.getBoolean("verbose"), true);
    assert.equal(config.get("missing"), undefined);
    assert.deepEqual(config.getAll(), { name: "x", retries: "3", big: "9007199254740993", ratio: "0.25", verbose: "true" });
  });
});

test("a value of the wrong type names the key and the text", () => {
  withStore(fakeStore({ retries: "three", verbose: "yes", ratio: "1.2.3" }), () => {
    assert.throws(() => config.getInteger("retries"), (e) => e instanceof Failed && e.message === 'configuration retries = "three" is not an integer');
    assert.throws(() => config.getBoolean("verbose"), /configuration verbose = "yes" is not a boolean/);
    assert.throws(() => config.getNumber("ratio"), /configuration ratio = "1.2.3" is not a number/);
  });
});

test("a store error becomes Failed naming the key", () => {
  const failing = {
    get: () => {
      throw Object.assign(new Error("component error"), { payload: { tag: "upstream", val: "down" } });
    },
    getAll: () => [],
  };
  withStore(failing, () => {
    assert.throws(() => config.get("retries"), (e) => e instanceof Failed && e.message === "configuration retries: upstream: down");
  });
});
