//! What `size --trace FILE` reads: a time-stamped access log in any format
//! the decision lab reads (through [`TraceReader`], so the same time units,
//! weights, sort window and errors), or a `key,count` table with any column
//! names and order (`--columns key=ip,count=hits`), repeated keys summed.
//!
//! Column renaming is applied to the CSV header line only, before the trace
//! reader sees it, so data lines keep their numbers in error messages.

use crate::clock::{Nanos, MILLI};
use crate::error::{Error, Result};
use crate::workload::counts::{MAX_EVENTS, MAX_KEYS};
use crate::workload::trace::{Disorder, TimeUnit, TraceFormat, TraceOptions, TraceReader};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Cursor, Read};
use std::path::Path;

/// The roles a `--columns` entry may rename.
const ROLES: [&str; 4] = ["time", "key", "weight", "count"];

/// Most requests a time-stamped trace may hold in memory (16 bytes each).
pub const MAX_REQUESTS: u64 = 400_000_000;

/// `--columns role=name,...`: which header name plays which role.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Columns(Vec<(String, String)>);

impl Columns {
    /// Parses `key=ip,count=hits` (roles: time, key, weight, count).
    ///
    /// # Examples
    ///
    /// ```
    /// use ratelab::sizing::input::Columns;
    ///
    /// let c = Columns::parse("key=ip, count=hits").unwrap();
    /// assert_eq!(c.rename("hits"), "count");
    /// assert_eq!(c.rename("other"), "other");
    /// assert!(Columns::parse("colour=ip").is_err());
    /// ```
    pub fn parse(s: &str) -> Result<Columns> {
        let mut out: Vec<(String, String)> = Vec::new();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let bad = |m: &str| Error::input(format!("--columns {s:?}: at {part:?}: {m}"));
            let (role, name) = part
                .split_once('=')
                .ok_or_else(|| bad("expected ROLE=NAME, e.g. key=ip"))?;
            let (role, name) = (role.trim(), name.trim());
            if !ROLES.contains(&role) {
                return Err(bad("expected a role: time, key, weight or count"));
            }
            if name.is_empty() {
                return Err(bad("expected a column name after '='"));
            }
            if out.iter().any(|(r, _)| r == role) {
                return Err(bad("this role is given twice"));
            }
            out.push((role.to_string(), name.to_string()));
        }
        if out.is_empty() {
            return Err(Error::input(format!(
                "--columns {s:?}: expected ROLE=NAME pairs, e.g. key=ip,count=hits"
            )));
        }
        Ok(Columns(out))
    }

    /// The role a header name plays (itself when not renamed).
    pub fn rename<'a>(&'a self, name: &'a str) -> &'a str {
        self.0
            .iter()
            .find(|(_, n)| n == name)
            .map_or(name, |(r, _)| r.as_str())
    }
}

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
        if w != 1 && tr.weight.is_empty() {
            tr.weight = vec![1; tr.t.len()];
        }
        if !tr.weight.is_empty() {
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

/// How to read a `--trace` file.
#[derive(Debug, Clone, Default)]
pub struct InputOptions {
    /// Renamed columns.
    pub columns: Option<Columns>,
    /// Unit of a `time`/`timestamp` column.
    pub unit: TimeUnit,
    /// Sort lines out of order by up to this many ms (default: reject).
    pub sort_window_ms: Option<u64>,
}

/// Reads a `--trace` file: time-stamped (a time column) or `key,count`.
pub fn read_trace_input(path: &Path, opts: &InputOptions) -> Result<TraceInput> {
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let mut input = BufReader::with_capacity(1 << 16, file);
    let trace_opts = TraceOptions {
        unit: opts.unit,
        disorder: match opts.sort_window_ms {
            Some(ms) => Disorder::SortWithin(ms.saturating_mul(MILLI)),
            None => Disorder::Reject,
        },
        max_buffered: None,
    };
    if TraceFormat::from_path(path) == TraceFormat::JsonLines {
        if opts.columns.is_some() {
            return Err(Error::input(format!(
                "--columns: applies to CSV files; {} is JSON Lines (name its fields time/t_ns/t_ms/t_s, key, weight)",
                path.display()
            )));
        }
        let reader = TraceReader::new(path, TraceFormat::JsonLines, Box::new(input), trace_opts);
        return read_timed(path, reader);
    }
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
        for (role, name) in &cols.0 {
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
    let is_time = |n: &str| matches!(n, "t_ns" | "t_ms" | "t_s" | "time" | "timestamp");
    if renamed.iter().any(|n| n == "count") && !renamed.iter().any(|n| is_time(n)) {
        return read_counts(path, input, &renamed, line_no);
    }
    let prefix = format!("{}{}\n", "\n".repeat(blanks), renamed.join(","));
    let stream = Cursor::new(prefix.into_bytes()).chain(input);
    let reader = TraceReader::new(
        path,
        TraceFormat::Csv,
        Box::new(BufReader::new(stream)),
        trace_opts,
    );
    read_timed(path, reader)
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
            "no requests: expected a header and at least one data line",
        ));
    }
    Ok(TraceInput::Timed(b.trace))
}

/// A `key,count` table (columns already renamed), repeated keys summed.
fn read_counts(
    path: &Path,
    input: BufReader<std::fs::File>,
    header: &[String],
    header_line: usize,
) -> Result<TraceInput> {
    let at = |line: usize, msg: String| Error::input_at(path, format!("line {line}"), msg);
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
    fn weights_are_kept_only_when_some_differ_from_one() {
        let Ok(TraceInput::Timed(t)) = read("t_ms,key,weight\n1,a,1\n2,b,3\n", None) else {
            panic!("not timed");
        };
        assert_eq!(t.weight, [1, 3]);
        assert_eq!(t.total_weight(), 4);
    }
}
