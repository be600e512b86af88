//! Baselines: the committed `report.json` of each scenario, read and
//! validated, and the report folders no scenario names.

use crate::error::{Error, Result};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Fails with a clear message when `v` is not a ratelab report.
pub fn validate_report(v: &Value) -> std::result::Result<(), String> {
    match v.get("schema").and_then(Value::as_str) {
        Some(s) if s == crate::report::SCHEMA => Ok(()),
        Some(s) => Err(format!(
            "schema {s:?}: expected {:?}",
            crate::report::SCHEMA
        )),
        None => Err(format!(
            "no \"schema\" field: expected a ratelab report ({})",
            crate::report::SCHEMA
        )),
    }
}

/// Where the baseline of scenario `name` lives under `reports`.
pub fn baseline_path(reports: &Path, name: &str) -> PathBuf {
    reports.join(name).join("report.json")
}

/// Largest report.json read (committed reports are a few MB at most).
pub const MAX_REPORT_BYTES: u64 = 256 << 20;

/// Reads a report.json; any problem is bad input naming the file.
pub fn read_report(path: &Path) -> Result<Value> {
    let bytes = crate::report::pending::read_bounded(path, MAX_REPORT_BYTES, "a report.json")?;
    let v: Value = crate::strict_json::from_slice(&bytes).map_err(|e| {
        Error::input_at(
            path,
            format!("line {} column {}", e.line(), e.column()),
            "malformed JSON",
        )
    })?;
    validate_report(&v).map_err(|m| Error::input_at(path, "field schema", m))?;
    Ok(v)
}

/// Report folders with a report.json but no scenario of that name.
pub fn orphans(reports: &Path, names: &std::collections::BTreeSet<String>) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(reports) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("report.json").is_file())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| !n.starts_with('.') && !names.contains(n))
        })
        .collect();
    out.sort();
    out
}
