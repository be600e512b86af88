//! pingora-limits' `Estimator`: a count-min sketch, modelled from
//! `pingora-limits` 0.9.0/0.9.1 `src/estimator.rs`.
//!
//! The real type is a `hashes × slots` matrix of `AtomicIsize`, one seeded
//! hasher per row. Facts reproduced here:
//!
//! * `incr(key, v)`: for each row, `fetch_add(v)` on cell `hash % slots` and
//!   fold `min(min, old + v)` starting from `isize::MAX`; the result is the
//!   minimum over rows of `old + v`, *not* a fresh `get` (rows updated by other
//!   keys between the adds do not matter in a single-threaded replay, but the
//!   value returned is per-row `old + v`).
//! * `decr(key, v)`: `fetch_sub(v)` on every row (always wrapping).
//! * `get(key)`: minimum over rows of the cell values.
//! * `reset()`: every cell set to 0.
//! * memory: `hashes × slots × 8` bytes, whatever the number of keys.
//! * Overflow ([`Overflow`]): `fetch_add` itself always wraps. 0.9.1 computes
//!   the returned value with `wrapping_add`; 0.9.0 uses `current + value`, which
//!   in a debug build panics with "attempt to add with overflow" *after* the
//!   row's cell has already been (wrappingly) updated, and before the remaining
//!   rows are touched. [`Overflow::Checked`] reproduces exactly that and reports
//!   the panic as a [`Fault`] instead of crashing ratelab.
//!
//! [`Variant::Conservative`] is *not* in pingora: conservative update raises
//! only the rows below the new minimum, which never overestimates more than
//! the standard update and still never undercounts for non-negative
//! increments. It is here so a user can see what it would buy.
//!
//! The slot index is `hash % slots` exactly as in pingora (a modulo, so slot
//! counts that are not powers of two behave as in the real crate).

use crate::hash::{HasherKind, RowHasher};
use serde::{Deserialize, Serialize};

/// What `incr` does when `old + v` does not fit in an `isize`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Overflow {
    /// 0.9.1 (and 0.9.0 release builds): two's-complement wrap.
    #[default]
    Wrapping,
    /// 0.9.0 debug build: panics "attempt to add with overflow".
    Checked,
}

/// How increments are applied to the rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Variant {
    /// pingora's standard count-min update: add to every row.
    #[default]
    CountMin,
    /// Conservative update: raise each row only up to `min + v` (not pingora).
    Conservative,
}

impl Variant {
    /// The name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            Variant::CountMin => "count_min",
            Variant::Conservative => "conservative",
        }
    }
}

/// A panic the real code would raise, recorded instead of crashing ratelab.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fault {
    /// The panic message, as Rust prints it.
    pub message: String,
    /// Where the real code panics.
    pub location: String,
}

impl std::fmt::Display for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "panicked at {}: {}", self.location, self.message)
    }
}

/// The panic of 0.9.0's debug build on counter overflow.
pub fn add_overflow_fault() -> Fault {
    Fault {
        message: "attempt to add with overflow".to_string(),
        location: "pingora-limits-0.9.0/src/estimator.rs:53:36".to_string(),
    }
}

/// The family trait: something that counts events per key, maybe
/// approximately. The harness, the sizing search and the windows drive every
/// counter through it.
pub trait FrequencyEstimator {
    /// Adds `value` to `key` and returns the new estimate (as the real `incr`).
    fn incr(&mut self, key: &[u8], value: i64) -> Result<i64, Fault>;
    /// Subtracts `value` from `key`.
    fn decr(&mut self, key: &[u8], value: i64);
    /// The current estimate for `key`.
    fn get(&self, key: &[u8]) -> i64;
    /// Forgets everything.
    fn reset(&mut self);
    /// Bytes of counter memory the real structure would use.
    fn memory_bytes(&self) -> u64;
}

/// Shape and behaviour of a sketch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct EstimatorConfig {
    /// Rows (`hashes` in pingora).
    pub hashes: usize,
    /// Counters per row (`slots` in pingora).
    pub slots: usize,
    /// Update rule.
    pub variant: Variant,
    /// Overflow behaviour.
    pub overflow: Overflow,
    /// Hash family.
    pub hasher: HasherKind,
}

impl EstimatorConfig {
    /// pingora's count-min with the portable hasher and 0.9.1's wrapping.
    pub fn new(hashes: usize, slots: usize) -> Self {
        Self {
            hashes,
            slots,
            variant: Variant::CountMin,
            overflow: Overflow::Wrapping,
            hasher: HasherKind::Xxh3,
        }
    }

