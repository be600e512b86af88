//! What a race is: the threads, the clock they read, the modelled build, and
//! the scheduler that interleaves them; and why one cannot run.

use crate::clock::{Nanos, MILLI};
use crate::model::estimator::FrequencyEstimator;
use crate::model::rate::{Build, Rate, RateFixes};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// The key every thread observes.
pub(super) const KEY: &[u8] = b"k";

/// Default cap on memoised states per round for [`Scheduler::Exhaustive`].
pub const DEFAULT_MAX_STATES: u64 = 2_000_000;

/// How the threads' steps are interleaved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scheduler {
    /// All loads before any compare-exchange, thread order otherwise.
    Lockstep,
    /// A seeded random interleaving.
    Random {
        /// Scheduler seed.
        seed: u64,
    },
    /// All interleavings (small thread counts only).
    Exhaustive {
        /// Cap on memoised states in one round; exceeding it is an error.
        max_states: u64,
    },
}

impl Scheduler {
    /// The name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            Scheduler::Lockstep => "lockstep",
            Scheduler::Random { .. } => "random",
            Scheduler::Exhaustive { .. } => "exhaustive",
        }
    }
}

/// One race: how many threads observe which Rate, for how long, on what
/// clock, against which build.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RaceConfig {
    /// Number of threads.
    pub threads: usize,
    /// The Rate's interval.
    pub interval: Duration,
    /// How long the threads observe: rounds `0..ceil(duration / round)`.
    pub duration: Nanos,
    /// Virtual time between a thread's consecutive `observe` calls.
    pub round: Nanos,
    /// Thread `i` reads the clock `i × thread_skew` after round start.
    pub thread_skew: Nanos,
    /// Modelled build (which panic message).
    pub build: Build,
    /// Fixed bugs.
    pub fixes: RateFixes,
}

impl RaceConfig {
    /// The first-second panic run: `threads` threads observing a
    /// `Rate::new(interval)` for 900 ms, one call per thread per ms, faithful
    /// release build.
    pub fn first_second_panic(threads: usize, interval: Duration) -> Self {
        RaceConfig {
            threads,
            interval,
            duration: 900 * MILLI,
            round: MILLI,
            thread_skew: 0,
            build: Build::Release,
            fixes: RateFixes::NONE,
        }
    }

    /// Number of rounds.
    pub fn rounds(&self) -> u64 {
        if self.round == 0 {
            0
        } else {
            self.duration.div_ceil(self.round)
        }
    }

    /// Thread `thread`'s clock reading in round `round`.
    pub fn clock(&self, round: u64, thread: usize) -> Nanos {
        round
            .saturating_mul(self.round)
            .saturating_add((thread as u64).saturating_mul(self.thread_skew))
    }

    pub(super) fn validate(&self) -> Result<(), RaceError> {
        if self.threads == 0 {
            return Err(RaceError::NoThreads);
        }
        if self.round == 0 {
            return Err(RaceError::ZeroRound);
        }
        Ok(())
    }

    pub(super) fn new_rate<E: FrequencyEstimator + Default>(&self) -> Rate<E> {
        Rate::from_slots(self.interval, 0, E::default(), E::default())
            .with_build(self.build)
            .with_fixes(self.fixes)
    }
}

/// Why a race could not be run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RaceError {
    /// `threads` is 0.
    NoThreads,
    /// `round` is 0.
    ZeroRound,
    /// Exhaustive exploration is limited to 64 threads (a bit mask).
    TooManyThreads(usize),
    /// Exhaustive exploration exceeded `max_states` in one round.
    StateBudget {
        /// The round being explored.
        round: u64,
        /// The cap.
        max_states: u64,
    },
}

impl std::fmt::Display for RaceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RaceError::NoThreads => write!(f, "a race needs at least one thread"),
            RaceError::ZeroRound => write!(f, "round must be positive"),
            RaceError::TooManyThreads(n) => {
                write!(
                    f,
                    "exhaustive exploration supports at most 64 threads, got {n}"
                )
            }
            RaceError::StateBudget { round, max_states } => write!(
                f,
                "exhaustive exploration exceeded {max_states} states in round {round}; \
                 use fewer threads or the random scheduler"
            ),
        }
    }
}

impl std::error::Error for RaceError {}
