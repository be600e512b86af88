//! Keys from a log line's fields: a field as is, an IP address or its
//! network prefix, a request header, a route with its ids collapsed, or
//! several of these joined.
//!
//! Syntax (`--key`, `"trace": {"key": ...}`), terms joined by `+`:
//! * `NAME` — the field as written (`remote_addr`, `c-ip`, `x_forwarded_for`).
//! * `ip` — the client address of the format (nginx `remote_addr`, ALB
//!   `client_ip`, CloudFront `c-ip`, Envoy the first `X-Forwarded-For`
//!   entry), without a port.
//! * `ip/N`, `NAME/N`, `ip/N4/N6` — the address's network: IPv4 addresses
//!   masked to `N4` bits, IPv6 to `N6` (one number: both, each clamped to
//!   its family's width), written `10.1.2.0/24`, `2001:db8::/64`.
//! * `header:NAME` — a request header the format logs (`$http_x_api_key`
//!   in nginx, `%REQ(X-API-KEY)%` in an Envoy format, a field of that name
//!   in JSON).
//! * `route` — the request path without its query, each segment that is
//!   an id (all digits, a UUID, or 16+ hex digits) written `:id`:
//!   `/users/123/orders?x=1` → `/users/:id/orders`.
//!
//! A composite key's parts are joined by one space: `ip+route` gives
//! `10.1.2.3 /users/:id`.

use super::Fields;
use std::fmt::Write as _;
use std::net::IpAddr;

/// What to do with a field's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transform {
    /// The value as written.
    Verbatim,
    /// An IP address masked to a prefix (v4 bits, v6 bits).
    Prefix(u8, u8),
    /// The request path with ids collapsed.
    Route,
}

/// One term of a key expression, before its field is known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Term {
    /// A field by name (`ip`, `route`, or a format's own field name).
    Field(String, Transform),
    /// A request header.
    Header(String, Transform),
}

/// A parsed key expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyExpr {
    /// The terms, joined by a space in the key.
    pub terms: Vec<Term>,
    /// The expression as written (for messages and reports).
    pub text: String,
}

impl KeyExpr {
    /// Parses `ip/24+route`, `header:x-api-key`, `remote_addr`.
    ///
    /// # Examples
    /// ```
    /// use ratelab::workload::trace::log::key::{KeyExpr, Term, Transform};
    /// let k = KeyExpr::parse("ip/24/64+route").unwrap();
    /// assert_eq!(k.terms[0], Term::Field("ip".into(), Transform::Prefix(24, 64)));
    /// assert_eq!(k.terms[1], Term::Field("route".into(), Transform::Route));
    /// assert!(KeyExpr::parse("ip/33x").is_err());
    /// ```
    pub fn parse(text: &str) -> Result<KeyExpr, String> {
        let mut terms = Vec::new();
        for raw in text.split('+') {
            let t = raw.trim();
            let bad = |m: &str| format!("key {text:?}: term {t:?}: {m}");
            if t.is_empty() {
                return Err(bad(
                    "empty (expected NAME, ip, ip/24, header:NAME or route)",
                ));
            }
            let (name, prefix) = match t.split_once('/') {
                Some((n, p)) => {
                    let nums: Vec<&str> = p.split('/').collect();
                    let parse = |s: &str, max: u8| -> Result<u8, String> {
                        s.parse::<u8>().ok().filter(|&b| b <= max).ok_or_else(|| {
                            bad(&format!(
                                "prefix {s:?}: expected a number of bits 0..={max}"
                            ))
                        })
                    };
                    let (v4, v6) = match nums.as_slice() {
                        // One number masks both families, so it is an
                        // IPv4 prefix length too: /33 and longer would be
                        // cut to /32 without a word.
                        [one] => {
                            let b = parse(one, 128)?;
                            if b > 32 {
                                return Err(bad(&format!(
                                    "prefix {one:?}: one number masks IPv4 and IPv6 alike, expected 0..=32; for a longer IPv6 prefix give NAME/V4BITS/V6BITS (ip/32/{b})"
                                )));
                            }
                            (b, b)
                        }
                        [a, b] => (parse(a, 32)?, parse(b, 128)?),
                        _ => return Err(bad("expected NAME/BITS or NAME/V4BITS/V6BITS")),
                    };
                    (n.trim(), Transform::Prefix(v4, v6))
                }
                None if t == "ip" => ("ip", Transform::Prefix(32, 128)),
                None if t == "route" => ("route", Transform::Route),
                None => (t, Transform::Verbatim),
            };
            if name == "route" && prefix != Transform::Route {
                return Err(bad("a route has no network prefix"));
            }
            if let Some(h) = name.strip_prefix("header:") {
                if h.is_empty()
                    || !h
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
                {
                    return Err(bad(
                        "expected header:NAME with a header name of letters, digits, - and _",
                    ));
                }
                terms.push(Term::Header(h.to_ascii_lowercase(), prefix));
            } else if name.is_empty() {
                return Err(bad("expected a field name before '/'"));
            } else {
                terms.push(Term::Field(name.to_string(), prefix));
            }
        }
        Ok(KeyExpr {
            terms,
            text: text.to_string(),
        })
    }
}

