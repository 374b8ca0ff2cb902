// Exact calendar arithmetic on ISO 8601 dates (proleptic Gregorian, years
// 0001-9999): day numbers, weekdays, ISO weeks, month arithmetic with clamping.
// Pure integer math on day numbers (days since 1970-01-01), no Date object, so no
// time zone or daylight-saving shift can move a result by a day.

import { InvalidInput } from "../../guest-sdk-js/index.js";

export const MIN_YEAR = 1;
export const MAX_YEAR = 9999;

const WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"];
const MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"];

export function isLeapYear(year) {
  return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
}

export function daysInMonth(year, month) {
  if (month === 2) return isLeapYear(year) ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}

/** `YYYY-MM-DD` as {year, month, day}; InvalidInput naming `field` when malformed or nonexistent. */
export function parseDate(text, field) {
  const m = /^([0-9]{4})-([0-9]{2})-([0-9]{2})$/.exec(text);
  if (!m) throw new InvalidInput(`${field}: ${JSON.stringify(text)} is not a date in the form YYYY-MM-DD`);
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (year < MIN_YEAR) throw new InvalidInput(`${field}: years start at 0001`);
  if (month < 1 || month > 12) throw new InvalidInput(`${field}: ${text} has no month ${m[2]} (01-12)`);
  const last = daysInMonth(year, month);
  if (day < 1 || day > last) {
    throw new InvalidInput(`${field}: ${text} does not exist: ${MONTHS[month - 1]} ${year} has ${last} days`);
  }
  return { year, month, day };
}

export function formatDate({ year, month, day }) {
  const pad = (n, width) => String(n).padStart(width, "0");
  return `${pad(year, 4)}-${pad(month, 2)}-${pad(day, 2)}`;
}

/** Days since 1970-01-01 (negative before), by the era algorithm: 400-year eras of 146097 days. */
export function dayNumber({ year, month, day }) {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yearOfEra = y - era * 400;
  const dayOfYear = Math.floor((153 * (month + (month > 2 ? -3 : 9)) + 2) / 5) + day - 1;
  const dayOfEra = yearOfEra * 365 + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100) + dayOfYear;
  return era * 146097 + dayOfEra - 719468;
}

/** The date of a day number (inverse of dayNumber). */
export function fromDayNumber(days) {
  const z = days + 719468;
  const era = Math.floor(z / 146097);
  const dayOfEra = z - era * 146097;
  const yearOfEra = Math.floor(
    (dayOfEra - Math.floor(dayOfEra / 1460) + Math.floor(dayOfEra / 36524) - Math.floor(dayOfEra / 146096)) / 365,
  );
  const dayOfYear = dayOfEra - (365 * yearOfEra + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100));
  const mp = Math.floor((5 * dayOfYear + 2) / 153);
  const day = dayOfYear - Math.floor((153 * mp + 2) / 5) + 1;
  const month = mp < 10 ? mp + 3 : mp - 9;
  return { year: yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day };
}

/** ISO weekday: 1 = Monday ... 7 = Sunday (1970-01-01, day 0, was a Thursday). */
export function isoWeekday(days) {
  return ((((days + 3) % 7) + 7) % 7) + 1;
}

export function weekdayName(days) {
  return WEEKDAYS[isoWeekday(days) - 1];
}

/** ISO 8601 week: the week belongs to the year holding its Thursday. */
export function isoWeek(days) {
  const thursday = days - isoWeekday(days) + 4;
  const weekYear = fromDayNumber(thursday).year;
  const week = Math.floor((thursday - dayNumber({ year: weekYear, month: 1, day: 1 })) / 7) + 1;
  return { weekYear, week };
}

/** A date checked to lie within years 0001-9999, else InvalidInput saying how far it went. */
export function checkedDate(date, what) {
  if (date.year < MIN_YEAR || date.year > MAX_YEAR) {
    throw new InvalidInput(`${what} falls in year ${date.year}, outside 0001-9999`);
  }
  return date;
}

/**
 * `date` moved by `months` calendar months; a day past the target month's end is
 * clamped to its last day. Returns the date and whether it was clamped.
 */
export function addMonths(date, months) {
  const index = date.year * 12 + (date.month - 1) + months;
  const year = Math.floor(index / 12);
  const month = index - year * 12 + 1;
  const last = daysInMonth(year, month);
  return { date: { year, month, day: Math.min(date.day, last) }, clamped: date.day > last };
}

/** Weekdays (Monday-Friday) in the half-open range of day numbers [from, to), from <= to. */
export function weekdaysBetween(from, to) {
  const fullWeeks = Math.floor((to - from) / 7);
  let count = fullWeeks * 5;
  for (let d = from + fullWeeks * 7; d < to; d++) {
    if (isoWeekday(d) <= 5) count++;
  }
  return count;
}

/**
 * Calendar difference from `start` to `end` (start <= end) as people count ages:
 * the most whole months m with start + m months (clamped) <= end, then the days left.
 */
export function calendarDifference(start, end) {
  const endDay = dayNumber(end);
  if (dayNumber(start) > endDay) throw new RangeError("calendarDifference needs start <= end");
  let months = (end.year - start.year) * 12 + (end.month - start.month);
  while (months > 0 && dayNumber(addMonths(start, months).date) > endDay) months--;
  const days = endDay - dayNumber(addMonths(start, months).date);
  return { years: Math.floor(months / 12), months: months % 12, days };
}
