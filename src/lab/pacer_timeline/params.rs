//! The scenario parameters of `pacer_timeline`.

use crate::error::Result;
use crate::model::x_time_rate::{every, per, Limit, INF};
use crate::scenario::Scenario;
use serde::Deserialize;

/// How the admitted times are listed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum TimeFormat {
    /// uber-go's example: `i delta-since-previous` (`0 0`, `1 10ms`).
    Delta,
    /// The book's log: `hh:mm:ss Label` from `clock_start`.
    Clock,
    /// Offsets from t = 0 (Go durations).
    #[default]
    Offset,
}

/// Scenario parameters.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Listing format.
    #[serde(default)]
    pub time_format: TimeFormat,
    /// Wall-clock time of t = 0 for `clock` listings (`hh:mm:ss`).
    #[serde(default)]
    pub clock_start: Option<String>,
    /// The fixed caller order, stated in the report.
    #[serde(default)]
    pub caller_order: Option<String>,
    /// Zoom the staircase chart to this time range (s).
    #[serde(default)]
    pub staircase_x_s: Option<(f64, f64)>,
    /// The cases.
    pub cases: Vec<Case>,
}

/// One independent world.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    /// Shown in tables and legends.
    pub label: String,
    /// x/time behaviour (default: latest).
    #[serde(default)]
    pub go_version: Option<String>,
    /// Token buckets.
    #[serde(default)]
    pub buckets: Vec<BucketSpec>,
    /// MultiLimiters.
    #[serde(default)]
    pub multis: Vec<MultiSpec>,
    /// uber-go pacers.
    #[serde(default)]
    pub pacers: Vec<PacerSpec>,
    /// Caller groups.
    pub callers: Vec<CallerSpec>,
    /// Rate of the ideal line on the staircase chart (admissions/s).
    #[serde(default)]
    pub ideal_per_s: Option<f64>,
    /// Calls the ideal line allows at once (its intercept; default 1).
    #[serde(default)]
    pub ideal_burst: Option<f64>,
}

/// `NewLimiter(limit, burst)`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BucketSpec {
    /// Name used by steps and multis.
    pub name: String,
    /// The limit.
    pub limit: LimitSpec,
    /// The burst.
    pub burst: i64,
}

/// A limit.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum LimitSpec {
    /// Events per second.
    Number(f64),
    /// `"inf"`.
    Name(String),
    /// The book's `Per(n, d)`.
    Per {
        /// `[n, d_ns]`.
        per: (i64, i64),
    },
    /// `rate.Every(d)`.
    Every {
        /// `d` in ns.
        every_ns: i64,
    },
}

/// `MultiLimiter(of...)`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MultiSpec {
    /// Name.
    pub name: String,
    /// Buckets or earlier multis.
    pub of: Vec<String>,
}

/// `ratelimit.New(rate, Per(per_ns), WithSlack(slack))`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PacerSpec {
    /// Name.
    pub name: String,
    /// Calls per `per_ns`.
    pub rate: i64,
    /// Period (default 1 s).
    #[serde(default)]
    pub per_ns: Option<i64>,
    /// Slack (default 10).
    #[serde(default)]
    pub slack: Option<i64>,
    /// `atomic`, `atomic-int64` (default) or `mutex`.
    #[serde(default)]
    pub variant: Option<String>,
    /// Unix ns of t = 0 (default 0, a `clock.NewMock()` clock).
    #[serde(default)]
    pub unix_origin_ns: Option<i64>,
}

/// A group of callers.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CallerSpec {
    /// Label (e.g. `ReadFile`).
    pub label: String,
    /// How many goroutines.
    #[serde(default = "one")]
    pub count: usize,
    /// Arrival of the first.
    #[serde(default)]
    pub arrival_ns: i64,
    /// Gap between successive callers' arrivals.
    #[serde(default)]
    pub spacing_ns: i64,
    /// Steps, run `repeat` times.
    pub steps: Vec<StepSpec>,
    /// Repetitions of `steps`.
    #[serde(default = "one")]
    pub repeat: usize,
}

/// Serde default: one.
fn one() -> usize {
    1
}

/// One step: exactly one of the fields (plus `timeout_ns` for `wait`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepSpec {
    /// `Wait(ctx)` on a bucket or multi.
    #[serde(default)]
    pub wait: Option<String>,
    /// Context timeout for `wait`.
    #[serde(default)]
    pub timeout_ns: Option<i64>,
    /// `Take()` on a pacer.
    #[serde(default)]
    pub take: Option<String>,
    /// `time.Sleep`.
    #[serde(default)]
    pub sleep_ns: Option<i64>,
    /// `AllowN(t, 1)` on a bucket.
    #[serde(default)]
    pub allow: Option<String>,
}

/// The limit a [`LimitSpec`] stands for; `field` names it in errors.
pub fn limit_of(sc: &Scenario, field: &str, l: &LimitSpec) -> Result<Limit> {
    let v = match l {
        LimitSpec::Number(x) if x.is_finite() && *x >= 0.0 => *x,
        LimitSpec::Name(s) if s == "inf" => INF,
        LimitSpec::Per { per: (n, d) } if *n > 0 && *d > 0 => per(*n, *d).unwrap_or(INF),
        LimitSpec::Every { every_ns } => every(*every_ns),
        other => {
            return Err(sc.field_error(
                field,
                format!("value {other:?}: expected events/s >= 0, \"inf\", {{\"per\": [n > 0, ns > 0]}} or {{\"every_ns\": d}}"),
            ))
        }
    };
    Ok(v)
}
