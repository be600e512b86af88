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
//!
//! A reader that hands out key ids ([`TraceReader::intern_keys`](super::TraceReader::intern_keys))
//! and whose events come in line order (no reorder window, no late line
//! skipped) has them interned here too, in line order, so in the order a
//! reader of the events would intern them: an event then carries its id,
//! and a block the names of the keys it saw first.

use super::format::MAX_LINE;
use super::intern::KeyInterner;
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
const BLOCK: usize = if cfg!(test) { 1 << 12 } else { 1 << 19 };

/// Blocks parsed ahead of the reader by the parsing thread: about two of
/// the decision lab's batches (65,536 requests), so that parsing goes on
/// while the replay decides a batch (8 left it idle half the time; a
/// parsed block is its events, some 100 KB).
const AHEAD: usize = 64;

/// Where an event's key is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum KeyRec {
    /// A key the filter does not want.
    Elsewhere,
    /// In the block's key buffer ([`Blocks::key`]).
    At(u32, u32),
    /// Interned: its id.
    Id(u32),
}

/// One line's event: its line (counted from its block's first), time,
/// weight and key.
#[derive(Debug, Clone, Copy)]
struct Rec {
    line: u32,
    t: Nanos,
    w: u64,
    key: KeyRec,
}

/// A block's events, its keys back to back, the keys interned first in it
/// (id and place in `keys`), how many lines it had (blank and header lines
/// too), and the error that ended it (at a line).
#[derive(Default)]
struct BlockEvents {
    recs: Vec<Rec>,
    keys: String,
    /// (id, start, end, hash) of each key interned first in the block.
    new: Vec<(u32, u32, u32, u64)>,
    /// (record, hash) of each key to intern, in line order.
    hashes: Vec<(u32, u64)>,
    lines: u64,
    err: Option<(u32, String)>,
    held: String,
}

/// An event as the reader takes it: (line, time, key, weight).
pub(super) type Event = (u64, Nanos, KeyRec, u64);

/// Most distinct keys interned, and what a key costs (for the message when
/// a key is one too many).
#[derive(Debug, Clone, Copy)]
pub struct KeyCap {
    /// Most distinct keys.
    pub keys: usize,
    /// Bytes of state a key costs its consumer.
    pub bytes_per_key: u64,
}

impl KeyCap {
    /// Why `key` cannot have an id: it is one key more than the cap.
    pub(super) fn refusal(&self, key: &str) -> String {
        format!(
            "key {key:?} is distinct key number {}: the per-key state of more keys would pass the memory cap ({} bytes a key; raise it with --max-memory)",
            self.keys.saturating_add(1),
            self.bytes_per_key
        )
    }
}

/// Keys interned as blocks are parsed.
struct Interning {
    keys: KeyInterner,
    cap: KeyCap,
}

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
    /// Keys interned as blocks are parsed (with the parsing thread once
    /// there is one).
    intern: Option<Interning>,
    feed: Feed,
    /// The block being handed out, and its next event.
    cur: BlockEvents,
    at: usize,
    /// Line number before the current block's first line.
    base: u64,
    /// Keys are interned as blocks are parsed (here or on the parsing
    /// thread, which then holds `intern`).
    interning: bool,
}

impl Blocks {
    /// Block reading; `spec` when the format's lines stand alone (they
    /// may be parsed ahead, by a parser of their own).
    pub(super) fn new(spec: Option<&LogSpec>) -> Self {
        Blocks {
            spec: spec.cloned(),
            filter: None,
            intern: None,
            feed: Feed::Idle,
            cur: BlockEvents::default(),
            at: 0,
            base: 0,
            interning: false,
        }
    }

    pub(super) fn set_filter(&mut self, f: KeyFilter, keep_others: bool) {
        self.filter = Some((f, keep_others));
    }

    /// Interns every key handed out as blocks are parsed (in line order:
    /// the reader's events must come in line order); each block's first
    /// keys go to the reader's `names` as it takes the block.
    pub(super) fn set_intern(&mut self, cap: KeyCap) {
        self.intern = Some(Interning {
            keys: KeyInterner::with_cap(cap.keys),
            cap,
        });
        self.interning = true;
    }

