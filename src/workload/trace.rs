//! Traces from users' logs: streaming import and export of timed events.
//!
//! Formats (chosen by file extension, or explicitly):
//! * CSV with a header row: a time column, `key`, and optionally `weight`
//!   (events the line stands for, default 1). The time column is `t_ns`,
//!   `t_ms` or `t_s` (the unit is in the name), or `time`/`timestamp`, whose
//!   unit is given by [`TimeUnit`] (`rfc3339` for timestamps such as
//!   `2026-11-29T18:51:38.123Z`).
//! * JSON Lines: one object per line with the same field names.
//!
//! Reading is streaming: memory does not grow with the file (one line at a
//! time, plus at most the reorder window when sorting is enabled). Bad lines
//! are errors naming the file, the line number and the value. Times are
//! integer nanoseconds since the Unix epoch, parsed exactly (`1.5` seconds is
//! 1,500,000,000 ns, never a float rounding); a time that does not fit in a
//! u64 of nanoseconds (after year 2554) is an error, never a silent wrap.

use crate::clock::Nanos;
use crate::error::{Error, Result};
use std::collections::BinaryHeap;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};

/// One event of a trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceEvent {
    /// Nanoseconds since the Unix epoch.
    pub t_ns: Nanos,
    /// The key (e.g. a client id or an API key).
    pub key: String,
    /// How many events this line stands for (>= 1).
    pub weight: u64,
}

/// Unit of a `time`/`timestamp` column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TimeUnit {
    /// Integer nanoseconds.
    #[default]
    Ns,
    /// Milliseconds (decimals allowed).
    Ms,
    /// Seconds (decimals allowed).
    S,
    /// RFC 3339 date-time strings.
    Rfc3339,
}

impl std::str::FromStr for TimeUnit {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "ns" => Ok(Self::Ns),
            "ms" => Ok(Self::Ms),
            "s" => Ok(Self::S),
            "rfc3339" => Ok(Self::Rfc3339),
            other => Err(format!(
                "unknown time unit {other:?}: expected ns, ms, s or rfc3339"
            )),
        }
    }
}

/// File format of a trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraceFormat {
    /// CSV with a header.
    Csv,
    /// JSON Lines.
    JsonLines,
}

impl TraceFormat {
    /// `.jsonl`/`.ndjson` are JSON Lines; everything else is CSV.
    pub fn from_path(path: &Path) -> Self {
        match path.extension().and_then(|e| e.to_str()) {
            Some("jsonl") | Some("ndjson") => Self::JsonLines,
            _ => Self::Csv,
        }
    }
}

/// What to do with a time earlier than the one before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Disorder {
    /// An error naming the line (default).
    #[default]
    Reject,
    /// Sort events within a window of this many nanoseconds; an event older
    /// than what was already emitted is still an error.
    SortWithin(Nanos),
}

/// Options of a trace reader.
#[derive(Debug, Clone, Copy, Default)]
pub struct TraceOptions {
    /// Unit of a `time`/`timestamp` column.
    pub unit: TimeUnit,
    /// Out-of-order handling.
    pub disorder: Disorder,
    /// Most events held for sorting (bounds memory; default 1,000,000).
    pub max_buffered: Option<usize>,
}

/// Longest line accepted (a guard against a binary file read as a trace).
pub const MAX_LINE: usize = 1 << 20;

/// Parses a non-negative decimal number of `unit`s into nanoseconds exactly.
pub fn parse_decimal_ns(text: &str, scale_ns: u64) -> std::result::Result<u64, String> {
    let t = text.trim();
    let (int, frac) = match t.split_once('.') {
        Some((i, f)) => (i, f),
        None => (t, ""),
    };
    let digits_only = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if int.is_empty() && frac.is_empty() || !digits_only(int) || !digits_only(frac) {
        return Err(format!("{t:?} is not a non-negative decimal number"));
    }
    let whole: u64 = if int.is_empty() {
        0
    } else {
        int.parse().map_err(|_| format!("{t:?} is too large"))?
    };
    let mut ns = whole
        .checked_mul(scale_ns)
        .ok_or_else(|| format!("{t:?} overflows u64 nanoseconds"))?;
    // fractional part: digits beyond the scale's precision must be zero
    let mut unit = scale_ns;
    for (i, b) in frac.bytes().enumerate() {
        let d = u64::from(b - b'0');
        if unit % 10 != 0 {
            if d != 0 {
                return Err(format!(
                    "{t:?} has more precision than a nanosecond (digit {})",
                    i + 1
                ));
            }
            continue;
        }
        unit /= 10;
        ns = ns
            .checked_add(d * unit)
            .ok_or_else(|| format!("{t:?} overflows u64 nanoseconds"))?;
    }
    Ok(ns)
}

