//! The trace cut into aligned windows of the interval (multiples of it
//! since the first request), as per-key counts, and the count-min error of
//! the keys near the limit in each window: the error targets of a limit
//! sizing (`p99<=0.05*limit` means: in every window, the 99th percentile of
//! the overcount of keys whose true count is within `--near-limit` of the
//! limit is at most 5).

use super::super::input::TimedTrace;
use super::replay::{cell_table, lab_hash_seed, RateShape};
use crate::metrics::{count_min_bound, error_stats, ErrorStats};
use crate::rng::derive_seed;
use crate::sizing::targets::Metric;
use serde::{Deserialize, Serialize};

/// Per-window key counts.
#[derive(Debug, Clone, Default)]
pub struct Windows {
    /// Start of window `i`'s pairs in `keys`/`counts`; one more entry at the end.
    pub offsets: Vec<usize>,
    /// Key ids, window by window.
    pub keys: Vec<u32>,
    /// The key's weight in the window.
    pub counts: Vec<u64>,
    /// Index of each window (its start is index × interval).
    pub index: Vec<u64>,
    /// Distinct key ids.
    pub key_space: usize,
}

impl Windows {
    /// A trace's aligned windows of `interval_ns`.
    pub fn of_trace(trace: &TimedTrace, interval_ns: u64) -> Windows {
        let interval = interval_ns.max(1);
        let mut w = Windows {
            key_space: trace.names.len(),
            offsets: vec![0],
            ..Windows::default()
        };
        let mut slot = vec![u32::MAX; trace.names.len()];
        let mut cur: Option<u64> = None;
        let mut start = 0usize;
        for i in 0..trace.len() {
            let idx = trace.t[i] / interval;
            if cur != Some(idx) {
                if cur.is_some() {
                    for &k in &w.keys[start..] {
                        slot[k as usize] = u32::MAX;
                    }
                    w.offsets.push(w.keys.len());
                }
                start = w.keys.len();
                cur = Some(idx);
                w.index.push(idx);
            }
            let k = trace.key[i];
            match slot[k as usize] {
                u32::MAX => {
                    slot[k as usize] = (w.keys.len() - start) as u32;
                    w.keys.push(k);
                    w.counts.push(trace.w(i));
                }
                j => w.counts[start + j as usize] += trace.w(i),
            }
        }
        if cur.is_some() {
            w.offsets.push(w.keys.len());
        }
        w
    }

    /// One window holding every key's count.
    pub fn of_counts(counts: &[u64]) -> Windows {
        let keys: Vec<u32> = (0..counts.len() as u32)
            .filter(|&k| counts[k as usize] > 0)
            .collect();
        let c = keys.iter().map(|&k| counts[k as usize]).collect();
        Windows {
            offsets: vec![0, keys.len()],
            keys,
            counts: c,
            index: vec![0],
            key_space: counts.len(),
        }
    }

    /// Windows.
    pub fn len(&self) -> usize {
        self.index.len()
    }

    /// No windows.
    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    /// The (key, count) pairs of window `i`.
    pub fn pairs(&self, i: usize) -> (&[u32], &[u64]) {
        let r = self.offsets[i]..self.offsets[i + 1];
        (&self.keys[r.clone()], &self.counts[r])
    }

    /// Most weight in one window.
    pub fn max_events(&self) -> u64 {
        (0..self.len())
            .map(|i| self.pairs(i).1.iter().sum::<u64>())
            .max()
            .unwrap_or(0)
    }

    /// (key, window) pairs whose count is in `near`.
    pub fn near_pairs(&self, near: (u64, u64)) -> u64 {
        self.counts
            .iter()
            .filter(|&&c| c >= near.0 && c <= near.1)
            .count() as u64
    }
}

/// A metric's worst window.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct WorstError {
    /// The metric.
    pub metric: Metric,
    /// Its value in the worst window.
    pub value: f64,
    /// That window's index (start = index × interval after the first request).
    pub window: u64,
    /// Near-limit keys measured in it.
    pub keys: u64,
}

