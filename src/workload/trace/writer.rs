//! Writing events as a trace.

use super::format::{TraceEvent, TraceFormat};
use std::io::Write;

/// Writes events as a trace (CSV `t_ns,key,weight` or JSON Lines).
pub struct TraceWriter<W: Write> {
    out: W,
    format: TraceFormat,
    wrote_header: bool,
}

impl<W: Write> TraceWriter<W> {
    /// A writer of `format` into `out`.
    pub fn new(out: W, format: TraceFormat) -> Self {
        Self {
            out,
            format,
            wrote_header: false,
        }
    }

    /// Writes one event.
    pub fn write(&mut self, e: &TraceEvent) -> std::io::Result<()> {
        match self.format {
            TraceFormat::Csv => {
                if !self.wrote_header {
                    self.out.write_all(b"t_ns,key,weight\n")?;
                    self.wrote_header = true;
                }
                let key = if e.key.contains([',', '"', '\n', '\r']) {
                    format!("\"{}\"", e.key.replace('"', "\"\""))
                } else {
                    e.key.clone()
                };
                writeln!(self.out, "{},{},{}", e.t_ns, key, e.weight)
            }
            TraceFormat::JsonLines => {
                let line = serde_json::json!({"t_ns": e.t_ns, "key": e.key, "weight": e.weight});
                writeln!(self.out, "{line}")
            }
        }
    }

    /// Flushes and returns the inner writer.
    pub fn finish(mut self) -> std::io::Result<W> {
        if !self.wrote_header && self.format == TraceFormat::Csv {
            self.out.write_all(b"t_ns,key,weight\n")?;
        }
        self.out.flush()?;
        Ok(self.out)
    }
}
