//! CSV plumbing shared by the pacer replays: a streaming reader that names
//! the file and line of every problem, and an output CSV written to a
//! temporary file in the target's folder and renamed over the target only
//! when the whole replay succeeded (a failure leaves no partial output).

use crate::error::{Error, Result};
use crate::report::atomic::StreamingFile;
use std::io::Read;
use std::path::{Path, PathBuf};

/// Longest line a replay reads: a longer one (a binary file, `/dev/zero`)
/// is an error, not an ever-growing buffer.
pub const MAX_LINE_BYTES: usize = 1 << 20;

/// A reader that fails once a line (bytes since the last `\n`) passes
/// [`MAX_LINE_BYTES`].
pub struct LineBounded<R> {
    inner: R,
    run: usize,
}

impl<R: Read> LineBounded<R> {
    /// Wraps `inner`.
    pub fn new(inner: R) -> Self {
        Self { inner, run: 0 }
    }
}

impl<R: Read> Read for LineBounded<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        for &b in &buf[..n] {
            if b == b'\n' {
                self.run = 0;
            } else {
                self.run += 1;
                if self.run > MAX_LINE_BYTES {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::InvalidData,
                        format!("a line longer than {MAX_LINE_BYTES} bytes (not a text trace?)"),
                    ));
                }
            }
        }
        Ok(n)
    }
}

/// A streaming CSV reader over a trace file.
pub struct TraceReader {
    path: PathBuf,
    reader: csv::Reader<LineBounded<Box<dyn std::io::BufRead + Send>>>,
    header: Vec<String>,
    record: csv::StringRecord,
}

impl TraceReader {
    /// Opens `path` (a file, or `-` for standard input; decompressed when
    /// gzip or zstd, as every trace is) and reads its header row.
    pub fn open(path: &Path) -> Result<Self> {
        let input = crate::workload::trace::input::open_input(path)?;
        if input.parquet {
            return Err(Error::input_at(
                path,
                "file",
                "a Parquet file: this replay reads CSV rows (replay --algo limiter reads Parquet with --format parquet)",
            ));
        }
        let mut reader = csv::ReaderBuilder::new()
            .has_headers(true)
            .flexible(true)
            .trim(csv::Trim::All)
            .from_reader(LineBounded::new(input.reader));
        let header: Vec<String> = reader
            .headers()
            .map_err(|e| csv_error(path, &e))?
            .iter()
            .map(str::to_string)
            .collect();
        if header.iter().all(|h| h.is_empty()) {
            return Err(Error::input_at(
                path,
                "line 1",
                "empty file: expected a header row",
            ));
        }
        Ok(Self {
            path: path.to_path_buf(),
            reader,
            header,
            record: csv::StringRecord::new(),
        })
    }

    /// The header's column names.
    pub fn header(&self) -> &[String] {
        &self.header
    }

    /// Reads the next row; `None` at the end. Returns the 1-based line
    /// number and the fields; a row with a different number of fields than
    /// the header is an error.
    pub fn next_row(&mut self) -> Result<Option<(u64, &csv::StringRecord)>> {
        let more = self
            .reader
            .read_record(&mut self.record)
            .map_err(|e| csv_error(&self.path, &e))?;
        if !more {
            return Ok(None);
        }
        let line = self.record.position().map_or(0, |p| p.line());
        if self.record.len() != self.header.len() {
            return Err(Error::input_at(
                &self.path,
                format!("line {line}"),
                format!(
                    "{} fields: expected {} ({})",
                    self.record.len(),
                    self.header.len(),
                    self.header.join(",")
                ),
            ));
        }
        Ok(Some((line, &self.record)))
    }

    /// An input error at `line`.
    pub fn error_at(&self, line: u64, msg: impl std::fmt::Display) -> Error {
        Error::input_at(&self.path, format!("line {line}"), msg)
    }
}

fn csv_error(path: &Path, e: &csv::Error) -> Error {
    let place = e
        .position()
        .map_or_else(|| "read".to_string(), |p| format!("line {}", p.line()));
    let msg = match e.kind() {
        csv::ErrorKind::Utf8 { .. } => "not valid UTF-8".to_string(),
        _ => e.to_string(),
    };
    Error::input_at(path, place, msg)
}

/// Parses an integer field (Go `int`/`int64`/`time.Duration`), with an
/// error naming the column, the value and the range.
pub fn parse_i64(r: &TraceReader, line: u64, column: &str, value: &str) -> Result<i64> {
    value.parse::<i64>().map_err(|e| {
        let why = match e.kind() {
            std::num::IntErrorKind::PosOverflow | std::num::IntErrorKind::NegOverflow => {
                "out of range: expected an integer in -9223372036854775808..=9223372036854775807"
            }
            std::num::IntErrorKind::Empty => "empty: expected an integer",
            _ => "expected an integer",
        };
        r.error_at(line, format!("{column} value {value:?}: {why}"))
    })
}

/// An output CSV written to a temporary file beside `path` and renamed over
/// it by [`OutputCsv::commit`]; dropped without commit, it leaves nothing
/// (a [`StreamingFile`] underneath).
pub struct OutputCsv {
    path: PathBuf,
    writer: csv::Writer<StreamingFile>,
}

impl OutputCsv {
    /// Creates the temporary file in `path`'s folder.
    pub fn create(path: &Path) -> Result<Self> {
        let tmp = StreamingFile::create(path, ".ratelab-replay-")?;
        let writer = csv::WriterBuilder::new().flexible(true).from_writer(tmp);
        Ok(Self {
            path: path.to_path_buf(),
            writer,
        })
    }

    /// Writes one row.
    pub fn row<I, T>(&mut self, fields: I) -> Result<()>
    where
        I: IntoIterator<Item = T>,
        T: AsRef<[u8]>,
    {
        self.writer
            .write_record(fields)
            .map_err(|e| Error::input(format!("{}: {e}", self.path.display())))
    }

    /// Flushes and renames the file over the target.
    pub fn commit(self) -> Result<()> {
        let path = self.path;
        self.writer
            .into_inner()
            .map_err(|e| Error::input(format!("{}: {}", path.display(), e.error())))?
            .commit()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// A replay reads a gzip or zstd trace as every other command does
    /// (it was read as raw bytes: "line 1: not valid UTF-8"), and names a
    /// Parquet file instead of misreading it.
    #[test]
    fn compressed_traces_are_read_and_parquet_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let text = b"t_ns,key,weight\n1,a,1\n2,b,3\n";
        let gz = dir.path().join("t.csv.gz");
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        enc.write_all(text).unwrap();
        std::fs::write(&gz, enc.finish().unwrap()).unwrap();
        let zst = dir.path().join("t.csv.zst");
        std::fs::write(&zst, zstd::encode_all(&text[..], 3).unwrap()).unwrap();
        for path in [&gz, &zst] {
            let mut r = TraceReader::open(path).unwrap();
            assert_eq!(r.header(), ["t_ns", "key", "weight"]);
            let mut rows = Vec::new();
            while let Some((line, rec)) = r.next_row().unwrap() {
                rows.push((line, rec.iter().collect::<Vec<_>>().join(",")));
            }
            assert_eq!(rows, [(2, "1,a,1".into()), (3, "2,b,3".into())]);
        }
        let pq = dir.path().join("t.parquet");
        std::fs::write(&pq, b"PAR1 not really").unwrap();
        let e = TraceReader::open(&pq).err().unwrap();
        assert!(e.message().contains("Parquet"), "{}", e.message());
    }
}