fn parse_time(value: &str, unit: TimeUnit) -> std::result::Result<u64, String> {
    match unit {
        TimeUnit::Ns => parse_decimal_ns(value, 1),
        TimeUnit::Ms => parse_decimal_ns(value, 1_000_000),
        TimeUnit::S => parse_decimal_ns(value, 1_000_000_000),
        TimeUnit::Rfc3339 => {
            let dt = chrono::DateTime::parse_from_rfc3339(value.trim())
                .map_err(|e| format!("{value:?} is not an RFC 3339 date-time ({e})"))?;
            let ns = dt
                .timestamp_nanos_opt()
                .ok_or_else(|| format!("{value:?} is out of range"))?;
            u64::try_from(ns).map_err(|_| format!("{value:?} is before 1970-01-01"))
        }
    }
}

/// Column roles found in a header.
#[derive(Debug, Clone, Copy)]
struct Columns {
    time: usize,
    unit: TimeUnit,
    key: usize,
    weight: Option<usize>,
}

fn time_column(name: &str, default: TimeUnit) -> Option<TimeUnit> {
    match name {
        "t_ns" => Some(TimeUnit::Ns),
        "t_ms" => Some(TimeUnit::Ms),
        "t_s" => Some(TimeUnit::S),
        "time" | "timestamp" | "t" => Some(default),
        _ => None,
    }
}

/// A streaming trace reader: an iterator of events in non-decreasing time.
pub struct TraceReader {
    path: PathBuf,
    format: TraceFormat,
    lines: Box<dyn BufRead + Send>,
    line_no: u64,
    columns: Option<Columns>,
    opts: TraceOptions,
    last_emitted: Option<Nanos>,
    newest_seen: Nanos,
    buffer: BinaryHeap<std::cmp::Reverse<(Nanos, u64, String, u64)>>,
    seq: u64,
    done: bool,
    buf: Vec<u8>,
}

impl TraceReader {
    /// Opens a trace file; the format follows the extension.
    pub fn open(path: &Path, opts: TraceOptions) -> Result<Self> {
        let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
        Ok(Self::new(
            path,
            TraceFormat::from_path(path),
            Box::new(BufReader::with_capacity(1 << 16, file)),
            opts,
        ))
    }

    /// A reader over any byte stream (`path` is used in messages).
    pub fn new(
        path: &Path,
        format: TraceFormat,
        input: Box<dyn BufRead + Send>,
        opts: TraceOptions,
    ) -> Self {
        Self {
            path: path.to_path_buf(),
            format,
            lines: input,
            line_no: 0,
            columns: None,
            opts,
            last_emitted: None,
            newest_seen: 0,
            buffer: BinaryHeap::new(),
            seq: 0,
            done: false,
            buf: Vec::new(),
        }
    }

    /// An input error at the line read last (for checks made by callers).
    pub fn line_error(&self, msg: impl std::fmt::Display) -> Error {
        self.err(msg)
    }

    fn err(&self, msg: impl std::fmt::Display) -> Error {
        Error::input_at(&self.path, format!("line {}", self.line_no), msg)
    }

