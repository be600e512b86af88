//! AWS Application Load Balancer access logs: space-separated fields,
//! some in double quotes, in the order of the ALB documentation ("Access
//! log entries": `type time elb client:port target:port ...`). Fields AWS
//! adds at the end later are accepted and ignored.
//!
//! `time` is when the load balancer sent the response (ISO 8601 UTC with
//! microseconds); `request_creation_time` is when it received the request
//! (`--columns time=request_creation_time` to use it). The key `ip` is the
//! client address of `client:port`, split at its last colon: ALB writes an
//! IPv6 client without brackets (`2001:db8::5:8080` is `2001:db8::5` port
//! 8080), so the last colon is the only separator that is always right.

use super::ParseError;
use super::{Fields, LogFormat, Span, TimeKind, ABSENT};

/// The documented fields, in order.
pub const FIELDS: [&str; 30] = [
    "type",
    "time",
    "elb",
    "client:port",
    "target:port",
    "request_processing_time",
    "target_processing_time",
    "response_processing_time",
    "elb_status_code",
    "target_status_code",
    "received_bytes",
    "sent_bytes",
    "request",
    "user_agent",
    "ssl_cipher",
    "ssl_protocol",
    "target_group_arn",
    "trace_id",
    "domain_name",
    "chosen_cert_arn",
    "matched_rule_priority",
    "request_creation_time",
    "actions_executed",
    "redirect_url",
    "error_reason",
    "target:port_list",
    "target_status_code_list",
    "classification",
    "classification_reason",
    "conn_trace_id",
];

/// Fields every line must have (through `user_agent`): older logs end
/// earlier than today's.
const REQUIRED: usize = 14;

/// ALB log lines.
pub struct Alb {
    spans: Vec<Span>,
}

impl Alb {
    /// The format.
    pub fn new() -> Alb {
        Alb {
            spans: vec![(ABSENT, ABSENT); FIELDS.len()],
        }
    }
}

impl Default for Alb {
    fn default() -> Self {
        Self::new()
    }
}

/// Splits `line` at spaces outside double quotes into `spans` (quotes
/// excluded from a span); `Err` for an unclosed quote.
pub(super) fn tokens(line: &str, spans: &mut [Span]) -> Result<usize, ParseError> {
    let b = line.as_bytes();
    let (mut p, mut n) = (0usize, 0usize);
    while p < b.len() {
        if b[p] == b' ' {
            p += 1;
            continue;
        }
        let (start, end, next) = if b[p] == b'"' {
            let mut q = p + 1;
            loop {
                match super::bytes::find_either(b'"', b'\\', b, q).map(|at| at - q) {
                    None => {
                        return Err(ParseError::Line(format!(
                            "field {}: the quote at byte {} is never closed",
                            n + 1,
                            p + 1
                        )))
                    }
                    Some(i) if b[q + i] == b'\\' => q += i + 2,
                    Some(i) => {
                        q += i;
                        break;
                    }
                }
            }
            (p + 1, q, q + 1)
        } else {
            let e = super::bytes::find_byte(b' ', b, p).unwrap_or(b.len());
            (p, e, e)
        };
        if n < spans.len() {
            spans[n] = (start as u32, end.min(b.len()) as u32);
        }
        n += 1;
        p = next;
    }
    Ok(n)
}

impl LogFormat for Alb {
    fn name(&self) -> &str {
        "alb"
    }
    fn field(&mut self, name: &str) -> Option<usize> {
        FIELDS.iter().position(|f| *f == name)
    }
    fn names(&self) -> Vec<String> {
        FIELDS.iter().map(|s| s.to_string()).collect()
    }
    fn split<'a>(&'a mut self, line: &'a str) -> Result<Fields<'a>, ParseError> {
        self.spans.fill((ABSENT, ABSENT));
        let n = tokens(line, &mut self.spans)?;
        if n < REQUIRED {
            return Err(ParseError::Line(format!(
                "{n} fields: an ALB log line has at least {REQUIRED} (type time elb client:port ... \"request\" \"user_agent\")"
            )));
        }
        Ok(Fields {
            text: line,
            spans: &self.spans,
        })
    }
    fn has_port(&self, field: usize) -> bool {
        matches!(FIELDS.get(field), Some(&"client:port" | &"target:port"))
    }
    fn time_kind(&self, field: usize) -> Option<TimeKind> {
        matches!(FIELDS[field], "time" | "request_creation_time").then_some(TimeKind::Iso)
    }
    fn default_field(&self, role: &str) -> Option<String> {
        Some(
            match role {
                "time" => "time",
                "ip" => "client:port",
                "route" => "request",
                "bytes" => "sent_bytes",
                _ => return None,
            }
            .to_string(),
        )
    }
    fn header_field(&self, header: &str) -> Option<String> {
        (header == "user-agent").then(|| "user_agent".to_string())
    }
}