    /// `hashes × slots × 8`, saturating.
    pub fn memory_bytes(&self) -> u64 {
        (self.hashes as u64)
            .saturating_mul(self.slots as u64)
            .saturating_mul(8)
    }
}

/// The count-min sketch model.
///
/// Cells are stored row-major in one flat vector (`row * slots + column`):
/// one allocation, and a key's cells can be precomputed once per key with
/// [`Estimator::cells`] and reused for every event of that key, which is what
/// makes replay faster than the real crate without changing any result.
///
/// # Examples
///
/// ```
/// use ratelab::model::estimator::{Estimator, EstimatorConfig, FrequencyEstimator};
///
/// let mut e = Estimator::new(EstimatorConfig::new(4, 1024), 7);
/// assert_eq!(e.incr(b"alice", 3).unwrap(), 3); // an empty sketch: no collision yet
/// e.incr(b"bob", 2).unwrap();
/// // count-min never undercounts: each estimate is the minimum over 4 rows
/// assert!(e.get(b"alice") >= 3 && e.get(b"bob") >= 2);
/// assert_eq!(e.memory_bytes(), 4 * 1024 * 8); // one 8-byte cell per row and slot
/// ```
#[derive(Debug, Clone)]
pub struct Estimator {
    config: EstimatorConfig,
    hashers: Vec<RowHasher>,
    cells: Vec<i64>,
}

/// The flat cell index of a key in each row, in row order.
pub type Cells = Vec<u32>;

impl Estimator {
    /// A sketch whose row `r` is seeded with `derive_seed(seed, [r])`.
    ///
    /// The caller validates the shape (see `scenario` validation); a zero
    /// `hashes` or `slots` here gives an estimator whose `get` is `i64::MAX`,
    /// as the real fold over zero rows would, and zero slots never index.
    pub fn new(config: EstimatorConfig, seed: u64) -> Self {
        let hashers = (0..config.hashes)
            .map(|row| RowHasher::new(config.hasher, crate::rng::derive_seed(seed, &[row as u64])))
            .collect();
        Self {
            config,
            hashers,
            cells: vec![0; config.hashes.saturating_mul(config.slots)],
        }
    }

    /// The configuration this sketch was built with.
    pub fn config(&self) -> &EstimatorConfig {
        &self.config
    }

    /// The flat index of `key`'s cell in every row.
    pub fn cells(&self, key: &[u8]) -> Cells {
        let mut out = Vec::with_capacity(self.hashers.len());
        self.cells_into(key, &mut out);
        out
    }

    /// Like [`Estimator::cells`], appending to `out` (no allocation when
    /// building a per-key table).
    pub fn cells_into(&self, key: &[u8], out: &mut Vec<u32>) {
        let slots = self.config.slots as u64;
        if slots == 0 {
            return;
        }
        for (row, hasher) in self.hashers.iter().enumerate() {
            let column = hasher.hash(key) % slots;
            out.push((row as u64 * slots + column) as u32);
        }
    }

    /// `incr` on precomputed cells (see [`Estimator::cells`]).
    #[inline]
    pub fn incr_cells(&mut self, cells: &[u32], value: i64) -> Result<i64, Fault> {
        match self.config.variant {
            Variant::CountMin => {
                let mut min = i64::MAX;
                for &c in cells {
                    let cell = &mut self.cells[c as usize];
                    let old = *cell;
                    *cell = old.wrapping_add(value);
                    let new = match self.config.overflow {
                        Overflow::Wrapping => old.wrapping_add(value),
                        Overflow::Checked => {
                            old.checked_add(value).ok_or_else(add_overflow_fault)?
                        }
                    };
                    min = min.min(new);
                }
                Ok(min)
            }
            Variant::Conservative => {
                let current = self.get_cells(cells);
                let target = match self.config.overflow {
                    Overflow::Wrapping => current.wrapping_add(value),
                    Overflow::Checked => {
                        current.checked_add(value).ok_or_else(add_overflow_fault)?
                    }
                };
                if cells.is_empty() {
                    return Ok(i64::MAX);
                }
                for &c in cells {
                    let cell = &mut self.cells[c as usize];
                    if *cell < target {
                        *cell = target;
                    }
                }
                Ok(target)
            }
        }
    }

