//! The random variates that feed simulations, computed the same way on every
//! target.
//!
//! `f64::ln`, `exp`, `powf`, `cos` and the like call the platform's libm, and
//! glibc, musl and macOS disagree in the last bit for some inputs; one ulp can
//! move an arrival across a window edge and change a decision count. So every
//! transcendental function here (and everywhere else a value feeds a
//! simulation or a report) comes from the pure-Rust `libm` crate, whose
//! results depend only on its source. `+ − × ÷` and `sqrt` are correctly
//! rounded by IEEE 754 and need no such care; `libm` may use a hardware
//! instruction for those, with the same result.
//!
//! * [`Exp`]: inversion, `−ln(1 − u)/λ` with `u` uniform on `[0, 1)` from the
//!   top 53 bits of one `u64` (`1 − u` is then exact and never 0). One `u64`
//!   per draw.
//! * [`Zipf`]: rejection-inversion (Hörmann and Derflinger, "Rejection-inversion
//!   to generate variates from monotone discrete distributions", 1996): a
//!   continuous hat `x^−s` integrated in closed form and inverted, accepted
//!   or rejected per draw; O(1) memory and set-up for any number of keys,
//!   one or more `u64` per draw (the acceptance rate is above 90 %). Uses
//!   `libm::log`, `exp`, `expm1` and `log1p`.
//!
//! `tests/it/samplers.rs` pins a few hundred draws of each, bit for bit.

use rand::Rng;

/// A uniform `f64` on `[0, 1)`: the top 53 bits of one `u64`, scaled by 2⁻⁵³
/// (exact, the same on every target; the same value `rand`'s `random::<f64>()`
/// gives).
#[inline]
pub fn unit<R: Rng + ?Sized>(rng: &mut R) -> f64 {
    (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// The exponential distribution of rate `λ` (mean `1/λ`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Exp {
    rate: f64,
}

impl Exp {
    /// `None` unless `rate` is positive (`+∞` allowed: every draw is 0) and
    /// not NaN.
    pub fn new(rate: f64) -> Option<Self> {
        (rate > 0.0).then_some(Self { rate })
    }

    /// One draw: `−ln(1 − u)/λ`, in `[0, 37.5/λ]`.
    #[inline]
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> f64 {
        -libm::log(1.0 - unit(rng)) / self.rate
    }
}

/// Zipf's distribution over ranks `1..=n`: `P(k) ∝ k^−s`, `s ≥ 0`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Zipf {
    n: f64,
    s: f64,
    /// `H(1.5) − 1`: the top of the hat's integral, rank 1's cell shifted so
    /// that rank 1 is drawn exactly with its probability.
    h_x1: f64,
    /// `H(n + 0.5)`.
    h_n: f64,
    /// Draws `x` with `k − x ≤ shortcut` are accepted without the test.
    shortcut: f64,
}

/// `(eᵗ − 1)/t`, continuous at 0.
fn expm1_over(t: f64) -> f64 {
    if t.abs() > 1e-8 {
        libm::expm1(t) / t
    } else {
        1.0 + t * 0.5 * (1.0 + t / 3.0 * (1.0 + t * 0.25))
    }
}

/// `ln(1 + t)/t`, continuous at 0.
fn log1p_over(t: f64) -> f64 {
    if t.abs() > 1e-8 {
        libm::log1p(t) / t
    } else {
        1.0 - t * (0.5 - t * (1.0 / 3.0 - t * 0.25))
    }
}

impl Zipf {
    /// `None` unless `n ≥ 1` and `s` is finite and `≥ 0`.
    pub fn new(n: u64, s: f64) -> Option<Self> {
        if n == 0 || !(s >= 0.0 && s.is_finite()) {
            return None;
        }
        let mut z = Self {
            n: n as f64,
            s,
            h_x1: 0.0,
            h_n: 0.0,
            shortcut: 0.0,
        };
        z.h_x1 = z.big_h(1.5) - 1.0;
        z.h_n = z.big_h(z.n + 0.5);
        z.shortcut = 2.0 - z.big_h_inv(z.big_h(2.5) - z.h(2.0));
        Some(z)
    }

