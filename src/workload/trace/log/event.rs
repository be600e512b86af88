//! One parsed line's event: its time (any of the formats' time kinds,
//! or a bare number in the stated unit) and its weight.

use super::ParseError;
use super::*;

/// The time, key and weight of a split line (the time through `cache`).
pub(super) fn event_of(
    b: &Bound,
    cache: &mut (String, Nanos),
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
    let cached = cache.0.as_bytes();
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
        cache.1
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
        cache.0.clear();
        cache.0.push_str(text);
        if let Some(tm) = second {
            cache.0.push('\t');
            cache.0.push_str(tm);
        }
        cache.1 = t;
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
    let numeric = text.bytes().all(|b| b.is_ascii_digit() || b == b'.');
    match unit {
        TimeUnit::Rfc3339 => time::parse_iso8601(text),
        _ if !numeric => time::parse_iso8601(text),
        TimeUnit::Ns => parse_decimal_ns(text, 1),
        TimeUnit::Ms => parse_decimal_ns(text, 1_000_000),
        TimeUnit::S => parse_decimal_ns(text, 1_000_000_000),
    }
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
