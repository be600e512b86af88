//! The decision lab's candidates: a table with one row per limiter model.
//! Adding a limiter to the lab (and to `replay --algo limiter`) is one
//! model file in `src/model/` plus one row here.
//!
//! Each row builds its candidates for the scenario's policy; the rows'
//! order is the order of the report's table. Only the rows marked
//! `default` run in every decision scenario ([`candidates`]); the others
//! are built by name ([`model_candidates`]), so adding a model does not
//! change the committed reports.

use super::Policy;
use crate::clock::{Nanos, MILLI, SECOND};
use crate::error::{Error, Result};
use crate::lab::Shape;
use crate::model::estimator::EstimatorConfig;
use crate::model::fixed_window::{FixedWindow, TowerRate};
use crate::model::fixed_window_counter::{FixedWindowAlign, FixedWindowCounter};
use crate::model::gcra::Gcra;
use crate::model::governor::GovernorKeyed;
use crate::model::leaky_bucket::{DenyIfWait, LeakyBucket, LeakyBucketConfig};
use crate::model::rate_limiter::{RateLimiter, RateMode};
use crate::model::sliding_window_counter::SlidingWindowCounter;
use crate::model::token_bucket::TokenBucket;
use crate::model::{Admit, Global, PerKey};
use crate::rng::{derive_seed, stream};
use std::time::Duration;

/// One limiter under test: its label, its family (one chart series per
/// family) and the model deciding its requests.
pub struct Candidate {
    /// Label in tables and charts (unique in a run).
    pub name: String,
    /// Family: candidates of one family differ only in a parameter (a
    /// sketch shape, say) and share a chart series.
    pub family: String,
    /// The model.
    pub limiter: Box<dyn Admit>,
}

impl Candidate {
    /// A candidate whose family is its name.
    ///
    /// # Examples
    /// ```
    /// use ratelab::lab::decision::Candidate;
    /// use ratelab::model::governor::GovernorKeyed;
    /// use std::time::Duration;
    /// let c = Candidate::new("ours", Box::new(GovernorKeyed::new(Duration::from_millis(10), 100)?));
    /// assert_eq!(c.family, "ours");
    /// # Ok::<(), ratelab::error::Error>(())
    /// ```
    pub fn new(name: impl Into<String>, limiter: Box<dyn Admit>) -> Self {
        let name = name.into();
        Self {
            family: name.clone(),
            name,
            limiter,
        }
    }
}

/// What a row needs to build its candidates.
#[derive(Debug, Clone)]
pub struct Setup {
    /// The policy every candidate enforces.
    pub policy: Policy,
    /// Sketch shapes of the sketch-backed candidates.
    pub shapes: Vec<Shape>,
    /// uber-go's slack.
    pub uber_slack: i64,
    /// The run's seed (sketch hash rows derive from it).
    pub seed: u64,
}

impl Setup {
    fn interval(&self) -> Duration {
        Duration::from_millis(self.policy.interval_ms)
    }
    fn interval_ns(&self) -> Nanos {
        self.policy.interval_ms * MILLI
    }
}

/// One limiter model in the lab: how to build its candidates.
pub struct ModelRow {
    /// Identifier (`replay --algo limiter --limiter` takes a candidate name
    /// that starts with this row's family).
    pub model: &'static str,
    /// What it models, for `--help` and the README.
    pub summary: &'static str,
    /// Builds the row's candidates for a setup.
    pub build: fn(&Setup) -> Result<Vec<Candidate>>,
    /// In every decision run ([`candidates`]); a row that is not is built
    /// only when asked for by name ([`model_candidates`]).
    pub default: bool,
}

