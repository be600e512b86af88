//! `rate_vs_oracle`: a Zipf stream with Poisson timestamps through pingora's
//! `Rate::observe`, compared at every call with three exact counts of the
//! same key:
//!
//! * the exact fixed window with the *same flips* (`FlipWindowOracle`): the
//!   difference is only the count-min sketch's overcount;
//! * the exact sliding window `(t − interval, t]` (`SlidingLogOracle`): what
//!   "requests in the last interval" means to most readers;
//! * the exact aligned fixed window (`AlignedWindowOracle`, multiples of the
//!   interval since creation).
//!
//! Plus a comparison with tower's fixed window on the same stream: tower 0.5.3's `RateLimit`
//! (one total per instance; a caller over the limit *waits* in
//! `poll_ready`), the same behind `LoadShed` (rejects instead), the pingora
//! docs' filter (`observe(key) > limit` → 429, per key, no waiting), and a
//! bare `Rate` (counts, never waits, never rejects).

use super::experiment::Experiment;
use super::RunContext;
use crate::clock::{Nanos, MILLI, SECOND};
use crate::error::{Error, Result};
use crate::metrics::{error_stats, ErrorStats};
use crate::model::estimator::{Estimator, EstimatorConfig};
use crate::model::rate::Rate;
use crate::model::tower_rate_limit::{Admit, FixedWindow, TowerRate};
use crate::oracle::{AlignedWindowOracle, FlipWindowOracle, SlidingLogOracle};
use crate::report::chart::{ChartSpec, Legend, Series, SeriesStyle};
use crate::report::fmt::pct_one_decimal;
use crate::report::{Output, ReportBuilder, Table};
use crate::rng::{derive_seed, sim_rng, stream};
use crate::scenario::Scenario;
use crate::workload::dist::{Exp, Zipf};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::time::Duration;

pub use super::Shape;

/// The limits of the comparison with tower's fixed window.
#[derive(Debug, Clone, Copy, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TowerParams {
    /// tower `Rate::new(num, per)`: requests per window, all keys together.
    pub num: u64,
    /// tower window, ms.
    pub per_ms: u64,
    /// The docs' filter: `observe(key, 1) > per_key_limit` → 429.
    pub per_key_limit: i64,
}

/// Scenario parameters.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// The Rate's interval, ms.
    pub interval_ms: u64,
    /// Distinct keys.
    pub keys: u64,
    /// Zipf exponent.
    pub s: f64,
    /// Arrivals per second.
    pub rate_per_s: f64,
    /// Simulated seconds.
    pub horizon_s: u64,
    /// Sketch shapes of the Rate.
    pub configs: Vec<Shape>,
    /// Seconds of the hot-key chart.
    #[serde(default = "default_chart")]
    pub chart_s: u64,
    /// The comparison with tower's fixed window.
    pub tower: TowerParams,
}

fn default_chart() -> u64 {
    5
}

/// One stream: `(time, key)`.
fn stream_of(p: &Params, seed: u64) -> Vec<(Nanos, u32)> {
    let mut rng = sim_rng(seed);
    let (Some(gap), Some(zipf)) = (Exp::new(p.rate_per_s), Zipf::new(p.keys, p.s)) else {
        return Vec::new();
    };
    let horizon = (p.horizon_s * SECOND) as f64;
    let mut t = 0.0;
    let mut out = Vec::new();
    loop {
        t += gap.sample(&mut rng) * SECOND as f64;
        if t >= horizon {
            break;
        }
        let k = (zipf.sample(&mut rng) as u32).saturating_sub(1);
        out.push((t as Nanos, k));
    }
    out
}

fn key_name(k: u32) -> Vec<u8> {
    format!("key-{k}").into_bytes()
}

/// Errors of one (shape, run) against the three oracles.
#[derive(Debug, Clone, Serialize)]
pub struct CellResult {
    /// observe − same-flip exact window.
    pub vs_flip: ErrorStats,
    /// observe − exact sliding window.
    pub vs_sliding: ErrorStats,
    /// observe − exact aligned window.
    pub vs_aligned: ErrorStats,
    /// Smallest observe − sliding (the sliding window can hold more).
    pub vs_sliding_min: i64,
    /// Flips of the Rate.
    pub flips: u64,
}

/// Hot-key chart data: `(t_s, observe, flip-exact, sliding)` and flips.
pub type HotTrace = (Vec<(f64, f64, f64, f64)>, Vec<f64>);

