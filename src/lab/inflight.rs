//! pingora's `Inflight` (EXPERIMENTS.md A6): two kinds.
//!
//! * `inflight_guard_leak`: the document's exact sequence (`Inflight::incr`
//!   → 1, `Guard::incr` → 2, drop, a new `incr` sees 2), then a drift
//!   experiment: requests arrive as a Poisson stream, each holds its guard
//!   for an exponentially distributed time, and a share `p` of them call
//!   `Guard::incr` once while in flight (say, a retry path that re-counts the
//!   request). Each such call leaks the guard's value for good; the chart
//!   shows the leaked count (estimate − true in-flight) growing over time.
//! * `inflight_accuracy`: a Zipf in-flight load on many keys. At every
//!   arrival the estimate `incr` returns is compared with the exact in-flight
//!   count of that key (including this request), i.e. the value a limiter
//!   would act on; an error table like A1 for the 4 × 8192 default and other
//!   shapes, at several load levels (mean in-flight totals).
//!
//! Arrivals and durations are drawn from `derive_seed(seed, [WORKLOAD, …])`
//! so every sketch shape and every share `p` sees the same requests; sketch
//! hashes from `derive_seed(seed, [HASH, run])`.

use super::{report_head, RunContext};
use crate::clock::{Nanos, MILLI, SECOND};
use crate::error::{Error, Result};
use crate::metrics::{error_stats, ErrorStats};
use crate::model::estimator::{EstimatorConfig, Fault, FrequencyEstimator};
use crate::model::inflight::{Guard, Inflight, INFLIGHT_HASHES, INFLIGHT_SLOTS};
use crate::report::chart::{render, ChartSpec, Legend, Series, SeriesStyle};
use crate::report::{Output, Table};
use crate::rng::{derive_seed, sim_rng, stream, SimRng};
use crate::scenario::Scenario;
use rand::Rng;
use crate::workload::dist::{Exp, Zipf};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// One request of an in-flight load.
#[derive(Debug, Clone, Copy)]
struct Req {
    at: Nanos,
    end: Nanos,
    key: u32,
}

/// Poisson arrivals of `rate_per_s` over `[0, horizon)`, exponential
/// durations of mean `mean_ms`, keys drawn by `key`.
fn requests(
    seed: u64,
    rate_per_s: f64,
    mean_ms: f64,
    horizon: Nanos,
    mut key: impl FnMut(&mut SimRng) -> u32,
) -> Vec<Req> {
    let mut rng = sim_rng(seed);
    let mut out = Vec::new();
    let (Some(gap), Some(dur)) = (Exp::new(rate_per_s), Exp::new(1.0 / mean_ms)) else {
        return out;
    };
    let mut t = 0.0f64;
    loop {
        t += gap.sample(&mut rng) * SECOND as f64;
        if t >= horizon as f64 {
            break;
        }
        let d = dur.sample(&mut rng) * MILLI as f64;
        let at = t as Nanos;
        out.push(Req {
            at,
            end: at.saturating_add(d.max(1.0) as Nanos),
            key: key(&mut rng),
        });
    }
    out
}

