//! Client addresses in log fields: one address with or without a port
//! (`1.2.3.4:5678`, `[::1]:80`, ALB's unbracketed `2001:db8::5:8080`),
//! the entry of an `X-Forwarded-For` list its [`Xff`] rule chooses, masked
//! to a network prefix and written as the key's text. The key expressions
//! ([`super::key`]) call these for `ip` and `NAME/N` terms.

use super::key::{AddrRule, Xff};
use super::ParseError;
use std::fmt::Write as _;
use std::net::IpAddr;

/// The address in a field: the first entry of a list (`X-Forwarded-For`),
/// without a port (`1.2.3.4:5678`, `[::1]:80`); the tests' reading.
#[cfg(test)]
fn address_of(v: &str) -> Option<IpAddr> {
    address_with(
        v,
        AddrRule {
            port: false,
            xff: Some(Xff::First),
        },
    )
}

/// One address as written, with a port when `port` (split at the last
/// colon: `2001:db8::5:8080` is `2001:db8::5` port 8080, as ALB writes
/// IPv6 without brackets) or without (`[::1]:80` and `1.2.3.4:80` still
/// lose their port, unambiguously).
fn one_address(v: &str, port: bool) -> Option<IpAddr> {
    let v = v.trim();
    if let Some(rest) = v.strip_prefix('[') {
        let (a, after) = rest.split_once(']')?;
        if !(after.is_empty() || after.strip_prefix(':').is_some_and(is_port)) {
            return None;
        }
        return a.parse::<std::net::Ipv6Addr>().ok().map(IpAddr::V6);
    }
    if port {
        return match v.rsplit_once(':') {
            Some((a, p)) if is_port(p) => a.parse().ok(),
            // No port: an address alone (a value AWS writes without one).
            _ => v.parse::<std::net::Ipv4Addr>().ok().map(IpAddr::V4),
        };
    }
    if let Ok(a) = v.parse::<IpAddr>() {
        return Some(a);
    }
    v.rsplit_once(':')
        .filter(|(_, p)| is_port(p))
        .and_then(|(a, _)| a.parse::<std::net::Ipv4Addr>().ok())
        .map(IpAddr::V4)
}

fn is_port(p: &str) -> bool {
    !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit())
}

/// The address a field holds under `rule`: one address (with a port when
/// the rule says so), or the entry of an `X-Forwarded-For` list its
/// [`Xff`] chooses. None: no entry chosen is an address.
pub(super) fn address_with(v: &str, rule: AddrRule) -> Option<IpAddr> {
    let Some(xff) = rule.xff else {
        return one_address(v, rule.port);
    };
    let entry = |e: &str| one_address(e, rule.port);
    match xff {
        Xff::First => v.split(',').find_map(entry),
        Xff::Last => v.rsplit(',').next().and_then(entry),
        Xff::TrustedHops(n) => v
            .rsplit(',')
            .nth(n as usize)
            .and_then(entry)
            .or_else(|| v.rsplit(',').next().and_then(entry)),
    }
}

#[cfg(test)]
fn write_prefix(v: &str, b4: u8, b6: u8, out: &mut String) -> Result<(), ParseError> {
    let addr =
        address_of(v).ok_or_else(|| ParseError::Value(format!("{v:?} is not an IP address")))?;
    write_masked(addr, b4, b6, out);
    Ok(())
}

