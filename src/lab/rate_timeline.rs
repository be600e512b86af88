//! `rate_timeline`: pingora's `Rate` over time, read along a fixed call
//! sequence, against the true sliding-window rate.
//!
//! The table follows a scenario's exact call sequence on one model: the
//! `observe` calls, then at each read time `rate()` followed by
//! `rate_with(PROPORTIONAL_RATE_ESTIMATE_CALC_FN)`. Reads call `maybe_reset`
//! and can flip the window themselves (the read at 1108 ms does), so the
//! dense chart is sampled on *clones*: at every sample time `s` the model
//! that has seen the sequence's calls up to `s` is cloned and the clone is
//! read at `s`. The chart therefore shows "what a read at `s` would return"
//! without ever moving the table's window. The true sliding-window rate is
//! the exact count of events in `(s − interval, s]` per second
//! ([`SlidingLogOracle`]).

use super::experiment::Experiment;
use super::RunContext;
use crate::clock::MILLI;
use crate::error::Result;
use crate::model::estimator::{Estimator, EstimatorConfig};
use crate::model::rate::{proportional_rate_estimate, Rate, RATE_HASHES, RATE_SLOTS};
use crate::oracle::SlidingLogOracle;
use crate::report::chart::{ChartSpec, Legend, Series, SeriesStyle};
use crate::report::{Output, ReportBuilder, Table};
use crate::scenario::Scenario;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::time::Duration;

/// Scenario parameters.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// The Rate's interval in ms.
    pub interval_ms: u64,
    /// The key every call uses.
    #[serde(default = "default_key")]
    pub key: String,
    /// Times (ms since creation) of the `observe(key, 1)` calls.
    pub observe_ms: Vec<u64>,
    /// Times of the reads: `rate()` then `rate_with(proportional)` at each.
    pub reads_ms: Vec<u64>,
    /// Chart sampling step in ms.
    #[serde(default = "default_step")]
    pub chart_step_ms: u64,
    /// Chart end in ms (default: last read + interval).
    #[serde(default)]
    pub chart_until_ms: Option<u64>,
}

fn default_key() -> String {
    "k".to_string()
}

fn default_step() -> u64 {
    10
}

/// One read of the table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    /// Read time, ms since creation.
    pub t_ms: u64,
    /// `rate()`.
    pub rate: f64,
    /// `rate_with(PROPORTIONAL_RATE_ESTIMATE_CALC_FN)`, read right after.
    pub proportional: f64,
    /// Start of the current window after both reads (ms since creation).
    pub window_start_ms: u64,
    /// Whether the `rate()` read flipped the window.
    pub flipped: bool,
    /// Whether that flip also cleared the previous window (≥ 2 intervals).
    pub cleared_both: bool,
}

/// The result of the call sequence.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Timeline {
    /// `observe` return values in order.
    pub observed: Vec<i64>,
    /// One row per read time.
    pub rows: Vec<Row>,
    /// Flip times of the sequence (ms since creation).
    pub flips_ms: Vec<u64>,
}

