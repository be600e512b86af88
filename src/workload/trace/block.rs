//! Reading an access log a block at a time: a few MiB of input cut at a
//! line end, its lines parsed into events (time, key, weight) that the
//! reader then hands out in line order.
//!
//! With more than one thread in the pool and a format whose lines stand
//! alone (every one but W3C, whose header lines change how the next ones
//! read), a thread of its own reads and parses the blocks ahead of the
//! reader (at most [`AHEAD`] blocks ahead): parsing, most of a shard's
//! work, then overlaps everything done with the events. Every line is
//! parsed by the same code and gets the same event or error as line by
//! line, in the same order, so the events and the first error (at its
//! line) do not depend on the thread count. A line's key is copied into
//! its block's key buffer (a line's own bytes are gone once its block is
//! parsed); a line whose key the reader's filter does not want keeps no
//! key ([`Parsed::Elsewhere`]) unless the reader keeps such keys.

use super::format::MAX_LINE;
use super::log::{LogParser, LogSpec, Parsed};
use crate::clock::Nanos;
use crate::error::Error;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Arc;

/// Which keys a reader hands out; the others come out without their key
/// (and their lines are parsed only as far as time, key and weight).
pub type KeyFilter = Arc<dyn Fn(&str) -> bool + Send + Sync>;

/// Bytes read at once (a block is made longer for a line that does not
/// fit, up to [`MAX_LINE`]; small in tests, so that lines and errors fall
/// across many blocks).
const BLOCK: usize = if cfg!(test) { 1 << 12 } else { 4 << 20 };

/// Blocks parsed ahead of the reader by the parsing thread.
const AHEAD: usize = 2;

/// One line's event: its line (counted from its block's first), time,
/// weight, and where its key is in the block's key buffer (None: a key the
/// filter does not want).
#[derive(Debug, Clone, Copy)]
struct Rec {
    line: u32,
    t: Nanos,
    w: u64,
    key: Option<(u32, u32)>,
}

/// A block's events, its keys back to back, how many lines it had (blank
/// and header lines too), and the error that ended it (at a line).
#[derive(Default)]
struct BlockEvents {
    recs: Vec<Rec>,
    keys: String,
    lines: u64,
    err: Option<(u32, String)>,
    held: String,
}

/// An event as the reader takes it: (line, time, key in [`Blocks::key`],
/// weight).
pub(super) type Event = (u64, Nanos, Option<(u32, u32)>, u64);

/// Why reading stopped: at a line, or the input itself failed.
pub(super) enum Stop {
    Line(u64, String),
    Io(Error),
}

/// What the parsing thread sends: a parsed block, or the input's failure
/// (after the blocks before it).
enum Msg {
    Block(BlockEvents),
    Failed(Error),
}

/// Where parsed blocks come from.
enum Feed {
    /// Nothing read yet.
    Idle,
    /// Read and parsed when the reader needs the next block, with the
    /// reader's own parser.
    Inline(Reading),
    /// From the parsing thread; spent blocks go back for their buffers.
    Thread {
        rx: Receiver<Msg>,
        spent: SyncSender<BlockEvents>,
    },
    /// The end (or an error) was handed out.
    Done,
}

/// The block reader's state.
pub(super) struct Blocks {
    /// The format, for the parsing thread's own parser (None: the lines
    /// do not stand alone; the reader's parser reads them in turn).
    spec: Option<LogSpec>,
    /// The filter, and whether the keys it does not want are kept.
    filter: Option<(KeyFilter, bool)>,
    feed: Feed,
    /// The block being handed out, and its next event.
    cur: BlockEvents,
    at: usize,
    /// Line number before the current block's first line.
    base: u64,
}

impl Blocks {
    /// Block reading; `spec` when the format's lines stand alone (they
    /// may be parsed ahead, by a parser of their own).
    pub(super) fn new(spec: Option<&LogSpec>) -> Self {
        Blocks {
            spec: spec.cloned(),
            filter: None,
            feed: Feed::Idle,
            cur: BlockEvents::default(),
            at: 0,
            base: 0,
        }
    }

    pub(super) fn set_filter(&mut self, f: KeyFilter, keep_others: bool) {
        self.filter = Some((f, keep_others));
    }

