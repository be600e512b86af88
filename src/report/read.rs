//! Reading a `report.json` back: the one place that checks it is a ratelab
//! report (its `schema`). The review page and `check` both read reports
//! through it.

use crate::error::{Error, Result};
use serde_json::Value;
use std::path::Path;

/// Fails with a clear message when `v` is not a ratelab report.
pub fn validate_report(v: &Value) -> std::result::Result<(), super::error::ReportError> {
    match v.get("schema").and_then(Value::as_str) {
        Some(s) if s == super::SCHEMA => Ok(()),
        Some(s) => Err(super::error::ReportError::Schema {
            found: s.to_string(),
            expected: super::SCHEMA,
        }),
        None => Err(super::error::ReportError::NoSchema(super::SCHEMA)),
    }
}

/// Largest report.json read (committed reports are a few MB at most).
pub const MAX_REPORT_BYTES: u64 = 256 << 20;

/// Reads the JSON file `path` (`what` it is, for the error when it is over
/// [`MAX_REPORT_BYTES`]); any problem is bad input naming the file (and
/// the line and column of malformed JSON).
pub(crate) fn read_json(path: &Path, what: &str) -> Result<Value> {
    let bytes = super::pending::read_bounded(path, MAX_REPORT_BYTES, what)?;
    crate::strict_json::from_slice(&bytes).map_err(|e| {
        Error::input_at(
            path,
            format!("line {} column {}", e.line(), e.column()),
            "malformed JSON",
        )
    })
}

/// Reads a report.json; any problem is bad input naming the file.
pub fn read_report(path: &Path) -> Result<Value> {
    let v = read_json(path, "a report.json")?;
    validate_report(&v).map_err(|m| Error::input_at(path, "field schema", m))?;
    Ok(v)
}
