//! Binomial variates, computed the same way on every target: the building
//! block of drawing a sampled workload's per-key counts (a multinomial, as
//! conditional binomials) and of splitting a multiset into shuffled chunks.
//!
//! * `n·min(p, 1−p) < 10`: inversion (sequential search from 0, the pmf by
//!   its recurrence `P(x+1) = P(x)·((n+1)·p/q/(x+1) − p/q)`); expected
//!   `1 + n·p` steps.
//! * otherwise BTRD, Hörmann's transformed rejection with decomposition
//!   ("The generation of binomial random variates", J. Statist. Comput.
//!   Simul. 46, 1993): a few uniforms per draw whatever `n`, with an
//!   exact acceptance test from Stirling's series.
//!
//! Transcendentals come from the `libm` crate (see [`super::dist`]); the
//! uniforms are [`unit()`]. `tests/it/samplers.rs` pins draws; the unit tests
//! check the distribution against the exact pmf (chi-square).

use super::dist::unit;
use rand::Rng;

/// Below this `n·p` (`p ≤ ½`) the draw is by inversion.
const INVERSION_BELOW: f64 = 10.0;

/// One draw of Binomial(`n`, `p`): the number of successes in `n`
/// independent trials of probability `p` (clamped to `[0, 1]`; NaN is 0).
///
/// # Examples
///
/// ```
/// use ratelab::workload::binomial::binomial;
/// let mut rng = ratelab::rng::sim_rng(1);
/// let x = binomial(&mut rng, 1_000_000, 0.25);
/// assert!((249_000..=251_000).contains(&x));
/// assert_eq!(binomial(&mut rng, 7, 1.0), 7);
/// ```
pub fn binomial<R: Rng + ?Sized>(rng: &mut R, n: u64, p: f64) -> u64 {
    if n == 0 || p.is_nan() || p <= 0.0 {
        return 0;
    }
    if p >= 1.0 {
        return n;
    }
    if p > 0.5 {
        return n - binomial(rng, n, 1.0 - p);
    }
    if n as f64 * p < INVERSION_BELOW {
        let q = 1.0 - p;
        inversion(rng, n, p, libm::exp(n as f64 * libm::log1p(-p)), p / q)
    } else {
        Btrd::new(n, p).sample(rng)
    }
}

/// [`binomial`] with `ln_q = ln(1 − p)` known (a multinomial's conditional
/// probabilities are fixed per key, so it is computed once): the same
/// distribution, one `log1p` fewer per inversion draw. `ln_q` must be
/// `libm::log1p(-p)`.
#[inline]
pub fn binomial_ln_q<R: Rng + ?Sized>(rng: &mut R, n: u64, p: f64, ln_q: f64) -> u64 {
    if n == 0 || p.is_nan() || p <= 0.0 {
        return 0;
    }
    if p < 0.5 && (n as f64) * p < INVERSION_BELOW {
        inversion(rng, n, p, libm::exp(n as f64 * ln_q), p / (1.0 - p))
    } else {
        binomial(rng, n, p)
    }
}

/// Inversion from 0: `r0 = q^n` is P(0), `s = p/q`. Restarts in the
/// (floating-point) case that the search runs past `n` or the pmf underflows.
#[inline]
fn inversion<R: Rng + ?Sized>(rng: &mut R, n: u64, p: f64, r0: f64, s: f64) -> u64 {
    debug_assert!(p <= 0.5);
    let a = (n as f64 + 1.0) * s;
    loop {
        let mut u = unit(rng);
        let mut r = r0;
        let mut x = 0u64;
        loop {
            if u < r {
                return x;
            }
            u -= r;
            x += 1;
            if x > n {
                break;
            }
            r *= a / x as f64 - s;
            if r <= 0.0 {
                break;
            }
        }
    }
}

/// Binomial(`n`, `p`) draws for one fixed `p` and many `n` (the chunked
/// shuffle splits every key's remaining count with the same `p`): P(0) for
/// small `n` is tabled, so a draw that returns 0 costs one uniform.
#[derive(Debug, Clone)]
pub struct Splitter {
    p: f64,
    /// `q^n` for `n < TABLE`, by repeated multiplication (exact IEEE
    /// products: the same on every target).
    q_pow: Vec<f64>,
}

/// Counts below this use the table.
const TABLE: usize = 256;

impl Splitter {
    /// A splitter of probability `p` (in `(0, 1]`; ≥ ½ draws through
    /// [`binomial`]).
    pub fn new(p: f64) -> Self {
        let q = 1.0 - p;
        let mut q_pow = Vec::with_capacity(TABLE);
        let mut v = 1.0;
        for _ in 0..TABLE {
            q_pow.push(v);
            v *= q;
        }
        Self { p, q_pow }
    }