fn cell(
    p: &Params,
    events: &[(Nanos, u32)],
    shape: Shape,
    seed: u64,
    trace: bool,
) -> (CellResult, HotTrace) {
    let interval = Duration::from_millis(p.interval_ms);
    let mut rate: Rate<Estimator> = Rate::new_with_estimator_config(
        interval,
        0,
        EstimatorConfig::new(shape.hashes, shape.slots),
        seed,
    );
    let mut flip = FlipWindowOracle::new(interval, 0);
    let mut sliding = SlidingLogOracle::new(p.interval_ms * MILLI);
    let mut aligned = AlignedWindowOracle::new(p.interval_ms * MILLI, 0);
    let (mut e1, mut e2, mut e3) = (Vec::new(), Vec::new(), Vec::new());
    let mut hot = Vec::new();
    let mut flips_at = Vec::new();
    let mut last = rate.last_reset_ms();
    let mut flip_count = 0u64;
    let chart_until = p.chart_s.saturating_mul(SECOND);
    for &(t, k) in events {
        let key = key_name(k);
        let v = rate.observe(&key, 1, t).unwrap_or(i64::MIN);
        let f = flip.observe(&key, 1, t);
        let s = sliding.observe(&key, 1, t);
        let a = aligned.observe(&key, 1, t);
        e1.push(v - f);
        e2.push(v - s);
        e3.push(v - a);
        if rate.last_reset_ms() != last {
            last = rate.last_reset_ms();
            flip_count += 1;
            if trace && t <= chart_until {
                flips_at.push(last as f64 / 1000.0);
            }
        }
        if trace && k == 0 && t <= chart_until {
            hot.push((t as f64 / SECOND as f64, v as f64, f as f64, s as f64));
        }
    }
    let vs_sliding_min = e2.iter().copied().min().unwrap_or(0);
    let res = CellResult {
        vs_flip: error_stats(&mut e1, f64::INFINITY),
        vs_sliding: error_stats(&mut e2, f64::INFINITY),
        vs_aligned: error_stats(&mut e3, f64::INFINITY),
        vs_sliding_min,
        flips: flip_count,
    };
    (res, (hot, flips_at))
}

/// One row of the comparison with tower's fixed window.
#[derive(Debug, Clone, Serialize)]
pub struct TowerRow {
    /// Model.
    pub model: String,
    /// What it counts.
    pub counts: String,
    /// What happens over the limit.
    pub over_limit: String,
    /// Requests.
    pub requests: u64,
    /// Requests delayed (tower) or rejected.
    pub affected: u64,
    /// Mean wait of all requests, ms.
    pub mean_wait_ms: f64,
    /// Largest wait, ms.
    pub max_wait_ms: f64,
}

/// tower's `RateLimit` (waiting and behind `LoadShed`), the pingora docs'
/// filter and a bare `Rate` on one stream.
pub fn tower_comparison(p: &Params, events: &[(Nanos, u32)], seed: u64) -> Result<Vec<TowerRow>> {
    let tr = TowerRate::new(p.tower.num, Duration::from_millis(p.tower.per_ms))
        .map_err(|f| Error::input(format!("tower: {}", f.message)))?;
    // Waiting: one RateLimit, requests served in arrival order.
    let mut fw = FixedWindow::new(tr, 0);
    let mut free_at: Nanos = 0;
    let (mut delayed, mut wait_sum, mut wait_max) = (0u64, 0f64, 0u64);
    for &(a, _) in events {
        let mut t = a.max(free_at);
        loop {
            match fw.try_acquire(t) {
                Admit::Now => break,
                Admit::WaitUntil(w) => t = if w > t { w } else { t + 1 },
            }
        }
        let w = t - a;
        if w > 0 {
            delayed += 1;
        }
        wait_sum += w as f64;
        wait_max = wait_max.max(w);
        free_at = t;
    }
    let n = events.len() as u64;
    let mut shed = FixedWindow::new(tr, 0);
    let rejected_shed = events.iter().filter(|&&(a, _)| !shed.allow(a)).count() as u64;
    let mut rate: Rate<Estimator> = Rate::new(Duration::from_millis(p.interval_ms), 0, seed);
    let mut rejected_docs = 0u64;
    for &(a, k) in events {
        if rate.observe(&key_name(k), 1, a).unwrap_or(i64::MIN) > p.tower.per_key_limit {
            rejected_docs += 1;
        }
    }
    let mean = |s: f64| {
        if n > 0 {
            s / n as f64 / MILLI as f64
        } else {
            0.0
        }
    };
    Ok(vec![
        TowerRow {
            model: format!("tower RateLimit({}, {} ms)", p.tower.num, p.tower.per_ms),
            counts: "one total per instance".into(),
            over_limit: "caller waits in poll_ready".into(),
            requests: n,
            affected: delayed,
            mean_wait_ms: mean(wait_sum),
            max_wait_ms: wait_max as f64 / MILLI as f64,
        },
        TowerRow {
            model: format!(
                "tower LoadShed<RateLimit({}, {} ms)>",
                p.tower.num, p.tower.per_ms
            ),
            counts: "one total per instance".into(),
            over_limit: "rejected (Overloaded)".into(),
            requests: n,
            affected: rejected_shed,
            mean_wait_ms: 0.0,
            max_wait_ms: 0.0,
        },
        TowerRow {
            model: format!(
                "pingora Rate({} ms) + docs filter (observe > {})",
                p.interval_ms, p.tower.per_key_limit
            ),
            counts: "per key (count-min 4 x 1024)".into(),
            over_limit: "the application answers 429".into(),
            requests: n,
            affected: rejected_docs,
            mean_wait_ms: 0.0,
            max_wait_ms: 0.0,
        },
        TowerRow {
            model: format!("pingora Rate({} ms) alone", p.interval_ms),
            counts: "per key (count-min 4 x 1024)".into(),
            over_limit: "nothing: observe only counts".into(),
            requests: n,
            affected: 0,
            mean_wait_ms: 0.0,
            max_wait_ms: 0.0,
        },
    ])
}

