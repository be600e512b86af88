//! The streaming reader: lines in, events out, with errors that name the
//! file and the line.

use super::block::{Blocks, KeyCap, KeyFilter, KeyRec, Stop};
use super::format::{Disorder, TraceFormat, TraceOptions, MAX_LINE};
use super::intern::{Ahead, AheadKey, KeyInterner, AHEAD};
use super::log::{LogParser, LogSpec};
use super::parse::Columns;
use super::spread::Spreader;
use crate::clock::Nanos;
use crate::error::{Error, Result};
use std::borrow::Cow;
use std::io::{BufRead, Read};
use std::path::{Path, PathBuf};

/// An event held for sorting: time, arrival, key (None: one the filter
/// does not want), weight.
pub(super) type Buffered = (Nanos, u64, Option<String>, u64);

/// A streaming trace reader: an iterator of events in non-decreasing time.
pub struct TraceReader {
    pub(super) path: PathBuf,
    pub(super) format: TraceFormat,
    pub(super) lines: Box<dyn BufRead + Send>,
    pub(super) line_no: u64,
    pub(super) columns: Option<Columns>,
    pub(super) opts: TraceOptions,
    pub(super) last_emitted: Option<Nanos>,
    pub(super) newest_seen: Nanos,
    pub(super) buffer: super::reorder::Reorder,
    pub(super) seq: u64,
    pub(super) done: bool,
    /// The line read last, without its line ending (validated UTF-8; its
    /// bytes are reused for the next line, so reading allocates nothing).
    pub(super) line: String,
    /// The key of the event handed out last by [`TraceReader::next_ref`]
    /// when it is not a slice of `line` (a quoted CSV field, a JSON string,
    /// a sorted event).
    pub(super) held_key: String,
    /// The access-log format reading each line (None: CSV or JSON Lines
    /// by `format`).
    pub(super) log: Option<Box<LogParser>>,
    /// Late lines skipped.
    pub(super) late: u64,
    /// Spreading whole-second times.
    pub(super) spread: Spreader,
    /// The CSV column or JSON field read as the key (`key`; a fleet's
    /// `from_trace` balancer reads `replica` instead).
    pub(super) key_column: String,
    /// What a record is called in messages: "line", or "row" in Parquet.
    pub(super) record: &'static str,
    /// An access log's lines, read and parsed a block at a time.
    pub(super) blocks: Option<Box<Blocks>>,
    /// The keys whose lines are read whole, and whether the others' keys
    /// are handed out (else [`KeyAt::Elsewhere`]).
    pub(super) filter: Option<(KeyFilter, bool)>,
    /// Keys to ids ([`TraceReader::intern_keys`]): interned here as events
    /// are handed out, or while reading (the names then added as blocks
    /// are taken).
    pub(super) keys: KeyInterner,
    pub(super) key_cap: Option<KeyCap>,
    /// A directory trace's files, read as one ([`super::parts`]).
    pub(super) parts: Option<Box<super::parts::Merge>>,
    /// Events read ahead of [`TraceReader::next_id`]'s.
    pub(super) ahead: Ahead,
}

/// Where a parsed event's key is: a byte range of the current line, or the
/// reader's `held_key`.
#[derive(Debug, Clone)]
pub(super) enum KeyAt {
    Line(std::ops::Range<usize>),
    Held,
    /// In the current block ([`Blocks::key`]).
    Block((u32, u32)),
    /// Interned while reading: its id in `keys`.
    Id(u32),
    /// A key the reader's filter does not want: not kept.
    Elsewhere,
}

impl TraceReader {
    /// Opens a trace file (`-`: standard input; gzip or zstd compressed
    /// input is decompressed, found by its magic bytes); the format follows
    /// the extension (without a `.gz`/`.zst` one).
    /// A directory is read as one trace: its files merged in time order
    /// ([`super::parts`]).
    pub fn open(path: &Path, opts: TraceOptions) -> Result<Self> {
        Self::open_with(path, opts, None)
    }

