//! Parquet input: a Parquet file read row by row (the `parquet` crate's
//! record reader) and handed to the trace reader as JSON Lines, one object
//! per row with the file's column names, so that everything the JSON Lines
//! reader does — `--columns time=NAME,key=NAME`, key expressions (`ip/24`,
//! routes, composites), weights, errors naming the field — works on
//! Parquet unchanged, and "line N" is row N.
//!
//! Values: integers and floats are numbers; strings (and byte arrays that
//! are UTF-8) are strings; `TIMESTAMP` columns (milliseconds, microseconds,
//! nanoseconds, and legacy INT96) are ISO 8601 strings in UTC with every
//! digit the column holds, so they read as times without `--time-unit`;
//! a plain INT64 of epoch times is a number in `--time-unit`. A nested
//! group (a struct column) is an object of its fields, so `--columns
//! key=request.client_ip` reaches into it as a dotted name does in JSON
//! Lines. Nulls, lists, maps and decimals are left out of the row (a
//! field used as the time or the key is then missing, and the message
//! says so).
//!
//! Why JSON text in between rather than a reader of its own: the JSON
//! Lines path already owns field lookup, time parsing and key expressions
//! and their messages; writing each row as text costs far less than the
//! simulation it feeds (see the guide's performance chapter).
//!
//! # Examples
//! ```
//! use ratelab::workload::trace::parquet;
//! use std::io::Read;
//!
//! let f = tempfile::NamedTempFile::new().unwrap();
//! parquet::write_example(f.path(), &[(1_000, "a"), (2_500, "b")]).unwrap();
//! assert!(parquet::is_parquet(f.path()));
//! let mut text = String::new();
//! parquet::open(f.path())?.read_to_string(&mut text).unwrap();
//! assert_eq!(text, "{\"t_ms\":1000,\"key\":\"a\"}\n{\"t_ms\":2500,\"key\":\"b\"}\n");
//! # Ok::<(), ratelab::error::Error>(())
//! ```

use crate::error::{Error, Result};
use parquet::basic::{LogicalType, TimeUnit};
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::record::reader::RowIter;
use parquet::record::Field;
use std::collections::HashSet;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

/// Parquet's magic bytes, at the start (and the end) of every file.
pub const MAGIC: &[u8] = b"PAR1";

/// Whether the file at `path` starts with Parquet's magic bytes (only a
/// regular file is looked at: opening a pipe to peek would take its first
/// bytes from the reader that opens it next).
pub fn is_parquet(path: &Path) -> bool {
    if !super::input::rereadable(path) {
        return false;
    }
    let mut head = [0u8; 4];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok()
        && head == MAGIC
}

/// The rows of the Parquet file at `path` as JSON Lines text. A file that
/// is not valid Parquet is an error naming it.
pub fn open(path: &Path) -> Result<Box<dyn BufRead + Send>> {
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let reader = SerializedFileReader::new(file)
        .map_err(|e| Error::input_at(path, "file", format!("not a readable Parquet file ({e})")))?;
    // Columns whose INT64 values are nanosecond timestamps: the record
    // reader hands them out as plain longs.
    let nanos: HashSet<String> = reader
        .metadata()
        .file_metadata()
        .schema_descr()
        .columns()
        .iter()
        .filter(|c| {
            matches!(c.logical_type_ref(), Some(LogicalType::Timestamp(t)) if t.unit == TimeUnit::NANOS)
        })
        .map(|c| c.path().string())
        .collect();
    let rows = RowIter::from_file_into(Box::new(reader));
    Ok(Box::new(BufReader::with_capacity(
        1 << 16,
        Rows {
            rows,
            nanos,
            path: path.to_path_buf(),
            pending: Vec::new(),
            at: 0,
            row: 0,
        },
    )))
}

/// Parquet rows rendered as JSON lines on demand.
struct Rows {
    rows: RowIter<'static>,
    nanos: HashSet<String>,
    path: PathBuf,
    pending: Vec<u8>,
    at: usize,
    row: u64,
}

