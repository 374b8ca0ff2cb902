// The `dates` plugin's operations: exact calendar arithmetic a language model tends
// to get wrong by a day (days between dates, adding months across month ends,
// weekdays, ISO weeks). Declared with the wasmhub-plugin SDK; the math is in
// calendar.js. Plain ES module: `component.js` makes it a component, tests import it.

import { definePlugin, s } from "../../guest-sdk-js/index.js";
import * as cal from "./calendar.js";

const DATE_PATTERN = "^[0-9]{4}-[0-9]{2}-[0-9]{2}$";
const date = (description) => s.string({ description, pattern: DATE_PATTERN });

/** Bounds that cover every move within years 0001-9999 and nothing wildly beyond. */
const MAX_YEARS = 9999;
const MAX_MONTHS = MAX_YEARS * 12;
const MAX_WEEKS = 530000;
const MAX_DAYS = 3660000;

const bounded = (max, description) => s.optional(s.integer({ description, minimum: -max, maximum: max }), 0);

function between({ start, end }) {
  const a = cal.parseDate(start, "start");
  const b = cal.parseDate(end, "end");
  const [from, to] = [cal.dayNumber(a), cal.dayNumber(b)];
  const sign = to < from ? -1 : 1;
  const days = to - from;
  const calendar = sign > 0 ? cal.calendarDifference(a, b) : cal.calendarDifference(b, a);
  return {
    days,
    weeks: Math.trunc(days / 7),
    extra_days: days % 7 || 0,
    weekdays: sign * cal.weekdaysBetween(Math.min(from, to), Math.max(from, to)),
    calendar: { years: sign * calendar.years || 0, months: sign * calendar.months || 0, days: sign * calendar.days || 0 },
  };
}

function add({ date: text, years, months, weeks, days }) {
  const start = cal.parseDate(text, "date");
  const moved = cal.addMonths(start, years * 12 + months);
  cal.checkedDate(moved.date, "the date after adding years and months");
  const dayNumber = cal.dayNumber(moved.date) + weeks * 7 + days;
  const result = cal.checkedDate(cal.fromDayNumber(dayNumber), "the result");
  return { date: cal.formatDate(result), weekday: cal.weekdayName(dayNumber), clamped: moved.clamped };
}

function info({ date: text }) {
  const d = cal.parseDate(text, "date");
  const days = cal.dayNumber(d);
  const { weekYear, week } = cal.isoWeek(days);
  const weekday = cal.isoWeekday(days);
  return {
    date: cal.formatDate(d),
    weekday: cal.weekdayName(days),
    iso_weekday: weekday,
    iso_week_year: weekYear,
    iso_week: week,
    iso_week_date: `${String(weekYear).padStart(4, "0")}-W${String(week).padStart(2, "0")}-${weekday}`,
    day_of_year: days - cal.dayNumber({ year: d.year, month: 1, day: 1 }) + 1,
    quarter: Math.floor((d.month - 1) / 3) + 1,
    days_in_month: cal.daysInMonth(d.year, d.month),
    days_in_year: cal.isLeapYear(d.year) ? 366 : 365,
    leap_year: cal.isLeapYear(d.year),
  };
}

const int = (description) => s.integer(description);

