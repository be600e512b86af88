//! One entry point for every scheduler, and the panic table over thread
//! counts and intervals.

use super::config::{RaceConfig, RaceError, Scheduler};
use super::exhaustive::{explore_exhaustive, ExhaustiveReport};
use super::interleaved::{run_lockstep, run_random, RaceReport};
use crate::model::rate::{Build, RateFixes};
use serde::Serialize;
use std::time::Duration;

/// Either kind of result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum RaceResult {
    /// Lockstep or Random.
    Run(RaceReport),
    /// Exhaustive.
    Exhaustive(ExhaustiveReport),
}

/// Runs `cfg` under `scheduler`.
pub fn run(cfg: &RaceConfig, scheduler: Scheduler) -> Result<RaceResult, RaceError> {
    match scheduler {
        Scheduler::Lockstep => run_lockstep(cfg).map(RaceResult::Run),
        Scheduler::Random { seed } => run_random(cfg, seed).map(RaceResult::Run),
        Scheduler::Exhaustive { max_states } => {
            explore_exhaustive(cfg, max_states).map(RaceResult::Exhaustive)
        }
    }
}

/// One row of the panic table: how many threads panicked, and with which
/// messages.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PanicRow {
    /// Threads.
    pub threads: usize,
    /// Interval in ms.
    pub interval_ms: u64,
    /// Threads that panicked.
    pub panicked: usize,
    /// `(message, threads)` as `sort | uniq -c`.
    pub messages: Vec<(String, usize)>,
}

/// The panic table for 1, 2, 4, 8 threads × 10 ms, 1 s, 900 ms of observing,
/// under Lockstep (`seed = None`) or Random (`Some(seed)`).
pub fn panic_table(
    build: Build,
    fixes: RateFixes,
    seed: Option<u64>,
) -> Result<Vec<PanicRow>, RaceError> {
    let mut rows = Vec::new();
    for interval in [Duration::from_millis(10), Duration::from_secs(1)] {
        for threads in [1usize, 2, 4, 8] {
            let cfg = RaceConfig {
                build,
                fixes,
                ..RaceConfig::first_second_panic(threads, interval)
            };
            let report = match seed {
                None => run_lockstep(&cfg)?,
                Some(seed) => run_random(&cfg, seed)?,
            };
            rows.push(PanicRow {
                threads,
                interval_ms: interval.as_millis() as u64,
                panicked: report.panicked,
                messages: report.panic_messages(),
            });
        }
    }
    Ok(rows)
}
