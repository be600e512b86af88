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
    fn prefix_stop(&self, fields: &[usize]) -> Option<usize> {
        fields.iter().map(|f| f + 1).max()
    }
    fn split_prefix<'a>(
        &'a mut self,
        line: &'a str,
        stop: usize,
    ) -> Result<Fields<'a>, ParseError> {
        match super::bytes::split_first(b'\t', line.as_bytes(), &mut self.spans, stop) {
            Ok(_) => Ok(Fields {
                text: line,
                spans: &self.spans,
            }),
            Err(_) => self.split(line),
        }
    }
    /// The fields a run reads split, the tabs after them only counted.
    fn split_checked<'a>(
        &'a mut self,
        line: &'a str,
        stop: usize,
    ) -> Result<Fields<'a>, ParseError> {
        let b = line.as_bytes();
        match super::bytes::split_first(b'\t', b, &mut self.spans, stop) {
            Ok(rest) if stop + 1 + super::bytes::count_byte(b'\t', b, rest) == self.names.len() => {
                Ok(Fields {
                    text: line,
                    spans: &self.spans,
                })
            }
            _ => self.split(line),
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_checked_split_says_what_the_whole_split_says() {
        // CloudFront lines with tabs dropped, doubled or added (seeded),
        // and a `#Fields:` list of three fields for short lines.
        let line = "2019-12-04\t21:02:31\tLAX1\t392\t192.0.2.100\tGET\td111111abcdef8.cloudfront.net\t/index.html\t200\t-\tMozilla/5.0%20(Windows%20NT%2010.0;%20Win64;%20x64)\t-\t-\tHit\tSOX4xwn4XV6Q4rgb7XiVGOHms_BGlTAC4KyHmureZmBNrjGdRLiNIQ==\td111111abcdef8.cloudfront.net\thttps\t23\t0.001\t-\tTLSv1.2\tECDHE-RSA-AES128-GCM-SHA256\tHit\tHTTP/2.0\t-\t-\t11040\t0.001\tHit\ttext/html\t78\t-\t-";
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = move |n: usize| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % n as u64) as usize
        };
        for names in [None, Some("#Fields: date time c-ip")] {
            let (mut whole, mut part) = (W3c::new(), W3c::new());
            if let Some(h) = names {
                assert!(whole.header(h).unwrap() && part.header(h).unwrap());
            }
            let short = "2019-12-04\t21:02:31\t192.0.2.100";
            let (mut ok, mut bad) = (0, 0);
            for _ in 0..3000 {
                let mut b: Vec<u8> = if names.is_some() { short } else { line }.into();
                for _ in 0..next(3) {
                    let at = next(b.len() + 1);
                    match next(3) {
                        0 if at < b.len() => {
                            b.remove(at);
                        }
                        1 => b.insert(at, b'\t'),
                        _ => b.insert(at, b'x'),
                    }
                }
                let l = String::from_utf8(b).unwrap();
                let want = whole.split(&l).map(|f| f.spans.to_vec());
                for stop in 1..=whole.names.len() {
                    let got = part.split_checked(&l, stop).map(|f| f.spans.to_vec());
                    match (&want, &got) {
                        (Ok(w), Ok(g)) => assert_eq!(w[..stop], g[..stop], "{l:?} stop {stop}"),
                        (Err(w), Err(g)) => assert_eq!(w, g, "{l:?} stop {stop}"),
                        _ => panic!("{l:?} stop {stop}: {want:?} against {got:?}"),
                    }
                    if let (Ok(w), Ok(g)) = (&want, part.split_prefix(&l, stop)) {
                        assert_eq!(w[..stop], g.spans[..stop], "{l:?} stop {stop}");
                    }
                }
                ok += usize::from(want.is_ok());
                bad += usize::from(want.is_err());
            }
            assert!(ok > 300 && bad > 300, "{ok} whole, {bad} refused");
        }
    }
}
