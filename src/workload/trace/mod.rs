//! Traces from users' logs: streaming import and export of timed events.
//!
//! Formats (chosen by file extension, or explicitly):
//! * CSV with a header row: a time column, `key`, and optionally `weight`
//!   (events the line stands for, default 1). The time column is `t_ns`,
//!   `t_ms` or `t_s` (the unit is in the name), or `time`/`timestamp`, whose
//!   unit is given by [`TimeUnit`] (`rfc3339` for timestamps such as
//!   `2026-11-29T18:51:38.123Z`).
//! * JSON Lines: one object per line with the same field names.
//! * Parquet: each row read as a JSON Lines object ([`parquet`](mod@parquet)).
//!
//! Reading is streaming: memory does not grow with the file (one line at a
//! time, plus at most the reorder window when sorting is enabled). Bad lines
//! are errors naming the file, the line number and the value. Times are
//! integer nanoseconds since the Unix epoch, parsed exactly (`1.5` seconds is
//! 1,500,000,000 ns, never a float rounding); a time that does not fit in a
//! u64 of nanoseconds (after year 2554) is an error, never a silent wrap.
//!
//! # What is inside
//! * [`format`](mod@format) — [`TraceEvent`], [`TraceFormat`], [`TimeUnit`],
//!   [`Disorder`] and [`TraceOptions`].
//! * `parse` — one field at a time ([`parse_decimal_ns`], RFC 3339, weights,
//!   time-column names).
//! * `reader` — [`TraceReader`], lines in and events out; `line` parses one
//!   CSV or JSON line, `sort` hands events out in time order (as owned
//!   [`TraceEvent`]s, or with the key borrowed: [`TraceReader::next_ref`]).
//! * `intern` — [`KeyInterner`], keys to dense ids from borrowed bytes.
//! * `writer` — [`TraceWriter`].
//!
//! # Examples
//! ```
//! use ratelab::workload::trace::{TraceFormat, TraceOptions, TraceReader};
//! use std::io::Cursor;
//! use std::path::Path;
//!
//! let csv = "t_ms,key\n1.5,a\n3,b\n";
//! let input = Box::new(Cursor::new(csv.as_bytes().to_vec()));
//! let reader = TraceReader::new(Path::new("t.csv"), TraceFormat::Csv, input, TraceOptions::default());
//! let times: Vec<u64> = reader.map(|e| e.map(|e| e.t_ns)).collect::<Result<_, _>>()?;
//! assert_eq!(times, [1_500_000, 3_000_000]);
//! # Ok::<(), ratelab::error::Error>(())
//! ```

mod block;
mod columns;
mod error;
pub mod format;
pub mod input;
pub(crate) mod intern;
mod line;
pub mod log;
pub mod parquet;
pub(crate) mod parse;
pub mod parts;
pub(crate) mod reader;
mod reorder;
mod sort;
pub mod spread;
#[cfg(test)]
mod tests;
mod trace_spec;
pub(crate) mod writer;

pub use block::{KeyCap, KeyFilter};
pub use columns::Columns;
pub use error::ParseError;
pub use format::{
    spread_seed, Disorder, Spread, TimeUnit, TraceEvent, TraceFormat, TraceOptions, MAX_LINE,
};
pub use intern::KeyInterner;
pub use log::{LogSpec, FORMATS};
pub use parse::parse_decimal_ns;
pub use reader::TraceReader;
pub use trace_spec::{format_help, spread_help, Format, InputOptions, TimeIs, TraceSpec};
pub use writer::TraceWriter;
