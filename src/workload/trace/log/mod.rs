//! Access-log formats: a line of an nginx, Apache (any `LogFormat`), Envoy, AWS ALB, NLB or
//! CloudFront log (or JSON Lines with any field names) into an event's
//! time, key and weight.
//!
//! Each format is one module implementing [`LogFormat`] — split a line into
//! named fields — and one row of [`FORMATS`]. [`LogParser`] does the rest
//! for every format alike: which field is the time and how to read it
//! ([`time`]), the key expression ([`key`]: a field, an IP prefix, a header,
//! a route, or several), and the weight. Splitting borrows the line (no
//! allocation per line for the text formats); errors name the field and
//! say what was expected.
//!
//! # Examples
//! ```
//! use ratelab::workload::trace::log::{LogParser, LogSpec, Parsed};
//!
//! let spec = LogSpec { format: "combined".into(), key: Some("ip/24".into()), ..LogSpec::default() };
//! let mut p = LogParser::new(&spec)?;
//! let line = r#"203.0.113.7 - - [10/Oct/2000:13:55:36 -0700] "GET /a HTTP/1.1" 200 2326 "-" "curl/8""#;
//! let mut held = String::new();
//! let Parsed::Event(t, _, w) = p.parse(line, &mut held)? else { panic!() };
//! assert_eq!((t, held.as_str(), w), (971_211_336_000_000_000, "203.0.113.0/24", 1));
//! # Ok::<(), ratelab::workload::trace::ParseError>(())
//! ```

pub(crate) mod address;
pub(crate) mod alb;
pub mod apache;
pub mod bytes;
pub mod envoy;
mod event;
mod formats;
pub use formats::{
    format_names, log_format_names, row, takes_unit, whole_second_formats, FormatRow, FORMATS,
};
pub(crate) mod json;
mod json_flat;
pub mod key;
pub mod nginx;
pub(crate) mod template;
pub mod time;
pub(crate) mod w3c;

pub use super::error::ParseError;
use super::format::TimeUnit;
use super::parse::parse_decimal_ns;
use crate::clock::Nanos;
use event::event_of;
pub use key::Xff;
use key::{BoundKey, KeyExpr, Term};

/// A field's byte range in the text it was split from.
pub type Span = (u32, u32);

/// The span of a field a line does not have.
pub const ABSENT: u32 = u32::MAX;

/// A line split into fields (borrowing the line, or the format's own
/// buffer when values had to be unescaped).
#[derive(Debug, Clone, Copy)]
pub struct Fields<'a> {
    /// The text the spans index.
    pub text: &'a str,
    /// One span per field of the format.
    pub spans: &'a [Span],
}

impl<'a> Fields<'a> {
    /// Field `i`, or None when the line does not have it.
    pub fn opt(&self, i: usize) -> Option<&'a str> {
        let (s, e) = *self.spans.get(i)?;
        if s == ABSENT {
            return None;
        }
        self.text.get(s as usize..e as usize)
    }

    /// Field `i` (empty when absent).
    pub fn get(&self, i: usize) -> &'a str {
        self.opt(i).unwrap_or("")
    }
}

/// How a time field is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeKind {
    /// Common Log Format, whole seconds (`$time_local`).
    Clf,
    /// ISO 8601 with whole seconds (`$time_iso8601`).
    IsoSeconds,
    /// ISO 8601 with a fraction (Envoy, ALB).
    Iso,
    /// ISO 8601 in whole seconds, UTC when no offset is written (NLB).
    IsoUtcSeconds,
    /// Decimal number of units (`$msec`: scale 10^9 ns a unit).
    Decimal(u64),
    /// W3C `date` with its `time` field, UTC, whole seconds.
    W3c {
        /// Index of the `time` field.
        time_field: usize,
    },
    /// A number in the unit, or an ISO 8601 string (JSON).
    Auto(TimeUnit),
}

impl TimeKind {
    /// Whether every time of this kind is a whole second.
    pub fn whole_seconds(self) -> bool {
        matches!(
            self,
            TimeKind::Clf | TimeKind::IsoSeconds | TimeKind::IsoUtcSeconds | TimeKind::W3c { .. }
        )
    }
}