/// A key expression bound to a format's field indices.
#[derive(Debug, Clone)]
pub struct BoundKey {
    parts: Vec<(usize, Transform, String)>,
}

impl BoundKey {
    /// Binds each term to a field with `resolve` (field name or header →
    /// the field's index and name; `Err` says why not).
    pub fn bind(
        expr: &KeyExpr,
        mut resolve: impl FnMut(&Term) -> Result<(usize, String), String>,
    ) -> Result<BoundKey, String> {
        let mut parts = Vec::new();
        for t in &expr.terms {
            let (i, name) = resolve(t).map_err(|m| format!("key {:?}: {m}", expr.text))?;
            let tr = match t {
                Term::Field(_, tr) | Term::Header(_, tr) => *tr,
            };
            parts.push((i, tr, name));
        }
        Ok(BoundKey { parts })
    }

    /// The fields the key reads.
    pub fn fields(&self) -> impl Iterator<Item = usize> + '_ {
        self.parts.iter().map(|(i, _, _)| *i)
    }

    /// The key of a line: borrowed from the fields when it is one field as
    /// written (or an IPv4 address already written as the key writes it),
    /// else built in `out` (None returned).
    pub fn eval<'a>(&self, f: &Fields<'a>, out: &mut String) -> Result<Option<&'a str>, String> {
        match self.parts.as_slice() {
            // A key field that is missing, null or "" would make every
            // such line one key "" (one client for all of them).
            [(i, Transform::Verbatim, name)] if f.get(*i).is_empty() => {
                return Err(format!(
                    "field {name}: missing, null or empty: expected the request's key"
                ))
            }
            [(i, Transform::Verbatim, _)] => return Ok(Some(f.get(*i))),
            [(i, Transform::Prefix(32, _), _)] if is_dotted_quad(f.get(*i)) => {
                return Ok(Some(f.get(*i)));
            }
            _ => {}
        }
        out.clear();
        for (n, (i, tr, name)) in self.parts.iter().enumerate() {
            if n > 0 {
                out.push(' ');
            }
            let v = f.get(*i);
            match tr {
                Transform::Verbatim => out.push_str(v),
                Transform::Prefix(b4, b6) => {
                    write_prefix(v, *b4, *b6, out).map_err(|m| format!("field {name}: {m}"))?
                }
                Transform::Route => write_route(v, out),
            }
        }
        Ok(None)
    }
}

/// The address in a field: the first entry of a list (`X-Forwarded-For`),
/// without a port (`1.2.3.4:5678`, `[::1]:80`).
pub fn address_of(v: &str) -> Option<IpAddr> {
    let first = v.split(',').next().unwrap_or("").trim();
    if let Ok(a) = first.parse::<IpAddr>() {
        return Some(a);
    }
    if let Some(rest) = first.strip_prefix('[') {
        return rest.split_once(']').and_then(|(a, _)| a.parse().ok());
    }
    first
        .rsplit_once(':')
        .and_then(|(a, _)| a.parse::<std::net::Ipv4Addr>().ok())
        .map(IpAddr::V4)
}

fn write_prefix(v: &str, b4: u8, b6: u8, out: &mut String) -> Result<(), String> {
    let addr = address_of(v).ok_or_else(|| format!("{v:?} is not an IP address"))?;
    match addr {
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
            let _ = write!(out, "{}", std::net::Ipv6Addr::from(masked));
            if b6 < 128 {
                let _ = write!(out, "/{b6}");
            }
        }
    }
    Ok(())
}

/// Whether `v` is an IPv4 address exactly as `Display` writes it (four
/// decimal octets of at most 255, no leading zeros, nothing else): such a
/// key is its own text, and about a tenth of a log keyed by address went
/// to parsing and writing it again.
fn is_dotted_quad(v: &str) -> bool {
    let b = v.as_bytes();
    if !(7..=15).contains(&b.len()) {
        return false;
    }
    let mut octets = 0;
    for part in b.split(|&c| c == b'.') {
        octets += 1;
        let ok = match part {
            [d] => d.is_ascii_digit(),
            [b'1'..=b'9', d] => d.is_ascii_digit(),
            [b'1', d, e] => d.is_ascii_digit() && e.is_ascii_digit(),
            [b'2', b'0'..=b'4', e] => e.is_ascii_digit(),
            [b'2', b'5', b'0'..=b'5'] => true,
            _ => false,
        };
        if !ok || octets > 4 {
            return false;
        }
    }
    octets == 4
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

fn is_id(seg: &str) -> bool {
    let b = seg.as_bytes();
    if b.is_empty() {
        return false;
    }
    if b.iter().all(u8::is_ascii_digit) {
        return true;
    }
    let uuid = b.len() == 36
        && b.iter().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => *c == b'-',
            _ => c.is_ascii_hexdigit(),
        });
    uuid || (b.len() >= 16 && b.iter().all(u8::is_ascii_hexdigit))
}