    /// One draw of Binomial(`n`, p).
    #[inline]
    pub fn draw<R: Rng + ?Sized>(&self, rng: &mut R, n: u64) -> u64 {
        let p = self.p;
        if p < 0.5 && (n as usize) < TABLE && (n as f64) * p < INVERSION_BELOW {
            inversion(rng, n, p, self.q_pow[n as usize], p / (1.0 - p))
        } else {
            binomial(rng, n, p)
        }
    }
}

/// The set-up of BTRD for one (n, p), `p ≤ ½`, `n·p ≥ 10`.
struct Btrd {
    n: f64,
    m: f64,
    r: f64,
    nr: f64,
    npq: f64,
    a: f64,
    b: f64,
    c: f64,
    alpha: f64,
    v_r: f64,
    u_rv_r: f64,
}

impl Btrd {
    fn new(n: u64, p: f64) -> Self {
        let nf = n as f64;
        let q = 1.0 - p;
        let spq = (nf * p * q).sqrt();
        let b = 1.15 + 2.53 * spq;
        let v_r = 0.92 - 4.2 / b;
        Self {
            n: nf,
            m: ((nf + 1.0) * p).floor(),
            r: p / q,
            nr: (nf + 1.0) * (p / q),
            npq: nf * p * q,
            a: -0.0873 + 0.0248 * b + 0.01 * p,
            b,
            c: nf * p + 0.5,
            alpha: (2.83 + 5.1 / b) * spq,
            v_r,
            u_rv_r: 0.86 * v_r,
        }
    }

    fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        let Self {
            n,
            m,
            r,
            nr,
            npq,
            a,
            b,
            c,
            alpha,
            v_r,
            u_rv_r,
        } = *self;
        loop {
            let mut v = unit(rng);
            let u;
            if v <= u_rv_r {
                // The box in the middle of the hat: accepted at once.
                let u = v / v_r - 0.43;
                return ((2.0 * a / (0.5 - u.abs()) + b) * u + c).floor() as u64;
            }
            if v >= v_r {
                u = unit(rng) - 0.5;
            } else {
                let w = v / v_r - 0.93;
                u = 0.5f64.copysign(w) - w;
                v = unit(rng) * v_r;
            }
            let us = 0.5 - u.abs();
            let k = ((2.0 * a / us + b) * u + c).floor();
            if k < 0.0 || k > n {
                continue;
            }
            v = v * alpha / (a / (us * us) + b);
            let km = (k - m).abs();
            if km <= 15.0 {
                // The pmf ratio f(k)/f(m) by its recurrence.
                let mut f = 1.0;
                if m < k {
                    let mut i = m;
                    while i < k {
                        i += 1.0;
                        f *= nr / i - r;
                    }
                } else if m > k {
                    let mut i = k;
                    while i < m {
                        i += 1.0;
                        v *= nr / i - r;
                    }
                }
                if v <= f {
                    return k as u64;
                }
                continue;
            }
            // Squeeze on the log scale, then the exact test.
            let v = libm::log(v);
            let rho = (km / npq) * (((km / 3.0 + 0.625) * km + 1.0 / 6.0) / npq + 0.5);
            let t = -km * km / (2.0 * npq);
            if v < t - rho {
                return k as u64;
            }
            if v > t + rho {
                continue;
            }
            let nm = n - m + 1.0;
            let h = (m + 0.5) * libm::log((m + 1.0) / (r * nm)) + stirling(m) + stirling(n - m);
            let nk = n - k + 1.0;
            if v <= h + (n + 1.0) * libm::log(nm / nk) + (k + 0.5) * libm::log(nk * r / (k + 1.0))
                - stirling(k)
                - stirling(n - k)
            {
                return k as u64;
            }
        }
    }
}

