//! Workloads with time: arrival processes that say *when* each request of
//! which key arrives. Every process is seeded, streams its events in time
//! order (memory does not grow with the number of events), and is exact to
//! the nanosecond once seeded: inter-arrival times are drawn as f64 seconds
//! and rounded to whole nanoseconds the same way on every machine.
//!
//! Keys are ids: `0..keys` for the background population (rank 0 busiest
//! under Zipf); flash-crowd and attack keys get ids past the background ones.

use crate::clock::{Nanos, SECOND};
use crate::error::{Error, Result};
use crate::rng::{derive_seed, sim_rng, SimRng};
use rand::Rng;
use rand_distr::{Distribution, Exp, Zipf};
use serde::{Deserialize, Serialize};
use std::collections::BinaryHeap;
use std::path::Path;

/// Which key each arrival belongs to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum KeyChoice {
    /// Zipf(s) over `keys` keys.
    Zipf {
        /// Distinct keys.
        keys: u64,
        /// Exponent.
        s: f64,
    },
    /// Each of `keys` keys equally likely.
    Uniform {
        /// Distinct keys.
        keys: u64,
    },
}

/// An arrival process.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum TimedWorkload {
    /// Poisson arrivals at `rate` per second.
    Poisson {
        /// Keys of the arrivals.
        keys: KeyChoice,
        /// Mean arrivals per second.
        rate: f64,
        /// Length of the workload in seconds.
        duration_s: f64,
    },
    /// Exponential on and off periods; Poisson at `rate` while on.
    OnOff {
        /// Keys of the arrivals.
        keys: KeyChoice,
        /// Arrivals per second while on.
        rate: f64,
        /// Mean length of an on period (s).
        mean_on_s: f64,
        /// Mean length of an off period (s).
        mean_off_s: f64,
        /// Length (s).
        duration_s: f64,
    },
    /// Two-state Markov-modulated Poisson process.
    Mmpp {
        /// Keys of the arrivals.
        keys: KeyChoice,
        /// Arrival rate in state 0 and state 1 (per s).
        rates: [f64; 2],
        /// Mean time spent in state 0 and state 1 (s).
        mean_dwell_s: [f64; 2],
        /// Length (s).
        duration_s: f64,
    },
    /// Rate following a day: base + (peak − base)·(1 − cos 2πt/period)/2.
    Diurnal {
        /// Keys of the arrivals.
        keys: KeyChoice,
        /// Lowest rate (per s).
        base_rate: f64,
        /// Highest rate (per s), reached at period/2.
        peak_rate: f64,
        /// Period (s).
        period_s: f64,
        /// Length (s).
        duration_s: f64,
    },
    /// Background traffic plus one key (id = background keys) spiking.
    FlashCrowd {
        /// Background keys.
        keys: KeyChoice,
        /// Background rate (per s).
        rate: f64,
        /// The flash key's rate during the spike (per s).
        flash_rate: f64,
        /// Spike start (s).
        flash_start_s: f64,
        /// Spike length (s).
        flash_duration_s: f64,
        /// Length (s).
        duration_s: f64,
    },
    /// Background traffic plus very many new keys with a few requests each:
    /// the worst case for a count-min sketch.
    CardinalityAttack {
        /// Background keys.
        keys: KeyChoice,
        /// Background rate (per s).
        rate: f64,
        /// Distinct attacking keys.
        attack_keys: u64,
        /// Requests per attacking key.
        per_key: u64,
        /// Attack requests per second.
        attack_rate: f64,
        /// Attack start (s).
        attack_start_s: f64,
        /// Length (s).
        duration_s: f64,
    },
    /// Several workloads superposed (each seeded on its own).
    Mix {
        /// The parts; key ids of part i are offset past those of parts < i.
        parts: Vec<TimedWorkload>,
    },
}

/// Most events a timed workload may produce (guards against typos like a
/// rate of 1e15).
pub const MAX_TIMED_EVENTS: f64 = 1e11;

fn key_count(k: &KeyChoice) -> u64 {
    match k {
        KeyChoice::Zipf { keys, .. } | KeyChoice::Uniform { keys } => *keys,
    }
}

