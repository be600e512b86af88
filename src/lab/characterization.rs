//! `estimator_characterization`: how a sketch's error is distributed, per
//! frequency rank, over many hash seeds — the way Apache DataSketches
//! characterizes its sketches.
//!
//! The stream is FIXED (run 0's event order and counts); each trial gets fresh
//! hash seeds (`derive_seed(seed, [HASH, trial])`). For log-spaced rank bins
//! (1 = busiest key; `min_bin_keys` > 1 pools adjacent ranks so cold ranks
//! get many samples per trial) the report gives the error quantiles at the normal
//! equivalents of ±1, ±2, ±3 standard deviations (0.00135, 0.02275, 0.15866,
//! 0.5, 0.84134, 0.97725, 0.99865; nearest rank over every trial's errors of
//! the bin's keys) and the share of those errors above e·N/w. The chart ("pitchfork")
//! draws the quantile contours against rank, with the bound dashed.
//!
//! Trials double from `min_trials` (8, 16, 32, ...) until the contours are
//! stable or `max_trials` is reached. Stable: from T to 2T trials, every
//! contour value at every rank moved by at most `tolerance_pct` % of its value
//! or the floor max(`abs_floor` events, `floor_bound_pct` % of e·N/w),
//! whichever is larger. Rounds reuse earlier trials, so
//! the result is the same as one run of the final trial count. While running
//! (progress enabled, on a terminal) an intermediate table and an estimated
//! time to finish go to stderr; the report holds no timings.

use super::estimator_accuracy::{kib, Shape};
use super::{report_head, RunContext};
use crate::error::Result;
use crate::hash::HasherKind;
use crate::metrics::count_min_bound;
use crate::model::estimator::Variant;
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
use std::collections::BTreeMap;
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
    /// Number of log-spaced rank bins (before merging small ones).
    #[serde(default = "default_rank_points")]
    pub rank_points: usize,
    /// Adjacent bins are merged until each holds at least this many keys
    /// (1 = one key per rank point, no pooling).
    #[serde(default = "default_min_bin_keys")]
    pub min_bin_keys: usize,
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
    /// Stability: changes up to this % of the shape's e·N/w always count as
    /// stable (the bound is the natural scale of the error).
    #[serde(default = "default_floor_bound_pct")]
    pub floor_bound_pct: f64,
}

fn default_floor_bound_pct() -> f64 {
    1.0
}

fn default_rank_points() -> usize {
    25
}
fn default_min_bin_keys() -> usize {
    1
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
pub const QUANTILES: [f64; 7] = [0.00135, 0.02275, 0.15866, 0.5, 0.84134, 0.97725, 0.99865];
/// Their labels.
pub const QUANTILE_LABELS: [&str; 7] = ["-3σ", "-2σ", "-1σ", "median", "+1σ", "+2σ", "+3σ"];

/// A bin of adjacent ranks `[start, end)` (1-based) and its plotting rank.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RankBin {
    /// First rank.
    pub start: usize,
    /// One past the last rank.
    pub end: usize,
}

impl RankBin {
    /// Geometric centre, for the log axis.
    pub fn centre(&self) -> f64 {
        ((self.start * (self.end - 1)) as f64).sqrt()
    }

    fn label(&self) -> String {
        if self.end - self.start == 1 {
            self.start.to_string()
        } else {
            format!("{}-{}", self.start, self.end - 1)
        }
    }
}

/// `points` log-spaced bins over ranks 1..=n, merged forward until each has
/// at least `min_keys` keys (a short last bin joins its predecessor).
pub fn rank_bins(n: usize, points: usize, min_keys: usize) -> Vec<RankBin> {
    if n == 0 {
        return Vec::new();
    }
    let points = points.max(1);
    let mut edges: Vec<usize> = (0..=points)
        .map(|j| {
            libm::exp((j as f64 / points as f64) * libm::log((n + 1) as f64))
                .round()
                .clamp(1.0, (n + 1) as f64) as usize
        })
        .collect();
    edges[0] = 1;
    edges[points] = n + 1;
    edges.dedup();
    let mut bins: Vec<RankBin> = Vec::new();
    let mut start = 1;
    for &e in &edges[1..] {
        if e - start >= min_keys.max(1) {
            bins.push(RankBin { start, end: e });
            start = e;
        }
    }
    if start <= n {
        match bins.last_mut() {
            Some(last) => last.end = n + 1,
            None => bins.push(RankBin { start, end: n + 1 }),
        }
    }
    bins
}

