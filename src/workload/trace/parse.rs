//! Parsing one field: exact decimal times in any unit, RFC 3339 timestamps,
//! weights, and which header names are time columns.

use super::error::ParseError;
use super::format::TimeUnit;

/// Parses a non-negative decimal number of `unit`s into nanoseconds exactly.
#[inline]
pub fn parse_decimal_ns(text: &str, scale_ns: u64) -> Result<u64, ParseError> {
    let b = text.as_bytes();
    if !b.is_empty()
        && b.len() <= 19
        && let Some(ns) = whole_number(b).and_then(|n| n.checked_mul(scale_ns))
    {
        // The common case (a whole number of at most 19 digits, which
        // always fits a u64), inlined into the line's parse; anything else
        // takes the general path.
        return Ok(ns);
    }
    parse_decimal_general(text, scale_ns)
}

/// The value of 1 to 19 ASCII digits (None: another byte), the last ones
/// eight at a time: a digit at a time was a chain of dependent
/// multiplications, 4% of a one-candidate decision run.
#[inline]
fn whole_number(b: &[u8]) -> Option<u64> {
    let (head, rest) = b.split_at(b.len() % 8);
    let mut n = 0u64;
    for &d in head {
        let x = d.wrapping_sub(b'0');
        if x > 9 {
            return None;
        }
        n = n * 10 + u64::from(x);
    }
    for chunk in rest.chunks_exact(8) {
        n = n * 100_000_000 + eight_digits(chunk.try_into().ok()?)?;
    }
    Some(n)
}

/// The value of eight ASCII digits (None: another byte) in three
/// multiplications of the bytes as one little-endian word: pairs, then
/// fours, then the eight (each lane's sum fits its lane, so nothing
/// carries between them).
#[inline]
fn eight_digits(b: [u8; 8]) -> Option<u64> {
    const HIGH: u64 = 0xF0F0_F0F0_F0F0_F0F0;
    const ZEROS: u64 = 0x3030_3030_3030_3030;
    let v = u64::from_le_bytes(b);
    // A digit is 0x30..=0x39: high nibble 3, and still 3 after adding 6.
    if v & HIGH != ZEROS || v.wrapping_add(0x0606_0606_0606_0606) & HIGH != ZEROS {
        return None;
    }
    // The first character is the lowest byte, and the most significant.
    let x = v - ZEROS;
    let x = (x.wrapping_mul(10) + (x >> 8)) & 0x00FF_00FF_00FF_00FF;
    let x = (x.wrapping_mul(1 + (100 << 16)) >> 16) & 0x0000_FFFF_0000_FFFF;
    Some(x.wrapping_mul(1 + (10_000 << 32)) >> 32)
}

/// [`parse_decimal_ns`] of any text: a fraction, spaces around, or an
/// error.
#[cold]
fn parse_decimal_general(text: &str, scale_ns: u64) -> Result<u64, ParseError> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fast_path_reads_as_the_general_one() {
        // Every length the fast path takes, every digit in every place, and
        // one byte that is no digit (neighbours of '0' and '9' among them)
        // anywhere: the same value or the same message.
        let mut texts = Vec::new();
        for len in 1..=19usize {
            for at in 0..len {
                for d in b"0123456789/:. a-" {
                    let mut t: Vec<u8> = (0..len)
                        .map(|i| b'0' + ((i * 7 + len) % 10) as u8)
                        .collect();
                    t[at] = *d;
                    texts.push(String::from_utf8(t).unwrap());
                }
            }
        }
        texts.push("9".repeat(19));
        texts.push("18446744073709551615".into());
        for t in &texts {
            for scale in [1, 1_000_000, 1_000_000_000] {
                assert_eq!(
                    parse_decimal_ns(t, scale),
                    parse_decimal_general(t, scale),
                    "{t:?} x {scale}"
                );
                if t.bytes().all(|b| b.is_ascii_digit()) {
                    let want = t.parse::<u64>().ok().and_then(|v| v.checked_mul(scale));
                    assert_eq!(parse_decimal_ns(t, scale).ok(), want, "{t:?}");
                }
            }
        }
        assert_eq!(eight_digits(*b"01234567"), Some(1_234_567));
        assert_eq!(eight_digits(*b"99999999"), Some(99_999_999));
        assert_eq!(eight_digits(*b"9999999:"), None);
    }
}
