//! One error type for everything ratelab reports to a user.
//!
//! Every error renders as **one line** naming where the problem is (file,
//! line/column or field), the offending value and what was expected. The kind
//! decides the exit code: 2 for bad input or usage, 1 for a failed check,
//! 3 for an internal error (a bug: the message asks for a report).

use std::fmt;
use std::path::Path;

/// What went wrong, which decides the exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// Malformed or out-of-range input, or a usage mistake (exit code 2).
    BadInput,
    /// A check ran and found a regression (exit code 1).
    CheckFailed,
    /// A bug in ratelab (exit code 3).
    Internal,
}

/// A one-line, user-facing error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    kind: ErrorKind,
    message: String,
}

/// ratelab's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// Bad input or usage.
    pub fn input(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::BadInput, message)
    }

    /// Bad input in a file, at a place (a field path or `line N`).
    pub fn input_at(file: &Path, place: impl fmt::Display, message: impl fmt::Display) -> Self {
        Self::input(format!("{}: {place}: {message}", file.display()))
    }

    /// A floor's typed error at a place in a file (`line 7`, a field
    /// path): its kind kept, the file and place put first.
    pub fn located(file: &Path, place: impl fmt::Display, err: impl Into<Error>) -> Self {
        let e = err.into();
        Self::new(
            e.kind,
            format!("{}: {place}: {}", file.display(), e.message),
        )
    }

    /// A failed check.
    pub fn check(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::CheckFailed, message)
    }

    /// A bug in ratelab.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Internal, message)
    }

    /// An I/O failure on `path` (reading input is bad input; writing is reported
    /// the same way, since a full disk or a read-only folder is the user's to fix).
    pub fn io(path: &Path, err: std::io::Error) -> Self {
        Self::input(format!("{}: {err}", path.display()))
    }

    fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        // Keep the promise of one line whatever the source of the message.
        let message = message.into().replace(['\n', '\r'], " ");
        Self { kind, message }
    }

    /// The kind of error.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The message, one line.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The process exit code for this error.
    pub fn exit_code(&self) -> i32 {
        match self.kind {
            ErrorKind::CheckFailed => 1,
            ErrorKind::BadInput => 2,
            ErrorKind::Internal => 3,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            ErrorKind::Internal => write!(
                f,
                "internal error (a bug in ratelab; please report it with the scenario to reproduce it): {}",
                self.message
            ),
            _ => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for Error {}

/// A scenario field (`trace.unit`, `deployment.replicas`) and what is
/// wrong with its value: the error of code that checks parameters before
/// it knows which file they came from. The caller that knows the file
/// makes it an [`Error`] (`Scenario::field_error`), bad input (exit 2).
///
/// # Examples
/// ```
/// use ratelab::error::FieldError;
/// let e = FieldError::new("trace.unit", "the alb format's times carry their own unit");
/// assert_eq!(e.to_string(), "field trace.unit: the alb format's times carry their own unit");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("field {field}: {message}")]
pub struct FieldError {
    /// The field's path.
    pub field: String,
    /// What is wrong with its value (one line).
    pub message: String,
}

impl FieldError {
    /// Field `field` is wrong: `message`.
    pub fn new(field: impl Into<String>, message: impl fmt::Display) -> Self {
        Self {
            field: field.into(),
            message: message.to_string(),
        }
    }
}

impl From<FieldError> for Error {
    /// Bad input (exit 2), without the file (when the caller has none).
    fn from(e: FieldError) -> Self {
        Error::input(e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_one_line_and_codes_follow_kind() {
        let e = Error::input_at(Path::new("s.json"), "field slots", "value 0:\nmust be > 0");
        assert_eq!(e.to_string(), "s.json: field slots: value 0: must be > 0");
        assert_eq!(e.exit_code(), 2);
        assert_eq!(Error::check("x").exit_code(), 1);
        assert_eq!(Error::internal("x").exit_code(), 3);
        assert!(Error::internal("boom").to_string().contains("bug"));
    }
}
