//! `estimator_characterization`: how a sketch's error is distributed, per
//! frequency rank, over many hash seeds — the way Apache DataSketches
//! characterizes its sketches.
//!
//! The stream is FIXED (run 0's event order and counts); each trial gets fresh
//! hash seeds (`derive_seed(seed, [HASH, trial])`). For log-spaced ranks
//! (1 = busiest key) the report gives the error quantiles at the normal
//! equivalents of ±1, ±2, ±3 standard deviations (0.00135, 0.02275, 0.15866,
//! 0.5, 0.84134, 0.97725, 0.99865; nearest rank over trials) and the share of
//! trials in which that key's error exceeded e·N/w. The chart ("pitchfork")
//! draws the quantile contours against rank, with the bound dashed.
//!
//! Trials double from `min_trials` (8, 16, 32, ...) until the contours are
//! stable or `max_trials` is reached. Stable: from T to 2T trials, every
//! contour value at every rank moved by at most `tolerance_pct` % of its value
//! or `abs_floor` events, whichever is larger. Rounds reuse earlier trials, so
//! the result is the same as one run of the final trial count. While running
//! (progress enabled, on a terminal) an intermediate table and an estimated
//! time to finish go to stderr; the report holds no timings.

use super::estimator_accuracy::{kib, Shape, MAX_HASHES};
use super::{report_head, RunContext};
use crate::algo::estimator::Variant;
use crate::error::Result;
use crate::hash::HasherKind;
use crate::metrics::count_min_bound;
use crate::report::chart::{render, ChartSpec, Legend, Series, SeriesStyle};
use crate::report::{Output, Table};
use crate::rng::{derive_seed, stream};
use crate::scenario::Scenario;
use crate::sizing::Evaluator;
use crate::workload::counts::WorkloadSummary;
use crate::workload::CountWorkload;
use rayon::prelude::*;
use serde::Deserialize;
use serde_json::json;
use std::io::IsTerminal;

/// Scenario parameters.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// The workload (its stream is fixed: run 0's).
    pub workload: CountWorkload,
    /// Shapes to characterize (one chart each).
    pub configs: Vec<Shape>,
    /// Update rule.
    #[serde(default)]
    pub variant: Variant,
    /// Hash family.
    #[serde(default)]
    pub hasher: HasherKind,
    /// Number of log-spaced rank points (before removing duplicates).
    #[serde(default = "default_rank_points")]
    pub rank_points: usize,
    /// First round's trials.
    #[serde(default = "default_min_trials")]
    pub min_trials: u32,
    /// Most trials.
    #[serde(default = "default_max_trials")]
    pub max_trials: u32,
    /// Stability: largest relative change of any contour value (%).
    #[serde(default = "default_tolerance")]
    pub tolerance_pct: f64,
    /// Stability: changes up to this many events always count as stable.
    #[serde(default = "default_abs_floor")]
    pub abs_floor: f64,
}

fn default_rank_points() -> usize {
    25
}
fn default_min_trials() -> u32 {
    8
}
fn default_max_trials() -> u32 {
    1024
}
fn default_tolerance() -> f64 {
    2.0
}
fn default_abs_floor() -> f64 {
    1.0
}

/// The normal-equivalent quantiles of -3..=+3 standard deviations.
pub const QUANTILES: [f64; 7] = [
    0.00135, 0.02275, 0.15866, 0.5, 0.84134, 0.97725, 0.99865,
];
/// Their labels.
pub const QUANTILE_LABELS: [&str; 7] = ["-3σ", "-2σ", "-1σ", "median", "+1σ", "+2σ", "+3σ"];

/// Log-spaced unique ranks in 1..=n.
pub fn log_ranks(n: usize, points: usize) -> Vec<usize> {
    if n == 0 {
        return Vec::new();
    }
    let points = points.max(2);
    let mut out: Vec<usize> = (0..points)
        .map(|j| {
            ((j as f64 / (points - 1) as f64) * (n as f64).ln())
                .exp()
                .round()
                .clamp(1.0, n as f64) as usize
        })
        .collect();
    out.dedup();
    out
}