/// Drives `reqs` through `inflight`: guards dropped at their end times
/// (before an arrival at the same instant). `on_arrival(inflight, req,
/// guard, estimate, true_count_of_key)` runs after each `incr`.
#[allow(clippy::too_many_arguments)]
fn drive<E: FrequencyEstimator>(
    inflight: &mut Inflight<E>,
    reqs: &[Req],
    keys: usize,
    key_bytes: &dyn Fn(u32) -> Vec<u8>,
    mut on_arrival: impl FnMut(&mut Inflight<E>, usize, &Guard, i64, i64),
    mut until: impl FnMut(&Inflight<E>, Nanos, &[i64]),
    sample_every: Nanos,
    horizon: Nanos,
) {
    let mut truth = vec![0i64; keys];
    let mut guards: Vec<Option<Guard>> = Vec::with_capacity(reqs.len());
    let mut ends: BinaryHeap<Reverse<(Nanos, usize)>> = BinaryHeap::new();
    let mut next_sample = sample_every;
    let drop_until = |t: Nanos,
                      inflight: &mut Inflight<E>,
                      ends: &mut BinaryHeap<Reverse<(Nanos, usize)>>,
                      guards: &mut Vec<Option<Guard>>,
                      truth: &mut Vec<i64>| {
        while let Some(&Reverse((end, i))) = ends.peek() {
            if end > t {
                break;
            }
            ends.pop();
            if let Some(g) = guards.get_mut(i).and_then(Option::take) {
                inflight.drop_guard(g);
                if let Some(c) = truth.get_mut(reqs[i].key as usize) {
                    *c -= 1;
                }
            }
        }
    };
    for (i, r) in reqs.iter().enumerate() {
        while sample_every > 0 && next_sample <= r.at {
            drop_until(next_sample, inflight, &mut ends, &mut guards, &mut truth);
            until(inflight, next_sample, &truth);
            next_sample += sample_every;
        }
        drop_until(r.at, inflight, &mut ends, &mut guards, &mut truth);
        let k = r.key as usize;
        match inflight.incr(&key_bytes(r.key), 1) {
            Ok((g, est)) => {
                truth[k] += 1;
                on_arrival(inflight, i, &g, est, truth[k]);
                guards.push(Some(g));
                ends.push(Reverse((r.end, i)));
            }
            Err(_) => guards.push(None),
        }
    }
    while sample_every > 0 && next_sample <= horizon {
        drop_until(next_sample, inflight, &mut ends, &mut guards, &mut truth);
        until(inflight, next_sample, &truth);
        next_sample += sample_every;
    }
}

// ---------------------------------------------------------------- guard leak

/// `inflight_guard_leak` parameters.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LeakParams {
    /// Shares of requests that call `Guard::incr` once.
    pub shares: Vec<f64>,
    /// Arrivals per second (all keys).
    pub rate_per_s: f64,
    /// Mean request duration, ms.
    pub mean_duration_ms: f64,
    /// Simulated time, s.
    pub horizon_s: u64,
    /// Chart sampling step, ms.
    pub sample_ms: u64,
    /// Distinct keys (uniform).
    #[serde(default = "one")]
    pub keys: u32,
}

fn one() -> u32 {
    1
}

/// The document's exact sequence: (after incr, after Guard::incr, a new incr
/// after the drop).
pub fn exact_sequence(seed: u64) -> Result<(i64, i64, i64), Fault> {
    let mut inf = Inflight::new(seed);
    let (g, a) = inf.incr(b"a", 1)?;
    let b = inf.guard_incr(&g)?;
    inf.drop_guard(g);
    let (g2, c) = inf.incr(b"a", 1)?;
    inf.drop_guard(g2);
    Ok((a, b, c))
}

/// One share's drift: samples `(t_s, leaked)` and end totals.
#[derive(Debug, Clone, Serialize)]
pub struct Drift {
    /// Share of requests that call `Guard::incr`.
    pub share: f64,
    /// Requests.
    pub requests: u64,
    /// `Guard::incr` calls.
    pub guard_incrs: u64,
    /// Σ over keys of estimate − true in-flight at the end.
    pub leaked_end: i64,
    /// True in-flight at the end.
    pub inflight_end: i64,
    /// `(t in s, leaked)`.
    pub samples: Vec<(f64, i64)>,
}

