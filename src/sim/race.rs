//! Concurrency explorer for A4, "the first-second panic" of pingora-limits
//! 0.9.x `Rate::maybe_reset` (see `crate::model::rate`).
//!
//! N virtual threads loop `observe(key, 1)` on one shared `Rate`. Each call
//! is the step machine of `crate::model::rate::ObserveOp`: ReadClock,
//! LoadLastReset (+ the `past_ms` compare), LoadFlag, CompareExchange (+ the
//! loser's `assert!`), ClearPrevious, Flip (+ the two-interval test),
//! ClearStale, Incr. A scheduler decides which thread performs its next step.
//! A thread whose step faults has panicked and stops for good.
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

use crate::clock::{Nanos, MILLI};
use crate::model::estimator::{ExactCounter, Fault, FrequencyEstimator};
use crate::model::rate::{
    Build, CasOutcome, ObserveOp, ObserveStep, Rate, RateFixes, ResetStep, StepResult,
};
use crate::rng::{derive_seed, sim_rng, stream, SimRng};
use rand::Rng;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::rc::Rc;
use std::time::Duration;

/// The key every thread observes.
const KEY: &[u8] = b"k";

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

/// One A4 experiment.
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
    /// The document's experiment: `threads` threads observing a
    /// `Rate::new(interval)` for 900 ms, one call per thread per ms, faithful
    /// release build.
    pub fn a4(threads: usize, interval: Duration) -> Self {
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

    fn validate(&self) -> Result<(), RaceError> {
        if self.threads == 0 {
            return Err(RaceError::NoThreads);
        }
        if self.round == 0 {
            return Err(RaceError::ZeroRound);
        }
        Ok(())
    }

    fn new_rate<E: FrequencyEstimator + Default>(&self) -> Rate<E> {
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

/// A thread's panic.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ThreadPanic {
    /// What the real thread would print.
    pub fault: Fault,
    /// The round of the call that panicked.
    pub round: u64,
    /// That call's clock reading.
    pub clock: Nanos,
}

/// What one thread did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ThreadOutcome {
    /// Completed `observe` calls.
    pub observes: u64,
    /// The panic that stopped it, if any.
    pub panic: Option<ThreadPanic>,
}

/// Result of a Lockstep or Random run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RaceReport {
    /// Scheduler name.
    pub scheduler: &'static str,
    /// Per thread, by id.
    pub threads: Vec<ThreadOutcome>,
    /// Threads that panicked.
    pub panicked: usize,
    /// Compare-exchanges won (window flips).
    pub flips: u64,
    /// Flips that moved `last_reset_time` backwards (release, with skew).
    pub backward_flips: u64,
    /// Rounds run.
    pub rounds: u64,
}

impl RaceReport {
    /// Distinct panic messages with how many threads printed each, as the
    /// document's `sort | uniq -c`.
    pub fn panic_messages(&self) -> Vec<(String, usize)> {
        let mut counts: BTreeMap<String, usize> = BTreeMap::new();
        for p in self.threads.iter().filter_map(|t| t.panic.as_ref()) {
            *counts.entry(p.fault.message.clone()).or_insert(0) += 1;
        }
        counts.into_iter().collect()
    }
}

/// A Lockstep or Random run's mutable state.
struct Sim<'a> {
    cfg: &'a RaceConfig,
    rate: Rate<ExactCounter>,
    ops: Vec<Option<ObserveOp>>,
    outcomes: Vec<ThreadOutcome>,
    round: u64,
    flips: u64,
    backward_flips: u64,
}

impl Sim<'_> {
    /// Thread `i`'s next step; `false` once its call is over (or it is dead).
    fn step(&mut self, i: usize) -> bool {
        let now = self.cfg.clock(self.round, i);
        let Some(op) = self.ops.get_mut(i).and_then(Option::as_mut) else {
            return false;
        };
        let is_cas = op.next_step() == Some(ObserveStep::Reset(ResetStep::CompareExchange));
        let before = self.rate.last_reset_ms();
        let result = op.step(&mut self.rate, now, KEY, 1);
        if is_cas && op.reset().cas_outcome() == Some(CasOutcome::Won) {
            self.flips += 1;
            if self.rate.last_reset_ms() < before {
                self.backward_flips += 1;
            }
        }
        let outcome = &mut self.outcomes[i];
        match result {
            Ok(StepResult::Continue) => true,
            Ok(StepResult::Done(_)) => {
                outcome.observes += 1;
                self.ops[i] = None;
                false
            }
            Err(fault) => {
                outcome.panic = Some(ThreadPanic {
                    fault,
                    round: self.round,
                    clock: now,
                });
                self.ops[i] = None;
                false
            }
        }
    }

    fn next_is_cas(&self, i: usize) -> bool {
        self.ops[i].as_ref().and_then(ObserveOp::next_step)
            == Some(ObserveStep::Reset(ResetStep::CompareExchange))
    }
}

