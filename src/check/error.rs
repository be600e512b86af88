//! The check floor's error: a scenario's `expect` or `tolerance` that
//! does not parse.

/// What is wrong in a scenario's `expect` or `tolerance`: the field
/// (`expect."rows[0].mean"`) and the rule. [`Spec::from_scenario`](super::Spec::from_scenario)
/// adds the file; bad input (exit 2).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("field {field}: {rule}")]
pub struct SpecError {
    /// `expect`, `tolerance`, or one entry of them.
    pub field: String,
    /// What is wrong there.
    pub rule: RuleError,
}

/// One rule that does not parse: its path, condition or tolerance.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuleError {
    /// `expect` or `tolerance` is not an object.
    #[error("value {value}: expected an object of \"path\": condition")]
    NotAnObject {
        /// The value given (JSON).
        value: String,
    },
    /// A path pattern that does not parse.
    #[error("path: {0}")]
    Path(#[from] PathError),
    /// A condition that does not parse.
    #[error(
        "condition {text:?}: expected \">= N\", \"<= N\", \"> N\", \"< N\", \"== X\", \"!= X\", \"~ N ± T\" (T may end in %) or a bare number"
    )]
    Condition {
        /// The condition as written (JSON for a non-string).
        text: String,
    },
    /// A tolerance that does not parse.
    #[error(
        "value {value}: expected a relative tolerance (0.05 or \"5%\"), an absolute one (\"±3\" or \"+-3\") or \"ignore\""
    )]
    Tolerance {
        /// The value given (JSON).
        value: String,
    },
}

/// A path pattern (`rows[hashes=4].mean`) that does not parse; positions
/// are characters from 1.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    /// `a..b` or a leading `.`.
    #[error("empty segment at character {0}")]
    EmptySegment(usize),
    /// A `[` without its `]`.
    #[error("'[' at character {0} is never closed")]
    Unclosed(usize),
    /// A `]` without its `[`.
    #[error("unexpected ']' at character {0}")]
    UnexpectedClose(usize),
    /// A name right after `]`.
    #[error("expected '.' or '[' after ']' at character {0}")]
    AfterBracket(usize),
    /// A trailing `.`.
    #[error("ends with '.'")]
    TrailingDot,
    /// Nothing at all.
    #[error("empty path")]
    Empty,
    /// A bracket that is not `[N]`, `[*]` or `[field=value,...]`.
    #[error("[{inner}]: {problem}")]
    Bracket {
        /// Its text between the brackets.
        inner: String,
        /// What is wrong.
        problem: &'static str,
    },
}

impl From<SpecError> for crate::error::Error {
    /// Bad input (exit 2), without the file.
    fn from(e: SpecError) -> Self {
        crate::error::Error::input(e.to_string())
    }
}
