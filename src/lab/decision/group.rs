//! A batch's requests grouped by key, each key's own in time order: the
//! radix sort the pass runs once a batch. It is its own file because it is
//! a self-contained sort over plain records (tested against a stable sort
//! in `tests`), separate from the pass's bookkeeping in `pass`.

use crate::clock::Nanos;

/// A batch's records with their time indices (radix scratch).
pub(super) type Grouped = (Vec<(u32, u64, Nanos)>, Vec<u32>);

/// `by_time`'s records grouped by key into `out` (records, and each one's
/// index in `by_time`), stable: each key's own in time order. A
/// least-significant-digit radix sort of the keys, at most 11 bits a pass
/// (2,048 buckets), the records themselves moved by each pass: the same
/// order as a stable comparison sort by key. A comparison sort of a
/// batch's 65,536 `key << 32 | index` values and the gather of the records
/// in that order (random reads from 1.5 MiB) were a fifth of the oracles'
/// pass (`perf annotate`). Small batches are left to the comparison sort.
pub(super) fn group_by_key(
    by_time: &[(u32, u64, Nanos)],
    (by_key, time_index): (&mut Vec<(u32, u64, Nanos)>, &mut Vec<u32>),
    scratch: &mut Grouped,
) {
    const MAX_DIGIT: u32 = 11;
    let n = by_time.len();
    by_key.clear();
    time_index.clear();
    let top = by_time.iter().map(|r| r.0).max().unwrap_or(0);
    let bits = u32::BITS - top.leading_zeros();
    if n < 1024 || bits == 0 {
        let mut order: Vec<u64> = (by_time.iter().enumerate())
            .map(|(i, &(k, _, _))| (u64::from(k) << 32) | i as u64)
            .collect();
        // Distinct values: an unstable sort is the stable grouping.
        order.sort_unstable();
        for o in order {
            let i = (o & u64::from(u32::MAX)) as usize;
            time_index.push(i as u32);
            by_key.push(by_time[i]);
        }
        return;
    }
    let passes = bits.div_ceil(MAX_DIGIT);
    let digit = bits.div_ceil(passes);
    let mask = (1u32 << digit) - 1;
    let buckets = 1usize << digit;
    // Every pass's bucket starts, from one read of the keys.
    let mut starts = vec![0usize; passes as usize * buckets];
    for &(k, _, _) in by_time {
        for p in 0..passes {
            starts[p as usize * buckets + ((k >> (p * digit)) & mask) as usize] += 1;
        }
    }
    for c in starts.chunks_mut(buckets) {
        let mut at = 0;
        for s in c.iter_mut() {
            let count = *s;
            *s = at;
            at += count;
        }
    }
    let mut last = (std::mem::take(by_key), std::mem::take(time_index));
    let mut other = std::mem::take(scratch);
    for v in [&mut last, &mut other] {
        v.0.resize(n, (0, 0, 0));
        v.1.resize(n, 0);
    }
    for p in 0..passes {
        // The last pass writes `out`: the passes before alternate into it.
        let into_last = (passes - 1 - p) % 2 == 0;
        let (dst, src) = if into_last {
            (&mut last, &other)
        } else {
            (&mut other, &last)
        };
        let at = &mut starts[p as usize * buckets..][..buckets];
        let shift = p * digit;
        let mut place = |r: (u32, u64, Nanos), i: u32| {
            let d = ((r.0 >> shift) & mask) as usize;
            dst.0[at[d]] = r;
            dst.1[at[d]] = i;
            at[d] += 1;
        };
        if p == 0 {
            for (i, &r) in by_time.iter().enumerate() {
                place(r, i as u32);
            }
        } else {
            for (&r, &i) in src.0.iter().zip(&src.1) {
                place(r, i);
            }
        }
    }
    (*by_key, *time_index) = last;
    *scratch = other;
}
