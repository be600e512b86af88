//! What a difference from the baseline means: the direction table (which way
//! is better for each metric) and the statistical rule for values that have
//! a run-to-run distribution.
//!
//! **Statistical rule.** A value with a distribution (a mean with a sibling
//! `std` and the report's `runs`, or the per-run samples of a `runs` array)
//! is compared with Welch's two-sided t-test on the means. The difference is
//! significant when p < [`ALPHA`] *and* it is at least [`MIN_EFFECT`] of the
//! larger magnitude; otherwise it is "within noise". Everything else
//! (counts, timelines, configuration) is compared exactly (floats at a
//! relative 1e-9, which only absorbs printing).

/// Significance level of the two-sided Welch test.
pub const ALPHA: f64 = 0.001;

/// Smallest difference that counts, relative to the larger magnitude.
pub const MIN_EFFECT: f64 = 0.01;

/// Which way a metric is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Higher is better (accuracy).
    Up,
    /// Lower is better (errors, wrong decisions); signed errors by magnitude.
    Down,
    /// Lower is better, but set by the configuration (memory): when the
    /// element's configuration changed it only follows it.
    Cost,
    /// Configuration: a difference is a change of setup, not of quality.
    Config,
    /// A description of the workload (how many keys, events, the top key's
    /// events): it follows the seed and the shape, and says nothing about a
    /// limiter's or a sketch's accuracy, so a difference is a change, never
    /// a regression (a reseeded Zipf draws other keys).
    Describe,
    /// No direction known: any difference regresses.
    Exact,
}

/// The direction table: field-name pattern -> direction. A pattern is a
/// field name, `prefix*`, `*suffix`, or `parent.*` (every field below an
/// object of that name). The first match wins; unlisted fields are exact.
pub const DIRECTIONS: &[(&str, Direction)] = &[
    ("exact_pct", Direction::Up),
    ("memory*", Direction::Cost),
    ("mean", Direction::Down),
    ("p99", Direction::Down),
    ("max", Direction::Down),
    ("over_bound_pct", Direction::Down),
    ("faults", Direction::Down),
    ("error*", Direction::Down),
    ("*_error", Direction::Down),
    ("false_allow*", Direction::Down),
    ("false_deny*", Direction::Down),
    ("wrong*", Direction::Down),
    ("compliant_denied*", Direction::Down),
    ("compliant_keys_hit", Direction::Down),
    ("limited_excess*", Direction::Down),
    ("worst_window_ratio", Direction::Down),
    ("leaked_end", Direction::Down),
    ("bound_*", Direction::Config),
    ("seed", Direction::Config),
    ("runs", Direction::Config),
    ("hashes", Direction::Config),
    ("slots", Direction::Config),
    ("variant", Direction::Config),
    ("hasher", Direction::Config),
    ("overflow", Direction::Config),
    ("backend", Direction::Config),
    ("config.*", Direction::Config),
    ("shape.*", Direction::Config),
    ("stopping.*", Direction::Config),
    // After `shape.*`: `workload.shape.keys` is configuration, the rest of
    // `workload` (and a decision report's `requests` and `classes`) what
    // the seed drew.
    ("workload.*", Direction::Describe),
    ("requests.*", Direction::Describe),
    ("classes.*", Direction::Describe),
];

fn name_matches(pattern: &str, name: &str) -> bool {
    if let Some(p) = pattern.strip_suffix('*') {
        name.starts_with(p)
    } else if let Some(s) = pattern.strip_prefix('*') {
        name.ends_with(s)
    } else {
        pattern == name
    }
}

/// The direction of a field, from its object keys (outermost first).
pub fn direction(keys: &[&str]) -> Direction {
    let Some(leaf) = keys.last() else {
        return Direction::Exact;
    };
    for (pattern, d) in DIRECTIONS {
        let hit = match pattern.strip_suffix(".*") {
            Some(parent) => keys[..keys.len() - 1].contains(&parent),
            None => name_matches(pattern, leaf),
        };
        if hit {
            return *d;
        }
    }
    Direction::Exact
}