/// The address of `v` under `rule`, masked. An `X-Forwarded-For` list
/// with no address where its rule looks (`unknown`, `-` for no header)
/// is its own key, as written: Envoy then uses the connection's peer,
/// which such a log does not record.
pub(super) fn write_prefix_with(
    v: &str,
    b4: u8,
    b6: u8,
    rule: AddrRule,
    out: &mut String,
) -> Result<(), ParseError> {
    match address_with(v, rule) {
        Some(a) => write_masked(a, b4, b6, out),
        None if rule.xff.is_some() => out.push_str(v.trim()),
        // A JSON log without the field (an Envoy json_format that logs no
        // downstream_remote_address): say so, not `"" is not an address`.
        None if v.trim().is_empty() => {
            return Err(ParseError::Value(
                "missing, null or empty: expected the client's address (name the field that holds it with --key NAME/32/128)".into(),
            ))
        }
        None if rule.port => {
            return Err(ParseError::Value(format!(
                "{v:?} is not an address:port (an IPv4 or IPv6 address, then a colon and the port)"
            )))
        }
        None => return Err(ParseError::Value(format!("{v:?} is not an IP address"))),
    }
    Ok(())
}

/// An IPv4-mapped IPv6 address (`::ffff:192.0.2.1`, RFC 4291 §2.5.5.2) is
/// the IPv4 client it maps: a dual-stack socket (`listen [::]:80
/// ipv6only=off`) hands nginx such a peer, and `ngx_inet6_ntop`
/// (src/core/ngx_inet.c) writes it so in `$remote_addr`. Read as IPv6,
/// `ip/24/64` would put every IPv4 client in one `::/64` key and `ip`
/// would split a client seen over both sockets into two keys.
fn write_masked(addr: IpAddr, b4: u8, b6: u8, out: &mut String) {
    match addr.to_canonical() {
        IpAddr::V4(a) => {
            let bits = u32::from(a);
            let masked = if b4 == 0 {
                0
            } else {
                bits & (u32::MAX << (32 - u32::from(b4)))
            };
            // Dotted decimal by hand: `Display` through `fmt` was a tenth
            // of the reading time of a log keyed by address.
            for (n, o) in masked.to_be_bytes().into_iter().enumerate() {
                if n > 0 {
                    out.push('.');
                }
                push_u8(o, out);
            }
            if b4 < 32 {
                out.push('/');
                push_u8(b4, out);
            }
        }
        IpAddr::V6(a) => {
            let bits = u128::from(a);
            let masked = if b6 == 0 {
                0
            } else {
                bits & (u128::MAX << (128 - u32::from(b6)))
            };
            push_v6(std::net::Ipv6Addr::from(masked), out);
            if b6 < 128 {
                out.push('/');
                push_u8(b6, out);
            }
        }
    }
}

/// Whether `v` is an IPv4 address exactly as `Display` writes it (four
/// decimal octets of at most 255, no leading zeros, nothing else): such a
/// key is its own text, and about a tenth of a log keyed by address went
/// to parsing and writing it again.
fn is_dotted_quad(v: &str) -> bool {
    let b = v.as_bytes();
    let n = b.len();
    if !(7..=15).contains(&n) {
        return false;
    }
    // It runs on every line of a log keyed by address: each octet read
    // as one, two or three digits, no loop a byte (a loop a byte with its
    // checks was some 180 instructions an address; judging each octet's
    // slice afterwards cost twice that; a version without a branch a
    // byte, from masks of dots and digits, measured slower). Past the
    // end reads as 0, which is neither a digit nor a dot.
    let at = |k: usize| b.get(k).copied().unwrap_or(0).wrapping_sub(b'0');
    const DOT: u8 = b'.'.wrapping_sub(b'0');
    let mut i = 0;
    for octet in 0..4 {
        let d0 = at(i);
        if d0 > 9 {
            return false;
        }
        let d1 = at(i + 1);
        let (value, digits) = if d1 > 9 {
            (u32::from(d0), 1)
        } else {
            let d2 = at(i + 2);
            if d2 > 9 {
                (u32::from(d0) * 10 + u32::from(d1), 2)
            } else {
                let v = u32::from(d0) * 100 + u32::from(d1) * 10 + u32::from(d2);
                (v, 3)
            }
        };
        if value > 255 || (digits > 1 && d0 == 0) {
            return false;
        }
        i += digits;
        if octet < 3 {
            if at(i) != DOT {
                return false;
            }
            i += 1;
        }
    }
    i == n
}