fn run_interleaved(cfg: &RaceConfig, mut rng: Option<SimRng>) -> Result<RaceReport, RaceError> {
    cfg.validate()?;
    let n = cfg.threads;
    let mut sim = Sim {
        cfg,
        rate: cfg.new_rate(),
        ops: vec![None; n],
        outcomes: vec![ThreadOutcome::default(); n],
        round: 0,
        flips: 0,
        backward_flips: 0,
    };
    let rounds = cfg.rounds();
    for round in 0..rounds {
        sim.round = round;
        for i in 0..n {
            sim.ops[i] = sim.outcomes[i].panic.is_none().then(ObserveOp::new);
        }
        match rng.as_mut() {
            None => {
                for i in 0..n {
                    while !sim.next_is_cas(i) && sim.step(i) {}
                }
                for i in 0..n {
                    while sim.step(i) {}
                }
            }
            Some(rng) => {
                let mut active: Vec<usize> = (0..n).filter(|&i| sim.ops[i].is_some()).collect();
                while !active.is_empty() {
                    let k = rng.random_range(0..active.len());
                    if !sim.step(active[k]) {
                        active.swap_remove(k);
                    }
                }
            }
        }
    }
    let panicked = sim.outcomes.iter().filter(|o| o.panic.is_some()).count();
    Ok(RaceReport {
        scheduler: if rng.is_some() { "random" } else { "lockstep" },
        threads: sim.outcomes,
        panicked,
        flips: sim.flips,
        backward_flips: sim.backward_flips,
        rounds,
    })
}

/// Runs the Lockstep scheduler.
pub fn run_lockstep(cfg: &RaceConfig) -> Result<RaceReport, RaceError> {
    run_interleaved(cfg, None)
}

/// Runs the Random scheduler.
pub fn run_random(cfg: &RaceConfig, seed: u64) -> Result<RaceReport, RaceError> {
    run_interleaved(cfg, Some(sim_rng(derive_seed(seed, &[stream::SCHEDULE]))))
}

/// A sketch that counts nothing: the exhaustive explorer only needs the
/// control state of the Rate.
#[derive(Debug, Clone, Default)]
struct NullCounter;

impl FrequencyEstimator for NullCounter {
    fn incr(&mut self, _key: &[u8], value: i64) -> Result<i64, Fault> {
        Ok(value)
    }
    fn decr(&mut self, _key: &[u8], _value: i64) {}
    fn get(&self, _key: &[u8]) -> i64 {
        0
    }
    fn reset(&mut self) {}
    fn memory_bytes(&self) -> u64 {
        0
    }
}

/// Control state at a round boundary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct EndKey {
    alive: u64,
    last_reset: u64,
    red: bool,
}

/// State inside a round, the memo key.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct MidKey {
    ops: Vec<Option<ObserveOp>>,
    alive: u64,
    last_reset: u64,
    red: bool,
}

type Leaves = HashMap<EndKey, (Rate<NullCounter>, u128)>;

/// A round-boundary state's Rate, normalised interleaving weight, exact
/// interleaving count and per-round-uniform probability.
type Weighted = (Rate<NullCounter>, f64, Option<u128>, f64);

struct Explorer<'a> {
    cfg: &'a RaceConfig,
    round: u64,
    max_states: u64,
    memo: HashMap<MidKey, Rc<Leaves>>,
    faults: BTreeSet<(String, String)>,
    saturated: bool,
}

