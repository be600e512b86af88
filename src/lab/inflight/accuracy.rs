//! `inflight_accuracy`: the estimate `Inflight::incr` returns against the
//! exact in-flight count of the key, under a Zipf in-flight load, for
//! several sketch shapes and load levels.

use super::requests;
use crate::clock::{pop_due, Nanos, SECOND};
use crate::error::Result;
use crate::lab::experiment::Experiment;
use crate::lab::RunContext;
use crate::metrics::{error_stats, ErrorStats};
use crate::model::estimator::EstimatorConfig;
use crate::model::inflight::{Guard, Inflight};
use crate::report::chart::{ChartSpec, Legend, Series, SeriesStyle};
use crate::report::fmt::{kib, pct_one_decimal};
use crate::report::{Output, ReportBuilder, Table};
use crate::rng::{derive_seed, stream};
use crate::scenario::Scenario;
use crate::workload::dist::Zipf;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

pub use crate::lab::Shape;

/// `inflight_accuracy` parameters.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AccuracyParams {
    /// Distinct keys (Zipf ranks).
    pub keys: u64,
    /// Zipf exponent.
    pub s: f64,
    /// Arrivals per second.
    pub rate_per_s: f64,
    /// Mean request durations to sweep (ms): the load levels.
    pub mean_duration_ms: Vec<f64>,
    /// Simulated time, s.
    pub horizon_s: u64,
    /// Arrivals before this time are not measured (warm-up), s.
    pub warmup_s: u64,
    /// Sketch shapes.
    pub configs: Vec<Shape>,
}

/// One table row.
#[derive(Debug, Clone, Serialize)]
pub struct AccRow {
    /// Mean duration, ms.
    pub mean_duration_ms: f64,
    /// Mean true in-flight total at the measured arrivals.
    pub mean_inflight: f64,
    /// Shape.
    pub config: Shape,
    /// Per-run statistics.
    pub runs: Vec<ErrorStats>,
    /// Averages over runs (exact%, mean, p99, max).
    pub avg: [f64; 4],
}

/// A step of a [`Timeline`]: an arrival or the end of request `index`.
#[derive(Debug, Clone, Copy)]
struct Step {
    /// The request's index, with [`Step::END`] set for its end and
    /// [`Step::MEASURED`] for an arrival after the warm-up.
    index: u32,
    /// The request's key (Zipf rank - 1).
    key: u32,
}

impl Step {
    const END: u32 = 1 << 31;
    const MEASURED: u32 = 1 << 30;
    const INDEX: u32 = Self::MEASURED - 1;
}

/// One (load level, run)'s requests as the sketch sees them: arrivals and
/// ends in the order [`drive`](super::drive) handles them (the ends due at or
/// before an arrival first, by end time then request index), and the mean
/// true in-flight total at the measured arrivals. None of it depends on the
/// sketch shape, so every shape of the load level and run replays the same
/// timeline instead of drawing the requests and ordering their ends again.
pub(super) struct Timeline {
    steps: Vec<Step>,
    requests: usize,
    mean_inflight: f64,
}