/// Every limiter model of the lab, in report order.
pub const MODELS: &[ModelRow] = &[
    ModelRow {
        model: "pingora_rate_docs",
        summary:
            "pingora Rate, the docs' pattern (observe > limit -> deny), per sketch shape and exact",
        build: |s| rate_candidates(s, RateMode::Docs, "pingora Rate docs"),
        default: true,
    },
    ModelRow {
        model: "pingora_rate_proportional",
        summary:
            "pingora Rate, proportional estimate of the sliding window, per sketch shape and exact",
        build: |s| rate_candidates(s, RateMode::Proportional, "pingora Rate proportional"),
        default: true,
    },
    ModelRow {
        model: "xtime_per_key",
        summary: "golang.org/x/time/rate Limiter per key, r = limit/interval, b = limit, AllowN",
        build: xtime,
        default: true,
    },
    ModelRow {
        model: "governor",
        summary: "the real governor crate, keyed GCRA, period interval/limit, burst limit",
        build: governor,
        default: true,
    },
    ModelRow {
        model: "tower_global",
        summary: "tower RateLimit, one instance for all keys (load-shed: reject instead of wait)",
        build: tower_global,
        default: true,
    },
    ModelRow {
        model: "tower_per_key",
        summary: "tower RateLimit, one instance per key",
        build: tower_per_key,
        default: true,
    },
    ModelRow {
        model: "uber_per_key",
        summary: "uber-go/ratelimit per key, a request that would wait is denied",
        build: uber,
        default: true,
    },
    ModelRow {
        model: "cloudflare_sliding_window",
        summary: "Cloudflare's sliding-window counter per key (2017 post), every request counted",
        build: cloudflare_sliding_window,
        default: false,
    },
    ModelRow {
        model: "redis_incr_expire",
        summary: "the Redis docs' INCR + EXPIRE limiter per key (INCR before the comparison), \
                  window from the key's first request, and aligned",
        build: redis_incr_expire,
        default: false,
    },
    ModelRow {
        model: "gcra",
        summary:
            "ratelab's own GCRA per key (governor's arithmetic), period interval/limit, burst limit",
        build: gcra,
        default: false,
    },
];

/// The candidates of every row of [`MODELS`], in order.
///
/// # Examples
/// ```
/// use ratelab::lab::decision::{candidates, Policy, Setup};
/// let setup = Setup { policy: Policy { limit: 10, interval_ms: 1000 }, shapes: vec![],
///                     uber_slack: 10, seed: 1 };
/// let names: Vec<String> = candidates(&setup)?.into_iter().map(|c| c.name).collect();
/// assert_eq!(names[0], "pingora Rate docs exact");
/// assert!(names.contains(&"governor GCRA per key".to_string()));
/// # Ok::<(), ratelab::error::Error>(())
/// ```
pub fn candidates(setup: &Setup) -> Result<Vec<Candidate>> {
    let mut out = Vec::new();
    for row in MODELS.iter().filter(|r| r.default) {
        out.extend((row.build)(setup)?);
    }
    Ok(out)
}

/// The candidates of the row of [`MODELS`] named `model` (default or
/// not), or `None` if there is no such row.
///
/// # Examples
/// ```
/// use ratelab::lab::decision::{candidates, model_candidates, Policy, Setup};
/// let setup = Setup { policy: Policy { limit: 10, interval_ms: 1000 }, shapes: vec![],
///                     uber_slack: 10, seed: 1 };
/// let gcra = model_candidates("gcra", &setup).unwrap()?;
/// assert_eq!(gcra[0].name, "GCRA per key (ours)");
/// // Not a default row: decision runs do not include it.
/// assert!(candidates(&setup)?.iter().all(|c| c.name != gcra[0].name));
/// assert!(model_candidates("nope", &setup).is_none());
/// # Ok::<(), ratelab::error::Error>(())
/// ```
pub fn model_candidates(model: &str, setup: &Setup) -> Option<Result<Vec<Candidate>>> {
    MODELS
        .iter()
        .find(|r| r.model == model)
        .map(|r| (r.build)(setup))
}

fn one(name: &str, limiter: Box<dyn Admit>) -> Result<Vec<Candidate>> {
    Ok(vec![Candidate::new(name, limiter)])
}

fn rate_candidates(s: &Setup, mode: RateMode, fam: &str) -> Result<Vec<Candidate>> {
    let mut out: Vec<Candidate> = s
        .shapes
        .iter()
        .enumerate()
        .map(|(i, sh)| Candidate {
            name: format!("{fam} {}x{}", sh.hashes, sh.slots),
            family: fam.into(),
            limiter: Box::new(RateLimiter::sketch(
                mode,
                s.policy.limit,
                s.interval(),
                EstimatorConfig::new(sh.hashes, sh.slots),
                derive_seed(s.seed, &[stream::HASH, i as u64]),
            )),
        })
        .collect();
    out.push(Candidate {
        name: format!("{fam} exact"),
        family: fam.into(),
        limiter: Box::new(RateLimiter::exact(mode, s.policy.limit, s.interval())),
    });
    Ok(out)
}

fn xtime(s: &Setup) -> Result<Vec<Candidate>> {
    let r = s.policy.limit as f64 / s.interval().as_secs_f64();
    let b = s.policy.limit as i64;
    one(
        "x/time/rate per key",
        Box::new(PerKey::new(move |_| Ok(TokenBucket::new(r, b)))),
    )
}

