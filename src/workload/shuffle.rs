//! Per-key counts into a uniformly shuffled event stream, in bounded chunks,
//! and the per-key counts of a sampled workload without drawing its events.
//!
//! **Counts** ([`multinomial`]): `events` independent draws from a key
//! distribution give per-key counts distributed Multinomial(events; p₀, p₁,
//! …). Drawn directly as conditional binomials — key i gets
//! Binomial(remaining events, pᵢ / (pᵢ + pᵢ₊₁ + …)) — it costs O(keys)
//! instead of O(events).
//!
//! **Order** ([`for_each_chunk`]): a uniformly random order of a multiset is
//! what sorting its units by i.i.d. uniform labels gives. Cut the labels
//! into `B` equal ranges: each unit falls in range j with probability 1/B,
//! independently, and within a range the order is again uniform. So: split
//! every key's count over the `B` chunks as a multinomial (conditional
//! binomials again, chunk by chunk: Binomial(remaining, 1/(B − j))), lay out
//! chunk j's units and Fisher–Yates shuffle them. The concatenated chunks
//! are an exactly uniform random permutation, memory is O(keys + chunk), and
//! per event the work is one bounded random number and a swap inside a
//! cache-sized buffer (the Fenwick descent it replaces was log2(keys)
//! dependent loads).
//!
//! Counts then order makes the i.i.d. stream of a sampled workload: the
//! sequence of N i.i.d. draws *is* its multinomial counts in uniformly random
//! order. So a sampled workload's stream and its per-key counts come from the
//! same seed, and an order-independent sketch evaluated from the counts gives
//! exactly what replaying the stream gives.

use super::binomial::{binomial_ln_q, Splitter};
use rand::Rng;

/// The conditional probabilities of a multinomial over `keys` keys: key i
/// gets Binomial(remaining, pᵢ / (pᵢ + pᵢ₊₁ + …)). Built once per workload
/// (the weights are fixed; each run draws new counts from it).
pub struct Multinomial {
    /// (conditional p, ln(1 − p)) per key.
    split: Vec<(f64, f64)>,
}

impl std::fmt::Debug for Multinomial {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Multinomial({} keys)", self.split.len())
    }
}

impl Multinomial {
    /// Key i (in `0..keys`) has weight `weight(i)` (non-negative, not all
    /// zero).
    pub fn new(keys: usize, weight: impl Fn(usize) -> f64) -> Self {
        let w: Vec<f64> = (0..keys).map(weight).collect();
        // Suffix sums, added from the light end up so the tail keeps its digits.
        let mut tail = vec![0.0f64; keys + 1];
        for i in (0..keys).rev() {
            tail[i] = tail[i + 1] + w[i];
        }
        let split = (0..keys)
            .map(|i| {
                let p = if tail[i + 1] <= 0.0 {
                    1.0
                } else {
                    w[i] / tail[i]
                };
                (p, libm::log1p(-p))
            })
            .collect();
        Self { split }
    }

    /// The per-key counts of `events` i.i.d. draws.
    pub fn draw<R: Rng + ?Sized>(&self, rng: &mut R, events: u64) -> Vec<u64> {
        let mut counts = vec![0u64; self.split.len()];
        let mut left = events;
        for (c, &(p, ln_q)) in counts.iter_mut().zip(&self.split) {
            if left == 0 {
                break;
            }
            let x = if p >= 1.0 {
                left
            } else {
                binomial_ln_q(rng, left, p, ln_q)
            };
            *c = x;
            left -= x;
        }
        if let Some(last) = counts.last_mut() {
            // only rounding can leave events here (the last p is 1)
            *last += left;
        }
        counts
    }
}

/// Per-key counts of `events` i.i.d. draws where key i has weight
/// `weight(i)` (non-negative, not all zero), i in `0..keys`
/// ([`Multinomial::new`] then one [`Multinomial::draw`]).
///
/// # Examples
///
/// ```
/// use ratelab::workload::shuffle::multinomial;
/// let mut rng = ratelab::rng::sim_rng(3);
/// let counts = multinomial(&mut rng, 4, 1000, |_| 1.0);
/// assert_eq!(counts.iter().sum::<u64>(), 1000);
/// assert!(counts.iter().all(|&c| (150..350).contains(&c)));
/// ```
pub fn multinomial<R: Rng + ?Sized>(
    rng: &mut R,
    keys: usize,
    events: u64,
    weight: impl Fn(usize) -> f64,
) -> Vec<u64> {
    Multinomial::new(keys, weight).draw(rng, events)
}

/// Events per chunk at least (a 256 KiB buffer of key ids: L2-resident).
pub const MIN_CHUNK: u64 = 1 << 16;

/// How many chunks `total` events of `keys` keys are cut into: chunks of at
/// least [`MIN_CHUNK`] events and at least 4 per key, so the per-chunk
/// binomial per key costs at most a quarter of a draw per event.
pub fn chunk_count(total: u64, keys: usize) -> u64 {
    let size = MIN_CHUNK.max(4 * keys as u64);
    total.div_ceil(size).max(1)
}