    /// Whether every event comes with its key's id ([`set_intern`](Self::set_intern)).
    pub(super) fn interns(&self) -> bool {
        self.interning
    }

    /// The key of the event handed out last (by [`next`](Self::next)).
    pub(super) fn key(&self, r: (u32, u32)) -> &str {
        self.cur
            .keys
            .get(r.0 as usize..r.1 as usize)
            .unwrap_or_default()
    }

    /// The next event; None at the end. `input` is taken by the parsing
    /// thread when there is one; the keys interned first in a block are
    /// added to `names` (in id order) as it is taken.
    #[inline]
    pub(super) fn next(
        &mut self,
        input: &mut Box<dyn BufRead + Send>,
        path: &Path,
        mut own: Option<&mut LogParser>,
        names: &mut KeyInterner,
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
                            let intern = self.intern.as_mut();
                            parse_block(b, parser, self.filter.as_ref(), intern, &mut p);
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
                Some(Msg::Block(p)) => {
                    for &(id, a, b, _) in &p.new {
                        // New keys, told apart while parsing: only their
                        // names are kept (`push_name`).
                        let name = p.keys.get(a as usize..b as usize).unwrap_or_default();
                        if names.push_name(name) != Some(id) {
                            self.feed = Feed::Done;
                            return Some(Err(Stop::Io(Error::internal(format!(
                                "key {name:?} interned as {id} while reading, not in order"
                            )))));
                        }
                    }
                    self.cur = p;
                }
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
        let mut intern = self.intern.take();
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
                            parse_block(b, &mut parser, filter.as_ref(), intern.as_mut(), &mut p);
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
        if self.used == 0
            && let Some(e) = self.failed.take()
        {
            return Err(e);
        }
        let used = std::mem::take(&mut self.used);
        Ok(&self.buf[..used])
    }
}

/// Parses the lines of `text` into `c` (stopping at the first error),
/// interning their keys with `intern`.
fn parse_block(
    text: &[u8],
    p: &mut LogParser,
    filter: Option<&(KeyFilter, bool)>,
    intern: Option<&mut Interning>,
    c: &mut BlockEvents,
) {
    c.recs.clear();
    c.keys.clear();
    c.new.clear();
    c.hashes.clear();
    c.err = None;
    let keep = filter.is_some_and(|f| f.1);
    // A carriage return is a line's end only before its newline: one
    // inside a line (a file with carriage returns alone for line ends)
    // is refused, not read as part of one long line. Looked for line by
    // line only in a block that has one.
    let cr = p.lone_cr_refused() && memchr::memchr(b'\r', text).is_some();
    let mut from = 0;
    let mut n: u32 = 0;
    while from < text.len() {
        // The line's end, and whether it is ASCII (found together: only a
        // line that is not is checked for UTF-8, which a pass over the
        // whole block cost a tenth of a long-lined log's read).
        let (mut to, newline, ascii) = match super::log::bytes::line_end(text, from) {
            (Some(i), ascii) => (i, 1, ascii),
            (None, ascii) => (text.len(), 0, ascii),
        };
        let start = from;
        from = to + newline;
        n += 1;
        if to - start + newline > MAX_LINE {
            c.err = Some((n, format!("longer than {MAX_LINE} bytes")));
            break;
        }
        while to > start && text[to - 1] == b'\r' {
            to -= 1;
        }
        if cr && let Some(at) = memchr::memchr(b'\r', &text[start..to]) {
            c.err = Some((
                n,
                format!(
                    "a carriage return inside the line at byte {} (a file whose lines end in carriage returns alone? convert them: tr '\\r' '\\n')",
                    at + 1
                ),
            ));
            break;
        }
        let line = &text[start..to];
        // SAFETY: `ascii` says the bytes from `from` to the newline are
        // ASCII, and `line` is some of them.
        let s = match unsafe { ascii_text(line, ascii) }.map_or_else(|| utf8(line), Ok) {
            Ok(s) => s,
            Err(at) => {
                c.err = Some((n, format!("not valid UTF-8 (byte {at})")));
                break;
            }
        };
        // A byte order mark where a concatenated file starts (the first
        // file's is gone already: `input::open`).
        let s = s.strip_prefix('\u{feff}').unwrap_or(s);
        // A blank line (only its first byte looked at when that is not
        // white space: `trim` on every line was a percent of a log's read).
        let first = s.as_bytes().first().copied().unwrap_or(b' ');
        if (first.is_ascii_whitespace() || !first.is_ascii()) && s.trim().is_empty() {
            continue;
        }
        let parsed = match filter {
            Some((f, _)) => p.parse_owned(s, &mut c.held, f.as_ref()),
            None => p.parse(s, &mut c.held),
        };
        let (t, key, w) = match parsed {
            Ok(Parsed::Header) => continue,
            Ok(Parsed::Elsewhere(t, _, w)) if !keep => (t, KeyRec::Elsewhere, w),
            Ok(Parsed::Event(t, r, w) | Parsed::Elsewhere(t, r, w)) => {
                let k = match r {
                    Some(r) => s.get(r).unwrap_or_default(),
                    None => c.held.as_str(),
                };
                let start = c.keys.len() as u32;
                c.keys.push_str(k);
                if intern.is_some() {
                    // Interned once the block is parsed (`intern_block`).
                    c.hashes.push((c.recs.len() as u32, KeyInterner::hash(k)));
                }
                (t, KeyRec::At(start, c.keys.len() as u32), w)
            }
            Err(m) => {
                c.err = Some((n, m.to_string()));
                break;
            }
        };
        c.recs.push(Rec { line: n, t, w, key });
    }
    c.lines = u64::from(n);
    if let Some(i) = intern {
        intern_block(i, c);
    }
}

