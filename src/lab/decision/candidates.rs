//! The decision lab's candidates: a table with one row per limiter model.
//! Adding a limiter to the lab (and to `replay --algo limiter`) is one
//! model file in `src/model/` plus one row here.
//!
//! Each row builds its candidates for the scenario's policy; the rows'
//! order is the order of the report's table.

use super::spec::{Args, Param};
use super::Policy;
use crate::clock::{Nanos, MILLI, SECOND};
use crate::error::{Error, Result};
use crate::report::fmt::bytes_human;
use crate::lab::Shape;
use crate::model::estimator::EstimatorConfig;
use crate::model::fixed_window::{FixedWindow, TowerRate};
use crate::model::governor::GovernorKeyed;
use crate::model::leaky_bucket::{DenyIfWait, LeakyBucket, LeakyBucketConfig};
use crate::model::rate_limiter::{RateLimiter, RateMode};
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
    pub limiter: Box<dyn Admit + Send>,
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
    pub fn new(name: impl Into<String>, limiter: Box<dyn Admit + Send>) -> Self {
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
    /// Most bytes one candidate's state may take up front (`--max-memory`).
    pub max_memory: u64,
}

impl Setup {
    fn interval(&self) -> Duration {
        Duration::from_millis(self.policy.interval_ms)
    }
    fn interval_ns(&self) -> Nanos {
        self.policy.interval_ms * MILLI
    }
}

/// One limiter model in the lab: its parameters and how to build a
/// candidate from them.
pub struct ModelRow {
    /// The `model` value of a `limiters` entry.
    pub model: &'static str,
    /// What it models, for `--help` and the README.
    pub summary: &'static str,
    /// The parameters a `limiters` entry may give (defaults follow the
    /// policy).
    pub params: &'static [Param],
    /// Parameters the row's own label already shows (left out of the
    /// `name=value` suffix).
    pub in_label: &'static [&'static str],
    /// Builds one candidate: (family label, the model). The family label
    /// of a default entry is the candidate's name.
    pub build: fn(&Setup, &Args) -> Result<Built>,
}

/// What a row builds: the family label (and the member label when the row
/// names its members itself), and the model.
pub struct Built {
    /// Family label (a chart series).
    pub family: String,
    /// The candidate's label, when it differs from the family's.
    pub name: Option<String>,
    /// The model.
    pub limiter: Box<dyn Admit + Send>,
}

fn built(family: impl Into<String>, limiter: Box<dyn Admit + Send>) -> Result<Built> {
    Ok(Built {
        family: family.into(),
        name: None,
        limiter,
    })
}

const ESTIMATE: Param = Param::choice(
    "estimate",
    &["docs", "proportional"],
    "docs: observe(key, w) > limit -> deny (counts denied requests); proportional: prev x (1 - elapsed) + curr + w - 1 >= limit -> deny, observes admitted requests (default docs)",
);

/// Every limiter model of the lab.
pub const MODELS: &[ModelRow] = &[
    ModelRow {
        model: "pingora_rate",
        summary: "pingora-limits Rate as a limiter, on a count-min sketch per window or exact counters",
        params: &[
            ESTIMATE,
            Param::choice("counters", &["sketch", "exact"], "sketch (default) or exact per-key counters"),
            Param::int("hashes", 1, 64, "sketch rows (default 4)"),
            Param::int("slots", 1, 1 << 30, "sketch counters per row (default 1024)"),
        ],
        in_label: &["estimate", "counters", "hashes", "slots"],
        build: pingora_rate,
    },
    ModelRow {
        model: "token_bucket",
        summary: "golang.org/x/time/rate Limiter per key, AllowN(t, w)",
        params: &[
            Param::positive("rate_per_s", "tokens per second (default limit / interval)"),
            Param::int("burst", 0, i64::MAX, "bucket depth (default limit; 0 is valid upstream and admits nothing at a finite rate)"),
        ],
        in_label: &[],
        build: token_bucket,
    },
    ModelRow {
        model: "gcra_governor",
        summary: "the real governor crate: keyed GCRA on its fake clock, check_key_n",
        params: &[
            Param::positive("rate_per_s", "cells per second: period = 1 / rate (default limit / interval)"),
            Param::int("burst", 1, u32::MAX as i64, "burst capacity in cells (default limit)"),
        ],
        in_label: &[],
        build: gcra_governor,
    },
    ModelRow {
        model: "tower",
        summary: "tower RateLimit (fixed window; load-shed: reject instead of wait), one instance per key or for all keys",
        params: &[Param::choice("scope", &["per_key", "global"], "per_key (default) or global (one instance, as tower is used)")],
        in_label: &["scope"],
        build: tower,
    },
    ModelRow {
        model: "uber_go",
        summary: "uber-go/ratelimit per key (atomic-int64): a request that would wait is denied",
        params: &[Param::int("slack", -1_000_000, 1_000_000, "slack in requests (default the scenario's uber_slack, 10)")],
        in_label: &["slack"],
        build: uber_go,
    },
];

