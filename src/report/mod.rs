//! Reports: tables (Markdown, CSV), the versioned `report.json`, and charts,
//! written under `<out>/<scenario name>/`.
//!
//! Everything is rendered in memory first; only then is the folder written,
//! into a staging folder that replaces the old one by rename, so a run that
//! fails or is killed never leaves a half-written report.

pub mod chart;
pub mod html;
pub mod table;
pub mod write;

pub use chart::{Chart, ChartSpec, Series, SeriesStyle};
pub use table::Table;

/// The schema name of every `report.json`.
pub const SCHEMA: &str = "ratelab.report.v1";

/// Everything a scenario run produces.
#[derive(Debug, Clone)]
pub struct Output {
    /// The machine-readable report (`report.json`).
    pub json: serde_json::Value,
    /// `table.md`: the human-readable tables.
    pub table_md: String,
    /// `table.csv`: the main table.
    pub table_csv: String,
    /// Charts, each written as `<name>.svg` and `<name>.png`.
    pub charts: Vec<Chart>,
    /// What `run`/`reproduce` print to the terminal.
    pub console: String,
    /// Extra files (name, bytes), e.g. a timeline CSV.
    pub extra_files: Vec<(String, Vec<u8>)>,
}

/// Serialises a report as pretty JSON with a trailing newline. serde_json
/// prints floats with the shortest representation that round-trips, so equal
/// values always give equal bytes.
pub fn json_bytes(value: &serde_json::Value) -> Vec<u8> {
    let mut out = serde_json::to_vec_pretty(value).unwrap_or_default();
    out.push(b'\n');
    out
}
