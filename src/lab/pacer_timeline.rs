//! `pacer_timeline`: concurrent callers on uber-go/ratelimit pacers and
//! golang.org/x/time/rate limiters (buckets and the book's MultiLimiter),
//! replayed on the virtual clock by the discrete-event engine
//! ([`crate::sim::des`]); EXPERIMENTS.md B1, B2 and C1-C5.
//!
//! A scenario lists *cases*, each an independent world: named `buckets`
//! (`NewLimiter(limit, burst)`), `multis` (`MultiLimiter(of...)`, sorted by
//! `Limit()` as the book does), `pacers` (`ratelimit.New(rate, ...)`) and
//! `callers` (groups of `count` goroutines arriving at `arrival_ns`,
//! `spacing_ns` apart, each running `steps` `repeat` times: `{"wait": name}`,
//! `{"take": name}`, `{"sleep_ns": d}` or `{"allow": bucket}`). A case uses
//! either `allow` steps only (`AllowN(t, 1)` at each caller's arrival, in
//! caller order) or the others.
//!
//! Order: callers are numbered in file order; simultaneous events run in
//! that order (the engine's rule), which is the fixed goroutine order the
//! report states. Limits: a number (events/s), `"inf"`, `{"per": [n, ns]}`
//! (the book's `Per` = `Every(d/n)`, integer division) or
//! `{"every_ns": d}`.

use super::{report_head, RunContext};
use crate::error::{Error, Result};
use crate::model::leaky_bucket::{LeakyBucket, LeakyBucketConfig};
use crate::model::multi::Node;
use crate::model::token_bucket::{every, per, Limit, TokenBucket, XTimeVersion, INF};
use crate::replay::leaky_bucket::parse_variant;
use crate::report::chart::{render, ChartSpec, Legend, Series, SeriesStyle};
use crate::report::{Output, Table};
use crate::scenario::Scenario;
use crate::sim::des::{self, AgentScript, Step, World};
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;

const S: f64 = 1e9;

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

/// One admission (or refusal) of one caller's limiter step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Admission {
    /// Caller number (file order).
    pub caller: usize,
    /// Its group label.
    pub label: String,
    /// Limiter step number within the caller (sleeps not counted).
    pub step: usize,
    /// When the step started.
    pub started_ns: i64,
    /// When it let the caller go (`None`: refused / error).
    pub admitted_ns: Option<i64>,
    /// `finished - started`.
    pub waited_ns: i64,
    /// Take: when the limiter read the clock.
    pub clock_read_ns: Option<i64>,
    /// Error text.
    pub error: Option<String>,
}

/// A case's outcome.
#[derive(Debug, Clone)]
pub struct CaseResult {
    /// The case label.
    pub label: String,
    /// x/time behaviour used.
    pub go_version: XTimeVersion,
    /// Every limiter step, in caller then step order.
    pub steps: Vec<Admission>,
    /// Ideal rate for charts.
    pub ideal_per_s: Option<f64>,
    /// Ideal line intercept.
    pub ideal_burst: f64,
}

impl CaseResult {
    /// Admitted times in admission order (ties by caller, step).
    pub fn admitted_sorted(&self) -> Vec<&Admission> {
        let mut v: Vec<&Admission> = self
            .steps
            .iter()
            .filter(|a| a.admitted_ns.is_some())
            .collect();
        v.sort_by_key(|a| (a.admitted_ns, a.caller, a.step));
        v
    }
}

