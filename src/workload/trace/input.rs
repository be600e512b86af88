//! Opening a trace's bytes: a file or standard input (`-`), decompressed
//! when it starts with gzip's (`1f 8b`) or zstd's (`28 b5 2f fd`) magic
//! bytes, whatever its name; a Parquet file (`PAR1`) is read row by row as
//! JSON Lines ([`parquet`](super::parquet)).

use crate::error::{Error, Result};
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

const GZIP: &[u8] = &[0x1f, 0x8b];
const ZSTD: &[u8] = &[0x28, 0xb5, 0x2f, 0xfd];

/// Whether a file starting with `head` is read as the text it holds: not
/// gzip, zstd or Parquet (the magic numbers [`open_input`] goes by).
///
/// # Examples
///
/// ```
/// use ratelab::workload::trace::input::is_plain_text;
/// assert!(is_plain_text(b"t_ms,key\n"));
/// assert!(!is_plain_text(&[0x1f, 0x8b, 8]) && !is_plain_text(b"PAR1..."));
/// ```
pub fn is_plain_text(head: &[u8]) -> bool {
    ![GZIP, ZSTD, super::parquet::MAGIC]
        .iter()
        .any(|m| head.starts_with(m))
}

/// The path without a `.gz`/`.zst`/`.zstd` extension (what names the
/// format: `access.jsonl.gz` is JSON Lines).
pub fn without_compression(path: &Path) -> PathBuf {
    match path.extension().and_then(|e| e.to_str()) {
        Some("gz" | "zst" | "zstd") => path.with_extension(""),
        _ => path.to_path_buf(),
    }
}

/// Whether `path` means standard input.
pub fn is_stdin(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// A buffered reader of the trace's bytes, decompressed.
///
/// # Examples
/// ```
/// use std::io::{Read, Write};
/// let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
/// gz.write_all(b"t_ns,key\n1,a\n").unwrap();
/// let f = tempfile::NamedTempFile::new().unwrap();
/// std::fs::write(f.path(), gz.finish().unwrap()).unwrap();
/// let mut text = String::new();
/// ratelab::workload::trace::input::open(f.path())?.read_to_string(&mut text).unwrap();
/// assert_eq!(text, "t_ns,key\n1,a\n");
/// # Ok::<(), ratelab::error::Error>(())
/// ```
pub fn open(path: &Path) -> Result<Box<dyn BufRead + Send>> {
    Ok(open_input(path)?.reader)
}

/// A trace's input opened once: its text (decompressed; a Parquet file's
/// rows as JSON Lines), and whether it was Parquet (told by its first
/// bytes as it was opened, so a pipe is never opened twice to find out).
pub struct Input {
    /// The text, from its first byte.
    pub reader: Box<dyn BufRead + Send>,
    /// The file was Parquet (its rows are JSON Lines).
    pub parquet: bool,
}

/// Opens a trace once ([`open`], with what kind of file it was).
pub fn open_input(path: &Path) -> Result<Input> {
    let (mut reader, parquet) = open_raw(path)?;
    skip_bom(&mut *reader).map_err(|e| Error::io(path, e))?;
    Ok(Input { reader, parquet })
}

/// Whether `path` is a file that can be opened again from its start (not
/// standard input, a pipe, a FIFO or process substitution): what a
/// second pass over a trace needs. A directory of trace files
/// ([`super::parts`]) is read again as its files are.
pub fn rereadable(path: &Path) -> bool {
    !is_stdin(path) && std::fs::metadata(path).is_ok_and(|m| m.is_file() || m.is_dir())
}

/// One input read by several readers, each from the first byte, in one
/// pass over the file: a fleet whose balancer reads each request's
/// replica from the trace reads the same lines as the lab's requests
/// (the file, a pipe or standard input opened once). Whichever reader is
/// ahead reads the input on; the bytes between the slowest reader and the
/// fastest are held (a few of the lab's batches: the readers take the
/// same requests in turn).
///
/// # Examples
/// ```
/// use ratelab::workload::trace::input::{Input, SharedInput};
/// use std::io::Read;
///
/// let shared = SharedInput::new(Input { reader: Box::new(&b"t_ns,key\n1,a\n"[..]), parquet: false });
/// let (mut a, mut b) = (shared.input().reader, shared.input().reader);
/// let (mut x, mut y) = (String::new(), String::new());
/// a.read_to_string(&mut x).unwrap();
/// b.read_to_string(&mut y).unwrap();
/// assert_eq!((x.as_str(), y.as_str()), ("t_ns,key\n1,a\n", "t_ns,key\n1,a\n"));
/// ```
#[derive(Clone)]
pub struct SharedInput {
    state: std::sync::Arc<std::sync::Mutex<Shared>>,
    parquet: bool,
}

struct Shared {
    inner: Box<dyn BufRead + Send>,
    /// Bytes from offset `base` on.
    buf: Vec<u8>,
    base: u64,
    /// Each reader's offset (None: dropped).
    cursors: Vec<Option<u64>>,
    eof: bool,
    /// The input's failure, given to every reader that reaches it.
    failed: Option<(std::io::ErrorKind, String)>,
}

impl SharedInput {
    /// Shares `input` (nothing read yet).
    pub fn new(input: Input) -> SharedInput {
        SharedInput {
            state: std::sync::Arc::new(std::sync::Mutex::new(Shared {
                inner: input.reader,
                buf: Vec::new(),
                base: 0,
                cursors: Vec::new(),
                eof: false,
                failed: None,
            })),
            parquet: input.parquet,
        }
    }

    /// A new reader from the first byte (take every reader before any of
    /// them reads: bytes all earlier readers passed are gone).
    pub fn input(&self) -> Input {
        let id = {
            let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
            let at = s.base;
            s.cursors.push(Some(at));
            s.cursors.len() - 1
        };
        Input {
            reader: Box::new(BufReader::with_capacity(
                1 << 16,
                SharedReader {
                    state: self.state.clone(),
                    id,
                },
            )),
            parquet: self.parquet,
        }
    }
}

struct SharedReader {
    state: std::sync::Arc<std::sync::Mutex<Shared>>,
    id: usize,
}

impl Read for SharedReader {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let at = s.cursors[self.id].unwrap_or(s.base);
        let end = s.base + s.buf.len() as u64;
        if at == end {
            if let Some((kind, m)) = &s.failed {
                return Err(std::io::Error::new(*kind, m.clone()));
            }
            if s.eof {
                return Ok(0);
            }
            // This reader is the furthest: read the input on.
            let got = match s.inner.fill_buf() {
                Ok(b) => b.to_vec(),
                Err(e) => {
                    s.failed = Some((e.kind(), e.to_string()));
                    return Err(e);
                }
            };
            s.inner.consume(got.len());
            if got.is_empty() {
                s.eof = true;
                return Ok(0);
            }
            s.buf.extend_from_slice(&got);
        }
        let from = (at - s.base) as usize;
        let n = out.len().min(s.buf.len() - from);
        out[..n].copy_from_slice(&s.buf[from..from + n]);
        s.cursors[self.id] = Some(at + n as u64);
        // Drop what every reader has passed (in large steps: a drain moves
        // the rest).
        let slowest = s.cursors.iter().flatten().min().copied().unwrap_or(at);
        let done = (slowest - s.base) as usize;
        if done >= 1 << 20 && done * 2 >= s.buf.len() {
            s.buf.drain(..done);
            s.base = slowest;
        }
        Ok(n)
    }
}

