//! pingora-limits' `Inflight` and its `Guard`, modelled from `pingora-limits`
//! 0.9.0/0.9.1 `src/inflight.rs` (identical in both releases).
//!
//! The real `Inflight` is an `Arc<Estimator>` of 4 × 8192 plus its *own*
//! `RandomState`. `incr(key, v)` hashes the key once with that hasher into a
//! `u64` id ("store the hash instead of the actual key to save space"),
//! builds a `Guard { estimator, id, value: v }`, calls `guard.incr()` (the
//! estimator hashes the *id* again, once per row) and returns `(guard,
//! estimate)`. Dropping the guard runs `estimator.decr(id, value)` once.
//!
//! Facts reproduced here:
//!
//! * Two hashing stages: key bytes → id with the Inflight's hasher, then the
//!   id's 8 little-endian bytes into the sketch rows (the real `u64: Hash`
//!   feeds the same 8 bytes to ahash). Two keys whose ids collide are one key
//!   forever, whatever the sketch size.
//! * `Guard::incr` adds `value` again but the drop subtracts it once, so each
//!   extra `Guard::incr` leaks `value` for good (the guard leak: 1, 2, then 2).
//! * Drops happen at virtual times in a simulation, so a guard is an explicit
//!   handle, consumed by [`Inflight::drop_guard`]. Forgetting to call it is
//!   `std::mem::forget` on the real guard (nothing is subtracted); the type
//!   is `#[must_use]` and not `Clone`, so a guard can be dropped at most once.
//! * If the sketch's `incr` panics inside `Inflight::incr` (0.9.0 debug
//!   overflow), the guard is a local of that frame and unwinding drops it:
//!   `decr(id, value)` runs on *every* row although only the first row was
//!   added to. The model applies that decrement before returning the fault.
//!
//! A guard does not remember which `Inflight` it came from (the real one
//! holds the `Arc`); passing it to another instance is the caller's bug.

use crate::hash::{HasherKind, RowHasher};
use crate::model::estimator::{Estimator, EstimatorConfig, Fault, FrequencyEstimator};

/// Rows of the real Inflight's sketch (`HASHES` in inflight.rs).
pub const INFLIGHT_HASHES: usize = 4;
/// Counters per row of the real Inflight's sketch (`SLOTS` in inflight.rs).
pub const INFLIGHT_SLOTS: usize = 8192;

/// The model of `Inflight`.
///
/// # Examples
///
/// The guard's leak: `Guard::incr` adds the guard's value again, but dropping
/// the guard subtracts it once.
///
/// ```
/// use ratelab::model::inflight::Inflight;
///
/// let mut f = Inflight::new(1);
/// let (g, n) = f.incr(b"k", 1).unwrap();
/// assert_eq!(n, 1);
/// assert_eq!(f.guard_incr(&g).unwrap(), 2);
/// f.drop_guard(g);
/// assert_eq!(f.estimate(b"k"), 1); // nothing is in flight, yet one is counted
/// ```
#[derive(Debug, Clone)]
pub struct Inflight<E = Estimator> {
    estimator: E,
    hasher: RowHasher,
}

/// The model of `Guard`: the key's id and the value to subtract on drop.
#[must_use = "a guard that is never passed to Inflight::drop_guard leaks its value"]
#[derive(Debug, PartialEq, Eq)]
pub struct Guard {
    id: u64,
    value: i64,
}

impl Guard {
    /// The key's hash under the Inflight's own hasher.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The value added by `incr` and subtracted on drop.
    pub fn value(&self) -> i64 {
        self.value
    }

    /// The bytes the sketch hashes for this guard (the id, little-endian).
    fn id_bytes(&self) -> [u8; 8] {
        self.id.to_le_bytes()
    }
}

impl Inflight<Estimator> {
    /// `Inflight::new()`: a 4 × 8192 sketch with the portable hasher. The
    /// real sketch rows and the real key hasher are independently random;
    /// here the sketch is seeded with `derive_seed(seed, [0])` and the key
    /// hasher with `derive_seed(seed, [1])`.
    pub fn new(seed: u64) -> Self {
        Self::with_config(EstimatorConfig::new(INFLIGHT_HASHES, INFLIGHT_SLOTS), seed)
    }

    /// An Inflight with any sketch shape, hasher family and overflow rule
    /// (the key hasher uses the same family as the sketch).
    pub fn with_config(config: EstimatorConfig, seed: u64) -> Self {
        let estimator = Estimator::new(config, crate::rng::derive_seed(seed, &[0]));
        let hasher = RowHasher::new(config.hasher, crate::rng::derive_seed(seed, &[1]));
        Self::from_parts(estimator, hasher)
    }
}

impl<E: FrequencyEstimator> Inflight<E> {
    /// An Inflight over a given (empty) counter and key hasher.
    pub fn from_parts(estimator: E, hasher: RowHasher) -> Self {
        Inflight { estimator, hasher }
    }

    /// The key hasher's family.
    pub fn hasher_kind(&self) -> HasherKind {
        match self.hasher {
            RowHasher::Xxh3 { .. } => HasherKind::Xxh3,
            RowHasher::AHash(_) => HasherKind::AHash,
        }
    }

