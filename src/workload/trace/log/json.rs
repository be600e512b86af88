//! JSON Lines with any field names: one object per line, fields picked by
//! name (`--columns time=start_time,key=x_forwarded_for`, or `--key`);
//! a dotted name (`request.path`) reaches into nested objects. Envoy's JSON
//! access logs are this format with the time in `start_time` (`envoy-json`).
//!
//! A time field that is a string is ISO 8601 / RFC 3339 unless it is a
//! plain decimal number, which is in `--time-unit` like a number.
//!
//! A line is read in one pass without building it as a `Value`: the
//! fields asked for are written out as they are met and every other value
//! is only checked (`IgnoredAny`), so a line costs what its syntax costs
//! (building each line's map was four fifths of reading an Envoy JSON
//! log). What a line gives, and every message, is what parsing it whole
//! gives: the last of a repeated name counts, a name written as is comes
//! before a dotted path into nested objects.

use super::json_flat::{self, Flat};
use super::ParseError;
use super::{Fields, LogFormat, Span, TimeKind, ABSENT};
use crate::workload::trace::TimeUnit;
use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserializer as _;
use serde_json::Value;
use std::borrow::Cow;
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
    /// Per wanted name, what the line being split holds under it.
    slots: Vec<Slot>,
    /// The first names of the dotted names wanted (`request` of
    /// `request.path`), and the line's value under each (the last one).
    firsts: Vec<(String, Option<Value>)>,
    /// Per wanted name, what a flat line holds under it
    /// ([`super::json_flat`]).
    flat: Vec<Flat>,
}

/// What a line holds under a wanted name.
#[derive(Debug, Clone)]
enum Slot {
    /// Not in the line (as far as its top-level names go).
    Unset,
    /// `null`.
    Null,
    /// Written out in the scratch text.
    At(u32, u32),
    /// An array or an object: an error should it be the value used.
    Bad(Value),
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
            slots: Vec::new(),
            firsts: Vec::new(),
            flat: Vec::new(),
        }
    }
}

/// The slot of a value built whole (a top-level name that is also the
/// first of a dotted name, or a nested one), written out as [`Field`]
/// writes a value met in the line.
fn slot_of(v: &Value, scratch: &mut String) -> Slot {
    let start = scratch.len() as u32;
    match v {
        Value::Null => return Slot::Null,
        Value::String(s) => scratch.push_str(s),
        Value::Number(n) => {
            let _ = write!(scratch, "{n}");
        }
        Value::Bool(b) => {
            let _ = write!(scratch, "{b}");
        }
        other => return Slot::Bad(other.clone()),
    }
    Slot::At(start, scratch.len() as u32)
}

/// The line's top level: true for an object (its wanted values written
/// out, its first names of dotted names kept), false for anything else.
struct Top<'s> {
    wanted: &'s [String],
    firsts: &'s mut [(String, Option<Value>)],
    slots: &'s mut [Slot],
    scratch: &'s mut String,
}

impl<'de> Visitor<'de> for Top<'_> {
    type Value = bool;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        while let Some(Name(key)) = map.next_key()? {
            let direct = self.wanted.iter().position(|w| *w == key);
            if let Some(first) = self.firsts.iter_mut().find(|(f, _)| *f == key) {
                let v: Value = map.next_value()?;
                if let Some(i) = direct {
                    self.slots[i] = slot_of(&v, self.scratch);
                }
                first.1 = Some(v);
            } else if let Some(i) = direct {
                self.slots[i] = map.next_value_seed(Field(self.scratch))?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(true)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<bool, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(false)
    }
    fn visit_bool<E>(self, _: bool) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_i64<E>(self, _: i64) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_u64<E>(self, _: u64) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_f64<E>(self, _: f64) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_str<E>(self, _: &str) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_unit<E>(self) -> Result<bool, E> {
        Ok(false)
    }
}

/// A name, borrowed from the line unless it holds an escape.
struct Name<'de>(Cow<'de, str>);

impl<'de> serde::Deserialize<'de> for Name<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Name<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a name")
            }
            fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Name<'de>, E> {
                Ok(Name(Cow::Borrowed(s)))
            }
            fn visit_str<E>(self, s: &str) -> Result<Name<'de>, E> {
                Ok(Name(Cow::Owned(s.to_string())))
            }
        }
        d.deserialize_str(V)
    }
}