/// The path of a request line (`GET /a?b HTTP/1.1`), a URL
/// (`https://h:443/a?b`) or a path, without its query.
pub fn path_of(v: &str) -> &str {
    let mut p = v;
    if let Some((_, rest)) = p.split_once(' ') {
        p = rest.split(' ').next().unwrap_or("");
    }
    if let Some(i) = p.find("://") {
        let after = &p[i + 3..];
        p = after.find('/').map_or("/", |j| &after[j..]);
    }
    p.split(['?', '#']).next().unwrap_or("")
}

/// Writes the route of a request field: its path with id segments as `:id`.
///
/// # Examples
/// ```
/// use ratelab::workload::trace::log::key::write_route;
/// let mut s = String::new();
/// write_route("GET /users/123/orders?page=2 HTTP/1.1", &mut s);
/// assert_eq!(s, "/users/:id/orders");
/// ```
pub fn write_route(v: &str, out: &mut String) {
    let path = path_of(v);
    for (i, seg) in path.split('/').enumerate() {
        if i > 0 {
            out.push('/');
        }
        out.push_str(if is_id(seg) { ":id" } else { seg });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prefix(v: &str, b4: u8, b6: u8) -> String {
        let mut s = String::new();
        write_prefix(v, b4, b6, &mut s).unwrap();
        s
    }

    #[test]
    fn prefixes_of_both_families() {
        assert_eq!(prefix("10.1.2.3", 24, 64), "10.1.2.0/24");
        assert_eq!(prefix("10.1.2.3:5678", 32, 128), "10.1.2.3");
        assert_eq!(prefix("203.0.113.9, 10.0.0.1", 16, 64), "203.0.0.0/16");
        assert_eq!(prefix("2001:db8:1:2:3::4", 24, 64), "2001:db8:1:2::/64");
        assert_eq!(prefix("[2001:db8::1]:443", 24, 48), "2001:db8::/48");
        assert!(write_prefix("-", 24, 64, &mut String::new()).is_err());
    }

    #[test]
    fn dotted_quads_are_their_own_key() {
        for v in [
            "0.0.0.0",
            "10.1.134.162",
            "255.255.255.255",
            "192.0.2.10",
            "1.22.199.249",
            "200.250.251.9",
        ] {
            assert!(is_dotted_quad(v), "{v}");
            assert_eq!(prefix(v, 32, 128), v);
        }
        // Written otherwise (or not an address): parsed and written again,
        // or refused, as before.
        for v in [
            "010.1.2.3",
            "1.2.3.256",
            "1.2.3",
            "1.2.3.4.5",
            "1.2.3.4:80",
            "1..3.4",
            " 1.2.3.4",
            "1.2.3.4,5.6.7.8",
            "300.1.1.1",
            "1.2.3.",
            "::1",
        ] {
            assert!(!is_dotted_quad(v), "{v}");
        }
    }

    #[test]
    fn bytes_print_as_display_does() {
        for v in 0..=255u8 {
            let mut s = String::new();
            push_u8(v, &mut s);
            assert_eq!(s, v.to_string());
        }
    }

    #[test]
    fn routes_collapse_ids_only() {
        for (v, want) in [
            ("GET /users/123 HTTP/1.1", "/users/:id"),
            (
                "/v1/items/550e8400-e29b-41d4-a716-446655440000/tags",
                "/v1/items/:id/tags",
            ),
            (
                "https://api.example.com:443/a/0123456789abcdef0?x",
                "/a/:id",
            ),
            ("/static/app.js?v=3", "/static/app.js"),
            ("/v2/users", "/v2/users"),
        ] {
            let mut s = String::new();
            write_route(v, &mut s);
            assert_eq!(s, want, "{v}");
        }
    }

    #[test]
    fn bad_expressions_are_refused() {
        for e in [
            "",
            "ip+",
            "ip/129",
            "ip/24/129",
            "ip/33/64",
            "ip/33",
            "ip/64",
            "route/24",
            "header:",
            "header:a b",
            "/24",
        ] {
            assert!(KeyExpr::parse(e).is_err(), "{e:?}");
        }
        let k = KeyExpr::parse("header:X-Api-Key").unwrap();
        assert_eq!(
            k.terms,
            [Term::Header("x-api-key".into(), Transform::Verbatim)]
        );
    }
}