/// The [`Timeline`] of load level `load`, run `run`.
pub(super) fn timeline(p: &AccuracyParams, seed: u64, load: usize, run: u64) -> Timeline {
    let Some(zipf) = Zipf::new(p.keys, p.s) else {
        return Timeline {
            steps: Vec::new(),
            requests: 0,
            mean_inflight: 0.0,
        };
    };
    let reqs = requests(
        derive_seed(seed, &[stream::WORKLOAD, load as u64, run]),
        p.rate_per_s,
        p.mean_duration_ms[load],
        p.horizon_s * SECOND,
        |rng| (zipf.sample(rng) as u32).saturating_sub(1),
    );
    // `validate` caps a scenario at 5e7 requests, well within the index bits.
    debug_assert!(reqs.len() <= Step::INDEX as usize);
    let warm = p.warmup_s * SECOND;
    let mut steps = Vec::with_capacity(2 * reqs.len());
    let mut ends: BinaryHeap<Reverse<(Nanos, u32)>> = BinaryHeap::new();
    let (mut total, mut total_sum, mut n) = (0i64, 0f64, 0u64);
    for (i, r) in reqs.iter().enumerate() {
        while let Some((_, j)) = pop_due(&mut ends, |e| e.0 <= r.at) {
            steps.push(Step {
                index: j | Step::END,
                key: reqs[j as usize].key,
            });
            total -= 1;
        }
        let measured = r.at >= warm;
        steps.push(Step {
            index: i as u32 | if measured { Step::MEASURED } else { 0 },
            key: r.key,
        });
        ends.push(Reverse((r.end, i as u32)));
        total += 1;
        if measured {
            total_sum += total as f64;
            n += 1;
        }
    }
    Timeline {
        steps,
        requests: reqs.len(),
        mean_inflight: if n > 0 { total_sum / n as f64 } else { 0.0 },
    }
}

/// One (load level, shape, run) cell on its load level's and run's
/// timeline: the error statistics of the estimate `Inflight::incr` returns
/// at each measured arrival against the exact in-flight count of its key.
/// The same calls, in the same order, as [`drive`](super::drive) makes.
pub(super) fn accuracy_cell(
    p: &AccuracyParams,
    seed: u64,
    timeline: &Timeline,
    shape: Shape,
    run: u64,
) -> ErrorStats {
    let cfg = EstimatorConfig::new(shape.hashes, shape.slots);
    let mut inf = Inflight::with_config(cfg, derive_seed(seed, &[stream::HASH, run]));
    let mut truth = vec![0i64; p.keys as usize];
    let mut guards: Vec<Option<Guard>> = Vec::with_capacity(timeline.requests);
    let mut errors = Vec::new();
    let mut key = KeyName::default();
    for step in &timeline.steps {
        let k = step.key as usize;
        if step.index & Step::END != 0 {
            let i = (step.index & Step::INDEX) as usize;
            if let Some(g) = guards.get_mut(i).and_then(Option::take) {
                inf.drop_guard(g);
                if let Some(c) = truth.get_mut(k) {
                    *c -= 1;
                }
            }
            continue;
        }
        match inf.incr(key.of(step.key), 1) {
            Ok((g, est)) => {
                truth[k] += 1;
                if step.index & Step::MEASURED != 0 {
                    errors.push(est - truth[k]);
                }
                guards.push(Some(g));
            }
            Err(_) => guards.push(None),
        }
    }
    error_stats(&mut errors, f64::INFINITY)
}

/// The bytes of key `k`'s name, `key-{k}` (what `format!` gives), written
/// into a reused buffer: formatting was a sixth of a cell's time.
#[derive(Default)]
struct KeyName {
    buf: [u8; 14],
}

impl KeyName {
    fn of(&mut self, mut k: u32) -> &[u8] {
        let mut at = self.buf.len();
        loop {
            at -= 1;
            self.buf[at] = b'0' + (k % 10) as u8;
            k /= 10;
            if k == 0 {
                break;
            }
        }
        at -= 4;
        self.buf[at..at + 4].copy_from_slice(b"key-");
        &self.buf[at..]
    }
}

/// A validated `inflight_accuracy` scenario.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The parameters.
    pub params: AccuracyParams,
    /// Runs (fresh streams and hash seeds each).
    pub runs: u32,
}

/// The `inflight_accuracy` kind.
pub struct InflightAccuracy;

impl Experiment for InflightAccuracy {
    type Params = AccuracyParams;
    type Plan = Plan;
    type Outcome = Vec<AccRow>;