fn limit_of(sc: &Scenario, field: &str, l: &LimitSpec) -> Result<Limit> {
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

/// Every step of every caller is simulated and kept as a row of the
/// report, so the step count is charged both as work and as memory (about
/// [`STEP_BYTES`] a row) before any caller is created.
fn check_volume(sc: &Scenario, p: &Params, ctx: &RunContext) -> Result<()> {
    for (ci, c) in p.cases.iter().enumerate() {
        let mut steps = 0f64;
        for g in &c.callers {
            steps += g.count as f64 * g.repeat as f64 * g.steps.len().max(1) as f64;
        }
        let field = format!("cases[{ci}].callers");
        ctx.check_work(
            sc,
            &field,
            steps,
            50.0,
            &format!("{steps:.0} caller steps (count x repeat x steps)"),
        )?;
        ctx.check_memory(
            sc,
            &field,
            steps * STEP_BYTES,
            &format!("the rows of {steps:.0} caller steps"),
            "fewer callers or repeats",
        )?;
    }
    Ok(())
}

/// Rough size of one simulated step's row (its record, label and output).
const STEP_BYTES: f64 = 256.0;

/// Runs every case (no rendering).
pub fn compute(sc: &Scenario, p: &Params) -> Result<Vec<CaseResult>> {
    if p.cases.is_empty() {
        return Err(sc.field_error("cases", "empty: expected at least one case"));
    }
    p.cases
        .iter()
        .enumerate()
        .map(|(ci, c)| run_case(sc, ci, c))
        .collect()
}

fn run_case(sc: &Scenario, ci: usize, c: &Case) -> Result<CaseResult> {
    let f = |rest: &str| format!("cases[{ci}].{rest}");
    let version = match &c.go_version {
        None => XTimeVersion::LATEST,
        Some(v) => XTimeVersion::parse(v).ok_or_else(|| {
            sc.field_error(
                f("go_version"),
                format!("value {v:?}: expected v0.3.0 ... v0.13.0 or latest"),
            )
        })?,
    };
    // Drawn only on the staircase chart, validated all the same.
    if let Some(r) = c.ideal_per_s {
        if !(r.is_finite() && r > 0.0) {
            return Err(sc.field_error(
                f("ideal_per_s"),
                format!("value {r}: expected a finite rate > 0"),
            ));
        }
    }
    if let Some(b) = c.ideal_burst {
        if !(b.is_finite() && b >= 0.0) {
            return Err(sc.field_error(
                f("ideal_burst"),
                format!("value {b}: expected a finite count >= 0"),
            ));
        }
    }
    if c.callers.is_empty() {
        return Err(sc.field_error(
            f("callers"),
            "empty: expected at least one caller group",
        ));
    }
    let mut world = World::default();
    let mut names: BTreeMap<String, Node> = BTreeMap::new();
    let mut pacers: BTreeMap<String, usize> = BTreeMap::new();
    for (i, b) in c.buckets.iter().enumerate() {
        let limit = limit_of(sc, &f(&format!("buckets[{i}].limit")), &b.limit)?;
        if b.burst < 0 {
            return Err(sc.field_error(
                f(&format!("buckets[{i}].burst")),
                format!("value {}: expected >= 0", b.burst),
            ));
        }
        let node = world
            .limiters
            .add_bucket(TokenBucket::new_version(limit, b.burst, version));
        if names.insert(b.name.clone(), node).is_some() {
            return Err(sc.field_error(
                f(&format!("buckets[{i}].name")),
                format!("value {:?}: used twice", b.name),
            ));
        }
    }
    for (i, m) in c.multis.iter().enumerate() {
        let mut of = Vec::new();
        for (j, n) in m.of.iter().enumerate() {
            let node = names.get(n).copied().ok_or_else(|| {
                sc.field_error(
                    f(&format!("multis[{i}].of[{j}]")),
                    format!("value {n:?}: not a bucket or earlier multi"),
                )
            })?;
            of.push(node);
        }
        let node = world
            .limiters
            .multi_limiter(of)
            .map_err(|e| sc.field_error(f(&format!("multis[{i}]")), format!("{e}")))?;
        if names.insert(m.name.clone(), node).is_some() {
            return Err(sc.field_error(
                f(&format!("multis[{i}].name")),
                format!("value {:?}: used twice", m.name),
            ));
        }
    }
    for (i, pc) in c.pacers.iter().enumerate() {
        let field = f(&format!("pacers[{i}]"));
        let variant = match &pc.variant {
            None => Default::default(),
            Some(v) => parse_variant(v).ok_or_else(|| {
                sc.field_error(
                    format!("{field}.variant"),
                    format!("value {v:?}: expected atomic, atomic-int64 or mutex"),
                )
            })?,
        };
        let per_ns = pc.per_ns.unwrap_or(1_000_000_000);
        if pc.rate <= 0 || per_ns <= 0 {
            return Err(sc.field_error(
                field,
                format!("rate {} / per_ns {per_ns}: expected both > 0", pc.rate),
            ));
        }
        let cfg = LeakyBucketConfig {
            rate: pc.rate,
            per_ns,
            slack: pc.slack.unwrap_or(10),
            variant,
            unix_origin_ns: pc.unix_origin_ns.unwrap_or(0),
        };
        let lim = LeakyBucket::new(cfg).map_err(|e| sc.field_error(field, e))?;
        world.pacers.push(lim);
        pacers.insert(pc.name.clone(), world.pacers.len() - 1);
    }

    // Build the agents.
    let mut agents = Vec::new();
    let mut labels = Vec::new();
    let mut allows: Vec<(i64, usize, usize)> = Vec::new(); // (t, caller, bucket)
    let mut has_other = false;
    for (gi, g) in c.callers.iter().enumerate() {
        let mut steps = Vec::new();
        let mut template: Vec<usize> = Vec::new();
        for (si, s) in g.steps.iter().enumerate() {
            let field = f(&format!("callers[{gi}].steps[{si}]"));
            let set = [
                s.wait.is_some(),
                s.take.is_some(),
                s.sleep_ns.is_some(),
                s.allow.is_some(),
            ];
            if set.iter().filter(|x| **x).count() != 1 {
                return Err(
                    sc.field_error(field, "expected exactly one of wait, take, sleep_ns, allow")
                );
            }
            let lookup = |n: &String| {
                names.get(n).copied().ok_or_else(|| {
                    sc.field_error(
                        &field,
                        format!("value {n:?}: not a bucket or multi of this case"),
                    )
                })
            };
            if let Some(n) = &s.wait {
                steps.push(Step::Wait {
                    limiter: lookup(n)?,
                    n: 1,
                    timeout_ns: s.timeout_ns,
                });
                has_other = true;
            } else if let Some(n) = &s.take {
                let pacer = *pacers.get(n).ok_or_else(|| {
                    sc.field_error(&field, format!("value {n:?}: not a pacer of this case"))
                })?;
                steps.push(Step::Take { pacer });
                has_other = true;
            } else if let Some(ns) = s.sleep_ns {
                steps.push(Step::Sleep { ns });
                has_other = true;
            } else if let Some(n) = &s.allow {
                match lookup(n)? {
                    Node::Bucket(b) => template.push(b),
                    Node::Multi(_) => {
                        return Err(sc.field_error(
                            &field,
                            format!(
                                "value {n:?}: allow needs a bucket (MultiLimiter has no Allow)"
                            ),
                        ))
                    }
                }
            }
        }
        if g.steps.is_empty() {
            return Err(sc.field_error(
                f(&format!("callers[{gi}].steps")),
                "empty: expected at least one step",
            ));
        }
        if g.count == 0 || g.repeat == 0 {
            return Err(sc.field_error(
                f(&format!("callers[{gi}]")),
                "count and repeat must be >= 1",
            ));
        }
        for k in 0..g.count {
            let arrival = g
                .arrival_ns
                .saturating_add(g.spacing_ns.saturating_mul(k as i64));
            let caller = labels.len();
            labels.push(g.label.clone());
            let mut all = Vec::new();
            for _ in 0..g.repeat {
                all.extend(steps.iter().copied());
                for &b in &template {
                    allows.push((arrival, caller, b));
                }
            }
            agents.push(AgentScript {
                arrival_ns: arrival,
                steps: all,
            });
        }
    }
    let mut out = Vec::new();
    if !allows.is_empty() {
        if has_other {
            return Err(sc.field_error(
                f("callers"),
                "a case uses either allow steps only or wait/take/sleep steps",
            ));
        }
        allows.sort_by_key(|&(t, caller, _)| (t, caller));
        let mut step_no: BTreeMap<usize, usize> = BTreeMap::new();
        for (t, caller, b) in allows {
            let ok = world
                .limiters
                .bucket_mut(b)
                .map(|bk| bk.allow_n(t, 1))
                .unwrap_or(false);
            let step = step_no.entry(caller).or_insert(0);
            out.push(Admission {
                caller,
                label: labels.get(caller).cloned().unwrap_or_default(),
                step: *step,
                started_ns: t,
                admitted_ns: ok.then_some(t),
                waited_ns: 0,
                clock_read_ns: None,
                error: (!ok).then(|| "refused (AllowN false)".to_string()),
            });
            *step += 1;
        }
        out.sort_by_key(|a| (a.caller, a.step));
    } else {
        let outcome = des::run(&mut world, &agents)
            .map_err(|e| Error::internal(format!("case {}: {e}", c.label)))?;
        for a in &outcome.agents {
            let script = agents.get(a.agent);
            let mut step = 0;
            for (k, s) in a.steps.iter().enumerate() {
                let is_sleep = matches!(
                    script.and_then(|sc| sc.steps.get(k)),
                    Some(Step::Sleep { .. })
                );
                if is_sleep {
                    continue;
                }
                out.push(Admission {
                    caller: a.agent,
                    label: labels.get(a.agent).cloned().unwrap_or_default(),
                    step,
                    started_ns: s.started_ns,
                    admitted_ns: s.admitted_ns,
                    waited_ns: s.waited_ns,
                    clock_read_ns: s.take.map(|t| t.now_ns),
                    error: s.error.clone(),
                });
                step += 1;
            }
        }
    }
    Ok(CaseResult {
        label: c.label.clone(),
        go_version: version,
        steps: out,
        ideal_per_s: c.ideal_per_s,
        ideal_burst: c.ideal_burst.unwrap_or(1.0),
    })
}

/// Go's `Duration.String`, except that zero prints as `0` (the documents'
/// layout).
pub fn go_duration(d: i64) -> String {
    if d == 0 {
        return "0".into();
    }
    let sign = if d < 0 { "-" } else { "" };
    let u = d.unsigned_abs();
    let frac = |v: u64, unit: u64, width: usize| {
        let (i, r) = (v / unit, v % unit);
        if r == 0 {
            i.to_string()
        } else {
            let f = format!("{r:0width$}");
            format!("{i}.{}", f.trim_end_matches('0'))
        }
    };
    let body = if u < 1_000 {
        format!("{u}ns")
    } else if u < 1_000_000 {
        format!("{}µs", frac(u, 1_000, 3))
    } else if u < 1_000_000_000 {
        format!("{}ms", frac(u, 1_000_000, 6))
    } else {
        let h = u / 3_600_000_000_000;
        let m = (u / 60_000_000_000) % 60;
        let s = frac(u % 60_000_000_000, 1_000_000_000, 9);
        if h > 0 {
            format!("{h}h{m}m{s}s")
        } else if m > 0 {
            format!("{m}m{s}s")
        } else {
            format!("{s}s")
        }
    };
    format!("{sign}{body}")
}

fn parse_clock(s: &str) -> Option<i64> {
    let p: Vec<i64> = s
        .split(':')
        .map(|x| x.parse().ok())
        .collect::<Option<_>>()?;
    match p.as_slice() {
        [h, m, sec] if (0..24).contains(h) && (0..60).contains(m) && (0..60).contains(sec) => {
            Some(h * 3600 + m * 60 + sec)
        }
        _ => None,
    }
}

fn clock_label(start_s: i64, t_ns: i64) -> String {
    let s = (start_s + t_ns.div_euclid(1_000_000_000)).rem_euclid(86_400);
    format!("{:02}:{:02}:{:02}", s / 3600, (s / 60) % 60, s % 60)
}

/// Rounds to 3 significant digits, the histogram's precision (so a bucket
/// edge such as 4.001366015 s shows as the 4 s it stands for).
fn round3(v: u64) -> u64 {
    let mut scale = 1u64;
    while v / scale >= 1000 {
        scale *= 10;
    }
    (v + scale / 2) / scale * scale
}

/// Wait-time statistics of a set of steps: (count, admitted at once,
/// p50, p99 via HdrHistogram, exact max).
fn wait_stats(steps: &[&Admission]) -> (usize, usize, u64, u64, i64) {
    let mut h = hdrhistogram::Histogram::<u64>::new(3).ok();
    let mut max = 0;
    let mut at_once = 0;
    for a in steps {
        if a.admitted_ns.is_some() && a.waited_ns == 0 {
            at_once += 1;
        }
        max = max.max(a.waited_ns);
        if let Some(h) = h.as_mut() {
            let _ = h.record(a.waited_ns.max(0) as u64);
        }
    }
    let (p50, p99) = match &h {
        Some(h) if !h.is_empty() => (
            round3(h.value_at_quantile(0.5)),
            round3(h.value_at_quantile(0.99)),
        ),
        _ => (0, 0),
    };
    (steps.len(), at_once, p50, p99, max)
}

/// Runs a `pacer_timeline` scenario.
pub fn run(sc: &Scenario, ctx: &RunContext) -> Result<Output> {
    let p: Params = sc.params()?;
    let clock_start = match (&p.time_format, &p.clock_start) {
        (_, Some(s)) => Some(parse_clock(s).ok_or_else(|| {
            sc.field_error("clock_start", format!("value {s:?}: expected hh:mm:ss"))
        })?),
        (TimeFormat::Clock, None) => Some(0),
        _ => None,
    };
    if let Some((a, b)) = p.staircase_x_s {
        if !(a.is_finite() && b.is_finite() && a >= 0.0 && a < b) {
            return Err(sc.field_error(
                "staircase_x_s",
                format!("value [{a}, {b}]: expected 0 <= start < end, both finite"),
            ));
        }
    }
    check_volume(sc, &p, ctx)?;
    let cases = compute(sc, &p)?;

    let mut md = format!("# {}\n\n{}\n\n", sc.common.name, sc.common.description);
    if let Some(o) = &p.caller_order {
        md.push_str(&format!("**Caller order (fixed):** {o}\n\n"));
    }
    md.push_str("Virtual clock; every caller is a separate goroutine. Simultaneous events run in caller order (file order).\n\n");
    let mut console = String::new();
    let mut summary = Table::new([
        "case",
        "callers",
        "label",
        "steps",
        "admitted at once",
        "refused",
        "wait p50",
        "wait p99",
        "wait max",
        "last admitted",
    ]);
    let mut csv = Table::new([
        "case",
        "caller",
        "label",
        "step",
        "started_ns",
        "admitted_ns",
        "waited_ns",
        "clock_read_ns",
        "error",
    ]);
    let mut json_cases = Vec::new();
    for c in &cases {
        let mut listing = String::new();
        let sorted = c.admitted_sorted();
        match p.time_format {
            TimeFormat::Delta => {
                let mut prev: Option<i64> = None;
                for (i, a) in sorted.iter().enumerate() {
                    let t = a.admitted_ns.unwrap_or(0);
                    let d = t - prev.unwrap_or(a.started_ns);
                    listing.push_str(&format!("{i} {}\n", go_duration(d)));
                    prev = Some(t);
                }
            }
            TimeFormat::Clock => {
                let start = clock_start.unwrap_or(0);
                for a in &sorted {
                    listing.push_str(&format!(
                        "{} {}\n",
                        clock_label(start, a.admitted_ns.unwrap_or(0)),
                        a.label
                    ));
                }
                let end = c
                    .steps
                    .iter()
                    .map(|a| a.started_ns + a.waited_ns)
                    .max()
                    .unwrap_or(0);
                listing.push_str(&format!("{} Done.\n", clock_label(start, end)));
            }
            TimeFormat::Offset => {
                for a in &c.steps {
                    let what = match a.admitted_ns {
                        Some(t) => format!("admitted {}", go_duration(t)),
                        None => format!("refused ({})", a.error.clone().unwrap_or_default()),
                    };
                    listing.push_str(&format!(
                        "#{:<3} {:<16} at {:<8} {what:<22} waited {}{}\n",
                        a.caller,
                        a.label,
                        go_duration(a.started_ns),
                        go_duration(a.waited_ns),
                        a.clock_read_ns
                            .filter(|r| *r != a.started_ns)
                            .map(|r| format!(" (clock read at {})", go_duration(r)))
                            .unwrap_or_default()
                    ));
                }
            }
        }
        md.push_str(&format!("## {}\n\n```\n{listing}```\n\n", c.label));
        console.push_str(&format!("== {}\n{listing}", c.label));

        let mut by_label: BTreeMap<(usize, String), Vec<&Admission>> = BTreeMap::new();
        let mut first_caller: BTreeMap<String, usize> = BTreeMap::new();
        for a in &c.steps {
            let fc = *first_caller.entry(a.label.clone()).or_insert(a.caller);
            by_label.entry((fc, a.label.clone())).or_default().push(a);
        }
        let mut label_json = Vec::new();
        for ((_, label), steps) in &by_label {
            let (n, once, p50, p99, max) = wait_stats(steps);
            let callers: std::collections::BTreeSet<usize> =
                steps.iter().map(|a| a.caller).collect();
            let refused = steps.iter().filter(|a| a.admitted_ns.is_none()).count();
            let last = steps.iter().filter_map(|a| a.admitted_ns).max();
            summary.push([
                c.label.clone(),
                callers.len().to_string(),
                label.clone(),
                n.to_string(),
                once.to_string(),
                refused.to_string(),
                go_duration(p50 as i64),
                go_duration(p99 as i64),
                go_duration(max),
                last.map(go_duration).unwrap_or_else(|| "-".into()),
            ]);
            label_json.push(json!({
                "label": label, "callers": callers.len(), "steps": n, "admitted_at_once": once,
                "refused": refused, "wait_p50_ns": p50, "wait_p99_ns": p99, "wait_max_ns": max,
                "last_admitted_ns": last,
            }));
        }
        for a in &c.steps {
            csv.push([
                c.label.clone(),
                a.caller.to_string(),
                a.label.clone(),
                a.step.to_string(),
                a.started_ns.to_string(),
                a.admitted_ns.map(|t| t.to_string()).unwrap_or_default(),
                a.waited_ns.to_string(),
                a.clock_read_ns.map(|t| t.to_string()).unwrap_or_default(),
                a.error.clone().unwrap_or_default(),
            ]);
        }
        // Per-caller rows: admitted times and waits of each step.
        let mut callers_json: BTreeMap<usize, (String, Vec<Value>)> = BTreeMap::new();
        for a in &c.steps {
            let e = callers_json
                .entry(a.caller)
                .or_insert_with(|| (a.label.clone(), Vec::new()));
            e.1.push(json!({
                "started_ns": a.started_ns, "admitted_ns": a.admitted_ns, "waited_ns": a.waited_ns,
                "clock_read_ns": a.clock_read_ns, "error": a.error,
            }));
        }
        let rows: Vec<Value> = callers_json
            .into_iter()
            .map(|(caller, (label, steps))| json!({"caller": caller, "label": label, "steps": steps}))
            .collect();
        json_cases.push(json!({
            "label": c.label,
            "x_time_behaviour": c.go_version.name(),
            "admitted_ns_in_order": sorted.iter().map(|a| a.admitted_ns).collect::<Vec<_>>(),
            "listing": listing,
            "by_label": label_json,
            "rows": rows,
        }));
    }
    md.push_str("## Summary\n\n");
    md.push_str("Waits: p50/p99 from an HdrHistogram (3 significant digits), max exact. \"Admitted at once\" = steps that did not wait.\n\n");
    md.push_str(&summary.markdown());
    console.push_str(&summary.text());

    let mut j = report_head(sc, ctx, None);
    j.insert(
        "time_format".into(),
        json!(format!("{:?}", p.time_format).to_lowercase()),
    );
    j.insert("caller_order".into(), json!(p.caller_order));
    j.insert("cases".into(), Value::Array(json_cases));
    Ok(Output {
        json: Value::Object(j),
        table_md: md,
        table_csv: csv.csv(),
        charts: charts(&cases, p.staircase_x_s)?,
        console,
        extra_files: vec![],
    })
}

fn charts(cases: &[CaseResult], zoom: Option<(f64, f64)>) -> Result<Vec<crate::report::Chart>> {
    let mut stairs = ChartSpec::new(
        "admitted-staircase",
        "Admitted calls over time (staircase) vs the ideal rate",
        "virtual time (s)",
        "calls admitted (count)",
    );
    stairs.legend = Legend::UpperLeft;
    let mut waits = ChartSpec::new(
        "waits-per-caller",
        "Wait of each limiter step, by caller",
        "caller # (file order)",
        "wait (s)",
    );
    waits.legend = Legend::UpperLeft;
    let mut dist = ChartSpec::new(
        "wait-distribution",
        "Wait-time distribution per case (p50, p99 HdrHistogram; max exact)",
        "percentile (%)",
        "wait (s)",
    );
    dist.legend = Legend::UpperLeft;
    for (i, c) in cases.iter().enumerate() {
        let sorted = c.admitted_sorted();
        let mut pts = vec![];
        let start = c.steps.iter().map(|a| a.started_ns).min().unwrap_or(0);
        pts.push((start as f64 / S, 0.0));
        for (k, a) in sorted.iter().enumerate() {
            pts.push((a.admitted_ns.unwrap_or(0) as f64 / S, (k + 1) as f64));
        }
        let end = pts.last().map_or(0.0, |p| p.0);
        // Hold the last count a little so the final step shows.
        let tail = (end + (end * 0.02).max(0.01), sorted.len() as f64);
        pts.push(tail);
        let in_zoom = zoom.map_or(true, |(a, b)| {
            sorted.iter().any(|x| {
                let t = x.admitted_ns.unwrap_or(0) as f64 / S;
                a <= t && t <= b
            })
        });
        let mut s = Series::new(format!("{} (admitted)", c.label), pts, SeriesStyle::Step);
        s.color = Some(i % 6);
        if in_zoom {
            stairs.series.push(s);
        }
        if let (Some(r), Some(first)) = (c.ideal_per_s, sorted.first()) {
            let t0 = first.admitted_ns.unwrap_or(0) as f64 / S;
            let b = c.ideal_burst;
            let mut s = Series::new(
                format!(
                    "{}: ideal {b} at once + {}/s",
                    c.label,
                    crate::report::chart::human(r)
                ),
                vec![(t0, b), (end, b + r * (end - t0))],
                SeriesStyle::Dashed,
            );
            s.color = Some(i % 6);
            stairs.series.push(s);
        }
        let wp: Vec<(f64, f64)> = c
            .steps
            .iter()
            .map(|a| (a.caller as f64, a.waited_ns as f64 / S))
            .collect();
        let mut s = Series::new(c.label.clone(), wp, SeriesStyle::Points);
        s.color = Some(i % 6);
        waits.series.push(s);
        let refs: Vec<&Admission> = c.steps.iter().collect();
        let (_, _, p50, p99, max) = wait_stats(&refs);
        let mut s = Series::new(
            c.label.clone(),
            vec![
                (50.0, p50 as f64 / S),
                (99.0, p99 as f64 / S),
                (100.0, max as f64 / S),
            ],
            SeriesStyle::LinePoints,
        );
        s.color = Some(i % 6);
        dist.series.push(s);
    }
    dist.x_range = Some((45.0, 101.0));
    stairs.x_range = zoom;
    [stairs, waits, dist].iter().map(render).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: i64 = 1_000_000;
    const SEC: i64 = 1_000_000_000;

    fn load(name: &str) -> (Scenario, Vec<CaseResult>) {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("scenarios/{name}.json"));
        let sc = Scenario::load(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(sc.common.kind, "pacer_timeline");
        let p: Params = sc.params().unwrap_or_else(|e| panic!("{name}: {e}"));
        let cases = compute(&sc, &p).unwrap_or_else(|e| panic!("{name}: {e}"));
        (sc, cases)
    }

    fn admitted(c: &CaseResult) -> Vec<i64> {
        c.steps
            .iter()
            .map(|a| a.admitted_ns.unwrap_or(-1))
            .collect()
    }

    fn case<'a>(cases: &'a [CaseResult], label: &str) -> &'a CaseResult {
        cases
            .iter()
            .find(|c| c.label == label)
            .unwrap_or_else(|| panic!("no case {label}"))
    }

    #[test]
    fn go_durations() {
        assert_eq!(round3(4_001_366_015), 4_000_000_000);
        assert_eq!(round3(999), 999);
        assert_eq!(go_duration(0), "0");
        assert_eq!(go_duration(10 * MS), "10ms");
        assert_eq!(go_duration(1_500 * MS), "1.5s");
        assert_eq!(go_duration(60 * SEC), "1m0s");
        assert_eq!(go_duration(333_333_333), "333.333333ms");
        assert_eq!(go_duration(1_500), "1.5µs");
        assert_eq!(go_duration(-7), "-7ns");
        assert_eq!(
            clock_label(parse_clock("01:40:15").unwrap_or(0), 60 * SEC),
            "01:41:15"
        );
    }

    #[test]
    fn b1_cadence() {
        let (_, cases) = load("pacer-cadence");
        for c in &cases {
            let want: Vec<i64> = (0..10).map(|i| i * 10 * MS).collect();
            assert_eq!(admitted(c), want, "{}", c.label);
        }
        assert_eq!(cases.len(), 3);
    }

    #[test]
    fn b2_slack_after_idle() {
        let (_, cases) = load("pacer-slack-after-idle");
        for v in ["atomic-int64", "atomic", "mutex"] {
            for (slack, at_once) in [("slack 10", 11), ("WithoutSlack", 1)] {
                let c = case(&cases, &format!("{v}, {slack}"));
                let mut want = vec![0];
                want.extend((0..20).map(|i| {
                    if i < at_once {
                        10 * SEC
                    } else {
                        10 * SEC + (i - at_once + 1) * 10 * MS
                    }
                }));
                assert_eq!(admitted(c), want, "{}", c.label);
            }
        }
        // Mock clock at the Unix epoch: the int64 sentinel lets all 20 through.
        let c = case(&cases, "atomic-int64 at the mock epoch, 20 calls at t=0");
        assert_eq!(admitted(c), vec![0; 20]);
        let c = case(&cases, "atomic at the mock epoch, 20 calls at t=0");
        assert_eq!(
            admitted(c),
            (0..20).map(|i| i * 10 * MS).collect::<Vec<_>>()
        );
        // Negative slack: int64 banks the idle time without bound.
        let c = case(&cases, "atomic-int64, WithSlack(-1)");
        assert!(admitted(c).iter().filter(|&&t| t == 10 * SEC).count() == 20);
        let c = case(&cases, "atomic, WithSlack(-1)");
        assert_eq!(admitted(c)[1], 10 * SEC + 10 * MS);
        // Mutex callers read the clock when they get the lock.
        let m = case(&cases, "mutex, contention: 3 callers 0/0/50ms");
        let a = case(&cases, "atomic, contention: 3 callers 0/0/50ms");
        assert_eq!(admitted(m), admitted(a));
        assert_eq!(m.steps[2].clock_read_ns, Some(100 * MS));
        assert_eq!(a.steps[2].clock_read_ns, Some(50 * MS));
    }

    #[test]
    fn c1_no_limit() {
        let (_, cases) = load("token-bucket-no-limit");
        assert_eq!(admitted(&cases[0]), vec![0; 20]);
    }

    #[test]
    fn c2_one_per_second() {
        let (_, cases) = load("token-bucket-1-per-second");
        assert_eq!(
            admitted(&cases[0]),
            (0..20).map(|i| i * SEC).collect::<Vec<_>>()
        );
    }

    #[test]
    fn c3_multilimiter() {
        let (_, cases) = load("multilimiter-api");
        let mut want: Vec<i64> = (0..10).map(|i| i * SEC / 2).collect();
        want.extend((1..=10).map(|i| i * 6 * SEC));
        assert_eq!(admitted(&cases[0]), want);
    }

    #[test]
    fn c4_span_and_cadence() {
        let (_, cases) = load("multilimiter-disk-network");
        let t = admitted(&cases[0]);
        assert_eq!(t.iter().min(), Some(&0));
        assert_eq!(t.iter().max(), Some(&(60 * SEC)));
        // ReadFile paced 1/s by the disk, ResolveAddress every 6 s by the
        // api's minute bucket.
        assert_eq!(&t[..10], &(0..10).map(|i| i * SEC).collect::<Vec<_>>()[..]);
        assert_eq!(
            &t[10..],
            &(1..=10).map(|i| i * 6 * SEC).collect::<Vec<_>>()[..]
        );
    }

    #[test]
    fn c5_pictures() {
        let (_, cases) = load("token-bucket-pictures");
        assert_eq!(cases.len(), 4);
        // 1: depth 5, no refill, a request every 200 ms: five pass.
        let ok: Vec<bool> = cases[0]
            .steps
            .iter()
            .map(|a| a.admitted_ns.is_some())
            .collect();
        assert_eq!(ok, [vec![true; 5], vec![false; 5]].concat());
        // 2: depth 1 at 1/s, a request every 0.5 s: every other passes.
        let ok: Vec<bool> = cases[1]
            .steps
            .iter()
            .map(|a| a.admitted_ns.is_some())
            .collect();
        assert_eq!(ok, (0..10).map(|i| i % 2 == 0).collect::<Vec<_>>());
        // 3: depth 5 at 0.5/s, ten waiting callers: five at once, then every 2 s.
        assert_eq!(
            admitted(&cases[2]),
            vec![0, 0, 0, 0, 0, 2 * SEC, 4 * SEC, 6 * SEC, 8 * SEC, 10 * SEC]
        );
        // 4: burst of 2, then 4 s later a burst of 5 passes; a sixth is refused.
        assert_eq!(
            admitted(&cases[3]),
            vec![0, 0, 4 * SEC, 4 * SEC, 4 * SEC, 4 * SEC, 4 * SEC, -1]
        );
    }

    #[test]
    fn full_run_renders_report() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("scenarios/multilimiter-api.json");
        let sc = Scenario::load(&path).unwrap_or_else(|e| panic!("{e}"));
        let out = run(&sc, &RunContext::for_scenario(&sc)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(out.charts.len(), 3);
        assert!(out.table_md.contains("22:46:10 ReadFile\n"));
        assert!(out
            .table_md
            .contains("22:47:10 ResolveAddress\n22:47:10 Done."));
        assert_eq!(
            out.json["cases"][0]["admitted_ns_in_order"][10],
            json!(6 * SEC)
        );
    }
}
