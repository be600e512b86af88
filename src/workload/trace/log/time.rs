//! Timestamps as access logs write them, parsed by hand into nanoseconds
//! since the Unix epoch (no allocation, no locale, no time-zone database:
//! every format here carries its UTC offset or is UTC).
//!
//! * Common Log Format (`$time_local`, Apache `%t`): `10/Oct/2000:13:55:36 -0700`
//!   (nginx `ngx_http_log_module`, "local time in the Common Log Format").
//! * ISO 8601 (`$time_iso8601`, Envoy `%START_TIME%`, ALB `time`):
//!   `2000-10-10T13:55:36-07:00`, `2016-04-15T20:17:00.310Z`,
//!   `2018-07-02T22:23:00.186641Z` (any number of fraction digits up to 9).
//! * W3C `date` + `time` fields (CloudFront): `2019-12-04` and `21:02:31`, UTC.
//! * Decimal seconds (`$msec`): `1555072412.123`.

use super::ParseError;
use crate::clock::Nanos;

const NS: i128 = 1_000_000_000;

/// Days from 1970-01-01 to the civil date (proleptic Gregorian); H. Hinnant's
/// `days_from_civil`.
pub fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn digits(b: &[u8]) -> Option<u32> {
    if b.is_empty() || b.len() > 9 {
        return None;
    }
    let mut v = 0u32;
    for &c in b {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v * 10 + u32::from(c - b'0');
    }
    Some(v)
}

fn month_of(b: &[u8]) -> Option<u32> {
    const MONTHS: [&[u8; 3]; 12] = [
        b"Jan", b"Feb", b"Mar", b"Apr", b"May", b"Jun", b"Jul", b"Aug", b"Sep", b"Oct", b"Nov",
        b"Dec",
    ];
    MONTHS
        .iter()
        .position(|m| m[..] == *b)
        .map(|i| i as u32 + 1)
}

