//! A log line template: literal text and named fields in turn, as nginx's
//! `log_format` and Envoy's format strings describe a line. Matching a line
//! walks the template once: each field ends where the next literal starts
//! (its first byte found 16 bytes at a time), so a line is split without
//! allocating.

use super::bytes::find_byte;
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
    /// The literal the line starts with ("" when it starts with a field).
    lead: String,
    /// Each field with the literal after it, in order: what a split walks.
    steps: Vec<Step>,
    /// For a prefix of `stop` segments, how many steps it holds.
    steps_at: Vec<usize>,
    /// Values are written unescaped (Envoy): the last field ends where
    /// the closing literal ends the line ([`Template::raw_values`]).
    raw: bool,
    /// The line ends with a field that holds a number ([`NUMERIC`]).
    numeric_last: bool,
}

/// Fields that always hold a number (or `-`, written for none), by the
/// names the nginx, Apache and Envoy formats give them.
const NUMERIC: &[&str] = &[
    "status",
    "body_bytes_sent",
    "bytes_sent",
    "request_length",
    "request_time",
    "msec",
    "connection",
    "connection_requests",
    "RESPONSE_CODE",
    "BYTES_RECEIVED",
    "BYTES_SENT",
    "DURATION",
];

/// Digits, with a sign or a decimal point, or `-` for none.
fn is_number(v: &[u8]) -> bool {
    !v.is_empty()
        && v.iter()
            .all(|c| c.is_ascii_digit() || matches!(c, b'.' | b'-'))
}

/// A field and the literal that ends it ("" when the field ends the
/// line), compiled from the segments once.
#[derive(Debug, Clone)]
struct Step {
    field: usize,
    next: String,
    /// The literal's first byte (0 when it is empty) and the rest, apart:
    /// what each step's search takes.
    first: u8,
    rest: Box<[u8]>,
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
        let lead = match out.first() {
            Some(Seg::Lit(l)) => l.clone(),
            _ => String::new(),
        };
        let mut steps = Vec::new();
        let mut steps_at = vec![0];
        for (i, seg) in out.iter().enumerate() {
            if let Seg::Field(f) = seg {
                let next = match out.get(i + 1) {
                    Some(Seg::Lit(l)) => l.clone(),
                    _ => String::new(),
                };
                let (first, rest) = match next.as_bytes().split_first() {
                    Some((&first, rest)) => (first, rest.into()),
                    None => (0, Box::default()),
                };
                steps.push(Step {
                    field: *f,
                    next,
                    first,
                    rest,
                });
            }
            steps_at.push(steps.len());
        }
        let numeric_last = steps
            .last()
            .is_some_and(|s| s.next.is_empty() && NUMERIC.contains(&names[s.field].as_str()));
        Ok(Template {
            segs: out,
            names,
            spans: vec![(ABSENT, ABSENT); n],
            lead,
            steps,
            steps_at,
            raw: false,
            numeric_last,
        })
    }

    /// The template of a writer that does not escape its values (Envoy
    /// writes a header as it came): the last field, before the line's
    /// closing literal, ends where that literal ends the line, so a quote
    /// inside it is part of it. nginx and Apache escape quotes, so there a
    /// quote in the last field is an error naming it.
    pub fn raw_values(mut self) -> Template {
        self.raw = true;
        self
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
        let stop = stop.min(self.segs.len());
        let lead = self.lead.as_bytes();
        if stop > 0 && !starts_with(b, lead) {
            return Err(ParseError::Line(format!(
                "expected {:?} at the start at byte 1, found {:?}",
                self.lead,
                snippet(line)
            )));
        }
        let mut p = if stop > 0 { lead.len() } else { 0 };
        // A literal after a field is matched where the field ends
        // (`find_end`), so it is never compared a second time.
        let last = self.steps.len().saturating_sub(1);
        for (k, step) in self.steps[..self.steps_at[stop]].iter().enumerate() {
            // A field before the last: where its literal is (every field
            // but the last has one).
            let end = if k < last && !step.next.is_empty() {
                find_end(b, p, step.first, &step.rest)
                    .ok_or_else(|| self.no_literal(step, b.len()))?
            } else {
                self.last_end(line, p, k == last, step)?
            };
            self.spans[step.field] = (p as u32, end as u32);
            p = end + step.next.len();
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

impl Template {
    /// Where the last field (`is_last`), or one without a literal after
    /// it, that starts at `p` ends.
    fn last_end(
        &self,
        line: &str,
        p: usize,
        is_last: bool,
        step: &Step,
    ) -> Result<usize, ParseError> {
        let b = line.as_bytes();
        let next = step.next.as_bytes();
        Ok(if next.is_empty() {
            // The last field, which the line's end ends: a number
            // must be one, or a line with more text than the format
            // (a `combined` line read as `common`, lines joined by
            // carriage returns) would pass whole into it.
            if self.numeric_last && !is_number(&b[p..]) {
                return Err(ParseError::Line(format!(
                    "field {}: {:?} is not a number: unexpected text after the last field at byte {}",
                    self.names[step.field],
                    snippet(&line[p..]),
                    p + 1
                )));
            }
            b.len()
        } else if self.raw && is_last && b.len() >= p + next.len() && b.ends_with(next) {
            // The last field before the line's closing literal ends
            // where that literal closes the line: Envoy writes header
            // values raw, so a user agent with a quote in
            // `"%REQ(USER-AGENT)%"` at the end holds quotes its
            // closing one comes after.
            b.len() - next.len()
        } else {
            find_end(b, p, next[0], &next[1..]).ok_or_else(|| self.no_literal(step, b.len()))?
        })
    }

    /// The error of a line without the literal after `step`'s field.
    #[cold]
    fn no_literal(&self, step: &Step, len: usize) -> ParseError {
        ParseError::Line(format!(
            "field {}: no {:?} after it (the line ends at byte {})",
            self.names[step.field], step.next, len
        ))
    }
}

/// Where a field starting at `from` ends: the first literal (`first`
/// then `rest`) not escaped by a backslash (a quote inside a quoted field
/// is written `\"` by Apache; nginx writes it `\x22`, which never
/// matches). Found by its first byte ([`find_byte`]), then the rest
/// compared: a log's literals start with a byte its fields rarely hold (a
/// quote, a bracket, the space after a field without one), and its fields
/// are short, where a substring searcher's setup cost more than the search
/// (a `memmem` finder per literal was a sixth of a shard's time).
#[inline(always)]
fn find_end(hay: &[u8], from: usize, first: u8, rest: &[u8]) -> Option<usize> {
    let mut i = from;
    loop {
        let at = find_byte(first, hay, i)?;
        // Not escaped by an odd run of backslashes inside the field
        // (counted only when the byte before is one).
        if starts_with(&hay[at + 1..], rest) && !(first == b'"' && escaped(hay, from, at)) {
            return Some(at);
        }
        i = at + 1;
    }
}

/// Whether the byte at `at` follows an odd run of backslashes that
/// starts at or after `from`.
#[inline]
fn escaped(hay: &[u8], from: usize, at: usize) -> bool {
    let mut k = at;
    while k > from && hay[k - 1] == b'\\' {
        k -= 1;
    }
    (at - k) % 2 == 1
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quoted_field_ends_at_its_first_unescaped_quote() {
        let line = br#"a\"b\\"c"#;
        // `\"` is escaped; `\\"` is a backslash, then the quote that ends.
        assert_eq!(find_end(line, 0, b'"', b""), Some(6));
        // Backslashes before the field's start do not escape its quote.
        assert_eq!(find_end(br#"\"x"#, 1, b'"', b""), Some(1));
    }
}
