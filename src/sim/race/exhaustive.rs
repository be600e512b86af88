//! The Exhaustive scheduler: every interleaving of every round, memoised per
//! round and carried across rounds as a weighted distribution of control
//! states.

use super::config::{RaceConfig, RaceError, KEY};
use crate::model::estimator::{Fault, FrequencyEstimator};
use crate::model::rate::{ObserveOp, Rate, ResetStep, StepResult};
use serde::Serialize;
use std::collections::{BTreeSet, HashMap};
use std::rc::Rc;

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

/// A round's end states, each with its Rate and interleaving count.
type Leaves = HashMap<EndKey, (Rate<NullCounter>, u128)>;

/// A round-boundary state's Rate, normalised interleaving weight, exact
/// interleaving count and per-round-uniform probability.
type Weighted = (Rate<NullCounter>, f64, Option<u128>, f64);

/// The per-round memo and what the exploration has seen so far.
struct Explorer<'a> {
    cfg: &'a RaceConfig,
    round: u64,
    max_states: u64,
    memo: HashMap<MidKey, Rc<Leaves>>,
    faults: BTreeSet<(String, String)>,
    saturated: bool,
}

impl Explorer<'_> {
    /// Every way the threads' remaining steps of this round can interleave
    /// from here: the round's end states with their interleaving counts.
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
        let mut next = ex.next_round(dist, n)?;
        max_round_states = max_round_states.max(ex.memo.len() as u64);
        let total: f64 = next.values().map(|v| v.1).sum();
        if total > 0.0 {
            log10_total += libm::log10(total);
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
    Ok(ExhaustiveReport {
        threads: n,
        rounds,
        interleavings: exact_total,
        log10_interleavings: log10_total,
        outcomes: final_outcomes(&dist, n, ex.saturated),
        faults: ex.faults.into_iter().collect(),
        max_round_states,
    })
}

impl Explorer<'_> {
    /// Explores the current round from every state of `dist` (in key order)
    /// and returns the round's end states, weights not yet normalised.
    fn next_round(
        &mut self,
        dist: HashMap<EndKey, Weighted>,
        n: usize,
    ) -> Result<HashMap<EndKey, Weighted>, RaceError> {
        let mut next: HashMap<EndKey, Weighted> = HashMap::new();
        let mut starts: Vec<_> = dist.into_iter().collect();
        starts.sort_by_key(|(k, _)| *k);
        for (key, (rate, weight, exact, prob)) in starts {
            let ops: Vec<Option<ObserveOp>> = (0..n)
                .map(|i| (key.alive >> i & 1 == 1).then(ObserveOp::new))
                .collect();
            let leaves = self.explore(&rate, &ops, key.alive)?;
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
        Ok(next)
    }
}

/// The final states of `dist`, most probable first.
fn final_outcomes(
    dist: &HashMap<EndKey, Weighted>,
    n: usize,
    saturated: bool,
) -> Vec<ExhaustiveOutcome> {
    let mut outcomes: Vec<ExhaustiveOutcome> = dist
        .iter()
        .map(|(k, (_, share, exact, probability))| ExhaustiveOutcome {
            panicked: (0..n).filter(|&i| k.alive >> i & 1 == 0).collect(),
            last_reset_ms: k.last_reset,
            red_is_current: k.red,
            share: *share,
            probability: *probability,
            interleavings: if saturated { None } else { *exact },
        })
        .collect();
    outcomes.sort_by(|a, b| {
        b.probability
            .total_cmp(&a.probability)
            .then_with(|| b.share.total_cmp(&a.share))
            .then_with(|| a.panicked.cmp(&b.panicked))
            .then_with(|| a.last_reset_ms.cmp(&b.last_reset_ms))
    });
    outcomes
}