export const operations = definePlugin({
  instructions:
    "Dates are ISO 8601 calendar dates (YYYY-MM-DD, proleptic Gregorian, years 0001-9999); " +
    "there are no times or time zones. Use dates.between for differences (days, weekdays, " +
    "calendar years/months/days), dates.add to move a date, dates.info for weekday, ISO week " +
    "and day of year. Adding months clamps to the month's last day (2024-01-31 + 1 month = " +
    "2024-02-29) and reports clamped: true. Prefer these over mental arithmetic: results are exact.",
  operations: {
    between: {
      description:
        "Exact difference between two dates: total days (end minus start), weeks, weekdays (Monday-Friday " +
        "from start inclusive to end exclusive) and the calendar difference in years, months and days. " +
        "Negative when end is before start.",
      input: s.object({ start: date("First date, YYYY-MM-DD."), end: date("Second date, YYYY-MM-DD.") }),
      output: s.object({
        days: int("end minus start, in days"),
        weeks: int("whole weeks in days (truncated toward zero)"),
        extra_days: int("days beyond the whole weeks (same sign as days)"),
        weekdays: int("Monday-Friday days from start (inclusive) to end (exclusive); negative when end is before start"),
        calendar: s.object(
          { years: int("whole years"), months: int("whole months beyond the years (0-11)"), days: int("days beyond the months") },
          "Calendar difference as ages are counted: start + years + months (clamped to month end) + days = end.",
        ),
      }),
      hints: ["read_only", "idempotent"],
      examples: [
        {
          description: "Across a leap February: 46 days, 34 weekdays, 1 month 15 days.",
          input: { start: "2024-01-15", end: "2024-03-01" },
          output: { days: 46, weeks: 6, extra_days: 4, weekdays: 34, calendar: { years: 0, months: 1, days: 15 } },
        },
        {
          description: "An age on a given day.",
          input: { start: "1990-07-20", end: "2025-03-14" },
          output: { days: 12656, weeks: 1808, extra_days: 0, weekdays: 9040, calendar: { years: 34, months: 7, days: 22 } },
        },
        {
          description: "End before start gives negative values.",
          input: { start: "2025-03-01", end: "2025-02-01" },
          output: { days: -28, weeks: -4, extra_days: 0, weekdays: -20, calendar: { years: 0, months: -1, days: 0 } },
        },
      ],
      run: between,
    },
    add: {
      description:
        "Move a date by years, months, weeks and days (each may be negative). Years and months apply first, " +
        "clamping to the last day of a shorter month (clamped: true), then weeks and days.",
      input: s.object({
        date: date("Start date, YYYY-MM-DD."),
        years: bounded(MAX_YEARS, "Years to add (negative subtracts)."),
        months: bounded(MAX_MONTHS, "Months to add (negative subtracts)."),
        weeks: bounded(MAX_WEEKS, "Weeks to add (negative subtracts)."),
        days: bounded(MAX_DAYS, "Days to add (negative subtracts)."),
      }),
      output: s.object({
        date: s.string("The resulting date, YYYY-MM-DD."),
        weekday: s.string("Its weekday in English (Monday...Sunday)."),
        clamped: s.boolean("True when the day was cut to the end of a shorter month."),
      }),
      hints: ["read_only", "idempotent"],
      examples: [
        {
          description: "One month after January 31 in a leap year is February 29.",
          input: { date: "2024-01-31", months: 1 },
          output: { date: "2024-02-29", weekday: "Thursday", clamped: true },
        },
        {
          description: "90 days after a date, across a year end.",
          input: { date: "2025-11-15", days: 90 },
          output: { date: "2026-02-13", weekday: "Friday", clamped: false },
        },
        {
          description: "One year after a leap day.",
          input: { date: "2024-02-29", years: 1 },
          output: { date: "2025-02-28", weekday: "Friday", clamped: true },
        },
      ],
      run: add,
    },
    info: {
      description:
        "Facts about one date: weekday, ISO 8601 week (its week-numbering year can differ from the calendar year), " +
        "day of year, quarter, days in its month and year, leap year.",
      input: s.object({ date: date("The date, YYYY-MM-DD.") }),
      output: s.object({
        date: s.string(),
        weekday: s.string("Monday...Sunday"),
        iso_weekday: int("1 = Monday ... 7 = Sunday"),
        iso_week_year: int("ISO week-numbering year"),
        iso_week: int("ISO week number, 1-53"),
        iso_week_date: s.string("ISO week date, YYYY-Www-D"),
        day_of_year: int("1-366"),
        quarter: int("1-4"),
        days_in_month: int("28-31"),
        days_in_year: int("365 or 366"),
        leap_year: s.boolean(),
      }),
      hints: ["read_only", "idempotent"],
      examples: [
        {
          description: "December 30, 2024 is in ISO week 1 of 2025.",
          input: { date: "2024-12-30" },
          output: {
            date: "2024-12-30", weekday: "Monday", iso_weekday: 1, iso_week_year: 2025, iso_week: 1,
            iso_week_date: "2025-W01-1", day_of_year: 365, quarter: 4, days_in_month: 31, days_in_year: 366, leap_year: true,
          },
        },
        {
          description: "January 3, 2021 still belongs to week 53 of 2020.",
          input: { date: "2021-01-03" },
          output: {
            date: "2021-01-03", weekday: "Sunday", iso_weekday: 7, iso_week_year: 2020, iso_week: 53,
            iso_week_date: "2020-W53-7", day_of_year: 3, quarter: 1, days_in_month: 31, days_in_year: 365, leap_year: false,
          },
        },
      ],
      run: info,
    },
  },
});
