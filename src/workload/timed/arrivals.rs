//! What a timed workload is: the arrival processes a scenario can name, and
//! the facts about them that do not need a draw (key space, event bound).

use super::events::TimedEvents;
use super::KeyChoice;
use serde::{Deserialize, Serialize};

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

impl TimedWorkload {
    /// Key ids used: background keys plus any extra (flash, attack) keys.
    pub fn key_space(&self) -> u64 {
        match self {
            TimedWorkload::Poisson { keys, .. }
            | TimedWorkload::OnOff { keys, .. }
            | TimedWorkload::Mmpp { keys, .. }
            | TimedWorkload::Diurnal { keys, .. } => keys.keys(),
            TimedWorkload::FlashCrowd { keys, .. } => keys.keys() + 1,
            TimedWorkload::CardinalityAttack {
                keys, attack_keys, ..
            } => keys.keys().saturating_add(*attack_keys),
            TimedWorkload::Mix { parts } => parts
                .iter()
                .map(|p| p.key_space())
                .fold(0u64, u64::saturating_add),
        }
    }

    /// Its length in seconds (the longest part of a mix).
    pub fn duration_s(&self) -> f64 {
        match self {
            TimedWorkload::Mix { parts } => parts
                .iter()
                .map(TimedWorkload::duration_s)
                .fold(0.0, f64::max),
            _ => self.peak_rate_and_length().1,
        }
    }

    /// An upper estimate of the events it produces (highest rate × length,
    /// summed over the parts of a mix): what the work budget is charged.
    pub fn max_events(&self) -> f64 {
        match self {
            TimedWorkload::Mix { parts } => parts.iter().map(TimedWorkload::max_events).sum(),
            _ => {
                let (rate, secs) = self.peak_rate_and_length();
                rate * secs
            }
        }
    }

    /// The highest total arrival rate (per s) and the length (s) of a
    /// workload that is not a mix; `(0, 0)` for a mix.
    pub(super) fn peak_rate_and_length(&self) -> (f64, f64) {
        match self {
            TimedWorkload::Poisson {
                rate, duration_s, ..
            }
            | TimedWorkload::OnOff {
                rate, duration_s, ..
            } => (*rate, *duration_s),
            TimedWorkload::Mmpp {
                rates, duration_s, ..
            } => (rates[0].max(rates[1]), *duration_s),
            TimedWorkload::Diurnal {
                peak_rate,
                duration_s,
                ..
            } => (*peak_rate, *duration_s),
            TimedWorkload::FlashCrowd {
                rate,
                flash_rate,
                duration_s,
                ..
            } => (rate + flash_rate, *duration_s),
            TimedWorkload::CardinalityAttack {
                rate,
                attack_rate,
                duration_s,
                ..
            } => (rate + attack_rate, *duration_s),
            TimedWorkload::Mix { .. } => (0.0, 0.0),
        }
    }

    /// The events in time order, seeded by `seed`. Call [`Self::validate`] first.
    pub fn events(&self, seed: u64) -> TimedEvents {
        TimedEvents::new(self, seed, 0)
    }
}
