//! `inflight_guard_leak`: the exact `Guard::incr` sequence, then the leak's
//! drift over time for a share of requests that call it.

use super::{drive, requests};
use crate::clock::{MILLI, SECOND};
use crate::error::{Error, Result};
use crate::lab::experiment::Experiment;
use crate::lab::RunContext;
use crate::model::estimator::Fault;
use crate::model::inflight::Inflight;
use crate::report::chart::{ChartSpec, Legend, Series, SeriesStyle};
use crate::report::{Output, ReportBuilder, Table};
use crate::rng::{derive_seed, sim_rng, stream};
use crate::scenario::Scenario;
use rand::Rng;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::json;

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

/// The exact sequence: (after incr, after Guard::incr, a new incr
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

/// What an `inflight_guard_leak` run measured.
#[derive(Debug, Clone)]
pub struct Measured {
    /// The exact sequence: after `incr`, after `Guard::incr`, a new `incr`
    /// after the drop.
    pub exact: (i64, i64, i64),
    /// One drift per share, in scenario order.
    pub drifts: Vec<Drift>,
}

/// The `inflight_guard_leak` kind.
pub struct GuardLeak;

impl Experiment for GuardLeak {
    type Params = LeakParams;
    type Plan = LeakParams;
    type Outcome = Measured;

    fn validate(scenario: &Scenario, p: LeakParams, _: &RunContext) -> Result<LeakParams> {
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
        Ok(p)
    }

    fn estimate_work(scenario: &Scenario, p: &LeakParams, ctx: &RunContext) -> Result<()> {
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
            &format!(
                "{shares} shares x ({events:.0} requests + {samples:.0} samples x {keys} keys)"
            ),
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
        )
    }

    fn run(_: &Scenario, p: &LeakParams, ctx: &RunContext) -> Result<Measured> {
        let exact = exact_sequence(ctx.seed)
            .map_err(|f| Error::internal(format!("Inflight model faulted: {}", f.message)))?;
        let drifts = p
            .shares
            .par_iter()
            .enumerate()
            .map(|(i, &s)| drift(p, ctx.seed, i as u64, s))
            .collect();
        Ok(Measured { exact, drifts })
    }

    fn render(
        scenario: &Scenario,
        p: &LeakParams,
        ctx: &RunContext,
        m: Measured,
    ) -> Result<Output> {
        let (a, b, c) = m.exact;
        let drifts = &m.drifts;
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

        let mut table = Table::new([
            "share p",
            "requests",
            "Guard::incr calls",
            "leaked at end",
            "p x requests",
            "true in-flight at end",
        ]);
        for d in drifts {
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
        let mut report = ReportBuilder::new(scenario, ctx.seed, None);
        report
            .md("## The write-up's sequence (exact)\n\n")
            .md(&exact.markdown());
        report.md(&format!(
            "\n## Drift\n\n{} requests/s on {} key(s), exponential durations of mean {} ms, {} s; a share p of the requests calls `Guard::incr()` once while in flight. Each call adds 1 that the guard's drop never takes back.\n\n",
            p.rate_per_s, p.keys, p.mean_duration_ms, p.horizon_s
        ));
        report
            .md(&table.markdown())
            .field(
                "exact",
                json!({"after_incr": a, "after_guard_incr": b, "after_drop_new_incr": c}),
            )
            .field("drift", json!(drifts))
            .csv(&table)
            .console(&console)
            .chart(&chart(drifts))?;
        Ok(report.finish())
    }
}

/// The leaked count over time, a line per share.
fn chart(drifts: &[Drift]) -> ChartSpec {
    let mut chart = ChartSpec::new(
        "inflight-leak",
        "Inflight: count leaked by Guard::incr (estimate - true in-flight)",
        "time (s)",
        "leaked count (requests)",
    )
    .caption("Count leaked by Guard::incr over time (estimate - true in-flight), a line per share p of requests that call it: every such call adds one that is never taken back, so the leak grows linearly with p and time; p = 0 stays at 0.");
    for d in drifts {
        chart.series.push(Series::new(
            format!("p = {}", d.share),
            d.samples.iter().map(|&(t, l)| (t, l as f64)).collect(),
            SeriesStyle::Line,
        ));
    }
    chart.legend = Legend::UpperLeft;
    chart
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_exact_sequence_is_1_2_2() {
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
}
