//! What `size --trace FILE` reads: a time-stamped access log in any format
//! the decision lab reads (through [`TraceReader`], so the same time units,
//! weights, sort window and errors), or a `key,count` table with any column
//! names and order (`--columns key=ip,count=hits`), repeated keys summed.
//!
//! Column renaming is applied to the CSV header line only, before the trace
//! reader sees it, so data lines keep their numbers in error messages.

use crate::clock::Nanos;
use crate::error::{Error, Result};
use crate::workload::counts::{MAX_EVENTS, MAX_KEYS};
use crate::workload::trace::{InputOptions, TraceFormat, TraceReader};

/// Most requests a time-stamped trace may hold in memory (16 bytes each).
pub const MAX_REQUESTS: u64 = 400_000_000;
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Cursor, Read};
use std::path::Path;

/// A time-stamped trace in memory: requests in time order, times relative
/// to the first request, keys as dense ids in order of first appearance
/// (the decision lab's numbering, so sketch cells are the same).
#[derive(Debug, Clone, Default)]
pub struct TimedTrace {
    /// Time of each request since the first, ns.
    pub t: Vec<Nanos>,
    /// Key id of each request.
    pub key: Vec<u32>,
    /// Weight of each request (empty when every weight is 1).
    pub weight: Vec<u64>,
    /// Key names by id.
    pub names: Vec<String>,
    /// Time of the first request (ns since the epoch).
    pub t0: Nanos,
    /// How the trace was read when it was more than a plain CSV (format,
    /// key, spread, late lines skipped), for the report; empty otherwise.
    pub note: String,
}

impl TimedTrace {
    /// Requests (lines).
    pub fn len(&self) -> usize {
        self.t.len()
    }

    /// No requests.
    pub fn is_empty(&self) -> bool {
        self.t.is_empty()
    }

    /// Weight of request `i`.
    #[inline]
    pub fn w(&self, i: usize) -> u64 {
        if self.weight.is_empty() {
            1
        } else {
            self.weight[i]
        }
    }

    /// Sum of all weights.
    pub fn total_weight(&self) -> u64 {
        if self.weight.is_empty() {
            self.t.len() as u64
        } else {
            self.weight.iter().fold(0u64, |a, &w| a.saturating_add(w))
        }
    }

    /// From (time, key, weight) triples in time order (tests, examples).
    pub fn from_events<S: AsRef<str>>(events: &[(Nanos, S, u64)]) -> TimedTrace {
        let mut b = Builder::default();
        for (t, k, w) in events {
            b.push(*t, k.as_ref(), *w);
        }
        b.trace
    }
}

/// Builds a [`TimedTrace`] one event at a time.
#[derive(Default)]
struct Builder {
    trace: TimedTrace,
    ids: HashMap<String, u32, ahash::RandomState>,
}

impl Builder {
    fn push(&mut self, t: Nanos, key: &str, w: u64) {
        let tr = &mut self.trace;
        if tr.t.is_empty() {
            tr.t0 = t;
        }
        let id = match self.ids.get(key) {
            Some(&id) => id,
            None => {
                let id = tr.names.len() as u32;
                tr.names.push(key.to_string());
                self.ids.insert(key.to_string(), id);
                id
            }
        };
        // Weights are kept from the first request that is not 1 on (the
        // ones before it were 1); that request's own weight too, also when
        // it is the very first.
        if w != 1 && tr.weight.is_empty() {
            tr.weight = vec![1; tr.t.len()];
            tr.weight.push(w);
        } else if !tr.weight.is_empty() {
            tr.weight.push(w);
        }
        tr.t.push(t - tr.t0);
        tr.key.push(id);
    }
}

/// What a `--trace` file held.
#[derive(Debug, Clone)]
pub enum TraceInput {
    /// A time-stamped trace.
    Timed(TimedTrace),
    /// `key,count` rows (repeated keys summed), in order of first appearance.
    Counts {
        /// Key names.
        names: Vec<String>,
        /// Their counts.
        counts: Vec<u64>,
    },
}

/// A `--trace` file opened: a time-stamped trace's reader, or a
/// `key,count` table's lines after its header.
pub enum Opened {
    /// A time-stamped trace.
    Timed(Box<TraceReader>),
    /// A `key,count` table: its input after the header, the header's
    /// column names (renamed) and its line.
    Counts(Box<dyn BufRead + Send>, Vec<String>, usize),
}

