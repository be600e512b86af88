//! JSON Lines with any field names: one object per line, fields picked by
//! name (`--columns time=start_time,key=x_forwarded_for`, or `--key`);
//! a dotted name (`request.path`) reaches into nested objects. Envoy's JSON
//! access logs are this format with the time in `start_time` (`envoy-json`).
//!
//! A time field that is a string is ISO 8601 / RFC 3339 unless it is a
//! plain decimal number, which is in `--time-unit` like a number.

use super::ParseError;
use super::{Fields, LogFormat, Span, TimeKind, ABSENT};
use crate::workload::trace::TimeUnit;
use serde_json::Value;
use std::fmt::Write as _;

/// JSON Lines.
pub struct Json {
    name: &'static str,
    /// The names asked for, in order of first request.
    wanted: Vec<String>,
    unit: TimeUnit,
    /// Where the default roles are.
    defaults: &'static [(&'static str, &'static str)],
    scratch: String,
    spans: Vec<Span>,
}

/// Envoy's JSON access log fields for the roles (the names its docs use in
/// `json_format` examples, which are the command operators lower-cased).
pub const ENVOY_JSON: &[(&str, &str)] = &[
    ("time", "start_time"),
    ("ip", "downstream_remote_address"),
    ("route", "path"),
    ("bytes", "bytes_sent"),
];

/// Generic JSON Lines: the trace's own names.
pub const PLAIN: &[(&str, &str)] = &[
    ("time", "time"),
    ("ip", "ip"),
    ("route", "path"),
    ("bytes", "bytes"),
];

impl Json {
    /// JSON Lines whose roles default to `defaults`; numbers in time
    /// fields are in `unit`.
    pub fn new(
        name: &'static str,
        defaults: &'static [(&'static str, &'static str)],
        unit: TimeUnit,
    ) -> Json {
        Json {
            name,
            wanted: Vec::new(),
            unit,
            defaults,
            scratch: String::new(),
            spans: Vec::new(),
        }
    }
}

fn lookup<'v>(obj: &'v serde_json::Map<String, Value>, name: &str) -> Option<&'v Value> {
    if let Some(v) = obj.get(name) {
        return Some(v);
    }
    let mut parts = name.split('.');
    let mut v = obj.get(parts.next()?)?;
    for p in parts {
        v = v.as_object()?.get(p)?;
    }
    Some(v)
}

impl LogFormat for Json {
    fn name(&self) -> &str {
        self.name
    }
    fn field(&mut self, name: &str) -> Option<usize> {
        if let Some(i) = self.wanted.iter().position(|w| w == name) {
            return Some(i);
        }
        self.wanted.push(name.to_string());
        self.spans.push((ABSENT, ABSENT));
        Some(self.wanted.len() - 1)
    }
    fn names(&self) -> Vec<String> {
        self.wanted.clone()
    }
    fn split<'a>(&'a mut self, line: &'a str) -> Result<Fields<'a>, ParseError> {
        let v: Value = serde_json::from_str(line).map_err(|e| {
            ParseError::Line(format!("malformed JSON at column {}: {e}", e.column()))
        })?;
        let obj = v
            .as_object()
            .ok_or_else(|| ParseError::Line("expected a JSON object".into()))?;
        self.scratch.clear();
        for (i, name) in self.wanted.iter().enumerate() {
            let start = self.scratch.len() as u32;
            match lookup(obj, name) {
                None | Some(Value::Null) => {
                    self.spans[i] = (ABSENT, ABSENT);
                    continue;
                }
                Some(Value::String(s)) => self.scratch.push_str(s),
                Some(Value::Number(n)) => {
                    let _ = write!(self.scratch, "{n}");
                }
                Some(Value::Bool(b)) => {
                    let _ = write!(self.scratch, "{b}");
                }
                Some(other) => {
                    return Err(ParseError::Line(format!(
                        "field {name}: {} is an {}, expected a string or a number",
                        other,
                        if other.is_array() { "array" } else { "object" }
                    )))
                }
            }
            self.spans[i] = (start, self.scratch.len() as u32);
        }
        Ok(Fields {
            text: &self.scratch,
            spans: &self.spans,
        })
    }
    fn time_kind(&self, _field: usize) -> Option<TimeKind> {
        Some(TimeKind::Auto(self.unit))
    }
    fn default_field(&self, role: &str) -> Option<String> {
        self.defaults
            .iter()
            .find(|(r, _)| *r == role)
            .map(|(_, n)| n.to_string())
    }
    fn header_field(&self, header: &str) -> Option<String> {
        Some(header.to_string())
    }
}