    fn validate(scenario: &Scenario, p: AccuracyParams, ctx: &RunContext) -> Result<Plan> {
        let runs = ctx.runs(scenario, 3);
        if p.keys == 0 || p.keys > 10_000_000 {
            return Err(
                scenario.field_error("keys", format!("value {}: expected 1 to 10000000", p.keys))
            );
        }
        if p.horizon_s > crate::lab::rate_vs_oracle::MAX_HORIZON_S {
            return Err(scenario.field_error(
                "horizon_s",
                format!(
                    "value {}: expected at most {} (a year)",
                    p.horizon_s,
                    crate::lab::rate_vs_oracle::MAX_HORIZON_S
                ),
            ));
        }
        if !(0.0..=crate::workload::counts::MAX_ZIPF_S).contains(&p.s)
            || Zipf::new(p.keys, p.s).is_none()
        {
            return Err(scenario.field_error(
                "s",
                format!(
                    "value {}: expected a finite exponent >= 0 and <= {}",
                    crate::units::shown(p.s),
                    crate::workload::counts::MAX_ZIPF_S
                ),
            ));
        }
        if p.rate_per_s.is_nan()
            || p.rate_per_s <= 0.0
            || p.rate_per_s * p.horizon_s as f64 > 5e7
            || p.horizon_s == 0
        {
            return Err(scenario.field_error(
                "rate_per_s",
                "rate_per_s > 0, horizon_s > 0, at most 50,000,000 requests",
            ));
        }
        if p.warmup_s >= p.horizon_s {
            return Err(scenario.field_error(
                "warmup_s",
                format!(
                    "value {}: expected less than horizon_s {}",
                    p.warmup_s, p.horizon_s
                ),
            ));
        }
        for (i, d) in p.mean_duration_ms.iter().enumerate() {
            if !(*d > 0.0 && *d <= 1e7) {
                return Err(scenario.field_error(
                    format!("mean_duration_ms[{i}]"),
                    format!("value {d}: expected > 0"),
                ));
            }
        }
        for (i, c) in p.configs.iter().enumerate() {
            c.validate(scenario, &format!("configs[{i}]"), ctx.max_memory)?;
        }
        Ok(Plan { params: p, runs })
    }

    fn estimate_work(scenario: &Scenario, plan: &Plan, ctx: &RunContext) -> Result<()> {
        let (p, runs) = (&plan.params, plan.runs);
        let events = p.rate_per_s * p.horizon_s as f64;
        let cell_count = p.mean_duration_ms.len() * p.configs.len();
        ctx.check_work(
            scenario,
            "rate_per_s",
            events * cell_count as f64 * f64::from(runs),
            50.0,
            &format!("{events:.0} requests x {cell_count} (duration, shape) cells x {runs} runs"),
        )
    }

    fn run(_: &Scenario, plan: &Plan, ctx: &RunContext) -> Result<Vec<AccRow>> {
        let (p, runs) = (&plan.params, plan.runs);
        let cells: Vec<(usize, usize, u64)> = (0..p.mean_duration_ms.len())
            .flat_map(|l| {
                (0..p.configs.len()).flat_map(move |c| (0..runs as u64).map(move |r| (l, c, r)))
            })
            .collect();
        // A timeline per (load level, run), its shapes run on it; at most
        // one timeline per worker thread is alive at a time.
        let groups: Vec<(usize, u64)> = (0..p.mean_duration_ms.len())
            .flat_map(|l| (0..runs as u64).map(move |r| (l, r)))
            .collect();
        let by_group: Vec<(Vec<ErrorStats>, f64)> = groups
            .par_iter()
            .map(|&(l, r)| {
                let tl = timeline(p, ctx.seed, l, r);
                let stats = p
                    .configs
                    .par_iter()
                    .map(|&shape| accuracy_cell(p, ctx.seed, &tl, shape, r))
                    .collect();
                (stats, tl.mean_inflight)
            })
            .collect();
        let results: Vec<(ErrorStats, f64)> = cells
            .iter()
            .map(|&(l, c, r)| {
                let (stats, mean_inflight) = &by_group[l * runs as usize + r as usize];
                (stats[c], *mean_inflight)
            })
            .collect();
        let mut rows = Vec::new();
        for l in 0..p.mean_duration_ms.len() {
            for (c, &config) in p.configs.iter().enumerate() {
                let rs: Vec<&(ErrorStats, f64)> = cells
                    .iter()
                    .zip(&results)
                    .filter(|((cl, cc, _), _)| *cl == l && *cc == c)
                    .map(|(_, r)| r)
                    .collect();
                let n = rs.len().max(1) as f64;
                let avg = |f: fn(&ErrorStats) -> f64| rs.iter().map(|r| f(&r.0)).sum::<f64>() / n;
                rows.push(AccRow {
                    mean_duration_ms: p.mean_duration_ms[l],
                    mean_inflight: rs.iter().map(|r| r.1).sum::<f64>() / n,
                    config,
                    runs: rs.iter().map(|r| r.0).collect(),
                    avg: [
                        avg(|s| s.exact_pct),
                        avg(|s| s.mean),
                        avg(|s| s.p99),
                        avg(|s| s.max),
                    ],
                });
            }
        }
        Ok(rows)
    }