impl Explorer<'_> {
    fn explore(
        &mut self,
        rate: &Rate<NullCounter>,
        ops: &[Option<ObserveOp>],
        alive: u64,
    ) -> Result<Rc<Leaves>, RaceError> {
        let key = MidKey {
            ops: ops.to_vec(),
            alive,
            last_reset: rate.last_reset_ms(),
            red: rate.red_is_current(),
        };
        if let Some(hit) = self.memo.get(&key) {
            return Ok(Rc::clone(hit));
        }
        if self.memo.len() as u64 >= self.max_states {
            return Err(RaceError::StateBudget {
                round: self.round,
                max_states: self.max_states,
            });
        }
        let mut leaves = Leaves::new();
        let mut any = false;
        for i in 0..ops.len() {
            let Some(op) = &ops[i] else { continue };
            any = true;
            let mut rate = rate.clone();
            let mut op = op.clone();
            let mut alive = alive;
            let now = self.cfg.clock(self.round, i);
            let mut result = op.step(&mut rate, now, KEY, 1);
            // ReadClock is local: fuse it with the load that follows.
            if op.reset().next_step() == Some(ResetStep::LoadLastReset) {
                result = op.step(&mut rate, now, KEY, 1);
            }
            let mut next_ops = ops.to_vec();
            match result {
                Ok(StepResult::Continue) => next_ops[i] = Some(op),
                Ok(StepResult::Done(_)) => next_ops[i] = None,
                Err(fault) => {
                    self.faults.insert((fault.message, fault.location));
                    alive &= !(1u64 << i);
                    next_ops[i] = None;
                }
            }
            let sub = self.explore(&rate, &next_ops, alive)?;
            for (end, (r, c)) in sub.iter() {
                let slot = leaves.entry(*end).or_insert_with(|| (r.clone(), 0));
                let sum = slot.1.checked_add(*c);
                self.saturated |= sum.is_none();
                slot.1 = sum.unwrap_or(u128::MAX);
            }
        }
        if !any {
            let end = EndKey {
                alive,
                last_reset: rate.last_reset_ms(),
                red: rate.red_is_current(),
            };
            leaves.insert(end, (rate.clone(), 1));
        }
        let leaves = Rc::new(leaves);
        self.memo.insert(key, Rc::clone(&leaves));
        Ok(leaves)
    }
}

/// One final state of an exhaustive exploration.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExhaustiveOutcome {
    /// Ids of the threads that panicked.
    pub panicked: Vec<usize>,
    /// Final `last_reset_time`.
    pub last_reset_ms: u64,
    /// Final flag.
    pub red_is_current: bool,
    /// Share of all complete interleavings (of the whole run) ending here.
    /// Biased towards paths where threads survive: a live thread multiplies
    /// the interleavings of every later round.
    pub share: f64,
    /// Probability of ending here when each round's interleaving is drawn
    /// uniformly among that round's interleavings (a Markov chain over
    /// rounds; the unbiased figure to compare with Random).
    pub probability: f64,
    /// Number of interleavings ending here, if it fits in a `u128`.
    pub interleavings: Option<u128>,
}

/// Result of an exhaustive exploration.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExhaustiveReport {
    /// Threads.
    pub threads: usize,
    /// Rounds explored.
    pub rounds: u64,
    /// Total interleavings, if it fits in a `u128`.
    pub interleavings: Option<u128>,
    /// log10 of the total number of interleavings.
    pub log10_interleavings: f64,
    /// Final states, most probable first.
    pub outcomes: Vec<ExhaustiveOutcome>,
    /// Distinct `(message, location)` of every fault seen.
    pub faults: Vec<(String, String)>,
    /// Largest number of memoised states in one round.
    pub max_round_states: u64,
}

impl ExhaustiveReport {
    /// Share of interleavings in which exactly `k` threads panicked.
    pub fn share_with_panicked(&self, k: usize) -> f64 {
        self.outcomes
            .iter()
            .filter(|o| o.panicked.len() == k)
            .fold(0.0, |acc, o| acc + o.share)
    }

    /// Number of interleavings in which exactly `k` threads panicked, if
    /// every count fits.
    pub fn interleavings_with_panicked(&self, k: usize) -> Option<u128> {
        self.outcomes
            .iter()
            .filter(|o| o.panicked.len() == k)
            .try_fold(0u128, |acc, o| acc.checked_add(o.interleavings?))
    }

    /// Probability that exactly `k` threads panicked (per-round uniform).
    pub fn probability_with_panicked(&self, k: usize) -> f64 {
        self.outcomes
            .iter()
            .filter(|o| o.panicked.len() == k)
            .fold(0.0, |acc, o| acc + o.probability)
    }

