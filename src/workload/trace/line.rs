//! Reading one data line: a CSV header, a CSV record (plain or quoted), or a
//! JSON object, into an event's time, key and weight.

use super::format::MAX_LINE;
use super::parse::{parse_time, parse_weight, time_column, Columns};
use super::reader::TraceReader;
use crate::clock::Nanos;
use crate::error::Result;
use std::borrow::Cow;
use std::io::BufRead;

/// An event of one line: its time, its key (borrowed from the line when the
/// line holds it verbatim) and its weight.
pub(super) type LineEvent<'l> = (Nanos, Cow<'l, str>, u64);

impl TraceReader {
    pub(super) fn parse_header(&self, line: &str) -> Result<Columns> {
        let names: Vec<&str> = line.split(',').map(str::trim).collect();
        let mut time: Option<(usize, _)> = None;
        let mut key: Option<usize> = None;
        let mut weight: Option<usize> = None;
        // Two columns for one role (`t_ns,t_ms`, `key,key`, `weight,n`):
        // which one the trace means cannot be told, so neither is taken.
        let twice = |role: &str, first: usize, again: &str| {
            self.err(format!(
                "header {line:?}: columns {:?} and {again:?} are both the {role}: expected one (drop or rename the other)",
                names[first]
            ))
        };
        for (i, n) in names.iter().enumerate() {
            if let Some(unit) = time_column(n, self.opts.unit) {
                if let Some((first, _)) = time {
                    return Err(twice("time", first, n));
                }
                if self.opts.unit_given && unit != self.opts.unit {
                    return Err(self.err(format!(
                        "header {line:?}: column {n} is in {unit}, and the trace's unit is {}: the unit is for a time or timestamp column; drop it or rename the column",
                        self.opts.unit
                    )));
                }
                time = Some((i, unit));
            } else if *n == self.key_column {
                if let Some(first) = key {
                    return Err(twice("key", first, n));
                }
                key = Some(i);
            } else if *n == "weight" || *n == "n" {
                if let Some(first) = weight {
                    return Err(twice("weight", first, n));
                }
                weight = Some(i);
            }
        }
        match (time, key) {
            (Some((time, unit)), Some(key)) => Ok(Columns {
                time,
                unit,
                key,
                weight,
                width: names.len(),
            }),
            _ => Err(self.err(format!(
                "header {line:?}: expected a time column (t_ns, t_ms, t_s, time or timestamp) and a {} column, optionally weight",
                self.key_column
            ))),
        }
    }