impl Direction {
    /// Whether moving from `base` to `now` is better (Some(true)), worse
    /// (Some(false)), or has no quality meaning (None).
    pub fn better(self, base: f64, now: f64) -> Option<bool> {
        match self {
            Direction::Up => Some(now > base),
            Direction::Down | Direction::Cost => Some(now.abs() < base.abs()),
            Direction::Config | Direction::Describe | Direction::Exact => None,
        }
    }

    /// How the direction reads in the output.
    pub fn label(self) -> &'static str {
        match self {
            Direction::Up => "higher is better",
            Direction::Down | Direction::Cost => "lower is better",
            Direction::Config => "configuration",
            Direction::Describe => "describes the workload",
            Direction::Exact => "exact",
        }
    }
}

/// A run-to-run distribution of one value: mean, standard deviation, runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Dist {
    /// Mean over the runs.
    pub mean: f64,
    /// Sample standard deviation (n − 1 in the denominator).
    pub std: f64,
    /// Number of runs, as a float because the Welch formula divides by it.
    pub n: f64,
}

impl Dist {
    /// From per-run samples (None with fewer than 2).
    pub fn of(samples: &[f64]) -> Option<Dist> {
        let n = samples.len();
        if n < 2 {
            return None;
        }
        let mean = samples.iter().sum::<f64>() / n as f64;
        let var = samples.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1) as f64;
        Some(Dist {
            mean,
            std: var.sqrt(),
            n: n as f64,
        })
    }

    /// Standard error of the mean.
    pub fn se(&self) -> f64 {
        self.std / self.n.sqrt()
    }
}

/// Outcome of the statistical comparison.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Test {
    /// Two-sided p-value of Welch's t-test.
    pub p: f64,
    /// Whether the difference counts (p < ALPHA and at least MIN_EFFECT).
    pub significant: bool,
}

/// Welch's t-test on the means of `a` and `b`, with the minimum effect.
pub fn welch(a: &Dist, b: &Dist) -> Test {
    let diff = (a.mean - b.mean).abs();
    let big_enough = diff >= MIN_EFFECT * a.mean.abs().max(b.mean.abs()) && diff > 0.0;
    let va = a.std * a.std / a.n;
    let vb = b.std * b.std / b.n;
    let se2 = va + vb;
    let p = if diff == 0.0 {
        1.0
    } else if se2 <= 0.0 || !se2.is_finite() {
        0.0
    } else {
        let t = diff / se2.sqrt();
        let df = se2 * se2 / (va * va / (a.n - 1.0) + vb * vb / (b.n - 1.0));
        student_t_two_sided(t, df)
    };
    Test {
        p,
        significant: big_enough && p < ALPHA,
    }
}

/// P(|T| >= t) for Student's t with `df` degrees of freedom.
pub fn student_t_two_sided(t: f64, df: f64) -> f64 {
    let x = df / (df + t * t);
    inc_beta(df / 2.0, 0.5, x).clamp(0.0, 1.0)
}

fn ln_gamma(x: f64) -> f64 {
    // Lanczos approximation (g = 7, n = 9).
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        let pi = std::f64::consts::PI;
        return libm::log(pi / libm::sin(pi * x)) - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = C[0];
    let t = x + 7.5;
    for (i, c) in C.iter().enumerate().skip(1) {
        a += c / (x + i as f64);
    }
    0.5 * libm::log(2.0 * std::f64::consts::PI) + (x + 0.5) * libm::log(t) - t + libm::log(a)
}

/// Regularized incomplete beta I_x(a, b).
fn inc_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let front = libm::exp(
        ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * libm::log(x) + b * libm::log(1.0 - x),
    );
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_cf(a, b, x) / a
    } else {
        1.0 - front * beta_cf(b, a, 1.0 - x) / b
    }
}

