//! pingora-limits `Rate` used as an admission limiter, in the two patterns
//! people deploy:
//!
//! * [`RateMode::Docs`]: `observe(key, w) > limit → deny`, the pingora
//!   docs' rate-limiting example. Every request is counted (denied ones
//!   too), in fixed windows that flip on calls and are shared by all keys.
//! * [`RateMode::Proportional`]: `prev·(1 − fraction) + curr + w − 1 ≥ limit
//!   → deny`, from `rate_with`'s components (=
//!   `PROPORTIONAL_RATE_ESTIMATE_CALC_FN × interval_s`, computed without the
//!   round trip through a float division). Only admitted requests are
//!   observed: a sliding-window limiter (counting denied ones too would keep
//!   an abusive key locked out forever).
//!
//! The counters are the count-min sketch ([`Estimator`]) or exact per-key
//! counters ([`DenseExact`]) for a collision-free reference.

use crate::clock::Nanos;
use crate::error::{Error, Result};
use crate::model::estimator::{Estimator, EstimatorConfig, Fault, FrequencyEstimator};
use crate::model::exact::{DenseExact, EXACT_COUNTER_BYTES};
use crate::model::rate::Rate;
use crate::model::{Admit, Decision};
use std::time::Duration;

/// How a [`RateLimiter`] decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RateMode {
    /// The docs' pattern: observe, then compare.
    Docs,
    /// The proportional (sliding-window) estimate; observe if admitted.
    Proportional,
}

/// `Rate` deciding requests against `limit` per interval.
pub struct RateLimiter<E: FrequencyEstimator> {
    rate: Rate<E>,
    mode: RateMode,
    limit: i64,
    /// Peak keys alive in both windows (exact counters only).
    peak_live: u64,
}

fn fault(f: Fault) -> Error {
    Error::internal(format!("pingora Rate model fault: {f}"))
}

impl RateLimiter<Estimator> {
    /// A limiter on a `cfg` sketch per window, hash rows seeded from `seed`.
    ///
    /// # Examples
    /// ```
    /// use ratelab::model::estimator::EstimatorConfig;
    /// use ratelab::model::rate_limiter::{RateLimiter, RateMode};
    /// use ratelab::model::Admit;
    /// use std::time::Duration;
    /// let mut l = RateLimiter::sketch(RateMode::Docs, 2, Duration::from_secs(1),
    ///                                 EstimatorConfig::new(4, 1024), 1);
    /// assert!(l.admit(0, 1, 0)?.allowed);
    /// assert!(l.admit(0, 1, 1)?.allowed);
    /// assert!(!l.admit(0, 1, 2)?.allowed); // third in the window: 3 > 2
    /// assert_eq!(l.memory_bytes(1), 2 * 4 * 1024 * 8); // both windows
    /// # Ok::<(), ratelab::error::Error>(())
    /// ```
    pub fn sketch(
        mode: RateMode,
        limit: u64,
        interval: Duration,
        cfg: EstimatorConfig,
        seed: u64,
    ) -> Self {
        Self {
            rate: Rate::new_with_estimator_config(interval, 0, cfg, seed),
            mode,
            limit: limit as i64,
            peak_live: 0,
        }
    }
}

impl RateLimiter<DenseExact> {
    /// A limiter on exact per-key counters.
    pub fn exact(mode: RateMode, limit: u64, interval: Duration) -> Self {
        Self {
            rate: Rate::from_slots(interval, 0, DenseExact::default(), DenseExact::default()),
            mode,
            limit: limit as i64,
            peak_live: 0,
        }
    }
}

impl<E: FrequencyEstimator> RateLimiter<E> {
    fn decide(&mut self, key: u32, w: u64, now: Nanos) -> Result<bool> {
        let kb = key.to_le_bytes();
        let w = w as i64;
        Ok(match self.mode {
            RateMode::Docs => self.rate.observe(&kb, w, now).map_err(fault)? <= self.limit,
            RateMode::Proportional => {
                let c = self.rate.components(&kb, now).map_err(fault)?;
                let est = c.prev_samples as f64 * (1. - c.current_interval_fraction)
                    + c.curr_samples as f64;
                let allow = est + ((w - 1) as f64) < (self.limit as f64);
                if allow {
                    self.rate.observe(&kb, w, now).map_err(fault)?;
                }
                allow
            }
        })
    }
}

impl Admit for RateLimiter<Estimator> {
    fn admit(&mut self, key: u32, w: u64, now: Nanos) -> Result<Decision> {
        self.decide(key, w, now).map(Decision::from_allowed)
    }

    /// Both windows' sketches.
    fn memory_bytes(&self, _keys: u64) -> u64 {
        self.rate.current_slot().memory_bytes() + self.rate.previous_slot().memory_bytes()
    }
}

impl Admit for RateLimiter<DenseExact> {
    fn admit(&mut self, key: u32, w: u64, now: Nanos) -> Result<Decision> {
        let d = self.decide(key, w, now)?;
        let live = self.rate.current_slot().live_keys() + self.rate.previous_slot().live_keys();
        self.peak_live = self.peak_live.max(live);
        Ok(Decision::from_allowed(d))
    }

    /// Counters of the keys alive in the two windows, at the peak.
    fn memory_bytes(&self, _keys: u64) -> u64 {
        self.peak_live * EXACT_COUNTER_BYTES
    }
}
