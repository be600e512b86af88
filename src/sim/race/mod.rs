//! Concurrency explorer for "the first-second panic" of pingora-limits
//! 0.9.x `Rate::maybe_reset` (see `crate::model::rate`).
//!
//! N virtual threads loop `observe(key, 1)` on one shared `Rate`. Each call
//! is the step machine of `crate::model::rate::ObserveOp`: ReadClock,
//! LoadLastReset (+ the `past_ms` compare), LoadFlag, CompareExchange (+ the
//! loser's `assert!`), ClearPrevious, Flip (+ the two-interval test),
//! ClearStale, Incr. A scheduler decides which thread performs its next step.
//! A thread whose step faults has panicked and stops for good.
//!
//! # What is inside
//! * `config` — [`RaceConfig`] (threads, interval, clock, build),
//!   [`Scheduler`] and [`RaceError`].
//! * `interleaved` — the Lockstep and Random schedulers
//!   ([`run_lockstep`], [`run_random`], [`RaceReport`]).
//! * `exhaustive` — every interleaving ([`explore_exhaustive`],
//!   [`ExhaustiveReport`]).
//! * `table` — [`run`] for any scheduler, and [`panic_table`], the panics
//!   over thread counts and intervals.
//!
//! # Time model
//!
//! The run is a sequence of *rounds*. In round `r` every live thread performs
//! exactly one `observe`, and thread `i`'s `ReadClock` returns
//! `r × round + i × thread_skew` (the Rate is created at 0). Rounds are
//! barriers: no thread starts round `r + 1` before all have finished round
//! `r`, which models threads spinning at the same speed. With the default
//! `round` of 1 ms, "8 threads observing for 900 ms" is 900 rounds, rounds
//! 0..=899, and a 10 ms Rate is due to flip in rounds 10, 20, …, 890.
//! Within a round the scheduler interleaves the threads' steps:
//!
//! * [`Scheduler::Lockstep`]: every thread, in id order, runs up to (not
//!   including) its compare-exchange, or to the end of its call if no flip is
//!   due; then every thread, in id order, runs to the end. So at each flip
//!   opportunity all threads load `last_reset_time` before anyone swaps it:
//!   the worst case the real 8-thread run keeps hitting.
//! * [`Scheduler::Random`]: at each step a uniformly chosen thread among those
//!   that have not finished this round's call (ChaCha8, seeded with
//!   `derive_seed(seed, [stream::SCHEDULE])`).
//! * [`Scheduler::Exhaustive`]: every interleaving of every round, counted.
//!   `ReadClock` is thread-local in this time model (its value does not
//!   depend on the interleaving), so it is executed together with the
//!   following load and interleavings are counted over the shared-memory
//!   steps only. The control flow of `maybe_reset` depends only on
//!   `last_reset_time`, the flag and the clock, never on the counts, so the
//!   exploration runs on a count-free Rate, is memoised per round on the
//!   threads' step states, and is carried across rounds as a distribution
//!   over (live threads, `last_reset_time`, flag) weighted by the number of
//!   interleavings reaching it. Two measures are reported: the share of all
//!   complete interleavings of the run (exact counts while they fit in a
//!   `u128`), which favours paths where threads survive because every live
//!   thread multiplies the interleavings of each later round, and the
//!   probability when each round's interleaving is drawn uniformly from that
//!   round's interleavings, which is the figure to compare with Random.
//!
//! With `thread_skew = 0` all threads of a round read the same millisecond.
//! A positive skew lets a thread read an older clock than a thread that
//! flips before it loads `last_reset_time`, which reaches the `now -
//! last_reset` underflow at rate.rs:147 (debug panic; release moves the
//! window backwards, counted as `backward_flips`).
//!
//! Lockstep and Random run on a Rate with exact counters: the counts cannot
//! change which thread panics, and exact counts keep `observes` meaningful.
//!
//! # Examples
//! Eight threads on a 10 ms Rate, all loading before anyone swaps: seven
//! of them panic at the first flip.
//!
//! ```
//! use ratelab::sim::race::{run_lockstep, RaceConfig};
//! use std::time::Duration;
//!
//! let cfg = RaceConfig::first_second_panic(8, Duration::from_millis(10));
//! let report = run_lockstep(&cfg)?;
//! assert_eq!(report.panicked, 7);
//! # Ok::<(), ratelab::sim::race::RaceError>(())
//! ```

pub(crate) mod config;
pub(crate) mod exhaustive;
pub(crate) mod interleaved;
pub(crate) mod table;
#[cfg(test)]
mod tests;

pub use config::{RaceConfig, RaceError, Scheduler, DEFAULT_MAX_STATES};
pub use exhaustive::{explore_exhaustive, ExhaustiveOutcome, ExhaustiveReport};
pub use interleaved::{run_lockstep, run_random, RaceReport, ThreadOutcome, ThreadPanic};
pub use table::{panic_table, run, PanicRow, RaceResult};