    /// The key of the event handed out last (by [`next`](Self::next)).
    pub(super) fn key(&self, r: (u32, u32)) -> &str {
        self.cur
            .keys
            .get(r.0 as usize..r.1 as usize)
            .unwrap_or_default()
    }

    /// The next event: (line, time, key in [`key`](Self::key), weight);
    /// None at the end. `input` is taken by the parsing thread when there
    /// is one.
    pub(super) fn next(
        &mut self,
        input: &mut Box<dyn BufRead + Send>,
        path: &Path,
        mut own: Option<&mut LogParser>,
    ) -> Option<Result<Event, Stop>> {
        loop {
            if let Some(r) = self.cur.recs.get(self.at) {
                self.at += 1;
                return Some(Ok((self.base + u64::from(r.line), r.t, r.key, r.w)));
            }
            if let Some((line, msg)) = self.cur.err.take() {
                self.feed = Feed::Done;
                return Some(Err(Stop::Line(self.base + u64::from(line), msg)));
            }
            self.base += self.cur.lines;
            self.at = 0;
            if matches!(self.feed, Feed::Idle) {
                self.start(input, path);
            }
            let spent = std::mem::take(&mut self.cur);
            let msg = match &mut self.feed {
                Feed::Idle | Feed::Done => None,
                Feed::Inline(r) => {
                    let mut p = spent;
                    let block = r.read_block(input);
                    match (block, own.as_deref_mut()) {
                        (Ok(b), Some(parser)) if !b.is_empty() => {
                            parse_block(b, parser, self.filter.as_ref(), &mut p);
                            Some(Msg::Block(p))
                        }
                        (Err(e), _) => Some(Msg::Failed(e)),
                        _ => None,
                    }
                }
                Feed::Thread { rx, spent: back } => {
                    let _ = back.try_send(spent);
                    rx.recv().ok()
                }
            };
            match msg {
                Some(Msg::Block(p)) => self.cur = p,
                Some(Msg::Failed(e)) => {
                    self.feed = Feed::Done;
                    return Some(Err(Stop::Io(e)));
                }
                None => {
                    self.feed = Feed::Done;
                    return None;
                }
            }
        }
    }

    /// Starts reading: a parsing thread when the lines stand alone and
    /// the pool has more than one thread, else in turn.
    fn start(&mut self, input: &mut Box<dyn BufRead + Send>, path: &Path) {
        let reading = Reading::new(path);
        let parser = match &self.spec {
            Some(s) if rayon::current_num_threads() > 1 => LogParser::new(s).ok(),
            _ => None,
        };
        let Some(mut parser) = parser else {
            self.feed = Feed::Inline(reading);
            return;
        };
        let mut input = std::mem::replace(input, Box::new(std::io::empty()));
        let filter = self.filter.clone();
        let (tx, rx) = sync_channel::<Msg>(AHEAD);
        let (back, spent) = sync_channel::<BlockEvents>(AHEAD + 2);
        let mut reading = reading;
        let spawned = std::thread::Builder::new()
            .name("ratelab-parse".into())
            .spawn(move || {
                loop {
                    let msg = match reading.read_block(&mut input) {
                        Ok([]) => break,
                        Ok(b) => {
                            let mut p = spent.try_recv().unwrap_or_default();
                            parse_block(b, &mut parser, filter.as_ref(), &mut p);
                            let stop = p.err.is_some();
                            if tx.send(Msg::Block(p)).is_err() || stop {
                                break;
                            }
                            continue;
                        }
                        Err(e) => Msg::Failed(e),
                    };
                    let _ = tx.send(msg);
                    break;
                }
                // The reader is gone or the input ended: the thread ends
                // (dropping `tx` ends the reader's blocks).
            });
        match spawned {
            Ok(_) => self.feed = Feed::Thread { rx, spent: back },
            Err(e) => {
                // No thread: nothing read yet, say why at the first block.
                self.feed = Feed::Inline(Reading {
                    failed: Some(Error::io(path, e)),
                    ..Reading::new(path)
                });
            }
        }
    }
}

/// Reading whole lines a block at a time.
struct Reading {
    path: PathBuf,
    /// The start of a line cut by the block's end.
    carry: Vec<u8>,
    eof: bool,
    /// The read that failed (reported after the lines before it).
    failed: Option<Error>,
    /// The block buffer: its length is kept (zeroed once), `used` holds
    /// input.
    buf: Vec<u8>,
    used: usize,
}