/// Reads a `--trace` file: time-stamped (a time column, or an access-log
/// format) or `key,count`. Options that the file's kind would ignore are
/// refused, whatever the combination.
pub fn read_trace_input(path: &Path, opts: &InputOptions) -> Result<TraceInput> {
    match open_trace_input(path, opts)? {
        Opened::Timed(r) => read_timed(path, *r),
        Opened::Counts(input, header, line) => read_counts(path, input, &header, line),
    }
}

/// A time-stamped `--trace` as a streaming reader, as `size` reads it (a
/// `key,count` table is an error): for commands that replay it in turn.
pub fn open_timed(path: &Path, opts: &InputOptions) -> Result<TraceReader> {
    match open_trace_input(path, opts)? {
        Opened::Timed(r) => Ok(*r),
        Opened::Counts(_, header, line) => Err(Error::input_at(
            path,
            format!("line {line}"),
            format!(
                "header {:?}: a key,count table without times; expected a time column and key (or --format)",
                header.join(",")
            ),
        )),
    }
}

/// Opens a `--trace` file (read once, from its first byte: a pipe or
/// standard input works as a file does).
pub fn open_trace_input(path: &Path, opts: &InputOptions) -> Result<Opened> {
    let trace_opts = opts.trace_options();
    if let Some(plan) = crate::workload::trace::parts::PartPlan::of(path)? {
        // A directory: every file, read as one trace in time order (the
        // files' extension says their format).
        let spec = opts.log_spec(&plan.files[0])?;
        if spec.is_none() && opts.columns.is_some() {
            return Err(Error::input(format!(
                "--columns: {} is a directory of CSV files, each read by its own header (a time column t_ns, t_ms, t_s, time or timestamp, and key); name the columns so when writing the files",
                path.display()
            )));
        }
        if spec.is_none() && opts.spread.is_some() {
            return Err(Error::input(format!(
                "--spread: applies to access logs with whole-second times (--format {})",
                crate::workload::trace::log::whole_second_formats()
            )));
        }
        let all: Vec<usize> = (0..plan.files.len()).collect();
        let reader = TraceReader::open_parts(&plan, &all, trace_opts, spec.as_ref())?;
        return Ok(Opened::Timed(Box::new(reader)));
    }
    if let Some(spec) = opts.log_spec(path)? {
        if opts.unit.is_some() && !crate::workload::trace::log::takes_unit(&spec.format) {
            return Err(Error::input(format!(
                "--time-unit: the {} format's times carry their own unit (it applies to CSV time/timestamp columns and JSON numbers)",
                spec.format
            )));
        }
        let reader = TraceReader::open_with(path, trace_opts, Some(&spec))?;
        return Ok(Opened::Timed(Box::new(reader)));
    }
    if opts.spread.is_some() {
        return Err(Error::input(format!(
            "--spread: applies to access logs with whole-second times (--format {})",
            crate::workload::trace::log::whole_second_formats()
        )));
    }
    // Opened once: standard input, a pipe or process substitution reads as
    // a file does (the kind is told from the bytes read, never by opening
    // it again).
    let opened = crate::workload::trace::input::open_input(path)?;
    let reader = TraceReader::from_input(path, opened, trace_opts);
    if !reader.has_header() {
        return Ok(Opened::Timed(Box::new(reader)));
    }
    let mut input = reader.into_input();
    // The header: the first non-blank line.
    let mut blanks = 0usize;
    let mut header = String::new();
    loop {
        header.clear();
        let n = (&mut input)
            .take(crate::workload::trace::MAX_LINE as u64)
            .read_line(&mut header)
            .map_err(|e| Error::io(path, e))?;
        if n == 0 {
            return Err(Error::input_at(
                path,
                "file",
                "empty: expected a header line (a time column and key, or key and count) and data lines",
            ));
        }
        if header.trim().is_empty() {
            blanks += 1;
            continue;
        }
        break;
    }
    let line_no = blanks + 1;
    let raw: Vec<&str> = header.trim_end_matches(['\n', '\r']).split(',').collect();
    if let Some(cols) = &opts.columns {
        for (role, name) in cols.pairs() {
            if !raw.iter().any(|h| h.trim() == name) {
                return Err(Error::input_at(
                    path,
                    format!("line {line_no}"),
                    format!(
                        "--columns {role}={name}: no column {name:?} in the header {:?}",
                        raw.join(",")
                    ),
                ));
            }
        }
    }
    let renamed: Vec<String> = raw
        .iter()
        .map(|h| match &opts.columns {
            Some(c) => c.rename(h.trim()).to_string(),
            None => h.trim().to_string(),
        })
        .collect();
    let is_time = |n: &str| matches!(n, "t_ns" | "t_ms" | "t_s" | "time" | "timestamp" | "t");
    let at_header = |m: String| Error::input_at(path, format!("line {line_no}"), m);
    if renamed.iter().any(|n| n == "count") && !renamed.iter().any(|n| is_time(n)) {
        // A key,count table: the options of time-stamped traces do not apply.
        for (given, flag) in [
            (opts.unit.is_some(), "--time-unit"),
            (opts.sort_window_ms.is_some(), "--sort-window-ms"),
            (opts.skip_late, "--skip-late"),
        ] {
            if given {
                return Err(at_header(format!(
                    "{flag}: the header {:?} is a key,count table without times",
                    raw.join(",")
                )));
            }
        }
        if let Some(n) = opts.columns.as_ref().and_then(|c| c.get("weight")) {
            return Err(at_header(format!(
                "--columns weight={n}: a key,count table has counts, not weights"
            )));
        }
        return Ok(Opened::Counts(input, renamed, line_no));
    }
    if renamed.iter().any(|n| n == "count") {
        return Err(at_header(format!(
            "header {:?}: a count column beside a time column (a trace has one line a request, optionally a weight column)",
            renamed.join(",")
        )));
    }
    if opts.unit.is_some()
        && !renamed
            .iter()
            .any(|n| matches!(n.as_str(), "time" | "timestamp" | "t"))
    {
        return Err(at_header(format!(
            "--time-unit: the header {:?} names its time unit (t_ns, t_ms or t_s); --time-unit is for a time or timestamp column",
            renamed.join(",")
        )));
    }
    let prefix = format!("{}{}\n", "\n".repeat(blanks), renamed.join(","));
    let stream = Cursor::new(prefix.into_bytes()).chain(input);
    let reader = TraceReader::new(
        path,
        TraceFormat::Csv,
        Box::new(BufReader::new(stream)),
        trace_opts,
    );
    Ok(Opened::Timed(Box::new(reader)))
}