    /// The sketch (for measurement; not part of the real API).
    pub fn estimator(&self) -> &E {
        &self.estimator
    }

    /// `hash(key, &self.hasher)`: the id a guard of `key` stores.
    pub fn key_id(&self, key: &[u8]) -> u64 {
        self.hasher.hash(key)
    }

    /// `Inflight::incr(key, value)`: a guard and the estimate after adding.
    pub fn incr(&mut self, key: &[u8], value: i64) -> Result<(Guard, i64), Fault> {
        let guard = Guard {
            id: self.key_id(key),
            value,
        };
        match self.estimator.incr(&guard.id_bytes(), value) {
            Ok(estimate) => Ok((guard, estimate)),
            Err(fault) => {
                // Unwinding drops the local guard: Guard::drop runs.
                self.drop_guard(guard);
                Err(fault)
            }
        }
    }

    /// `Guard::incr()`: adds the guard's value again (not undone by the
    /// drop: the guard leak).
    pub fn guard_incr(&mut self, guard: &Guard) -> Result<i64, Fault> {
        self.estimator.incr(&guard.id_bytes(), guard.value)
    }

    /// `Guard::get()`: the current estimate of the guard's key.
    pub fn guard_get(&self, guard: &Guard) -> i64 {
        self.estimator.get(&guard.id_bytes())
    }

    /// `drop(guard)`: `decr(id, value)` once.
    pub fn drop_guard(&mut self, guard: Guard) {
        self.estimator.decr(&guard.id_bytes(), guard.value);
    }

    /// The estimate for `key` without creating a guard (not in the real API,
    /// which can only read through a guard; for measurement).
    pub fn estimate(&self, key: &[u8]) -> i64 {
        self.estimator.get(&self.key_id(key).to_le_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::estimator::{ExactCounter, Overflow};

    #[test]
    fn guard_incr_leaks() {
        let mut inflight = Inflight::new(42);
        let (guard, v) = inflight.incr(b"a", 1).unwrap();
        assert_eq!(v, 1); // after Inflight::incr: 1
        assert_eq!(inflight.guard_incr(&guard), Ok(2)); // after Guard::incr: 2
        inflight.drop_guard(guard);
        let (g2, v) = inflight.incr(b"a", 1).unwrap();
        assert_eq!(v, 2); // after drop, a new incr sees: 2
        inflight.drop_guard(g2);
        assert_eq!(inflight.estimate(b"a"), 1); // the leak stays
    }

    #[test]
    fn real_crate_unit_test_inflight_count() {
        let mut inflight = Inflight::new(1);
        let (g1, v) = inflight.incr(b"a", 1).unwrap();
        assert_eq!(v, 1);
        let (g2, v) = inflight.incr(b"a", 2).unwrap();
        assert_eq!(v, 3);
        inflight.drop_guard(g1);
        assert_eq!(inflight.guard_get(&g2), 2);
        inflight.drop_guard(g2);
        let (g3, v) = inflight.incr(b"a", 1).unwrap();
        assert_eq!(v, 1);
        assert_eq!(g3.value(), 1);
        inflight.drop_guard(g3);
    }

    #[test]
    fn guard_stores_the_key_hash_and_sketch_hashes_the_id_bytes() {
        let mut exact =
            Inflight::from_parts(ExactCounter::new(), RowHasher::new(HasherKind::Xxh3, 9));
        let id = exact.key_id(b"client-7");
        let (g, _) = exact.incr(b"client-7", 3).unwrap();
        assert_eq!(g.id(), id);
        assert_eq!(exact.estimator().get(&id.to_le_bytes()), 3);
        assert_eq!(exact.estimator().get(b"client-7"), 0);
        assert_eq!(exact.hasher_kind(), HasherKind::Xxh3);
        exact.drop_guard(g);
        assert_eq!(exact.estimate(b"client-7"), 0);
    }

    #[test]
    fn default_shape_is_4x8192() {
        let inflight = Inflight::new(3);
        assert_eq!(inflight.estimator().config().hashes, 4);
        assert_eq!(inflight.estimator().config().slots, 8192);
        assert_eq!(inflight.estimator().memory_bytes(), 256 * 1024);
    }

    #[test]
    fn different_seeds_give_different_ids() {
        let a = Inflight::new(1);
        let b = Inflight::new(2);
        assert_ne!(a.key_id(b"k"), b.key_id(b"k"));
        assert_eq!(a.key_id(b"k"), Inflight::new(1).key_id(b"k"));
    }

    #[test]
    fn overflow_fault_in_incr_runs_the_guard_drop() {
        let mut cfg = EstimatorConfig::new(2, 1);
        cfg.overflow = Overflow::Checked;
        let mut inflight = Inflight::with_config(cfg, 5);
        let (g, v) = inflight.incr(b"a", i64::MAX).unwrap();
        assert_eq!(v, i64::MAX);
        let fault = inflight.incr(b"a", 1).unwrap_err();
        assert_eq!(fault.message, "attempt to add with overflow");
        // Row 0 wrapped then was decremented back; row 1 was never added to
        // but was decremented by the unwinding guard's drop.
        assert_eq!(inflight.estimator().raw_cells(), &[i64::MAX, i64::MAX - 1]);
        inflight.drop_guard(g);
    }
}