/// Longest simulated horizon (a year): keeps `horizon_s × 10^9` ns far
/// inside u64 even for a tiny rate that passes the event cap.
pub const MAX_HORIZON_S: u64 = 31_536_000;

/// A validated `rate_vs_oracle` scenario.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The parameters.
    pub params: Params,
    /// Runs (fresh streams and hash seeds each).
    pub runs: u32,
}

/// What a `rate_vs_oracle` run measured.
#[derive(Debug, Clone)]
pub struct Measured {
    /// The (shape, run) cells, shape-major.
    pub cells: Vec<(usize, u64)>,
    /// Each cell's errors and (run 0 only) hot-key trace.
    pub results: Vec<(CellResult, HotTrace)>,
    /// The tower comparison on run 0's stream.
    pub tower: Vec<TowerRow>,
}

/// The `rate_vs_oracle` kind: rate vs the exact windows on a hot key.
pub struct RateVsOracle;

impl Experiment for RateVsOracle {
    type Params = Params;
    type Plan = Plan;
    type Outcome = Measured;

    fn validate(scenario: &Scenario, p: Params, ctx: &RunContext) -> Result<Plan> {
        let runs = ctx.runs(scenario, 3);
        if p.interval_ms == 0 || p.interval_ms > 3_600_000 {
            return Err(scenario.field_error(
                "interval_ms",
                format!("value {}: expected 1 to 3600000", p.interval_ms),
            ));
        }
        if p.keys == 0
            || p.keys > 10_000_000
            || Zipf::new(p.keys, p.s).is_none()
            || !(0.0..=crate::workload::counts::MAX_ZIPF_S).contains(&p.s)
        {
            return Err(scenario.field_error(
                "keys",
                format!(
                    "keys {} / s {}: expected 1 to 10000000 keys and a finite s >= 0 and <= {}",
                    p.keys,
                    crate::units::shown(p.s),
                    crate::workload::counts::MAX_ZIPF_S
                ),
            ));
        }
        if p.rate_per_s.is_nan()
            || p.rate_per_s <= 0.0
            || p.horizon_s == 0
            || p.rate_per_s * p.horizon_s as f64 > 2e7
        {
            return Err(scenario.field_error(
                "rate_per_s",
                "rate_per_s > 0, horizon_s > 0, at most 20,000,000 events",
            ));
        }
        if p.horizon_s > MAX_HORIZON_S {
            return Err(scenario.field_error(
                "horizon_s",
                format!(
                    "value {}: expected at most {MAX_HORIZON_S} (a year)",
                    p.horizon_s
                ),
            ));
        }
        for (i, c) in p.configs.iter().enumerate() {
            c.validate(scenario, &format!("configs[{i}]"), ctx.max_memory)?;
        }
        if p.configs.is_empty() {
            return Err(scenario.field_error("configs", "empty: expected at least one shape"));
        }
        if p.tower.num == 0 || p.tower.per_ms == 0 {
            return Err(scenario.field_error(
                "tower",
                "num and per_ms must be at least 1 (tower asserts both > 0)",
            ));
        }
        Ok(Plan { params: p, runs })
    }