impl TimedWorkload {
    /// Key ids used: background keys plus any extra (flash, attack) keys.
    pub fn key_space(&self) -> u64 {
        match self {
            TimedWorkload::Poisson { keys, .. }
            | TimedWorkload::OnOff { keys, .. }
            | TimedWorkload::Mmpp { keys, .. }
            | TimedWorkload::Diurnal { keys, .. } => key_count(keys),
            TimedWorkload::FlashCrowd { keys, .. } => key_count(keys) + 1,
            TimedWorkload::CardinalityAttack {
                keys, attack_keys, ..
            } => key_count(keys).saturating_add(*attack_keys),
            TimedWorkload::Mix { parts } => parts
                .iter()
                .map(|p| p.key_space())
                .fold(0u64, u64::saturating_add),
        }
    }

    /// An upper estimate of the events it produces (highest rate × length,
    /// summed over the parts of a mix): what the work budget is charged.
    pub fn max_events(&self) -> f64 {
        match self {
            TimedWorkload::Poisson {
                rate, duration_s, ..
            }
            | TimedWorkload::OnOff {
                rate, duration_s, ..
            } => rate * duration_s,
            TimedWorkload::Mmpp {
                rates, duration_s, ..
            } => rates[0].max(rates[1]) * duration_s,
            TimedWorkload::Diurnal {
                peak_rate,
                duration_s,
                ..
            } => peak_rate * duration_s,
            TimedWorkload::FlashCrowd {
                rate,
                flash_rate,
                duration_s,
                ..
            } => (rate + flash_rate) * duration_s,
            TimedWorkload::CardinalityAttack {
                rate,
                attack_rate,
                duration_s,
                ..
            } => (rate + attack_rate) * duration_s,
            TimedWorkload::Mix { parts } => parts.iter().map(TimedWorkload::max_events).sum(),
        }
    }