/// The default candidates (a scenario without `limiters`): pingora Rate in
/// both patterns on every sketch shape and on exact counters, then one
/// candidate of every other model with the policy's parameters.
pub fn default_entries(setup: &Setup) -> Vec<(&'static str, Args)> {
    let mut out = Vec::new();
    for estimate in ["docs", "proportional"] {
        for sh in &setup.shapes {
            out.push((
                "pingora_rate",
                Args::of(&[
                    ("estimate", estimate.into()),
                    ("hashes", (sh.hashes as u64).into()),
                    ("slots", (sh.slots as u64).into()),
                ]),
            ));
        }
        out.push((
            "pingora_rate",
            Args::of(&[("estimate", estimate.into()), ("counters", "exact".into())]),
        ));
    }
    out.push(("token_bucket", Args::default()));
    out.push(("gcra_governor", Args::default()));
    out.push(("tower", Args::of(&[("scope", "global".into())])));
    out.push(("tower", Args::of(&[("scope", "per_key".into())])));
    out.push(("uber_go", Args::default()));
    out
}

/// The row of a model name.
pub fn row(model: &str) -> Option<&'static ModelRow> {
    MODELS.iter().find(|r| r.model == model)
}

/// Builds the candidate of `model` with `args`; its name is the family
/// label, then the given parameters the label does not show, then the
/// varying ones (those that came from a list).
pub fn build(setup: &Setup, model: &ModelRow, args: &Args) -> Result<Candidate> {
    let b = (model.build)(setup, args)?;
    let (fixed, varying) = args.suffixes(model.in_label);
    let join = |a: String, b: &str| if b.is_empty() { a } else { format!("{a} {b}") };
    let family = join(b.family, &fixed);
    let name = join(
        b.name.map_or_else(|| family.clone(), |n| join(n, &fixed)),
        &varying,
    );
    Ok(Candidate {
        name,
        family,
        limiter: b.limiter,
    })
}

/// The default candidates, in order.
///
/// # Examples
/// ```
/// use ratelab::lab::decision::{candidates, Policy, Setup};
/// let setup = Setup { policy: Policy { limit: 10, interval_ms: 1000 }, shapes: vec![],
///                     uber_slack: 10, seed: 1, max_memory: 1 << 30 };
/// let names: Vec<String> = candidates(&setup)?.into_iter().map(|c| c.name).collect();
/// assert_eq!(names[0], "pingora Rate docs exact");
/// assert!(names.contains(&"governor GCRA per key".to_string()));
/// # Ok::<(), ratelab::error::Error>(())
/// ```
pub fn candidates(setup: &Setup) -> Result<Vec<Candidate>> {
    default_entries(setup)
        .iter()
        .map(|(m, a)| {
            let r = row(m).ok_or_else(|| Error::internal(format!("no model row {m}")))?;
            build(setup, r, a)
        })
        .collect()
}

fn interval_or_rate(s: &Setup, args: &Args) -> f64 {
    args.f64("rate_per_s")
        .unwrap_or(s.policy.limit as f64 / s.interval().as_secs_f64())
}

