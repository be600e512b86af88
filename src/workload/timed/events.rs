//! The stream of a timed workload: its sources, seeded one by one, merged
//! into one time-ordered sequence of `(time, key)`.

use super::arrivals::TimedWorkload;
use super::source::{exp_gap, Attack, Diurnal, Modulated, Single, Source};
use super::KeyChoice;
use crate::clock::{Nanos, SECOND};
use crate::rng::{derive_seed, sim_rng, SimRng};
use crate::workload::keys::KeySampler;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// The merged, time-ordered event stream of a timed workload.
#[derive(Debug, Clone)]
pub struct TimedEvents {
    sources: Vec<Source>,
    heap: BinaryHeap<Reverse<(Nanos, usize, u64)>>,
    primed: bool,
}

impl TimedEvents {
    pub(super) fn new(w: &TimedWorkload, seed: u64, key_offset: u64) -> Self {
        let mut sources = Vec::new();
        collect_sources(w, seed, key_offset, &mut sources);
        Self {
            sources,
            heap: BinaryHeap::new(),
            primed: false,
        }
    }

    fn pull(&mut self, i: usize) {
        if let Some((t, k)) = self.sources[i].next() {
            self.heap.push(Reverse((secs_to_ns(t), i, k)));
        }
    }
}

impl Iterator for TimedEvents {
    /// (time in ns since the workload's start, key id)
    type Item = (Nanos, u64);

    fn next(&mut self) -> Option<Self::Item> {
        if !self.primed {
            self.primed = true;
            for i in 0..self.sources.len() {
                self.pull(i);
            }
        }
        // Ties in time go to the lower source index: deterministic.
        let Reverse((t, i, k)) = self.heap.pop()?;
        self.pull(i);
        Some((t, k))
    }
}

/// Seconds to whole nanoseconds, rounded the same way on every machine.
fn secs_to_ns(s: f64) -> Nanos {
    // Validated finite and non-negative; saturating cast.
    (s * SECOND as f64).round() as Nanos
}

/// A modulated Poisson source over `keys` with `states` (rate, mean dwell),
/// drawing its first dwell from `rng` at once.
fn modulated(
    keys: &KeyChoice,
    key_offset: u64,
    states: Vec<(f64, f64)>,
    end: f64,
    mut rng: SimRng,
) -> Source {
    let first_dwell = states[0].1;
    let state_end = if first_dwell.is_finite() {
        exp_gap(&mut rng, 1.0 / first_dwell)
    } else {
        f64::INFINITY
    };
    Source::Modulated(Modulated {
        rng,
        keys: KeySampler::new(keys),
        key_offset,
        t: 0.0,
        end,
        states,
        state: 0,
        state_end,
    })
}

/// Appends `w`'s sources to `out`: the background process on stream 0 of
/// `seed`, a flash or attack process on stream 1, a mix's parts on streams
/// of their own with their key ids offset past the earlier parts'.
fn collect_sources(w: &TimedWorkload, seed: u64, key_offset: u64, out: &mut Vec<Source>) {
    let rng = |i: u64| sim_rng(derive_seed(seed, &[i]));
    // The background process, on stream 0.
    let background = |keys: &KeyChoice, states: Vec<(f64, f64)>, end: f64| {
        modulated(keys, key_offset, states, end, rng(0))
    };
    let poisson = |rate: f64| vec![(rate, f64::INFINITY)];
    match w {
        TimedWorkload::Poisson {
            keys,
            rate,
            duration_s,
        } => out.push(background(keys, poisson(*rate), *duration_s)),
        TimedWorkload::OnOff {
            keys,
            rate,
            mean_on_s,
            mean_off_s,
            duration_s,
        } => {
            let states = vec![(*rate, *mean_on_s), (0.0, *mean_off_s)];
            out.push(background(keys, states, *duration_s));
        }
        TimedWorkload::Mmpp {
            keys,
            rates,
            mean_dwell_s,
            duration_s,
        } => {
            let states = vec![(rates[0], mean_dwell_s[0]), (rates[1], mean_dwell_s[1])];
            out.push(background(keys, states, *duration_s));
        }
        TimedWorkload::Diurnal {
            keys,
            base_rate,
            peak_rate,
            period_s,
            duration_s,
        } => out.push(Source::Diurnal(Diurnal {
            rng: rng(0),
            keys: KeySampler::new(keys),
            key_offset,
            t: 0.0,
            end: *duration_s,
            base: *base_rate,
            peak: *peak_rate,
            period: *period_s,
        })),
        TimedWorkload::FlashCrowd {
            keys,
            rate,
            flash_rate,
            flash_start_s,
            flash_duration_s,
            duration_s,
        } => {
            out.push(background(keys, poisson(*rate), *duration_s));
            out.push(Source::Single(Single {
                rng: rng(1),
                key: key_offset + keys.keys(),
                t: *flash_start_s,
                end: (flash_start_s + flash_duration_s).min(*duration_s),
                rate: *flash_rate,
            }));
        }
        TimedWorkload::CardinalityAttack {
            keys,
            rate,
            attack_keys,
            per_key,
            attack_rate,
            attack_start_s,
            duration_s,
        } => {
            out.push(background(keys, poisson(*rate), *duration_s));
            out.push(Source::Attack(Attack {
                rng: rng(1),
                first_key: key_offset + keys.keys(),
                attack_keys: *attack_keys,
                per_key: *per_key,
                sent: 0,
                t: *attack_start_s,
                end: *duration_s,
                rate: *attack_rate,
            }));
        }
        TimedWorkload::Mix { parts } => {
            let mut offset = key_offset;
            for (i, p) in parts.iter().enumerate() {
                collect_sources(p, derive_seed(seed, &[1000 + i as u64]), offset, out);
                offset = offset.saturating_add(p.key_space());
            }
        }
    }
}
