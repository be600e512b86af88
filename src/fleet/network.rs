//! The virtual network between replicas and the shared store: a seeded
//! round-trip time per message (fixed, log-normal, or drawn from measured
//! samples) and an optional loss probability. Deterministic: every draw
//! comes from the candidate's own seeded RNG, and the log-normal uses the
//! `libm` crate, never the platform's libm.

use super::deployment::{err, range, FieldError};
use crate::clock::{Nanos, MILLI};
use crate::rng::SimRng;
use crate::scenario::Scenario;
use rand::Rng;
use serde::Deserialize;

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

/// A CSV of round trips that does not read (the caller adds the file).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SamplesError {
    /// A line that is not a round trip in ms.
    #[error("line {line}: value {value:?}: expected a round trip in ms (0..=3600000)")]
    BadValue {
        /// Its line, from 1.
        line: usize,
        /// Its first field.
        value: String,
    },
    /// No round trip at all.
    #[error("no round trips: expected one number (ms) a line")]
    Empty,
}

/// Round trips in ms from a CSV: one number a line (a header line, one
/// word that is not a number, and blank lines are skipped); a line with
/// a second column is refused, not read in part. The message names the
/// line.
pub fn parse_samples(text: &str) -> Result<Vec<Nanos>, SamplesError> {
    let mut out = Vec::new();
    for (i, line) in text.trim_start_matches('\u{feff}').lines().enumerate() {
        let field = line.trim();
        if field.is_empty() {
            continue;
        }
        match field.parse::<f64>() {
            Ok(v) if (0.0..=3.6e6).contains(&v) => out.push((v * MILLI as f64).round() as Nanos),
            Err(_) if i == 0 && !field.contains(',') => continue,
            _ => {
                return Err(SamplesError::BadValue {
                    line: i + 1,
                    value: field.to_string(),
                })
            }
        }
    }
    if out.is_empty() {
        return Err(SamplesError::Empty);
    }
    Ok(out)
}

// The `network` field of a deployment: as written, then checked.

/// A latency object (`{"type": "fixed", "rtt_ms": 1}` and the others).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LatencyEntry {
    /// `fixed`, `lognormal` or `samples`.
    #[serde(rename = "type")]
    pub ty: String,
    /// fixed: the round trip, ms.
    pub rtt_ms: Option<f64>,
    /// lognormal: the median round trip, ms.
    pub median_ms: Option<f64>,
    /// lognormal: the shape.
    pub sigma: Option<f64>,
    /// samples: a CSV of round trips in ms, relative to the scenario.
    pub path: Option<String>,
}

/// A `per_replica` entry: `{"latency": {...}}` or the latency itself.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplicaNetworkEntry {
    latency: Option<LatencyEntry>,
    #[serde(rename = "type")]
    ty: Option<String>,
    rtt_ms: Option<f64>,
    median_ms: Option<f64>,
    sigma: Option<f64>,
    path: Option<String>,
}

/// The `network` object.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkEntry {
    /// Every message's round trip (default fixed 1 ms).
    pub latency: Option<LatencyEntry>,
    /// Share of messages lost (default 0).
    pub loss: Option<f64>,
    /// One latency a replica.
    pub per_replica: Option<Vec<ReplicaNetworkEntry>>,
}

/// The network every fleet of the grid runs on, checked.
#[derive(Debug, Clone)]
pub struct NetworkSpec {
    /// The round trip of a message.
    pub latency: Latency,
    /// Share of messages lost.
    pub loss: f64,
    /// Per replica, its own round trip (empty: `latency` for all).
    pub per_replica: Vec<Latency>,
}