impl Reading {
    fn new(path: &Path) -> Self {
        Reading {
            path: path.to_path_buf(),
            carry: Vec::new(),
            eof: false,
            failed: None,
            buf: Vec::new(),
            used: 0,
        }
    }

    /// The next block of whole lines (empty at the end); a failed read
    /// after the lines before it.
    fn read_block(&mut self, input: &mut Box<dyn BufRead + Send>) -> Result<&[u8], Error> {
        let mut want = BLOCK.max(self.carry.len() + 1);
        self.buf.resize(self.buf.len().max(want), 0);
        self.buf[..self.carry.len()].copy_from_slice(&self.carry);
        self.used = self.carry.len();
        self.carry.clear();
        loop {
            while !self.eof && self.failed.is_none() && self.used < want {
                match input.read(&mut self.buf[self.used..want]) {
                    Ok(0) => self.eof = true,
                    Ok(n) => self.used += n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => self.failed = Some(Error::io(&self.path, e)),
                }
            }
            if self.eof {
                break;
            }
            // The last line's start waits for the next block.
            if let Some(i) = memchr::memrchr(b'\n', &self.buf[..self.used]) {
                self.carry.extend_from_slice(&self.buf[i + 1..self.used]);
                self.used = i + 1;
                break;
            }
            if self.failed.is_some() {
                // The line cut short by the failure is dropped, as a line
                // reader drops it; the failure comes next.
                self.used = 0;
                break;
            }
            if self.used > MAX_LINE {
                // One line too long: parsing says so.
                break;
            }
            // A line longer than the block: read on.
            want = (want + BLOCK).min(MAX_LINE + 2);
            self.buf.resize(self.buf.len().max(want), 0);
        }
        if self.used == 0 {
            if let Some(e) = self.failed.take() {
                return Err(e);
            }
        }
        let used = std::mem::take(&mut self.used);
        Ok(&self.buf[..used])
    }
}

/// Parses the lines of `text` into `c` (stopping at the first error).
fn parse_block(
    text: &[u8],
    p: &mut LogParser,
    filter: Option<&(KeyFilter, bool)>,
    c: &mut BlockEvents,
) {
    c.recs.clear();
    c.keys.clear();
    c.err = None;
    let keep = filter.is_some_and(|f| f.1);
    let mut rest = text;
    let mut n: u32 = 0;
    while !rest.is_empty() {
        let (mut line, newline) = match memchr::memchr(b'\n', rest) {
            Some(i) => {
                let l = &rest[..i];
                rest = &rest[i + 1..];
                (l, 1)
            }
            None => (std::mem::take(&mut rest), 0),
        };
        n += 1;
        if line.len() + newline > MAX_LINE {
            c.err = Some((n, format!("longer than {MAX_LINE} bytes")));
            break;
        }
        while let [head @ .., b'\r'] = line {
            line = head;
        }
        let s = match utf8(line) {
            Ok(s) => s,
            Err(at) => {
                c.err = Some((n, format!("not valid UTF-8 (byte {at})")));
                break;
            }
        };
        if s.trim().is_empty() {
            continue;
        }
        let parsed = match filter {
            Some((f, _)) => p.parse_owned(s, &mut c.held, f.as_ref()),
            None => p.parse(s, &mut c.held),
        };
        let (t, key, w) = match parsed {
            Ok(Parsed::Header) => continue,
            Ok(Parsed::Elsewhere(t, _, w)) if !keep => (t, None, w),
            Ok(Parsed::Event(t, r, w) | Parsed::Elsewhere(t, r, w)) => {
                let k = match r {
                    Some(r) => s.get(r).unwrap_or_default(),
                    None => c.held.as_str(),
                };
                let start = c.keys.len() as u32;
                c.keys.push_str(k);
                (t, Some((start, c.keys.len() as u32)), w)
            }
            Err(m) => {
                c.err = Some((n, m));
                break;
            }
        };
        c.recs.push(Rec { line: n, t, w, key });
    }
    c.lines = u64::from(n);
}

/// A line as text, or the 1-based byte where it stops being UTF-8.
fn utf8(line: &[u8]) -> Result<&str, usize> {
    std::str::from_utf8(line).map_err(|e| e.valid_up_to() + 1)
}