/// The value of each lower-case hex digit, 255 for any other byte (a
/// look-up, not a branch a range, on every byte of an IPv6 key).
const LOWER_HEX: [u8; 256] = {
    let mut t = [255u8; 256];
    let mut i = 0;
    while i < 16 {
        t[b"0123456789abcdef"[i] as usize] = i as u8;
        i += 1;
    }
    t
};

/// Whether `v` is an IPv6 address exactly as `Display` writes it and
/// the key `ip` keeps it IPv6 (RFC 5952's form, which `inet_ntop` and so
/// nginx, Envoy and ALB write: lower-case hex groups without leading
/// zeros, the longest run of two or more zero groups, the first of equal
/// ones, as `::`; not an IPv4-mapped address, which is its IPv4 client):
/// such a key is its own text. Parsing it and writing it back through
/// `fmt` cost some 3,600 instructions a line, half again a whole
/// `combined` line's reading, on a log with a quarter of its clients on
/// IPv6.
fn is_canonical_v6(v: &str) -> bool {
    let b = v.as_bytes();
    if !(2..=39).contains(&b.len()) {
        return false;
    }
    let mut segs = [0u16; 8];
    let mut n = 0;
    // Groups written before the `::`.
    let mut gap: Option<usize> = None;
    let mut i = 0;
    if b.starts_with(b"::") {
        gap = Some(0);
        i = 2;
    }
    while i < b.len() {
        let start = i;
        let mut value = 0u32;
        while i < b.len() && i - start < 4 {
            let d = LOWER_HEX[usize::from(b[i])];
            if d > 15 {
                break;
            }
            value = value * 16 + u32::from(d);
            i += 1;
        }
        let digits = i - start;
        if digits == 0 || (digits > 1 && b[start] == b'0') || n == 8 {
            return false;
        }
        segs[n] = value as u16;
        n += 1;
        if i == b.len() {
            break;
        }
        if b[i] != b':' {
            return false;
        }
        i += 1;
        if b[i..].starts_with(b":") {
            if gap.is_some() {
                return false;
            }
            gap = Some(n);
            i += 1;
        } else if i == b.len() {
            return false;
        }
    }
    // The zero groups `::` stands for; a run of zeros written out must be
    // shorter (before it) or no longer (after it), and none beside it.
    let run = match gap {
        None if n == 8 => 0,
        Some(g) if n <= 6 => {
            if (g > 0 && segs[g - 1] == 0) || (g < n && segs[g] == 0) {
                return false;
            }
            8 - n
        }
        _ => return false,
    };
    let g = gap.unwrap_or(n);
    let longest = |part: &[u16]| {
        let (mut best, mut now) = (0, 0);
        for &x in part {
            now = if x == 0 { now + 1 } else { 0 };
            best = best.max(now);
        }
        best
    };
    let (before, after) = (longest(&segs[..g]), longest(&segs[g..n]));
    let written_ok = if run == 0 {
        before < 2
    } else {
        before < run && after <= run
    };
    // IPv4-mapped: five zero groups, then ffff (group k of the eight, the
    // `::`'s run put back).
    let at = |k: usize| match k {
        k if k < g => segs[k],
        k if k < g + run => 0,
        k => segs[k - run],
    };
    let mapped = (0..5).all(|k| at(k) == 0) && at(5) == 0xffff;
    written_ok && !mapped
}

