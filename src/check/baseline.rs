//! Baselines: the committed `report.json` of each scenario, read and
//! validated, and the report folders no scenario names.

pub use crate::report::read::{read_report, validate_report};
use std::path::{Path, PathBuf};

/// Where the baseline of scenario `name` lives under `reports`.
pub fn baseline_path(reports: &Path, name: &str) -> PathBuf {
    reports.join(name).join("report.json")
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