    /// `incr(key, 1)` for every key id of `keys` in order, on a per-key cell
    /// table (`table[k*h..k*h+h]` = the cells of key id `k`), discarding the
    /// returned estimates: the sweep's replay loop. Same cell values as calling
    /// [`Estimator::incr_cells`] per event; stops at the first fault.
    ///
    /// pingora's update (count-min, wrapping) is specialised by row count so
    /// the per-event work is `h` adds with no branch on the variant or the
    /// overflow rule; everything else goes through `incr_cells`.
    pub fn incr_keys(&mut self, table: &[u32], keys: &[u32]) -> Result<(), Fault> {
        if self.config.variant == Variant::CountMin && self.config.overflow == Overflow::Wrapping {
            match self.config.hashes {
                1 => return self.add_one_rows::<1>(table, keys),
                2 => return self.add_one_rows::<2>(table, keys),
                4 => return self.add_one_rows::<4>(table, keys),
                8 => return self.add_one_rows::<8>(table, keys),
                _ => {}
            }
        }
        if self.config.variant == Variant::Conservative {
            match self.config.hashes {
                1 => return self.raise_rows::<1>(table, keys),
                2 => return self.raise_rows::<2>(table, keys),
                3 => return self.raise_rows::<3>(table, keys),
                4 => return self.raise_rows::<4>(table, keys),
                8 => return self.raise_rows::<8>(table, keys),
                _ => {}
            }
        }
        let h = self.config.hashes;
        for &k in keys {
            let k = k as usize;
            self.incr_cells(&table[k * h..k * h + h], 1)?;
        }
        Ok(())
    }

    /// Conservative update, `value` 1, `H` rows: each cell of the event's key
    /// is raised to at least `min + 1` (`max` is the `if cell < target`
    /// of [`Estimator::incr_cells`]; with wrapping overflow a minimum of
    /// `isize::MAX` gives a target of `isize::MIN`, which raises nothing, as
    /// there). Under checked overflow that minimum is the panic: the event
    /// goes through `incr_cells`, which reports it.
    #[inline]
    fn raise_rows<const H: usize>(&mut self, table: &[u32], keys: &[u32]) -> Result<(), Fault> {
        let checked = self.config.overflow == Overflow::Checked;
        for &k in keys {
            let k = k as usize;
            let Some(cells) = table.get(k * H..k * H + H) else {
                continue;
            };
            let cells: &[u32; H] = cells.try_into().expect("H cells");
            let mut min = i64::MAX;
            for &c in cells {
                min = min.min(self.cells[c as usize]);
            }
            if checked && min == i64::MAX {
                self.incr_cells(cells, 1)?;
                continue;
            }
            let target = min.wrapping_add(1);
            for &c in cells {
                let cell = &mut self.cells[c as usize];
                *cell = (*cell).max(target);
            }
        }
        Ok(())
    }

    /// Count-min, wrapping, `value` 1, `H` rows: the cells of each event's key
    /// each get a wrapping +1.
    #[inline]
    fn add_one_rows<const H: usize>(&mut self, table: &[u32], keys: &[u32]) -> Result<(), Fault> {
        for &k in keys {
            let k = k as usize;
            let Some(cells) = table.get(k * H..k * H + H) else {
                continue;
            };
            for &c in cells {
                let cell = &mut self.cells[c as usize];
                *cell = cell.wrapping_add(1);
            }
        }
        Ok(())
    }

    /// pingora's standard update of `count` events of one key at once: a
    /// wrapping `+count` on each of its cells. The cells end where `count`
    /// calls of `incr_cells(cells, 1)` would leave them under the count-min
    /// update with wrapping overflow, in any interleaving with other keys
    /// (wrapping addition commutes), and under checked overflow as long as no
    /// counter reaches `isize::MAX` (then no increment could panic). This is
    /// what lets a sweep evaluate such a sketch from per-key counts.
    ///
    /// # Examples
    ///
    /// ```
    /// use ratelab::model::estimator::{Estimator, EstimatorConfig};
    /// let mut by_event = Estimator::new(EstimatorConfig::new(2, 8), 1);
    /// let mut by_key = by_event.clone();
    /// let (a, b) = (by_event.cells(b"a"), by_event.cells(b"b"));
    /// for cells in [&a, &b, &a, &a] {
    ///     by_event.incr_cells(cells, 1).unwrap();
    /// }
    /// by_key.add_cells(&b, 1);
    /// by_key.add_cells(&a, 3);
    /// assert_eq!(by_key.raw_cells(), by_event.raw_cells());
    /// ```
    #[inline]
    pub fn add_cells(&mut self, cells: &[u32], count: i64) {
        for &c in cells {
            let cell = &mut self.cells[c as usize];
            *cell = cell.wrapping_add(count);
        }
    }