/// The network checked. `replicas` is the most replicas a fleet of the
/// grid can have: `per_replica` needs one entry each.
pub(crate) fn check(
    v: Option<&NetworkEntry>,
    scenario: &Scenario,
    replicas: u64,
) -> std::result::Result<NetworkSpec, FieldError> {
    let field = "deployment.network";
    let Some(o) = v else {
        return Ok(NetworkSpec {
            latency: Latency::Fixed(MILLI),
            loss: 0.0,
            per_replica: Vec::new(),
        });
    };
    let loss = range(&format!("{field}.loss"), o.loss.unwrap_or(0.0), 0.0, 1.0)?;
    let lat = match &o.latency {
        None => Latency::Fixed(MILLI),
        Some(l) => latency(l, scenario, &format!("{field}.latency"))?,
    };
    let mut per = Vec::new();
    if let Some(a) = &o.per_replica {
        let f = format!("{field}.per_replica");
        if a.len() as u64 != replicas {
            return Err(err(
                &f,
                format!(
                    "{} entries: expected one per replica ({replicas}, the most replicas a fleet has)",
                    a.len()
                ),
            ));
        }
        for (i, e) in a.iter().enumerate() {
            let fi = format!("{f}[{i}]");
            let l = match &e.latency {
                Some(l) => {
                    let own = [
                        ("type", e.ty.is_some()),
                        ("rtt_ms", e.rtt_ms.is_some()),
                        ("median_ms", e.median_ms.is_some()),
                        ("sigma", e.sigma.is_some()),
                        ("path", e.path.is_some()),
                    ];
                    if let Some((k, _)) = own.iter().find(|p| p.1) {
                        return Err(err(format!("{fi}.{k}"), "unknown: expected latency"));
                    }
                    latency(l, scenario, &format!("{fi}.latency"))?
                }
                None => {
                    let l = LatencyEntry {
                        ty: e.ty.clone().unwrap_or_default(),
                        rtt_ms: e.rtt_ms,
                        median_ms: e.median_ms,
                        sigma: e.sigma,
                        path: e.path.clone(),
                    };
                    latency(&l, scenario, &fi)?
                }
            };
            per.push(l);
        }
    }
    Ok(NetworkSpec {
        latency: lat,
        loss,
        per_replica: per,
    })
}

/// A latency object checked; a `samples` file is read here.
pub(crate) fn latency(
    l: &LatencyEntry,
    scenario: &Scenario,
    f: &str,
) -> std::result::Result<Latency, FieldError> {
    let ty = l.ty.as_str();
    let allowed: &[&str] = match ty {
        "fixed" => &["type", "rtt_ms"],
        "lognormal" => &["type", "median_ms", "sigma"],
        "samples" => &["type", "path"],
        other => {
            return Err(err(
                format!("{f}.type"),
                format!("value {other:?}: expected fixed, lognormal or samples"),
            ))
        }
    };
    let given = [
        ("rtt_ms", l.rtt_ms.is_some()),
        ("median_ms", l.median_ms.is_some()),
        ("sigma", l.sigma.is_some()),
        ("path", l.path.is_some()),
    ];
    if let Some((k, _)) = given.iter().find(|p| p.1 && !allowed.contains(&p.0)) {
        return Err(err(
            format!("{f}.{k}"),
            format!("unknown for {ty}: expected one of {}", allowed.join(", ")),
        ));
    }
    let ns = |x: f64| (x * MILLI as f64).round() as Nanos;
    let k = |name: &str| format!("{f}.{name}");
    Ok(match ty {
        "fixed" => Latency::Fixed(ns(range(
            &k("rtt_ms"),
            l.rtt_ms.unwrap_or(1.0),
            0.0,
            3.6e6,
        )?)),
        "lognormal" => Latency::LogNormal {
            // A log-normal's median is positive (its log is the mean):
            // at least 1 ns.
            median: ns(range(
                &k("median_ms"),
                l.median_ms.unwrap_or(1.0),
                1e-6,
                3.6e6,
            )?),
            sigma: range(&k("sigma"), l.sigma.unwrap_or(0.5), 0.0, 5.0)?,
        },
        _ => {
            let p = l
                .path
                .as_deref()
                .ok_or_else(|| err(k("path"), "missing: expected a CSV of round trips in ms"))?;
            let path = scenario.resolve(p);
            // 64 MiB: millions of round trips, far more than a distribution
            // needs; `/dev/zero` is refused, not read.
            const MAX_SAMPLES_BYTES: u64 = 64 << 20;
            let bytes = crate::report::pending::read_bounded(
                &path,
                MAX_SAMPLES_BYTES,
                "a latency samples file",
            )
            .map_err(|e| err(k("path"), e.message()))?;
            let text = String::from_utf8(bytes).map_err(|e| {
                err(
                    k("path"),
                    format!(
                        "{}: byte {}: not valid UTF-8",
                        path.display(),
                        e.utf8_error().valid_up_to()
                    ),
                )
            })?;
            Latency::Samples(
                parse_samples(&text)
                    .map_err(|m| err(k("path"), format!("{}: {m}", path.display())))?,
            )
        }
    })
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
        let e = parse_samples("1\nfast\n").unwrap_err().to_string();
        assert!(e.contains("line 2") && e.contains("fast"), "{e}");
        // A second column is refused, not dropped; a first line that is a
        // number out of range is that number, not a header.
        let e = parse_samples("1,2\n").unwrap_err().to_string();
        assert!(e.contains("line 1") && e.contains("1,2"), "{e}");
        let e = parse_samples("1e300\n2\n").unwrap_err().to_string();
        assert!(e.contains("line 1") && e.contains("1e300"), "{e}");
        assert_eq!(
            parse_samples("\u{feff}1\r\n2\r\n").unwrap(),
            vec![1_000_000, 2_000_000]
        );
    }
}