    pub(super) fn parse_csv<'l>(&self, line: &'l str, c: Columns) -> Result<LineEvent<'l>> {
        // A line without quotes or carriage returns is its fields split on
        // commas, exactly as the csv parser reads it (the equivalence is a
        // property test below). Building a csv parser per line costs ~20 µs
        // (it compiles a DFA), which made trace replay 17x slower than the
        // limiters themselves, so only quoted lines pay for it.
        match self.parse_csv_plain(line, c) {
            Some(e) => e,
            None => self.parse_csv_quoted(line, c),
        }
    }

    /// A line without quotes or carriage returns, split on commas in one
    /// pass over its bytes (None: the line has a quote or a carriage
    /// return, for the csv parser).
    pub(super) fn parse_csv_plain<'l>(
        &self,
        line: &'l str,
        c: Columns,
    ) -> Option<Result<LineEvent<'l>>> {
        let (mut time, mut key, mut weight) = (None, None, None);
        let mut field = |i: usize, f: &'l str| {
            if i == c.time {
                time = Some(f);
            }
            if i == c.key {
                key = Some(f);
            }
            if Some(i) == c.weight {
                weight = Some(f);
            }
        };
        let width = split_plain(line, &mut field)?;
        Some(self.event_of(c, time, key, weight, width))
    }

    pub(super) fn parse_csv_quoted(&self, line: &str, c: Columns) -> Result<LineEvent<'static>> {
        let mut reader = csv::ReaderBuilder::new()
            .has_headers(false)
            .from_reader(line.as_bytes());
        let record = match reader.records().next() {
            Some(Ok(r)) => r,
            Some(Err(e)) => return Err(self.err(e)),
            None => return Err(self.err("empty line")),
        };
        let (t, key, w) = self.event_of(
            c,
            record.get(c.time),
            record.get(c.key),
            c.weight.and_then(|i| record.get(i)),
            record.len(),
        )?;
        Ok((t, Cow::Owned(key.into_owned()), w))
    }

    /// The event of a CSV line's time, key and weight fields (`fields` is how
    /// many the line had, for the message when one is missing).
    fn event_of<'l>(
        &self,
        c: Columns,
        time: Option<&str>,
        key: Option<&'l str>,
        weight: Option<&str>,
        fields: usize,
    ) -> Result<LineEvent<'l>> {
        if fields != c.width {
            return Err(self.err(format!(
                "{fields} fields: the header has {} (a comma in a key must be quoted)",
                c.width
            )));
        }
        let missing = |name: &str| self.err(format!("missing {name} field (only {fields} fields)"));
        let t = parse_time(time.ok_or_else(|| missing("time"))?, c.unit)
            .map_err(|m| self.err(format!("time {m}")))?;
        let key = key.ok_or_else(|| missing("key"))?;
        if key.is_empty() {
            // As a JSON Lines key "" is refused: every such line would be
            // one key, "".
            return Err(self.err("key \"\": an empty key, expected the request's key"));
        }
        let key = Cow::Borrowed(key);
        let weight = match c.weight {
            Some(_) => {
                parse_weight(weight.ok_or_else(|| missing("weight"))?).map_err(|m| self.err(m))?
            }
            None => 1,
        };
        Ok((t, key, weight))
    }

    pub(super) fn parse_json(&self, line: &str) -> Result<LineEvent<'static>> {
        // Strict: a key named twice (`"key": "a", "key": "b"`) is refused,
        // not read as its last value.
        let v: serde_json::Value = crate::strict_json::from_str(line)
            .map_err(|e| self.err(format!("malformed JSON at column {}: {e}", e.column())))?;
        let obj = v
            .as_object()
            .ok_or_else(|| self.err("expected a JSON object"))?;
        let mut time = None;
        let mut time_name: Option<&str> = None;
        for (name, value) in obj {
            if let Some(unit) = time_column(name, self.opts.unit) {
                if let Some(first) = time_name {
                    return Err(self.err(format!(
                        "fields {first:?} and {name:?} are both the time: expected one"
                    )));
                }
                time_name = Some(name);
                let text = match value {
                    serde_json::Value::String(s) => s.clone(),
                    serde_json::Value::Number(n) => n.to_string(),
                    other => {
                        return Err(
                            self.err(format!("{name} {other}: expected a number or a string"))
                        )
                    }
                };
                time = Some(parse_time(&text, unit).map_err(|m| self.err(format!("{name} {m}")))?);
            }
        }
        let t =
            time.ok_or_else(|| self.err("no time field (t_ns, t_ms, t_s, time or timestamp)"))?;
        let key = match obj.get(self.key_column.as_str()) {
            Some(serde_json::Value::String(s)) if s.is_empty() => {
                return Err(self.err(format!(
                    "{} \"\": an empty key, expected the request's key",
                    self.key_column
                )))
            }
            Some(serde_json::Value::String(s)) => s.clone(),
            Some(serde_json::Value::Number(n)) => n.to_string(),
            Some(other) => {
                return Err(self.err(format!(
                    "{} {other}: expected a string or a number",
                    self.key_column
                )))
            }
            None => return Err(self.err(format!("no {} field", self.key_column))),
        };
        if obj.contains_key("weight") && obj.contains_key("n") {
            return Err(self.err("fields \"weight\" and \"n\" are both the weight: expected one"));
        }
        let weight = match obj.get("weight").or_else(|| obj.get("n")) {
            None => 1,
            Some(serde_json::Value::Number(n)) => {
                parse_weight(&n.to_string()).map_err(|m| self.err(m))?
            }
            Some(other) => {
                return Err(self.err(format!("weight {other}: expected a whole number >= 1")))
            }
        };
        Ok((t, Cow::Owned(key), weight))
    }
}