fn pingora_rate(s: &Setup, a: &Args) -> Result<Built> {
    let mode = match a.str("estimate") {
        Some("proportional") => RateMode::Proportional,
        _ => RateMode::Docs,
    };
    let fam = match mode {
        RateMode::Docs => "pingora Rate docs",
        RateMode::Proportional => "pingora Rate proportional",
    };
    if a.str("counters") == Some("exact") {
        return Ok(Built {
            family: fam.into(),
            name: Some(format!("{fam} exact")),
            limiter: Box::new(RateLimiter::exact(mode, s.policy.limit, s.interval())),
        });
    }
    let hashes = a.u64("hashes").unwrap_or(4) as usize;
    let slots = a.u64("slots").unwrap_or(1024) as usize;
    let cfg = EstimatorConfig::new(hashes, slots);
    if cfg.memory_bytes().saturating_mul(2) > s.max_memory {
        return Err(Error::input(format!(
            "{hashes}x{slots}: both windows' sketches need {}, over the memory cap of {} (fewer slots, or raise it with --max-memory)",
            bytes_human(cfg.memory_bytes().saturating_mul(2)),
            bytes_human(s.max_memory)
        )));
    }
    // Hash rows are seeded per shape, by the shape's place among the
    // scenario's shapes when it is one of them (the default set), else by
    // the shape itself.
    let salt = s
        .shapes
        .iter()
        .position(|sh| sh.hashes == hashes && sh.slots == slots)
        .map_or_else(|| ((hashes as u64) << 32) | slots as u64, |i| i as u64);
    Ok(Built {
        family: fam.into(),
        name: Some(format!("{fam} {hashes}x{slots}")),
        limiter: Box::new(RateLimiter::sketch(
            mode,
            s.policy.limit,
            s.interval(),
            cfg,
            derive_seed(s.seed, &[stream::HASH, salt]),
        )),
    })
}

fn token_bucket(s: &Setup, a: &Args) -> Result<Built> {
    let r = interval_or_rate(s, a);
    let b = a.i64("burst").unwrap_or(s.policy.limit as i64);
    built(
        "x/time/rate per key",
        Box::new(PerKey::new(move |_| Ok(TokenBucket::new(r, b)))),
    )
}

fn gcra_governor(s: &Setup, a: &Args) -> Result<Built> {
    let period = match a.f64("rate_per_s") {
        Some(r) => Duration::from_nanos((SECOND as f64 / r).round() as u64),
        None => Duration::from_nanos(s.interval_ns() / s.policy.limit),
    };
    let burst = a.u64("burst").unwrap_or(s.policy.limit);
    built(
        "governor GCRA per key",
        Box::new(GovernorKeyed::new(period, burst)?),
    )
}

fn tower(s: &Setup, a: &Args) -> Result<Built> {
    let tr = TowerRate::new(s.policy.limit, s.interval())
        .map_err(|f| Error::input(format!("tower: {}", f.message)))?;
    if a.str("scope") == Some("global") {
        return built(
            "tower RateLimit global",
            Box::new(Global(FixedWindow::new(tr, 0))),
        );
    }
    built(
        "tower RateLimit per key",
        Box::new(PerKey::new(move |now| Ok(FixedWindow::new(tr, now)))),
    )
}

fn uber_go(s: &Setup, a: &Args) -> Result<Built> {
    let slack = a.i64("slack").unwrap_or(s.uber_slack);
    // A mock clock well after the Unix epoch (the int64 variant's sentinel
    // is Unix time 0).
    let cfg = LeakyBucketConfig::new(s.policy.limit as i64)
        .per(s.interval_ns() as i64)
        .with_slack(slack)
        .unix_origin(1_700_000_000 * SECOND as i64);
    Ok(Built {
        family: "uber-go per key (deny if wait > 0)".into(),
        name: Some(format!("uber-go per key, slack {slack}")),
        limiter: Box::new(PerKey::new(move |_| {
            LeakyBucket::new(cfg)
                .map(DenyIfWait)
                .map_err(|e| Error::internal(format!("uber-go model: {e}")))
        })),
    })
}