fn days_in_month(y: i64, m: u32) -> u32 {
    match m {
        2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Seconds since the epoch of a civil date and time, checked.
fn civil_seconds(y: i64, mo: u32, d: u32, h: u32, mi: u32, s: u32) -> Result<i64, ParseError> {
    if !(1..=12).contains(&mo) {
        return Err(ParseError::Value(format!("month {mo} is not 1..12")));
    }
    if d == 0 || d > days_in_month(y, mo) {
        return Err(ParseError::Value(format!(
            "day {d} is not in month {mo} of {y}"
        )));
    }
    if h > 23 || mi > 59 || s > 60 {
        return Err(ParseError::Value(format!(
            "time {h:02}:{mi:02}:{s:02} is not a time of day"
        )));
    }
    Ok(
        days_from_civil(y, mo, d) * 86_400
            + i64::from(h) * 3600
            + i64::from(mi) * 60
            + i64::from(s),
    )
}

fn to_nanos(secs: i64, frac_ns: u32, offset_s: i64) -> Result<Nanos, ParseError> {
    let ns = (i128::from(secs) - i128::from(offset_s)) * NS + i128::from(frac_ns);
    if ns < 0 {
        return Err(ParseError::Value("is before 1970-01-01T00:00:00Z".into()));
    }
    u64::try_from(ns)
        .map_err(|_| ParseError::Value("is after the year 2554 (u64 nanoseconds)".into()))
}

/// `+hhmm`, `-hhmm`, `+hh:mm`, `Z`: the offset east of UTC in seconds.
fn offset(b: &[u8]) -> Option<i64> {
    match b {
        b"Z" | b"z" => Some(0),
        [sign @ (b'+' | b'-'), rest @ ..] => {
            let (h, m) = match rest {
                [h1, h2, b':', m1, m2] | [h1, h2, m1, m2] => {
                    (digits(&[*h1, *h2])?, digits(&[*m1, *m2])?)
                }
                [h1, h2] => (digits(&[*h1, *h2])?, 0),
                _ => return None,
            };
            if h > 23 || m > 59 {
                return None;
            }
            let s = i64::from(h * 3600 + m * 60);
            Some(if *sign == b'-' { -s } else { s })
        }
        _ => None,
    }
}

/// Parses a Common Log Format time, `10/Oct/2000:13:55:36 -0700` (with or
/// without the surrounding brackets).
///
/// # Examples
/// ```
/// use ratelab::workload::trace::log::time::parse_clf;
/// assert_eq!(parse_clf("10/Oct/2000:13:55:36 -0700"), Ok(971_211_336_000_000_000));
/// assert!(parse_clf("10/Foo/2000:13:55:36 -0700").is_err());
/// ```
pub fn parse_clf(text: &str) -> Result<Nanos, ParseError> {
    let t = text
        .trim_start_matches('[')
        .trim_end_matches(']')
        .as_bytes();
    let bad = || {
        ParseError::Value(format!(
            "{text:?} is not a Common Log Format time (dd/Mon/yyyy:hh:mm:ss +zzzz)"
        ))
    };
    if t.len() != 26
        || t[2] != b'/'
        || t[6] != b'/'
        || t[11] != b':'
        || t[14] != b':'
        || t[17] != b':'
        || t[20] != b' '
    {
        return Err(bad());
    }
    let d = digits(&t[0..2]).ok_or_else(bad)?;
    let mo = month_of(&t[3..6]).ok_or_else(|| {
        ParseError::Value(format!(
            "{text:?}: unknown month {:?}",
            String::from_utf8_lossy(&t[3..6])
        ))
    })?;
    let y = digits(&t[7..11]).ok_or_else(bad)?;
    let h = digits(&t[12..14]).ok_or_else(bad)?;
    let mi = digits(&t[15..17]).ok_or_else(bad)?;
    let s = digits(&t[18..20]).ok_or_else(bad)?;
    let off =
        offset(&t[21..26]).ok_or_else(|| ParseError::Value(format!("{text:?}: bad UTC offset")))?;
    let secs = civil_seconds(i64::from(y), mo, d, h, mi, s)
        .map_err(|m| ParseError::Value(format!("{text:?}: {m}")))?;
    to_nanos(secs, 0, off).map_err(|m| ParseError::Value(format!("{text:?} {m}")))
}

/// Parses an ISO 8601 / RFC 3339 date-time with a UTC offset or `Z`, and up
/// to 9 fraction digits; also the space separator `2000-10-10 13:55:36Z`.
///
/// # Examples
/// ```
/// use ratelab::workload::trace::log::time::parse_iso8601;
/// assert_eq!(parse_iso8601("1970-01-01T00:00:01.5Z"), Ok(1_500_000_000));
/// assert_eq!(parse_iso8601("2000-10-10T13:55:36-07:00"), Ok(971_211_336_000_000_000));
/// ```
pub fn parse_iso8601(text: &str) -> Result<Nanos, ParseError> {
    let t = text.as_bytes();
    let bad = || {
        ParseError::Value(format!(
            "{text:?} is not an ISO 8601 date-time (yyyy-mm-ddThh:mm:ss[.fff]Z or +hh:mm)"
        ))
    };
    if t.len() < 20
        || t[4] != b'-'
        || t[7] != b'-'
        || !matches!(t[10], b'T' | b't' | b' ')
        || t[13] != b':'
        || t[16] != b':'
    {
        return Err(bad());
    }
    let y = digits(&t[0..4]).ok_or_else(bad)?;
    let mo = digits(&t[5..7]).ok_or_else(bad)?;
    let d = digits(&t[8..10]).ok_or_else(bad)?;
    let h = digits(&t[11..13]).ok_or_else(bad)?;
    let mi = digits(&t[14..16]).ok_or_else(bad)?;
    let s = digits(&t[17..19]).ok_or_else(bad)?;
    let mut rest = &t[19..];
    let mut frac_ns = 0u32;
    if let [b'.', tail @ ..] = rest {
        let n = tail.iter().take_while(|b| b.is_ascii_digit()).count();
        if n == 0 || n > 9 {
            return Err(ParseError::Value(format!(
                "{text:?}: expected 1 to 9 fraction digits"
            )));
        }
        frac_ns = digits(&tail[..n]).ok_or_else(bad)? * 10u32.pow(9 - n as u32);
        rest = &tail[n..];
    }
    let off = offset(rest).ok_or_else(|| {
        ParseError::Value(format!(
            "{text:?}: expected a UTC offset (Z or +hh:mm) at the end"
        ))
    })?;
    let secs = civil_seconds(i64::from(y), mo, d, h, mi, s)
        .map_err(|m| ParseError::Value(format!("{text:?}: {m}")))?;
    to_nanos(secs, frac_ns, off).map_err(|m| ParseError::Value(format!("{text:?} {m}")))
}

/// The fraction and UTC offset that end an ISO 8601 date-time after its
/// seconds (`.186641Z`, `+01:00`, `Z`: the bytes from the 20th on), as
/// [`parse_iso8601`] reads them: the fraction in nanoseconds and the
/// offset in seconds east of UTC. None where it refuses them (and says
/// why). A log whose times differ in their fraction alone (ALB's
/// microseconds) has the rest read once a second.
pub(super) fn iso8601_tail(rest: &[u8]) -> Option<(u32, i64)> {
    const SCALE: [u32; 10] = [
        1_000_000_000,
        100_000_000,
        10_000_000,
        1_000_000,
        100_000,
        10_000,
        1_000,
        100,
        10,
        1,
    ];
    let mut rest = rest;
    let mut frac_ns = 0u32;
    if let [b'.', tail @ ..] = rest {
        // One pass: the digits' value as they are met (at most 9 kept).
        let mut n = 0;
        while let Some(&c) = tail.get(n) {
            let d = c.wrapping_sub(b'0');
            if d > 9 || n == 9 {
                break;
            }
            frac_ns = frac_ns * 10 + u32::from(d);
            n += 1;
        }
        if n == 0 || tail.get(n).is_some_and(u8::is_ascii_digit) {
            return None;
        }
        frac_ns *= SCALE[n];
        rest = &tail[n..];
    }
    Some((frac_ns, offset(rest)?))
}

/// Parses an ISO 8601 date-time in whole seconds whose offset may be left
/// out, meaning UTC, as AWS Network Load Balancer access logs write
/// `time` and `tls_connection_creation_time` (`2018-12-20T02:59:40`: the
/// examples of "Access logs for your Network Load Balancer",
/// <https://docs.aws.amazon.com/elasticloadbalancing/latest/network/load-balancer-access-logs.html>,
/// "Example log entries"). A fraction is refused: the format is read as
/// whole seconds, so requests of one second are spread within it.
///
/// # Examples
/// ```
/// use ratelab::workload::trace::log::time::parse_iso8601_utc_seconds;
/// assert_eq!(parse_iso8601_utc_seconds("2018-12-20T02:59:40"), Ok(1_545_274_780_000_000_000));
/// assert_eq!(parse_iso8601_utc_seconds("2018-12-20T02:59:40Z"), Ok(1_545_274_780_000_000_000));
/// assert!(parse_iso8601_utc_seconds("2018-12-20T02:59:40.5").is_err());
/// ```
pub fn parse_iso8601_utc_seconds(text: &str) -> Result<Nanos, ParseError> {
    let t = text.as_bytes();
    if t.get(19) == Some(&b'.') {
        return Err(ParseError::Value(format!(
            "{text:?}: a fraction of a second, where this format logs whole seconds (yyyy-mm-ddThh:mm:ss, UTC)"
        )));
    }
    if t.len() != 19 {
        return parse_iso8601(text);
    }
    // No offset: UTC. The text with `Z` appended, on the stack.
    let mut z = [b'Z'; 20];
    z[..19].copy_from_slice(t);
    let with_z = std::str::from_utf8(&z)
        .map_err(|_| ParseError::Value(format!("{text:?} is not an ISO 8601 date-time")))?;
    parse_iso8601(with_z).map_err(|e| match e {
        ParseError::Value(m) => {
            ParseError::Value(m.replace(&format!("{with_z:?}"), &format!("{text:?}")))
        }
        e => e,
    })
}

/// Parses W3C `date` (`2019-12-04`) and `time` (`21:02:31`, optionally with
/// a fraction) fields, UTC.
pub fn parse_w3c(date: &str, time: &str) -> Result<Nanos, ParseError> {
    let d = date.as_bytes();
    let t = time.as_bytes();
    if d.len() != 10 || d[4] != b'-' || d[7] != b'-' {
        return Err(ParseError::Value(format!(
            "date {date:?} is not yyyy-mm-dd"
        )));
    }
    if t.len() < 8 || t[2] != b':' || t[5] != b':' {
        return Err(ParseError::Value(format!("time {time:?} is not hh:mm:ss")));
    }
    let num = |b: &[u8], what: &str| {
        digits(b).ok_or_else(|| {
            ParseError::Value(format!(
                "{what} {:?}: not a number",
                String::from_utf8_lossy(b)
            ))
        })
    };
    let (y, mo, dd) = (
        num(&d[0..4], "date")?,
        num(&d[5..7], "date")?,
        num(&d[8..10], "date")?,
    );
    let (h, mi, s) = (
        num(&t[0..2], "time")?,
        num(&t[3..5], "time")?,
        num(&t[6..8], "time")?,
    );
    let mut frac_ns = 0;
    if t.len() > 8 {
        match &t[8..] {
            [b'.', f @ ..] if !f.is_empty() && f.len() <= 9 => {
                frac_ns = num(f, "time")? * 10u32.pow(9 - f.len() as u32);
            }
            _ => {
                return Err(ParseError::Value(format!(
                    "time {time:?} is not hh:mm:ss[.fff]"
                )))
            }
        }
    }
    let secs = civil_seconds(i64::from(y), mo, dd, h, mi, s)
        .map_err(|m| ParseError::Value(format!("{date} {time}: {m}")))?;
    to_nanos(secs, frac_ns, 0).map_err(|m| ParseError::Value(format!("{date} {time} {m}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The epoch values below are from `date -u -d ... +%s` (GNU coreutils).
    #[test]
    fn known_instants() {
        assert_eq!(parse_clf("[01/Jan/1970:00:00:00 +0000]"), Ok(0));
        assert_eq!(
            parse_clf("29/Feb/2024:23:59:59 +0100").unwrap(),
            1_709_247_599 * 1_000_000_000
        );
        assert_eq!(
            parse_iso8601("2024-02-29T23:59:59+01:00").unwrap(),
            1_709_247_599 * 1_000_000_000
        );
        assert_eq!(
            parse_iso8601("2018-07-02T22:23:00.186641Z").unwrap(),
            1_530_570_180_186_641_000
        );
        assert_eq!(
            parse_w3c("2019-12-04", "21:02:31").unwrap(),
            1_575_493_351 * 1_000_000_000
        );
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
    }

    #[test]
    fn bad_times_say_why() {
        for (t, want) in [
            ("30/Feb/2024:00:00:00 +0000", "day 30"),
            ("01/Xyz/2024:00:00:00 +0000", "unknown month"),
            ("01/Jan/2024:25:00:00 +0000", "time of day"),
            ("01/Jan/2024:00:00:00 x0000", "offset"),
            ("01/Jan/1969:23:59:59 +0000", "before 1970"),
        ] {
            let e = parse_clf(t).unwrap_err().to_string();
            assert!(e.contains(want), "{t}: {e}");
        }
        assert!(parse_iso8601("2024-01-01T00:00:00X")
            .unwrap_err()
            .to_string()
            .contains("offset"));
        assert!(parse_iso8601("2024-01-01T00:00:00.1234567890Z")
            .unwrap_err()
            .to_string()
            .contains("fraction"));
        assert!(parse_w3c("2024/01/01", "00:00:00").is_err());
    }
}