/// Keys asked for ahead of the one interned: enough to overlap a table's
/// cache misses (with a million keys, a miss a key) with each other.
const PREFETCH: usize = 16;

/// Interns the keys of a parsed block in line order (the ids a line-by-line
/// reader gives), each table slot prefetched [`PREFETCH`] keys ahead; a key
/// past the cap ends the block at its line, as a refused line does.
fn intern_block(i: &mut Interning, c: &mut BlockEvents) {
    for &(_, h) in c.hashes.iter().take(PREFETCH) {
        i.keys.prefetch(h);
    }
    for (j, &(r, h)) in c.hashes.iter().enumerate() {
        if let Some(&(_, ahead)) = c.hashes.get(j + PREFETCH) {
            i.keys.prefetch(ahead);
        }
        let rec = &mut c.recs[r as usize];
        let KeyRec::At(a, b) = rec.key else {
            continue;
        };
        let k = c.keys.get(a as usize..b as usize).unwrap_or_default();
        let known = i.keys.len();
        let Some(id) = i.keys.intern_hashed(k, h) else {
            c.err = Some((rec.line, i.cap.refusal(k)));
            c.lines = u64::from(rec.line);
            c.recs.truncate(r as usize);
            return;
        };
        if i.keys.len() > known {
            c.new.push((id, a, b, h));
        }
        rec.key = KeyRec::Id(id);
    }
}

/// `line` as text when `ascii` says its bytes are all ASCII (None: not
/// known to be), without looking at them again.
///
/// # Safety
///
/// `ascii` is true only when every byte of `line` is ASCII.
#[inline]
unsafe fn ascii_text(line: &[u8], ascii: bool) -> Option<&str> {
    debug_assert!(!ascii || line.is_ascii());
    // SAFETY: the caller says the bytes are ASCII, and ASCII is UTF-8.
    ascii.then(|| unsafe { std::str::from_utf8_unchecked(line) })
}

/// A line as text, or the 1-based byte where it stops being UTF-8.
fn utf8(line: &[u8]) -> Result<&str, usize> {
    std::str::from_utf8(line).map_err(|e| e.valid_up_to() + 1)
}