fn governor(s: &Setup) -> Result<Vec<Candidate>> {
    let period = Duration::from_nanos(s.interval_ns() / s.policy.limit);
    one(
        "governor GCRA per key",
        Box::new(GovernorKeyed::new(period, s.policy.limit)?),
    )
}

fn tower_rate(s: &Setup) -> Result<TowerRate> {
    TowerRate::new(s.policy.limit, s.interval())
        .map_err(|f| Error::input(format!("tower: {}", f.message)))
}

fn tower_global(s: &Setup) -> Result<Vec<Candidate>> {
    let tr = tower_rate(s)?;
    one(
        "tower RateLimit global",
        Box::new(Global(FixedWindow::new(tr, 0))),
    )
}

fn tower_per_key(s: &Setup) -> Result<Vec<Candidate>> {
    let tr = tower_rate(s)?;
    one(
        "tower RateLimit per key",
        Box::new(PerKey::new(move |now| Ok(FixedWindow::new(tr, now)))),
    )
}

fn uber(s: &Setup) -> Result<Vec<Candidate>> {
    // A mock clock well after the Unix epoch (the int64 variant's sentinel
    // is Unix time 0).
    let cfg = LeakyBucketConfig::new(s.policy.limit as i64)
        .per(s.interval_ns() as i64)
        .with_slack(s.uber_slack)
        .unix_origin(1_700_000_000 * SECOND as i64);
    Ok(vec![Candidate {
        name: format!("uber-go per key, slack {}", s.uber_slack),
        family: "uber-go per key (deny if wait > 0)".into(),
        limiter: Box::new(PerKey::new(move |_| {
            LeakyBucket::new(cfg)
                .map(DenyIfWait)
                .map_err(|e| Error::internal(format!("uber-go model: {e}")))
        })),
    }])
}

fn cloudflare_sliding_window(s: &Setup) -> Result<Vec<Candidate>> {
    let proto = SlidingWindowCounter::new(s.policy.limit, s.interval())?;
    one(
        "Cloudflare sliding window per key",
        Box::new(PerKey::new(move |_| Ok(proto))),
    )
}

fn redis_incr_expire(s: &Setup) -> Result<Vec<Candidate>> {
    let fam = "Redis INCR+EXPIRE per key";
    let first =
        FixedWindowCounter::new(s.policy.limit, s.interval(), FixedWindowAlign::FirstRequest)?;
    let aligned = FixedWindowCounter::new(s.policy.limit, s.interval(), FixedWindowAlign::Aligned)?;
    Ok(vec![
        Candidate {
            name: fam.into(),
            family: fam.into(),
            limiter: Box::new(PerKey::new(move |_| Ok(first))),
        },
        Candidate {
            name: format!("{fam}, aligned"),
            family: fam.into(),
            limiter: Box::new(PerKey::new(move |_| Ok(aligned))),
        },
    ])
}

fn gcra(s: &Setup) -> Result<Vec<Candidate>> {
    let proto = Gcra::new(s.policy.limit, s.interval(), s.policy.limit)?;
    one(
        "GCRA per key (ours)",
        Box::new(PerKey::new(move |_| Ok(proto))),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup() -> Setup {
        Setup {
            policy: Policy {
                limit: 10,
                interval_ms: 1000,
            },
            shapes: vec![Shape {
                hashes: 2,
                slots: 64,
            }],
            uber_slack: 10,
            seed: 1,
        }
    }

    #[test]
    fn every_row_builds_by_name_and_names_are_unique() {
        let s = setup();
        let mut names = Vec::new();
        for row in MODELS {
            let c = model_candidates(row.model, &s).unwrap().unwrap();
            assert!(!c.is_empty(), "{}", row.model);
            names.extend(c.into_iter().map(|c| c.name));
        }
        let n = names.len();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), n, "{names:?}");
    }

    #[test]
    fn the_default_set_is_the_default_rows() {
        let s = setup();
        let default: usize = MODELS
            .iter()
            .filter(|r| r.default)
            .map(|r| (r.build)(&s).unwrap().len())
            .sum();
        assert_eq!(candidates(&s).unwrap().len(), default);
        let off: Vec<&str> = MODELS
            .iter()
            .filter(|r| !r.default)
            .map(|r| r.model)
            .collect();
        assert_eq!(
            off,
            ["cloudflare_sliding_window", "redis_incr_expire", "gcra"]
        );
    }
}