    /// Probability that at least one thread panicked (per-round uniform).
    pub fn probability_any_panic(&self) -> f64 {
        1.0 - self.probability_with_panicked(0)
    }

    /// Share of interleavings in which at least one thread panicked.
    pub fn share_any_panic(&self) -> f64 {
        self.outcomes
            .iter()
            .filter(|o| !o.panicked.is_empty())
            .fold(0.0, |acc, o| acc + o.share)
    }
}

/// Explores every interleaving (see the module doc).
pub fn explore_exhaustive(
    cfg: &RaceConfig,
    max_states: u64,
) -> Result<ExhaustiveReport, RaceError> {
    cfg.validate()?;
    let n = cfg.threads;
    if n > 64 {
        return Err(RaceError::TooManyThreads(n));
    }
    let all: u64 = if n == 64 { u64::MAX } else { (1u64 << n) - 1 };
    let rate: Rate<NullCounter> = cfg.new_rate();
    let start = EndKey {
        alive: all,
        last_reset: rate.last_reset_ms(),
        red: rate.red_is_current(),
    };
    // end state -> (rate, normalised weight, exact count, probability)
    let mut dist: HashMap<EndKey, Weighted> = HashMap::new();
    dist.insert(start, (rate, 1.0, Some(1), 1.0));
    let mut log10_total = 0.0;
    let mut ex = Explorer {
        cfg,
        round: 0,
        max_states,
        memo: HashMap::new(),
        faults: BTreeSet::new(),
        saturated: false,
    };
    let mut max_round_states = 0u64;
    let rounds = cfg.rounds();
    for round in 0..rounds {
        ex.round = round;
        ex.memo.clear();
        let mut next: HashMap<EndKey, Weighted> = HashMap::new();
        let mut starts: Vec<_> = dist.into_iter().collect();
        starts.sort_by_key(|(k, _)| *k);
        for (key, (rate, weight, exact, prob)) in starts {
            let ops: Vec<Option<ObserveOp>> = (0..n)
                .map(|i| (key.alive >> i & 1 == 1).then(ObserveOp::new))
                .collect();
            let leaves = ex.explore(&rate, &ops, key.alive)?;
            let here: f64 = leaves.values().map(|(_, c)| *c as f64).sum();
            for (end, (r, c)) in leaves.iter() {
                let slot = next
                    .entry(*end)
                    .or_insert_with(|| (r.clone(), 0.0, Some(0), 0.0));
                slot.1 += weight * *c as f64;
                slot.3 += prob * *c as f64 / here;
                slot.2 = match (slot.2, exact) {
                    (Some(acc), Some(e)) => e.checked_mul(*c).and_then(|m| acc.checked_add(m)),
                    _ => None,
                };
            }
        }
        max_round_states = max_round_states.max(ex.memo.len() as u64);
        let total: f64 = next.values().map(|v| v.1).sum();
        if total > 0.0 {
            log10_total += total.log10();
            for v in next.values_mut() {
                v.1 /= total;
            }
        }
        dist = next;
    }
    let exact_total = if ex.saturated {
        None
    } else {
        dist.values()
            .try_fold(0u128, |acc, v| acc.checked_add(v.2?))
    };
    let mut outcomes: Vec<ExhaustiveOutcome> = dist
        .iter()
        .map(|(k, (_, share, exact, probability))| ExhaustiveOutcome {
            panicked: (0..n).filter(|&i| k.alive >> i & 1 == 0).collect(),
            last_reset_ms: k.last_reset,
            red_is_current: k.red,
            share: *share,
            probability: *probability,
            interleavings: if ex.saturated { None } else { *exact },
        })
        .collect();
    outcomes.sort_by(|a, b| {
        b.probability
            .total_cmp(&a.probability)
            .then_with(|| b.share.total_cmp(&a.share))
            .then_with(|| a.panicked.cmp(&b.panicked))
            .then_with(|| a.last_reset_ms.cmp(&b.last_reset_ms))
    });
    Ok(ExhaustiveReport {
        threads: n,
        rounds,
        interleavings: exact_total,
        log10_interleavings: log10_total,
        outcomes,
        faults: ex.faults.into_iter().collect(),
        max_round_states,
    })
}

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

