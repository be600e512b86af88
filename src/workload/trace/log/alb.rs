//! AWS Application Load Balancer access logs (and, [`Nlb`], Network Load
//! Balancer ones): space-separated fields,
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

/// AWS Network Load Balancer access-log fields, in order ("Access logs for
/// your Network Load Balancer", "Access log entries",
/// <https://docs.aws.amazon.com/elasticloadbalancing/latest/network/load-balancer-access-logs.html>).
/// AWS's table spells the addresses `client_port` and `destination_port`
/// and the key exchange `tls_keyexchange` (formerly `tls_named_group`):
/// those names are read too ([`Nlb`]'s `field`).
pub const NLB_FIELDS: [&str; 22] = [
    "type",
    "version",
    "time",
    "elb",
    "listener",
    "client:port",
    "destination:port",
    "connection_time",
    "tls_handshake_time",
    "received_bytes",
    "sent_bytes",
    "incoming_tls_alert",
    "chosen_cert_arn",
    "chosen_cert_serial",
    "tls_cipher",
    "tls_protocol_version",
    "tls_keyexchange",
    "domain_name",
    "alpn_fe_protocol",
    "alpn_be_protocol",
    "alpn_client_preference_list",
    "tls_connection_creation_time",
];

/// Fields every NLB line must have (through `sent_bytes`).
const NLB_REQUIRED: usize = 11;

/// AWS Network Load Balancer access logs: one line a TLS connection, its
/// fields delimited by single spaces ("All fields are delimited by
/// spaces"; no field is quoted: `alpn_client_preference_list` writes
/// `"h2","http/1.1"`, quotes inside one field, and `domain_name` is
/// URL-encoded), fields AWS appends later ignored.
///
/// `time` is when the connection ended, `tls_connection_creation_time`
/// when it began, both ISO 8601 in whole seconds without an offset (UTC:
/// [`parse_iso8601_utc_seconds`](super::time::parse_iso8601_utc_seconds)).
/// The key `ip` is the address of `client:port` (an IPv6 client split at
/// its last colon, as ALB writes it). Each connection is one request to
/// the limiter: a connection-rate limit.
///
/// # Examples
/// ```
/// use ratelab::workload::trace::log::{LogParser, LogSpec, Parsed};
/// let mut p = LogParser::new(&LogSpec { format: "nlb".into(), ..LogSpec::default() })?;
/// let line = r#"tls 2.0 2020-04-01T08:51:42 net/my-network-loadbalancer/c6e77e28c25b2234 g3d4b5e8bb8464cd 72.21.218.154:51341 172.100.100.185:443 5 2 98 246 - arn:aws:acm:us-east-2:671290407336:certificate/2a108f19-aded-46b0-8493-c63eb1ef4a99 - ECDHE-RSA-AES128-SHA tlsv12 - my-network-loadbalancer-c6e77e28c25b2234.elb.us-east-2.amazonaws.com h2 h2 "h2","http/1.1" 2020-04-01T08:51:20"#;
/// let mut held = String::new();
/// let Parsed::Event(t, at, _) = p.parse(line, &mut held)? else { panic!() };
/// // The key borrowed from the line (its port left out), or built in `held`.
/// let key = at.map_or(held.as_str(), |r| &line[r]);
/// assert_eq!((t, key), (1_585_731_102_000_000_000, "72.21.218.154"));
/// # Ok::<(), ratelab::workload::trace::ParseError>(())
/// ```
pub struct Nlb {
    spans: Vec<Span>,
}

impl Nlb {
    /// The format.
    pub fn new() -> Nlb {
        Nlb {
            spans: vec![(ABSENT, ABSENT); NLB_FIELDS.len()],
        }
    }
}

impl Default for Nlb {
    fn default() -> Self {
        Self::new()
    }
}

impl LogFormat for Nlb {
    fn name(&self) -> &str {
        "nlb"
    }
    fn field(&mut self, name: &str) -> Option<usize> {
        let name = match name {
            "client_port" => "client:port",
            "destination_port" => "destination:port",
            "tls_named_group" => "tls_keyexchange",
            n => n,
        };
        NLB_FIELDS.iter().position(|f| *f == name)
    }
    fn names(&self) -> Vec<String> {
        NLB_FIELDS.iter().map(|s| s.to_string()).collect()
    }
    fn split<'a>(&'a mut self, line: &'a str) -> Result<Fields<'a>, ParseError> {
        self.spans.fill((ABSENT, ABSENT));
        let n = super::bytes::split_fields(b' ', line.as_bytes(), &mut self.spans);
        if n < NLB_REQUIRED {
            return Err(ParseError::Line(format!(
                "{n} fields: an NLB log line has at least {NLB_REQUIRED} (type version time elb listener client:port destination:port ... sent_bytes)"
            )));
        }
        Ok(Fields {
            text: line,
            spans: &self.spans,
        })
    }
    fn has_port(&self, field: usize) -> bool {
        matches!(
            NLB_FIELDS.get(field),
            Some(&"client:port" | &"destination:port")
        )
    }
    fn time_kind(&self, field: usize) -> Option<TimeKind> {
        matches!(NLB_FIELDS[field], "time" | "tls_connection_creation_time")
            .then_some(TimeKind::IsoUtcSeconds)
    }
    fn default_field(&self, role: &str) -> Option<String> {
        Some(
            match role {
                "time" => "time",
                "ip" => "client:port",
                "bytes" => "sent_bytes",
                _ => return None,
            }
            .to_string(),
        )
    }
    fn header_field(&self, _header: &str) -> Option<String> {
        None
    }
}