/// A line format: splits lines into named fields.
pub trait LogFormat: Send {
    /// The format's name (as in [`FORMATS`]).
    fn name(&self) -> &str;
    /// Consumes a header or comment line (true), or says it is data (false).
    fn header(&mut self, _line: &str) -> Result<bool, ParseError> {
        Ok(false)
    }
    /// Whether a header line since the last call changed the fields (their
    /// roles are then bound again at the next data line).
    fn take_changed(&mut self) -> bool {
        false
    }
    /// The index of a field by name (formats with open field sets, JSON,
    /// add it).
    fn field(&mut self, name: &str) -> Option<usize>;
    /// The field names (for messages).
    fn names(&self) -> Vec<String>;
    /// Splits a data line.
    fn split<'a>(&'a mut self, line: &'a str) -> Result<Fields<'a>, ParseError>;
    /// Where a split may stop once `fields` are known (an opaque mark for
    /// [`split_prefix`](Self::split_prefix)); None: only whole lines split.
    fn prefix_stop(&self, _fields: &[usize]) -> Option<usize> {
        None
    }
    /// Splits a data line as far as `stop` ([`prefix_stop`](Self::prefix_stop)):
    /// the fields asked for then are right, the rest of the line is not
    /// checked (the others' spans are stale); an error is one
    /// [`split`](Self::split) would give.
    fn split_prefix<'a>(
        &'a mut self,
        line: &'a str,
        _stop: usize,
    ) -> Result<Fields<'a>, ParseError> {
        self.split(line)
    }
    /// Splits a data line as [`split`](Self::split) does, with the fields
    /// before `stop` ([`prefix_stop`](Self::prefix_stop)) right and the
    /// others' spans maybe stale: the whole line is checked (Ok exactly
    /// when `split` is, its error `split`'s), but the fields nobody reads
    /// need not be found one by one.
    fn split_checked<'a>(
        &'a mut self,
        line: &'a str,
        _stop: usize,
    ) -> Result<Fields<'a>, ParseError> {
        self.split(line)
    }
    /// Whether every value of field `field` is `address:port` (the port
    /// after the last colon, an IPv6 address with or without brackets).
    fn has_port(&self, _field: usize) -> bool {
        false
    }
    /// How field `field` is read as a time (None: it is not a time).
    fn time_kind(&self, field: usize) -> Option<TimeKind>;
    /// The field that plays a role by default: `time`, `ip`, `route`, `bytes`.
    fn default_field(&self, role: &str) -> Option<String>;
    /// The field that logs request header `header` (lower case), if any.
    fn header_field(&self, header: &str) -> Option<String>;
    /// Whether a carriage return inside a line is white space (JSON's,
    /// between tokens) rather than a line end gone wrong.
    fn cr_is_white_space(&self) -> bool {
        false
    }
}

/// What a user asks of a log: its format and which fields play which role.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LogSpec {
    /// A name of [`FORMATS`].
    pub format: String,
    /// An nginx `log_format` (format `nginx`) or Envoy format string
    /// (format `envoy`).
    pub log_format: Option<String>,
    /// Key expression ([`key`]); default: the row's.
    pub key: Option<String>,
    /// Field holding the weight (e.g. `body_bytes_sent`); default 1.
    pub weight: Option<String>,
    /// Field holding the time; default: the format's.
    pub time: Option<String>,
    /// Unit of numeric times in JSON.
    pub unit: TimeUnit,
    /// Which `X-Forwarded-For` entry is the client when the key reads
    /// that header ([`Xff`]; `None`: the last, as Envoy). Given, it must
    /// apply: a key that reads no such header is refused.
    pub xff: Option<Xff>,
}

/// A parsed line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parsed {
    /// A header or comment line.
    Header,
    /// An event: time, where the key is (a byte range of the line, or
    /// None: in the `held` buffer), weight.
    Event(Nanos, Option<std::ops::Range<usize>>, u64),
    /// An event whose key the filter of [`LogParser::parse_owned`] does
    /// not want (its line read only as far as its time, key and weight):
    /// time, where the key is (as in `Event`), weight.
    Elsewhere(Nanos, Option<std::ops::Range<usize>>, u64),
}

