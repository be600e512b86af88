//! Workloads with time: arrival processes that say *when* each request of
//! which key arrives. Every process is seeded, streams its events in time
//! order (memory does not grow with the number of events), and is exact to
//! the nanosecond once seeded: inter-arrival times are drawn as f64 seconds
//! and rounded to whole nanoseconds the same way on every machine.
//!
//! Keys are ids: `0..keys` for the background population (rank 0 busiest
//! under Zipf); flash-crowd and attack keys get ids past the background ones.
//!
//! # What is inside
//! * `arrivals` — [`TimedWorkload`], the arrival processes a scenario
//!   can name, with their key space and event bound.
//! * `validate`: [`TimedWorkload::validate`], each shape's rules in order.
//! * `source`: the draws of those processes (modulated Poisson, thinned
//!   diurnal, a single key, attack keys round-robin), each on its own
//!   seeded stream.
//! * `events` — [`TimedEvents`], the sources merged in time order.
//!
//! # Examples
//! A Poisson workload from its scenario JSON, validated and streamed:
//!
//! ```
//! use ratelab::workload::timed::TimedWorkload;
//! use std::path::Path;
//!
//! let json = r#"{"type": "poisson", "keys": {"type": "zipf", "keys": 100, "s": 1.1},
//!                "rate": 1000, "duration_s": 2}"#;
//! let w: TimedWorkload = serde_json::from_str(json)?;
//! w.validate(Path::new("scenario.json"), "workload")?;
//! assert_eq!(w.key_space(), 100);
//!
//! let first: Vec<(u64, u64)> = w.events(7).take(3).collect();
//! assert_eq!(first.len(), 3);
//! assert!(first.windows(2).all(|p| p[0].0 <= p[1].0)); // in time order
//! assert!(first.iter().all(|&(_, key)| key < 100));
//! assert_eq!(first, w.events(7).take(3).collect::<Vec<_>>()); // seeded
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub(crate) mod arrivals;
pub(crate) mod events;
mod source;
#[cfg(test)]
mod tests;
mod validate;

pub use super::keys::KeyChoice;
pub use arrivals::{TimedWorkload, MAX_TIMED_EVENTS};
pub use events::TimedEvents;