    /// A reader of an input already opened (`path` names it in messages
    /// and, by its extension, says CSV or JSON Lines): the file is read
    /// once, from its first byte.
    pub fn from_input(path: &Path, input: super::input::Input, opts: TraceOptions) -> Self {
        let format = if input.parquet {
            TraceFormat::JsonLines
        } else {
            match super::input::without_compression(path)
                .extension()
                .and_then(|e| e.to_str())
            {
                Some("jsonl" | "ndjson" | "parquet") => TraceFormat::JsonLines,
                _ => TraceFormat::Csv,
            }
        };
        let mut r = Self::new(path, format, input.reader, opts);
        if input.parquet {
            r.record = "row";
        }
        r
    }

    /// Opens a trace in an access-log format (`spec`), or as [`open`](Self::open)
    /// does when `spec` is None. A bad spec (unknown format, a key naming
    /// no field) is an error naming the file.
    pub fn open_with(path: &Path, opts: TraceOptions, spec: Option<&LogSpec>) -> Result<Self> {
        if let Some(plan) = super::parts::PartPlan::of(path)? {
            let all: Vec<usize> = (0..plan.files.len()).collect();
            return Self::open_parts(&plan, &all, opts, spec);
        }
        Self::from_input_with(path, super::input::open_input(path)?, opts, spec)
    }

    /// [`open_with`](Self::open_with) of an input already opened.
    pub fn from_input_with(
        path: &Path,
        input: super::input::Input,
        opts: TraceOptions,
        spec: Option<&LogSpec>,
    ) -> Result<Self> {
        let mut r = Self::from_input(path, input, opts);
        if let Some(spec) = spec {
            if spec.format == "parquet" && r.record != "row" {
                return Err(Error::input_at(
                    path,
                    "format parquet",
                    "not a Parquet file (it does not start with PAR1)",
                ));
            }
            r.set_log(spec)?;
        }
        Ok(r)
    }

    /// The input, unread (for a caller that reads a CSV header itself).
    pub fn into_input(self) -> Box<dyn BufRead + Send> {
        self.lines
    }

    /// Reads every line with an access-log format.
    pub fn set_log(&mut self, spec: &LogSpec) -> Result<()> {
        let bad = |m| Error::input_at(&self.path, format!("format {}", spec.format), m);
        let p = LogParser::new(spec).map_err(bad)?;
        // Formats whose lines stand alone are parsed by a parser per chunk;
        // the others by this one, in turn.
        let alone = super::log::row(&spec.format).is_ok_and(|r| r.lines_stand_alone);
        let mut blocks = Blocks::new(alone.then_some(spec));
        if let Some((f, keep)) = &self.filter {
            blocks.set_filter(f.clone(), *keep);
        }
        self.log = Some(Box::new(p));
        self.blocks = Some(Box::new(blocks));
        Ok(())
    }

    /// Reads whole only the lines whose key `filter` wants: an access
    /// log's other lines are parsed only as far as their time, key and
    /// weight (a line wrong past them is an error only where its key is
    /// wanted), and their events come out without their key unless
    /// `keep_others`. Set before the first line; [`next_key`](Self::next_key)
    /// reads such a reader.
    pub fn set_key_filter(&mut self, filter: KeyFilter, keep_others: bool) {
        self.part_filter(&filter, keep_others);
        if let Some(b) = self.blocks.as_mut() {
            b.set_filter(filter.clone(), keep_others);
        }
        self.filter = Some((filter, keep_others));
    }

    /// What was read, for a report: the format, key, time field and spread
    /// (after the first event), and late lines skipped.
    pub fn describe(&self) -> String {
        if let Some(first) = self.part_readers().next() {
            // Every file is read alike: the first says how, the late
            // lines are all of them.
            let late: u64 = self.part_readers().map(|r| r.late).sum();
            return first.describe_with(late);
        }
        self.describe_with(self.late)
    }

