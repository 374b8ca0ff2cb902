// The checks of the Node client scripts (tests/mcp/sdk_client.mjs,
// tests/oauth/ts_client.mjs): one `ok`/`not ok` line per check, which the suites'
// run.sh count, a summary line and the exit code. No dependencies.

/** The environment variable `name`; throws when it is not set. */
export function env(name) {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set`);
  return v;
}

/** Throws `msg` unless `cond`. */
export function assert(cond, msg) {
  if (!cond) throw new Error(msg);
}

/** Named checks under `label`: `check(name, fn)` runs and reports one,
 * `finish()` prints the totals and exits (non-zero when one failed). */
export function checks(label) {
  let passed = 0;
  let failed = 0;
  return {
    async check(name, fn) {
      try {
        await fn();
        passed++;
        console.log(`ok - ${label}: ${name}`);
      } catch (e) {
        failed++;
        console.log(`not ok - ${label}: ${name}: ${e?.stack ?? e}`);
      }
    },
    finish() {
      console.log(`${label}: ${passed} passed, ${failed} failed`);
      process.exit(failed === 0 ? 0 : 1);
    },
  };
}