/// Nearest-rank quantile of sorted values.
fn quantile(sorted: &[i64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let n = sorted.len();
    let rank = (p * n as f64).ceil().clamp(1.0, n as f64) as usize;
    sorted[rank - 1] as f64
}

/// One trial: errors at the rank points, and keys over the bound in all.
struct Trial {
    at_ranks: Vec<i64>,
    over_bound: u64,
}

/// One characterized shape.
struct Characterized {
    hashes: usize,
    slots: u64,
    trials: u32,
    stable: bool,
    last_change_pct: f64,
    /// contours[q][j]
    contours: Vec<Vec<f64>>,
    over_bound_at_rank: Vec<f64>,
    over_bound_pct: f64,
    bound: f64,
}

fn contours(samples: &[Trial], points: usize) -> Vec<Vec<f64>> {
    let mut cols: Vec<Vec<i64>> = (0..points)
        .map(|j| samples.iter().map(|t| t.at_ranks[j]).collect())
        .collect();
    cols.iter_mut().for_each(|c| c.sort_unstable());
    QUANTILES
        .iter()
        .map(|&p| cols.iter().map(|c| quantile(c, p)).collect())
        .collect()
}

/// Runs an `estimator_characterization` scenario.
pub fn run(scenario: &Scenario, ctx: &RunContext) -> Result<Output> {
    let p: Params = scenario.params()?;
    let workload = p.workload.build(&scenario.path, "workload")?;
    if p.configs.is_empty() {
        return Err(scenario.field_error("configs", "empty: expected at least one {\"hashes\": H, \"slots\": W}"));
    }
    for (i, s) in p.configs.iter().enumerate() {
        super::estimator_accuracy::validate_shape(scenario, &format!("configs[{i}]"), *s, ctx.max_memory)?;
        if s.hashes > MAX_HASHES {
            return Err(scenario.field_error(format!("configs[{i}].hashes"), "too many rows"));
        }
    }
    if p.min_trials < 2 || p.max_trials < p.min_trials || p.max_trials > 1 << 20 {
        return Err(scenario.field_error(
            "max_trials",
            format!(
                "min_trials {} / max_trials {}: expected 2 <= min_trials <= max_trials <= {}",
                p.min_trials,
                p.max_trials,
                1u32 << 20
            ),
        ));
    }
    if !(p.tolerance_pct.is_finite() && p.tolerance_pct > 0.0) {
        return Err(scenario.field_error("tolerance_pct", format!("value {}: expected a percentage > 0", p.tolerance_pct)));
    }
    if !(p.abs_floor.is_finite() && p.abs_floor >= 0.0) {
        return Err(scenario.field_error("abs_floor", format!("value {}: expected a number >= 0", p.abs_floor)));
    }
    if !(2..=1000).contains(&p.rank_points) {
        return Err(scenario.field_error("rank_points", format!("value {}: expected 2..=1000", p.rank_points)));
    }
    let ev = Evaluator::new(workload, p.variant, p.hasher, ctx.seed, 1);
    let truth = ev.truth0().to_vec();
    let summary = WorkloadSummary::of_counts(&truth);
    // Keys in rank order: true count descending, key id ascending.
    let mut order: Vec<u32> = (0..truth.len() as u32).filter(|&k| truth[k as usize] > 0).collect();
    order.sort_by(|&a, &b| truth[b as usize].cmp(&truth[a as usize]).then(a.cmp(&b)));
    let ranks = log_ranks(order.len(), p.rank_points);
    let rank_keys: Vec<u32> = ranks.iter().map(|&r| order[r - 1]).collect();
    let verbose = ctx.progress && std::io::stdout().is_terminal();
    let progress = ctx.progress(
        p.configs.len() as u64 * u64::from(p.max_trials),
        &scenario.common.name,
    );
    let mut results = Vec::new();
    for shape in &p.configs {
        let (h, w) = (shape.hashes as usize, shape.slots);
        let bound = count_min_bound(summary.events, w as usize);
        let trial = |t: u32| -> Trial {
            let errs = ev.errors_with_hash_seed(h, w, 0, derive_seed(ctx.seed, &[stream::HASH, u64::from(t)]));
            // errs is in key order over seen keys: index by key id.
            let mut by_key = vec![0i64; truth.len()];
            let mut over = 0u64;
            for &(k, e) in &errs {
                by_key[k as usize] = e;
                over += u64::from(e as f64 > bound);
            }
            progress.inc(1);
            Trial {
                at_ranks: rank_keys.iter().map(|&k| by_key[k as usize]).collect(),
                over_bound: over,
            }
        };
        let started = std::time::Instant::now();
        let mut samples: Vec<Trial> = (0..p.min_trials).into_par_iter().map(trial).collect();
        let mut prev = contours(&samples, ranks.len());
        let mut stable = false;
        let mut last_change = f64::INFINITY;
        while (samples.len() as u32) < p.max_trials {
            let from = samples.len() as u32;
            let to = (from * 2).min(p.max_trials);
            let more: Vec<Trial> = (from..to).into_par_iter().map(trial).collect();
            samples.extend(more);
            let now = contours(&samples, ranks.len());
            let (ok, worst) = stability(&prev, &now, p.tolerance_pct, p.abs_floor);
            last_change = worst;
            prev = now;
            if verbose {
                let secs = started.elapsed().as_secs_f64();
                let per = secs / samples.len() as f64;
                let left = if ok { 0.0 } else { per * (p.max_trials as f64 - samples.len() as f64) };
                eprintln!(
                    "\n{}x{}: {} trials, largest contour change {:.1}% ({}); at most {:.0}s more for this shape",
                    h,
                    w,
                    samples.len(),
                    worst,
                    if ok { "stable" } else { "not yet stable" },
                    left
                );
                eprint!("{}", round_table(&ranks, &truth, &order, &prev).text());
            }
            if ok {
                stable = true;
                break;
            }
        }
        progress.inc(u64::from(p.max_trials) - samples.len() as u64);
        let trials = samples.len() as u32;
        let over_bound_at_rank = (0..ranks.len())
            .map(|j| 100.0 * samples.iter().filter(|t| t.at_ranks[j] as f64 > bound).count() as f64 / trials as f64)
            .collect();
        let over_total: u64 = samples.iter().map(|t| t.over_bound).sum();
        results.push(Characterized {
            hashes: h,
            slots: w,
            trials,
            stable,
            last_change_pct: if last_change.is_finite() { last_change } else { 0.0 },
            contours: prev,
            over_bound_at_rank,
            over_bound_pct: 100.0 * over_total as f64 / (trials as f64 * order.len().max(1) as f64),
            bound,
        });
    }
    progress.finish();
    Ok(render_output(scenario, ctx, &p, &summary, &ranks, &truth, &order, &results))
}

/// (stable, largest relative change in % among changes above the floor).
fn stability(old: &[Vec<f64>], new: &[Vec<f64>], tol: f64, abs_floor: f64) -> (bool, f64) {
    let mut ok = true;
    let mut worst = 0.0f64;
    for (a, b) in old.iter().zip(new) {
        for (&o, &n) in a.iter().zip(b) {
            let d = (n - o).abs();
            if d > (tol / 100.0 * o.abs()).max(abs_floor) {
                ok = false;
            }
            if d > abs_floor {
                worst = worst.max(100.0 * d / o.abs().max(1.0));
            }
        }
    }
    (ok, worst)
}

fn round_table(ranks: &[usize], truth: &[u64], order: &[u32], c: &[Vec<f64>]) -> Table {
    let mut t = Table::new(
        ["rank", "true count"]
            .into_iter()
            .map(String::from)
            .chain(QUANTILE_LABELS.iter().map(|s| s.to_string())),
    );
    for (j, &r) in ranks.iter().enumerate() {
        let mut row = vec![r.to_string(), truth[order[r - 1] as usize].to_string()];
        row.extend(c.iter().map(|q| format!("{:.0}", q[j])));
        t.push(row);
    }
    t
}

#[allow(clippy::too_many_arguments)]
fn render_output(
    scenario: &Scenario,
    ctx: &RunContext,
    p: &Params,
    summary: &WorkloadSummary,
    ranks: &[usize],
    truth: &[u64],
    order: &[u32],
    results: &[Characterized],
) -> Output {
    let mut md = format!("# {}\n\n", scenario.common.name);
    if !scenario.common.description.is_empty() {
        md.push_str(&format!("{}\n\n", scenario.common.description));
    }
    md.push_str(&format!(
        "{}. Fixed stream, fresh hash seeds per trial ({} update, {} hasher). Quantiles are nearest-rank over trials at the normal equivalents of ±1, ±2, ±3 σ ({}). Trials double from {} until every contour value moves by at most {}% or {} events, or {} trials.\n\n",
        summary.headline(),
        p.variant.name(),
        p.hasher.name(),
        QUANTILES.iter().map(|q| q.to_string()).collect::<Vec<_>>().join(", "),
        p.min_trials,
        p.tolerance_pct,
        p.abs_floor,
        p.max_trials
    ));
    let mut st = Table::new([
        "shape", "memory", "trials", "stopped", "last change", "e*N/w", "over bound%", "theory e^-h",
    ]);
    for r in results {
        st.push([
            format!("{}x{}", r.hashes, r.slots),
            kib(r.hashes as u64 * r.slots * 8),
            r.trials.to_string(),
            if r.stable { "stable" } else { "max_trials" }.to_string(),
            format!("{:.1}%", r.last_change_pct),
            format!("{:.0}", r.bound),
            format!("{:.3}%", r.over_bound_pct),
            format!("{:.3}%", 100.0 * (-(r.hashes as f64)).exp()),
        ]);
    }
    md.push_str(&st.markdown());
    let mut console = format!("{}\n{}", summary.headline(), st.text());
    let mut csv = Table::new(
        ["shape", "rank", "true_count"]
            .into_iter()
            .map(String::from)
            .chain(QUANTILES.iter().map(|q| format!("q{q}")))
            .chain(["over_bound_pct".to_string()]),
    );
    let mut charts = Vec::new();
    let mut json_rows = Vec::new();
    for r in results {
        let name = format!("{}x{}", r.hashes, r.slots);
        let mut t = round_table(ranks, truth, order, &r.contours);
        t.header.push("over bound%".into());
        for (j, row) in t.rows.iter_mut().enumerate() {
            row.push(format!("{:.1}%", r.over_bound_at_rank[j]));
        }
        md.push_str(&format!("\n## {name}: error quantiles by rank ({} trials)\n\n", r.trials));
        md.push_str(&t.markdown());
        console.push_str(&format!("\n{name}, {} trials:\n{}", r.trials, t.text()));
        for (j, &rank) in ranks.iter().enumerate() {
            let mut row = vec![name.clone(), rank.to_string(), truth[order[rank - 1] as usize].to_string()];
            row.extend(r.contours.iter().map(|q| q[j].to_string()));
            row.push(r.over_bound_at_rank[j].to_string());
            csv.push(row);
        }
        json_rows.push(json!({
            "hashes": r.hashes,
            "slots": r.slots,
            "memory_bytes": r.hashes as u64 * r.slots * 8,
            "trials": r.trials,
            "stopped": if r.stable { "stable" } else { "max_trials" },
            "last_change_pct": r.last_change_pct,
            "bound_enw": r.bound,
            "over_bound_pct": r.over_bound_pct,
            "bound_theory_pct": 100.0 * (-(r.hashes as f64)).exp(),
            "ranks": ranks.iter().enumerate().map(|(j, &rank)| json!({
                "rank": rank,
                "true_count": truth[order[rank - 1] as usize],
                "quantiles": r.contours.iter().map(|q| q[j]).collect::<Vec<_>>(),
                "over_bound_pct": r.over_bound_at_rank[j],
            })).collect::<Vec<_>>(),
        }));
        let mut spec = ChartSpec::new(
            format!("pitchfork_{name}"),
            format!("{name} count-min: error quantiles by rank over {} hash seeds", r.trials),
            "key rank (1 = busiest key, log scale)",
            "error = estimate - true count (events, log; 0 drawn at 0.1)",
        );
        spec.x_log = true;
        spec.y_log = true;
        spec.legend = Legend::UpperLeft;
        let colors = [5usize, 0, 2, 6, 2, 0, 5];
        for (q, label) in QUANTILE_LABELS.iter().enumerate() {
            let pts = ranks.iter().enumerate().map(|(j, &rank)| (rank as f64, r.contours[q][j])).collect();
            let mut s = Series::new(
                format!("{label} (q={})", QUANTILES[q]),
                pts,
                SeriesStyle::Line,
            );
            s.color = Some(colors[q]);
            spec.series.push(s);
        }
        let last = ranks.last().copied().unwrap_or(1) as f64;
        let mut b = Series::new(format!("e·N/w = {:.0}", r.bound), vec![(1.0, r.bound), (last, r.bound)], SeriesStyle::Dashed);
        b.color = Some(3);
        spec.series.push(b);
        if let Ok(c) = render(&spec) {
            charts.push(c);
        }
    }
    md.push_str("\n## Charts\n\n- `pitchfork_<shape>`: the quantile contours against key rank (log-log); the dashed line is the count-min bound e·N/w. Contours are symmetric pairs (±1σ, ±2σ, ±3σ) around the median.\n");
    let mut j = report_head(scenario, ctx, None);
    j.insert("variant".into(), p.variant.name().into());
    j.insert("hasher".into(), p.hasher.name().into());
    j.insert("quantiles".into(), json!(QUANTILES));
    j.insert(
        "stopping".into(),
        json!({"min_trials": p.min_trials, "max_trials": p.max_trials, "tolerance_pct": p.tolerance_pct, "abs_floor": p.abs_floor}),
    );
    j.insert(
        "workload".into(),
        json!({
            "keys": summary.keys,
            "events": summary.events,
            "top_key_events": summary.top_key_events,
            "keys_seen_once": summary.keys_seen_once,
            "shape": serde_json::to_value(&p.workload).unwrap_or_default(),
        }),
    );
    j.insert("shapes".into(), serde_json::Value::Array(json_rows));
    Output {
        json: serde_json::Value::Object(j),
        table_md: md,
        table_csv: csv.csv(),
        charts,
        console,
        extra_files: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_are_log_spaced_and_unique() {
        let r = log_ranks(10_000, 25);
        assert_eq!(r.first(), Some(&1));
        assert_eq!(r.last(), Some(&10_000));
        assert!(r.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(log_ranks(1, 25), vec![1]);
    }

    #[test]
    fn quantiles_are_nearest_rank() {
        let v: Vec<i64> = (1..=100).collect();
        assert_eq!(quantile(&v, 0.5), 50.0);
        assert_eq!(quantile(&v, 0.00135), 1.0);
        assert_eq!(quantile(&v, 0.99865), 100.0);
        assert_eq!(quantile(&v, 0.84134), 85.0);
    }

    #[test]
    fn stability_uses_relative_and_absolute_floors() {
        let a = vec![vec![100.0, 0.0]];
        assert!(stability(&a, &[vec![101.0, 1.0]], 2.0, 1.0).0);
        assert!(!stability(&a, &[vec![103.0, 0.0]], 2.0, 1.0).0);
        assert!(!stability(&a, &[vec![100.0, 2.0]], 2.0, 1.0).0);
    }
}
