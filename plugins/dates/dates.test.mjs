// The dates plugin in plain Node: examples, calendar edge cases, errors.
import { test } from "node:test";
import assert from "node:assert/strict";
import { checkExamples } from "../../guest-sdk-js/index.js";
import { operations } from "./plugin.js";
import * as cal from "./calendar.js";

const run = (op, input) => JSON.parse(operations.call(op, JSON.stringify(input)));

/** The WIT error of a failing call. */
function error(op, input) {
  try {
    operations.call(op, JSON.stringify(input));
  } catch (e) {
    return e.payload;
  }
  assert.fail(`${op} did not fail`);
}

test("every declared example holds", async () => {
  assert.deepEqual(await checkExamples(operations), []);
});

test("day numbers round-trip over the whole range and agree with Date.UTC", () => {
  for (let days = cal.dayNumber({ year: 1, month: 1, day: 1 }); days <= cal.dayNumber({ year: 9999, month: 12, day: 31 }); days += 997) {
    const date = cal.fromDayNumber(days);
    assert.equal(cal.dayNumber(date), days);
    const utc = new Date(0);
    utc.setUTCFullYear(date.year, date.month - 1, date.day);
    assert.equal(utc.getTime() / 86400000, days, cal.formatDate(date));
  }
});

test("leap years follow the 4/100/400 rule", () => {
  assert.equal(run("info", { date: "2000-02-29" }).leap_year, true);
  assert.deepEqual(error("info", { date: "1900-02-29" }), {
    tag: "invalid-input",
    val: "date: 1900-02-29 does not exist: February 1900 has 28 days",
  });
  assert.equal(run("add", { date: "2100-02-28", days: 1 }).date, "2100-03-01");
  assert.equal(run("between", { start: "2000-01-01", end: "2001-01-01" }).days, 366);
});

test("ISO weeks at year boundaries", () => {
  assert.equal(run("info", { date: "2020-12-31" }).iso_week_date, "2020-W53-4");
  assert.equal(run("info", { date: "2026-01-01" }).iso_week_date, "2026-W01-4");
  assert.equal(run("info", { date: "2027-01-01" }).iso_week_date, "2026-W53-5");
  assert.equal(run("info", { date: "0001-01-01" }).weekday, "Monday");
});

test("month arithmetic clamps and says so; negative moves work", () => {
  assert.deepEqual(run("add", { date: "2025-03-31", months: -1 }), { date: "2025-02-28", weekday: "Friday", clamped: true });
  assert.deepEqual(run("add", { date: "2025-01-15", years: -1, weeks: 2 }), { date: "2024-01-29", weekday: "Monday", clamped: false });
  assert.deepEqual(run("add", { date: "2025-05-31" }), { date: "2025-05-31", weekday: "Saturday", clamped: false });
});

test("calendar differences count months like ages", () => {
  assert.deepEqual(run("between", { start: "2024-01-31", end: "2024-02-29" }).calendar, { years: 0, months: 1, days: 0 });
  assert.deepEqual(run("between", { start: "2024-01-31", end: "2024-03-01" }).calendar, { years: 0, months: 1, days: 1 });
  assert.deepEqual(run("between", { start: "2024-02-29", end: "2025-02-28" }).calendar, { years: 1, months: 0, days: 0 });
  assert.deepEqual(run("between", { start: "2025-05-05", end: "2025-05-05" }), {
    days: 0, weeks: 0, extra_days: 0, weekdays: 0, calendar: { years: 0, months: 0, days: 0 },
  });
});

test("weekdays exclude weekends and the end date", () => {
  // Friday to the next Monday: only the Friday counts.
  assert.equal(run("between", { start: "2025-05-02", end: "2025-05-05" }).weekdays, 1);
  assert.equal(run("between", { start: "2025-05-03", end: "2025-05-05" }).weekdays, 0);
  assert.equal(run("between", { start: "2025-05-05", end: "2025-05-02" }).weekdays, -1);
});

test("bad dates and out-of-range results are invalid input naming the field", () => {
  assert.deepEqual(error("between", { start: "2025-13-01", end: "2025-01-01" }), {
    tag: "invalid-input",
    val: "start: 2025-13-01 has no month 13 (01-12)",
  });
  assert.deepEqual(error("add", { date: "0001-01-01", days: -1 }), {
    tag: "invalid-input",
    val: "the result falls in year 0, outside 0001-9999",
  });
  assert.equal(error("add", { date: "2025-01-01", days: 1.5 }).val, "input.days: expected an integer, got a number 1.5");
  assert.equal(error("info", { date: "25-1-1" }).val, "input.date: must match the pattern ^[0-9]{4}-[0-9]{2}-[0-9]{2}$");
  assert.throws(() => cal.parseDate("25-1-1", "date"), /date: "25-1-1" is not a date in the form YYYY-MM-DD/);
});
