//! The report floor's error: an output path, a report name or a report
//! file that is not what ratelab writes. The caller adds the flag, field
//! or file; bad input (exit 2).

/// An error of the report floor, without the flag or file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReportError {
    /// An output path that is empty.
    #[error("empty: expected a path")]
    EmptyPath,
    /// An output path with a control character.
    #[error("{0:?}: control characters are not allowed in an output path")]
    ControlInPath(String),
    /// An output path with a `..` component.
    #[error(
        "{0:?}: a `..` component is not allowed in an output path (give the folder's own path)"
    )]
    ParentInPath(String),
    /// A scenario or report name outside `[a-z0-9][a-z0-9_-]{0,63}`.
    #[error(
        "value {0:?}: expected 1-64 characters of a-z, 0-9, '-' or '_', starting with a letter or digit"
    )]
    BadName(String),
    /// A report.json of another schema.
    #[error("schema {found:?}: expected {expected:?}")]
    Schema {
        /// Its schema.
        found: String,
        /// ratelab's.
        expected: &'static str,
    },
    /// A JSON file without a schema.
    #[error("no \"schema\" field: expected a ratelab report ({0})")]
    NoSchema(&'static str),
}

impl From<ReportError> for crate::error::Error {
    /// Bad input (exit 2).
    fn from(e: ReportError) -> Self {
        crate::error::Error::input(e.to_string())
    }
}