    /// [`describe`](Self::describe), with `late` late lines skipped.
    fn describe_with(&self, late: u64) -> String {
        let mut s = match &self.log {
            None => match self.format {
                TraceFormat::Csv => "csv".to_string(),
                TraceFormat::JsonLines => "jsonl".to_string(),
            },
            Some(l) => {
                let mut s = format!("{}, key {}", l.format_name(), l.key_text());
                if let Some((t, whole)) = l.time_field() {
                    s.push_str(&format!(", time {t}"));
                    if whole {
                        s.push_str(" (whole seconds)");
                    }
                }
                s
            }
        };
        let whole = self
            .log
            .as_ref()
            .and_then(|l| l.time_field())
            .is_some_and(|(_, whole)| whole);
        match self.spread.rule {
            // Whole seconds replayed as logged: said, since it changes
            // what pacing limiters see.
            Some(super::format::Spread::None) if whole => s.push_str(", spread none"),
            Some(super::format::Spread::None) | None => {}
            Some(rule) => s.push_str(&format!(
                ", spread {} (seed {})",
                rule.name(),
                self.opts.spread_seed
            )),
        }
        if self.opts.skip_late {
            s.push_str(&format!(", {late} late lines skipped"));
        }
        s
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
            buffer: Default::default(),
            seq: 0,
            done: false,
            line: String::new(),
            held_key: String::new(),
            log: None,
            late: 0,
            spread: Spreader::default(),
            key_column: "key".into(),
            record: "line",
            blocks: None,
            filter: None,
            keys: KeyInterner::new(),
            key_cap: None,
            parts: None,
            ahead: Ahead::default(),
        }
    }

    /// Reads the CSV column or JSON field `name` as each event's key
    /// instead of `key` (before the first line; access logs choose their
    /// key with [`LogSpec::key`]).
    pub fn set_key_column(&mut self, name: &str) {
        self.key_column = name.to_string();
    }

    /// An error about the whole file (for checks made by callers).
    pub fn file_error(&self, msg: impl std::fmt::Display) -> Error {
        Error::input_at(&self.path, "file", msg)
    }

    /// An input error at the line read last (for checks made by callers).
    pub fn line_error(&self, msg: impl std::fmt::Display) -> Error {
        self.err(msg)
    }

    pub(super) fn err(&self, msg: impl std::fmt::Display) -> Error {
        if let Some((path, record)) = self.part_at() {
            // A directory trace: the file the event came from.
            return Error::input_at(path, format!("{record} {}", self.line_no), msg);
        }
        Error::input_at(&self.path, format!("{} {}", self.record, self.line_no), msg)
    }

    /// Reads the next raw line into `self.line` (without the line ending);
    /// false at EOF.
    fn read_line(&mut self) -> Result<bool> {
        let mut buf = std::mem::take(&mut self.line).into_bytes();
        buf.clear();
        let n = (&mut self.lines)
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut buf)
            .map_err(|e| Error::io(&self.path, e))?;
        if n == 0 {
            return Ok(false);
        }
        self.line_no += 1;
        if buf.len() > MAX_LINE {
            return Err(self.err(format!("longer than {MAX_LINE} bytes")));
        }
        while matches!(buf.last(), Some(b'\n' | b'\r')) {
            buf.pop();
        }
        match String::from_utf8(buf) {
            Ok(s) => {
                self.line = s;
                Ok(true)
            }
            Err(e) => {
                let at = e.utf8_error().valid_up_to() + 1;
                let mut bytes = e.into_bytes();
                bytes.clear();
                // Nothing in it now: an empty byte vector is valid UTF-8.
                self.line = String::from_utf8(bytes).unwrap_or_default();
                Err(self.err(format!("not valid UTF-8 (byte {at})")))
            }
        }
    }

    /// Parses the next data line into an event (unordered) whose key is
    /// where `KeyAt` says; None at EOF.
    #[inline]
    pub(super) fn next_raw_at(&mut self) -> Result<Option<(Nanos, KeyAt, u64)>> {
        if let Some(b) = self.blocks.as_mut() {
            let own = self.log.as_deref_mut();
            return match b.next(&mut self.lines, &self.path, own, &mut self.keys) {
                None => Ok(None),
                Some(Ok((line, t, key, w))) => {
                    self.line_no = line;
                    let at = match key {
                        KeyRec::Elsewhere => KeyAt::Elsewhere,
                        KeyRec::At(a, b) => KeyAt::Block((a, b)),
                        KeyRec::Id(id) => KeyAt::Id(id),
                    };
                    Ok(Some((t, at, w)))
                }
                Some(Err(Stop::Line(line, m))) => {
                    self.line_no = line;
                    Err(self.err(m))
                }
                Some(Err(Stop::Io(e))) => Err(e),
            };
        }
        if !self.next_data_line()? {
            return Ok(None);
        }
        self.parse_data_line().map(Some)
    }

    /// Reads the next data line into `self.line`, past blank lines and a
    /// CSV header (which it reads); false at EOF.
    fn next_data_line(&mut self) -> Result<bool> {
        loop {
            if !self.read_line()? {
                return Ok(false);
            }
            // A line starting with a printable ASCII byte is not blank
            // (decided without trimming it, as almost every line is).
            let printable = self
                .line
                .as_bytes()
                .first()
                .is_some_and(u8::is_ascii_graphic);
            if !printable && self.line.trim().is_empty() {
                continue;
            }
            if self.format == TraceFormat::Csv && self.columns.is_none() {
                let c = self.parse_header(&self.line)?;
                self.columns = Some(c);
                continue;
            }
            return Ok(true);
        }
    }

    /// The event of the data line in `self.line` (CSV or JSON Lines).
    fn parse_data_line(&mut self) -> Result<(Nanos, KeyAt, u64)> {
        let line = self.line.as_str();
        let (t, key, w) = match (self.format, self.columns) {
            (TraceFormat::Csv, Some(c)) => self.parse_csv(line, c)?,
            _ => self.parse_json(line)?,
        };
        if self
            .filter
            .as_ref()
            .is_some_and(|(f, keep)| !keep && !f(&key))
        {
            return Ok((t, KeyAt::Elsewhere, w));
        }
        let at = match key {
            Cow::Borrowed(k) => {
                // A slice of the line: its offset in it.
                let start = k.as_ptr() as usize - line.as_ptr() as usize;
                KeyAt::Line(start..start + k.len())
            }
            Cow::Owned(k) => {
                self.held_key = k;
                KeyAt::Held
            }
        };
        Ok((t, at, w))
    }

    /// Whether [`Self::next_plain`] may read the next events: a CSV trace
    /// past its header and first event, read line by line in time order
    /// (no reorder window, spreading, filter, access-log format or
    /// directory), with the columns it reads.
    fn plain_csv(&self) -> Option<Columns> {
        let plain = self.format == TraceFormat::Csv
            && self.blocks.is_none()
            && self.log.is_none()
            && self.parts.is_none()
            && self.filter.is_none()
            && self.opts.disorder == Disorder::Reject
            && self.spread.rule == Some(super::format::Spread::None);
        self.columns.filter(|_| plain)
    }

    /// [`Self::next_event`] of a trace that [`Self::plain_csv`] allows: the
    /// same events and errors, read in one function. The layers of the
    /// general path (spreading, ordering, the line's parse), each passing
    /// the event on by value, were a tenth of reading a CSV trace.
    fn next_plain(&mut self, c: Columns) -> Option<Result<(Nanos, KeyAt, u64)>> {
        loop {
            if self.done {
                return None;
            }
            match self.next_data_line() {
                Ok(true) => {}
                Ok(false) => return None,
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
            }
            let line = self.line.as_str();
            let event = match self.parse_csv_plain(line, c) {
                Some(Ok((t, Cow::Borrowed(k), w))) => {
                    let start = k.as_ptr() as usize - line.as_ptr() as usize;
                    (t, KeyAt::Line(start..start + k.len()), w)
                }
                // A quoted line, or a malformed one: the general parse.
                _ => match self.parse_data_line() {
                    Ok(e) => e,
                    Err(e) => {
                        self.done = true;
                        return Some(Err(e));
                    }
                },
            };
            match self.check_order(event.0) {
                Ok(true) => return Some(Ok(event)),
                Ok(false) => {}
                Err(e) => return Some(Err(e)),
            }
        }
    }

    /// Parses the next data line into an event (unordered) with its own
    /// key (None: one the filter does not want); None at EOF.
    pub(super) fn next_raw(&mut self) -> Result<Option<(Nanos, Option<String>, u64)>> {
        Ok(self
            .next_raw_at()?
            .map(|(t, at, w)| (t, self.key_of(&at).map(str::to_string), w)))
    }

    /// The key `at` points to ("" for a key the filter does not want).
    pub(super) fn key_at(&self, at: &KeyAt) -> &str {
        self.key_of(at).unwrap_or_default()
    }

    /// The key `at` points to (None: a key the filter does not want).
    pub(super) fn key_of(&self, at: &KeyAt) -> Option<&str> {
        match at {
            KeyAt::Line(r) => Some(self.line.get(r.clone()).unwrap_or_default()),
            KeyAt::Held => Some(&self.held_key),
            KeyAt::Block(r) => Some(self.blocks.as_ref().map_or("", |b| b.key(*r))),
            KeyAt::Id(id) => Some(self.keys.name(*id).unwrap_or_default()),
            KeyAt::Elsewhere => None,
        }
    }

    /// Hands out keys as dense ids in order of first appearance
    /// ([`next_id`](Self::next_id)), at most `cap.keys` of them (a new key
    /// past them is an error naming its line). Set after the format and
    /// before the first line. When events come in line order (no reorder
    /// window, no late line skipped) an access log's keys are interned as
    /// its blocks are parsed, off the reader's thread.
    pub fn intern_keys(&mut self, cap: KeyCap) {
        self.keys = KeyInterner::with_cap(cap.keys);
        self.key_cap = Some(cap);
        let in_line_order = self.opts.disorder == Disorder::Reject && !self.opts.skip_late;
        if let (Some(b), true) = (self.blocks.as_mut(), in_line_order) {
            b.set_intern(cap);
        }
    }

    /// The next event with its key's id ([`intern_keys`](Self::intern_keys);
    /// None: a key the filter does not want), as [`next_key`](Self::next_key)
    /// hands the event out.
    ///
    /// # Examples
    /// ```
    /// use ratelab::workload::trace::{KeyCap, TraceFormat, TraceOptions, TraceReader};
    /// use std::io::Cursor;
    /// use std::path::Path;
    ///
    /// let input = Box::new(Cursor::new(b"t_ns,key\n5,a\n7,b\n9,a\n11,c\n".to_vec()));
    /// let mut r = TraceReader::new(Path::new("t.csv"), TraceFormat::Csv, input, TraceOptions::default());
    /// r.intern_keys(KeyCap { keys: 2, bytes_per_key: 64 });
    /// assert_eq!(r.next_id().unwrap()?, (5, Some(0), 1));
    /// assert_eq!(r.next_id().unwrap()?, (7, Some(1), 1));
    /// assert_eq!(r.next_id().unwrap()?, (9, Some(0), 1));
    /// assert_eq!(r.key_name(1), Some("b"));
    /// let e = r.next_id().unwrap().unwrap_err().to_string();
    /// assert!(e.contains("line 5") && e.contains("distinct key number 3"), "{e}");
    /// # Ok::<(), ratelab::error::Error>(())
    /// ```
    pub fn next_id(&mut self) -> Option<Result<(Nanos, Option<u32>, u64)>> {
        if self.ahead.events.is_empty()
            && self.parts.is_none()
            && self.blocks.as_ref().is_some_and(|b| b.interns())
        {
            // An access log whose blocks intern their keys as they are
            // parsed: each event comes with its id, in order, its error in
            // its place. The read-ahead queue (there to ask for a CSV key's
            // table slot before it is looked up) would only copy it twice.
            let (t, at, w) = match self.next_event()? {
                Ok(e) => e,
                Err(e) => return Some(Err(e)),
            };
            match at {
                KeyAt::Id(id) => return Some(Ok((t, Some(id), w))),
                KeyAt::Elsewhere => return Some(Ok((t, None, w))),
                // A key as text (none comes so): interned below.
                other => {
                    let key = self.key_at(&other).to_string();
                    self.ahead.push_text(&self.keys, t, &key, w, self.line_no);
                }
            }
        }
        if self.ahead.events.is_empty() {
            if let Some(e) = self.ahead.failure.take() {
                return Some(Err(e));
            }
            if self.ahead.ended {
                return None;
            }
            self.read_ahead();
        }
        let Some((t, key, w, line)) = self.ahead.events.pop_front() else {
            return self.ahead.failure.take().map(Err);
        };
        // Messages name the line of the event handed out.
        self.line_no = line;
        let (start, end, h) = match key {
            AheadKey::Id(id) => return Some(Ok((t, Some(id), w))),
            AheadKey::Elsewhere => return Some(Ok((t, None, w))),
            AheadKey::Text { start, end, hash } => (start, end, hash),
        };
        let key = &self.ahead.text[start..end];
        if let Some(id) = self.keys.intern_hashed(key, h) {
            return Some(Ok((t, Some(id), w)));
        }
        let cap = self.key_cap.unwrap_or(KeyCap {
            keys: self.keys.len(),
            bytes_per_key: 0,
        });
        let msg = cap.refusal(key);
        // Nothing after a refused key is handed out.
        self.ahead.events.clear();
        self.ahead.failure = None;
        self.ahead.ended = true;
        Some(Err(self.err(msg)))
    }

    /// Reads up to [`AHEAD`] events into `ahead` (stopping at the end or a
    /// failure, kept for after them), their keys copied, hashed and their
    /// interner slots prefetched.
    fn read_ahead(&mut self) {
        self.ahead.text.clear();
        // A directory trace says which file and place the event handed out
        // last came from ([`Self::last_part`]): read no further than it.
        let ahead = if self.parts.is_some() { 1 } else { AHEAD };
        let plain = self.plain_csv();
        while self.ahead.events.len() < ahead {
            if let Some(c) = plain {
                // Straight from the input's buffer while its lines allow;
                // a line it leaves is read below.
                self.read_ahead_buffered(c, ahead);
                if self.ahead.events.len() >= ahead {
                    break;
                }
            }
            let next = match plain {
                Some(c) => self.next_plain(c),
                None => self.next_event(),
            };
            let (t, at, w) = match next {
                None => {
                    self.ahead.ended = true;
                    return;
                }
                Some(Err(e)) => {
                    self.ahead.failure = Some(e);
                    return;
                }
                Some(Ok(e)) => e,
            };
            let key: &str = match &at {
                KeyAt::Id(id) => {
                    let e = (t, AheadKey::Id(*id), w, self.line_no);
                    self.ahead.events.push_back(e);
                    continue;
                }
                KeyAt::Elsewhere => {
                    let e = (t, AheadKey::Elsewhere, w, self.line_no);
                    self.ahead.events.push_back(e);
                    continue;
                }
                KeyAt::Line(r) => self.line.get(r.clone()).unwrap_or_default(),
                KeyAt::Held => &self.held_key,
                KeyAt::Block(r) => self.blocks.as_ref().map_or("", |b| b.key(*r)),
            };
            self.ahead.push_text(&self.keys, t, key, w, self.line_no);
        }
    }

    /// Whether the input starts with a header line (a CSV trace's; access
    /// logs and JSON Lines have none), for messages about an empty file.
    pub fn has_header(&self) -> bool {
        self.log.is_none() && self.format == TraceFormat::Csv
    }

    /// The key of id `id` ([`next_id`](Self::next_id)).
    pub fn key_name(&self, id: u32) -> Option<&str> {
        self.keys.name(id)
    }

    /// The id of `key`, once it was handed out ([`next_id`](Self::next_id)).
    pub fn key_id(&self, key: &str) -> Option<u32> {
        self.keys.get(key)
    }

    /// The error for a line at `t` older than what was already handed out.
    pub(super) fn late_error(&self, t: Nanos, last: Nanos) -> Error {
        self.err(match self.opts.disorder {
            Disorder::Reject => format!("time {t} ns is earlier than the previous line's {last} ns: traces must be sorted by time (or allow reordering within a window: --sort-window-ms, or skip such lines: --skip-late)"),
            Disorder::SortWithin(w) => format!("time {t} ns is more than the reorder window ({w} ns) behind a line before it ({last} ns) (widen the window, or skip such lines: --skip-late)"),
        })
    }
}
