//! Evaluating shapes: one `hashes × slots` count-min sketch on a fixed set
//! of seeds of a workload, from per-key counts (see the module docs of
//! [`crate::sizing`] for why that equals replaying the stream). Sizing
//! searches shapes with it and the characterization lab measures them; it
//! lives with the estimator's accuracy so that neither reaches into the
//! other.

use crate::hash::{HasherKind, RowHasher};
use crate::metrics::{count_min_bound, error_stats, ErrorStats};
use crate::model::estimator::Variant;
use crate::rng::{derive_seed, stream};
use crate::workload::Workload;
use rayon::prelude::*;
use std::sync::Arc;

/// Per-seed inputs of an evaluation.
#[derive(Debug, Clone)]
struct SeedData {
    hash_seed: u64,
    workload_seed: u64,
    /// True count per key id.
    truth: Arc<Vec<u64>>,
    /// The event stream, when cached (conservative update only).
    events: Option<Arc<Vec<u32>>>,
}

/// Evaluates shapes on a workload over a fixed set of seeds.
#[derive(Debug)]
pub struct Evaluator {
    workload: Workload,
    variant: Variant,
    hasher: HasherKind,
    key_bytes: Vec<Vec<u8>>,
    seed: u64,
    seeds: u32,
    exact: Option<Arc<Vec<u64>>>,
    cache_events: bool,
    /// Inputs of the search runs `0..seeds`; hold-out runs are built on demand.
    data: Vec<SeedData>,
}

/// Cache event streams for conservative update up to this many bytes in all.
const EVENT_CACHE_BYTES: u64 = 512 << 20;

impl Evaluator {
    /// Prepares the search runs `0..seeds` of `workload` from the base `seed`.
    pub fn new(
        workload: Workload,
        variant: Variant,
        hasher: HasherKind,
        seed: u64,
        seeds: u32,
    ) -> Self {
        let key_bytes = (0..workload.key_space())
            .map(|k| workload.key_bytes(k).into_owned())
            .collect();
        let exact = workload.exact_counts().map(|c| Arc::new(c.to_vec()));
        let cache_events = variant == Variant::Conservative
            && workload
                .events()
                .saturating_mul(4)
                .saturating_mul(u64::from(seeds))
                <= EVENT_CACHE_BYTES;
        let mut ev = Self {
            workload,
            variant,
            hasher,
            key_bytes,
            seed,
            seeds,
            exact,
            cache_events,
            data: Vec::new(),
        };
        ev.data = (0..seeds as usize)
            .into_par_iter()
            .map(|r| ev.make_seed(r, ev.cache_events))
            .collect();
        ev
    }

    /// The inputs of run `r`: its seeds, true counts and (optionally) events.
    fn make_seed(&self, r: usize, cache_events: bool) -> SeedData {
        let run_seed = derive_seed(self.seed, &[r as u64]);
        let workload_seed = derive_seed(run_seed, &[stream::WORKLOAD]);
        let mut events = cache_events.then(Vec::new);
        let truth = match (&self.exact, &mut events) {
            (Some(t), None) => t.clone(),
            _ => {
                let mut t = vec![0u64; self.workload.key_space()];
                self.workload.for_each_event(workload_seed, |k| {
                    t[k as usize] += 1;
                    if let Some(ev) = events.as_mut() {
                        ev.push(k);
                    }
                });
                match &self.exact {
                    Some(e) => e.clone(),
                    None => Arc::new(t),
                }
            }
        };
        SeedData {
            hash_seed: derive_seed(run_seed, &[stream::HASH]),
            workload_seed,
            truth,
            events: events.map(Arc::new),
        }
    }

    /// The workload.
    pub fn workload(&self) -> &Workload {
        &self.workload
    }

    /// Search seeds per shape.
    pub fn seeds(&self) -> u32 {
        self.seeds
    }

    /// The base seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The update rule.
    pub fn variant(&self) -> Variant {
        self.variant
    }

    /// The hash family.
    pub fn hasher(&self) -> HasherKind {
        self.hasher
    }

    /// True counts of run 0.
    pub fn truth0(&self) -> &[u64] {
        self.data.first().map(|d| d.truth.as_slice()).unwrap_or(&[])
    }

    /// Error statistics of run `run` of `hashes × slots` (runs `0..seeds`
    /// are the search seeds; later ones are built on demand).
    ///
    /// # Examples
    ///
    /// ```
    /// use ratelab::hash::HasherKind;
    /// use ratelab::model::estimator::Variant;
    /// use ratelab::sizing::Evaluator;
    /// use ratelab::workload::CountWorkload;
    /// use std::path::Path;
    ///
    /// let workload = CountWorkload::Uniform { keys: 50, events: 500 }
    ///     .build(Path::new("example"), "workload")
    ///     .unwrap();
    /// let ev = Evaluator::new(workload, Variant::Conservative, HasherKind::Xxh3, 7, 1);
    /// // Far more counters than keys: every key is estimated exactly.
    /// let stats = ev.run_stats(4, 1 << 16, 0);
    /// assert_eq!((stats.exact_pct, stats.max), (100.0, 0.0));
    /// ```
    pub fn run_stats(&self, hashes: usize, slots: u64, run: usize) -> ErrorStats {
        let built;
        let d = match self.data.get(run) {
            Some(d) => d,
            None => {
                built = self.make_seed(run, false);
                &built
            }
        };
        let errors = self.errors(hashes, slots, d);
        let events: u64 = d.truth.iter().sum();
        let bound = count_min_bound(events, slots as usize);
        let mut errors: Vec<i64> = errors.into_iter().map(|(_, e)| e).collect();
        error_stats(&mut errors, bound)
    }