/// Runs the drift experiment for one share.
pub fn drift(p: &LeakParams, seed: u64, idx: u64, share: f64) -> Drift {
    let keys = p.keys.max(1);
    let reqs = requests(
        derive_seed(seed, &[stream::WORKLOAD]),
        p.rate_per_s,
        p.mean_duration_ms,
        p.horizon_s * SECOND,
        |rng| rng.random_range(0..keys),
    );
    let mut coin = sim_rng(derive_seed(seed, &[stream::WORKLOAD, 1, idx]));
    let mut inf = Inflight::new(derive_seed(seed, &[stream::HASH]));
    let names: Vec<Vec<u8>> = (0..keys)
        .map(|k| format!("client-{k}").into_bytes())
        .collect();
    let mut guard_incrs = 0u64;
    let mut samples = Vec::new();
    let leaked = |inf: &Inflight, truth: &[i64]| -> i64 {
        names
            .iter()
            .zip(truth)
            .map(|(n, t)| inf.estimate(n) - t)
            .sum()
    };
    let mut last_truth = vec![0i64; keys as usize];
    drive(
        &mut inf,
        &reqs,
        keys as usize,
        &|k| names[k as usize].clone(),
        |inf, _, g, _, _| {
            if coin.random::<f64>() < share {
                let _ = inf.guard_incr(g);
                guard_incrs += 1;
            }
        },
        |inf, t, truth| {
            samples.push((t as f64 / SECOND as f64, leaked(inf, truth)));
            last_truth.copy_from_slice(truth);
        },
        p.sample_ms * MILLI,
        p.horizon_s * SECOND,
    );
    let (leaked_end, inflight_end) = samples
        .last()
        .map(|s| (s.1, last_truth.iter().sum()))
        .unwrap_or((0, 0));
    Drift {
        share,
        requests: reqs.len() as u64,
        guard_incrs,
        leaked_end,
        inflight_end,
        samples,
    }
}

