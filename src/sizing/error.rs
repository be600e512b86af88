//! The sizing floor's error: a threshold, or a shard file's seeds, that
//! does not read. The caller adds the target, flag or file; bad
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
    /// Seeds in a shard file that the shard cannot have replayed (on
    /// another shard, out of order, figures not this job's).
    #[error("{0}")]
    ShardSeeds(String),
}

impl From<SizingError> for crate::error::Error {
    /// Bad input (exit 2).
    fn from(e: SizingError) -> Self {
        crate::error::Error::input(e.to_string())
    }
}