/// The remainder of Stirling's series: `ln k! − ((k+½)·ln(k+1) − (k+1) +
/// ½·ln 2π)`, exactly (by `lgamma`) below 10, by the series' first three
/// terms above (error < 1e-12 there).
fn stirling(k: f64) -> f64 {
    if k < 10.0 {
        let k1 = k + 1.0;
        libm::lgamma(k1)
            - ((k + 0.5) * libm::log(k1) - k1 + 0.5 * libm::log(2.0 * std::f64::consts::PI))
    } else {
        let k1 = k + 1.0;
        let k1s = k1 * k1;
        (1.0 / 12.0 - (1.0 / 360.0 - 1.0 / 1260.0 / k1s) / k1s) / k1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::sim_rng;

    /// ln of the Binomial(n, p) pmf at k.
    fn ln_pmf(n: u64, p: f64, k: u64) -> f64 {
        let (nf, kf) = (n as f64, k as f64);
        libm::lgamma(nf + 1.0) - libm::lgamma(kf + 1.0) - libm::lgamma(nf - kf + 1.0)
            + kf * libm::log(p)
            + (nf - kf) * libm::log1p(-p)
    }

    /// Chi-square of `draws` samples against the exact pmf, cells with an
    /// expected count under 20 pooled; returns (statistic, degrees of freedom).
    fn chi_square(n: u64, p: f64, draws: usize, seed: u64) -> (f64, usize) {
        let mut rng = sim_rng(seed);
        let mut hist = std::collections::BTreeMap::new();
        for _ in 0..draws {
            let x = binomial(&mut rng, n, p);
            assert!(x <= n);
            *hist.entry(x).or_insert(0u64) += 1;
        }
        let mean = n as f64 * p;
        let sd = (mean * (1.0 - p)).sqrt();
        let lo = (mean - 8.0 * sd - 2.0).max(0.0) as u64;
        let hi = ((mean + 8.0 * sd + 2.0) as u64).min(n);
        let (mut stat, mut cells) = (0.0, 0usize);
        let (mut exp_acc, mut obs_acc) = (0.0, 0.0);
        let mut covered = 0.0;
        for k in lo..=hi {
            let e = libm::exp(ln_pmf(n, p, k)) * draws as f64;
            covered += e;
            exp_acc += e;
            obs_acc += hist.get(&k).copied().unwrap_or(0) as f64;
            if exp_acc >= 20.0 {
                stat += (obs_acc - exp_acc) * (obs_acc - exp_acc) / exp_acc;
                cells += 1;
                exp_acc = 0.0;
                obs_acc = 0.0;
            }
        }
        assert!(covered > 0.999 * draws as f64, "window misses mass");
        let outside: u64 = hist
            .iter()
            .filter(|(k, _)| **k < lo || **k > hi)
            .map(|(_, &c)| c)
            .sum();
        assert!(outside <= 2, "{outside} draws outside mean ± 8 sd");
        (stat, cells.saturating_sub(1))
    }

    #[test]
    fn matches_the_exact_pmf_on_both_methods() {
        // inversion: n·p < 10; BTRD: n·p >= 10, small and huge n, both tails
        // of the recursive (km <= 15) and the log-scale tests.
        for &(n, p) in &[
            (1u64, 0.3),
            (20, 0.05),
            (1000, 0.009),
            (30, 0.5),
            (40, 0.3),
            (100, 0.45),
            (1000, 0.25),
            (100_000, 0.01),
            (10_000_000, 0.37),
            (50, 0.8),
        ] {
            let (stat, df) = chi_square(n, p, 200_000, n ^ p.to_bits());
            // chi-square with df degrees of freedom: mean df, sd sqrt(2 df);
            // 6 sd is a false alarm once in ~10^9.
            let limit = df as f64 + 6.0 * (2.0 * df as f64).sqrt();
            assert!(stat < limit, "n={n} p={p}: chi2 {stat:.1} on {df} df");
        }
    }

    #[test]
    fn mean_and_variance_for_huge_n() {
        let (n, p) = (1u64 << 40, 1e-3);
        let mut rng = sim_rng(9);
        let draws = 20_000;
        let xs: Vec<f64> = (0..draws)
            .map(|_| binomial(&mut rng, n, p) as f64)
            .collect();
        let mean = xs.iter().sum::<f64>() / draws as f64;
        let var = xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (draws - 1) as f64;
        let (m, v) = (n as f64 * p, n as f64 * p * (1.0 - p));
        assert!(
            (mean - m).abs() < 5.0 * (v / draws as f64).sqrt(),
            "{mean} vs {m}"
        );
        assert!((var / v - 1.0).abs() < 0.05, "{var} vs {v}");
    }

    #[test]
    fn edges_and_splitter_agree_with_binomial() {
        let mut rng = sim_rng(1);
        assert_eq!(binomial(&mut rng, 0, 0.5), 0);
        assert_eq!(binomial(&mut rng, 9, 0.0), 0);
        assert_eq!(binomial(&mut rng, 9, f64::NAN), 0);
        assert_eq!(binomial(&mut rng, 9, 1.5), 9);
        // The splitter's table gives the same draws as the direct inversion
        // (the tabled q^n only differs from exp(n·log1p(-p)) in the last bits,
        // so compare distributions, not bits).
        let s = Splitter::new(0.125);
        let mut a = sim_rng(5);
        let total: u64 = (0..100_000).map(|_| s.draw(&mut a, 40)).sum();
        let mean = total as f64 / 100_000.0;
        assert!((mean - 5.0).abs() < 0.05, "{mean}");
        assert_eq!(s.draw(&mut a, 0), 0);
        assert_eq!(Splitter::new(1.0).draw(&mut a, 17), 17);
    }
}
