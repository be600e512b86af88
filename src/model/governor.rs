//! The real `governor` crate (0.10) as a per-key GCRA limiter: a keyed
//! `RateLimiter` (its hash-map state store) with
//! `Quota::with_period(interval / limit).allow_burst(burst)`, on governor's
//! own `FakeRelativeClock`, advanced to each request's virtual time. No real
//! time is involved: an hour of traffic runs in milliseconds.

use crate::clock::Nanos;
use crate::error::{Error, Result};
use crate::model::{Admit, Decision};
use governor::clock::FakeRelativeClock;
use governor::state::keyed::HashMapStateStore;
use governor::{Quota, RateLimiter};
use std::num::NonZeroU32;
use std::time::Duration;

/// Bytes per key of governor's keyed state: the `u32` key (padded) and the
/// `AtomicU64` GCRA timestamp (hash-map overhead not counted).
pub const GOVERNOR_STATE_BYTES: u64 = 16;

type Limiter = RateLimiter<
    u32,
    HashMapStateStore<u32>,
    FakeRelativeClock,
    governor::middleware::NoOpMiddleware<governor::nanos::Nanos>,
>;

/// governor's keyed GCRA limiter on a fake clock.
pub struct GovernorKeyed {
    limiter: Limiter,
    clock: FakeRelativeClock,
    last: Nanos,
}

impl GovernorKeyed {
    /// One cell every `period`, bursts of up to `burst` cells.
    ///
    /// # Examples
    /// ```
    /// use ratelab::model::{governor::GovernorKeyed, Admit};
    /// use std::time::Duration;
    /// // 10 per second, burst 2.
    /// let mut g = GovernorKeyed::new(Duration::from_millis(100), 2)?;
    /// assert!(g.admit(1, 1, 0)?.allowed);
    /// assert!(g.admit(1, 1, 0)?.allowed);
    /// assert!(!g.admit(1, 1, 0)?.allowed);
    /// assert!(g.admit(1, 1, 100_000_000)?.allowed);
    /// # Ok::<(), ratelab::error::Error>(())
    /// ```
    pub fn new(period: Duration, burst: u64) -> Result<Self> {
        let bad = |m: String| Error::input(format!("governor quota: {m}"));
        let burst = u32::try_from(burst)
            .ok()
            .and_then(NonZeroU32::new)
            .ok_or_else(|| bad(format!("limit {burst}: expected 1..=4294967295")))?;
        let quota = Quota::with_period(period)
            .ok_or_else(|| bad(format!("interval/limit = {period:?}: expected > 0")))?
            .allow_burst(burst);
        let clock = FakeRelativeClock::default();
        Ok(Self {
            limiter: RateLimiter::hashmap_with_clock(quota, clock.clone()),
            clock,
            last: 0,
        })
    }
}

impl Admit for GovernorKeyed {
    fn admit(&mut self, key: u32, w: u64, now: Nanos) -> Result<Decision> {
        if now > self.last {
            self.clock.advance(Duration::from_nanos(now - self.last));
            self.last = now;
        }
        let Some(n) = u32::try_from(w).ok().and_then(NonZeroU32::new) else {
            return Ok(Decision::DENY);
        };
        Ok(Decision::from_allowed(matches!(
            self.limiter.check_key_n(&key, n),
            Ok(Ok(_))
        )))
    }

    fn memory_bytes(&self, _keys: u64) -> u64 {
        self.limiter.len() as u64 * GOVERNOR_STATE_BYTES
    }
}