/// Runs an `inflight_guard_leak` scenario.
pub fn run_guard_leak(scenario: &Scenario, ctx: &RunContext) -> Result<Output> {
    let p: LeakParams = scenario.params()?;
    if p.shares.is_empty() {
        return Err(scenario.field_error("shares", "empty: expected at least one share"));
    }
    for (i, s) in p.shares.iter().enumerate() {
        if !(0.0..=1.0).contains(s) {
            return Err(scenario.field_error(
                format!("shares[{i}]"),
                format!("value {s}: expected 0 to 1"),
            ));
        }
    }
    if !(p.rate_per_s > 0.0 && p.rate_per_s <= 1e6) {
        return Err(scenario.field_error(
            "rate_per_s",
            format!("value {}: expected > 0 and at most 1000000", p.rate_per_s),
        ));
    }
    if !(p.mean_duration_ms > 0.0 && p.mean_duration_ms <= 1e7) {
        return Err(scenario.field_error(
            "mean_duration_ms",
            format!("value {}: expected > 0", p.mean_duration_ms),
        ));
    }
    if p.sample_ms == 0 || p.horizon_s == 0 || p.horizon_s > 86_400 {
        return Err(scenario.field_error(
            "sample_ms",
            "sample_ms and horizon_s must be > 0 (horizon at most 86400 s)",
        ));
    }
    if p.sample_ms > p.horizon_s * 1000 {
        return Err(scenario.field_error(
            "sample_ms",
            format!(
                "value {}: expected at most the horizon, {} ms",
                p.sample_ms,
                p.horizon_s * 1000
            ),
        ));
    }
    if p.rate_per_s * p.horizon_s as f64 > 5e7 {
        return Err(scenario.field_error(
            "rate_per_s",
            "rate_per_s x horizon_s: expected at most 50,000,000 requests",
        ));
    }
    if p.keys == 0 || p.keys > 10_000_000 {
        return Err(
            scenario.field_error("keys", format!("value {}: expected 1 to 10000000", p.keys))
        );
    }
    // Every sample sums estimate − truth over every key (the leak is a
    // property of the whole sketch), so samples × keys is charged too: a
    // request costs about 50 units, one key's estimate about 3 (measured).
    let events = p.rate_per_s * p.horizon_s as f64;
    let samples = (p.horizon_s as f64 * 1000.0 / p.sample_ms as f64).ceil();
    let shares = p.shares.len() as f64;
    let keys = f64::from(p.keys.max(1));
    let steps = events + samples * keys;
    ctx.check_work(
        scenario,
        "shares",
        shares * steps,
        (50.0 * events + 3.0 * samples * keys) / steps,
        &format!("{shares} shares x ({events:.0} requests + {samples:.0} samples x {keys} keys)"),
    )?;
    // Per share: each key's name and two in-flight counts.
    ctx.check_memory(
        scenario,
        "keys",
        shares * keys * 64.0,
        &format!("{shares} shares x {keys} keys"),
        "fewer keys",
    )?;
    ctx.check_memory(
        scenario,
        "sample_ms",
        shares * samples * 16.0,
        &format!(
            "value {}: {samples:.0} samples x {shares} shares",
            p.sample_ms
        ),
        "sample less often",
    )?;
    let (a, b, c) = exact_sequence(ctx.seed)
        .map_err(|f| Error::internal(format!("Inflight model faulted: {}", f.message)))?;
    let mut console = format!(
        "after Inflight::incr: {a}\nafter Guard::incr: {b}\nafter drop, a new incr sees: {c}\n"
    );
    let mut exact = Table::new(["step", "estimate of key a"]);
    exact.push(["Inflight::incr(\"a\", 1)".to_string(), a.to_string()]);
    exact.push(["Guard::incr()".to_string(), b.to_string()]);
    exact.push([
        "drop(guard); Inflight::incr(\"a\", 1)".to_string(),
        c.to_string(),
    ]);

    let drifts: Vec<Drift> = p
        .shares
        .par_iter()
        .enumerate()
        .map(|(i, &s)| drift(&p, ctx.seed, i as u64, s))
        .collect();
    let mut table = Table::new([
        "share p",
        "requests",
        "Guard::incr calls",
        "leaked at end",
        "p x requests",
        "true in-flight at end",
    ]);
    for d in &drifts {
        table.push([
            format!("{}", d.share),
            d.requests.to_string(),
            d.guard_incrs.to_string(),
            d.leaked_end.to_string(),
            format!("{:.0}", d.share * d.requests as f64),
            d.inflight_end.to_string(),
        ]);
        console.push_str(&format!(
            "p={} requests={} leaked={}\n",
            d.share, d.requests, d.leaked_end
        ));
    }
    let mut chart = ChartSpec::new(
        "inflight-leak",
        "Inflight: count leaked by Guard::incr (estimate - true in-flight)",
        "time (s)",
        "leaked count (requests)",
    );
    for d in &drifts {
        chart.series.push(Series::new(
            format!("p = {}", d.share),
            d.samples.iter().map(|&(t, l)| (t, l as f64)).collect(),
            SeriesStyle::Line,
        ));
    }
    chart.legend = Legend::UpperLeft;
    let charts = vec![render(&chart)?];
    let mut md = format!(
        "# {}\n\n{}\n\n## The document's sequence (exact)\n\n",
        scenario.common.name, scenario.common.description
    );
    md.push_str(&exact.markdown());
    md.push_str(&format!(
        "\n## Drift\n\n{} requests/s on {} key(s), exponential durations of mean {} ms, {} s; a share p of the requests calls `Guard::incr()` once while in flight. Each call adds 1 that the guard's drop never takes back.\n\n",
        p.rate_per_s, p.keys, p.mean_duration_ms, p.horizon_s
    ));
    md.push_str(&table.markdown());
    let mut j = report_head(scenario, ctx, None);
    j.insert(
        "exact".into(),
        json!({"after_incr": a, "after_guard_incr": b, "after_drop_new_incr": c}),
    );
    j.insert("drift".into(), json!(drifts));
    Ok(Output {
        json: serde_json::Value::Object(j),
        table_md: md,
        table_csv: table.csv(),
        charts,
        console,
        extra_files: vec![],
    })
}

// ------------------------------------------------------------------ accuracy

pub use super::Shape;

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

