//! The streaming reader: lines in, events out, with errors that name the
//! file and the line.

use super::format::{Disorder, TraceEvent, TraceFormat, TraceOptions, MAX_LINE};
use super::parse::Columns;
use crate::clock::Nanos;
use crate::error::{Error, Result};
use std::collections::BinaryHeap;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

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
    pub(super) buffer: BinaryHeap<std::cmp::Reverse<(Nanos, u64, String, u64)>>,
    pub(super) seq: u64,
    pub(super) done: bool,
    pub(super) buf: Vec<u8>,
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

    pub(super) fn err(&self, msg: impl std::fmt::Display) -> Error {
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

    /// Parses the next data line into an event (unordered); None at EOF.
    pub(super) fn next_raw(&mut self) -> Result<Option<(Nanos, String, u64)>> {
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

    pub(super) fn emit(&mut self, t: Nanos, key: String, weight: u64) -> Result<TraceEvent> {
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
