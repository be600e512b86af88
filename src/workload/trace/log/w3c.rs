//! W3C extended log files, as Amazon CloudFront writes its standard logs:
//! tab-separated fields named by a `#Fields:` directive (`#Version:` and
//! other `#` lines are skipped). A `#Fields:` line may come again later
//! (files concatenated as delivered): the lines after it read by its list. Without a `#Fields:` line the fields are
//! CloudFront's 33 documented ones, in order ("Standard logging
//! reference", log file fields).
//!
//! Time is the `date` and `time` fields, UTC, whole seconds. The key `ip`
//! is `c-ip`; request headers CloudFront logs are `cs(Host)`,
//! `cs(Referer)`, `cs(User-Agent)`, `cs(Cookie)`.

use super::ParseError;
use super::{Fields, LogFormat, Span, TimeKind, ABSENT};

/// CloudFront's standard log fields, in order.
pub const CLOUDFRONT: [&str; 33] = [
    "date",
    "time",
    "x-edge-location",
    "sc-bytes",
    "c-ip",
    "cs-method",
    "cs(Host)",
    "cs-uri-stem",
    "sc-status",
    "cs(Referer)",
    "cs(User-Agent)",
    "cs-uri-query",
    "cs(Cookie)",
    "x-edge-result-type",
    "x-edge-request-id",
    "x-host-header",
    "cs-protocol",
    "cs-bytes",
    "time-taken",
    "x-forwarded-for",
    "ssl-protocol",
    "ssl-cipher",
    "x-edge-response-result-type",
    "cs-protocol-version",
    "fle-status",
    "fle-encrypted-fields",
    "c-port",
    "time-to-first-byte",
    "x-edge-detailed-result-type",
    "sc-content-type",
    "sc-content-len",
    "sc-range-start",
    "sc-range-end",
];

/// W3C / CloudFront log lines.
pub struct W3c {
    names: Vec<String>,
    /// A `#Fields:` line was read since the last [`LogFormat::take_changed`].
    changed: bool,
    spans: Vec<Span>,
}

impl W3c {
    /// CloudFront's fields until a `#Fields:` line says otherwise.
    pub fn new() -> W3c {
        W3c {
            names: CLOUDFRONT.iter().map(|s| s.to_string()).collect(),
            changed: false,
            spans: vec![(ABSENT, ABSENT); CLOUDFRONT.len()],
        }
    }
}

impl Default for W3c {
    fn default() -> Self {
        Self::new()
    }
}

impl LogFormat for W3c {
    fn name(&self) -> &str {
        "cloudfront"
    }
    /// A directive line. `#Fields:` names the fields of the lines after
    /// it, wherever it comes: the W3C draft (WD-logfile, "Directives")
    /// lets a directive change how the next lines read, and files
    /// concatenated as delivered (`zcat *.gz`) repeat `#Version:` and
    /// `#Fields:` at each file's start.
    fn header(&mut self, line: &str) -> Result<bool, ParseError> {
        let Some(directive) = line.strip_prefix('#') else {
            return Ok(false);
        };
        if let Some(list) = directive.strip_prefix("Fields:") {
            let names: Vec<String> = list.split_whitespace().map(str::to_string).collect();
            if names.is_empty() {
                return Err(ParseError::Line("#Fields: names no fields".into()));
            }
            if names != self.names {
                self.names = names;
                self.spans = vec![(ABSENT, ABSENT); self.names.len()];
                self.changed = true;
            }
        }
        Ok(true)
    }
    fn take_changed(&mut self) -> bool {
        std::mem::take(&mut self.changed)
    }
    fn field(&mut self, name: &str) -> Option<usize> {
        self.names.iter().position(|n| n.eq_ignore_ascii_case(name))
    }
    fn names(&self) -> Vec<String> {
        self.names.clone()
    }
    fn split<'a>(&'a mut self, line: &'a str) -> Result<Fields<'a>, ParseError> {
        let n = super::bytes::split_fields(b'\t', line.as_bytes(), &mut self.spans);
        if n != self.names.len() {
            return Err(ParseError::Line(format!(
                "{n} tab-separated fields: the #Fields: list names {}",
                self.names.len()
            )));
        }
        Ok(Fields {
            text: line,
            spans: &self.spans,
        })
    }
    fn time_kind(&self, field: usize) -> Option<TimeKind> {
        match self.names[field].as_str() {
            "date" => self
                .names
                .iter()
                .position(|n| n == "time")
                .map(|t| TimeKind::W3c { time_field: t }),
            _ => None,
        }
    }
    fn default_field(&self, role: &str) -> Option<String> {
        let want = match role {
            "time" => "date",
            "ip" => "c-ip",
            "route" => "cs-uri-stem",
            "bytes" => "sc-bytes",
            _ => return None,
        };
        self.names.iter().find(|n| *n == want).cloned()
    }
    fn header_field(&self, header: &str) -> Option<String> {
        Some(format!("cs({header})"))
    }
}