    /// Whether this sketch's final cells are a function of the per-key
    /// counts alone (see [`Estimator::add_cells`]) for a stream of `events`
    /// unit increments: pingora's count-min update, with wrapping overflow,
    /// or with checked overflow when `events` cannot bring a counter to
    /// `isize::MAX`. Conservative update depends on the order.
    pub fn order_free(config: &EstimatorConfig, events: u64) -> bool {
        config.variant == Variant::CountMin
            && (config.overflow == Overflow::Wrapping || events < i64::MAX as u64)
    }

    /// `decr` on precomputed cells: every row, wrapping (`fetch_sub`).
    #[inline]
    pub fn decr_cells(&mut self, cells: &[u32], value: i64) {
        for &c in cells {
            let cell = &mut self.cells[c as usize];
            *cell = cell.wrapping_sub(value);
        }
    }

    /// `get` on precomputed cells.
    #[inline]
    pub fn get_cells(&self, cells: &[u32]) -> i64 {
        cells
            .iter()
            .fold(i64::MAX, |min, &c| min.min(self.cells[c as usize]))
    }

    /// Raw cell values, row-major (for tests and characterization).
    pub fn raw_cells(&self) -> &[i64] {
        &self.cells
    }
}

impl FrequencyEstimator for Estimator {
    fn incr(&mut self, key: &[u8], value: i64) -> Result<i64, Fault> {
        let cells = self.cells(key);
        self.incr_cells(&cells, value)
    }

    fn decr(&mut self, key: &[u8], value: i64) {
        let cells = self.cells(key);
        self.decr_cells(&cells, value)
    }

    fn get(&self, key: &[u8]) -> i64 {
        let slots = self.config.slots as u64;
        if slots == 0 {
            return i64::MAX;
        }
        self.hashers
            .iter()
            .enumerate()
            .fold(i64::MAX, |min, (row, hasher)| {
                let c = row as u64 * slots + hasher.hash(key) % slots;
                min.min(self.cells[c as usize])
            })
    }

    fn reset(&mut self) {
        self.cells.iter_mut().for_each(|c| *c = 0);
    }

    fn memory_bytes(&self) -> u64 {
        self.config.memory_bytes()
    }
}

/// An exact counter per key: the `--hasher exact` backend, so conformance
/// checks of the windows cannot be blurred by collisions. Memory is reported
/// as 8 bytes per key plus the key bytes (an estimate of a hash map's payload).
#[derive(Debug, Clone, Default)]
pub struct ExactCounter {
    counts: std::collections::HashMap<Vec<u8>, i64>,
}

impl ExactCounter {
    /// An empty counter.
    pub fn new() -> Self {
        Self::default()
    }
}

impl FrequencyEstimator for ExactCounter {
    fn incr(&mut self, key: &[u8], value: i64) -> Result<i64, Fault> {
        let c = self.counts.entry(key.to_vec()).or_insert(0);
        *c = c.wrapping_add(value);
        Ok(*c)
    }

    fn decr(&mut self, key: &[u8], value: i64) {
        let c = self.counts.entry(key.to_vec()).or_insert(0);
        *c = c.wrapping_sub(value);
    }

    fn get(&self, key: &[u8]) -> i64 {
        self.counts.get(key).copied().unwrap_or(0)
    }

    fn reset(&mut self) {
        self.counts.clear();
    }

