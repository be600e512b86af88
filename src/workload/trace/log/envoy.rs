//! Envoy access logs: format strings of `%COMMAND%` operators (the
//! default one when none is configured), from Envoy's access-log
//! documentation ("Default format string").
//!
//! `%START_TIME%` is ISO 8601 UTC with milliseconds
//! (`2016-04-15T20:17:00.310Z`); a request header is `%REQ(X-API-KEY)%`
//! or, in today's spelling, `%REQUEST_HEADER(X-API-KEY)%` (each alias
//! Envoy registers is read as its operator: [`canonical`]); an unset
//! value is written `-`. The key `ip` of a format that logs no downstream
//! address is the `X-Forwarded-For` entry Envoy itself takes as the client
//! ([`Xff`](super::key::Xff)). JSON access logs are read by the JSON
//! Lines format (`envoy-json` defaults its time to `start_time`).

use super::template::{Seg, Template};
use super::ParseError;
use super::{Fields, LogFormat, TimeKind};

/// Envoy's default access-log format (without its final newline).
pub const DEFAULT: &str = "[%START_TIME%] \"%REQ(:METHOD)% %REQ(X-ENVOY-ORIGINAL-PATH?:PATH)% %PROTOCOL%\" %RESPONSE_CODE% %RESPONSE_FLAGS% %BYTES_RECEIVED% %BYTES_SENT% %DURATION% %RESP(X-ENVOY-UPSTREAM-SERVICE-TIME)% \"%REQ(X-FORWARDED-FOR)%\" \"%REQ(USER-AGENT)%\" \"%REQ(X-REQUEST-ID)%\" \"%REQ(:AUTHORITY)%\" \"%UPSTREAM_HOST%\"";

/// A line format given by an Envoy format string.
pub struct Envoy {
    t: Template,
}

impl Envoy {
    /// Compiles a format string; `%NAME%` and `%NAME(ARG)%` are fields
    /// (named as written between the `%`s), `%%` is a literal `%`.
    ///
    /// # Examples
    /// ```
    /// use ratelab::workload::trace::log::{envoy::Envoy, LogFormat};
    /// let mut f = Envoy::new("[%START_TIME%] %REQ(X-API-KEY)%").unwrap();
    /// let k = f.field("REQ(X-API-KEY)").unwrap();
    /// assert_eq!(f.split("[2016-04-15T20:17:00.310Z] abc").unwrap().get(k), "abc");
    /// ```
    pub fn new(format: &str) -> Result<Envoy, ParseError> {
        let format = format.trim_end_matches('\n').trim_end_matches("\\n");
        let (mut segs, mut names) = (Vec::new(), Vec::<String>::new());
        let mut rest = format;
        let mut lit = String::new();
        // Operators seen: the "appears twice" check in constant time (a
        // scan of `names` made compiling quadratic in the operators).
        let mut seen = std::collections::HashSet::new();
        while let Some(i) = rest.find('%') {
            lit.push_str(&rest[..i]);
            let after = &rest[i + 1..];
            if let Some(tail) = after.strip_prefix('%') {
                lit.push('%');
                rest = tail;
                continue;
            }
            // An argument in parentheses may hold '%' (`%START_TIME(%s.%3f)%`:
            // Envoy's command pattern is `%NAME(ARG)?(:N)?%`, the argument
            // anything but ')'), so the closing '%' is looked for after it.
            let from = match (after.find('('), after.find('%')) {
                (Some(open), Some(pct)) if open < pct => {
                    after[open..].find(')').map_or(open, |close| open + close)
                }
                _ => 0,
            };
            let end = after[from..].find('%').map(|e| from + e).ok_or_else(|| {
                ParseError::Option(format!("format: '%' at {:?} is never closed", &rest[i..]))
            })?;
            let op = &after[..end];
            if op.is_empty() || (op.contains(' ') && !op.contains('(')) {
                return Err(ParseError::Option(format!(
                    "format: {op:?} is not a command operator"
                )));
            }
            if let Some(arg) = op.strip_prefix("START_TIME(")
                && epoch_fraction(arg.trim_end_matches(')')).is_none()
            {
                return Err(ParseError::Option(format!(
                    "format: %{op}% has a custom time format; %START_TIME% (ISO 8601) and the epoch forms %START_TIME(%s.%3f)%, %s.%6f, %s.%9f and %s.%f are read"
                )));
            }
            if !seen.insert(op) {
                return Err(ParseError::Option(format!("format: %{op}% appears twice")));
            }
            segs.push(Seg::Lit(std::mem::take(&mut lit)));
            segs.push(Seg::Field(names.len()));
            names.push(op.to_string());
            rest = &after[end + 1..];
        }
        lit.push_str(rest);
        segs.push(Seg::Lit(lit));
        let t = Template::new(segs, names)
            .map_err(|m| m.within("format"))?
            .raw_values();
        Ok(Envoy { t })
    }

    fn find(&self, want: &str) -> Option<usize> {
        let want = canonical(want);
        self.t.names.iter().position(|n| canonical(n) == want)
    }
}

