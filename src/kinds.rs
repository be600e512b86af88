//! The registry of scenario kinds: every `kind` a scenario file may name,
//! the one function that runs a scenario with its kind ([`run`]), and the
//! lookup by name ([`kind`]).
//!
//! It sits above the floors it lists: the labs (`lab/`), `size` (`sizing/`)
//! and `recommend` (`recommend/`) each implement
//! [`Experiment`](crate::lab::experiment::Experiment) and know nothing of
//! the registry, so no floor imports the one above it. Adding a kind is one
//! row of [`KINDS`].

use crate::error::{Error, Result};
use crate::lab::{self, KindRow, RunContext};
use crate::report::Output;
use crate::scenario::Scenario;

/// Every kind ratelab knows, in `ratelab list` order: the registry. A row is
/// made by [`KindRow::of`] for a kind written as an [`Experiment`](crate::lab::Experiment), or by
/// [`KindRow::plain`] for one run by a plain function; [`KindRow::as_sweep`] marks
/// the kinds whose cells can be split across shards.
///
/// # Examples
///
/// ```
/// use ratelab::kinds::KINDS;
/// let names: Vec<&str> = KINDS.iter().map(|k| k.name).collect();
/// assert_eq!(names[0], "estimator_accuracy");
/// assert!(names.contains(&"pacer_timeline"));
/// let mut sorted = names.clone();
/// sorted.sort();
/// sorted.dedup();
/// assert_eq!(sorted.len(), names.len(), "every name once");
/// ```
pub const KINDS: &[KindRow] = &[
    KindRow::of::<lab::estimator_accuracy::EstimatorAccuracy>(
        "estimator_accuracy",
        "count-min sketch (pingora Estimator) error vs exact counts over a grid of hashes x slots",
    )
    .as_sweep(),
    KindRow::of::<lab::estimator_overflow::EstimatorOverflow>(
        "estimator_overflow",
        "what a counter at isize::MAX does on +1: wrap (0.9.1, release) or panic (0.9.0 debug)",
    ),
    KindRow::of::<lab::rate_timeline::RateTimeline>(
        "rate_timeline",
        "pingora Rate over time: rate(), rate_with(proportional) and the true sliding rate; window flips",
    ),
    KindRow::of::<lab::proxy_example::ProxyExampleKind>(
        "proxy_example",
        "the pingora docs' rate-limited proxy (request_filter): statuses, X-Rate-Limit-* headers, shared window flips",
    ),
    KindRow::of::<lab::inflight::GuardLeak>(
        "inflight_guard_leak",
        "pingora Inflight: Guard::incr leaks (1, 2, then 2) and the leak's drift over time for a share p of requests",
    ),
    KindRow::of::<lab::inflight::InflightAccuracy>(
        "inflight_accuracy",
        "pingora Inflight under a Zipf in-flight load: estimate vs exact in-flight count per key, several sketch shapes",
    ),
    KindRow::of::<lab::first_second_panic::FirstSecondPanic>(
        "first_second_panic",
        "pingora Rate's first-second panic (assert!(new >= now - 1000)) per thread count, interval, build, flavour and scheduler",
    ),
    KindRow::of::<lab::rate_vs_oracle::RateVsOracle>(
        "rate_vs_oracle",
        "pingora Rate::observe on a timestamped Zipf stream vs exact same-flip, sliding and aligned windows; tower RateLimit comparison",
    ),
    KindRow::of::<lab::pacer_timeline::PacerTimeline>(
        "pacer_timeline",
        "concurrent callers on uber-go/ratelimit pacers and x/time/rate limiters (MultiLimiter): admitted times per caller",
    ),
    KindRow::of::<lab::characterization::Characterization>(
        "estimator_characterization",
        "count-min error quantiles (±1..3 sigma) by key rank over many hash seeds on a fixed stream, trials doubling until stable",
    ),
    KindRow::of::<lab::decision::DecisionAccuracy>(
        "decision_accuracy",
        "allow/deny decisions of any limiter models (pingora Rate, x/time/rate, governor, tower, uber-go, nginx, Envoy, Guava, Cloudflare, Redis windows, GCRA, your own via exec) vs an exact sliding-log limiter; `ratelab list --models`",
    ),
    // Two jobs above the labs: a sizing is a search over the labs'
    // measurements and a recommendation one over the decision lab's,
    // registered here so that reproduce and check treat them as every
    // other report.
    KindRow::of::<crate::sizing::scenario::SizeScenario>(
        "size",
        "`ratelab size` as a scenario: the cheapest count-min shape for a workload (or a rate limit on a trace) and targets; `args` are the command's",
    ),
    KindRow::of::<crate::recommend::scenario::RecommendScenario>(
        "recommend",
        "`ratelab recommend` as a scenario: a setting of nginx, Envoy's local rate limit, envoyproxy/ratelimit, Traefik, governor, x/time/rate or Guava chosen on a log's first part and confirmed on its later slices; `args` are the command's",
    ),
];

/// The registry row of `name`, if ratelab knows that kind.
pub fn kind(name: &str) -> Option<&'static KindRow> {
    KINDS.iter().find(|k| k.name == name)
}

/// Runs a scenario with its kind's experiment and stamps the report's
/// schema.
///
/// # Examples
///
/// A scenario written in code (the same JSON as a file in `scenarios/`),
/// run to an [`Output`]:
///
/// ```
/// use ratelab::kinds;
/// use ratelab::lab::RunContext;
/// use ratelab::scenario::Scenario;
///
/// let text = r#"{
///     "name": "overflow-demo",
///     "kind": "estimator_overflow",
///     "description": "A counter one step below isize::MAX, then +1.",
///     "steps": [["k", 9223372036854775806], ["k", 1], ["k", 1]],
///     "behaviours": ["wrapping", "checked"]
/// }"#;
/// let scenario = Scenario::parse(std::path::Path::new("overflow-demo.json"), text).unwrap();
/// let out = kinds::run(&scenario, &RunContext::for_scenario(&scenario)).unwrap();
/// assert_eq!(out.json["schema"], ratelab::report::SCHEMA);
/// assert_eq!(out.json["kind"], "estimator_overflow");
/// assert!(out.table_md.starts_with("# overflow-demo\n\n**Findings.**\n\n- "));
/// assert!(out.table_md.contains("\n\nA counter one step below"));
/// assert!(out.console.contains("-9223372036854775808"), "wrapping wraps to isize::MIN");
/// ```
pub fn run(scenario: &Scenario, ctx: &RunContext) -> Result<Output> {
    let kind_name = &scenario.common.kind;
    let Some(k) = kind(kind_name) else {
        let known: Vec<&str> = KINDS.iter().map(|k| k.name).collect();
        return Err(scenario.field_error(
            "kind",
            format!("value {kind_name:?}: expected one of {}", known.join(", ")),
        ));
    };
    let mut out = (k.run)(scenario, ctx)?;
    if !out.json.is_object() {
        return Err(Error::internal(format!(
            "kind {kind_name} produced a report that is not an object"
        )));
    }
    out.json["schema"] = crate::report::SCHEMA.into();
    crate::report::findings::finish(&mut out);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_registry_marks_as_sweeps_exactly_the_kinds_shards_split_by_cell() {
        for k in KINDS {
            assert_eq!(k.sweep, crate::lab::shard::is_sweep(k.name), "{}", k.name);
        }
        assert!(KINDS.iter().any(|k| k.sweep));
    }
}