/// A wanted value met in the line, written out into the scratch text as
/// [`slot_of`] writes the same value built whole (`Number`'s own text for
/// a number).
struct Field<'s>(&'s mut String);

impl<'de> DeserializeSeed<'de> for Field<'_> {
    type Value = Slot;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Slot, D::Error> {
        d.deserialize_any(self)
    }
}

impl Field<'_> {
    fn write(self, v: impl std::fmt::Display) -> Slot {
        let start = self.0.len() as u32;
        let _ = write!(self.0, "{v}");
        Slot::At(start, self.0.len() as u32)
    }
}

impl<'de> Visitor<'de> for Field<'_> {
    type Value = Slot;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a value")
    }
    fn visit_bool<E>(self, b: bool) -> Result<Slot, E> {
        Ok(self.write(b))
    }
    fn visit_i64<E>(self, n: i64) -> Result<Slot, E> {
        Ok(self.write(serde_json::Number::from(n)))
    }
    fn visit_u64<E>(self, n: u64) -> Result<Slot, E> {
        Ok(self.write(serde_json::Number::from(n)))
    }
    fn visit_f64<E>(self, n: f64) -> Result<Slot, E> {
        // As a `Value` holds it: a float that is not finite is null.
        Ok(serde_json::Number::from_f64(n).map_or(Slot::Null, |n| self.write(n)))
    }
    fn visit_str<E>(self, s: &str) -> Result<Slot, E> {
        let start = self.0.len() as u32;
        self.0.push_str(s);
        Ok(Slot::At(start, self.0.len() as u32))
    }
    fn visit_unit<E>(self) -> Result<Slot, E> {
        Ok(Slot::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Slot, A::Error> {
        let v = Value::deserialize(serde::de::value::SeqAccessDeserializer::new(seq))?;
        Ok(Slot::Bad(v))
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Slot, A::Error> {
        let v = Value::deserialize(serde::de::value::MapAccessDeserializer::new(map))?;
        Ok(Slot::Bad(v))
    }
}

use serde::Deserialize as _;

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
        self.slots.push(Slot::Unset);
        self.flat.push(Flat::Unset);
        if let Some((first, _)) = name.split_once('.')
            && !self.firsts.iter().any(|(f, _)| f == first)
        {
            self.firsts.push((first.to_string(), None));
        }
        Some(self.wanted.len() - 1)
    }
    fn names(&self) -> Vec<String> {
        self.wanted.clone()
    }
    fn split<'a>(&'a mut self, line: &'a str) -> Result<Fields<'a>, ParseError> {
        // A flat line without a dotted name wanted: read without serde,
        // with the values serde's reading gives (`json_flat`).
        if self.firsts.is_empty() {
            self.scratch.clear();
            self.flat.fill(Flat::Unset);
            if json_flat::read(line, &self.wanted, &mut self.flat, &mut self.scratch).is_some() {
                for (span, f) in self.spans.iter_mut().zip(&self.flat) {
                    *span = match *f {
                        Flat::Unset | Flat::Null => (ABSENT, ABSENT),
                        Flat::At(a, b) => (a, b),
                    };
                }
                return Ok(Fields {
                    text: &self.scratch,
                    spans: &self.spans,
                });
            }
        }
        self.split_serde(line)
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
    fn cr_is_white_space(&self) -> bool {
        true
    }
}

impl Json {
    /// A line read through serde: any JSON, dotted names too.
    fn split_serde<'a>(&'a mut self, line: &'a str) -> Result<Fields<'a>, ParseError> {
        self.scratch.clear();
        self.slots.iter_mut().for_each(|s| *s = Slot::Unset);
        self.firsts.iter_mut().for_each(|f| f.1 = None);
        let top = Top {
            wanted: &self.wanted,
            firsts: &mut self.firsts,
            slots: &mut self.slots,
            scratch: &mut self.scratch,
        };
        let mut de = serde_json::Deserializer::from_str(line);
        let object = de
            .deserialize_any(top)
            .and_then(|o| de.end().map(|()| o))
            .map_err(|e| {
                ParseError::Line(format!("malformed JSON at column {}: {e}", e.column()))
            })?;
        if !object {
            return Err(ParseError::Line("expected a JSON object".into()));
        }
        for (i, name) in self.wanted.iter().enumerate() {
            let mut slot = std::mem::replace(&mut self.slots[i], Slot::Unset);
            if matches!(slot, Slot::Unset)
                && let Some((first, rest)) = name.split_once('.')
            {
                let top = self.firsts.iter().find(|(f, _)| f == first);
                let nested = top
                    .and_then(|(_, v)| v.as_ref())
                    .and_then(|v| rest.split('.').try_fold(v, |v, p| v.as_object()?.get(p)));
                if let Some(v) = nested {
                    slot = slot_of(v, &mut self.scratch);
                }
            }
            self.spans[i] = match slot {
                Slot::Unset | Slot::Null => (ABSENT, ABSENT),
                Slot::At(a, b) => (a, b),
                Slot::Bad(other) => {
                    return Err(ParseError::Line(format!(
                        "field {name}: {} is an {}, expected a string or a number",
                        other,
                        if other.is_array() { "array" } else { "object" }
                    )))
                }
            };
        }
        Ok(Fields {
            text: &self.scratch,
            spans: &self.spans,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The whole-line reading the one-pass split replaces: the line built
    /// as a `Value`, each name looked up as is, then as a dotted path.
    fn by_value(wanted: &[&str], line: &str) -> Result<Vec<Option<String>>, ParseError> {
        let v: Value = serde_json::from_str(line).map_err(|e| {
            ParseError::Line(format!("malformed JSON at column {}: {e}", e.column()))
        })?;
        let obj = v
            .as_object()
            .ok_or_else(|| ParseError::Line("expected a JSON object".into()))?;
        let mut out = Vec::new();
        for name in wanted {
            let found = obj.get(*name).or_else(|| {
                let mut parts = name.split('.');
                let mut v = obj.get(parts.next()?)?;
                for p in parts {
                    v = v.as_object()?.get(p)?;
                }
                Some(v)
            });
            out.push(match found {
                None | Some(Value::Null) => None,
                Some(Value::String(s)) => Some(s.clone()),
                Some(Value::Number(n)) => Some(n.to_string()),
                Some(Value::Bool(b)) => Some(b.to_string()),
                Some(other) => {
                    return Err(ParseError::Line(format!(
                        "field {name}: {} is an {}, expected a string or a number",
                        other,
                        if other.is_array() { "array" } else { "object" }
                    )))
                }
            });
        }
        Ok(out)
    }

    fn by_split(wanted: &[&str], line: &str) -> Result<Vec<Option<String>>, ParseError> {
        by(wanted, line, false)
    }

    /// The line's wanted values read by `split`, or with `serde` only
    /// through serde.
    fn by(wanted: &[&str], line: &str, serde: bool) -> Result<Vec<Option<String>>, ParseError> {
        let mut j = Json::new("jsonl", PLAIN, TimeUnit::Ms);
        for w in wanted {
            j.field(w);
        }
        let f = if serde {
            j.split_serde(line)?
        } else {
            j.split(line)?
        };
        Ok((0..wanted.len())
            .map(|i| f.opt(i).map(str::to_string))
            .collect())
    }

    #[test]
    fn flat_lines_read_without_serde_as_serde_reads_them() {
        // Seeded lines of every shape a flat reading meets or must pass
        // on (escapes, control bytes, floats, big and negative integers,
        // nested values, repeated names, white space), then each edited
        // a byte at a time: the reading (the flat one where it answers)
        // is serde's, message included.
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        let names = ["time", "ip", "n", "x", "caf\u{e9}", "a b", "i\\u0070"];
        let values = [
            r#""2024-01-01T00:00:00.000Z""#,
            r#""10.0.0.1""#,
            r#""[2001:db8::1]:443""#,
            r#""""#,
            r#""q\"uote""#,
            r#""caf\u00e9""#,
            "\"tab\there\"",
            "\"ctl\u{1}\"",
            "0",
            "7",
            "1700000000123",
            "123456789012345678",
            "1234567890123456789",
            "18446744073709551616",
            "-5",
            "-0",
            "01",
            "1.5",
            "1e3",
            "1E400",
            "true",
            "false",
            "null",
            r#"{"a":1}"#,
            "[1,2]",
            "[]",
        ];
        let ws = ["", "", " ", "\t", "\r\n "];
        let edits = b"{}[]\":,\\ 0a-.e\t";
        let wanted = ["time", "ip", "n"];
        let want: Vec<String> = wanted.iter().map(|w| w.to_string()).collect();
        let (mut flat, mut lines) = (0, 0);
        for _ in 0..40_000 {
            let mut line = String::from(ws[next(5) as usize]);
            line.push('{');
            for m in 0..next(6) {
                if m > 0 {
                    line.push(',');
                }
                line.push_str(ws[next(5) as usize]);
                let _ = write!(line, "\"{}\"", names[next(names.len() as u64) as usize]);
                line.push_str(ws[next(5) as usize]);
                line.push(':');
                line.push_str(ws[next(5) as usize]);
                line.push_str(values[next(values.len() as u64) as usize]);
            }
            line.push('}');
            line.push_str(ws[next(5) as usize]);
            for round in 0..2 {
                if round == 1 {
                    let mut bytes = line.clone().into_bytes();
                    let at = next(bytes.len() as u64) as usize;
                    if next(2) == 0 {
                        bytes[at] = edits[next(edits.len() as u64) as usize];
                    } else {
                        bytes.remove(at);
                    }
                    let Ok(edited) = String::from_utf8(bytes) else {
                        continue;
                    };
                    line = edited;
                }
                let mut slots = vec![Flat::Unset; want.len()];
                if json_flat::read(&line, &want, &mut slots, &mut String::new()).is_some() {
                    flat += 1;
                }
                lines += 1;
                let split = by_split(&wanted, &line);
                assert_eq!(split, by(&wanted, &line, true), "{line}");
                // Against the whole value: the same values, or both
                // refused (serde's one pass names a column one byte
                // apart at times, and only checks the syntax of a value
                // it skips, so a number out of f64's range there is
                // read).
                let whole = by_value(&wanted, &line);
                match (&split, &whole) {
                    (_, Err(ParseError::Line(m))) if m.contains("number out of range") => {}
                    (Ok(a), Ok(b)) => assert_eq!(a, b, "{line}"),
                    (a, b) => assert_eq!(a.is_err(), b.is_err(), "{line}: {a:?} {b:?}"),
                }
            }
        }
        assert!(flat > lines / 8, "only {flat} of {lines} lines read flat");
        assert!(flat < lines * 4 / 5, "{flat} of {lines} lines read flat");
    }

    #[test]
    fn one_pass_reads_every_line_as_the_whole_value_does() {
        let wanted = ["time", "ip", "req.path", "a.b.c", "n"];
        let lines = [
            r#"{"time":"2024-01-01T00:00:00Z","ip":"10.0.0.1","x":[1,{"y":2}]}"#,
            r#"{"time":1700000000123,"ip":null,"req":{"path":"/a","q":1}}"#,
            r#"{"req.path":"exact","req":{"path":"nested"}}"#,
            r#"{"req":{"path":null},"req.path":"late exact"}"#,
            r#"{"ip":"first","ip":"second","time":-5,"n":1.5e300}"#,
            r#"{"n":18446744073709551616,"time":0.1,"ip":true}"#,
            r#"{"st\u0061rt":1,"time":"t\"q\\u","ip":"caf\u00e9"}"#,
            r#"{"a":{"b":{"c":[1,2]}}}"#,
            r#"{"a":{"b":{"c":"deep"}},"a":{"b":5}}"#,
            r#"{"ip":{"v":1}}"#,
            r#"{"ip":[]}"#,
            r#"{"ip":[1],"ip":"fine after all"}"#,
            r#"{"req":5,"req.path":null}"#,
            r#"  {"time" : 1 , "ip" : "x" }  "#,
            r#"[1,2,{"ip":"x"}]"#,
            r#""just a string""#,
            "null",
            "42",
            r#"{"ip":"x"} trailing"#,
            r#"{"ip":"x",}"#,
            r#"{"ip":"\x"}"#,
            r#"{"ip":"x""#,
            r#"{"ip":01}"#,
            "",
            r#"{}"#,
            r#"{"n":-0,"time":1e2,"ip":"1.2.3.4:80"}"#,
            r#"{"req":"text","a":{"b":"x"}}"#,
            r#"{"req":{"path":"/p"},"req":"text after"}"#,
        ];
        // A name wanted as is and as the first of a dotted one, too.
        let both = ["req", "req.path", "ip", "a.b"];
        for line in lines {
            assert_eq!(by_split(&wanted, line), by_value(&wanted, line), "{line}");
            assert_eq!(by_split(&both, line), by_value(&both, line), "{line}");
        }
    }
}