fn new_rate(interval_ms: u64, seed: u64) -> Rate<Estimator> {
    Rate::new_with_estimator_config(
        Duration::from_millis(interval_ms),
        0,
        EstimatorConfig::new(RATE_HASHES, RATE_SLOTS),
        seed,
    )
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Call {
    Observe,
    Read,
}

fn calls(p: &Params) -> Vec<(u64, Call)> {
    let mut c: Vec<(u64, Call)> = p
        .observe_ms
        .iter()
        .map(|&t| (t, Call::Observe))
        .chain(p.reads_ms.iter().map(|&t| (t, Call::Read)))
        .collect();
    // Observes before reads at the same millisecond; stable otherwise.
    c.sort();
    c
}

/// Runs the call sequence.
pub fn timeline(p: &Params, seed: u64) -> Timeline {
    let mut r = new_rate(p.interval_ms, seed);
    let key = p.key.as_bytes();
    let mut out = Timeline {
        observed: Vec::new(),
        rows: Vec::new(),
        flips_ms: Vec::new(),
    };
    for (t, call) in calls(p) {
        let now = t * MILLI;
        let before = r.last_reset_ms();
        match call {
            Call::Observe => {
                // Sketch counters wrap; nothing here can fault.
                out.observed
                    .push(r.observe(key, 1, now).unwrap_or(i64::MIN));
            }
            Call::Read => {
                let past = t.saturating_sub(before);
                let rate = r.rate(key, now).unwrap_or(f64::NAN);
                let flipped = r.last_reset_ms() != before;
                let proportional = r
                    .rate_with(key, now, proportional_rate_estimate)
                    .unwrap_or(f64::NAN);
                out.rows.push(Row {
                    t_ms: t,
                    rate,
                    proportional,
                    window_start_ms: r.last_reset_ms(),
                    flipped,
                    cleared_both: flipped && past >= 2 * p.interval_ms,
                });
            }
        }
        if r.last_reset_ms() != before {
            out.flips_ms.push(r.last_reset_ms());
        }
    }
    out
}

/// Dense samples `(t_ms, rate(), proportional, true sliding rate)`, each
/// read on a clone of the model that has seen the calls up to `t`.
pub fn samples(p: &Params, seed: u64, until_ms: u64) -> Vec<(u64, f64, f64, f64)> {
    let step = p.chart_step_ms.max(1);
    let mut r = new_rate(p.interval_ms, seed);
    let mut sliding = SlidingLogOracle::new(p.interval_ms * MILLI);
    let key = p.key.as_bytes();
    let calls = calls(p);
    let mut next = 0;
    let mut out = Vec::new();
    let interval_s = p.interval_ms as f64 / 1000.0;
    let mut s = 0;
    while s <= until_ms {
        while next < calls.len() && calls[next].0 <= s {
            let (t, call) = calls[next];
            match call {
                Call::Observe => {
                    let _ = r.observe(key, 1, t * MILLI);
                    sliding.observe(key, 1, t * MILLI);
                }
                Call::Read => {
                    let _ = r.rate(key, t * MILLI);
                    let _ = r.rate_with(key, t * MILLI, proportional_rate_estimate);
                }
            }
            next += 1;
        }
        let rate = r.clone().rate(key, s * MILLI).unwrap_or(f64::NAN);
        let prop = r
            .clone()
            .rate_with(key, s * MILLI, proportional_rate_estimate)
            .unwrap_or(f64::NAN);
        let truth = if interval_s > 0.0 {
            sliding.count(key, s * MILLI) as f64 / interval_s
        } else {
            0.0
        };
        out.push((s, rate, prop, truth));
        s += step;
    }
    out
}

/// A validated `rate_timeline` scenario.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The parameters.
    pub params: Params,
    /// Where the chart's samples end (ms).
    pub until_ms: u64,
}

/// What a `rate_timeline` run measured.
#[derive(Debug, Clone)]
pub struct Measured {
    /// The sequence's reads.
    pub timeline: Timeline,
    /// The chart's samples (see [`samples`]).
    pub samples: Vec<(u64, f64, f64, f64)>,
}

/// Latest call or read time a scenario may give (ms).
const MAX_TIME_MS: u64 = 10_000_000;

/// The `rate_timeline` kind: pingora's `Rate` over time.
pub struct RateTimeline;

impl Experiment for RateTimeline {
    type Params = Params;
    type Plan = Plan;
    type Outcome = Measured;

    fn validate(scenario: &Scenario, p: Params, _: &RunContext) -> Result<Plan> {
        if p.interval_ms == 0 || p.interval_ms > 86_400_000 {
            return Err(scenario.field_error(
                "interval_ms",
                format!("value {}: expected 1 to 86400000 ms", p.interval_ms),
            ));
        }
        if p.reads_ms.is_empty() {
            return Err(scenario.field_error("reads_ms", "empty: expected at least one read time"));
        }
        if p.chart_step_ms == 0 {
            return Err(scenario.field_error("chart_step_ms", "value 0: expected at least 1 ms"));
        }
        let limit = MAX_TIME_MS;
        let last = p
            .reads_ms
            .iter()
            .chain(&p.observe_ms)
            .copied()
            .max()
            .unwrap_or(0);
        if last > limit {
            return Err(scenario.field_error(
                "reads_ms",
                format!("time {last} ms: expected at most {limit} ms"),
            ));
        }
        let until_ms = p
            .chart_until_ms
            .unwrap_or(last.saturating_add(p.interval_ms))
            .min(limit);
        if until_ms / p.chart_step_ms > 1_000_000 {
            return Err(scenario.field_error(
                "chart_step_ms",
                format!(
                    "value {}: more than 1,000,000 chart samples",
                    p.chart_step_ms
                ),
            ));
        }
        Ok(Plan {
            params: p,
            until_ms,
        })
    }

