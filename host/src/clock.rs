//! The wall clock in Unix milliseconds: the one place the host reads
//! `SystemTime` for timestamps (audit records, sessions, log lines, the
//! `Retry-After` date arithmetic, RFC 3339 times such as `GET /api/accounting`'s
//! `since`). Durations are measured with `Instant` elsewhere; this is only for
//! times that are stored or shown.

use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch; 0 if the system clock is set before it
/// (a timestamp is informational, never worth failing a call over).
pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Nanoseconds since the Unix epoch (span start and end times, `telemetry`); 0
/// like [`now_ms`] if the clock is set before it.
pub(crate) fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

/// Days from 1970-01-01 to `year-month-day` in the proleptic Gregorian calendar
/// (Howard Hinnant's `days_from_civil`); `None` before 1970 or for a month out of
/// range.
pub(crate) fn days_from_civil(year: i64, month: i64, day: i64) -> Option<u64> {
    if !(1..=12).contains(&month) {
        return None;
    }
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    u64::try_from(era * 146_097 + doe - 719_468).ok()
}

/// Unix milliseconds of an RFC 3339 date-time: `2026-11-24T14:30:00Z`, with
/// optional fractional seconds and a `Z` or `±hh:mm` offset (`t`/`z` and a space
/// for `T` accepted, as RFC 3339 allows); `None` when it is not one.
pub(crate) fn parse_rfc3339(text: &str) -> Option<u64> {
    let b = text.as_bytes();
    let num = |from: usize, len: usize| -> Option<i64> {
        let digits = text.get(from..from + len)?;
        digits
            .bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| digits.parse().ok())?
    };
    let sep = |at: usize, allowed: &[u8]| b.get(at).is_some_and(|c| allowed.contains(c));
    if !(sep(4, b"-") && sep(7, b"-") && sep(10, b"Tt ") && sep(13, b":") && sep(16, b":")) {
        return None;
    }
    let (year, month, day) = (num(0, 4)?, num(5, 2)?, num(8, 2)?);
    let (h, m, s) = (num(11, 2)?, num(14, 2)?, num(17, 2)?);
    if !(1..=31).contains(&day) || h > 23 || m > 59 || s > 60 {
        return None;
    }
    let mut at = 19;
    let mut millis = 0;
    if sep(at, b".") {
        let digits = b[at + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
        if digits == 0 {
            return None;
        }
        let frac = &text[at + 1..at + 1 + digits.min(3)];
        millis = format!("{frac:0<3}").parse::<u64>().ok()?;
        at += 1 + digits;
    }
    let offset_secs: i64 = match text.get(at..)? {
        "Z" | "z" => 0,
        zone if zone.len() == 6 && (zone.starts_with('+') || zone.starts_with('-')) && sep(at + 3, b":") => {
            let (oh, om) = (num(at + 1, 2)?, num(at + 4, 2)?);
            let secs = oh * 3600 + om * 60;
            if zone.starts_with('-') { -secs } else { secs }
        }
        _ => return None,
    };
    let days = days_from_civil(year, month, day)? as i64;
    let secs = days * 86_400 + h * 3600 + m * 60 + s - offset_secs;
    u64::try_from(secs).ok().map(|secs| secs * 1000 + millis)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_times_parse_to_unix_milliseconds() {
        assert_eq!(parse_rfc3339("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(parse_rfc3339("2026-11-24T14:30:00Z"), Some(1_795_530_600_000));
        assert_eq!(
            parse_rfc3339("2026-11-24T15:30:00.25+01:00"),
            Some(1_795_530_600_250)
        );
        assert_eq!(
            parse_rfc3339("2026-11-24 14:30:00.123456z"),
            Some(1_795_530_600_123)
        );
        assert_eq!(
            parse_rfc3339("2024-02-29T00:00:00-00:30"),
            Some(1_709_166_600_000)
        );
        for bad in [
            "2026-11-24",
            "2026-13-01T00:00:00Z",
            "2026-11-24T14:30:00",
            "yesterday",
            "2026-11-24T14:30:00.Z",
        ] {
            assert_eq!(parse_rfc3339(bad), None, "{bad}");
        }
    }

    #[test]
    fn now_ms_is_after_2020_and_monotone_enough() {
        let a = now_ms();
        let b = now_ms();
        assert!(a > 1_577_836_800_000, "clock reads {a}");
        assert!(b >= a);
    }
}
