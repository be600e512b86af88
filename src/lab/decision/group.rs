//! A batch's requests grouped by key, each key's own in time order: the
//! radix sort the pass runs once a batch. It is its own file because it is
//! a self-contained sort over plain records (tested against a stable sort
//! in `tests`), separate from the pass's bookkeeping in `pass`.

use crate::clock::Nanos;

/// The radix sort's scratch: two buffers of `key << 32 | time index`.
pub(super) type Grouped = (Vec<u64>, Vec<u64>);

/// `by_time`'s records grouped by key into `out` (records, and each one's
/// index in `by_time`), stable: each key's own in time order. A
/// least-significant-digit radix sort of the keys, at most 11 bits a pass
/// (2,048 buckets): the same order as a stable comparison sort by key.
/// Every pass but the last moves 8-byte `key << 32 | index` values; the
/// last one places each record, read from `by_time` by its index (the
/// batch is in cache). A comparison sort of a batch's 65,536 values and
/// the gather of the records in that order were a fifth of the oracles'
/// pass (`perf annotate`); a radix sort moving the 28-byte records (and
/// their indices) in every pass was still two fifths of `Lab::fill`.
/// Small batches are left to the comparison sort.
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
    by_key.resize(n, (0, 0, 0));
    time_index.resize(n, 0);
    let (src, dst) = scratch;
    if passes > 1 {
        src.resize(n, 0);
        dst.resize(n, 0);
    }
    for p in 0..passes {
        let at = &mut starts[p as usize * buckets..][..buckets];
        let shift = p * digit;
        let last = p == passes - 1;
        if p == 0 && last {
            // One pass: the records placed from `by_time` itself.
            for (i, &r) in by_time.iter().enumerate() {
                let d = ((r.0 >> shift) & mask) as usize;
                by_key[at[d]] = r;
                time_index[at[d]] = i as u32;
                at[d] += 1;
            }
        } else if p == 0 {
            for (i, &(k, _, _)) in by_time.iter().enumerate() {
                let d = ((k >> shift) & mask) as usize;
                dst[at[d]] = (u64::from(k) << 32) | i as u64;
                at[d] += 1;
            }
            std::mem::swap(src, dst);
        } else if last {
            // Each record is read from `by_time` by its index: asked for
            // a few values ahead, so the reads overlap.
            const AHEAD: usize = 8;
            for (j, &v) in src.iter().enumerate() {
                if let Some(&u) = src.get(j + AHEAD) {
                    crate::prefetch::read(&by_time[u as u32 as usize]);
                }
                let i = v as u32;
                let d = (((v >> 32) as u32 >> shift) & mask) as usize;
                by_key[at[d]] = by_time[i as usize];
                time_index[at[d]] = i;
                at[d] += 1;
            }
        } else {
            for &v in src.iter() {
                let d = (((v >> 32) as u32 >> shift) & mask) as usize;
                dst[at[d]] = v;
                at[d] += 1;
            }
            std::mem::swap(src, dst);
        }
    }
}