struct Bound {
    time: usize,
    time_name: String,
    kind: TimeKind,
    key: BoundKey,
    weight: Option<(usize, String)>,
    /// Where a split may stop with every field above known (None: the
    /// format splits whole lines only).
    prefix: Option<usize>,
}

/// A format with its roles bound: lines in, (time, key, weight) out.
pub struct LogParser {
    fmt: Box<dyn LogFormat>,
    spec: LogSpec,
    key: KeyExpr,
    bound: Option<Bound>,
    /// The last time read ([`event::TimeCache`]).
    cache: event::TimeCache,
}

impl LogParser {
    /// The parser for a spec; errors name the bad option.
    pub fn new(spec: &LogSpec) -> Result<LogParser, ParseError> {
        let row = row(&spec.format)?;
        let fmt = (row.build)(spec)?;
        let key = KeyExpr::parse(spec.key.as_deref().unwrap_or(row.default_key))?;
        let mut p = LogParser {
            fmt,
            spec: spec.clone(),
            key,
            bound: None,
            cache: event::TimeCache::default(),
        };
        // Formats whose fields are known up front are checked now, before
        // any line is read.
        if !matches!(row.name, "cloudfront") {
            p.bind()?;
        }
        Ok(p)
    }

    /// The format's name.
    pub fn format_name(&self) -> &str {
        self.fmt.name()
    }

    /// The key expression, with the `X-Forwarded-For` rule when the key
    /// reads that header (`ip (X-Forwarded-For trusted_hops 1)`).
    pub fn key_text(&self) -> String {
        match self.bound.as_ref().is_some_and(|b| b.key.reads_xff()) {
            true => format!(
                "{} (X-Forwarded-For {})",
                self.key.text,
                self.spec.xff.unwrap_or_default().name()
            ),
            false => self.key.text.clone(),
        }
    }

    /// The time field's name and whether its times are whole seconds (None
    /// before the first data line of a format with a header).
    pub fn time_field(&self) -> Option<(&str, bool)> {
        self.bound
            .as_ref()
            .map(|b| (b.time_name.as_str(), b.kind.whole_seconds()))
    }

    fn resolve(&mut self, name: &str) -> Result<usize, ParseError> {
        self.fmt.field(name).ok_or_else(|| {
            ParseError::Option(format!(
                "the {} format has no field {name:?} (fields: {})",
                self.fmt.name(),
                self.fmt.names().join(" ")
            ))
        })
    }

    fn bind(&mut self) -> Result<(), ParseError> {
        let time_name = match &self.spec.time {
            Some(t) => t.clone(),
            None => self.fmt.default_field("time").ok_or_else(|| {
                ParseError::Option(format!("the {} format logs no time field", self.fmt.name()))
            })?,
        };
        let time = self.resolve(&time_name)?;
        let kind = self.fmt.time_kind(time).ok_or_else(|| {
            ParseError::Option(format!(
                "time field {time_name:?} is not a time in the {} format",
                self.fmt.name()
            ))
        })?;
        let key = self.key.clone();
        let mut bound = BoundKey::bind(&key, |t| match t {
            Term::Field(n, _) if n == "ip" || n == "route" => {
                let f = self.fmt.default_field(n).ok_or_else(|| {
                    ParseError::Option(format!("the {} format logs no {n} field", self.fmt.name()))
                })?;
                Ok((self.resolve(&f)?, f))
            }
            Term::Field(n, _) => Ok((self.resolve(n)?, n.clone())),
            Term::Header(h, _) => {
                let f = self.fmt.header_field(h).ok_or_else(|| {
                    ParseError::Option(format!(
                        "the {} format logs no request header {h:?}",
                        self.fmt.name()
                    ))
                })?;
                let i = self
                    .resolve(&f)
                    .map_err(|m| m.within(format!("header {h:?}")))?;
                Ok((i, f))
            }
        })?;
        let fmt = &self.fmt;
        bound.set_rules(|i| fmt.has_port(i), self.spec.xff.unwrap_or_default());
        if let Some(xff) = self.spec.xff
            && !bound.reads_xff()
        {
            return Err(ParseError::Option(format!(
                "xff {}: the key {:?} reads no X-Forwarded-For address (the rule applies to a key such as ip or http_x_forwarded_for/24 that reads that header)",
                xff.name(),
                self.key.text
            )));
        }
        let weight = match &self.spec.weight {
            None => None,
            Some(w) => {
                let name = if w == "bytes" {
                    self.fmt.default_field("bytes").unwrap_or_else(|| w.clone())
                } else {
                    w.clone()
                };
                Some((self.resolve(&name)?, name))
            }
        };
        let mut needed: Vec<usize> = bound.fields().collect();
        needed.push(time);
        if let TimeKind::W3c { time_field } = kind {
            needed.push(time_field);
        }
        needed.extend(weight.as_ref().map(|(i, _)| *i));
        let prefix = self.fmt.prefix_stop(&needed);
        self.bound = Some(Bound {
            time,
            time_name,
            kind,
            key: bound,
            weight,
            prefix,
        });
        Ok(())
    }