    /// Checks every parameter; `field` names this workload in the scenario.
    pub fn validate(&self, file: &Path, field: &str) -> Result<()> {
        let bad = |sub: &str, msg: String| {
            Err(Error::input_at(file, format!("field {field}.{sub}"), msg))
        };
        let pos = |sub: &str, v: f64| -> Result<()> {
            if !v.is_finite() || v <= 0.0 {
                return bad(sub, format!("value {v}: expected a finite number > 0"));
            }
            Ok(())
        };
        let nonneg = |sub: &str, v: f64| -> Result<()> {
            if !v.is_finite() || v < 0.0 {
                return bad(sub, format!("value {v}: expected a finite number >= 0"));
            }
            Ok(())
        };
        let keys_ok = |k: &KeyChoice| -> Result<()> {
            match k {
                KeyChoice::Zipf { keys, s } => {
                    if *keys == 0 || *keys > super::counts::MAX_KEYS {
                        return bad(
                            "keys.keys",
                            format!("value {keys}: expected 1..={}", super::counts::MAX_KEYS),
                        );
                    }
                    if !s.is_finite() || *s < 0.0 {
                        return bad(
                            "keys.s",
                            format!("value {s}: expected a finite exponent >= 0"),
                        );
                    }
                }
                KeyChoice::Uniform { keys } => {
                    if *keys == 0 || *keys > super::counts::MAX_KEYS {
                        return bad(
                            "keys.keys",
                            format!("value {keys}: expected 1..={}", super::counts::MAX_KEYS),
                        );
                    }
                }
            }
            Ok(())
        };
        let volume = |rate: f64, secs: f64| -> Result<()> {
            if rate * secs > MAX_TIMED_EVENTS {
                return bad(
                    "rate",
                    format!("{rate}/s for {secs} s is more than {MAX_TIMED_EVENTS:e} events"),
                );
            }
            if secs * 1e9 >= u64::MAX as f64 / 2.0 {
                return bad(
                    "duration_s",
                    format!("value {secs}: too long for nanosecond time"),
                );
            }
            Ok(())
        };
        match self {
            TimedWorkload::Poisson {
                keys,
                rate,
                duration_s,
            } => {
                keys_ok(keys)?;
                pos("rate", *rate)?;
                pos("duration_s", *duration_s)?;
                volume(*rate, *duration_s)
            }
            TimedWorkload::OnOff {
                keys,
                rate,
                mean_on_s,
                mean_off_s,
                duration_s,
            } => {
                keys_ok(keys)?;
                pos("rate", *rate)?;
                pos("mean_on_s", *mean_on_s)?;
                pos("mean_off_s", *mean_off_s)?;
                pos("duration_s", *duration_s)?;
                volume(*rate, *duration_s)
            }
            TimedWorkload::Mmpp {
                keys,
                rates,
                mean_dwell_s,
                duration_s,
            } => {
                keys_ok(keys)?;
                nonneg("rates[0]", rates[0])?;
                nonneg("rates[1]", rates[1])?;
                if rates[0] + rates[1] <= 0.0 {
                    return bad(
                        "rates",
                        "both rates are 0: expected at least one > 0".into(),
                    );
                }
                pos("mean_dwell_s[0]", mean_dwell_s[0])?;
                pos("mean_dwell_s[1]", mean_dwell_s[1])?;
                pos("duration_s", *duration_s)?;
                volume(rates[0].max(rates[1]), *duration_s)
            }
            TimedWorkload::Diurnal {
                keys,
                base_rate,
                peak_rate,
                period_s,
                duration_s,
            } => {
                keys_ok(keys)?;
                nonneg("base_rate", *base_rate)?;
                pos("peak_rate", *peak_rate)?;
                if base_rate > peak_rate {
                    return bad(
                        "base_rate",
                        format!("value {base_rate}: expected <= peak_rate {peak_rate}"),
                    );
                }
                pos("period_s", *period_s)?;
                pos("duration_s", *duration_s)?;
                volume(*peak_rate, *duration_s)
            }
            TimedWorkload::FlashCrowd {
                keys,
                rate,
                flash_rate,
                flash_start_s,
                flash_duration_s,
                duration_s,
            } => {
                keys_ok(keys)?;
                pos("rate", *rate)?;
                pos("flash_rate", *flash_rate)?;
                nonneg("flash_start_s", *flash_start_s)?;
                pos("flash_duration_s", *flash_duration_s)?;
                pos("duration_s", *duration_s)?;
                volume(rate + flash_rate, *duration_s)
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
                keys_ok(keys)?;
                pos("rate", *rate)?;
                if *attack_keys == 0 || *attack_keys > super::counts::MAX_KEYS {
                    return bad(
                        "attack_keys",
                        format!(
                            "value {attack_keys}: expected 1..={}",
                            super::counts::MAX_KEYS
                        ),
                    );
                }
                if *per_key == 0 {
                    return bad("per_key", "value 0: expected at least 1".into());
                }
                pos("attack_rate", *attack_rate)?;
                nonneg("attack_start_s", *attack_start_s)?;
                pos("duration_s", *duration_s)?;
                volume(rate + attack_rate, *duration_s)
            }
            TimedWorkload::Mix { parts } => {
                if parts.is_empty() {
                    return bad("parts", "empty: expected at least one workload".into());
                }
                for (i, p) in parts.iter().enumerate() {
                    p.validate(file, &format!("{field}.parts[{i}]"))?;
                }
                if self.key_space() > super::counts::MAX_KEYS {
                    return bad(
                        "parts",
                        format!(
                            "{} keys in all: expected at most {}",
                            self.key_space(),
                            super::counts::MAX_KEYS
                        ),
                    );
                }
                Ok(())
            }
        }
    }

    /// The events in time order, seeded by `seed`. Call [`Self::validate`] first.
    pub fn events(&self, seed: u64) -> TimedEvents {
        TimedEvents::new(self, seed, 0)
    }
}

fn secs_to_ns(s: f64) -> Nanos {
    // Validated finite and non-negative; saturating cast.
    (s * SECOND as f64).round() as Nanos
}

/// Draws keys from a [`KeyChoice`].
#[derive(Debug, Clone)]
enum KeySampler {
    Zipf(Zipf<f64>, u64),
    Uniform(u64),
}

impl KeySampler {
    fn new(k: &KeyChoice) -> Self {
        match k {
            KeyChoice::Zipf { keys, s } => match Zipf::new(*keys as f64, *s) {
                Ok(z) => KeySampler::Zipf(z, *keys),
                Err(_) => KeySampler::Uniform((*keys).max(1)),
            },
            KeyChoice::Uniform { keys } => KeySampler::Uniform((*keys).max(1)),
        }
    }

    fn sample(&self, rng: &mut SimRng) -> u64 {
        match self {
            KeySampler::Zipf(z, keys) => {
                let r: f64 = z.sample(rng);
                (r as u64).saturating_sub(1).min(keys - 1)
            }
            KeySampler::Uniform(keys) => rng.random_range(0..*keys),
        }
    }
}