    fn run(_: &Scenario, plan: &Plan, ctx: &RunContext) -> Result<Measured> {
        Ok(Measured {
            timeline: timeline(&plan.params, ctx.seed),
            samples: samples(&plan.params, ctx.seed, plan.until_ms),
        })
    }

    fn render(scenario: &Scenario, plan: &Plan, ctx: &RunContext, m: Measured) -> Result<Output> {
        let p = &plan.params;
        let tl = &m.timeline;
        let (table, console) = read_table(p, tl);
        let mut report = ReportBuilder::new(scenario, ctx.seed, None);
        report.md(&format!(
            "## The write-up's sequence\n\nInterval {} ms; `observe({:?}, 1)` at {:?} ms returned {:?}; then at each time `rate()` and right after it `rate_with(PROPORTIONAL_RATE_ESTIMATE_CALC_FN)` on the same model. Values are the exact `f64`s (shortest round-trip decimals); the pingora-limits write-up prints them with `{{:.1}}`.\n\n",
            p.interval_ms,
            p.key,
            p.observe_ms,
            tl.observed
        ));
        report.md(&table.markdown());
        report.md(&format!(
            "\nWindow flips of the sequence: {:?} ms.\n\n## Chart\n\n`rate-timeline.svg` samples every {} ms up to {} ms. Each sample is read on a *clone* of the model that has seen the sequence's calls up to that time, so sampling never flips the table's window; a read at t can flip its clone, which is why the sampled rate() already rises at {} ms while the sequence's own first flip is at the 1108 ms read. Vertical lines: the sequence's flips.\n",
            tl.flips_ms, p.chart_step_ms, plan.until_ms, p.interval_ms
        ));
        let mut samples_table = Table::new(["t_ms", "rate", "proportional", "true_sliding_rate"]);
        for s in &m.samples {
            samples_table.push([
                s.0.to_string(),
                format!("{}", s.1),
                format!("{}", s.2),
                format!("{}", s.3),
            ]);
        }
        report
            .field("interval_ms", p.interval_ms)
            .field("observed", json!(tl.observed))
            .field("rows", json!(tl.rows))
            .field("flips_ms", json!(tl.flips_ms))
            .csv(&table)
            .console(&console)
            .chart(&chart(p, tl, &m.samples))?
            .extra_file("timeline.csv", samples_table.csv().into_bytes());
        Ok(report.finish())
    }
}

/// The table of the sequence's reads, and the console's version of it.
fn read_table(p: &Params, tl: &Timeline) -> (Table, String) {
    let mut table = Table::new([
        "t (ms)",
        "rate()",
        "rate_with(proportional)",
        "as printed ({:.1})",
        "window start (ms)",
        "note",
    ]);
    let mut console = format!(
        "interval {} ms, {} events of key {:?} at {:?} ms\n",
        p.interval_ms,
        p.observe_ms.len(),
        p.key,
        p.observe_ms
    );
    for (i, row) in tl.rows.iter().enumerate() {
        let note = if row.cleared_both {
            format!(
                "rate() flips at {} ms; 2+ intervals since the last reset: both slots cleared",
                row.t_ms
            )
        } else if row.flipped {
            format!("rate() flips: new window starts at {} ms", row.t_ms)
        } else {
            String::new()
        };
        table.push([
            row.t_ms.to_string(),
            format!("{}", row.rate),
            format!("{}", row.proportional),
            format!("{:.1}", row.proportional),
            row.window_start_ms.to_string(),
            note,
        ]);
        let events = if i == 0 {
            format!("{} events", tl.observed.len())
        } else {
            String::new()
        };
        console.push_str(&format!(
            "t={:>5}ms {:<10} rate()={:>5.1} rate_with(proportional)={:>5.1}\n",
            row.t_ms, events, row.rate, row.proportional
        ));
    }
    (table, console)
}

