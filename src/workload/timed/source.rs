//! The arrival processes themselves: each source draws its own inter-arrival
//! gaps and keys from its own seeded generator, in time order.

use crate::rng::SimRng;
use crate::workload::dist::{unit, Exp};
use crate::workload::keys::KeySampler;

/// One arrival process's state.
#[derive(Debug, Clone)]
pub(super) enum Source {
    /// Piecewise-constant-rate Poisson with an optional modulating chain.
    Modulated(Modulated),
    /// Thinned non-homogeneous Poisson (diurnal).
    Diurnal(Diurnal),
    /// One key at a constant rate in a window.
    Single(Single),
    /// Attack keys round-robin at a constant Poisson rate in a window.
    Attack(Attack),
}

/// A Poisson process whose rate follows a chain of states with exponential
/// dwell times (one state of infinite dwell is plain Poisson).
#[derive(Debug, Clone)]
pub(super) struct Modulated {
    pub(super) rng: SimRng,
    pub(super) keys: KeySampler,
    pub(super) key_offset: u64,
    pub(super) t: f64,
    pub(super) end: f64,
    /// (rate, mean dwell) per state; one state = plain Poisson.
    pub(super) states: Vec<(f64, f64)>,
    pub(super) state: usize,
    pub(super) state_end: f64,
}

/// Poisson at the peak rate, thinned to `base + (peak − base)·(1 − cos
/// 2πt/period)/2`.
#[derive(Debug, Clone)]
pub(super) struct Diurnal {
    pub(super) rng: SimRng,
    pub(super) keys: KeySampler,
    pub(super) key_offset: u64,
    pub(super) t: f64,
    pub(super) end: f64,
    pub(super) base: f64,
    pub(super) peak: f64,
    pub(super) period: f64,
}

/// One key, Poisson at `rate`, from `t` until `end`.
#[derive(Debug, Clone)]
pub(super) struct Single {
    pub(super) rng: SimRng,
    pub(super) key: u64,
    pub(super) t: f64,
    pub(super) end: f64,
    pub(super) rate: f64,
}

/// `attack_keys` keys with `per_key` requests each, Poisson at `rate` from
/// `t` until `end`.
#[derive(Debug, Clone)]
pub(super) struct Attack {
    pub(super) rng: SimRng,
    pub(super) first_key: u64,
    pub(super) attack_keys: u64,
    pub(super) per_key: u64,
    pub(super) sent: u64,
    pub(super) t: f64,
    pub(super) end: f64,
    pub(super) rate: f64,
}

/// An exponential gap at `rate` (infinite if `rate` is not a valid rate).
pub(super) fn exp_gap(rng: &mut SimRng, rate: f64) -> f64 {
    match Exp::new(rate) {
        Some(e) => e.sample(rng),
        None => f64::INFINITY,
    }
}

impl Source {
    /// The next arrival (seconds since the start, key id), or `None` once
    /// the source is over.
    pub(super) fn next(&mut self) -> Option<(f64, u64)> {
        match self {
            Source::Modulated(s) => s.next(),
            Source::Diurnal(s) => s.next(),
            Source::Single(s) => s.next(),
            Source::Attack(s) => s.next(),
        }
    }
}

impl Modulated {
    fn next(&mut self) -> Option<(f64, u64)> {
        loop {
            let (rate, _) = self.states[self.state];
            let gap = if rate > 0.0 {
                exp_gap(&mut self.rng, rate)
            } else {
                f64::INFINITY
            };
            if self.t + gap < self.state_end {
                self.t += gap;
                if self.t >= self.end {
                    return None;
                }
                let k = self.keys.sample(&mut self.rng) + self.key_offset;
                return Some((self.t, k));
            }
            // Memorylessness: restart the arrival clock at the state change.
            self.t = self.state_end;
            if self.t >= self.end {
                return None;
            }
            self.state = (self.state + 1) % self.states.len();
            let dwell = self.states[self.state].1;
            self.state_end = if dwell.is_finite() {
                self.t + exp_gap(&mut self.rng, 1.0 / dwell)
            } else {
                f64::INFINITY
            };
        }
    }
}

impl Diurnal {
    fn next(&mut self) -> Option<(f64, u64)> {
        loop {
            self.t += exp_gap(&mut self.rng, self.peak);
            if self.t >= self.end {
                return None;
            }
            let rate = self.base
                + (self.peak - self.base)
                    * (1.0 - libm::cos(std::f64::consts::TAU * self.t / self.period))
                    / 2.0;
            let u = unit(&mut self.rng);
            if u * self.peak <= rate {
                return Some((self.t, self.keys.sample(&mut self.rng) + self.key_offset));
            }
        }
    }
}

impl Single {
    fn next(&mut self) -> Option<(f64, u64)> {
        self.t += exp_gap(&mut self.rng, self.rate);
        (self.t < self.end).then_some((self.t, self.key))
    }
}

impl Attack {
    fn next(&mut self) -> Option<(f64, u64)> {
        if self.sent >= self.attack_keys.saturating_mul(self.per_key) {
            return None;
        }
        self.t += exp_gap(&mut self.rng, self.rate);
        if self.t >= self.end {
            return None;
        }
        // Key i sends its per_key requests spread over the attack:
        // round-robin over the attacking keys.
        let k = self.first_key + (self.sent % self.attack_keys);
        self.sent += 1;
        Some((self.t, k))
    }
}