/// One arrival process's state.
#[derive(Debug, Clone)]
enum Source {
    /// Piecewise-constant-rate Poisson with an optional modulating chain.
    Modulated {
        rng: SimRng,
        keys: KeySampler,
        key_offset: u64,
        t: f64,
        end: f64,
        /// (rate, mean dwell) per state; one state = plain Poisson.
        states: Vec<(f64, f64)>,
        state: usize,
        state_end: f64,
    },
    /// Thinned non-homogeneous Poisson (diurnal).
    Diurnal {
        rng: SimRng,
        keys: KeySampler,
        key_offset: u64,
        t: f64,
        end: f64,
        base: f64,
        peak: f64,
        period: f64,
    },
    /// One key at a constant rate in a window.
    Single {
        rng: SimRng,
        key: u64,
        t: f64,
        end: f64,
        rate: f64,
    },
    /// Attack keys round-robin at a constant Poisson rate in a window.
    Attack {
        rng: SimRng,
        first_key: u64,
        attack_keys: u64,
        per_key: u64,
        sent: u64,
        t: f64,
        end: f64,
        rate: f64,
    },
}

fn exp_gap(rng: &mut SimRng, rate: f64) -> f64 {
    match Exp::new(rate) {
        Ok(e) => e.sample(rng),
        Err(_) => f64::INFINITY,
    }
}

impl Source {
    fn next(&mut self) -> Option<(f64, u64)> {
        match self {
            Source::Modulated {
                rng,
                keys,
                key_offset,
                t,
                end,
                states,
                state,
                state_end,
            } => loop {
                let (rate, _) = states[*state];
                let gap = if rate > 0.0 {
                    exp_gap(rng, rate)
                } else {
                    f64::INFINITY
                };
                if *t + gap < *state_end {
                    *t += gap;
                    if *t >= *end {
                        return None;
                    }
                    let k = keys.sample(rng) + *key_offset;
                    return Some((*t, k));
                }
                // Memorylessness: restart the arrival clock at the state change.
                *t = *state_end;
                if *t >= *end {
                    return None;
                }
                *state = (*state + 1) % states.len();
                let dwell = states[*state].1;
                *state_end = if dwell.is_finite() {
                    *t + exp_gap(rng, 1.0 / dwell)
                } else {
                    f64::INFINITY
                };
            },
            Source::Diurnal {
                rng,
                keys,
                key_offset,
                t,
                end,
                base,
                peak,
                period,
            } => loop {
                *t += exp_gap(rng, *peak);
                if *t >= *end {
                    return None;
                }
                let rate = *base
                    + (*peak - *base) * (1.0 - (std::f64::consts::TAU * *t / *period).cos()) / 2.0;
                let u: f64 = rng.random();
                if u * *peak <= rate {
                    return Some((*t, keys.sample(rng) + *key_offset));
                }
            },
            Source::Single {
                rng,
                key,
                t,
                end,
                rate,
            } => {
                *t += exp_gap(rng, *rate);
                (*t < *end).then_some((*t, *key))
            }
            Source::Attack {
                rng,
                first_key,
                attack_keys,
                per_key,
                sent,
                t,
                end,
                rate,
            } => {
                if *sent >= attack_keys.saturating_mul(*per_key) {
                    return None;
                }
                *t += exp_gap(rng, *rate);
                if *t >= *end {
                    return None;
                }
                // Key i sends its per_key requests spread over the attack:
                // round-robin over the attacking keys.
                let k = *first_key + (*sent % *attack_keys);
                *sent += 1;
                Some((*t, k))
            }
        }
    }
}

/// The merged, time-ordered event stream of a timed workload.
#[derive(Debug, Clone)]
pub struct TimedEvents {
    sources: Vec<Source>,
    heap: BinaryHeap<std::cmp::Reverse<(Nanos, usize, u64)>>,
    primed: bool,
}

impl TimedEvents {
    fn new(w: &TimedWorkload, seed: u64, key_offset: u64) -> Self {
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
            self.heap.push(std::cmp::Reverse((secs_to_ns(t), i, k)));
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
        let std::cmp::Reverse((t, i, k)) = self.heap.pop()?;
        self.pull(i);
        Some((t, k))
    }
}