/// Exact error histograms, one per bin (counts are added, so the order in
/// which trials are merged cannot change them).
type Hist = Vec<BTreeMap<i64, u64>>;

fn merge(mut a: (Hist, u64), b: (Hist, u64)) -> (Hist, u64) {
    if a.0.is_empty() {
        return b;
    }
    for (ha, hb) in a.0.iter_mut().zip(b.0) {
        for (v, c) in hb {
            *ha.entry(v).or_insert(0) += c;
        }
    }
    (a.0, a.1 + b.1)
}

/// Nearest-rank quantile `p` of a histogram.
fn hist_quantile(h: &BTreeMap<i64, u64>, p: f64) -> f64 {
    let total: u64 = h.values().sum();
    if total == 0 {
        return 0.0;
    }
    let rank = ((p * total as f64).ceil() as u64).clamp(1, total);
    let mut seen = 0u64;
    for (&v, &c) in h {
        seen += c;
        if seen >= rank {
            return v as f64;
        }
    }
    0.0
}

/// One characterized shape.
struct Characterized {
    hashes: usize,
    slots: u64,
    trials: u32,
    stable: bool,
    last_change: f64,
    floor: f64,
    /// contours[q][bin]
    contours: Vec<Vec<f64>>,
    over_bound_at_bin: Vec<f64>,
    over_bound_pct: f64,
    bound: f64,
}

fn contours(h: &Hist) -> Vec<Vec<f64>> {
    QUANTILES
        .iter()
        .map(|&p| h.iter().map(|b| hist_quantile(b, p)).collect())
        .collect()
}