    fn estimate_work(scenario: &Scenario, plan: &Plan, ctx: &RunContext) -> Result<()> {
        let (p, runs) = (&plan.params, plan.runs);
        // Every run's stream is kept (16 bytes an event) and replayed through
        // every shape.
        let events = p.rate_per_s * p.horizon_s as f64;
        ctx.check_work(
            scenario,
            "rate_per_s",
            events * f64::from(runs) * p.configs.len() as f64,
            20.0,
            &format!(
                "{events:.0} events x {runs} runs x {} shapes",
                p.configs.len()
            ),
        )?;
        ctx.check_memory(
            scenario,
            "runs",
            events * f64::from(runs) * 16.0,
            &format!("{runs} runs of {events:.0} events kept as streams"),
            "fewer runs",
        )
    }

    fn run(_: &Scenario, plan: &Plan, ctx: &RunContext) -> Result<Measured> {
        let (p, runs) = (&plan.params, plan.runs);
        let streams: Vec<Vec<(Nanos, u32)>> = (0..runs as u64)
            .into_par_iter()
            .map(|r| stream_of(p, derive_seed(ctx.seed, &[stream::WORKLOAD, r])))
            .collect();
        let cells: Vec<(usize, u64)> = (0..p.configs.len())
            .flat_map(|c| (0..runs as u64).map(move |r| (c, r)))
            .collect();
        let results: Vec<(CellResult, HotTrace)> = cells
            .par_iter()
            .map(|&(c, r)| {
                cell(
                    p,
                    &streams[r as usize],
                    p.configs[c],
                    derive_seed(ctx.seed, &[stream::HASH, r]),
                    r == 0,
                )
            })
            .collect();
        let tower = tower_comparison(p, &streams[0], derive_seed(ctx.seed, &[stream::HASH, 0]))?;
        Ok(Measured {
            cells,
            results,
            tower,
        })
    }

    fn render(scenario: &Scenario, plan: &Plan, ctx: &RunContext, m: Measured) -> Result<Output> {
        let (p, runs) = (&plan.params, plan.runs);
        let (table, json_rows) = error_table(p, &m);
        let min_sliding: i64 = m
            .results
            .iter()
            .map(|r| r.0.vs_sliding_min)
            .min()
            .unwrap_or(0);
        let tower_table = tower_table(&m.tower);
        let mut report = ReportBuilder::new(scenario, ctx.seed, Some(runs));
        report.md(&format!(
            "{} keys, Zipf s = {}, {} events/s (Poisson), {} s, Rate interval {} ms, {} run(s) averaged (p99 and max per run, averaged). Error = `observe()`'s return − the exact count of the same key, at every call. Against the sliding window the error can be negative (smallest seen: {}): right after a flip `observe` restarts from 0 while the sliding window still holds the last interval's events.\n\n",
            p.keys, p.s, p.rate_per_s, p.horizon_s, p.interval_ms, runs, min_sliding
        ));
        report
            .md(&table.markdown())
            .md("\n## tower's fixed window vs pingora's Rate\n\nSame stream (run 1). tower's RateLimit wraps one service and counts one total per instance; a caller over the limit waits in `poll_ready` (served here in arrival order). pingora's Rate counts per key and neither waits nor rejects: the docs' filter turns its count into a 429.\n\n")
            .md(&tower_table.markdown())
            .field("rows", json!(json_rows))
            .field("tower_vs_rate", json!(m.tower))
            .csv(&table)
            .console(&format!("{}\n{}", table.text(), tower_table.text()))
            .chart(&hot_key_chart(p, &m.results[0].1))?
            .extra_file("tower_vs_rate.csv", tower_table.csv().into_bytes());
        Ok(report.finish())
    }
}

/// The error table (each shape against each exact window, averaged over
/// runs) and its report.json rows.
fn error_table(p: &Params, m: &Measured) -> (Table, Vec<serde_json::Value>) {
    let mut table = Table::new([
        "hashes x slots",
        "compared with",
        "exact%",
        "mean",
        "p99",
        "max",
    ]);
    let mut json_rows = Vec::new();
    for (c, shape) in p.configs.iter().enumerate() {
        let rs: Vec<&CellResult> = m
            .cells
            .iter()
            .zip(&m.results)
            .filter(|((cc, _), _)| *cc == c)
            .map(|(_, r)| &r.0)
            .collect();
        let n = rs.len().max(1) as f64;
        for (name, pick) in [
            (
                "exact window, same flips (sketch error only)",
                (|r: &CellResult| r.vs_flip) as fn(&CellResult) -> ErrorStats,
            ),
            (
                "exact sliding window (t - interval, t]",
                |r: &CellResult| r.vs_sliding,
            ),
            (
                "exact aligned window (multiples of interval)",
                |r: &CellResult| r.vs_aligned,
            ),
        ] {
            let avg = |f: fn(&ErrorStats) -> f64| rs.iter().map(|r| f(&pick(r))).sum::<f64>() / n;
            table.push([
                format!("{} x {}", shape.hashes, shape.slots),
                name.to_string(),
                pct_one_decimal(avg(|s| s.exact_pct)),
                format!("{:.2}", avg(|s| s.mean)),
                format!("{:.1}", avg(|s| s.p99)),
                format!("{:.1}", avg(|s| s.max)),
            ]);
        }
        json_rows.push(json!({"config": shape, "runs": rs}));
    }
    (table, json_rows)
}