/// Streams the units of `counts` (key i appears `counts[i]` times) in a
/// uniformly random order drawn from `rng`, chunk by chunk: `f` gets each
/// chunk's key ids in order, and the chunks in order are the stream.
///
/// # Examples
///
/// ```
/// use ratelab::workload::shuffle::for_each_chunk;
/// let mut rng = ratelab::rng::sim_rng(1);
/// let mut seen = [0u64; 3];
/// for_each_chunk(&[5, 0, 2], &mut rng, |chunk| {
///     chunk.iter().for_each(|&k| seen[k as usize] += 1)
/// });
/// assert_eq!(seen, [5, 0, 2]);
/// ```
pub fn for_each_chunk<R: Rng + ?Sized>(counts: &[u64], rng: &mut R, mut f: impl FnMut(&[u32])) {
    let mut left: Vec<(u32, u64)> = counts
        .iter()
        .enumerate()
        .filter(|&(_, &c)| c > 0)
        .map(|(k, &c)| (k as u32, c))
        .collect();
    let total: u64 = left.iter().map(|&(_, c)| c).sum();
    let chunks = chunk_count(total, left.len());
    let mut buf: Vec<u32> = Vec::with_capacity((total / chunks + 1024).min(total) as usize);
    for j in 0..chunks {
        buf.clear();
        let last = j + 1 == chunks;
        let split = Splitter::new(1.0 / (chunks - j) as f64);
        for (k, c) in left.iter_mut() {
            let x = if last { *c } else { split.draw(rng, *c) };
            *c -= x;
            buf.resize(buf.len() + x as usize, *k);
        }
        if !last && j % 4 == 3 {
            left.retain(|&(_, c)| c > 0);
        }
        shuffle(&mut buf, rng);
        if !buf.is_empty() {
            f(&buf);
        }
    }
}

/// Fisher–Yates: a uniformly random permutation of `v` (chunks stay below
/// 2^32 units, so every bound is a `u32` draw, the same on every target).
fn shuffle<R: Rng + ?Sized>(v: &mut [u32], rng: &mut R) {
    for i in (1..v.len()).rev() {
        let j = rng.random_range(0..=i as u32) as usize;
        v.swap(i, j);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::sim_rng;

    #[test]
    fn every_unit_once_in_chunks_of_bounded_size() {
        let counts: Vec<u64> = (0..5000u64).map(|i| 1 + 300_000 / (i + 1)).collect();
        let total: u64 = counts.iter().sum();
        let mut rng = sim_rng(2);
        let mut seen = vec![0u64; counts.len()];
        let mut sizes = Vec::new();
        for_each_chunk(&counts, &mut rng, |c| {
            sizes.push(c.len());
            c.iter().for_each(|&k| seen[k as usize] += 1);
        });
        assert_eq!(seen, counts);
        assert_eq!(sizes.len() as u64, chunk_count(total, counts.len()));
        assert!(sizes.len() > 10, "{} chunks", sizes.len());
        let max = *sizes.iter().max().unwrap() as u64;
        assert!(max < 2 * total / sizes.len() as u64, "largest chunk {max}");
    }

    #[test]
    fn order_is_uniform_across_and_within_chunks() {
        // 3 keys of 1 unit among 136 000 filler units (three chunks of at
        // least MIN_CHUNK): the position of each marked unit must be
        // uniform over the whole stream (crossing chunk borders), and the
        // three must be in each of their 6 orders equally.
        let mut counts = vec![1u64, 1, 1];
        counts.extend([34_000; 4]);
        let n = 136_003usize;
        let trials = 300;
        let mut deciles = [0u64; 10];
        let mut orders = std::collections::BTreeMap::new();
        for t in 0..trials {
            let mut rng = sim_rng(t);
            let mut pos = 0usize;
            let mut at = [0usize; 3];
            for_each_chunk(&counts, &mut rng, |c| {
                for &k in c {
                    if k < 3 {
                        at[k as usize] = pos;
                    }
                    pos += 1;
                }
            });
            for &p in &at {
                deciles[p * 10 / n] += 1;
            }
            let mut idx = [0usize, 1, 2];
            idx.sort_by_key(|&i| at[i]);
            *orders.entry(idx).or_insert(0u64) += 1;
        }
        // 900 positions: 90 per decile, sd = 9; 6 sd.
        assert!(deciles.iter().all(|&d| d.abs_diff(90) < 54), "{deciles:?}");
        assert_eq!(orders.len(), 6);
        // 50 per order, sd ≈ 6.5; 6 sd.
        assert!(orders.values().all(|&c| c.abs_diff(50) < 39), "{orders:?}");
    }

    #[test]
    fn multinomial_sums_and_follows_the_weights() {
        let mut rng = sim_rng(4);
        let w = |i: usize| 1.0 / (i + 1) as f64;
        let keys = 50;
        let h: f64 = (0..keys).map(w).sum();
        let runs = 400;
        let events = 10_000u64;
        let mut sum = vec![0u64; keys];
        for _ in 0..runs {
            let c = multinomial(&mut rng, keys, events, w);
            assert_eq!(c.iter().sum::<u64>(), events);
            sum.iter_mut().zip(&c).for_each(|(s, &x)| *s += x);
        }
        for (i, &s) in sum.iter().enumerate() {
            let p = w(i) / h;
            let n = (runs as u64 * events) as f64;
            let sd = (n * p * (1.0 - p)).sqrt();
            assert!(
                (s as f64 - n * p).abs() < 6.0 * sd,
                "key {i}: {s} vs {}",
                n * p
            );
        }
        // zero weights get nothing, the last positive key takes the rest
        let c = multinomial(&mut rng, 4, 77, |i| if i == 1 { 1.0 } else { 0.0 });
        assert_eq!(c, vec![0, 77, 0, 0]);
    }
}