    fn render(
        scenario: &Scenario,
        plan: &Plan,
        ctx: &RunContext,
        rows: Vec<AccRow>,
    ) -> Result<Output> {
        let (p, runs) = (&plan.params, plan.runs);
        let (table, console) = error_table(&rows);
        let mut report = ReportBuilder::new(scenario, ctx.seed, Some(runs));
        report
            .md(&format!(
                "{} keys, Zipf s = {}, {} arrivals/s, exponential durations, {} s simulated, arrivals after {} s measured, {} run(s) averaged (p99 and max are per-run values averaged). Error = the estimate `Inflight::incr` returns − the exact in-flight count of that key including the request. Axis floor of the chart: 0.001 (a mean of 0 is drawn there).\n\n",
                p.keys, p.s, p.rate_per_s, p.horizon_s, p.warmup_s, runs
            ))
            .md(&table.markdown())
            .field("rows", json!(rows))
            .csv(&table)
            .console(&console)
            .chart(&chart(p, &rows))?;
        Ok(report.finish())
    }
}

/// The error table, a row per (load level, shape), and the console's
/// version of it.
fn error_table(rows: &[AccRow]) -> (Table, String) {
    let mut table = Table::new([
        "mean duration (ms)",
        "mean in-flight",
        "hashes",
        "slots",
        "memory",
        "exact%",
        "mean",
        "p99",
        "max",
    ]);
    let mut console = String::new();
    for r in rows {
        let mem = EstimatorConfig::new(r.config.hashes, r.config.slots).memory_bytes();
        let cells = [
            format!("{}", r.mean_duration_ms),
            format!("{:.0}", r.mean_inflight),
            r.config.hashes.to_string(),
            r.config.slots.to_string(),
            kib(mem),
            pct_one_decimal(r.avg[0]),
            format!("{:.2}", r.avg[1]),
            format!("{:.1}", r.avg[2]),
            format!("{:.1}", r.avg[3]),
        ];
        console.push_str(&format!("{}\n", cells.join("  ")));
        table.push(cells);
    }
    (table, console)
}