fn accuracy_cell(
    p: &AccuracyParams,
    seed: u64,
    load: usize,
    shape: Shape,
    run: u64,
) -> (ErrorStats, f64) {
    let Some(zipf) = Zipf::new(p.keys, p.s) else {
        return (error_stats(&mut [], 0.0), 0.0);
    };
    let reqs = requests(
        derive_seed(seed, &[stream::WORKLOAD, load as u64, run]),
        p.rate_per_s,
        p.mean_duration_ms[load],
        p.horizon_s * SECOND,
        |rng| (zipf.sample(rng) as u32).saturating_sub(1),
    );
    let cfg = EstimatorConfig::new(shape.hashes, shape.slots);
    let mut inf = Inflight::with_config(cfg, derive_seed(seed, &[stream::HASH, run]));
    let warm = p.warmup_s * SECOND;
    let mut errors = Vec::new();
    let mut total = 0i64;
    let mut total_sum = 0f64;
    drive(
        &mut inf,
        &reqs,
        p.keys as usize,
        &|k| format!("key-{k}").into_bytes(),
        |_, i, _, est, truth| {
            if reqs[i].at >= warm {
                errors.push(est - truth);
            }
        },
        |_, _, _| {},
        0,
        0,
    );
    // Mean in-flight total at the measured arrivals (exact, recomputed).
    let mut ends: BinaryHeap<Reverse<Nanos>> = BinaryHeap::new();
    let mut n = 0u64;
    for r in &reqs {
        while ends.peek().is_some_and(|e| e.0 <= r.at) {
            ends.pop();
            total -= 1;
        }
        total += 1;
        ends.push(Reverse(r.end));
        if r.at >= warm {
            total_sum += total as f64;
            n += 1;
        }
    }
    let mean_inflight = if n > 0 { total_sum / n as f64 } else { 0.0 };
    (error_stats(&mut errors, f64::INFINITY), mean_inflight)
}