/// Every event of a trace reader into memory.
fn read_timed(path: &Path, reader: TraceReader) -> Result<TraceInput> {
    let mut b = Builder::default();
    let mut reader = reader;
    for e in &mut reader {
        let e = e?;
        if b.trace.t.len() as u64 >= MAX_REQUESTS {
            return Err(reader.line_error(format!(
                "more than {MAX_REQUESTS} requests: `size` holds the trace in memory (16 bytes a request); cut the trace"
            )));
        }
        if b.trace.names.len() as u64 >= u64::from(u32::MAX) {
            return Err(reader.line_error("more than 2^32 - 1 distinct keys"));
        }
        b.push(e.t_ns, &e.key, e.weight);
    }
    if b.trace.is_empty() {
        return Err(Error::input_at(
            path,
            "file",
            if reader.has_header() {
                "no requests: expected a header and at least one data line"
            } else {
                "no requests: expected at least one data line (the file is empty, or has only comment lines)"
            },
        ));
    }
    let note = reader.describe();
    if note != "csv" && note != "jsonl" {
        b.trace.note = note;
    }
    Ok(TraceInput::Timed(b.trace))
}

/// A `key,count` table (columns already renamed), repeated keys summed.
fn read_counts(
    path: &Path,
    input: Box<dyn BufRead + Send>,
    header: &[String],
    header_line: usize,
) -> Result<TraceInput> {
    let at = |line: usize, msg: String| Error::input_at(path, format!("line {line}"), msg);
    for role in ["key", "count"] {
        if header.iter().filter(|h| *h == role).count() > 1 {
            return Err(at(
                header_line,
                format!(
                    "header {:?}: two {role} columns: expected one (drop or rename the other with --columns)",
                    header.join(",")
                ),
            ));
        }
    }
    let (Some(ki), Some(ci)) = (
        header.iter().position(|h| h == "key"),
        header.iter().position(|h| h == "count"),
    ) else {
        return Err(at(
            header_line,
            format!(
                "header {:?}: expected a key and a count column (rename others with --columns key=NAME,count=NAME)",
                header.join(",")
            ),
        ));
    };
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(input);
    let mut index: HashMap<String, usize, ahash::RandomState> = HashMap::default();
    let (mut names, mut counts) = (Vec::new(), Vec::<u64>::new());
    let mut total = 0u64;
    let mut record = csv::StringRecord::new();
    loop {
        let more = reader.read_record(&mut record).map_err(|e| {
            let line = e.position().map_or(0, |p| p.line() as usize) + header_line;
            at(line, format!("{e}"))
        })?;
        if !more {
            break;
        }
        let line = record.position().map_or(0, |p| p.line() as usize) + header_line;
        if record.len() == 1 && record[0].trim().is_empty() {
            continue;
        }
        if record.len() != header.len() {
            return Err(at(
                line,
                format!(
                    "{} fields: expected {} ({})",
                    record.len(),
                    header.len(),
                    header.join(",")
                ),
            ));
        }
        let key = &record[ki];
        let count: u64 = record[ci].trim().parse().map_err(|_| {
            at(
                line,
                format!("count {:?}: expected a whole number >= 0", &record[ci]),
            )
        })?;
        total = total.saturating_add(count);
        let i = match index.get(key) {
            Some(&i) => i,
            None => {
                if names.len() as u64 >= MAX_KEYS {
                    return Err(at(line, format!("more than {MAX_KEYS} keys")));
                }
                index.insert(key.to_string(), names.len());
                names.push(key.to_string());
                counts.push(0);
                names.len() - 1
            }
        };
        counts[i] = counts[i].saturating_add(count);
        if total > MAX_EVENTS {
            return Err(at(line, format!("more than {MAX_EVENTS} events in all")));
        }
    }
    if total == 0 {
        return Err(Error::input_at(
            path,
            "file",
            "no events: expected at least one key with count > 0",
        ));
    }
    Ok(TraceInput::Counts { names, counts })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::trace::{Columns, LogSpec};
    use std::io::Write;

    fn file(text: &str, ext: &str) -> tempfile::NamedTempFile {
        let mut f = tempfile::Builder::new().suffix(ext).tempfile().unwrap();
        f.write_all(text.as_bytes()).unwrap();
        f
    }

    fn read(text: &str, columns: Option<&str>) -> Result<TraceInput> {
        let f = file(text, ".csv");
        let opts = InputOptions {
            columns: columns.map(|c| Columns::parse(c).unwrap()),
            ..InputOptions::default()
        };
        read_trace_input(f.path(), &opts)
    }

    #[test]
    fn counts_in_any_order_and_names_are_summed() {
        let Ok(TraceInput::Counts { names, counts }) =
            read("hits,ip\n3,a\n4,b\n5,a\n", Some("key=ip,count=hits"))
        else {
            panic!("not counts");
        };
        assert_eq!(names, ["a", "b"]);
        assert_eq!(counts, [8, 4]);
    }

    #[test]
    fn timed_trace_with_renamed_columns_keeps_line_numbers() {
        let Ok(TraceInput::Timed(t)) =
            read("ts,ip\n1000,x\n2000,y\n2500,x\n", Some("time=ts,key=ip"))
        else {
            panic!("not timed");
        };
        assert_eq!(t.t, [0, 1000, 1500]);
        assert_eq!(t.key, [0, 1, 0]);
        assert!(t.weight.is_empty());
        let e = read("ts,ip\n1000,x\n900,y\n", Some("time=ts,key=ip"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 3") && e.contains("900"), "{e}");
    }

    #[test]
    fn bad_inputs_name_the_line_and_value() {
        for (text, cols, want) in [
            ("key,count\na,3\nb,x\n", None, "line 3"),
            ("key,count\na,3\nb,x\n", None, "\"x\""),
            ("ip,hits\na,3\n", None, "header"),
            ("ip,hits\na,3\n", Some("key=addr"), "\"addr\""),
            ("", None, "empty"),
            ("t_ms,key\n", None, "no requests"),
            ("t_ms,key\n1,a\nsoon,b\n", None, "line 3"),
        ] {
            let e = read(text, cols).unwrap_err();
            assert_eq!(e.exit_code(), 2);
            assert!(e.to_string().contains(want), "{text:?}: {e}");
        }
    }

    #[test]
    fn an_empty_log_asks_for_no_header() {
        for format in ["combined", "alb", "cloudfront", "envoy"] {
            let f = file("", ".log");
            let opts = InputOptions {
                log: Some(LogSpec {
                    format: format.into(),
                    ..LogSpec::default()
                }),
                ..InputOptions::default()
            };
            let e = read_trace_input(f.path(), &opts).unwrap_err().to_string();
            assert!(
                e.contains("no requests") && !e.contains("header and"),
                "{format}: {e}"
            );
        }
        let e = read("t_ms,key\n", None).unwrap_err().to_string();
        assert!(
            e.contains("expected a header and at least one data line"),
            "{e}"
        );
    }

    #[test]
    fn weights_are_kept_only_when_some_differ_from_one() {
        let Ok(TraceInput::Timed(t)) = read("t_ms,key,weight\n1,a,1\n2,b,3\n", None) else {
            panic!("not timed");
        };
        assert_eq!(t.weight, [1, 3]);
        assert_eq!(t.total_weight(), 4);
    }
}