/// One row of the A4 table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct A4Row {
    /// Threads.
    pub threads: usize,
    /// Interval in ms.
    pub interval_ms: u64,
    /// Threads that panicked.
    pub panicked: usize,
    /// `(message, threads)` as `sort | uniq -c`.
    pub messages: Vec<(String, usize)>,
}

/// The A4 table for 1, 2, 4, 8 threads × 10 ms, 1 s, 900 ms of observing,
/// under Lockstep (`seed = None`) or Random (`Some(seed)`).
pub fn a4_table(
    build: Build,
    fixes: RateFixes,
    seed: Option<u64>,
) -> Result<Vec<A4Row>, RaceError> {
    let mut rows = Vec::new();
    for interval in [Duration::from_millis(10), Duration::from_secs(1)] {
        for threads in [1usize, 2, 4, 8] {
            let cfg = RaceConfig {
                build,
                fixes,
                ..RaceConfig::a4(threads, interval)
            };
            let report = match seed {
                None => run_lockstep(&cfg)?,
                Some(seed) => run_random(&cfg, seed)?,
            };
            rows.push(A4Row {
                threads,
                interval_ms: interval.as_millis() as u64,
                panicked: report.panicked,
                messages: report.panic_messages(),
            });
        }
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::rate::RateFlavor;

    const MS: Nanos = MILLI;

    #[test]
    fn a4_lockstep_8_threads_10ms_7_panic_release_and_debug() {
        let cfg = RaceConfig::a4(8, Duration::from_millis(10));
        let rel = run_lockstep(&cfg).unwrap();
        assert_eq!(rel.panicked, 7);
        assert_eq!(
            rel.panic_messages(),
            vec![("assertion failed: new >= now - 1000".to_string(), 7)]
        );
        assert_eq!(rel.rounds, 900);
        // Thread 0 wins the first flip (round 10) and runs to the end alone.
        assert_eq!(rel.threads[0].observes, 900);
        assert!(rel.threads[0].panic.is_none());
        for t in &rel.threads[1..] {
            let p = t.panic.as_ref().unwrap();
            assert_eq!((p.round, p.clock), (10, 10 * MS));
            assert_eq!(p.fault.location, "pingora-limits-0.9.0/src/rate.rs:174:17");
            assert_eq!(t.observes, 10);
        }
        assert_eq!(rel.flips, 89); // rounds 10, 20, ..., 890
        let dbg = run_lockstep(&RaceConfig {
            build: Build::Debug,
            ..cfg
        })
        .unwrap();
        assert_eq!(dbg.panicked, 7);
        assert_eq!(
            dbg.panic_messages(),
            vec![("attempt to subtract with overflow".to_string(), 7)]
        );
        let loc = &dbg.threads[7].panic.as_ref().unwrap().fault.location;
        assert_eq!(loc, "pingora-limits-0.9.0/src/rate.rs:174:32");
    }

    #[test]
    fn a4_interval_1s_and_fixed_never_panic() {
        for build in [Build::Release, Build::Debug] {
            for threads in [1, 2, 4, 8] {
                let cfg = RaceConfig {
                    build,
                    ..RaceConfig::a4(threads, Duration::from_secs(1))
                };
                assert_eq!(run_lockstep(&cfg).unwrap().panicked, 0);
                assert_eq!(run_random(&cfg, 1).unwrap().panicked, 0);
                let fixed = RaceConfig {
                    build,
                    fixes: RateFlavor::Fixed.fixes(),
                    ..RaceConfig::a4(threads, Duration::from_millis(10))
                };
                let r = run_lockstep(&fixed).unwrap();
                assert_eq!(r.panicked, 0);
                assert_eq!(r.flips, 89);
                assert_eq!(run_random(&fixed, 1).unwrap().panicked, 0);
            }
        }
    }

    #[test]
    fn a4_table_lockstep() {
        let rows = a4_table(Build::Release, RateFixes::NONE, None).unwrap();
        let got: Vec<(usize, u64, usize)> = rows
            .iter()
            .map(|r| (r.threads, r.interval_ms, r.panicked))
            .collect();
        assert_eq!(
            got,
            vec![
                (1, 10, 0),
                (2, 10, 1),
                (4, 10, 3),
                (8, 10, 7),
                (1, 1000, 0),
                (2, 1000, 0),
                (4, 1000, 0),
                (8, 1000, 0)
            ]
        );
    }

    #[test]
    fn a4_random_is_seeded_and_one_thread_never_panics() {
        let cfg = RaceConfig::a4(8, Duration::from_millis(10));
        let a = run_random(&cfg, 7).unwrap();
        let b = run_random(&cfg, 7).unwrap();
        assert_eq!(a, b);
        // With 89 flip opportunities in 900 ms all but one thread panic.
        assert_eq!(a.panicked, 7);
        let survivors: Vec<usize> = (0..8).filter(|&i| a.threads[i].panic.is_none()).collect();
        assert_eq!(survivors.len(), 1);
        assert_eq!(a.threads[survivors[0]].observes, 900);
        for seed in 0..10 {
            let one = run_random(&RaceConfig::a4(1, Duration::from_millis(10)), seed).unwrap();
            assert_eq!(one.panicked, 0);
            assert_eq!(one.flips, 89);
        }
        let rows = a4_table(Build::Debug, RateFixes::NONE, Some(3)).unwrap();
        let panicked: Vec<usize> = rows.iter().map(|r| r.panicked).collect();
        assert_eq!(panicked, vec![0, 1, 3, 7, 0, 0, 0, 0]);
    }

    #[test]
    fn exhaustive_two_threads_first_flip_counts() {
        // Rounds 0..=10; the flip is due in round 10. Per no-flip round the
        // two 2-step calls interleave C(4,2) = 6 ways. In round 10: 2 × 54
        // interleavings where both load before the first CAS (the loser
        // panics), 2 × 10 where the second loads after it.
        let cfg = RaceConfig {
            duration: 11 * MS,
            ..RaceConfig::a4(2, Duration::from_millis(10))
        };
        let r = explore_exhaustive(&cfg, DEFAULT_MAX_STATES).unwrap();
        let pre = 6u128.pow(10);
        assert_eq!(r.interleavings, Some(pre * 128));
        assert_eq!(r.interleavings_with_panicked(1), Some(pre * 108));
        assert_eq!(r.interleavings_with_panicked(0), Some(pre * 20));
        assert!((r.share_with_panicked(1) - 108.0 / 128.0).abs() < 1e-12);
        assert!((r.probability_with_panicked(1) - 108.0 / 128.0).abs() < 1e-12);
        assert!((r.log10_interleavings - ((pre * 128) as f64).log10()).abs() < 1e-9);
        assert_eq!(
            r.faults,
            vec![(
                "assertion failed: new >= now - 1000".to_string(),
                "pingora-limits-0.9.0/src/rate.rs:174:17".to_string()
            )]
        );
        // symmetric: either thread may be the one that panics
        let only0: f64 = r
            .outcomes
            .iter()
            .filter(|o| o.panicked == vec![0])
            .fold(0.0, |acc, o| acc + o.share);
        assert!((only0 - 54.0 / 128.0).abs() < 1e-12);
    }

    #[test]
    fn exhaustive_agrees_with_lockstep_and_fixed() {
        for threads in 1..=3usize {
            let cfg = RaceConfig {
                duration: 25 * MS,
                ..RaceConfig::a4(threads, Duration::from_millis(10))
            };
            let r = explore_exhaustive(&cfg, DEFAULT_MAX_STATES).unwrap();
            // Lockstep's outcome is one of the interleavings.
            let l = run_lockstep(&cfg).unwrap();
            assert!(r.outcomes.iter().any(|o| o.panicked.len() == l.panicked));
            if threads == 1 {
                assert_eq!(r.share_any_panic(), 0.0);
            } else {
                assert!(r.probability_any_panic() > 0.9, "{threads}: {r:#?}");
                // The interleaving count favours survivors (see `share`).
                assert!(r.share_any_panic() < r.probability_any_panic());
            }
            let fixed = RaceConfig {
                fixes: RateFlavor::Fixed.fixes(),
                ..cfg
            };
            let f = explore_exhaustive(&fixed, DEFAULT_MAX_STATES).unwrap();
            assert_eq!(f.share_any_panic(), 0.0);
            assert_eq!(f.probability_any_panic(), 0.0);
            assert!(f.faults.is_empty());
            // Survivors of a lost race go on to Incr: more interleavings.
            let (fl, rl) = (f.log10_interleavings, r.log10_interleavings);
            if threads == 1 {
                assert_eq!(f.interleavings, Some(1));
                assert_eq!(fl, rl);
            } else {
                assert!(fl > rl + 0.1);
            }
        }
    }

    #[test]
    fn exhaustive_interval_1s_no_panic() {
        let cfg = RaceConfig {
            duration: 15 * MS,
            ..RaceConfig::a4(3, Duration::from_secs(1))
        };
        let r = explore_exhaustive(&cfg, DEFAULT_MAX_STATES).unwrap();
        assert_eq!(r.share_any_panic(), 0.0);
        // 3 two-step calls per round: 6!/(2!^3) = 90 interleavings.
        assert_eq!(r.interleavings, Some(90u128.pow(15)));
        assert_eq!(r.probability_any_panic(), 0.0);
    }

    #[test]
    fn skewed_clock_reaches_the_past_ms_underflow() {
        // Thread 1 reads the clock 1 ms after thread 0: in round 9 it reads
        // 10 ms and flips; thread 0 read 9 ms. If thread 0 loads
        // last_reset_time after thread 1's CAS, 9 - 10 underflows.
        let cfg = RaceConfig {
            duration: 10 * MS,
            thread_skew: MS,
            build: Build::Debug,
            ..RaceConfig::a4(2, Duration::from_millis(10))
        };
        let r = explore_exhaustive(&cfg, DEFAULT_MAX_STATES).unwrap();
        let pre = 6u128.pow(9);
        // round 9: 4 interleavings put thread 0's load after the CAS (it
        // panics at once), 18 before it.
        assert_eq!(r.interleavings_with_panicked(1), Some(pre * 4));
        assert_eq!(r.interleavings, Some(pre * 22));
        assert_eq!(
            r.faults,
            vec![(
                "attempt to subtract with overflow".to_string(),
                "pingora-limits-0.9.0/src/rate.rs:147:23".to_string()
            )]
        );
        // Release: no panic, but the window moves back to 9 ms.
        let rel = explore_exhaustive(
            &RaceConfig {
                build: Build::Release,
                ..cfg
            },
            DEFAULT_MAX_STATES,
        )
        .unwrap();
        assert_eq!(rel.share_any_panic(), 0.0);
        assert!(rel.outcomes.iter().any(|o| o.last_reset_ms == 9));
        assert!(rel.outcomes.iter().any(|o| o.last_reset_ms == 10));
        // And the random scheduler sees backward flips over a longer run.
        let long = RaceConfig {
            build: Build::Release,
            duration: 900 * MS,
            ..cfg
        };
        let total: u64 = (0..20)
            .map(|s| run_random(&long, s).unwrap().backward_flips)
            .sum();
        assert!(total > 0);
        // Fixed: saturating, never backwards.
        let fixed = RaceConfig {
            fixes: RateFlavor::Fixed.fixes(),
            ..long
        };
        let total: u64 = (0..20)
            .map(|s| run_random(&fixed, s).unwrap().backward_flips)
            .sum();
        assert_eq!(total, 0);
    }

    #[test]
    fn budget_and_validation_errors() {
        let cfg = RaceConfig {
            duration: 11 * MS,
            ..RaceConfig::a4(3, Duration::from_millis(10))
        };
        assert_eq!(
            explore_exhaustive(&cfg, 5),
            Err(RaceError::StateBudget {
                round: 0,
                max_states: 5
            })
        );
        assert_eq!(
            run_lockstep(&RaceConfig::a4(0, Duration::from_millis(10))),
            Err(RaceError::NoThreads)
        );
        let zero = RaceConfig {
            round: 0,
            ..RaceConfig::a4(2, Duration::from_millis(10))
        };
        assert_eq!(run_lockstep(&zero), Err(RaceError::ZeroRound));
        assert_eq!(
            explore_exhaustive(&RaceConfig::a4(65, Duration::from_millis(10)), 10),
            Err(RaceError::TooManyThreads(65))
        );
        match run(
            &cfg,
            Scheduler::Exhaustive {
                max_states: DEFAULT_MAX_STATES,
            },
        )
        .unwrap()
        {
            RaceResult::Exhaustive(r) => assert_eq!(r.threads, 3),
            RaceResult::Run(_) => panic!("wrong kind"),
        }
        assert_eq!(Scheduler::Random { seed: 1 }.name(), "random");
    }
}