/// The address a value is keyed by under `rule` when it is written as
/// its key is (a dotted quad, alone, with a port, or the entry of a list
/// its rule chooses; with `v6`, an IPv6 address as `Display` writes it,
/// alone, in brackets with or without a port, or before a port when the
/// rule has one): a slice of the value, nothing parsed or written. None:
/// the general path decides (any other address, a value that is none, a
/// list whose entry is not one).
pub(super) fn plain_address(v: &str, rule: AddrRule, v6: bool) -> Option<&str> {
    if is_dotted_quad(v) {
        return Some(v);
    }
    // The entry `address_with` reads first: where it is an address, it
    // is the one chosen.
    let entry = trim(match rule.xff {
        None => v,
        Some(Xff::Last) => v.rsplit(',').next()?,
        Some(Xff::First) => v.split(',').next()?,
        Some(Xff::TrustedHops(n)) => v.rsplit(',').nth(n as usize)?,
    });
    // The entry is a slice of `v`: as long, it is `v`, judged above.
    if entry.len() != v.len() && is_dotted_quad(entry) {
        return Some(entry);
    }
    // At the last colon (a byte search from the end: `rsplit_once` was a
    // tenth of an ALB line's read).
    let split = entry
        .bytes()
        .rposition(|c| c == b':')
        .map(|i| (&entry[..i], &entry[i + 1..]));
    // `a.b.c.d:port` loses its port with or without the port rule.
    if let Some((a, p)) = split
        && is_port(p)
        && is_dotted_quad(a)
    {
        return Some(a);
    }
    if !v6 {
        return None;
    }
    if let Some(rest) = entry.strip_prefix('[') {
        let (a, after) = rest.split_once(']')?;
        let port_ok = after.is_empty() || after.strip_prefix(':').is_some_and(is_port);
        return (port_ok && is_canonical_v6(a)).then_some(a);
    }
    if rule.port {
        // Split at the last colon, as `one_address` does.
        return match split {
            Some((a, p)) if is_port(p) && is_canonical_v6(a) => Some(a),
            _ => None,
        };
    }
    is_canonical_v6(entry).then_some(entry)
}

/// `v.trim()`, without looking further when `v` starts and ends with a
/// visible ASCII byte (no white space is there to trim): most values.
#[inline]
fn trim(v: &str) -> &str {
    match (v.as_bytes().first(), v.as_bytes().last()) {
        (Some(a), Some(z)) if a.is_ascii_graphic() && z.is_ascii_graphic() => v,
        _ => v.trim(),
    }
}

/// An IPv6 address as `Display` writes it (RFC 5952: lower-case hex
/// groups without leading zeros, the first longest run of two or more
/// zero groups as `::`), by hand: through `fmt` it was most of the cost
/// of a line keyed by `ip/24/64` from an IPv6 client. An IPv4-mapped
/// address, written with its dotted quad, goes through `fmt`.
fn push_v6(a: std::net::Ipv6Addr, out: &mut String) {
    if a.to_ipv4_mapped().is_some() {
        let _ = write!(out, "{a}");
        return;
    }
    let segs = a.segments();
    // The first longest run of zero groups.
    let (mut best, mut best_len, mut run) = (0, 0, 0);
    for (i, &g) in segs.iter().enumerate() {
        run = if g == 0 { run + 1 } else { 0 };
        if run > best_len {
            best_len = run;
            best = i + 1 - run;
        }
    }
    let hex = |g: u16, out: &mut String| {
        let digits = (16 - g.leading_zeros()).div_ceil(4).max(1);
        for k in (0..digits).rev() {
            out.push(b"0123456789abcdef"[usize::from((g >> (4 * k)) & 0xf)] as char);
        }
    };
    let write_all = |part: &[u16], out: &mut String| {
        for (i, &g) in part.iter().enumerate() {
            if i > 0 {
                out.push(':');
            }
            hex(g, out);
        }
    };
    if best_len > 1 {
        write_all(&segs[..best], out);
        out.push_str("::");
        write_all(&segs[best + best_len..], out);
    } else {
        write_all(&segs, out);
    }
}

/// A byte in decimal, as `Display` writes it.
fn push_u8(v: u8, out: &mut String) {
    if v >= 100 {
        out.push((b'0' + v / 100) as char);
    }
    if v >= 10 {
        out.push((b'0' + v / 10 % 10) as char);
    }
    out.push((b'0' + v % 10) as char);
}

#[cfg(test)]
#[path = "address_tests.rs"]
mod tests;
