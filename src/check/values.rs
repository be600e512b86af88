//! JSON scalars as numbers, and exact equality between them.

use serde_json::Value;

/// Both values as f64, when both are numbers.
pub(super) fn num_pair(a: &Value, b: &Value) -> Option<(f64, f64)> {
    Some((a.as_f64()?, b.as_f64()?))
}

/// An integer as i128, when it is one (i64 or u64).
pub(super) fn int_of(v: &Value) -> Option<i128> {
    v.as_i64()
        .map(i128::from)
        .or_else(|| v.as_u64().map(i128::from))
}

/// Exact equality of JSON scalars (integers compared exactly, other numbers as f64).
pub(super) fn values_equal(a: &Value, b: &Value) -> bool {
    match (int_of(a), int_of(b)) {
        (Some(x), Some(y)) => x == y,
        _ => match num_pair(a, b) {
            Some((x, y)) => x == y,
            None => a == b,
        },
    }
}
