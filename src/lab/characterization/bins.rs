//! Rank bins and exact error histograms: quantiles by nearest rank and the
//! stability test between rounds of trials.

use super::QUANTILES;

/// A bin of adjacent ranks `[start, end)` (1-based) and its plotting rank.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RankBin {
    /// First rank.
    pub start: usize,
    /// One past the last rank.
    pub end: usize,
}

impl RankBin {
    /// Geometric centre, for the log axis.
    pub fn centre(&self) -> f64 {
        ((self.start * (self.end - 1)) as f64).sqrt()
    }

    /// `start` alone, or `start-last`.
    pub(super) fn label(&self) -> String {
        if self.end - self.start == 1 {
            self.start.to_string()
        } else {
            format!("{}-{}", self.start, self.end - 1)
        }
    }
}

/// `points` log-spaced bins over ranks 1..=n, merged forward until each has
/// at least `min_keys` keys (a short last bin joins its predecessor).
pub fn rank_bins(n: usize, points: usize, min_keys: usize) -> Vec<RankBin> {
    if n == 0 {
        return Vec::new();
    }
    let points = points.max(1);
    let mut edges: Vec<usize> = (0..=points)
        .map(|j| {
            libm::exp((j as f64 / points as f64) * libm::log((n + 1) as f64))
                .round()
                .clamp(1.0, (n + 1) as f64) as usize
        })
        .collect();
    edges[0] = 1;
    edges[points] = n + 1;
    edges.dedup();
    let mut bins: Vec<RankBin> = Vec::new();
    let mut start = 1;
    for &e in &edges[1..] {
        if e - start >= min_keys.max(1) {
            bins.push(RankBin { start, end: e });
            start = e;
        }
    }
    if start <= n {
        match bins.last_mut() {
            Some(last) => last.end = n + 1,
            None => bins.push(RankBin { start, end: n + 1 }),
        }
    }
    bins
}

/// An exact error histogram: `(error, how many times)`, by error ascending,
/// each error once.
pub(super) type Counts = Vec<(i64, u64)>;

/// Exact error histograms, one per bin (counts are added, so the order in
/// which trials are merged cannot change them).
pub(super) type Hist = Vec<Counts>;

/// Adds histogram set `b` (and its over-bound count) to `a`.
pub(super) fn merge(a: (Hist, u64), b: (Hist, u64)) -> (Hist, u64) {
    if a.0.is_empty() {
        return b;
    }
    if b.0.is_empty() {
        return (a.0, a.1 + b.1);
    }
    let hist =
        a.0.iter()
            .zip(&b.0)
            .map(|(x, y)| merge_counts(x, y))
            .collect();
    (hist, a.1 + b.1)
}

/// The sum of two histograms, one pass over both sorted runs.
fn merge_counts(a: &[(i64, u64)], b: &[(i64, u64)]) -> Counts {
    let mut out = Vec::with_capacity(a.len().max(b.len()));
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        let (va, ca) = a[i];
        let (vb, cb) = b[j];
        if va < vb {
            out.push((va, ca));
            i += 1;
        } else if vb < va {
            out.push((vb, cb));
            j += 1;
        } else {
            out.push((va, ca + cb));
            i += 1;
            j += 1;
        }
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
    out
}

/// Nearest-rank quantile `p` of a histogram.
pub(super) fn hist_quantile(h: &[(i64, u64)], p: f64) -> f64 {
    let total: u64 = h.iter().map(|&(_, c)| c).sum();
    if total == 0 {
        return 0.0;
    }
    let rank = ((p * total as f64).ceil() as u64).clamp(1, total);
    let mut seen = 0u64;
    for &(v, c) in h {
        seen += c;
        if seen >= rank {
            return v as f64;
        }
    }
    0.0
}

/// The contours of a histogram set: `contours[q][bin]` for each of
/// [`QUANTILES`].
pub(super) fn contours(h: &Hist) -> Vec<Vec<f64>> {
    QUANTILES
        .iter()
        .map(|&p| h.iter().map(|b| hist_quantile(b, p)).collect())
        .collect()
}

/// (stable, largest absolute change of any contour value): stable when every
/// value moved by at most `tol`% of itself or `floor` events.
pub(super) fn stability(old: &[Vec<f64>], new: &[Vec<f64>], tol: f64, floor: f64) -> (bool, f64) {
    let mut ok = true;
    let mut worst = 0.0f64;
    for (a, b) in old.iter().zip(new) {
        for (&o, &n) in a.iter().zip(b) {
            let d = (n - o).abs();
            if d > (tol / 100.0 * o.abs()).max(floor) {
                ok = false;
            }
            worst = worst.max(d);
        }
    }
    (ok, worst)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_cover_every_rank_once() {
        for (n, points, min) in [
            (10_000, 25, 1),
            (10_000, 25, 16),
            (5, 25, 16),
            (1, 3, 1),
            (100, 1, 1),
        ] {
            let b = rank_bins(n, points, min);
            assert_eq!(b.first().unwrap().start, 1);
            assert_eq!(b.last().unwrap().end, n + 1);
            assert!(b.windows(2).all(|w| w[0].end == w[1].start));
            if n >= min {
                assert!(
                    b.iter().all(|x| x.end - x.start >= min),
                    "{n} {points} {min}: {b:?}"
                );
            }
        }
        assert_eq!(rank_bins(10_000, 25, 1)[0], RankBin { start: 1, end: 2 });
    }

    #[test]
    fn quantiles_are_nearest_rank() {
        let v: Counts = (1..=100).map(|x| (x, 1)).collect();
        assert_eq!(hist_quantile(&v, 0.5), 50.0);
        assert_eq!(hist_quantile(&v, 0.00135), 1.0);
        assert_eq!(hist_quantile(&v, 0.99865), 100.0);
        assert_eq!(hist_quantile(&v, 0.84134), 85.0);
        let v: Counts = vec![(0, 90), (7, 10)];
        assert_eq!(hist_quantile(&v, 0.9), 0.0);
        assert_eq!(hist_quantile(&v, 0.91), 7.0);
    }

    #[test]
    fn merged_histograms_add_counts_value_by_value() {
        let a = (vec![vec![(-2, 1), (0, 3), (5, 1)], vec![]], 2);
        let b = (vec![vec![(0, 1), (4, 2), (9, 1)], vec![(1, 1)]], 1);
        let want = vec![vec![(-2, 1), (0, 4), (4, 2), (5, 1), (9, 1)], vec![(1, 1)]];
        assert_eq!(merge(a.clone(), b.clone()), (want.clone(), 3));
        assert_eq!(merge(b.clone(), a.clone()), (want, 3));
        assert_eq!(merge((Vec::new(), 0), b.clone()), b);
    }

    #[test]
    fn stability_uses_relative_and_absolute_floors() {
        let a = vec![vec![100.0, 0.0]];
        assert_eq!(stability(&a, &[vec![101.0, 1.0]], 2.0, 1.0), (true, 1.0));
        assert!(!stability(&a, &[vec![103.0, 0.0]], 2.0, 1.0).0);
        assert!(!stability(&a, &[vec![100.0, 2.0]], 2.0, 1.0).0);
    }
}
