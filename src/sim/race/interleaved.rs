//! The Lockstep and Random schedulers: one interleaving of the threads'
//! steps per round, on a Rate with exact counters.

use super::config::{RaceConfig, RaceError, KEY};
use crate::clock::Nanos;
use crate::model::estimator::{ExactCounter, Fault};
use crate::model::rate::{CasOutcome, ObserveOp, ObserveStep, Rate, ResetStep, StepResult};
use crate::rng::{derive_seed, sim_rng, stream, SimRng};
use rand::Rng;
use serde::Serialize;
use std::collections::BTreeMap;

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
    /// Distinct panic messages with how many threads printed each, as
    /// `sort | uniq -c` counts the threads' output.
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

/// Runs Lockstep (`rng = None`) or Random (`Some`) round by round.
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