/// Each metric's worst window (windows without near-limit keys skipped);
/// empty when no window has one.
pub fn window_errors(
    w: &Windows,
    shape: RateShape,
    lab_seed: u64,
    near: (u64, u64),
) -> Vec<WorstError> {
    // The current window's sketch of the Rate (red, the first window's).
    let seed = derive_seed(lab_hash_seed(lab_seed, shape), &[0]);
    let table = cell_table(w.key_space, shape, seed);
    let h = shape.hashes;
    let mut cells = vec![0i64; h * shape.slots as usize];
    let mut worst: Vec<WorstError> = Vec::new();
    let mut errors: Vec<i64> = Vec::new();
    for i in 0..w.len() {
        let (keys, counts) = w.pairs(i);
        for (&k, &c) in keys.iter().zip(counts) {
            for &cell in &table[k as usize * h..(k as usize + 1) * h] {
                cells[cell as usize] = cells[cell as usize].wrapping_add(c as i64);
            }
        }
        errors.clear();
        for (&k, &c) in keys.iter().zip(counts) {
            if c < near.0 || c > near.1 {
                continue;
            }
            let est = table[k as usize * h..(k as usize + 1) * h]
                .iter()
                .fold(i64::MAX, |m, &cell| m.min(cells[cell as usize]));
            errors.push(est.wrapping_sub(c as i64));
        }
        if !errors.is_empty() {
            let events: u64 = counts.iter().sum();
            let s = error_stats(&mut errors, count_min_bound(events, shape.slots as usize));
            merge(&mut worst, &s, w.index[i]);
        }
        for &k in keys {
            for &cell in &table[k as usize * h..(k as usize + 1) * h] {
                cells[cell as usize] = 0;
            }
        }
    }
    worst
}

fn merge(worst: &mut Vec<WorstError>, s: &ErrorStats, window: u64) {
    for m in Metric::ALL {
        let v = m.of(s);
        let worse = |old: f64| {
            if m.higher_is_better() {
                v < old
            } else {
                v > old
            }
        };
        match worst.iter_mut().find(|x| x.metric == m) {
            Some(x) => {
                if worse(x.value) {
                    *x = WorstError {
                        metric: m,
                        value: v,
                        window,
                        keys: s.keys,
                    };
                }
            }
            None => worst.push(WorstError {
                metric: m,
                value: v,
                window,
                keys: s.keys,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_sum_repeated_keys_and_errors_only_grow_with_fewer_slots() {
        let ev: Vec<(u64, String, u64)> = (0..3000u64)
            .map(|i| {
                (
                    i * 1_000_000,
                    format!("k{}", (i * 7919) % 97 % (1 + i % 40)),
                    1,
                )
            })
            .collect();
        let tr = TimedTrace::from_events(&ev);
        let w = Windows::of_trace(&tr, 1_000_000_000);
        assert_eq!(w.len(), 3);
        let total: u64 = w.counts.iter().sum();
        assert_eq!(total, 3000);
        for i in 0..w.len() {
            let (keys, _) = w.pairs(i);
            let mut k = keys.to_vec();
            k.sort_unstable();
            k.dedup();
            assert_eq!(k.len(), keys.len(), "a key once per window");
        }
        let all = (1, u64::MAX);
        let big = window_errors(
            &w,
            RateShape {
                hashes: 4,
                slots: 1 << 16,
            },
            1,
            all,
        );
        let small = window_errors(
            &w,
            RateShape {
                hashes: 1,
                slots: 8,
            },
            1,
            all,
        );
        let max = |v: &[WorstError]| v.iter().find(|x| x.metric == Metric::Max).unwrap().value;
        assert!(max(&small) > max(&big));
        assert!(window_errors(
            &w,
            RateShape {
                hashes: 1,
                slots: 8
            },
            1,
            (1 << 40, u64::MAX)
        )
        .is_empty());
    }
}