/// The tower comparison as a table.
fn tower_table(rows: &[TowerRow]) -> Table {
    let mut t = Table::new([
        "model",
        "counts",
        "over the limit",
        "requests",
        "delayed or rejected",
        "mean wait (ms)",
        "max wait (ms)",
    ]);
    for r in rows {
        t.push([
            r.model.clone(),
            r.counts.clone(),
            r.over_limit.clone(),
            r.requests.to_string(),
            r.affected.to_string(),
            format!("{:.3}", r.mean_wait_ms),
            format!("{:.3}", r.max_wait_ms),
        ]);
    }
    t
}

/// The hottest key's counts over time, from the first shape's first run.
fn hot_key_chart(p: &Params, (hot, flips): &HotTrace) -> ChartSpec {
    let mut chart = ChartSpec::new(
        "rate-vs-oracle-hot-key",
        format!(
            "Hottest key: Rate::observe vs exact counts (interval {} ms, {} x {})",
            p.interval_ms, p.configs[0].hashes, p.configs[0].slots
        ),
        "time (s)",
        "count of the key (events)",
    )
    .caption("The hottest key's count over time: Rate::observe's current-window count from the sketch (steps), the exact count with the same window flips (dashed) and the exact sliding-window count; dashed vertical lines are the window flips. Sketch and same-flip counts agree when the shape has room; the sliding window differs because the windows are fixed, not sliding.");
    chart.series.push(Series::new(
        "Rate::observe() (current window, sketch)",
        hot.iter().map(|h| (h.0, h.1)).collect(),
        SeriesStyle::Step,
    ));
    chart.series.push(Series::new(
        "exact, same flips",
        hot.iter().map(|h| (h.0, h.2)).collect(),
        SeriesStyle::Dashed,
    ));
    chart.series.push(Series::new(
        "exact sliding window",
        hot.iter().map(|h| (h.0, h.3)).collect(),
        SeriesStyle::Line,
    ));
    chart.vlines = flips
        .iter()
        .map(|&f| (f, format!("flip {f:.3} s")))
        .collect();
    chart.legend = Legend::UpperLeft;
    chart
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params() -> Params {
        Params {
            interval_ms: 100,
            keys: 50,
            s: 1.0,
            rate_per_s: 500.0,
            horizon_s: 2,
            configs: vec![
                Shape {
                    hashes: 4,
                    slots: 1024,
                },
                Shape {
                    hashes: 1,
                    slots: 2,
                },
            ],
            chart_s: 1,
            tower: TowerParams {
                num: 40,
                per_ms: 100,
                per_key_limit: 5,
            },
        }
    }

    #[test]
    fn same_flips_oracle_matches_a_roomy_sketch() {
        let p = params();
        let ev = stream_of(&p, 3);
        assert!(ev.len() > 800 && ev.len() < 1200, "{}", ev.len());
        let (big, trace) = cell(&p, &ev, p.configs[0], 1, true);
        assert_eq!(big.vs_flip.exact_pct, 100.0);
        assert!(big.vs_sliding_min < 0);
        assert!(!trace.0.is_empty() && !trace.1.is_empty());
        let (tiny, _) = cell(&p, &ev, p.configs[1], 1, false);
        assert!(tiny.vs_flip.mean > 1.0);
    }

    #[test]
    fn tower_waits_pingora_does_not() {
        let p = params();
        let ev = stream_of(&p, 3);
        let rows = tower_comparison(&p, &ev, 1).unwrap();
        assert!(rows[0].affected > 0 && rows[0].max_wait_ms > 0.0);
        assert!(rows[1].affected > 0);
        assert!(rows[2].affected > 0);
        assert_eq!(rows[3].affected, 0);
        assert!(rows.iter().all(|r| r.requests == ev.len() as u64));
    }
}
