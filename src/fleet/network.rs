//! The virtual network between replicas and the shared store: a seeded
//! round-trip time per message (fixed, log-normal, or drawn from measured
//! samples) and an optional loss probability. Deterministic: every draw
//! comes from the candidate's own seeded RNG, and the log-normal uses the
//! `libm` crate, never the platform's libm.

use crate::clock::{Nanos, MILLI};
use crate::rng::SimRng;
use rand::Rng;

/// How round-trip times are drawn.
#[derive(Debug, Clone, PartialEq)]
pub enum Latency {
    /// Always this round trip.
    Fixed(Nanos),
    /// `median * exp(sigma * z)`, z standard normal (Box-Muller).
    LogNormal {
        /// Median round trip, ns.
        median: Nanos,
        /// Shape.
        sigma: f64,
    },
    /// Uniformly one of these measured round trips.
    Samples(Vec<Nanos>),
}

/// Round trips and losses for one candidate.
pub struct Network {
    latency: Latency,
    /// Replica `i`'s own round trip (`network.per_replica`), when given.
    per_replica: Vec<Latency>,
    loss: f64,
    rng: SimRng,
}

impl Network {
    /// A network drawing from `rng`.
    pub fn new(latency: Latency, loss: f64, rng: SimRng) -> Self {
        Self {
            latency,
            per_replica: Vec::new(),
            loss,
            rng,
        }
    }

    /// Replica `i` draws its round trips from `per[i]` (replicas past the
    /// list, from the common latency).
    ///
    /// # Examples
    /// ```
    /// use ratelab::fleet::{Latency, Network};
    /// let mut n = Network::new(Latency::Fixed(1_000_000), 0.0, ratelab::rng::sim_rng(1))
    ///     .with_per_replica(vec![Latency::Fixed(1_000_000), Latency::Fixed(9_000_000)]);
    /// assert_eq!((n.rtt_for(0), n.rtt_for(1), n.rtt()), (1_000_000, 9_000_000, 1_000_000));
    /// ```
    pub fn with_per_replica(mut self, per: Vec<Latency>) -> Self {
        self.per_replica = per;
        self
    }

    /// One round trip, ns (at least 2 ns: one each way).
    pub fn rtt(&mut self) -> Nanos {
        self.draw(None)
    }

    /// One round trip of replica `r`'s link.
    pub fn rtt_for(&mut self, r: usize) -> Nanos {
        self.draw(Some(r))
    }

    fn draw(&mut self, r: Option<usize>) -> Nanos {
        let lat = match r.and_then(|r| self.per_replica.get(r)) {
            Some(l) => l,
            None => &self.latency,
        };
        let v = match lat {
            Latency::Fixed(v) => *v,
            Latency::LogNormal { median, sigma } => {
                let u1: f64 = 1.0 - self.rng.random::<f64>();
                let u2: f64 = self.rng.random::<f64>();
                let z =
                    libm::sqrt(-2.0 * libm::log(u1)) * libm::cos(2.0 * std::f64::consts::PI * u2);
                (*median as f64 * libm::exp(sigma * z)).round() as Nanos
            }
            Latency::Samples(s) => s[self.rng.random_range(0..s.len())],
        };
        v.max(2)
    }

    /// A fair coin from the same seeded stream (gubernator's same-instant
    /// ties, as Go's `select` picks).
    pub fn coin(&mut self) -> bool {
        self.rng.random::<bool>()
    }

    /// Whether this message is lost (one draw only when loss is set, so a
    /// loss-free network draws the same round trips as before).
    pub fn lost(&mut self) -> bool {
        self.loss > 0.0 && self.rng.random::<f64>() < self.loss
    }
}

/// Round trips in ms from a CSV: one number a line (a header line and
/// blank lines are skipped); the message names the line.
pub fn parse_samples(text: &str) -> Result<Vec<Nanos>, String> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let field = line.split(',').next().unwrap_or("").trim();
        if field.is_empty() {
            continue;
        }
        match field.parse::<f64>() {
            Ok(v) if (0.0..=3.6e6).contains(&v) => out.push((v * MILLI as f64).round() as Nanos),
            _ if i == 0 => continue,
            _ => {
                return Err(format!(
                    "line {}: value {field:?}: expected a round trip in ms (0..=3600000)",
                    i + 1
                ))
            }
        }
    }
    if out.is_empty() {
        return Err("no round trips: expected one number (ms) a line".into());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::sim_rng;

    #[test]
    fn lognormal_has_its_median_and_is_seeded() {
        let mk = || {
            Network::new(
                Latency::LogNormal {
                    median: 1_000_000,
                    sigma: 0.5,
                },
                0.0,
                sim_rng(9),
            )
        };
        let mut a = mk();
        let mut v: Vec<Nanos> = (0..20_001).map(|_| a.rtt()).collect();
        let mut b = mk();
        assert!(v.iter().take(100).all(|&x| x == b.rtt()));
        v.sort_unstable();
        let med = v[10_000] as f64;
        assert!((med / 1e6 - 1.0).abs() < 0.03, "{med}");
    }

    #[test]
    fn samples_parse_with_a_header_and_name_a_bad_line() {
        assert_eq!(
            parse_samples("rtt_ms\n1.5\n\n2\n").unwrap(),
            vec![1_500_000, 2_000_000]
        );
        let e = parse_samples("1\nfast\n").unwrap_err();
        assert!(e.contains("line 2") && e.contains("fast"), "{e}");
    }
}
