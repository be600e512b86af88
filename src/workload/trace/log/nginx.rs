//! nginx `log_format` strings (and the Apache formats they mirror): any
//! format of `$variable`s and literal text, plus the predefined `combined`
//! (nginx's built-in format, `ngx_http_log_module`) and `common` (the
//! Common Log Format, Apache's `%h %l %u %t "%r" %>s %b`).
//!
//! Times come from `$time_local` (CLF, whole seconds), `$time_iso8601`
//! (whole seconds) or `$msec` (seconds with milliseconds). A request header
//! `X-Api-Key` is the variable `$http_x_api_key`.

use super::template::{Seg, Template};
use super::ParseError;
use super::{Fields, LogFormat, TimeKind};

/// nginx's predefined `combined` format (the nginx documentation of
/// `log_format`; Apache's `combined` writes the same fields).
pub const COMBINED: &str = "$remote_addr - $remote_user [$time_local] \"$request\" $status $body_bytes_sent \"$http_referer\" \"$http_user_agent\"";

/// The Common Log Format in nginx variables.
pub const COMMON: &str =
    "$remote_addr - $remote_user [$time_local] \"$request\" $status $body_bytes_sent";

/// A line format given by an nginx `log_format` string.
pub struct Nginx {
    name: &'static str,
    t: Template,
}

impl Nginx {
    /// Compiles a `log_format` string: `$name` or `${name}` are fields,
    /// everything else is literal.
    ///
    /// # Examples
    /// ```
    /// use ratelab::workload::trace::log::{nginx::Nginx, LogFormat};
    /// let mut f = Nginx::new("nginx", "$remote_addr [$time_local] $status").unwrap();
    /// let i = f.field("status").unwrap();
    /// let fields = f.split("10.0.0.1 [10/Oct/2000:13:55:36 -0700] 200").unwrap();
    /// assert_eq!(fields.get(i), "200");
    /// ```
    pub fn new(name: &'static str, format: &str) -> Result<Nginx, ParseError> {
        let b = format.as_bytes();
        let (mut segs, mut names) = (Vec::new(), Vec::<String>::new());
        let mut lit = String::new();
        // Names seen, for the "appears twice" check in constant time: a
        // scan of `names` made compiling quadratic in the variables.
        let mut seen = std::collections::HashSet::new();
        let mut i = 0;
        while i < b.len() {
            if b[i] == b'$' {
                let (var, next) = if b.get(i + 1) == Some(&b'{') {
                    let close = format[i..].find('}').ok_or_else(|| {
                        ParseError::Option(format!(
                            "log format: '${{' at byte {} is never closed",
                            i + 1
                        ))
                    })?;
                    (&format[i + 2..i + close], i + close + 1)
                } else {
                    let n = b[i + 1..]
                        .iter()
                        .take_while(|c| c.is_ascii_alphanumeric() || **c == b'_')
                        .count();
                    (&format[i + 1..i + 1 + n], i + 1 + n)
                };
                if var.is_empty() || !var.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_') {
                    return Err(ParseError::Option(format!(
                        "log format: '$' at byte {} is not followed by a variable name",
                        i + 1
                    )));
                }
                if !seen.insert(var) {
                    return Err(ParseError::Option(format!(
                        "log format: ${var} appears twice"
                    )));
                }
                segs.push(Seg::Lit(std::mem::take(&mut lit)));
                segs.push(Seg::Field(names.len()));
                names.push(var.to_string());
                i = next;
            } else {
                // The literal up to the next `$`, at once.
                let n = b[i..]
                    .iter()
                    .position(|&c| c == b'$')
                    .unwrap_or(b.len() - i);
                lit.push_str(&format[i..i + n]);
                i += n;
            }
        }
        segs.push(Seg::Lit(lit));
        let t = Template::new(segs, names).map_err(|m| m.within("log format"))?;
        Ok(Nginx { name, t })
    }
}

impl LogFormat for Nginx {
    fn name(&self) -> &str {
        self.name
    }
    fn field(&mut self, name: &str) -> Option<usize> {
        self.t.index(name.strip_prefix('$').unwrap_or(name))
    }
    super::template::split_by_template!(t);
    fn time_kind(&self, field: usize) -> Option<TimeKind> {
        match self.t.names[field].as_str() {
            "time_local" => Some(TimeKind::Clf),
            "time_iso8601" => Some(TimeKind::IsoSeconds),
            "msec" => Some(TimeKind::Decimal(1_000_000_000)),
            _ => None,
        }
    }
    fn default_field(&self, role: &str) -> Option<String> {
        let candidates: &[&str] = match role {
            "time" => &["time_local", "time_iso8601", "msec"],
            "ip" => &[
                "remote_addr",
                "realip_remote_addr",
                "http_x_forwarded_for",
                "binary_remote_addr",
            ],
            "route" => &["request", "request_uri", "uri", "document_uri"],
            "bytes" => &["body_bytes_sent", "bytes_sent"],
            _ => &[],
        };
        candidates
            .iter()
            .find(|c| self.t.index(c).is_some())
            .map(|c| c.to_string())
    }
    fn header_field(&self, header: &str) -> Option<String> {
        Some(format!("http_{}", header.replace('-', "_")))
    }
}