impl Drop for SharedReader {
    fn drop(&mut self) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = s.cursors.get_mut(self.id) {
            *c = None;
        }
    }
}

/// UTF-8's byte order mark, which some Windows tools write at the start
/// of a text file.
pub const BOM: &[u8] = b"\xef\xbb\xbf";

/// Consumes a UTF-8 byte order mark at the start of `r`, if there is one
/// (a mark is no part of the first line: a CSV header `\u{feff}t_ns`
/// would name no time column).
fn skip_bom(r: &mut dyn BufRead) -> std::io::Result<()> {
    let mut head = r.fill_buf()?;
    // The three bytes may come in more than one read (a pipe): gather
    // them only when the first ones match.
    if head.is_empty() || !BOM.starts_with(&head[..head.len().min(3)]) {
        return Ok(());
    }
    if head.len() < 3 {
        let mut got = Vec::new();
        while got.len() < 3 {
            head = r.fill_buf()?;
            if head.is_empty() {
                break;
            }
            let take = (3 - got.len()).min(head.len());
            got.extend_from_slice(&head[..take]);
            if !BOM.starts_with(&got) {
                // Not a mark after all: the bytes read are lost to a
                // plain BufRead, which cannot happen for a file whose
                // first bytes are EF BB but not BF (never UTF-8 text).
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    "starts with bytes EF BB that are not a UTF-8 byte order mark: not UTF-8 text",
                ));
            }
            r.consume(take);
        }
        return Ok(());
    }
    if head.starts_with(BOM) {
        r.consume(3);
    }
    Ok(())
}

fn open_raw(path: &Path) -> Result<(Box<dyn BufRead + Send>, bool)> {
    let raw: Box<dyn Read + Send> = if is_stdin(path) {
        Box::new(std::io::stdin())
    } else {
        if path.as_os_str().is_empty() {
            return Err(Error::input(
                "trace path is empty: expected a file name (or - for standard input)",
            ));
        }
        if std::fs::metadata(path).is_ok_and(|m| m.is_dir()) {
            return Err(Error::input_at(
                path,
                "file",
                "a directory: read here as one file (a directory of trace files is one trace for the decision lab's requests, `size` and `run --trace`, not for a validated trace's outcomes or a fleet's from_trace balancer)",
            ));
        }
        crate::report::pending::open_input(path)?
    };
    let mut buf = BufReader::with_capacity(1 << 16, raw);
    let head = buf.fill_buf().map_err(|e| Error::io(path, e))?;
    if head.starts_with(super::parquet::MAGIC) {
        if !rereadable(path) {
            return Err(Error::input_at(
                path,
                "file",
                "a Parquet file from standard input or a pipe: Parquet is read from a file (its index is at the end); give its path",
            ));
        }
        return Ok((super::parquet::open(path)?, true));
    }
    if head.starts_with(GZIP) {
        let dec = flate2::bufread::MultiGzDecoder::new(buf);
        return Ok((
            Box::new(BufReader::with_capacity(1 << 16, Reader { inner: dec })),
            false,
        ));
    }
    if head.starts_with(ZSTD) {
        let dec = zstd::stream::read::Decoder::with_buffer(buf).map_err(|e| Error::io(path, e))?;
        return Ok((
            Box::new(BufReader::with_capacity(1 << 16, Reader { inner: dec })),
            false,
        ));
    }
    Ok((Box::new(buf), false))
}

/// A decompressor whose errors say the file is corrupt (an I/O error of
/// kind `InvalidData` names the file when it reaches the reader).
struct Reader<R> {
    inner: R,
}

impl<R: Read> Read for Reader<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.inner.read(buf).map_err(|e| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("corrupt compressed data ({e})"),
            )
        })
    }
}
