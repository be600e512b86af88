//! The sizing floor's error: a threshold, or a shard file's evaluation,
//! that does not read. The caller adds the target, flag or file; bad
//! input (exit 2).

/// An error of `size`, without the flag or file (the caller adds it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SizingError {
    /// A target's threshold that is not what its metric takes: what it
    /// takes (`a number, limit, K*limit or limit*K`).
    #[error("{expected}")]
    Threshold {
        /// What the metric takes.
        expected: String,
    },
    /// A shard file's evaluation that the search cannot have made.
    #[error("{shape} ({phase}): not a verification this search makes")]
    NotAVerification {
        /// The shape's label.
        shape: String,
        /// The phase it claims.
        phase: String,
    },
    /// A shard file's phase that is not one of the search's.
    #[error("phase {phase:?}: expected one of {expected}")]
    UnknownPhase {
        /// The phase given.
        phase: String,
        /// The search's phases.
        expected: String,
    },
}

impl From<SizingError> for crate::error::Error {
    /// Bad input (exit 2).
    fn from(e: SizingError) -> Self {
        crate::error::Error::input(e.to_string())
    }
}
