//! Workloads: what arrives, and (for timed workloads) when.
//!
//! A *count workload* ([`CountWorkload`]) says how many events each key gets
//! and yields them as a stream of key ids in a seeded random order. Keys are
//! numbered `0..keys` by rank (key 0 is the heaviest for the skewed shapes);
//! a key's bytes — what the sketches hash — are its id as 8 little-endian
//! bytes, or its name when the counts come from a CSV file.
//!
//! Streams never materialise the events: memory is proportional to the number
//! of keys, not events (a shuffled multiset is drawn without replacement with a
//! Fenwick tree; sampled shapes draw each event independently).

pub mod counts;
pub mod fenwick;
pub mod timed;
pub mod trace;

pub use counts::{CountWorkload, KeyCounts, Workload};