    /// The hat `x^−s`.
    fn h(&self, x: f64) -> f64 {
        libm::exp(-self.s * libm::log(x))
    }

    /// `∫₁ˣ t^−s dt` = `(x^(1−s) − 1)/(1 − s)` (`ln x` at `s = 1`).
    fn big_h(&self, x: f64) -> f64 {
        let lx = libm::log(x);
        expm1_over((1.0 - self.s) * lx) * lx
    }

    /// The inverse of [`Self::big_h`].
    fn big_h_inv(&self, y: f64) -> f64 {
        let t = (1.0 - self.s) * y;
        // Below −1 the integral has no preimage (only reachable by rounding
        // at huge s): the smallest rank.
        let t = t.max(-1.0);
        libm::exp(log1p_over(t) * y)
    }

    /// One rank in `1..=n`.
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        loop {
            let u = self.h_n + unit(rng) * (self.h_x1 - self.h_n);
            let x = self.big_h_inv(u);
            let k = (x + 0.5).floor().clamp(1.0, self.n);
            if k - x <= self.shortcut || u >= self.big_h(k + 0.5) - self.h(k) {
                return k as u64;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::sim_rng;

    #[test]
    fn unit_is_rands_f64() {
        let mut a = sim_rng(7);
        let mut b = sim_rng(7);
        for _ in 0..1000 {
            let x: f64 = a.random();
            assert_eq!(x.to_bits(), unit(&mut b).to_bits());
        }
    }

    #[test]
    fn exp_mean_is_one_over_rate() {
        let e = Exp::new(4.0).unwrap();
        let mut r = sim_rng(1);
        let n = 200_000;
        let m: f64 = (0..n).map(|_| e.sample(&mut r)).sum::<f64>() / n as f64;
        assert!((m - 0.25).abs() < 0.003, "{m}");
        assert!(Exp::new(0.0).is_none() && Exp::new(f64::NAN).is_none());
    }

    #[test]
    fn zipf_frequencies_follow_k_to_the_minus_s() {
        for &(n, s) in &[(10u64, 1.0), (50, 0.0), (20, 1.3), (5, 0.5), (1, 2.0)] {
            let z = Zipf::new(n, s).unwrap();
            let mut r = sim_rng(n ^ s.to_bits());
            let draws = 400_000;
            let mut hist = vec![0u64; n as usize];
            for _ in 0..draws {
                let k = z.sample(&mut r);
                assert!((1..=n).contains(&k));
                hist[k as usize - 1] += 1;
            }
            let norm: f64 = (1..=n).map(|k| libm::pow(k as f64, -s)).sum();
            for (i, &c) in hist.iter().enumerate() {
                let p = libm::pow((i + 1) as f64, -s) / norm;
                let got = c as f64 / draws as f64;
                let sd = (p * (1.0 - p) / draws as f64).sqrt();
                assert!(
                    (got - p).abs() <= 5.0 * sd + 1e-9,
                    "n={n} s={s} k={}: {got} vs {p}",
                    i + 1
                );
            }
        }
        assert!(Zipf::new(0, 1.0).is_none() && Zipf::new(3, -0.1).is_none());
        assert!(Zipf::new(3, f64::INFINITY).is_none());
    }

    #[test]
    fn zipf_huge_n_and_s_stay_in_range() {
        for &(n, s) in &[(u64::MAX, 1.0), (1 << 40, 0.2), (1000, 60.0), (7, 1e-12)] {
            let z = Zipf::new(n, s).unwrap();
            let mut r = sim_rng(3);
            for _ in 0..10_000 {
                let k = z.sample(&mut r);
                assert!(k >= 1 && (k as f64) <= n as f64, "{n} {s}: {k}");
            }
        }
    }
}
