//! Reports: tables (Markdown, CSV), the versioned `report.json`, and charts,
//! written under `<out>/<scenario name>/`.
//!
//! A kind assembles its [`Output`] with a [`ReportBuilder`] ([`builder`]),
//! formatting numbers with [`fmt`]. Everything is rendered in memory first;
//! only then is the folder written ([`write_report`], [`atomic`]), into a
//! staging folder that replaces the old one by rename, so a run that fails
//! or is killed never leaves a half-written report.

pub mod atomic;
pub mod builder;
pub mod chart;
mod error;
pub mod findings;
pub mod fmt;
pub mod html;
pub mod jobs;
pub mod pending;
pub(crate) mod read;
pub mod signals;
pub(crate) mod table;

pub use builder::{Heading, ReportBuilder};
pub use chart::{Chart, ChartSpec, Series, SeriesStyle};
pub use error::ReportError;
pub use table::Table;

use crate::error::Result;
use std::path::{Path, PathBuf};

/// The schema name of every `report.json`.
pub const SCHEMA: &str = "ratelab.report.v1";

/// The schema name of `size --limit`'s `size.json` (written by
/// `sizing::limit::report`; here so that the findings and the page, which
/// read it, need not import the sizing floor above them).
pub const LIMIT_SIZE_SCHEMA: &str = "ratelab.size.limit.v1";

/// Everything a scenario run produces (assembled by a [`ReportBuilder`]).
#[derive(Debug, Clone, Default)]
pub struct Output {
    /// The machine-readable report (`report.json`).
    pub json: serde_json::Value,
    /// `table.md`: the human-readable tables.
    pub table_md: String,
    /// `table.csv`: the main table.
    pub table_csv: String,
    /// Charts, each written as `<name>.svg` and `<name>.png`.
    pub charts: Vec<Chart>,
    /// What `run`/`reproduce` print to the terminal (at most 120 columns).
    pub console: String,
    /// What `run --wide` prints instead, when not empty (every column of a
    /// table that `console` shows in part).
    pub console_wide: String,
    /// Extra files (name, bytes), e.g. a timeline CSV.
    pub extra_files: Vec<(String, Vec<u8>)>,
}

impl Output {
    /// The files of the report folder, in writing order: `report.json`,
    /// `table.md`, `table.csv`, each chart's `.svg` and `.png`, then the
    /// extra files.
    pub fn files(&self) -> Vec<(String, Vec<u8>)> {
        let mut files: Vec<(String, Vec<u8>)> = vec![
            ("report.json".into(), json_bytes(&self.json)),
            ("table.md".into(), self.table_md.clone().into_bytes()),
            ("table.csv".into(), self.table_csv.clone().into_bytes()),
        ];
        for chart in &self.charts {
            files.push((
                format!("{}.svg", chart.name),
                chart.svg.clone().into_bytes(),
            ));
            files.push((format!("{}.png", chart.name), chart.png.clone()));
        }
        files.extend(self.extra_files.iter().cloned());
        files
    }
}

/// Writes `output` to `<out>/<name>/`, replacing the previous report whole
/// ([`atomic::write_folder`]).
pub fn write_report(out: &Path, name: &str, output: &Output) -> Result<PathBuf> {
    atomic::write_folder(out, name, &output.files())
}

/// Serialises a report as pretty JSON with a trailing newline. serde_json
/// prints floats with the shortest representation that round-trips, so equal
/// values always give equal bytes.
pub fn json_bytes(value: &serde_json::Value) -> Vec<u8> {
    let mut out = serde_json::to_vec_pretty(value).unwrap_or_default();
    out.push(b'\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_name_cannot_escape_its_folder() {
        let dir = tempfile::tempdir().unwrap();
        let out = Output::default();
        assert!(write_report(dir.path(), "../escape", &out).is_err());
    }
}