    /// True when `line` is the format's header; else the format's fields
    /// are bound to their roles (once, at the first event line).
    fn header_or_bind(&mut self, line: &str) -> Result<bool, ParseError> {
        if self.fmt.header(line)? {
            if self.fmt.take_changed() {
                self.bound = None;
            }
            return Ok(true);
        }
        if self.bound.is_none() {
            self.bind()?;
        }
        Ok(false)
    }

    /// Whether a carriage return inside a line is refused: in every format
    /// but JSON (where it is white space between tokens, or refused inside
    /// a string by the JSON reading itself).
    pub fn lone_cr_refused(&self) -> bool {
        !self.fmt.cr_is_white_space()
    }

    /// Parses one line (without its line ending): a header, or an event
    /// whose key is borrowed from the line or written into `held`. An
    /// error names the field and what was wrong.
    pub fn parse(&mut self, line: &str, held: &mut String) -> Result<Parsed, ParseError> {
        if self.header_or_bind(line)? {
            return Ok(Parsed::Header);
        }
        let Some(b) = &self.bound else {
            return Err(ParseError::Internal("format not bound"));
        };
        let f = match b.prefix {
            Some(stop) => self.fmt.split_checked(line, stop)?,
            None => self.fmt.split(line)?,
        };
        let (t, at, w) = event_of(b, &mut self.cache, &f, line, held)?;
        Ok(Parsed::Event(t, at, w))
    }

    /// Parses one line as [`parse`](Self::parse) does when `owns` wants
    /// its key; else only as far as its time, key and weight need
    /// ([`Parsed::Elsewhere`]: the rest of the line is not checked). A
    /// line that fails there is parsed whole, so its error is the one
    /// `parse` gives; a line wrong only past those fields is an error
    /// only where its key is wanted.
    pub fn parse_owned(
        &mut self,
        line: &str,
        held: &mut String,
        owns: &dyn Fn(&str) -> bool,
    ) -> Result<Parsed, ParseError> {
        if self.header_or_bind(line)? {
            return Ok(Parsed::Header);
        }
        let Some(b) = &self.bound else {
            return Err(ParseError::Internal("format not bound"));
        };
        let Some(stop) = b.prefix else {
            // No early stop: the whole line, then the filter.
            let f = self.fmt.split(line)?;
            let (t, at, w) = event_of(b, &mut self.cache, &f, line, held)?;
            let key = match &at {
                Some(r) => line.get(r.clone()).unwrap_or_default(),
                None => held.as_str(),
            };
            return Ok(if owns(key) {
                Parsed::Event(t, at, w)
            } else {
                Parsed::Elsewhere(t, at, w)
            });
        };
        let fast = match self.fmt.split_prefix(line, stop) {
            Ok(f) => event_of(b, &mut self.cache, &f, line, held).ok(),
            Err(_) => None,
        };
        let Some((t, at, w)) = fast else {
            // The error the whole line gives, as `parse` finds it.
            return self.parse(line, held);
        };
        let key = match &at {
            Some(r) => line.get(r.clone()).unwrap_or_default(),
            None => held.as_str(),
        };
        if !owns(key) {
            return Ok(Parsed::Elsewhere(t, at, w));
        }
        // Wanted: the rest of the line is checked (its first fields split
        // as they did above, so the event is the same).
        self.fmt.split_checked(line, stop)?;
        Ok(Parsed::Event(t, at, w))
    }
}

#[cfg(test)]
mod tests;