/// The epoch forms of `%START_TIME(...)%` (Envoy's access-log docs,
/// usage.rst, `%START_TIME%`: "`%s` The number of seconds since the
/// Epoch", "`%f`, `%[1-9]f` Fractional seconds digits, default is 9
/// digits", and the examples `%START_TIME(%s.%3f)%`, `%s.%6f`, `%s.%9f`):
/// seconds with a fraction, read as a decimal number of seconds. Some
/// when `arg` is one of them.
fn epoch_fraction(arg: &str) -> Option<()> {
    let digits = arg.strip_prefix("%s.%")?.strip_suffix('f')?;
    (digits.is_empty() || matches!(digits.as_bytes(), [b'1'..=b'9'])).then_some(())
}

/// A command operator as Envoy reads it: upper case (header names are
/// case-insensitive), without a `:N` length limit after its argument, and
/// each alias under one name. Envoy's built-in HTTP command parser
/// (source/common/formatter/http_specific_formatter.cc,
/// `BuiltInHttpCommandParser::getKnownFormatters`) registers `REQ` and
/// `REQUEST_HEADER` (and `STREAM_INFO_REQ`) as the request-header
/// formatter, `RESP` and `RESPONSE_HEADER` as the response-header one,
/// `TRAILER` and `RESPONSE_TRAILER` as the trailer one.
///
/// # Examples
/// ```
/// use ratelab::workload::trace::log::envoy::canonical;
/// assert_eq!(canonical("REQUEST_HEADER(x-api-key)"), "REQ(X-API-KEY)");
/// assert_eq!(canonical("%REQ(X-FORWARDED-FOR):64%"), "REQ(X-FORWARDED-FOR)");
/// assert_eq!(canonical("RESPONSE_TRAILER(grpc-status)"), "TRAILER(GRPC-STATUS)");
/// assert_eq!(canonical("REQ(X-ENVOY-ORIGINAL-PATH?:PATH)"), "REQ(X-ENVOY-ORIGINAL-PATH?:PATH)");
/// ```
pub fn canonical(op: &str) -> String {
    let mut op = op.trim_matches('%').to_ascii_uppercase();
    // A length limit: `:N` after the closing parenthesis.
    if let Some(close) = op.rfind(')')
        && op[close + 1..].starts_with(':')
    {
        op.truncate(close + 1);
    }
    for (alias, name) in [
        ("REQUEST_HEADER(", "REQ("),
        ("STREAM_INFO_REQ(", "REQ("),
        ("RESPONSE_HEADER(", "RESP("),
        ("RESPONSE_TRAILER(", "TRAILER("),
    ] {
        if let Some(rest) = op.strip_prefix(alias) {
            return format!("{name}{rest}");
        }
    }
    op
}

impl LogFormat for Envoy {
    fn name(&self) -> &str {
        "envoy"
    }
    fn field(&mut self, name: &str) -> Option<usize> {
        self.find(name)
    }
    super::template::split_by_template!(t);
    fn has_port(&self, field: usize) -> bool {
        // Envoy writes an address with its port as `1.2.3.4:80` or
        // `[2001:db8::1]:80` (Address::Ipv6Instance::asString).
        self.t.names.get(field).is_some_and(|n| {
            (n.ends_with("_ADDRESS") && !n.starts_with("REQ")) || n == "UPSTREAM_HOST"
        })
    }
    fn time_kind(&self, field: usize) -> Option<TimeKind> {
        match canonical(&self.t.names[field]).as_str() {
            "START_TIME" => Some(TimeKind::Iso),
            // Only the epoch forms compile (`Envoy::new`).
            n if n.starts_with("START_TIME(") => Some(TimeKind::Decimal(1_000_000_000)),
            _ => None,
        }
    }
    fn default_field(&self, role: &str) -> Option<String> {
        let candidates: &[&str] = match role {
            "time" => &["START_TIME"],
            "ip" => &[
                "DOWNSTREAM_REMOTE_ADDRESS_WITHOUT_PORT",
                "DOWNSTREAM_REMOTE_ADDRESS",
                "REQ(X-FORWARDED-FOR)",
            ],
            "route" => &[
                "REQ(X-ENVOY-ORIGINAL-PATH?:PATH)",
                "REQ(:PATH)",
                "REQ(X-ENVOY-ORIGINAL-PATH)",
                "PATH",
            ],
            "bytes" => &["BYTES_SENT"],
            _ => &[],
        };
        candidates
            .iter()
            .find_map(|c| self.find(c))
            .or_else(|| {
                // A start time in an epoch form, `%START_TIME(%s.%3f)%`.
                (role == "time")
                    .then(|| {
                        self.t
                            .names
                            .iter()
                            .position(|n| n.starts_with("START_TIME("))
                    })
                    .flatten()
            })
            .map(|i| self.t.names[i].clone())
    }
    fn header_field(&self, header: &str) -> Option<String> {
        Some(format!("REQ({header})"))
    }
}
