//! Keys from a log line's fields: a field as is, an IP address or its
//! network prefix, a request header, a route with its ids collapsed, or
//! several of these joined.
//!
//! Syntax (`--key`, `"trace": {"key": ...}`), terms joined by `+`:
//! * `NAME` — the field as written (`remote_addr`, `c-ip`, `x_forwarded_for`).
//! * `ip` — the client address of the format (nginx `remote_addr`, ALB
//!   `client:port` split at its last colon, CloudFront `c-ip`, Envoy the
//!   `X-Forwarded-For` entry Envoy takes as the client: [`Xff`]), without
//!   a port.
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

use super::address::{plain_address, write_prefix_with};
use super::Fields;
use super::ParseError;

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
    pub fn parse(text: &str) -> Result<KeyExpr, ParseError> {
        let mut terms = Vec::new();
        for raw in text.split('+') {
            let t = raw.trim();
            let bad = |m: &str| ParseError::Option(format!("key {text:?}: term {t:?}: {m}"));
            if t.is_empty() {
                return Err(bad(
                    "empty (expected NAME, ip, ip/24, header:NAME or route)",
                ));
            }
            let (name, prefix) = match t.split_once('/') {
                Some((n, p)) => {
                    let nums: Vec<&str> = p.split('/').collect();
                    let parse = |s: &str, max: u8| -> Result<u8, ParseError> {
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
            // A term on a field already in the key adds nothing to it.
            if text.split('+').take(terms.len()).any(|u| {
                let u = u.trim();
                u.split_once('/')
                    .map_or(u, |(n, _)| n.trim())
                    .eq_ignore_ascii_case(name)
            }) {
                return Err(bad(&format!(
                    "{name} is already in the key: expected each field once"
                )));
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

/// Which entry of an `X-Forwarded-For` list is the client, as Envoy
/// chooses it (`xff` of a trace, `--xff`).
///
/// Envoy's HTTP connection manager takes the client address from the
/// right of the list: with `xff_num_trusted_hops` N it skips the N-1
/// rightmost entries of the header it received (the trusted proxies'
/// appends) and takes the next (`Utility::getLastAddressFromXFF`,
/// source/common/http/utility.cc, called from
/// ConnectionManagerUtility::mutateRequestHeaders in
/// source/common/http/conn_manager_utility.cc); the header it logs has
/// its immediate peer appended, so in the logged list the client is the
/// entry N from the right (0: the last). An entry that is missing or is
/// not an address (`unknown`) makes Envoy fall back to the connection's
/// peer, which is the last entry of the logged list.
///
/// The leftmost entry is whatever the client wrote: two clients behind
/// one proxy that forge it become any key they like, so it is not the
/// default; it is `First` for logs whose proxies are all trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Xff {
    /// The rightmost entry: Envoy's choice with its default
    /// `xff_num_trusted_hops` of 0 (the default).
    #[default]
    Last,
    /// The leftmost entry that is an address (`unknown` entries skipped).
    First,
    /// The entry this many from the right (0 is [`Xff::Last`]), as
    /// `xff_num_trusted_hops`; the last entry when it is missing or not
    /// an address.
    TrustedHops(u32),
}

impl Xff {
    /// Parses `last`, `first` or a number of trusted hops (`--xff`).
    ///
    /// # Examples
    /// ```
    /// use ratelab::workload::trace::log::key::Xff;
    /// assert_eq!("last".parse::<Xff>(), Ok(Xff::Last));
    /// assert_eq!("2".parse::<Xff>(), Ok(Xff::TrustedHops(2)));
    /// assert!("middle".parse::<Xff>().is_err());
    /// ```
    pub fn parse_text(s: &str) -> Result<Xff, ParseError> {
        match s.trim() {
            "last" => Ok(Xff::Last),
            "first" => Ok(Xff::First),
            n => n.parse::<u32>().map(Xff::TrustedHops).map_err(|_| {
                ParseError::Option(format!(
                    "{s:?}: expected last, first or a number of trusted hops (as Envoy's xff_num_trusted_hops)"
                ))
            }),
        }
    }

    /// From a trace's JSON `xff`: `"last"`, `"first"` or
    /// `{"trusted_hops": N}`.
    pub fn from_json(v: &serde_json::Value) -> Result<Xff, ParseError> {
        let bad = || {
            ParseError::Option(format!("{v}: expected \"last\", \"first\" or {{\"trusted_hops\": N}} (as Envoy's xff_num_trusted_hops)"))
        };
        match v {
            serde_json::Value::String(s) if s == "last" || s == "first" => Xff::parse_text(s),
            serde_json::Value::Object(o) if o.len() == 1 => o
                .get("trusted_hops")
                .and_then(serde_json::Value::as_u64)
                .and_then(|n| u32::try_from(n).ok())
                .map(Xff::TrustedHops)
                .ok_or_else(bad),
            _ => Err(bad()),
        }
    }

    /// As the options write it (for the report).
    pub fn name(self) -> String {
        match self {
            Xff::Last => "last".into(),
            Xff::First => "first".into(),
            Xff::TrustedHops(n) => format!("trusted_hops {n}"),
        }
    }
}

impl std::str::FromStr for Xff {
    type Err = ParseError;
    fn from_str(s: &str) -> Result<Xff, ParseError> {
        Xff::parse_text(s)
    }
}

/// How a field holds its address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AddrRule {
    /// Every value is `address:port` (ALB's `client:port`, Envoy's
    /// `DOWNSTREAM_REMOTE_ADDRESS`): the port is after the last colon,
    /// an IPv6 address with or without brackets.
    pub port: bool,
    /// The field is an `X-Forwarded-For` list: which entry.
    pub xff: Option<Xff>,
}

/// Whether a field named `name` logs the `X-Forwarded-For` header (nginx
/// `http_x_forwarded_for`, Envoy `REQ(X-FORWARDED-FOR)`, CloudFront
/// `x-forwarded-for`, a JSON `x_forwarded_for`).
/// Envoy's `json_format` keys are the user's own: `x_forwarded_for`,
/// `xForwardedFor`, `xff` (or `http.xff`, a dotted name) are that header
/// too.
///
/// # Examples
/// ```
/// use ratelab::workload::trace::log::key::is_xff_name;
/// assert!(is_xff_name("REQ(X-FORWARDED-FOR)") && is_xff_name("http_x_forwarded_for"));
/// assert!(is_xff_name("xForwardedFor") && is_xff_name("xff") && is_xff_name("request.xff"));
/// assert!(!is_xff_name("remote_addr") && !is_xff_name("xffort"));
/// ```
pub fn is_xff_name(name: &str) -> bool {
    let n: String = name
        .to_ascii_lowercase()
        .chars()
        .filter(|c| *c != '_' && *c != '-')
        .collect();
    n.contains("xforwardedfor") || n.rsplit('.').next() == Some("xff")
}

/// A key expression bound to a format's field indices.
#[derive(Debug, Clone)]
pub struct BoundKey {
    parts: Vec<(usize, Transform, String)>,
    /// Per part: how its field holds an address.
    rules: Vec<AddrRule>,
}

impl BoundKey {
    /// Binds each term to a field with `resolve` (field name or header →
    /// the field's index and name; `Err` says why not).
    pub fn bind(
        expr: &KeyExpr,
        mut resolve: impl FnMut(&Term) -> Result<(usize, String), ParseError>,
    ) -> Result<BoundKey, ParseError> {
        let mut parts = Vec::new();
        for t in &expr.terms {
            let (i, name) = resolve(t).map_err(|m| m.within(format!("key {:?}", expr.text)))?;
            let tr = match t {
                Term::Field(_, tr) | Term::Header(_, tr) => *tr,
            };
            parts.push((i, tr, name));
        }
        let rules = vec![AddrRule::default(); parts.len()];
        Ok(BoundKey { parts, rules })
    }

    /// Sets how each part's field holds its address: `port(i)` when
    /// field `i`'s values carry a port; `xff` for `X-Forwarded-For`
    /// fields (by name, [`is_xff_name`]).
    pub fn set_rules(&mut self, port: impl Fn(usize) -> bool, xff: Xff) {
        self.rules = self
            .parts
            .iter()
            .map(|(i, _, name)| AddrRule {
                port: port(*i),
                xff: is_xff_name(name).then_some(xff),
            })
            .collect();
    }

    /// Whether a part reads an `X-Forwarded-For` list for its address.
    pub fn reads_xff(&self) -> bool {
        self.parts
            .iter()
            .zip(&self.rules)
            .any(|((_, tr, _), r)| matches!(tr, Transform::Prefix(..)) && r.xff.is_some())
    }

    /// The fields the key reads.
    pub fn fields(&self) -> impl Iterator<Item = usize> + '_ {
        self.parts.iter().map(|(i, _, _)| *i)
    }

    /// The key of a line: borrowed from the fields when it is one field as
    /// written (or an IPv4 address already written as the key writes it),
    /// else built in `out` (None returned).
    pub fn eval<'a>(
        &self,
        f: &Fields<'a>,
        out: &mut String,
    ) -> Result<Option<&'a str>, ParseError> {
        match self.parts.as_slice() {
            [(i, Transform::Verbatim, name)] => {
                let v = f.get(*i);
                // A key field that is missing, null or "" would make every
                // such line one key "" (one client for all of them).
                if v.is_empty() {
                    return Err(ParseError::Value(
                        "missing, null or empty: expected the request's key".into(),
                    )
                    .in_field(name));
                }
                return Ok(Some(v));
            }
            [(i, Transform::Prefix(32, b6), _)] => {
                let rule = self.rules.first().copied().unwrap_or_default();
                if let Some(a) = plain_address(f.get(*i), rule, *b6 == 128) {
                    return Ok(Some(a));
                }
            }
            _ => {}
        }
        out.clear();
        for (n, (i, tr, name)) in self.parts.iter().enumerate() {
            if n > 0 {
                out.push(' ');
            }
            let v = f.get(*i);
            let rule = self.rules.get(n).copied().unwrap_or_default();
            match tr {
                Transform::Verbatim => out.push_str(v),
                Transform::Prefix(b4, b6) => {
                    write_prefix_with(v, *b4, *b6, rule, out).map_err(|m| m.in_field(name))?
                }
                Transform::Route => write_route(v, out),
            }
        }
        Ok(None)
    }
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