/// Mean overcount against the mean in-flight total, a line per shape.
fn chart(p: &AccuracyParams, rows: &[AccRow]) -> ChartSpec {
    let mut chart = ChartSpec::new(
        "inflight-accuracy",
        "Inflight estimate - true in-flight count at each arrival (mean over arrivals)",
        "mean in-flight requests (all keys)",
        "mean overcount (requests, log)",
    )
    .log_log(0.0)
    .caption("Mean overcount of pingora's Inflight estimate at each arrival (estimate - true in-flight count) against the mean in-flight load, log-log, a line per sketch shape: the error grows with load and shrinks with slots. A shape exact at some load has that point on the \"0\" row; where several shapes are exact at one load, one marker stands for them all, labelled with their shapes.");
    let mut series: Vec<Series> = p
        .configs
        .iter()
        .enumerate()
        .map(|(c, config)| {
            let pts: Vec<(f64, f64)> = rows
                .iter()
                .enumerate()
                .filter(|(i, _)| i % p.configs.len() == c)
                .map(|(_, r)| (r.mean_inflight.max(1.0), r.avg[1]))
                .collect();
            Series::new(
                format!("{} x {}", config.hashes, config.slots),
                pts,
                SeriesStyle::LinePoints,
            )
        })
        .collect();
    merge_exact_points(&mut series);
    chart.series = series;
    chart.legend = Legend::UpperLeft;
    chart
}

/// Shapes exact (overcount 0) at the same load would put their markers on
/// one spot of the "0" row: the first of them keeps the point, labelled
/// with every shape exact there, and the others drop it.
fn merge_exact_points(series: &mut [Series]) {
    let xs: Vec<f64> = series
        .iter()
        .flat_map(|s| s.points.iter().filter(|q| q.1 <= 0.0).map(|q| q.0))
        .collect();
    let mut done: Vec<f64> = Vec::new();
    for x in xs {
        if done.contains(&x) {
            continue;
        }
        done.push(x);
        let at = |s: &Series| s.points.iter().position(|q| q.0 == x && q.1 <= 0.0);
        let exact: Vec<usize> = (0..series.len())
            .filter(|&i| at(&series[i]).is_some())
            .collect();
        if exact.len() < 2 {
            continue;
        }
        let names: Vec<String> = exact.iter().map(|&i| series[i].label.clone()).collect();
        for (k, &i) in exact.iter().enumerate() {
            let Some(j) = at(&series[i]) else { continue };
            if k == 0 {
                let n = series[i].points.len();
                let labels = series[i]
                    .point_labels
                    .get_or_insert_with(|| vec![String::new(); n]);
                labels[j] = format!("exact: {}", names.join(" = "));
            } else {
                series[i].points.remove(j);
                if let Some(l) = series[i].point_labels.as_mut() {
                    l.remove(j);
                }
            }
        }
    }
}

/// The real defaults (the tests' shape).
#[cfg(test)]
const DEFAULT_SHAPE: Shape = Shape {
    hashes: crate::model::inflight::INFLIGHT_HASHES,
    slots: crate::model::inflight::INFLIGHT_SLOTS,
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_names_are_what_format_writes() {
        let mut name = KeyName::default();
        for k in [0, 1, 9, 10, 99, 100, 12345, 999_999, 1_000_000, u32::MAX] {
            assert_eq!(name.of(k), format!("key-{k}").as_bytes());
        }
    }

    #[test]
    fn accuracy_default_shape_is_exact_at_low_load() {
        let p = AccuracyParams {
            keys: 100,
            s: 1.0,
            rate_per_s: 1000.0,
            mean_duration_ms: vec![20.0],
            horizon_s: 2,
            warmup_s: 1,
            configs: vec![
                DEFAULT_SHAPE,
                Shape {
                    hashes: 1,
                    slots: 4,
                },
            ],
        };
        let tl = timeline(&p, 1, 0, 0);
        let s = accuracy_cell(&p, 1, &tl, DEFAULT_SHAPE, 0);
        assert_eq!(s.exact_pct, 100.0);
        let inflight = tl.mean_inflight;
        assert!(inflight > 10.0 && inflight < 30.0, "{inflight}");
        let tiny = accuracy_cell(
            &p,
            1,
            &tl,
            Shape {
                hashes: 1,
                slots: 4,
            },
            0,
        );
        assert!(tiny.mean > 1.0 && tiny.exact_pct < 50.0, "{tiny:?}");
    }
}
