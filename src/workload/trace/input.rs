//! Opening a trace's bytes: a file or standard input (`-`), decompressed
//! when it starts with gzip's (`1f 8b`) or zstd's (`28 b5 2f fd`) magic
//! bytes, whatever its name; a Parquet file (`PAR1`) is read row by row as
//! JSON Lines ([`parquet`](super::parquet)).

use crate::error::{Error, Result};
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

const GZIP: &[u8] = &[0x1f, 0x8b];
const ZSTD: &[u8] = &[0x28, 0xb5, 0x2f, 0xfd];

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
    let mut r = open_raw(path)?;
    skip_bom(&mut *r).map_err(|e| Error::io(path, e))?;
    Ok(r)
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

fn open_raw(path: &Path) -> Result<Box<dyn BufRead + Send>> {
    let raw: Box<dyn Read + Send> = if is_stdin(path) {
        Box::new(std::io::stdin())
    } else {
        if path.as_os_str().is_empty() {
            return Err(Error::input(
                "trace path is empty: expected a file name (or - for standard input)",
            ));
        }
        Box::new(std::fs::File::open(path).map_err(|e| Error::io(path, e))?)
    };
    let mut buf = BufReader::with_capacity(1 << 16, raw);
    let head = buf.fill_buf().map_err(|e| Error::io(path, e))?;
    if head.starts_with(super::parquet::MAGIC) {
        if is_stdin(path) {
            return Err(Error::input(
                "standard input is a Parquet file: Parquet is read from a file (its index is at the end); give its path",
            ));
        }
        return super::parquet::open(path);
    }
    if head.starts_with(GZIP) {
        let dec = flate2::bufread::MultiGzDecoder::new(buf);
        return Ok(Box::new(BufReader::with_capacity(
            1 << 16,
            Reader { inner: dec },
        )));
    }
    if head.starts_with(ZSTD) {
        let dec = zstd::stream::read::Decoder::with_buffer(buf).map_err(|e| Error::io(path, e))?;
        return Ok(Box::new(BufReader::with_capacity(
            1 << 16,
            Reader { inner: dec },
        )));
    }
    Ok(Box::new(buf))
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