/// The chart: the sampled reads, the true sliding rate, the sequence's own
/// reads as points and its flips as vertical lines.
fn chart(p: &Params, tl: &Timeline, pts: &[(u64, f64, f64, f64)]) -> ChartSpec {
    let mut chart = ChartSpec::new(
        "rate-timeline",
        format!(
            "pingora Rate, interval {} ms: rate(), proportional estimate, true sliding rate",
            p.interval_ms
        ),
        "time since Rate::new (ms)",
        "rate (events per second)",
    )
    .caption("What pingora's Rate would answer if read at each millisecond (a clone, so reading does not disturb the sequence): rate() steps, the proportional estimate, and the true sliding-window rate dashed; the black markers are the call sequence's own reads, each on the line of the answer it got (one marker where rate() and the proportional estimate agree), and the dashed vertical lines its window flips. rate() reports the previous window: read at any t from 1000 ms (where a read would flip) to 2108 ms it answers 10, long after the events left the sliding window (0 from about 1440 ms); the proportional estimate decays linearly instead.");
    chart.series.push(Series::new(
        "rate() if read at t (clone of the model)",
        pts.iter().map(|s| (s.0 as f64, s.1)).collect(),
        SeriesStyle::Step,
    ));
    chart.series.push(Series::new(
        "rate_with(PROPORTIONAL) if read at t",
        pts.iter().map(|s| (s.0 as f64, s.2)).collect(),
        SeriesStyle::Line,
    ));
    chart.series.push(Series::new(
        "true sliding-window rate (events in (t-interval, t])",
        pts.iter().map(|s| (s.0 as f64, s.3)).collect(),
        SeriesStyle::Dashed,
    ));
    // The call sequence's own reads, one series in a colour of its own:
    // each read sits on the line it reads (rate() or proportional), and
    // where both answers are equal it is one marker, not two on one spot.
    let mut reads: Vec<(f64, f64)> = Vec::new();
    for r in &tl.rows {
        reads.push((r.t_ms as f64, r.rate));
        if r.proportional != r.rate {
            reads.push((r.t_ms as f64, r.proportional));
        }
    }
    chart.series.push(
        Series::new(
            "the table's reads (on the line each reads)",
            reads,
            SeriesStyle::Points,
        )
        .color(6),
    );
    chart.vlines = tl
        .flips_ms
        .iter()
        .map(|&f| (f as f64, format!("flip {f} ms")))
        .collect();
    chart.legend = Legend::UpperRight;
    chart
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn scenario() -> Scenario {
        Scenario::parse(
            Path::new("scenarios/rate-timeline.json"),
            include_str!("../../scenarios/rate-timeline.json"),
        )
        .unwrap()
    }

    #[test]
    fn the_call_sequence_table_is_exact() {
        let s = scenario();
        let p: Params = s.params().unwrap();
        let tl = timeline(&p, 1);
        assert_eq!(tl.observed, (1..=10).collect::<Vec<i64>>());
        let t: Vec<u64> = tl.rows.iter().map(|r| r.t_ms).collect();
        assert_eq!(t, vec![456, 902, 1108, 1510, 2104, 3208]);
        let rate: Vec<f64> = tl.rows.iter().map(|r| r.rate).collect();
        assert_eq!(rate, vec![0.0, 0.0, 10.0, 10.0, 10.0, 0.0]);
        let prop: Vec<String> = tl
            .rows
            .iter()
            .map(|r| format!("{:.1}", r.proportional))
            .collect();
        assert_eq!(prop, vec!["10.0", "10.0", "10.0", "6.0", "0.0", "0.0"]);
        assert_eq!(tl.rows[3].proportional, 10.0 * (1.0 - 402.0 / 1000.0));
        assert_eq!(tl.rows[4].proportional, 10.0 * (1.0 - 996.0 / 1000.0));
        assert_eq!(tl.flips_ms, vec![1108, 3208]);
        assert!(tl.rows[2].flipped && !tl.rows[2].cleared_both);
        assert!(tl.rows[5].flipped && tl.rows[5].cleared_both);
        let w: Vec<u64> = tl.rows.iter().map(|r| r.window_start_ms).collect();
        assert_eq!(w, vec![0, 0, 1108, 1108, 1108, 3208]);
    }

    #[test]
    fn samples_do_not_disturb_and_track_truth() {
        let s = scenario();
        let p: Params = s.params().unwrap();
        let pts = samples(&p, 1, 3300);
        let at = |t: u64| pts.iter().find(|s| s.0 == t).copied().unwrap();
        // A read at 1000 ms would flip its clone: rate() = 10 there.
        assert_eq!(at(990).1, 0.0);
        assert_eq!(at(1000).1, 10.0);
        // True sliding rate: 10 events until 1000 ms, then they expire.
        assert_eq!(at(450).3, 10.0);
        assert_eq!(at(1040).3, 9.0);
        assert_eq!(at(1500).3, 0.0);
        // Between 1108 and 2108 the sequence's own window holds prev = 10.
        assert_eq!(at(2100).1, 10.0);
        let out = crate::kinds::run(&s, &RunContext::for_scenario(&s)).unwrap();
        assert_eq!(out.charts.len(), 1);
        assert!(out.table_md.contains("5.9799999999999995"));
    }
}