    /// Reads the next raw line (without the line ending); None at EOF.
    fn read_line(&mut self) -> Result<Option<String>> {
        self.buf.clear();
        let n = (&mut self.lines)
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut self.buf)
            .map_err(|e| Error::io(&self.path, e))?;
        if n == 0 {
            return Ok(None);
        }
        self.line_no += 1;
        if self.buf.len() > MAX_LINE {
            return Err(self.err(format!("longer than {MAX_LINE} bytes")));
        }
        while matches!(self.buf.last(), Some(b'\n' | b'\r')) {
            self.buf.pop();
        }
        match std::str::from_utf8(&self.buf) {
            Ok(s) => Ok(Some(s.to_string())),
            Err(e) => Err(self.err(format!("not valid UTF-8 (byte {})", e.valid_up_to() + 1))),
        }
    }

    fn parse_header(&mut self, line: &str) -> Result<Columns> {
        let names: Vec<&str> = line.split(',').map(str::trim).collect();
        let mut time = None;
        let mut key = None;
        let mut weight = None;
        for (i, n) in names.iter().enumerate() {
            if let Some(unit) = time_column(n, self.opts.unit) {
                time = Some((i, unit));
            } else if *n == "key" {
                key = Some(i);
            } else if *n == "weight" || *n == "n" {
                weight = Some(i);
            }
        }
        match (time, key) {
            (Some((time, unit)), Some(key)) => Ok(Columns { time, unit, key, weight }),
            _ => Err(self.err(format!(
                "header {line:?}: expected a time column (t_ns, t_ms, t_s, time or timestamp) and a key column, optionally weight"
            ))),
        }
    }

    fn parse_csv(&self, line: &str, c: Columns) -> Result<(Nanos, String, u64)> {
        // A line without quotes or carriage returns is its fields split on
        // commas, exactly as the csv parser reads it (the equivalence is a
        // property test below). Building a csv parser per line costs ~20 µs
        // (it compiles a DFA), which made trace replay 17x slower than the
        // limiters themselves, so only quoted lines pay for it.
        if line.bytes().any(|b| b == b'"' || b == b'\r') {
            self.parse_csv_quoted(line, c)
        } else {
            self.parse_csv_plain(line, c)
        }
    }

    fn parse_csv_plain(&self, line: &str, c: Columns) -> Result<(Nanos, String, u64)> {
        let (mut time, mut key, mut weight) = (None, None, None);
        let mut count = 0usize;
        for (i, f) in line.split(',').enumerate() {
            count = i + 1;
            if i == c.time {
                time = Some(f);
            }
            if i == c.key {
                key = Some(f);
            }
            if Some(i) == c.weight {
                weight = Some(f);
            }
        }
        self.event_of(c, time, key, weight, count)
    }

    fn parse_csv_quoted(&self, line: &str, c: Columns) -> Result<(Nanos, String, u64)> {
        let mut reader = csv::ReaderBuilder::new()
            .has_headers(false)
            .from_reader(line.as_bytes());
        let record = match reader.records().next() {
            Some(Ok(r)) => r,
            Some(Err(e)) => return Err(self.err(e)),
            None => return Err(self.err("empty line")),
        };
        self.event_of(
            c,
            record.get(c.time),
            record.get(c.key),
            c.weight.and_then(|i| record.get(i)),
            record.len(),
        )
    }

    /// The event of a CSV line's time, key and weight fields (`fields` is how
    /// many the line had, for the message when one is missing).
    fn event_of(
        &self,
        c: Columns,
        time: Option<&str>,
        key: Option<&str>,
        weight: Option<&str>,
        fields: usize,
    ) -> Result<(Nanos, String, u64)> {
        let missing = |name: &str| self.err(format!("missing {name} field (only {fields} fields)"));
        let t = parse_time(time.ok_or_else(|| missing("time"))?, c.unit)
            .map_err(|m| self.err(format!("time {m}")))?;
        let key = key.ok_or_else(|| missing("key"))?.to_string();
        let weight = match c.weight {
            Some(_) => {
                parse_weight(weight.ok_or_else(|| missing("weight"))?).map_err(|m| self.err(m))?
            }
            None => 1,
        };
        Ok((t, key, weight))
    }

    fn parse_json(&self, line: &str) -> Result<(Nanos, String, u64)> {
        let v: serde_json::Value = serde_json::from_str(line)
            .map_err(|e| self.err(format!("malformed JSON at column {}: {e}", e.column())))?;
        let obj = v
            .as_object()
            .ok_or_else(|| self.err("expected a JSON object"))?;
        let mut time = None;
        for (name, value) in obj {
            if let Some(unit) = time_column(name, self.opts.unit) {
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
        let key = match obj.get("key") {
            Some(serde_json::Value::String(s)) => s.clone(),
            Some(serde_json::Value::Number(n)) => n.to_string(),
            Some(other) => {
                return Err(self.err(format!("key {other}: expected a string or a number")))
            }
            None => return Err(self.err("no key field")),
        };
        let weight = match obj.get("weight").or_else(|| obj.get("n")) {
            None => 1,
            Some(serde_json::Value::Number(n)) => {
                parse_weight(&n.to_string()).map_err(|m| self.err(m))?
            }
            Some(other) => {
                return Err(self.err(format!("weight {other}: expected a whole number >= 1")))
            }
        };
        Ok((t, key, weight))
    }

    /// Parses the next data line into an event (unordered); None at EOF.
    fn next_raw(&mut self) -> Result<Option<(Nanos, String, u64)>> {
        loop {
            let Some(line) = self.read_line()? else {
                return Ok(None);
            };
            if line.trim().is_empty() {
                continue;
            }
            match self.format {
                TraceFormat::Csv => match self.columns {
                    None => {
                        let c = self.parse_header(&line)?;
                        self.columns = Some(c);
                    }
                    Some(c) => return self.parse_csv(&line, c).map(Some),
                },
                TraceFormat::JsonLines => return self.parse_json(&line).map(Some),
            }
        }
    }

    fn emit(&mut self, t: Nanos, key: String, weight: u64) -> Result<TraceEvent> {
        if let Some(last) = self.last_emitted {
            if t < last {
                return Err(self.err(match self.opts.disorder {
                    Disorder::Reject => format!("time {t} ns is earlier than the previous line's {last} ns: traces must be sorted by time (or allow reordering within a window)"),
                    Disorder::SortWithin(w) => format!("time {t} ns is more than the reorder window ({w} ns) behind events already replayed ({last} ns)"),
                }));
            }
        }
        self.last_emitted = Some(t);
        Ok(TraceEvent {
            t_ns: t,
            key,
            weight,
        })
    }
}

fn parse_weight(text: &str) -> std::result::Result<u64, String> {
    match text.trim().parse::<u64>() {
        Ok(w) if w >= 1 => Ok(w),
        _ => Err(format!(
            "weight {:?}: expected a whole number >= 1",
            text.trim()
        )),
    }
}

impl Iterator for TraceReader {
    type Item = Result<TraceEvent>;

    fn next(&mut self) -> Option<Self::Item> {
        match self.opts.disorder {
            Disorder::Reject => {
                if self.done {
                    return None;
                }
                match self.next_raw() {
                    Ok(Some((t, k, w))) => {
                        let r = self.emit(t, k, w);
                        self.done = r.is_err();
                        Some(r)
                    }
                    Ok(None) => None,
                    Err(e) => {
                        self.done = true;
                        Some(Err(e))
                    }
                }
            }
            Disorder::SortWithin(window) => {
                let cap = self.opts.max_buffered.unwrap_or(1_000_000);
                while !self.done {
                    // Emit the oldest once nothing within the window can precede it.
                    if let Some(std::cmp::Reverse((t, _, _, _))) = self.buffer.peek() {
                        if self.newest_seen.saturating_sub(*t) > window || self.buffer.len() >= cap
                        {
                            break;
                        }
                    }
                    match self.next_raw() {
                        Ok(Some((t, k, w))) => {
                            self.newest_seen = self.newest_seen.max(t);
                            self.seq += 1;
                            self.buffer.push(std::cmp::Reverse((t, self.seq, k, w)));
                        }
                        Ok(None) => self.done = true,
                        Err(e) => {
                            self.done = true;
                            self.buffer.clear();
                            return Some(Err(e));
                        }
                    }
                }
                let std::cmp::Reverse((t, _, k, w)) = self.buffer.pop()?;
                let r = self.emit(t, k, w);
                if r.is_err() {
                    self.done = true;
                    self.buffer.clear();
                }
                Some(r)
            }
        }
    }
}

/// Writes events as a trace (CSV `t_ns,key,weight` or JSON Lines).
pub struct TraceWriter<W: Write> {
    out: W,
    format: TraceFormat,
    wrote_header: bool,
}

impl<W: Write> TraceWriter<W> {
    /// A writer of `format` into `out`.
    pub fn new(out: W, format: TraceFormat) -> Self {
        Self {
            out,
            format,
            wrote_header: false,
        }
    }

    /// Writes one event.
    pub fn write(&mut self, e: &TraceEvent) -> std::io::Result<()> {
        match self.format {
            TraceFormat::Csv => {
                if !self.wrote_header {
                    self.out.write_all(b"t_ns,key,weight\n")?;
                    self.wrote_header = true;
                }
                let key = if e.key.contains([',', '"', '\n', '\r']) {
                    format!("\"{}\"", e.key.replace('"', "\"\""))
                } else {
                    e.key.clone()
                };
                writeln!(self.out, "{},{},{}", e.t_ns, key, e.weight)
            }
            TraceFormat::JsonLines => {
                let line = serde_json::json!({"t_ns": e.t_ns, "key": e.key, "weight": e.weight});
                writeln!(self.out, "{line}")
            }
        }
    }

    /// Flushes and returns the inner writer.
    pub fn finish(mut self) -> std::io::Result<W> {
        if !self.wrote_header && self.format == TraceFormat::Csv {
            self.out.write_all(b"t_ns,key,weight\n")?;
        }
        self.out.flush()?;
        Ok(self.out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The split fast path reads every quote-free line exactly as the
        /// csv parser does: same event, or the same error message.
        #[test]
        fn plain_csv_lines_parse_like_the_csv_crate(
            fields in proptest::collection::vec("[0-9a-z .,:\\-]{0,6}", 0..5),
            time in 0usize..4,
            key in 0usize..4,
            weight in proptest::option::of(0usize..4),
            unit in prop_oneof![Just(TimeUnit::Ns), Just(TimeUnit::Ms), Just(TimeUnit::S)],
        ) {
            let line = fields.join(",");
            let r = TraceReader::new(
                Path::new("t.csv"),
                TraceFormat::Csv,
                Box::new(std::io::Cursor::new(Vec::new())),
                TraceOptions::default(),
            );
            let c = Columns { time, unit, key, weight };
            let fast = r.parse_csv_plain(&line, c).map_err(|e| e.to_string());
            let slow = r.parse_csv_quoted(&line, c).map_err(|e| e.to_string());
            // The csv crate reads an empty line as no record at all.
            if !line.is_empty() {
                prop_assert_eq!(fast, slow);
            }
        }
    }

    fn read(text: &str, format: TraceFormat, opts: TraceOptions) -> Vec<Result<TraceEvent>> {
        TraceReader::new(
            Path::new("t.csv"),
            format,
            Box::new(std::io::Cursor::new(text.as_bytes().to_vec())),
            opts,
        )
        .collect()
    }

    fn ok(text: &str, format: TraceFormat, opts: TraceOptions) -> Vec<(u64, String, u64)> {
        read(text, format, opts)
            .into_iter()
            .map(|r| r.map(|e| (e.t_ns, e.key, e.weight)).unwrap())
            .collect()
    }

    #[test]
    fn decimal_times_are_exact() {
        assert_eq!(parse_decimal_ns("1.5", 1_000_000_000), Ok(1_500_000_000));
        assert_eq!(parse_decimal_ns("0.000000001", 1_000_000_000), Ok(1));
        assert_eq!(parse_decimal_ns("12.250", 1_000_000), Ok(12_250_000));
        assert!(parse_decimal_ns("1.0000000001", 1_000_000_000).is_err());
        assert!(parse_decimal_ns("-1", 1).is_err());
        assert!(parse_decimal_ns("1e3", 1).is_err());
        assert!(parse_decimal_ns("18446744073709551616", 1).is_err());
        assert!(parse_decimal_ns("18446744074", 1_000_000_000).is_err());
    }

    #[test]
    fn csv_units_weights_and_rfc3339() {
        let csv = "t_ms,key,weight\n1.5,a,2\n3,\"b,c\",1\n";
        assert_eq!(
            ok(csv, TraceFormat::Csv, TraceOptions::default()),
            vec![(1_500_000, "a".into(), 2), (3_000_000, "b,c".into(), 1)]
        );
        let opts = TraceOptions {
            unit: TimeUnit::Rfc3339,
            ..Default::default()
        };
        let csv = "timestamp,key\n2026-11-29T18:51:38.5Z,k\n";
        assert_eq!(
            ok(csv, TraceFormat::Csv, opts)[0].0,
            1_795_978_298_500_000_000
        );
    }

    #[test]
    fn json_lines() {
        let j = "{\"t_s\": 1.25, \"key\": \"x\"}\n\n{\"t_s\": \"2\", \"key\": 7, \"weight\": 3}\n";
        assert_eq!(
            ok(j, TraceFormat::JsonLines, TraceOptions::default()),
            vec![
                (1_250_000_000, "x".into(), 1),
                (2_000_000_000, "7".into(), 3)
            ]
        );
    }

    #[test]
    fn errors_name_the_line_and_value() {
        let e = read(
            "t_ns,key\n5,a\n4,b\n",
            TraceFormat::Csv,
            TraceOptions::default(),
        );
        let msg = e[1].as_ref().unwrap_err().to_string();
        assert!(
            msg.starts_with("t.csv: line 3: time 4 ns is earlier than the previous line's 5 ns"),
            "{msg}"
        );
        assert_eq!(e.len(), 2, "reading stops at the first error");
        let e = read(
            "t_ns,key\nabc,a\n",
            TraceFormat::Csv,
            TraceOptions::default(),
        );
        assert!(e[0]
            .as_ref()
            .unwrap_err()
            .to_string()
            .contains("line 2: time \"abc\" is not a non-negative decimal number"));
        let e = read("when,who\n", TraceFormat::Csv, TraceOptions::default());
        assert!(e[0]
            .as_ref()
            .unwrap_err()
            .to_string()
            .contains("line 1: header \"when,who\""));
        let e = read(
            "t_ns,key,weight\n1,a,0\n",
            TraceFormat::Csv,
            TraceOptions::default(),
        );
        assert!(e[0]
            .as_ref()
            .unwrap_err()
            .to_string()
            .contains("weight \"0\": expected a whole number >= 1"));
        let e = read(
            "{\"t_ns\": 1}\n",
            TraceFormat::JsonLines,
            TraceOptions::default(),
        );
        assert!(e[0]
            .as_ref()
            .unwrap_err()
            .to_string()
            .contains("line 1: no key field"));
    }

    #[test]
    fn sorting_within_a_window() {
        let opts = TraceOptions {
            disorder: Disorder::SortWithin(10),
            ..Default::default()
        };
        let got = ok(
            "t_ns,key\n5,a\n3,b\n12,c\n9,d\n30,e\n",
            TraceFormat::Csv,
            opts,
        );
        assert_eq!(
            got.iter().map(|e| e.0).collect::<Vec<_>>(),
            vec![3, 5, 9, 12, 30]
        );
        let e = read("t_ns,key\n5,a\n30,b\n2,c\n", TraceFormat::Csv, opts);
        assert!(e.iter().any(|r| r
            .as_ref()
            .is_err_and(|e| e.to_string().contains("more than the reorder window"))));
    }

    #[test]
    fn export_then_import_round_trips() {
        let events = vec![
            TraceEvent {
                t_ns: 1,
                key: "a,\"b\"".into(),
                weight: 2,
            },
            TraceEvent {
                t_ns: 7,
                key: "c".into(),
                weight: 1,
            },
        ];
        for format in [TraceFormat::Csv, TraceFormat::JsonLines] {
            let mut w = TraceWriter::new(Vec::new(), format);
            for e in &events {
                w.write(e).unwrap();
            }
            let bytes = w.finish().unwrap();
            let back: Vec<TraceEvent> = TraceReader::new(
                Path::new("x"),
                format,
                Box::new(std::io::Cursor::new(bytes)),
                TraceOptions::default(),
            )
            .map(|r| r.unwrap())
            .collect();
            assert_eq!(back, events);
        }
    }
}