impl TraceReader {
    /// Reads ahead the plain lines already in the input's buffer
    /// ([`TraceReader::read_ahead`] of a trace that `plain_csv` allows),
    /// straight from it: each line is split, parsed, ordered, its key
    /// copied, hashed and its interner slot prefetched, up to `ahead`
    /// events in all. It stops, the line unread, at the first one it does
    /// not read exactly as the line-at-a-time path does (a line across the
    /// buffer's end, a blank or malformed or quoted one, one with a
    /// carriage return or invalid UTF-8, a late one) and leaves that line
    /// to that path, which gives its event or its message: the events,
    /// line numbers and errors are the same either way. Copying each line
    /// out of the buffer, checking it and passing its event on by value
    /// through three functions cost as much as splitting and parsing it.
    pub(super) fn read_ahead_buffered(&mut self, c: Columns, ahead: usize) {
        if self.done {
            return;
        }
        let buf = match self.lines.fill_buf() {
            Ok(b) => b,
            // The line-at-a-time path reads it again, and says what failed.
            Err(_) => return,
        };
        let mut used = 0usize;
        let mut last = self.last_emitted;
        while self.ahead.events.len() < ahead {
            let rest = &buf[used..];
            let Some(nl) = memchr::memchr(b'\n', rest) else {
                break;
            };
            let line = &rest[..nl];
            if nl >= MAX_LINE || !line.first().is_some_and(u8::is_ascii_graphic) {
                break;
            }
            let Ok(line) = std::str::from_utf8(line) else {
                break;
            };
            let Some((t, key, w)) = plain_event(line, c) else {
                break;
            };
            if last.is_some_and(|l| t < l) {
                break;
            }
            last = Some(t);
            self.line_no += 1;
            self.ahead.push_text(&self.keys, t, key, w, self.line_no);
            used += nl + 1;
        }
        self.last_emitted = last;
        self.lines.consume(used);
    }
}

/// Splits a plain CSV line on its commas, each field handed to `field`
/// with its index; the number of fields, or None when the line has a
/// quote or a carriage return (for the csv parser). One pass over the
/// bytes, shared by the line-at-a-time reader and the buffer's fast path
/// so that both split alike.
#[inline(always)]
fn split_plain<'l>(line: &'l str, field: &mut impl FnMut(usize, &'l str)) -> Option<usize> {
    let (mut i, mut start) = (0usize, 0usize);
    for (j, &b) in line.as_bytes().iter().enumerate() {
        match b {
            // A comma is one byte of UTF-8: `j` is a char boundary.
            b',' => {
                field(i, &line[start..j]);
                i += 1;
                start = j + 1;
            }
            b'"' | b'\r' => return None,
            _ => {}
        }
    }
    field(i, &line[start..]);
    Some(i + 1)
}

/// The event of a plain CSV line (no quote, no carriage return) when
/// [`TraceReader::parse_csv`] reads it without an error: the same fields,
/// split on commas, and the same parses of the time and the weight. None
/// for any line that is not such a line, or that is wrong.
#[inline]
fn plain_event<'l>(line: &'l str, c: Columns) -> Option<(Nanos, &'l str, u64)> {
    let (mut time, mut key, mut weight) = ("", "", "");
    let mut field = |i: usize, f: &'l str| {
        if i == c.time {
            time = f;
        }
        if i == c.key {
            key = f;
        }
        if Some(i) == c.weight {
            weight = f;
        }
    };
    // An empty key is refused by the line-at-a-time path: left to it.
    if split_plain(line, &mut field)? != c.width || key.is_empty() {
        return None;
    }
    let t = parse_time(time, c.unit).ok()?;
    let w = match c.weight {
        Some(_) => parse_weight(weight).ok()?,
        None => 1,
    };
    Some((t, key, w))
}
