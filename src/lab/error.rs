//! The lab floor's error: a shard's part that does not fit, a `--shard`
//! that does not parse, a deployed limiter's answer or an epoch that does
//! not read. The caller adds the file, line or field; all are bad input
//! (exit 2).

/// An error of the labs, without the file or field (the caller adds it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LabError {
    /// A shard's part does not fit the others: lengths, keys, or a figure
    /// two shards both give.
    #[error("{0}")]
    PartMismatch(String),
    /// One candidate's part of a shard that does not fit.
    #[error("{candidate}: {source}")]
    Candidate {
        /// The candidate's name.
        candidate: String,
        /// What does not fit.
        source: Box<LabError>,
    },
    /// `--shard` is not `i/n` with `0 <= i < n`.
    #[error("{text:?}: expected i/n with 0 <= i < n <= 4294967295, e.g. 0/4")]
    Shard {
        /// The text given.
        text: String,
    },
    /// What a deployed limiter answered (a log's outcome field) does not
    /// read as admitted or denied.
    #[error("{0}")]
    Outcome(String),
    /// A workload's `epoch` is not an RFC 3339 time from 1970 to 2554.
    #[error("value {value:?}: expected {expected}")]
    Epoch {
        /// The text given.
        value: String,
        /// What was expected (and the parser's reason).
        expected: String,
    },
}

impl From<LabError> for crate::error::Error {
    /// Bad input (exit 2).
    fn from(e: LabError) -> Self {
        crate::error::Error::input(e.to_string())
    }
}
