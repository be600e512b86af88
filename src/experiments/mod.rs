//! Experiments: one module per scenario `kind`, each turning a scenario into
//! an [`Output`] (tables, report.json, charts). Thin glue between workloads,
//! algorithms, oracles and reports.

pub mod characterization;
pub mod decision;
pub mod estimator_accuracy;
pub mod estimator_overflow;
pub mod first_second_panic;
pub mod inflight;
pub mod pacer_timeline;
pub mod proxy_example;
pub mod rate_timeline;
pub mod rate_vs_oracle;
pub mod shard;

use crate::error::{Error, Result};
use crate::progress::Progress;
use crate::report::Output;
use crate::scenario::Scenario;

/// Settings a run gets from the command line.
#[derive(Debug, Clone)]
pub struct RunContext {
    /// The scenario seed (after `--seed`).
    pub seed: u64,
    /// Runs override (`--runs`).
    pub runs: Option<u32>,
    /// Largest memory one sketch (or one sweep cell's state) may take.
    pub max_memory: u64,
    /// Draw progress bars.
    pub progress: bool,
}

/// Default memory cap: 1 GiB.
pub const DEFAULT_MAX_MEMORY: u64 = 1 << 30;

impl RunContext {
    /// Defaults for `scenario`: its own seed, no overrides, the default cap.
    pub fn for_scenario(scenario: &Scenario) -> Self {
        Self {
            seed: scenario.common.seed,
            runs: None,
            max_memory: DEFAULT_MAX_MEMORY,
            progress: false,
        }
    }

    /// The number of runs: `--runs`, else the scenario's, else `default`.
    pub fn runs(&self, scenario: &Scenario, default: u32) -> u32 {
        self.runs.or(scenario.common.runs).unwrap_or(default)
    }

    /// A progress bar (hidden when progress is off).
    pub fn progress(&self, len: u64, label: &str) -> Progress {
        if self.progress {
            Progress::new(len, label)
        } else {
            Progress::hidden()
        }
    }
}

/// A kind of experiment: its name, what it does, and how to run it.
pub struct Kind {
    /// The `kind` value in scenario files.
    pub name: &'static str,
    /// One line for `ratelab list`.
    pub summary: &'static str,
    /// Runs a scenario of this kind.
    pub run: fn(&Scenario, &RunContext) -> Result<Output>,
}

/// Every kind ratelab knows.
pub const KINDS: &[Kind] = &[
    Kind {
        name: "estimator_accuracy",
        summary: "count-min sketch (pingora Estimator) error vs exact counts over a grid of hashes x slots",
        run: estimator_accuracy::run,
    },
    Kind {
        name: "estimator_overflow",
        summary: "what a counter at isize::MAX does on +1: wrap (0.9.1, release) or panic (0.9.0 debug)",
        run: estimator_overflow::run,
    },
    Kind {
        name: "rate_timeline",
        summary: "pingora Rate over time: rate(), rate_with(proportional) and the true sliding rate; window flips (A3)",
        run: rate_timeline::run,
    },
    Kind {
        name: "proxy_example",
        summary: "the pingora docs' rate-limited proxy (request_filter): statuses, X-Rate-Limit-* headers, shared window flips (A5)",
        run: proxy_example::run,
    },
    Kind {
        name: "inflight_guard_leak",
        summary: "pingora Inflight: Guard::incr leaks (1, 2, then 2) and the leak's drift over time for a share p of requests (A6)",
        run: inflight::run_guard_leak,
    },
    Kind {
        name: "inflight_accuracy",
        summary: "pingora Inflight under a Zipf in-flight load: estimate vs exact in-flight count per key, several sketch shapes",
        run: inflight::run_accuracy,
    },
    Kind {
        name: "first_second_panic",
        summary: "pingora Rate's first-second panic (assert!(new >= now - 1000)) per thread count, interval, build, flavour and scheduler (A4)",
        run: first_second_panic::run,
    },
    Kind {
        name: "rate_vs_oracle",
        summary: "pingora Rate::observe on a timestamped Zipf stream vs exact same-flip, sliding and aligned windows; tower RateLimit comparison (A7)",
        run: rate_vs_oracle::run,
    },
    Kind {
        name: "pacer_timeline",
        summary: "concurrent callers on uber-go/ratelimit pacers and x/time/rate limiters (MultiLimiter): admitted times per caller",
        run: pacer_timeline::run,
    },
    Kind {
        name: "estimator_characterization",
        summary: "count-min error quantiles (±1..3 sigma) by key rank over many hash seeds on a fixed stream, trials doubling until stable",
        run: characterization::run,
    },
    Kind {
        name: "decision_accuracy",
        summary: "allow/deny decisions of pingora Rate (docs, proportional), x/time/rate, governor, tower, uber-go vs an exact sliding-log limiter (issue 6)",
        run: decision::run,
    },
];

/// Runs a scenario with its kind's experiment.
pub fn run(scenario: &Scenario, ctx: &RunContext) -> Result<Output> {
    let kind = &scenario.common.kind;
    let Some(k) = KINDS.iter().find(|k| k.name == kind) else {
        let known: Vec<&str> = KINDS.iter().map(|k| k.name).collect();
        return Err(scenario.field_error(
            "kind",
            format!("value {kind:?}: expected one of {}", known.join(", ")),
        ));
    };
    let mut out = (k.run)(scenario, ctx)?;
    if !out.json.is_object() {
        return Err(Error::internal(format!(
            "kind {kind} produced a report that is not an object"
        )));
    }
    out.json["schema"] = crate::report::SCHEMA.into();
    Ok(out)
}

/// The common head of every report.json, in contract order.
pub fn report_head(
    scenario: &Scenario,
    ctx: &RunContext,
    runs: Option<u32>,
) -> serde_json::Map<String, serde_json::Value> {
    let mut m = serde_json::Map::new();
    m.insert("schema".into(), crate::report::SCHEMA.into());
    m.insert("scenario".into(), scenario.common.name.clone().into());
    m.insert("kind".into(), scenario.common.kind.clone().into());
    m.insert(
        "description".into(),
        scenario.common.description.clone().into(),
    );
    if let Some(look_at) = &scenario.common.look_at {
        m.insert("look_at".into(), look_at.clone().into());
    }
    m.insert("seed".into(), ctx.seed.into());
    if let Some(r) = runs {
        m.insert("runs".into(), r.into());
    }
    m.insert("ratelab_version".into(), env!("CARGO_PKG_VERSION").into());
    m
}
