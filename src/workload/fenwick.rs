//! A Fenwick (binary indexed) tree over per-key remaining counts, used to draw
//! the events of a multiset in uniformly random order without materialising
//! them: O(keys) memory, O(log keys) per event.

/// Remaining counts per key, with prefix sums.
#[derive(Debug, Clone)]
pub struct Fenwick {
    tree: Vec<u64>,
    total: u64,
}

impl Fenwick {
    /// A tree holding `counts` (key i has `counts[i]` remaining).
    pub fn new(counts: &[u64]) -> Self {
        let n = counts.len();
        let mut tree = vec![0u64; n + 1];
        let mut total = 0u64;
        for (i, &c) in counts.iter().enumerate() {
            total = total.saturating_add(c);
            let mut j = i + 1;
            tree[j] = tree[j].saturating_add(c);
            let parent = j + (j & j.wrapping_neg());
            if parent <= n {
                let v = tree[j];
                j = parent;
                tree[j] = tree[j].saturating_add(v);
            }
        }
        // The loop above folds each node into its parent once, which is the
        // linear-time construction: tree[j] ends as the sum of its range.
        Self { tree, total }
    }

    /// Total remaining.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// The key holding the `target`-th remaining unit (0-based, `target < total`),
    /// which is then removed.
    pub fn take(&mut self, mut target: u64) -> usize {
        let n = self.tree.len() - 1;
        let mut pos = 0usize;
        let mut step = if n == 0 {
            0
        } else {
            1usize << (usize::BITS - 1 - n.leading_zeros())
        };
        while step > 0 {
            let next = pos + step;
            if next <= n && self.tree[next] <= target {
                target -= self.tree[next];
                pos = next;
            }
            step >>= 1;
        }
        // pos is the number of keys whose prefix sum is <= target: key index pos.
        let mut j = pos + 1;
        while j <= n {
            self.tree[j] -= 1;
            j += j & j.wrapping_neg();
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
}
