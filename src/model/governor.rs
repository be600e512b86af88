//! The real `governor` crate (0.10) as a per-key GCRA limiter: a keyed
//! `RateLimiter` (its hash-map state store) with
//! `Quota::with_period(interval / limit).allow_burst(burst)`, on a virtual
//! clock set to each request's time. No real time is involved: an hour of
//! traffic runs in milliseconds.
//!
//! Two inputs are ours, neither of which a decision depends on:
//! - **The clock** implements governor's `Clock` trait and is *set* to the
//!   request's time (governor's `FakeRelativeClock` can only advance). A
//!   keyed limiter's only state besides the map is its start instant, so a
//!   key's decisions depend on its own requests alone, and the decision lab
//!   may hand it requests grouped by key ([`Admit::keys_independent`]).
//! - **The map's hasher** ([`DenseIdHasher`]): the lab's keys are dense ids,
//!   so the hash keeps the id in its low bits (hashbrown's bucket index) and
//!   a mixed tag in its top 7 (hashbrown's control byte). Keys grouped in id
//!   order then walk the table in order instead of at random. A hash map
//!   decides nothing: governor's GCRA and its `HashMapStateStore` are
//!   unchanged.

use crate::clock::Nanos;
use crate::error::{Error, Result};
use crate::model::{Admit, Decision};
use governor::state::keyed::HashMapStateStore;
use governor::{Quota, RateLimiter};
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Bytes per key of governor's keyed state: the `u32` key (padded) and the
/// `AtomicU64` GCRA timestamp (hash-map overhead not counted).
pub const GOVERNOR_STATE_BYTES: u64 = 16;

type Limiter = RateLimiter<
    u32,
    HashMapStateStore<u32, DenseIdHasher>,
    VirtualClock,
    governor::middleware::NoOpMiddleware<governor::nanos::Nanos>,
>;

/// A governor `Clock` reading a virtual time that the caller sets.
#[derive(Debug, Clone, Default)]
pub struct VirtualClock(Arc<AtomicU64>);

impl VirtualClock {
    /// Makes `now` the clock's time.
    pub fn set(&self, now: Nanos) {
        self.0.store(now, Ordering::Relaxed);
    }
}

impl governor::clock::Clock for VirtualClock {
    type Instant = governor::nanos::Nanos;

    fn now(&self) -> Self::Instant {
        self.0.load(Ordering::Relaxed).into()
    }
}

/// Hashes a dense `u32` id to itself in the low bits and to a mixed 7-bit
/// tag in the top bits: ids in order land in buckets in order, and the
/// tags (hashbrown's control bytes) still tell keys of a probe group apart.
///
/// # Examples
/// ```
/// use ratelab::model::governor::DenseIdHasher;
/// use std::hash::BuildHasher;
/// let h = DenseIdHasher.hash_one(5u32);
/// assert_eq!(h & 0xffff_ffff, 5);
/// assert_ne!(h >> 57, DenseIdHasher.hash_one(6u32) >> 57);
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct DenseIdHasher;

/// The [`DenseIdHasher`]'s state for one value.
#[derive(Debug, Clone, Copy, Default)]
pub struct DenseIdHash(u64);

impl std::hash::BuildHasher for DenseIdHasher {
    type Hasher = DenseIdHash;
    fn build_hasher(&self) -> DenseIdHash {
        DenseIdHash(0)
    }
}

impl std::hash::Hasher for DenseIdHash {
    fn finish(&self) -> u64 {
        let id = self.0 & 0xffff_ffff;
        let tag = crate::rng::mix64(self.0) >> 57;
        (tag << 57) | id
    }
    fn write(&mut self, bytes: &[u8]) {
        // Not reached for `u32` keys (they call `write_u32`); any other
        // bytes still hash to something consistent.
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }
    fn write_u32(&mut self, id: u32) {
        self.0 = u64::from(id);
    }
}

/// governor's keyed GCRA limiter on a virtual clock.
pub struct GovernorKeyed {
    limiter: Limiter,
    clock: VirtualClock,
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
        let clock = VirtualClock::default();
        Ok(Self {
            limiter: RateLimiter::new(quota, HashMapStateStore::default(), clock.clone()),
            clock,
        })
    }
}

impl Admit for GovernorKeyed {
    fn admit(&mut self, key: u32, w: u64, now: Nanos) -> Result<Decision> {
        self.clock.set(now);
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

    /// A key's GCRA state is its own, and the clock is set, not advanced.
    fn keys_independent(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Requests grouped by key (time going back between keys) get the
    /// decisions they get in time order: what `keys_independent` promises.
    #[test]
    fn grouped_by_key_decides_as_in_time_order() {
        let mut reqs = Vec::new();
        let mut x = 7u64;
        let mut t = 0;
        for _ in 0..20_000 {
            x = crate::rng::mix64(x);
            t += x % 3_000_000;
            reqs.push(((x >> 40) as u32 % 300, 1 + (x >> 20) % 3, t));
        }
        let period = Duration::from_millis(10);
        let mut in_time = GovernorKeyed::new(period, 5).unwrap();
        let timed: Vec<bool> = reqs
            .iter()
            .map(|&(k, w, t)| in_time.admit(k, w, t).unwrap().allowed)
            .collect();
        let mut order: Vec<usize> = (0..reqs.len()).collect();
        order.sort_by_key(|&i| (reqs[i].0, i));
        let mut grouped = GovernorKeyed::new(period, 5).unwrap();
        let mut by_key = vec![false; reqs.len()];
        for &i in &order {
            let (k, w, t) = reqs[i];
            by_key[i] = grouped.admit(k, w, t).unwrap().allowed;
        }
        assert_eq!(timed, by_key);
        let allowed = timed.iter().filter(|&&a| a).count();
        assert!(allowed > 1000 && allowed < reqs.len(), "{allowed}");
        assert_eq!(grouped.memory_bytes(0), 300 * GOVERNOR_STATE_BYTES);
    }
}