impl Read for Rows {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.at == self.pending.len() {
            self.pending.clear();
            self.at = 0;
            match self.rows.next() {
                None => return Ok(0),
                Some(Err(e)) => {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::InvalidData,
                        format!(
                            "corrupt Parquet data at row {} of {} ({e})",
                            self.row + 1,
                            self.path.display()
                        ),
                    ))
                }
                Some(Ok(row)) => {
                    self.row += 1;
                    render_row(&row, &self.nanos, &mut self.pending);
                }
            }
        }
        let n = buf.len().min(self.pending.len() - self.at);
        buf[..n].copy_from_slice(&self.pending[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// One row as a JSON object and a newline.
fn render_row(row: &parquet::record::Row, nanos: &HashSet<String>, out: &mut Vec<u8>) {
    render_group(row, "", nanos, out);
    out.push(b'\n');
}

/// A row or a nested group as a JSON object: a group column is an object
/// of its fields, so that a dotted name (`request.client_ip`) reaches into
/// it as in JSON Lines. `path` is the group's column path (`""` at the
/// top), for the nanosecond-timestamp columns.
fn render_group(
    row: &parquet::record::Row,
    path: &str,
    nanos: &HashSet<String>,
    out: &mut Vec<u8>,
) {
    out.push(b'{');
    let mut first = true;
    for (name, field) in row.get_column_iter() {
        let at = if path.is_empty() {
            name.clone()
        } else {
            format!("{path}.{name}")
        };
        let mark = out.len();
        if !first {
            out.push(b',');
        }
        json_string(name, out);
        out.push(b':');
        let written = match field {
            Field::Group(g) => {
                render_group(g, &at, nanos, out);
                true
            }
            f => match render_value(f, nanos.contains(&at)) {
                Some(v) => {
                    out.extend_from_slice(v.as_bytes());
                    true
                }
                None => false,
            },
        };
        if written {
            first = false;
        } else {
            out.truncate(mark);
        }
    }
    out.push(b'}');
}

/// A field as JSON text (None: left out of the row).
fn render_value(field: &Field, nanos: bool) -> Option<String> {
    let mut s = Vec::new();
    match field {
        Field::Bool(b) => return Some(b.to_string()),
        Field::Byte(n) => return Some(n.to_string()),
        Field::Short(n) => return Some(n.to_string()),
        Field::Int(n) => return Some(n.to_string()),
        Field::Long(n) if nanos => return iso(*n as i128, 9),
        Field::Long(n) => return Some(n.to_string()),
        Field::UByte(n) => return Some(n.to_string()),
        Field::UShort(n) => return Some(n.to_string()),
        Field::UInt(n) => return Some(n.to_string()),
        Field::ULong(n) => return Some(n.to_string()),
        Field::Float(x) if x.is_finite() => return Some(x.to_string()),
        Field::Double(x) if x.is_finite() => return Some(x.to_string()),
        Field::Str(t) => json_string(t, &mut s),
        Field::Bytes(b) => json_string(std::str::from_utf8(b.data()).ok()?, &mut s),
        Field::Date(d) => return iso(i128::from(*d) * 86_400 * 1_000_000_000, 0),
        Field::TimeMillis(n) => return Some(n.to_string()),
        Field::TimeMicros(n) => return Some(n.to_string()),
        Field::TimestampMillis(n) => return iso(i128::from(*n) * 1_000_000, 3),
        Field::TimestampMicros(n) => return iso(i128::from(*n) * 1_000, 6),
        _ => return None,
    }
    String::from_utf8(s).ok()
}

/// `t_ns` since the epoch as a quoted ISO 8601 UTC time with `digits`
/// decimals of the second (None before the epoch: no trace time is).
fn iso(t_ns: i128, digits: usize) -> Option<String> {
    if t_ns < 0 {
        return None;
    }
    let secs = i64::try_from(t_ns / 1_000_000_000).ok()?;
    let sub = (t_ns % 1_000_000_000) as u32;
    let dt = chrono::DateTime::from_timestamp(secs, sub)?;
    let base = dt.format("%Y-%m-%dT%H:%M:%S").to_string();
    Some(match digits {
        0 => format!("\"{base}Z\""),
        d => {
            let frac = format!("{sub:09}");
            format!("\"{base}.{}Z\"", &frac[..d.min(9)])
        }
    })
}

/// `s` as a JSON string.
fn json_string(s: &str, out: &mut Vec<u8>) {
    // serde_json's escaping; writing to a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, s);
}

/// Writes a small Parquet file of `(t_ms, key)` rows (INT64 `t_ms`, UTF-8
/// `key`): for examples and tests of the reader.
pub fn write_example(path: &Path, rows: &[(i64, &str)]) -> Result<()> {
    use parquet::data_type::{ByteArray, ByteArrayType, Int64Type};
    use parquet::file::properties::WriterProperties;
    use parquet::file::writer::SerializedFileWriter;
    use parquet::schema::parser::parse_message_type;
    use std::sync::Arc;
    let fail = |e: parquet::errors::ParquetError| Error::io(path, std::io::Error::other(e));
    let schema = Arc::new(
        parse_message_type("message trace { REQUIRED INT64 t_ms; REQUIRED BINARY key (UTF8); }")
            .map_err(fail)?,
    );
    let file = std::fs::File::create(path).map_err(|e| Error::io(path, e))?;
    let mut w = SerializedFileWriter::new(file, schema, Arc::new(WriterProperties::default()))
        .map_err(fail)?;
    let mut rg = w.next_row_group().map_err(fail)?;
    let times: Vec<i64> = rows.iter().map(|r| r.0).collect();
    let keys: Vec<ByteArray> = rows.iter().map(|r| ByteArray::from(r.1)).collect();
    if let Some(mut c) = rg.next_column().map_err(fail)? {
        c.typed::<Int64Type>()
            .write_batch(&times, None, None)
            .map_err(fail)?;
        c.close().map_err(fail)?;
    }
    if let Some(mut c) = rg.next_column().map_err(fail)? {
        c.typed::<ByteArrayType>()
            .write_batch(&keys, None, None)
            .map_err(fail)?;
        c.close().map_err(fail)?;
    }
    rg.close().map_err(fail)?;
    w.close().map_err(fail)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_iso_with_their_digits() {
        assert_eq!(
            iso(1_728_593_736_123_000_000, 3).as_deref(),
            Some("\"2024-10-10T20:55:36.123Z\"")
        );
        assert_eq!(
            iso(1_728_593_736_000_000_007, 9).as_deref(),
            Some("\"2024-10-10T20:55:36.000000007Z\"")
        );
        assert_eq!(
            iso(86_400_000_000_000, 0).as_deref(),
            Some("\"1970-01-02T00:00:00Z\"")
        );
        assert_eq!(iso(-1, 3), None);
    }

    #[test]
    fn values_render_as_json() {
        assert_eq!(
            render_value(&Field::Str("a\"b".into()), false).as_deref(),
            Some("\"a\\\"b\"")
        );
        assert_eq!(render_value(&Field::Long(7), false).as_deref(), Some("7"));
        assert_eq!(
            render_value(&Field::Long(1_000_000_001), true).as_deref(),
            Some("\"1970-01-01T00:00:01.000000001Z\"")
        );
        assert_eq!(render_value(&Field::Double(f64::NAN), false), None);
        assert_eq!(render_value(&Field::Null, false), None);
    }

    /// A file with a struct column: `t_ms`, then `req { ip, n }`.
    fn write_nested(path: &Path, rows: &[(i64, &str, i64)]) {
        use parquet::data_type::{ByteArray, ByteArrayType, Int64Type};
        use parquet::file::properties::WriterProperties;
        use parquet::file::writer::SerializedFileWriter;
        use parquet::schema::parser::parse_message_type;
        use std::sync::Arc;
        let schema = Arc::new(
            parse_message_type(
                "message t { REQUIRED INT64 t_ms; REQUIRED group req { REQUIRED BINARY ip (UTF8); REQUIRED INT64 n; } }",
            )
            .unwrap(),
        );
        let file = std::fs::File::create(path).unwrap();
        let mut w =
            SerializedFileWriter::new(file, schema, Arc::new(WriterProperties::default())).unwrap();
        let mut rg = w.next_row_group().unwrap();
        let t: Vec<i64> = rows.iter().map(|r| r.0).collect();
        let ip: Vec<ByteArray> = rows.iter().map(|r| ByteArray::from(r.1)).collect();
        let n: Vec<i64> = rows.iter().map(|r| r.2).collect();
        let mut c = rg.next_column().unwrap().unwrap();
        c.typed::<Int64Type>().write_batch(&t, None, None).unwrap();
        c.close().unwrap();
        let mut c = rg.next_column().unwrap().unwrap();
        c.typed::<ByteArrayType>()
            .write_batch(&ip, None, None)
            .unwrap();
        c.close().unwrap();
        let mut c = rg.next_column().unwrap().unwrap();
        c.typed::<Int64Type>().write_batch(&n, None, None).unwrap();
        c.close().unwrap();
        rg.close().unwrap();
        w.close().unwrap();
    }

    #[test]
    fn nested_columns_are_objects_reached_by_dotted_names() {
        use crate::workload::trace::{LogSpec, TimeUnit, TraceOptions, TraceReader};
        let f = tempfile::Builder::new()
            .suffix(".parquet")
            .tempfile()
            .unwrap();
        write_nested(
            f.path(),
            &[(1_000, "2001:db8::1", 2), (2_500, "192.0.2.7", 1)],
        );
        let mut text = String::new();
        open(f.path()).unwrap().read_to_string(&mut text).unwrap();
        assert_eq!(
            text,
            "{\"t_ms\":1000,\"req\":{\"ip\":\"2001:db8::1\",\"n\":2}}\n{\"t_ms\":2500,\"req\":{\"ip\":\"192.0.2.7\",\"n\":1}}\n"
        );
        let spec = LogSpec {
            format: "parquet".into(),
            time: Some("t_ms".into()),
            key: Some("req.ip/24/64".into()),
            weight: Some("req.n".into()),
            unit: TimeUnit::Ms,
            ..LogSpec::default()
        };
        let r = TraceReader::open_with(f.path(), TraceOptions::default(), Some(&spec)).unwrap();
        let got: Vec<_> = r
            .map(|e| e.map(|e| (e.t_ns, e.key, e.weight)))
            .collect::<Result<_>>()
            .unwrap();
        assert_eq!(
            got,
            [
                (1_000_000_000, "2001:db8::/64".to_string(), 2),
                (2_500_000_000, "192.0.2.0/24".to_string(), 1)
            ]
        );
    }

    #[test]
    fn a_file_that_is_not_parquet_is_an_error_naming_it() {
        let f = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(f.path(), b"PAR1 but not really").unwrap();
        let e = open(f.path())
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("not a readable Parquet file"), "{e}");
        assert!(e.contains(&f.path().display().to_string()), "{e}");
    }
}