fn collect_sources(w: &TimedWorkload, seed: u64, key_offset: u64, out: &mut Vec<Source>) {
    let rng = |i: u64| sim_rng(derive_seed(seed, &[i]));
    let modulated = |keys: &KeyChoice, states: Vec<(f64, f64)>, end: f64, r: SimRng| {
        let mut r = r;
        let first_dwell = states[0].1;
        let state_end = if first_dwell.is_finite() {
            exp_gap(&mut r, 1.0 / first_dwell)
        } else {
            f64::INFINITY
        };
        Source::Modulated {
            rng: r,
            keys: KeySampler::new(keys),
            key_offset,
            t: 0.0,
            end,
            states,
            state: 0,
            state_end,
        }
    };
    match w {
        TimedWorkload::Poisson {
            keys,
            rate,
            duration_s,
        } => {
            out.push(modulated(
                keys,
                vec![(*rate, f64::INFINITY)],
                *duration_s,
                rng(0),
            ));
        }
        TimedWorkload::OnOff {
            keys,
            rate,
            mean_on_s,
            mean_off_s,
            duration_s,
        } => {
            out.push(modulated(
                keys,
                vec![(*rate, *mean_on_s), (0.0, *mean_off_s)],
                *duration_s,
                rng(0),
            ));
        }
        TimedWorkload::Mmpp {
            keys,
            rates,
            mean_dwell_s,
            duration_s,
        } => {
            out.push(modulated(
                keys,
                vec![(rates[0], mean_dwell_s[0]), (rates[1], mean_dwell_s[1])],
                *duration_s,
                rng(0),
            ));
        }
        TimedWorkload::Diurnal {
            keys,
            base_rate,
            peak_rate,
            period_s,
            duration_s,
        } => {
            out.push(Source::Diurnal {
                rng: rng(0),
                keys: KeySampler::new(keys),
                key_offset,
                t: 0.0,
                end: *duration_s,
                base: *base_rate,
                peak: *peak_rate,
                period: *period_s,
            });
        }
        TimedWorkload::FlashCrowd {
            keys,
            rate,
            flash_rate,
            flash_start_s,
            flash_duration_s,
            duration_s,
        } => {
            out.push(modulated(
                keys,
                vec![(*rate, f64::INFINITY)],
                *duration_s,
                rng(0),
            ));
            let end = (flash_start_s + flash_duration_s).min(*duration_s);
            out.push(Source::Single {
                rng: rng(1),
                key: key_offset + key_count(keys),
                t: *flash_start_s,
                end,
                rate: *flash_rate,
            });
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
            out.push(modulated(
                keys,
                vec![(*rate, f64::INFINITY)],
                *duration_s,
                rng(0),
            ));
            out.push(Source::Attack {
                rng: rng(1),
                first_key: key_offset + key_count(keys),
                attack_keys: *attack_keys,
                per_key: *per_key,
                sent: 0,
                t: *attack_start_s,
                end: *duration_s,
                rate: *attack_rate,
            });
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

#[cfg(test)]
mod tests {
    use super::*;

    fn poisson(rate: f64, secs: f64) -> TimedWorkload {
        TimedWorkload::Poisson {
            keys: KeyChoice::Uniform { keys: 10 },
            rate,
            duration_s: secs,
        }
    }

    #[test]
    fn poisson_has_the_right_volume_and_is_sorted_and_seeded() {
        let w = poisson(1000.0, 20.0);
        let ev: Vec<(Nanos, u64)> = w.events(1).collect();
        assert!(
            (ev.len() as f64 - 20_000.0).abs() < 4.0 * 20_000f64.sqrt(),
            "{}",
            ev.len()
        );
        assert!(ev.windows(2).all(|p| p[0].0 <= p[1].0));
        assert!(ev.iter().all(|e| e.0 < 20 * SECOND && e.1 < 10));
        assert_eq!(ev, w.events(1).collect::<Vec<_>>());
        assert_ne!(ev, w.events(2).collect::<Vec<_>>());
    }

    #[test]
    fn on_off_is_burstier_than_poisson() {
        // Same mean volume; on/off concentrates arrivals: more empty 100 ms bins.
        let on_off = TimedWorkload::OnOff {
            keys: KeyChoice::Uniform { keys: 1 },
            rate: 200.0,
            mean_on_s: 0.5,
            mean_off_s: 0.5,
            duration_s: 60.0,
        };
        let empty_bins = |ev: Vec<(Nanos, u64)>| {
            let mut bins = vec![0u32; 600];
            for (t, _) in ev {
                bins[(t / (SECOND / 10)) as usize] += 1;
            }
            bins.iter().filter(|&&b| b == 0).count()
        };
        let a = empty_bins(on_off.events(3).collect());
        let b = empty_bins(poisson(100.0, 60.0).events(3).collect());
        assert!(a > 150 && b < 5, "on/off empty bins {a}, poisson {b}");
    }

    #[test]
    fn flash_crowd_key_spikes_only_in_its_window() {
        let w = TimedWorkload::FlashCrowd {
            keys: KeyChoice::Zipf { keys: 100, s: 1.0 },
            rate: 100.0,
            flash_rate: 1000.0,
            flash_start_s: 2.0,
            flash_duration_s: 1.0,
            duration_s: 5.0,
        };
        let flash: Vec<Nanos> = w.events(5).filter(|e| e.1 == 100).map(|e| e.0).collect();
        assert!(flash.len() > 800 && flash.len() < 1200, "{}", flash.len());
        assert!(flash.iter().all(|&t| (2 * SECOND..3 * SECOND).contains(&t)));
        assert_eq!(w.key_space(), 101);
    }

    #[test]
    fn cardinality_attack_sends_per_key_requests_to_many_new_keys() {
        let w = TimedWorkload::CardinalityAttack {
            keys: KeyChoice::Uniform { keys: 10 },
            rate: 10.0,
            attack_keys: 5000,
            per_key: 3,
            attack_rate: 100_000.0,
            attack_start_s: 1.0,
            duration_s: 2.0,
        };
        let mut per = std::collections::HashMap::new();
        for (_, k) in w.events(9).filter(|e| e.1 >= 10) {
            *per.entry(k).or_insert(0) += 1;
        }
        assert_eq!(per.len(), 5000);
        assert!(per.values().all(|&c| c == 3));
    }

    #[test]
    fn mix_offsets_keys_and_merges_in_time_order() {
        let diurnal = TimedWorkload::Diurnal {
            keys: KeyChoice::Uniform { keys: 5 },
            base_rate: 50.0,
            peak_rate: 100.0,
            period_s: 1.0,
            duration_s: 1.0,
        };
        let w = TimedWorkload::Mix {
            parts: vec![poisson(100.0, 1.0), diurnal],
        };
        let ev: Vec<(Nanos, u64)> = w.events(1).collect();
        assert!(ev.windows(2).all(|p| p[0].0 <= p[1].0));
        assert!(ev.iter().any(|e| e.1 >= 10) && ev.iter().any(|e| e.1 < 10));
        assert!(ev.iter().all(|e| e.1 < 15));
        assert_eq!(w.key_space(), 15);
    }

    #[test]
    fn diurnal_follows_its_curve() {
        let w = TimedWorkload::Diurnal {
            keys: KeyChoice::Uniform { keys: 1 },
            base_rate: 10.0,
            peak_rate: 1000.0,
            period_s: 100.0,
            duration_s: 100.0,
        };
        let ev: Vec<Nanos> = w.events(2).map(|e| e.0).collect();
        let first = ev.iter().filter(|&&t| t < 10 * SECOND).count();
        let middle = ev
            .iter()
            .filter(|&&t| (45 * SECOND..55 * SECOND).contains(&t))
            .count();
        assert!(middle > 5 * first, "peak {middle} vs trough {first}");
    }

    #[test]
    fn validation_names_fields() {
        let e = poisson(f64::NAN, 1.0)
            .validate(Path::new("s.json"), "workload")
            .unwrap_err();
        assert_eq!(
            e.message(),
            "s.json: field workload.rate: value NaN: expected a finite number > 0"
        );
        let e = poisson(1e12, 1000.0)
            .validate(Path::new("s.json"), "workload")
            .unwrap_err();
        assert!(e.message().contains("field workload.rate"), "{e}");
        let e = TimedWorkload::Mix { parts: vec![] }
            .validate(Path::new("s.json"), "w")
            .unwrap_err();
        assert!(e.message().contains("field w.parts: empty"), "{e}");
    }
}
