//! Key distributions shared by count and timed workloads: which key each
//! drawn event belongs to.

use crate::rng::SimRng;
use crate::workload::dist::Zipf;
use rand::Rng;
use serde::{Deserialize, Serialize};

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

impl KeyChoice {
    /// The number of distinct keys drawn from.
    pub fn keys(&self) -> u64 {
        match self {
            KeyChoice::Zipf { keys, .. } | KeyChoice::Uniform { keys } => *keys,
        }
    }
}

/// Draws keys from a [`KeyChoice`]: key ids `0..keys`, rank 1 of a Zipf
/// being key 0.
#[derive(Debug, Clone)]
pub(crate) enum KeySampler {
    Zipf(Zipf, u64),
    Uniform(u64),
}

impl KeySampler {
    /// The sampler of `k` (a Zipf that cannot be built, which validation
    /// rules out, falls back to uniform).
    pub(crate) fn new(k: &KeyChoice) -> Self {
        match k {
            KeyChoice::Zipf { keys, s } => match Zipf::new(*keys, *s) {
                Some(z) => KeySampler::Zipf(z, *keys),
                None => KeySampler::Uniform((*keys).max(1)),
            },
            KeyChoice::Uniform { keys } => KeySampler::Uniform((*keys).max(1)),
        }
    }

    /// One key id; a Zipf draw is one rejection-inversion sample (one or
    /// more `u64`), a uniform one one `random_range` over `0..keys`.
    pub(crate) fn sample(&self, rng: &mut SimRng) -> u64 {
        match self {
            KeySampler::Zipf(z, keys) => (z.sample(rng) - 1).min(keys - 1),
            KeySampler::Uniform(keys) => rng.random_range(0..*keys),
        }
    }
}