    fn memory_bytes(&self) -> u64 {
        self.counts.keys().map(|k| k.len() as u64 + 8).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn est(hashes: usize, slots: usize) -> Estimator {
        Estimator::new(EstimatorConfig::new(hashes, slots), 1)
    }

    // The real crate's own unit tests, replayed on the model.
    #[test]
    fn incr_returns_min_of_old_plus_value() {
        let mut e = est(8, 8);
        assert_eq!(e.incr(b"a", 1), Ok(1));
        assert_eq!(e.incr(b"a", 2), Ok(3));
        assert_eq!(e.get(b"a"), 3);
    }

    #[test]
    fn decr_and_reset() {
        let mut e = est(8, 64);
        e.incr(b"a", 3).unwrap();
        e.incr(b"b", 3).unwrap();
        e.decr(b"a", 1);
        assert!(e.get(b"a") >= 2);
        e.reset();
        assert_eq!(e.get(b"a"), 0);
        assert_eq!(e.get(b"b"), 0);
    }

    #[test]
    fn wrapping_overflow_matches_release_and_0_9_1() {
        let mut e = est(1, 1);
        assert_eq!(e.incr(b"a", i64::MAX), Ok(i64::MAX));
        assert_eq!(e.incr(b"a", 1), Ok(i64::MIN));
        assert_eq!(e.get(b"a"), i64::MIN);
        // and the crate's underflow test
        let mut e = est(1, 1);
        assert_eq!(e.incr(b"a", i64::MIN), Ok(i64::MIN));
        assert_eq!(e.incr(b"a", -1), Ok(i64::MAX));
    }

    #[test]
    fn checked_overflow_faults_like_0_9_0_debug_after_the_fetch_add() {
        let mut cfg = EstimatorConfig::new(2, 1);
        cfg.overflow = Overflow::Checked;
        let mut e = Estimator::new(cfg, 1);
        assert_eq!(e.incr(b"a", i64::MAX), Ok(i64::MAX));
        let fault = e.incr(b"a", 1).unwrap_err();
        assert_eq!(fault.message, "attempt to add with overflow");
        // fetch_add already wrapped row 0; row 1 was never reached.
        assert_eq!(e.raw_cells(), &[i64::MIN, i64::MAX]);
    }

    #[test]
    fn never_undercounts_and_conservative_is_tighter() {
        let mut cm = est(2, 16);
        let mut cfg = EstimatorConfig::new(2, 16);
        cfg.variant = Variant::Conservative;
        let mut cu = Estimator::new(cfg, 1);
        let mut truth = std::collections::HashMap::new();
        for i in 0..500u64 {
            let key = (i * 7 % 61).to_le_bytes();
            cm.incr(&key, 1).unwrap();
            cu.incr(&key, 1).unwrap();
            *truth.entry(key).or_insert(0i64) += 1;
        }
        let mut strictly_better = false;
        for (key, &t) in &truth {
            assert!(cm.get(key) >= t);
            assert!(cu.get(key) >= t);
            assert!(cu.get(key) <= cm.get(key));
            strictly_better |= cu.get(key) < cm.get(key);
        }
        assert!(strictly_better, "61 keys in 16 slots must collide");
    }

    #[test]
    fn incr_keys_equals_incr_cells_per_event_for_every_rule_and_row_count() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        let keys: Vec<u32> = (0..20_000).map(|_| rng.random_range(0..300u32)).collect();
        for h in 1..=9 {
            for variant in [Variant::CountMin, Variant::Conservative] {
                for overflow in [Overflow::Wrapping, Overflow::Checked] {
                    let mut cfg = EstimatorConfig::new(h, 64);
                    cfg.variant = variant;
                    cfg.overflow = overflow;
                    let mut fast = Estimator::new(cfg, 3);
                    let mut slow = fast.clone();
                    let mut table = Vec::new();
                    for k in 0..300u64 {
                        fast.cells_into(&k.to_le_bytes(), &mut table);
                    }
                    fast.incr_keys(&table, &keys).unwrap();
                    for &k in &keys {
                        let k = k as usize;
                        slow.incr_cells(&table[k * h..k * h + h], 1).unwrap();
                    }
                    assert_eq!(
                        fast.raw_cells(),
                        slow.raw_cells(),
                        "{h} {variant:?} {overflow:?}"
                    );
                }
            }
        }
        // at isize::MAX: wrapping raises nothing, checked faults as incr_cells does
        for overflow in [Overflow::Wrapping, Overflow::Checked] {
            let mut cfg = EstimatorConfig::new(2, 1);
            cfg.variant = Variant::Conservative;
            cfg.overflow = overflow;
            let mut e = Estimator::new(cfg, 1);
            e.incr(b"a", i64::MAX).unwrap();
            let table = e.cells(b"a");
            let r = e.incr_keys(&table, &[0]);
            assert_eq!(r.is_err(), overflow == Overflow::Checked);
            assert_eq!(e.raw_cells(), &[i64::MAX, i64::MAX]);
        }
    }

    #[test]
    fn memory_is_hashes_times_slots_times_8() {
        assert_eq!(est(4, 1024).memory_bytes(), 32_768);
        assert_eq!(est(4, 8192).memory_bytes(), 262_144);
    }

    #[test]
    fn same_seed_same_cells_other_seed_other_cells() {
        let a = Estimator::new(EstimatorConfig::new(4, 1 << 16), 5);
        let b = Estimator::new(EstimatorConfig::new(4, 1 << 16), 5);
        let c = Estimator::new(EstimatorConfig::new(4, 1 << 16), 6);
        assert_eq!(a.cells(b"k"), b.cells(b"k"));
        assert_ne!(a.cells(b"k"), c.cells(b"k"));
    }

    #[test]
    fn exact_counter_counts_exactly() {
        let mut e = ExactCounter::new();
        assert_eq!(e.incr(b"a", 2), Ok(2));
        e.decr(b"a", 1);
        assert_eq!(e.get(b"a"), 1);
        assert_eq!(e.get(b"b"), 0);
    }
}