/// Runs an `estimator_characterization` scenario.
pub fn run(scenario: &Scenario, ctx: &RunContext) -> Result<Output> {
    let p: Params = scenario.params()?;
    let workload = p.workload.build(&scenario.path, "workload")?;
    if p.configs.is_empty() {
        return Err(scenario.field_error(
            "configs",
            "empty: expected at least one {\"hashes\": H, \"slots\": W}",
        ));
    }
    for (i, s) in p.configs.iter().enumerate() {
        super::estimator_accuracy::validate_shape(
            scenario,
            &format!("configs[{i}]"),
            *s,
            ctx.max_memory,
        )?;
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
        return Err(scenario.field_error(
            "tolerance_pct",
            format!("value {}: expected a percentage > 0", p.tolerance_pct),
        ));
    }
    if !(p.floor_bound_pct.is_finite() && p.floor_bound_pct >= 0.0) {
        return Err(scenario.field_error(
            "floor_bound_pct",
            format!("value {}: expected a percentage >= 0", p.floor_bound_pct),
        ));
    }
    if !(p.abs_floor.is_finite() && p.abs_floor >= 0.0) {
        return Err(scenario.field_error(
            "abs_floor",
            format!("value {}: expected a number >= 0", p.abs_floor),
        ));
    }
    if !(1..=1000).contains(&p.rank_points) {
        return Err(scenario.field_error(
            "rank_points",
            format!("value {}: expected 1..=1000", p.rank_points),
        ));
    }
    if p.min_bin_keys == 0 {
        return Err(scenario.field_error("min_bin_keys", "value 0: expected at least 1"));
    }
    // One replay of the stream, then each trial re-hashes every key into
    // every row of the shape.
    let keys = workload.key_space() as f64;
    let hash_rows: f64 = p.configs.iter().map(|s| s.hashes as f64).sum();
    ctx.check_work(
        scenario,
        "max_trials",
        workload.events() as f64 + keys * hash_rows * f64::from(p.max_trials),
        0.5,
        &format!(
            "{} events + {keys} keys x {hash_rows} hash rows x {} trials",
            workload.events(),
            p.max_trials
        ),
    )?;
    let ev = Evaluator::new(workload, p.variant, p.hasher, ctx.seed, 1);
    let truth = ev.truth0().to_vec();
    let summary = WorkloadSummary::of_counts(&truth);
    // Keys in rank order: true count descending, key id ascending.
    let mut order: Vec<u32> = (0..truth.len() as u32)
        .filter(|&k| truth[k as usize] > 0)
        .collect();
    order.sort_by(|&a, &b| truth[b as usize].cmp(&truth[a as usize]).then(a.cmp(&b)));
    let bins = rank_bins(order.len(), p.rank_points, p.min_bin_keys);
    // bin of each key id (usize::MAX: unseen)
    let mut bin_of = vec![usize::MAX; truth.len()];
    for (j, b) in bins.iter().enumerate() {
        for r in b.start..b.end {
            bin_of[order[r - 1] as usize] = j;
        }
    }
    let verbose = ctx.progress && std::io::stdout().is_terminal();
    let progress = ctx.progress(
        p.configs.len() as u64 * u64::from(p.max_trials),
        &scenario.common.name,
    );
    let mut results = Vec::new();
    for shape in &p.configs {
        let (h, w) = (shape.hashes as usize, shape.slots);
        let bound = count_min_bound(summary.events, w as usize);
        let floor = p.abs_floor.max(p.floor_bound_pct / 100.0 * bound);
        let trial = |t: u32| -> (Hist, u64) {
            let errs = ev.errors_with_hash_seed(
                h,
                w,
                0,
                derive_seed(ctx.seed, &[stream::HASH, u64::from(t)]),
            );
            let mut hist: Hist = vec![BTreeMap::new(); bins.len()];
            let mut over = 0u64;
            for &(k, e) in &errs {
                if let Some(b) = hist.get_mut(bin_of[k as usize]) {
                    *b.entry(e).or_insert(0) += 1;
                }
                over += u64::from(e as f64 > bound);
            }
            progress.inc(1);
            (hist, over)
        };
        let round = |from: u32, to: u32| -> (Hist, u64) {
            (from..to)
                .into_par_iter()
                .map(trial)
                .reduce(|| (Vec::new(), 0), merge)
        };
        let started = std::time::Instant::now();
        let mut acc = round(0, p.min_trials);
        let mut trials = p.min_trials;
        let mut prev = contours(&acc.0);
        let mut stable = false;
        let mut last_change = 0.0;
        while trials < p.max_trials {
            let to = trials.saturating_mul(2).min(p.max_trials);
            acc = merge(acc, round(trials, to));
            trials = to;
            let now = contours(&acc.0);
            let (ok, worst) = stability(&prev, &now, p.tolerance_pct, floor);
            last_change = worst;
            prev = now;
            if verbose {
                let secs = started.elapsed().as_secs_f64();
                let per = secs / f64::from(trials);
                let left = if ok {
                    0.0
                } else {
                    per * f64::from(p.max_trials - trials)
                };
                eprintln!(
                    "\n{}x{}: {} trials, largest contour change {:.0} events ({}); at most {:.0}s more for this shape",
                    h,
                    w,
                    trials,
                    worst,
                    if ok { "stable" } else { "not yet stable" },
                    left
                );
                eprint!("{}", round_table(&bins, &truth, &order, &prev).text());
            }
            if ok {
                stable = true;
                break;
            }
        }
        progress.inc(u64::from(p.max_trials - trials));
        let over_bound_at_bin = acc
            .0
            .iter()
            .map(|b| {
                let total: u64 = b.values().sum();
                let over: u64 = b
                    .iter()
                    .filter(|(&v, _)| v as f64 > bound)
                    .map(|(_, &c)| c)
                    .sum();
                100.0 * over as f64 / total.max(1) as f64
            })
            .collect();
        results.push(Characterized {
            hashes: h,
            slots: w,
            trials,
            stable,
            last_change,
            floor,
            contours: prev,
            over_bound_at_bin,
            over_bound_pct: 100.0 * acc.1 as f64 / (f64::from(trials) * order.len().max(1) as f64),
            bound,
        });
    }
    progress.finish();
    Ok(render_output(
        scenario, ctx, &p, &summary, &bins, &truth, &order, &results,
    ))
}

/// (stable, largest absolute change of any contour value): stable when every
/// value moved by at most `tol`% of itself or `floor` events.
fn stability(old: &[Vec<f64>], new: &[Vec<f64>], tol: f64, floor: f64) -> (bool, f64) {
    let mut ok = true;
    let mut worst = 0.0f64;
    for (a, b) in old.iter().zip(new) {
        for (&o, &n) in a.iter().zip(b) {
            let d = (n - o).abs();
            if d > (tol / 100.0 * o.abs()).max(floor) {
                ok = false;
            }
            worst = worst.max(d);
        }
    }
    (ok, worst)
}

