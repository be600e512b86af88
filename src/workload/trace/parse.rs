//! Parsing one field: exact decimal times in any unit, RFC 3339 timestamps,
//! weights, and which header names are time columns.

use super::error::ParseError;
use super::format::TimeUnit;

/// Parses a non-negative decimal number of `unit`s into nanoseconds exactly.
pub fn parse_decimal_ns(text: &str, scale_ns: u64) -> Result<u64, ParseError> {
    let b = text.as_bytes();
    if !b.is_empty() && b.len() <= 19 && b.iter().all(u8::is_ascii_digit) {
        // The common case (a whole number of at most 19 digits, which
        // always fits a u64) without the general path's passes over it.
        let whole = b.iter().fold(0u64, |n, &d| n * 10 + u64::from(d - b'0'));
        return whole
            .checked_mul(scale_ns)
            .ok_or_else(|| ParseError::Value(format!("{text:?} overflows u64 nanoseconds")));
    }
    let t = text.trim();
    let (int, frac) = match t.split_once('.') {
        Some((i, f)) => (i, f),
        None => (t, ""),
    };
    let digits_only = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if int.is_empty() && frac.is_empty() || !digits_only(int) || !digits_only(frac) {
        return Err(ParseError::Value(format!(
            "{t:?} is not a non-negative decimal number"
        )));
    }
    let whole: u64 = if int.is_empty() {
        0
    } else {
        int.parse()
            .map_err(|_| ParseError::Value(format!("{t:?} is too large")))?
    };
    let mut ns = whole
        .checked_mul(scale_ns)
        .ok_or_else(|| ParseError::Value(format!("{t:?} overflows u64 nanoseconds")))?;
    // fractional part: digits beyond the scale's precision must be zero
    let mut unit = scale_ns;
    for (i, b) in frac.bytes().enumerate() {
        let d = u64::from(b - b'0');
        if !unit.is_multiple_of(10) {
            if d != 0 {
                return Err(ParseError::Value(format!(
                    "{t:?} has more precision than a nanosecond (digit {})",
                    i + 1
                )));
            }
            continue;
        }
        unit /= 10;
        ns = ns
            .checked_add(d * unit)
            .ok_or_else(|| ParseError::Value(format!("{t:?} overflows u64 nanoseconds")))?;
    }
    Ok(ns)
}

pub(crate) fn parse_time(value: &str, unit: TimeUnit) -> Result<u64, ParseError> {
    match unit {
        TimeUnit::Ns => parse_decimal_ns(value, 1),
        TimeUnit::Ms => parse_decimal_ns(value, 1_000_000),
        TimeUnit::S => parse_decimal_ns(value, 1_000_000_000),
        TimeUnit::Rfc3339 => {
            let dt = chrono::DateTime::parse_from_rfc3339(value.trim()).map_err(|e| {
                ParseError::Value(format!("{value:?} is not an RFC 3339 date-time ({e})"))
            })?;
            let ns = dt
                .timestamp_nanos_opt()
                .ok_or_else(|| ParseError::Value(format!("{value:?} is out of range")))?;
            u64::try_from(ns)
                .map_err(|_| ParseError::Value(format!("{value:?} is before 1970-01-01")))
        }
    }
}

/// Column roles found in a header.
#[derive(Debug, Clone, Copy)]
pub(super) struct Columns {
    pub(super) time: usize,
    pub(super) unit: TimeUnit,
    pub(super) key: usize,
    pub(super) weight: Option<usize>,
    /// Fields of the header: a row with more or fewer is malformed.
    pub(super) width: usize,
}

pub(crate) fn time_column(name: &str, default: TimeUnit) -> Option<TimeUnit> {
    match name {
        "t_ns" => Some(TimeUnit::Ns),
        "t_ms" => Some(TimeUnit::Ms),
        "t_s" => Some(TimeUnit::S),
        "time" | "timestamp" | "t" => Some(default),
        _ => None,
    }
}

pub(crate) fn parse_weight(text: &str) -> Result<u64, ParseError> {
    match text.trim().parse::<u64>() {
        Ok(w) if (1..=MAX_WEIGHT).contains(&w) => Ok(w),
        _ => Err(ParseError::Value(format!(
            "weight {:?}: expected a whole number >= 1 (at most {MAX_WEIGHT})",
            text.trim()
        ))),
    }
}

/// Largest weight of one request: a limit is at most u32::MAX, and sums of
/// weights (a key's window, a run's admitted total) must not overflow u64.
pub const MAX_WEIGHT: u64 = u32::MAX as u64;