    /// Per-key errors `(key id, estimate - truth)` of keys seen, in key order.
    fn errors(&self, hashes: usize, slots: u64, d: &SeedData) -> Vec<(u32, i64)> {
        let truth = &d.truth;
        let seen: Vec<u32> = (0..truth.len() as u32)
            .filter(|&k| truth[k as usize] > 0)
            .collect();
        if slots == 0 || hashes == 0 {
            return seen.iter().map(|&k| (k, i64::MAX)).collect();
        }
        let (cell_of, cell_count) = self.cell_ids(hashes, slots, d.hash_seed, &seen);
        let mut cells = vec![0i64; cell_count];
        match self.variant {
            Variant::CountMin => {
                for (i, &k) in seen.iter().enumerate() {
                    let c = truth[k as usize] as i64;
                    for &cell in &cell_of[i * hashes..(i + 1) * hashes] {
                        cells[cell as usize] = cells[cell as usize].wrapping_add(c);
                    }
                }
            }
            Variant::Conservative => {
                self.replay_conservative(&mut cells, &cell_of, hashes, &seen, d)
            }
        }
        seen.iter()
            .enumerate()
            .map(|(i, &k)| {
                let est = cell_of[i * hashes..(i + 1) * hashes]
                    .iter()
                    .fold(i64::MAX, |m, &c| m.min(cells[c as usize]));
                (k, est.wrapping_sub(truth[k as usize] as i64))
            })
            .collect()
    }

    /// Cell ids per (seen key index, row), at `i * hashes + row`, and the
    /// number of cells: the flat index `row * slots + col` when that table is
    /// small, else renumbered compactly (only cells some key hashes to), so
    /// memory stays O(keys × hashes) whatever `slots`.
    fn cell_ids(
        &self,
        hashes: usize,
        slots: u64,
        hash_seed: u64,
        seen: &[u32],
    ) -> (Vec<u32>, usize) {
        let n = seen.len();
        let mut cell_of = vec![0u32; n * hashes];
        let table = (hashes as u64).saturating_mul(slots);
        let dense = table <= (4 * n as u64 * hashes as u64).max(1 << 16);
        let mut flat: Vec<(u64, u32)> = if dense {
            Vec::new()
        } else {
            Vec::with_capacity(n * hashes)
        };
        // `% slots` is a 64-bit division per key and row, the largest
        // single cost of a characterization trial; for a power of two (the
        // usual shapes) the mask gives the same column.
        let mask = slots.is_power_of_two().then(|| slots - 1);
        for row in 0..hashes {
            let h = RowHasher::new(self.hasher, derive_seed(hash_seed, &[row as u64]));
            for (i, &k) in seen.iter().enumerate() {
                let hash = h.hash(&self.key_bytes[k as usize]);
                let col = match mask {
                    Some(m) => hash & m,
                    None => hash % slots,
                };
                let f = row as u64 * slots + col;
                if dense {
                    cell_of[i * hashes + row] = f as u32;
                } else {
                    flat.push((f, (i * hashes + row) as u32));
                }
            }
        }
        if dense {
            return (cell_of, table as usize);
        }
        flat.sort_unstable();
        let mut next = 0u32;
        let mut prev = None;
        for &(f, slot) in &flat {
            if prev.is_some() && prev != Some(f) {
                next += 1;
            }
            prev = Some(f);
            cell_of[slot as usize] = next;
        }
        (cell_of, next as usize + 1)
    }

    /// Conservative update: replays the run's event stream on the cells, each
    /// event raising only the cells of its key that hold the minimum.
    fn replay_conservative(
        &self,
        cells: &mut [i64],
        cell_of: &[u32],
        hashes: usize,
        seen: &[u32],
        d: &SeedData,
    ) {
        let mut index_of = vec![u32::MAX; d.truth.len()];
        for (i, &k) in seen.iter().enumerate() {
            index_of[k as usize] = i as u32;
        }
        let mut step = |k: u32| {
            let i = index_of[k as usize] as usize;
            let cs = &cell_of[i * hashes..(i + 1) * hashes];
            let cur = cs.iter().fold(i64::MAX, |m, &c| m.min(cells[c as usize]));
            let target = cur.wrapping_add(1);
            for &c in cs {
                if cells[c as usize] < target {
                    cells[c as usize] = target;
                }
            }
        };
        match &d.events {
            Some(ev) => ev.iter().for_each(|&k| step(k)),
            None => self.workload.for_each_event(d.workload_seed, step),
        }
    }

    /// Errors by key for a given hash seed and run `run`'s stream (used by the
    /// characterization: fixed stream, fresh hash seeds).
    pub fn errors_with_hash_seed(
        &self,
        hashes: usize,
        slots: u64,
        run: usize,
        hash_seed: u64,
    ) -> Vec<(u32, i64)> {
        let mut d = match self.data.get(run) {
            Some(d) => d.clone(),
            None => self.make_seed(run, false),
        };
        d.hash_seed = hash_seed;
        self.errors(hashes, slots, &d)
    }
}