fn round_table(bins: &[RankBin], truth: &[u64], order: &[u32], c: &[Vec<f64>]) -> Table {
    let mut t = Table::new(
        ["ranks", "true count"]
            .into_iter()
            .map(String::from)
            .chain(QUANTILE_LABELS.iter().map(|s| s.to_string())),
    );
    for (j, b) in bins.iter().enumerate() {
        let (hi, lo) = (
            truth[order[b.start - 1] as usize],
            truth[order[b.end - 2] as usize],
        );
        let counts = if hi == lo {
            hi.to_string()
        } else {
            format!("{hi}-{lo}")
        };
        let mut row = vec![b.label(), counts];
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
    bins: &[RankBin],
    truth: &[u64],
    order: &[u32],
    results: &[Characterized],
) -> Output {
    let mut md = format!("# {}\n\n", scenario.common.name);
    if !scenario.common.description.is_empty() {
        md.push_str(&format!("{}\n\n", scenario.common.description));
    }
    md.push_str(&format!(
        "{}. Fixed stream, fresh hash seeds per trial ({} update, {} hasher). Quantiles are nearest-rank over trials at the normal equivalents of ±1, ±2, ±3 σ ({}). Trials double from {} until, from one round to the next, every contour value moves by at most {}% of its value or max({} events, {}% of e·N/w), or {} trials.\n\n",
        summary.headline(),
        p.variant.name(),
        p.hasher.name(),
        QUANTILES.iter().map(|q| q.to_string()).collect::<Vec<_>>().join(", "),
        p.min_trials,
        p.tolerance_pct,
        p.abs_floor,
        p.floor_bound_pct,
        p.max_trials
    ));
    let mut st = Table::new([
        "shape",
        "memory",
        "trials",
        "stopped",
        "last change",
        "floor",
        "e*N/w",
        "over bound%",
        "theory e^-h",
    ]);
    for r in results {
        st.push([
            format!("{}x{}", r.hashes, r.slots),
            kib(r.hashes as u64 * r.slots * 8),
            r.trials.to_string(),
            if r.stable { "stable" } else { "max_trials" }.to_string(),
            format!("{:.0}", r.last_change),
            format!("{:.1}", r.floor),
            format!("{:.0}", r.bound),
            format!("{:.3}%", r.over_bound_pct),
            format!("{:.3}%", 100.0 * libm::exp(-(r.hashes as f64))),
        ]);
    }
    md.push_str(&st.markdown());
    let mut console = format!("{}\n{}", summary.headline(), st.text());
    let mut csv = Table::new(
        [
            "shape",
            "rank_first",
            "rank_last",
            "count_first",
            "count_last",
        ]
        .into_iter()
        .map(String::from)
        .chain(QUANTILES.iter().map(|q| format!("q{q}")))
        .chain(["over_bound_pct".to_string()]),
    );
    let mut charts = Vec::new();
    let mut json_rows = Vec::new();
    for r in results {
        let name = format!("{}x{}", r.hashes, r.slots);
        let mut t = round_table(bins, truth, order, &r.contours);
        t.header.push("over bound%".into());
        for (j, row) in t.rows.iter_mut().enumerate() {
            row.push(format!("{:.1}%", r.over_bound_at_bin[j]));
        }
        md.push_str(&format!(
            "\n## {name}: error quantiles by rank ({} trials)\n\n",
            r.trials
        ));
        md.push_str(&t.markdown());
        console.push_str(&format!("\n{name}, {} trials:\n{}", r.trials, t.text()));
        for (j, b) in bins.iter().enumerate() {
            let mut row = vec![
                name.clone(),
                b.start.to_string(),
                (b.end - 1).to_string(),
                truth[order[b.start - 1] as usize].to_string(),
                truth[order[b.end - 2] as usize].to_string(),
            ];
            row.extend(r.contours.iter().map(|q| q[j].to_string()));
            row.push(r.over_bound_at_bin[j].to_string());
            csv.push(row);
        }
        json_rows.push(json!({
            "hashes": r.hashes,
            "slots": r.slots,
            "memory_bytes": r.hashes as u64 * r.slots * 8,
            "trials": r.trials,
            "stopped": if r.stable { "stable" } else { "max_trials" },
            "last_change_events": r.last_change,
            "stability_floor_events": r.floor,
            "bound_enw": r.bound,
            "over_bound_pct": r.over_bound_pct,
            "bound_theory_pct": 100.0 * libm::exp(-(r.hashes as f64)),
            "bins": bins.iter().enumerate().map(|(j, b)| json!({
                "rank_first": b.start,
                "rank_last": b.end - 1,
                "count_first": truth[order[b.start - 1] as usize],
                "count_last": truth[order[b.end - 2] as usize],
                "quantiles": r.contours.iter().map(|q| q[j]).collect::<Vec<_>>(),
                "over_bound_pct": r.over_bound_at_bin[j],
            })).collect::<Vec<_>>(),
        }));
        let mut spec = ChartSpec::new(
            format!("pitchfork_{name}"),
            format!(
                "{name} count-min: error quantiles by rank over {} hash seeds",
                r.trials
            ),
            "key rank (1 = busiest key, log scale)",
            "error = estimate - true count (events, log; 0 drawn at 0.1)",
        );
        spec.x_log = true;
        spec.y_log = true;
        spec.legend = Legend::UpperLeft;
        let colors = [5usize, 0, 2, 6, 2, 0, 5];
        for (q, label) in QUANTILE_LABELS.iter().enumerate() {
            let pts = bins
                .iter()
                .enumerate()
                .map(|(j, b)| (b.centre(), r.contours[q][j]))
                .collect();
            let mut s = Series::new(
                format!("{label} (q={})", QUANTILES[q]),
                pts,
                SeriesStyle::Line,
            );
            s.color = Some(colors[q]);
            spec.series.push(s);
        }
        let last = bins.last().map(|b| (b.end - 1) as f64).unwrap_or(1.0);
        let mut b = Series::new(
            format!("e·N/w = {:.0}", r.bound),
            vec![(1.0, r.bound), (last, r.bound)],
            SeriesStyle::Dashed,
        );
        b.color = Some(3);
        spec.series.push(b);
        if let Ok(c) = render(&spec) {
            charts.push(c);
        }
    }
    md.push_str("\n## Charts\n\n- `pitchfork_<shape>`: the quantile contours against key rank (log-log); the dashed line is the count-min bound e·N/w. Contours are pairs (±1σ, ±2σ, ±3σ) around the median; count-min never undercounts, so contours at 0 (often the whole lower half) are drawn at the axis floor. Over bound% is the share of errors above e·N/w, against the theory's ceiling e^-hashes.\n");
    let mut j = report_head(scenario, ctx, None);
    j.insert("variant".into(), p.variant.name().into());
    j.insert("hasher".into(), p.hasher.name().into());
    j.insert("quantiles".into(), json!(QUANTILES));
    j.insert(
        "stopping".into(),
        json!({"min_trials": p.min_trials, "max_trials": p.max_trials, "tolerance_pct": p.tolerance_pct, "abs_floor": p.abs_floor, "floor_bound_pct": p.floor_bound_pct}),
    );
    j.insert("workload".into(), summary.report_json(&p.workload));
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
    fn bins_cover_every_rank_once() {
        for (n, points, min) in [
            (10_000, 25, 1),
            (10_000, 25, 16),
            (5, 25, 16),
            (1, 3, 1),
            (100, 1, 1),
        ] {
            let b = rank_bins(n, points, min);
            assert_eq!(b.first().unwrap().start, 1);
            assert_eq!(b.last().unwrap().end, n + 1);
            assert!(b.windows(2).all(|w| w[0].end == w[1].start));
            if n >= min {
                assert!(
                    b.iter().all(|x| x.end - x.start >= min),
                    "{n} {points} {min}: {b:?}"
                );
            }
        }
        assert_eq!(rank_bins(10_000, 25, 1)[0], RankBin { start: 1, end: 2 });
    }

    #[test]
    fn quantiles_are_nearest_rank() {
        let v: BTreeMap<i64, u64> = (1..=100).map(|x| (x, 1)).collect();
        assert_eq!(hist_quantile(&v, 0.5), 50.0);
        assert_eq!(hist_quantile(&v, 0.00135), 1.0);
        assert_eq!(hist_quantile(&v, 0.99865), 100.0);
        assert_eq!(hist_quantile(&v, 0.84134), 85.0);
        let v: BTreeMap<i64, u64> = [(0, 90), (7, 10)].into_iter().collect();
        assert_eq!(hist_quantile(&v, 0.9), 0.0);
        assert_eq!(hist_quantile(&v, 0.91), 7.0);
    }

    #[test]
    fn stability_uses_relative_and_absolute_floors() {
        let a = vec![vec![100.0, 0.0]];
        assert_eq!(stability(&a, &[vec![101.0, 1.0]], 2.0, 1.0), (true, 1.0));
        assert!(!stability(&a, &[vec![103.0, 0.0]], 2.0, 1.0).0);
        assert!(!stability(&a, &[vec![100.0, 2.0]], 2.0, 1.0).0);
    }
}
