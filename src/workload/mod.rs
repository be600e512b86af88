//! Workloads: what arrives, and (for timed workloads) when.
//!
//! A *count workload* ([`CountWorkload`]) says how many events each key gets
//! and yields them as a stream of key ids in a seeded random order. Keys are
//! numbered `0..keys` by rank (key 0 is the heaviest for the skewed shapes);
//! a key's bytes — what the sketches hash — are its id as 8 little-endian
//! bytes, or its name when the counts come from a CSV file.
//!
//! Streams never materialise the events: memory is proportional to the number
//! of keys, not events. A run's per-key counts come first (exact, or for a
//! sampled shape a multinomial drawn directly, O(keys)); the stream is those
//! counts in a uniformly random order, shuffled in bounded chunks. So
//! order-independent consumers can take the counts ([`Workload::counts`])
//! and skip the stream, with the same result.
//!
//! # What is inside
//! * `counts` — count workloads ([`CountWorkload`] → [`Workload`]), their
//!   CSV import and `WorkloadSummary`.
//! * [`timed`] — arrival processes in virtual time
//!   ([`TimedWorkload`](timed::TimedWorkload)).
//! * [`trace`] — timed events from and to users' log files.
//! * [`keys`] — the key distributions ([`KeyChoice`]) both kinds draw from.
//! * [`shuffle`] — counts into a shuffled stream in bounded chunks, and the
//!   multinomial counts of a sampled workload.
//! * [`binomial`] — the portable binomial sampler both use.
//!
//! # Examples
//! A count workload from its scenario JSON, built and streamed:
//!
//! ```
//! use ratelab::workload::CountWorkload;
//! use std::path::Path;
//!
//! let json = r#"{"type": "harmonic", "keys": 3, "top": 6, "min": 1}"#;
//! let shape: CountWorkload = serde_json::from_str(json)?;
//! let w = shape.build(Path::new("scenario.json"), "workload")?;
//! assert_eq!(w.exact_counts(), Some(&[6, 3, 2][..]));
//!
//! let mut seen = [0u64; 3];
//! w.for_each_event(7, |key| seen[key as usize] += 1);
//! assert_eq!(seen, [6, 3, 2]); // every event once, in a seeded order
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! A timed workload is built the same way; see [`timed`] for one drawn
//! event by event.

pub mod binomial;
pub(crate) mod counts;
pub mod dist;
pub mod keys;
pub mod shuffle;
pub mod timed;
pub mod trace;

pub use counts::{CountWorkload, KeyCounts, Workload};
pub use keys::KeyChoice;
