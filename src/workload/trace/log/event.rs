//! One parsed line's event: its time (any of the formats' time kinds,
//! or a bare number in the stated unit) and its weight.

use super::ParseError;
use super::*;

/// The last time text read and its value: a busy log repeats a second's
/// text thousands of times. For an ISO 8601 time, also the nanoseconds
/// of its date and time of day (before its fraction and offset): a text
/// that differs from the last in its fraction or offset alone (ALB's
/// microseconds, a different one on every line) has only those read.
#[derive(Debug, Default)]
pub(super) struct TimeCache {
    text: String,
    value: Nanos,
    /// Seconds since the epoch of the text's first 19 bytes
    /// (`yyyy-mm-ddThh:mm:ss`, before its offset is applied), in
    /// nanoseconds; None when the time is not read by `parse_iso8601`.
    head: Option<i128>,
}

/// The value of ISO 8601 time `text` when its first 19 bytes are the
/// cached text's: those bytes passed every check `parse_iso8601` makes
/// of them, so the value is theirs with `text`'s own fraction and offset.
/// None when the cache cannot tell (the text is then parsed whole, which
/// also says what is wrong with it).
#[inline]
fn same_second(cache: &TimeCache, text: &[u8]) -> Option<Nanos> {
    let head = cache.head?;
    let cached = cache.text.as_bytes();
    if text.len() < 20 || cached.len() < 20 || !same_bytes(&cached[..19], &text[..19]) {
        return None;
    }
    let (frac_ns, offset) = time::iso8601_tail(&text[19..])?;
    let ns = head - i128::from(offset) * 1_000_000_000 + i128::from(frac_ns);
    u64::try_from(ns).ok()
}

/// The time, key and weight of a split line (the time through `cache`).
pub(super) fn event_of(
    b: &Bound,
    cache: &mut TimeCache,
    f: &Fields,
    line: &str,
    held: &mut String,
) -> Result<(Nanos, Option<std::ops::Range<usize>>, u64), ParseError> {
    // The time, through the cache.
    let text = f
        .opt(b.time)
        .ok_or_else(|| ParseError::Value("missing".into()).in_field(&b.time_name))?;
    // A W3C time is two fields (date, time): cached as both, a tab apart.
    let second = match b.kind {
        TimeKind::W3c { time_field } => Some(f.get(time_field)),
        _ => None,
    };
    let cached = cache.text.as_bytes();
    let same = match second {
        None => same_bytes(cached, text.as_bytes()),
        Some(tm) => {
            cached.len() == text.len() + 1 + tm.len()
                && same_bytes(&cached[..text.len()], text.as_bytes())
                && cached[text.len()] == b'\t'
                && same_bytes(&cached[text.len() + 1..], tm.as_bytes())
        }
    };
    let t = if !text.is_empty() && same {
        cache.value
    } else if let Some(t) = same_second(cache, text.as_bytes()) {
        cache.text.clear();
        cache.text.push_str(text);
        cache.value = t;
        t
    } else {
        let t = match b.kind {
            TimeKind::Clf => time::parse_clf(text),
            TimeKind::IsoSeconds | TimeKind::Iso => time::parse_iso8601(text),
            TimeKind::IsoUtcSeconds => time::parse_iso8601_utc_seconds(text),
            TimeKind::Decimal(scale) => parse_decimal_ns(text, scale),
            TimeKind::W3c { time_field } => time::parse_w3c(text, f.get(time_field)),
            TimeKind::Auto(unit) => auto_time(text, unit),
        }
        .map_err(|m| m.in_field(&b.time_name))?;
        cache.text.clear();
        cache.text.push_str(text);
        if let Some(tm) = second {
            cache.text.push('\t');
            cache.text.push_str(tm);
        }
        cache.value = t;
        // The seconds before the fraction and offset: the value with
        // them taken back out.
        // (Only for a text `parse_iso8601` read: a JSON log's ISO
        // `start_time` too.)
        let iso = match b.kind {
            TimeKind::IsoSeconds | TimeKind::Iso => true,
            TimeKind::Auto(unit) => unit == TimeUnit::Rfc3339 || !is_decimal(text),
            _ => false,
        };
        cache.head = iso
            .then(|| text.as_bytes().get(19..).and_then(time::iso8601_tail))
            .flatten()
            .map(|(frac_ns, offset)| {
                i128::from(t) - i128::from(frac_ns) + i128::from(offset) * 1_000_000_000
            });
        t
    };
    let w = match &b.weight {
        None => 1,
        // A JSON line without the field (or with null) says nothing of
        // the request's weight: refused, not read as 1.
        Some((i, name)) => f
            .opt(*i)
            .ok_or_else(|| {
                ParseError::Value("missing or null: expected a whole number (the weight)".into())
            })
            .and_then(weight_of)
            .map_err(|m| m.in_field(name))?,
    };
    let key = b.key.eval(f, held)?;
    let at = match key {
        Some(k) => {
            let (ls, ks) = (line.as_ptr() as usize, k.as_ptr() as usize);
            if ks >= ls && ks + k.len() <= ls + line.len() {
                Some(ks - ls..ks - ls + k.len())
            } else {
                held.clear();
                held.push_str(k);
                None
            }
        }
        None => None,
    };
    Ok((t, at, w))
}

/// `a == b` without a call to `memcmp`: a time is a few dozen bytes,
/// compared on every line against the previous line's.
#[inline]
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i + 8 <= a.len() {
        let x = u64::from_ne_bytes(a[i..i + 8].try_into().unwrap_or_default());
        let y = u64::from_ne_bytes(b[i..i + 8].try_into().unwrap_or_default());
        if x != y {
            return false;
        }
        i += 8;
    }
    a[i..] == b[i..]
}

/// A JSON time: a decimal number in `unit`, or an ISO 8601 string.
fn auto_time(text: &str, unit: TimeUnit) -> Result<Nanos, ParseError> {
    match unit {
        TimeUnit::Rfc3339 => time::parse_iso8601(text),
        _ if !is_decimal(text) => time::parse_iso8601(text),
        TimeUnit::Ns => parse_decimal_ns(text, 1),
        TimeUnit::Ms => parse_decimal_ns(text, 1_000_000),
        TimeUnit::S => parse_decimal_ns(text, 1_000_000_000),
    }
}

/// Whether a JSON time is a bare number (read in its unit), not ISO 8601.
fn is_decimal(text: &str) -> bool {
    text.bytes().all(|b| b.is_ascii_digit() || b == b'.')
}

/// A weight field: a whole number; `-`, empty or 0 count as 1 (a request
/// costs at least one unit: nginx logs 0 body bytes for a 304).
fn weight_of(text: &str) -> Result<u64, ParseError> {
    let t = text.trim();
    if t.is_empty() || t == "-" {
        return Ok(1);
    }
    let w = t
        .parse::<u64>()
        .map(|w| w.max(1))
        .map_err(|_| ParseError::Value(format!("{t:?} is not a whole number (a weight)")))?;
    if w > crate::workload::trace::parse::MAX_WEIGHT {
        return Err(ParseError::Value(format!(
            "{t:?}: a weight over {} (sums of weights would overflow)",
            crate::workload::trace::parse::MAX_WEIGHT
        )));
    }
    Ok(w)
}
