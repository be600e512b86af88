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
    tokens_upto(line, spans, usize::MAX).map(|(n, _)| n)
}

/// [`tokens`] as far as the first `limit` fields: how many there were,
/// and where `tokens` would look for the next (after the last one's
/// closing quote, or at the space that ended it).
fn tokens_upto(line: &str, spans: &mut [Span], limit: usize) -> Result<(usize, usize), ParseError> {
    let b = line.as_bytes();
    let (mut p, mut n) = (0usize, 0usize);
    while p < b.len() && n < limit {
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
    Ok((n, p))
}

/// Whether the rest of a line, from `p` where [`tokens`] looks for its
/// next field with `n` fields before, splits without an unclosed quote
/// into at least [`REQUIRED`] fields in all: told from its quotes alone
/// (found 64 bytes at a time, [`each_mask64`](super::bytes::each_mask64)),
/// where `tokens` looked at every field. False is no verdict: the line
/// is then split whole, which says what is wrong (or counts the fields
/// this lower bound missed, or reads the backslashes and stray quotes
/// this leaves to it).
///
/// Outside a quoted field `tokens` opens one with a quote only where a
/// field starts (after a space, at `p`, or right after a closing quote),
/// and inside one the next quote closes it when no backslash escapes
/// it. So a rest without backslashes whose quotes each open a field
/// where one starts, or close the open one, splits as their pairs say:
/// whole when the last is closed, and with a field more for each that
/// opens (an ALB line's dozen quoted fields reach [`REQUIRED`] without
/// counting the others).
fn rest_is_whole(b: &[u8], p: usize, n: usize) -> bool {
    let (mut inside, mut top, mut opened) = (false, p, 0usize);
    let plain = super::bytes::each_mask64(b'"', b'\\', b, p, |base, quotes, slashes| {
        if slashes != 0 {
            return false;
        }
        let mut m = quotes;
        while m != 0 {
            let i = base + m.trailing_zeros() as usize;
            m &= m - 1;
            if inside {
                inside = false;
                top = i + 1;
            } else if i == top || b[i - 1] == b' ' {
                inside = true;
                opened += 1;
            } else {
                // A quote inside an unquoted field.
                return false;
            }
        }
        true
    });
    plain && !inside && n + opened >= REQUIRED
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
    fn prefix_stop(&self, fields: &[usize]) -> Option<usize> {
        fields.iter().map(|f| f + 1).max()
    }
    fn split_prefix<'a>(
        &'a mut self,
        line: &'a str,
        stop: usize,
    ) -> Result<Fields<'a>, ParseError> {
        match tokens_upto(line, &mut self.spans, stop) {
            Ok((n, _)) if n == stop => Ok(Fields {
                text: line,
                spans: &self.spans,
            }),
            // A line that ends (or fails) before: split whole.
            _ => self.split(line),
        }
    }
    fn split_checked<'a>(
        &'a mut self,
        line: &'a str,
        stop: usize,
    ) -> Result<Fields<'a>, ParseError> {
        match tokens_upto(line, &mut self.spans, stop) {
            Ok((n, p)) if n == stop && rest_is_whole(line.as_bytes(), p, n) => Ok(Fields {
                text: line,
                spans: &self.spans,
            }),
            _ => self.split(line),
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A seeded xorshift.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
    }

    const LINE: &str = r#"https 2018-07-02T22:23:00.186641Z app/my-loadbalancer/50dc6c495c0c9188 192.168.131.39:2817 10.0.0.1:80 0.086 0.048 0.037 200 200 0 57 "GET https://www.example.com:443/ HTTP/1.1" "curl/7.46.0" ECDHE-RSA-AES128-GCM-SHA256 TLSv1.2 arn:aws:elasticloadbalancing:us-east-2:123456789012:targetgroup/my-targets/73e2d6bc24d8a067 "Root=1-58337281-1d84f3d73c47ec4e58577259" "www.example.com" "arn:aws:acm:us-east-2:123456789012:certificate/12345678-1234-1234-1234-123456789012" 1 2018-07-02T22:22:48.364000Z "authenticate,forward" "-" "-" "10.0.0.1:80" "200" "-" "-""#;

    /// Lines to split: ALB lines with bytes cut, dropped, doubled or
    /// changed to a quote, a backslash or a space, and lines of those
    /// bytes alone.
    fn lines() -> Vec<String> {
        let mut r = Rng(0x9e37_79b9_7f4a_7c15);
        let mut out = vec![LINE.to_string(), String::new(), "\"".into(), "a \"b".into()];
        for _ in 0..4000 {
            let mut b: Vec<u8> = if r.below(4) == 0 {
                (0..r.below(90)).map(|_| b" \"\\ab"[r.below(5)]).collect()
            } else {
                LINE.as_bytes().to_vec()
            };
            for _ in 0..r.below(4) {
                if b.is_empty() {
                    break;
                }
                let at = r.below(b.len());
                match r.below(5) {
                    0 => b.truncate(at),
                    1 => {
                        b.remove(at);
                    }
                    2 => b.insert(at, b[at]),
                    _ => b[at] = b" \"\\"[r.below(3)],
                }
            }
            out.push(String::from_utf8(b).unwrap());
        }
        out
    }

    #[test]
    fn a_checked_split_says_what_the_whole_split_says() {
        let mut whole = Alb::new();
        let mut part = Alb::new();
        let (mut ok, mut quick) = (0, 0);
        for line in lines() {
            let want = whole.split(&line).map(|f| f.spans.to_vec());
            for stop in 1..=FIELDS.len() {
                let got = part.split_checked(&line, stop).map(|f| f.spans.to_vec());
                match (&want, &got) {
                    (Ok(w), Ok(g)) => assert_eq!(w[..stop], g[..stop], "{line} stop {stop}"),
                    (Err(w), Err(g)) => assert_eq!(w, g, "{line} stop {stop}"),
                    _ => panic!("{line} stop {stop}: {want:?} against {got:?}"),
                }
                // The quick verdict alone, where it gives one, is right.
                if let Ok((n, p)) = tokens_upto(&line, &mut [(0, 0); 40], stop)
                    && n == stop
                    && rest_is_whole(line.as_bytes(), p, n)
                {
                    assert!(want.is_ok(), "{line} stop {stop}");
                    quick += 1;
                }
                // A prefix split gets the fields before `stop` right
                // wherever the whole split does.
                if let (Ok(w), Ok(g)) = (&want, part.split_prefix(&line, stop)) {
                    assert_eq!(w[..stop], g.spans[..stop], "{line} stop {stop}");
                }
            }
            ok += usize::from(want.is_ok());
        }
        // Both kinds of line are met, and the quick path is taken.
        assert!(ok > 500 && quick > 5000, "{ok} whole, {quick} quick");
    }
}
