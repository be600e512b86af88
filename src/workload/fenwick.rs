//! A Fenwick (binary indexed) tree over per-key remaining counts, used to draw
//! the events of a multiset in uniformly random order without materialising
//! them: O(keys) memory, O(log keys) per event.
//!
//! The tree is padded with zero counts to a power-of-two size, so the descent
//! in [`Fenwick::take`] needs no bounds test, and `take` finds the key and
//! removes the unit in one branch-free pass: the nodes covering the chosen key
//! are exactly the nodes where the descent stays left, so each visited node is
//! decremented by `1` if it stays left and `0` otherwise. (The replay's hottest
//! loop: this halves its memory traffic and removes its mispredicted branches.
//! The key drawn for a target is the same as with the textbook two-pass
//! version, which the tests check.)

/// Remaining counts per key, with prefix sums.
#[derive(Debug, Clone)]
pub struct Fenwick {
    /// 1-based; `tree.len() - 1` is a power of two (or 0).
    tree: Vec<u64>,
    total: u64,
}

impl Fenwick {
    /// A tree holding `counts` (key i has `counts[i]` remaining).
    pub fn new(counts: &[u64]) -> Self {
        let n = if counts.is_empty() {
            0
        } else {
            counts.len().next_power_of_two()
        };
        let mut tree = vec![0u64; n + 1];
        let mut total = 0u64;
        for (i, &c) in counts.iter().enumerate() {
            total = total.saturating_add(c);
            tree[i + 1] = c;
        }
        // Linear-time construction: fold each node into its parent once.
        for j in 1..=n {
            let parent = j + (j & j.wrapping_neg());
            if parent <= n {
                tree[parent] = tree[parent].saturating_add(tree[j]);
            }
        }
        Self { tree, total }
    }

    /// Total remaining.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// The key holding the `target`-th remaining unit (0-based, `target < total`),
    /// which is then removed.
    #[inline]
    pub fn take(&mut self, mut target: u64) -> usize {
        let n = self.tree.len() - 1;
        let mut pos = 0usize;
        let mut step = n;
        while step > 0 {
            let next = pos + step;
            let v = self.tree[next];
            let right = v <= target;
            // Left: the unit is inside this node's range, which loses it.
            self.tree[next] = v - u64::from(!right);
            target -= if right { v } else { 0 };
            pos = if right { next } else { pos };
            step >>= 1;
        }
        self.total -= 1;
        pos
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_every_unit_exactly_once() {
        let counts = [3u64, 0, 5, 1, 0, 2, 7];
        let mut f = Fenwick::new(&counts);
        assert_eq!(f.total(), 18);
        let mut seen = [0u64; 7];
        // Always take the middle unit: a deterministic but non-trivial order.
        while f.total() > 0 {
            let t = f.total() / 2;
            seen[f.take(t)] += 1;
        }
        assert_eq!(seen, counts);
    }

    #[test]
    fn take_maps_targets_to_keys_in_order() {
        let mut f = Fenwick::new(&[2, 0, 1]);
        assert_eq!(f.take(2), 2); // units: k0,k0,k2
        assert_eq!(f.take(0), 0);
        assert_eq!(f.take(0), 0);
        assert_eq!(f.total(), 0);
    }

    /// The naive definition: the key whose cumulative range holds `target`.
    fn naive_take(counts: &mut [u64], mut target: u64) -> usize {
        for (i, c) in counts.iter_mut().enumerate() {
            if target < *c {
                *c -= 1;
                return i;
            }
            target -= *c;
        }
        unreachable!("target < total")
    }

    #[test]
    fn same_keys_as_the_naive_draw_for_any_size() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        for len in [1usize, 2, 3, 5, 8, 13, 64, 100, 1000] {
            let mut counts: Vec<u64> = (0..len).map(|_| rng.random_range(0..6)).collect();
            counts[len / 2] += 1;
            let mut f = Fenwick::new(&counts);
            while f.total() > 0 {
                let t = rng.random_range(0..f.total());
                assert_eq!(f.take(t), naive_take(&mut counts, t), "len {len}");
            }
            assert!(counts.iter().all(|&c| c == 0));
        }
    }
}