fn beta_cf(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 - qab * x / qap;
    if d.abs() < TINY {
        d = TINY;
    }
    d = 1.0 / d;
    let mut h = d;
    for m in 1..300 {
        let m = m as f64;
        let m2 = 2.0 * m;
        // Lentz's step: the even then the odd term of the fraction.
        let mut lentz = |aa: f64| {
            d = 1.0 + aa * d;
            if d.abs() < TINY {
                d = TINY;
            }
            c = 1.0 + aa / c;
            if c.abs() < TINY {
                c = TINY;
            }
            d = 1.0 / d;
            d * c
        };
        h *= lentz(m * (b - m) * x / ((qam + m2) * (a + m2)));
        let del = lentz(-(a + m) * (qab + m) * x / ((a + m2) * (qap + m2)));
        h *= del;
        if (del - 1.0).abs() < 1e-14 {
            break;
        }
    }
    h
}

/// `x` rounded to what its noise allows: two significant digits of the
/// standard error (or 6 significant digits without one).
pub fn round_to_noise(x: f64, se: Option<f64>) -> String {
    if !x.is_finite() {
        return x.to_string();
    }
    match se {
        Some(se) if se > 0.0 && se.is_finite() => {
            let decimals = (1.0 - libm::log10(se).floor()).max(0.0) as usize;
            let decimals = decimals.min(12);
            if decimals == 0 {
                let step = libm::pow(10.0, libm::log10(se).floor() - 1.0);
                format!("{}", (x / step).round() * step)
            } else {
                format!("{x:.decimals$}")
            }
        }
        _ => {
            if x == x.trunc() && x.abs() < 1e15 {
                format!("{x}")
            } else {
                let mag = libm::log10(x.abs()).floor() as i32;
                let decimals = (5 - mag).clamp(0, 12) as usize;
                let s = format!("{x:.decimals$}");
                if s.contains('.') {
                    s.trim_end_matches('0').trim_end_matches('.').to_string()
                } else {
                    s
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn student_t_matches_tables() {
        // t = 2.776 with 4 df is the 5% two-sided critical value.
        assert!((student_t_two_sided(2.776, 4.0) - 0.05).abs() < 1e-3);
        assert!((student_t_two_sided(8.610, 4.0) - 0.001).abs() < 1e-4);
        assert!((student_t_two_sided(1.96, 1e6) - 0.05).abs() < 1e-3);
    }

    fn dist(mean: f64, std: f64, n: f64) -> Dist {
        Dist { mean, std, n }
    }

    #[test]
    fn welch_needs_significance_and_effect() {
        let a = dist(29.5, 0.34, 5.0);
        let noise = dist(29.8, 0.30, 5.0);
        assert!(!welch(&a, &noise).significant);
        let worse = dist(10.0, 0.5, 5.0);
        assert!(welch(&a, &worse).significant);
        // Significant but below the minimum effect.
        let tiny = dist(29.51, 0.0, 5.0);
        let z = dist(29.5, 0.0, 5.0);
        assert!(!welch(&z, &tiny).significant);
    }

    #[test]
    fn direction_table() {
        assert_eq!(direction(&["rows", "exact_pct"]), Direction::Up);
        assert_eq!(
            direction(&["rows", "harm", "compliant_denied_pct"]),
            Direction::Down
        );
        assert_eq!(direction(&["rows", "memory_bytes"]), Direction::Cost);
        assert_eq!(direction(&["rows", "config", "hashes"]), Direction::Config);
        assert_eq!(direction(&["workload", "shape", "keys"]), Direction::Config);
        assert_eq!(direction(&["workload", "keys"]), Direction::Describe);
        assert_eq!(
            direction(&["workload", "top_key_events"]),
            Direction::Describe
        );
        assert_eq!(direction(&["requests", "keys"]), Direction::Describe);
        assert_eq!(direction(&["cases", "admitted_ns"]), Direction::Exact);
        assert_eq!(Direction::Down.better(-40.0, -20.0), Some(true));
    }

    #[test]
    fn rounding_follows_noise() {
        assert_eq!(round_to_noise(29.512345, Some(0.152)), "29.51");
        assert_eq!(round_to_noise(75047.2, Some(15811.0)), "75000");
        assert_eq!(round_to_noise(120.73436123456789, None), "120.734");
        assert_eq!(round_to_noise(65536.0, None), "65536");
    }
}
