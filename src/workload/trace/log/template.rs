//! A log line template: literal text and named fields in turn, as nginx's
//! `log_format` and Envoy's format strings describe a line. Matching a line
//! walks the template once: each field ends where the next literal starts
//! (found with `memchr`), so a line is split without allocating.

use super::ParseError;
use super::{Fields, Span, ABSENT};

/// A piece of a template.
#[derive(Debug, Clone)]
pub enum Seg {
    /// Text that must appear as is.
    Lit(String),
    /// A field, by index into the template's names.
    Field(usize),
}

/// A compiled template.
#[derive(Debug, Clone)]
pub struct Template {
    /// The pieces, never two fields in a row.
    pub segs: Vec<Seg>,
    /// Field names in order of appearance (a name may appear once).
    pub names: Vec<String>,
    spans: Vec<Span>,
}

impl Template {
    /// A template of `segs` over `names`; two adjacent fields cannot be
    /// told apart and are refused.
    pub fn new(segs: Vec<Seg>, names: Vec<String>) -> Result<Template, ParseError> {
        // Merge adjacent literals; refuse adjacent fields.
        let mut out: Vec<Seg> = Vec::new();
        for s in segs {
            match (out.last_mut(), s) {
                (Some(Seg::Lit(a)), Seg::Lit(b)) => a.push_str(&b),
                (Some(Seg::Field(a)), Seg::Field(b)) => {
                    return Err(ParseError::Option(format!(
                        "fields {:?} and {:?} are adjacent with nothing between them: a line cannot be split there",
                        names[*a], names[b]
                    )))
                }
                (_, Seg::Lit(b)) if b.is_empty() => {}
                (_, s) => out.push(s),
            }
        }
        if !out.iter().any(|s| matches!(s, Seg::Field(_))) {
            return Err(ParseError::Option("the format has no fields".into()));
        }
        let n = names.len();
        Ok(Template {
            segs: out,
            names,
            spans: vec![(ABSENT, ABSENT); n],
        })
    }

    /// The index of a field name.
    pub fn index(&self, name: &str) -> Option<usize> {
        self.names.iter().position(|n| n == name)
    }

    /// Splits a line into the template's fields; an error names the
    /// literal or field where the line stopped matching.
    pub fn split<'a>(&'a mut self, line: &'a str) -> Result<Fields<'a>, ParseError> {
        self.split_upto(line, self.segs.len())
    }

    /// How many segments a split must walk to know the spans of `fields`
    /// (through the last of them in the line; None when one is not in
    /// the template).
    pub fn prefix_stop(&self, fields: &[usize]) -> Option<usize> {
        fields
            .iter()
            .map(|f| {
                self.segs
                    .iter()
                    .position(|s| matches!(s, Seg::Field(g) if g == f))
                    .map(|i| i + 1)
            })
            .try_fold(0, |m, i| i.map(|i| m.max(i)))
    }

    /// Splits the first `stop` segments of a line only ([`prefix_stop`](Self::prefix_stop)):
    /// the fields they hold get their spans, the rest of the line is not
    /// looked at (its fields keep stale spans). Where the line fails in
    /// those segments, the error is [`split`](Self::split)'s.
    pub fn split_upto<'a>(
        &'a mut self,
        line: &'a str,
        stop: usize,
    ) -> Result<Fields<'a>, ParseError> {
        let b = line.as_bytes();
        let mut p = 0usize;
        let mut i = 0;
        let stop = stop.min(self.segs.len());
        while i < stop {
            match &self.segs[i] {
                Seg::Lit(l) => {
                    if !starts_with(&b[p..], l.as_bytes()) {
                        let what = match i.checked_sub(1).map(|j| &self.segs[j]) {
                            Some(Seg::Field(f)) => format!("after field {}", self.names[*f]),
                            _ => "at the start".to_string(),
                        };
                        return Err(ParseError::Line(format!(
                            "expected {l:?} {what} at byte {}, found {:?}",
                            p + 1,
                            snippet(&line[p..])
                        )));
                    }
                    p += l.len();
                }
                Seg::Field(f) => {
                    let end = match self.segs.get(i + 1) {
                        None => b.len(),
                        Some(Seg::Lit(next)) => find_end(&b[p..], next.as_bytes())
                            .map(|e| p + e)
                            .ok_or_else(|| {
                            ParseError::Line(format!(
                                "field {}: no {:?} after it (the line ends at byte {})",
                                self.names[*f],
                                next,
                                b.len()
                            ))
                        })?,
                        Some(Seg::Field(_)) => unreachable!("adjacent fields are refused"),
                    };
                    self.spans[*f] = (p as u32, end as u32);
                    p = end;
                }
            }
            i += 1;
        }
        if stop == self.segs.len() && p != b.len() {
            return Err(ParseError::Line(format!(
                "unexpected text after the last field at byte {}: {:?}",
                p + 1,
                snippet(&line[p..])
            )));
        }
        Ok(Fields {
            text: line,
            spans: &self.spans,
        })
    }
}

/// Where a field ends: the first `next` not escaped by a backslash (a
/// quote inside a quoted field is written `\"` by Apache; nginx writes it
/// `\x22`, which never matches). Found by its first byte (`memchr`), then
/// the rest compared: a log's literals start with a byte its fields rarely
/// hold (a quote, a bracket, the space after a field without one), and its
/// fields are short, where a substring searcher's setup cost more than the
/// search (a `memmem` finder per literal was a sixth of a shard's time).
fn find_end(hay: &[u8], next: &[u8]) -> Option<usize> {
    let (&first, rest) = next.split_first()?;
    let mut from = 0;
    loop {
        let at = memchr::memchr(first, &hay[from..])? + from;
        let matches = starts_with(&hay[at + 1..], rest);
        let escaped =
            first == b'"' && hay[..at].iter().rev().take_while(|&&c| c == b'\\').count() % 2 == 1;
        if matches && !escaped {
            return Some(at);
        }
        from = at + 1;
    }
}

/// `hay.starts_with(lit)` byte by byte: a log's literals are a few bytes,
/// where a call to `memcmp` cost more than the comparison.
fn starts_with(hay: &[u8], lit: &[u8]) -> bool {
    if hay.len() < lit.len() {
        return false;
    }
    let mut i = 0;
    while i < lit.len() {
        if hay[i] != lit[i] {
            return false;
        }
        i += 1;
    }
    true
}

fn snippet(s: &str) -> &str {
    let mut end = s.len().min(40);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// The [`LogFormat`](super::LogFormat) methods of a format whose lines
/// are split by the [`Template`] in its field `$t` (nginx's `log_format`,
/// Envoy's format string): its names, its split and its prefix split.
macro_rules! split_by_template {
    ($t:ident) => {
        fn names(&self) -> Vec<String> {
            self.$t.names.clone()
        }
        fn split<'a>(&'a mut self, line: &'a str) -> Result<Fields<'a>, ParseError> {
            self.$t.split(line)
        }
        fn prefix_stop(&self, fields: &[usize]) -> Option<usize> {
            self.$t.prefix_stop(fields)
        }
        fn split_prefix<'a>(
            &'a mut self,
            line: &'a str,
            stop: usize,
        ) -> Result<Fields<'a>, ParseError> {
            self.$t.split_upto(line, stop)
        }
    };
}
pub(super) use split_by_template;