/// Runs an `inflight_accuracy` scenario.
pub fn run_accuracy(scenario: &Scenario, ctx: &RunContext) -> Result<Output> {
    let p: AccuracyParams = scenario.params()?;
    let runs = ctx.runs(scenario, 3);
    if p.keys == 0 || p.keys > 10_000_000 {
        return Err(
            scenario.field_error("keys", format!("value {}: expected 1 to 10000000", p.keys))
        );
    }
    if p.horizon_s > super::rate_vs_oracle::MAX_HORIZON_S {
        return Err(scenario.field_error(
            "horizon_s",
            format!(
                "value {}: expected at most {} (a year)",
                p.horizon_s,
                super::rate_vs_oracle::MAX_HORIZON_S
            ),
        ));
    }
    if !(p.s >= 0.0 && p.s.is_finite()) || Zipf::new(p.keys, p.s).is_none() {
        return Err(scenario.field_error(
            "s",
            format!("value {}: expected a finite exponent >= 0", p.s),
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
    let events = p.rate_per_s * p.horizon_s as f64;
    let cell_count = p.mean_duration_ms.len() * p.configs.len();
    ctx.check_work(
        scenario,
        "rate_per_s",
        events * cell_count as f64 * f64::from(runs),
        50.0,
        &format!("{events:.0} requests x {cell_count} (duration, shape) cells x {runs} runs"),
    )?;
    let cells: Vec<(usize, usize, u64)> = (0..p.mean_duration_ms.len())
        .flat_map(|l| {
            (0..p.configs.len()).flat_map(move |c| (0..runs as u64).map(move |r| (l, c, r)))
        })
        .collect();
    let results: Vec<(ErrorStats, f64)> = cells
        .par_iter()
        .map(|&(l, c, r)| accuracy_cell(&p, ctx.seed, l, p.configs[c], r))
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
    for r in &rows {
        let mem = EstimatorConfig::new(r.config.hashes, r.config.slots).memory_bytes();
        let cells = [
            format!("{}", r.mean_duration_ms),
            format!("{:.0}", r.mean_inflight),
            r.config.hashes.to_string(),
            r.config.slots.to_string(),
            format!("{}KiB", mem / 1024),
            format!("{:.1}%", r.avg[0]),
            format!("{:.2}", r.avg[1]),
            format!("{:.1}", r.avg[2]),
            format!("{:.1}", r.avg[3]),
        ];
        console.push_str(&format!("{}\n", cells.join("  ")));
        table.push(cells);
    }
    let mut chart = ChartSpec::new(
        "inflight-accuracy",
        "Inflight estimate - true in-flight count at each arrival (mean over arrivals)",
        "mean in-flight requests (all keys)",
        "mean overcount (requests)",
    );
    chart.x_log = true;
    chart.y_log = true;
    chart.log_floor = 0.001;
    for (c, config) in p.configs.iter().enumerate() {
        let pts: Vec<(f64, f64)> = rows
            .iter()
            .enumerate()
            .filter(|(i, _)| i % p.configs.len() == c)
            .map(|(_, r)| (r.mean_inflight.max(1.0), r.avg[1]))
            .collect();
        chart.series.push(Series::new(
            format!("{} x {}", config.hashes, config.slots),
            pts,
            SeriesStyle::LinePoints,
        ));
    }
    chart.legend = Legend::UpperLeft;
    let charts = vec![render(&chart)?];
    let mut md = format!(
        "# {}\n\n{}\n\n{} keys, Zipf s = {}, {} arrivals/s, exponential durations, {} s simulated, arrivals after {} s measured, {} run(s) averaged (p99 and max are per-run values averaged). Error = the estimate `Inflight::incr` returns − the exact in-flight count of that key including the request. Axis floor of the chart: 0.001 (a mean of 0 is drawn there).\n\n",
        scenario.common.name, scenario.common.description, p.keys, p.s, p.rate_per_s, p.horizon_s, p.warmup_s, runs
    );
    md.push_str(&table.markdown());
    let mut j = report_head(scenario, ctx, Some(runs));
    j.insert("rows".into(), json!(rows));
    Ok(Output {
        json: serde_json::Value::Object(j),
        table_md: md,
        table_csv: table.csv(),
        charts,
        console,
        extra_files: vec![],
    })
}

/// The real defaults, for scenario authors and tests.
pub const DEFAULT_SHAPE: Shape = Shape {
    hashes: INFLIGHT_HASHES,
    slots: INFLIGHT_SLOTS,
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a6_exact_values() {
        for seed in 0..3 {
            assert_eq!(exact_sequence(seed), Ok((1, 2, 2)));
        }
    }

    #[test]
    fn drift_leaks_one_per_guard_incr() {
        let p = LeakParams {
            shares: vec![0.0, 0.1],
            rate_per_s: 200.0,
            mean_duration_ms: 50.0,
            horizon_s: 5,
            sample_ms: 500,
            keys: 2,
        };
        let none = drift(&p, 1, 0, 0.0);
        assert_eq!(none.guard_incrs, 0);
        assert!(none.samples.iter().all(|s| s.1 == 0));
        let some = drift(&p, 1, 1, 0.1);
        assert_eq!(none.requests, some.requests);
        // Every Guard::incr of a finished request is leaked; the ones still
        // in flight at the last sample are leaked too (not yet dropped).
        assert_eq!(some.leaked_end, some.guard_incrs as i64);
        assert!(
            some.guard_incrs > 50 && some.guard_incrs < 150,
            "{}",
            some.guard_incrs
        );
        let again = drift(&p, 1, 1, 0.1);
        assert_eq!(again.samples, some.samples);
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
        let (s, inflight) = accuracy_cell(&p, 1, 0, DEFAULT_SHAPE, 0);
        assert_eq!(s.exact_pct, 100.0);
        assert!(inflight > 10.0 && inflight < 30.0, "{inflight}");
        let (tiny, _) = accuracy_cell(
            &p,
            1,
            0,
            Shape {
                hashes: 1,
                slots: 4,
            },
            0,
        );
        assert!(tiny.mean > 1.0 && tiny.exact_pct < 50.0, "{tiny:?}");
    }
}
