//! The common JSON access-log line read without serde: one flat object
//! whose strings hold no escape, whose numbers are integers and whose
//! values are not objects or arrays (what Envoy's `json_format` writes for
//! nearly every request). Such a line is checked byte by byte against
//! JSON's grammar and its wanted values written out, as
//! [`super::json::Json`]'s serde reading gives them; any other line (an
//! escape, a fraction or exponent, a nested value, a syntax error) is
//! left to that reading, so its value or its message is the one serde
//! gives. Reading an Envoy JSON log through serde cost 2.5 times its CSV;
//! most of that was serde's general machinery for a line this shape.

use super::bytes::find_json_stop;

/// What a flat line holds under a wanted name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Flat {
    /// Not in the line.
    Unset,
    /// `null`.
    Null,
    /// Written out in the scratch text.
    At(u32, u32),
}

/// Reads `line` as a flat object: each wanted name's last value written
/// into `scratch` and its place put in `slots` (same order as `wanted`).
/// None: the line is not of the shape read here (it may still be valid
/// JSON); `slots` and `scratch` are then to be reset by the caller.
pub(super) fn read(
    line: &str,
    wanted: &[String],
    slots: &mut [Flat],
    scratch: &mut String,
) -> Option<()> {
    let b = line.as_bytes();
    // The lengths of the wanted names, a bit each (64 and over: `long`).
    let lengths = wanted.iter().fold(0u64, |m, w| {
        m | 1u64.checked_shl(w.len() as u32).unwrap_or(0)
    });
    let long = wanted.iter().any(|w| w.len() >= 64);
    let mut p = skip_ws(b, 0);
    if b.get(p) != Some(&b'{') {
        return None;
    }
    p = skip_ws(b, p + 1);
    if b.get(p) == Some(&b'}') {
        return (skip_ws(b, p + 1) == b.len()).then_some(());
    }
    loop {
        // A name: a string without an escape.
        let (k0, k1) = plain_string(b, p)?;
        p = skip_ws(b, k1 + 1);
        if b.get(p) != Some(&b':') {
            return None;
        }
        p = skip_ws(b, p + 1);
        let key = &b[k0..k1];
        // Length, then first byte, before the bytes: most names are not
        // wanted, and a call to compare them cost more than the rest (a
        // fifth of the line's reading, when asked of every name).
        let maybe = match key.len() {
            n @ 0..64 => lengths & (1 << n) != 0,
            _ => long,
        };
        let want = if maybe {
            wanted.iter().position(|w| {
                let w = w.as_bytes();
                w.len() == key.len() && w.first() == key.first() && w == key
            })
        } else {
            None
        };
        let (value, end) = value(b, p)?;
        if let Some(i) = want {
            slots[i] = match value {
                Value::Null => Flat::Null,
                Value::Text(a, z) => {
                    let start = scratch.len() as u32;
                    scratch.push_str(&line[a..z]);
                    Flat::At(start, scratch.len() as u32)
                }
                // A negative integer (`-0` is a float to serde) or a
                // fraction: left to serde's reading.
                Value::Other => return None,
            };
        }
        p = skip_ws(b, end);
        match b.get(p) {
            Some(b',') => p = skip_ws(b, p + 1),
            Some(b'}') => return (skip_ws(b, p + 1) == b.len()).then_some(()),
            _ => return None,
        }
    }
}

/// A value as a wanted name takes it.
enum Value {
    Null,
    /// Its text as serde writes it: a string's content, a non-negative
    /// integer's digits, `true` or `false`.
    Text(usize, usize),
    /// Valid, but written otherwise by serde (a negative integer).
    Other,
}

/// The value at `p` and where it ends; None for anything but a string
/// without an escape, an integer of at most 18 digits, `true`, `false`
/// or `null`.
fn value(b: &[u8], p: usize) -> Option<(Value, usize)> {
    match *b.get(p)? {
        b'"' => {
            let (a, z) = plain_string(b, p)?;
            Some((Value::Text(a, z), z + 1))
        }
        b'-' => {
            let z = integer(b, p + 1)?;
            Some((Value::Other, z))
        }
        b'0'..=b'9' => {
            let z = integer(b, p)?;
            Some((Value::Text(p, z), z))
        }
        b't' if b[p..].starts_with(b"true") => Some((Value::Text(p, p + 4), p + 4)),
        b'f' if b[p..].starts_with(b"false") => Some((Value::Text(p, p + 5), p + 5)),
        b'n' if b[p..].starts_with(b"null") => Some((Value::Null, p + 4)),
        _ => None,
    }
}

/// The end of the digits of an integer starting at `p` (no leading zero,
/// at most 18 digits: an `i64` and a `u64` either way), when nothing
/// that would make it a float (`.`, `e`, `E`) follows.
fn integer(b: &[u8], p: usize) -> Option<usize> {
    // A plain loop: `take_while(..).count()` over the rest of the line
    // cost a few hundred instructions a number.
    let mut z = p;
    while z < b.len() && b[z].is_ascii_digit() {
        z += 1;
    }
    let digits = z - p;
    let ok = (1..=18).contains(&digits)
        && !(digits > 1 && b[p] == b'0')
        && !matches!(b.get(z), Some(b'.' | b'e' | b'E'));
    ok.then_some(z)
}

/// The content of the string whose opening quote is at `p`: (first byte,
/// closing quote). None: not a string, or one holding an escape or a
/// control byte.
fn plain_string(b: &[u8], p: usize) -> Option<(usize, usize)> {
    if b.get(p) != Some(&b'"') {
        return None;
    }
    let z = find_json_stop(b, p + 1)?;
    (b[z] == b'"').then_some((p + 1, z))
}

/// The first byte at or after `p` that is not JSON white space.
fn skip_ws(b: &[u8], mut p: usize) -> usize {
    while matches!(b.get(p), Some(b' ' | b'\t' | b'\n' | b'\r')) {
        p += 1;
    }
    p
}
