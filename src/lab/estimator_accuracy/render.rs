//! The report of an `estimator_accuracy` sweep (whole or merged from
//! shards): the main table, run-to-run noise, faults, the model against the
//! real crate, and three charts.
//!
//! This file lays the report out and draws the error charts; the model
//! against the real crate (its comparison, section and agreement chart) is
//! in [`super::agreement`].

use super::agreement::{agreement_chart, model_vs_crate, STATISTICAL_FILE};
use super::params::{Backend, Params};
use super::replay::{quantile_at, rank_bins};
use super::sweep::Row;
use crate::error::Result;
use crate::lab::RunContext;
use crate::metrics::over_bound_theory_pct;
use crate::model::estimator::Overflow;
use crate::report::chart::{ChartSpec, Legend, Series, SeriesStyle};
use crate::report::fmt::{kib, pct_one_decimal};
use crate::report::{Heading, Output, ReportBuilder, Table};
use crate::scenario::Scenario;
use crate::workload::counts::WorkloadSummary;
use serde_json::json;

/// How rows are told apart: by variant and backend only when the scenario
/// has several.
struct Labels {
    multi_variant: bool,
    multi_backend: bool,
}

impl Labels {
    fn of(p: &Params) -> Self {
        Self {
            multi_variant: p.variants.len() > 1,
            multi_backend: p.backends != [Backend::Model] || !p.estimators.is_empty(),
        }
    }

    /// A row's name in legends and the noise table.
    fn label(&self, r: &Row) -> String {
        let c = &r.config;
        let mut l = if self.multi_variant {
            format!("{}x{} {}", c.hashes, c.slots, c.variant.name())
        } else {
            format!("{}x{}", c.hashes, c.slots)
        };
        if self.multi_backend {
            l.push(' ');
            l.push_str(r.backend_name());
        }
        l
    }
}

/// The report of a sweep from its rows; `first` is run 0's workload facts.
///
/// The real crate's rows (`pingora_limits`) come from hashers the crate
/// seeds at random: when the scenario also has the model's rows of the same
/// shapes, those rows are kept out of the report's tables, charts and
/// `rows` (every byte of which is then reproducible) and compared with the
/// model's statistically instead: the report carries, per shape, whether the
/// two agree within noise (stable while they do), and the crate's own
/// numbers go to [`STATISTICAL_FILE`]. A scenario of crate rows alone keeps
/// them in the table (it has nothing else to show).
pub(super) fn render_output(
    scenario: &Scenario,
    ctx: &RunContext,
    p: &Params,
    runs: u32,
    first: WorkloadSummary,
    all_rows: &[Row],
) -> Result<Output> {
    let apart = all_rows.iter().any(|r| r.backend == Backend::Model)
        && all_rows.iter().any(|r| r.backend == Backend::PingoraLimits);
    let rows: Vec<Row> = all_rows
        .iter()
        .filter(|r| !apart || r.backend != Backend::PingoraLimits)
        .cloned()
        .collect();
    let rows = &rows[..];
    let labels = Labels::of(p);
    let label = |r: &Row| labels.label(r);
    let table = main_table(rows, &labels);
    let avg_count = first.events as f64 / first.keys.max(1) as f64;
    let mut report = ReportBuilder::new(scenario, ctx.seed, Some(runs));
    report.heading(Heading::DescriptionIfAny);
    report.md(&format!(
        "{}. {} runs (fresh hash seeds each, {} hasher, {} overflow); p99 and max are per-run values averaged over the runs. Average true count per key: {:.1}.\n\n",
        first.headline(), runs, p.hasher.name(), match p.overflow { Overflow::Wrapping => "wrapping", Overflow::Checked => "checked" }, avg_count
    ));
    report
        .md(&table.markdown())
        .md("\n## Run-to-run noise and the count-min bound\n\nStandard deviation over runs of each statistic, and the share of keys whose error exceeds e·N/w against the theory's ceiling e^-hashes.\n\n")
        .md(&noise_table(rows, &label).markdown())
        .md(&faults_md(rows, runs, &label));
    let comparison = model_vs_crate(all_rows, runs);
    if labels.multi_backend {
        report.md(&comparison.md);
    }
    if apart {
        let crate_rows: Vec<Row> = all_rows
            .iter()
            .filter(|r| r.backend == Backend::PingoraLimits)
            .cloned()
            .collect();
        let label_all = |r: &Row| labels.label(r);
        // The crate's own means drawn over the model's: random, so beside
        // the report, not in it.
        let mut with_crate = agreement_chart(&comparison, runs, true);
        with_crate.name = "model-vs-crate.statistical".into();
        let drawn = crate::report::chart::render(&with_crate)?;
        report
            .extra_file(&format!("{}.svg", with_crate.name), drawn.svg.into_bytes())
            .extra_file(&format!("{}.png", with_crate.name), drawn.png);
        report
            .field(
                "crate_agreement",
                json!({
                    "shapes": comparison.shapes,
                    "agree": comparison.agree,
                    "faults": crate_rows.iter().map(|r| u64::from(r.faults)).sum::<u64>(),
                    "detail": STATISTICAL_FILE,
                }),
            )
            .extra_file(
                STATISTICAL_FILE,
                format!(
                    "# {}: the real crate's rows

Statistical: the crate seeds its hashers at random, so these numbers change from run to run (this file is not committed, and neither `check` nor the determinism check compares it).

{}
## Run-to-run noise

{}{}
## Model vs the real crate, with the numbers

{}",
                    scenario.common.name,
                    main_table(&crate_rows, &labels).markdown(),
                    noise_table(&crate_rows, &label_all).markdown(),
                    faults_md(&crate_rows, runs, &label_all),
                    comparison.numbers.markdown(),
                )
                .into_bytes(),
            );
    }
    report
        .field("hasher", p.hasher.name())
        .field(
            "overflow",
            serde_json::to_value(p.overflow).unwrap_or_default(),
        )
        .field("workload", first.report_json(&p.workload))
        .field(
            "rows",
            serde_json::Value::Array(json_rows(rows, labels.multi_backend)),
        )
        .csv(&table)
        .console(&format!("{}\n{}", first.headline(), table.text()))
        .charts(&charts(rows, &label, first.keys as usize, runs))?;
    if apart && comparison.shapes > 0 {
        report.chart(&agreement_chart(&comparison, runs, false))?;
    }
    Ok(report.finish())
}

/// The main table, one row per shape (p99 and max: per-run values
/// averaged).
fn main_table(rows: &[Row], labels: &Labels) -> Table {
    let mut head = vec![
        "hashes", "slots", "memory", "exact%", "mean", "p99", "max", "e*N/w",
    ];
    if labels.multi_variant {
        head.insert(0, "variant");
    }
    if labels.multi_backend {
        head.insert(0, "backend");
    }
    let mut table = Table::new(head);
    for r in rows {
        let s = &r.summary;
        let mut cells = vec![
            r.config.hashes.to_string(),
            r.config.slots.to_string(),
            kib(r.config.memory_bytes()),
            pct_one_decimal(s.exact_pct.mean),
            format!("{:.1}", s.mean.mean),
            format!("{:.0}", s.p99.mean),
            format!("{:.0}", s.max.mean),
            format!("{:.0}", r.bound),
        ];
        if labels.multi_variant {
            cells.insert(0, r.config.variant.name().to_string());
        }
        if labels.multi_backend {
            cells.insert(0, r.backend_name().to_string());
        }
        table.push(cells);
    }
    table
}

/// Standard deviations over runs, and the share of keys over the bound
/// against the theory's ceiling.
fn noise_table(rows: &[Row], label: &dyn Fn(&Row) -> String) -> Table {
    let mut noise = Table::new([
        "config",
        "exact% std",
        "mean std",
        "p99 std",
        "max std",
        "over bound%",
        "theory e^-h",
    ]);
    for r in rows {
        let s = &r.summary;
        noise.push([
            label(r),
            format!("{:.2}", s.exact_pct.std),
            format!("{:.2}", s.mean.std),
            format!("{:.1}", s.p99.std),
            format!("{:.1}", s.max.std),
            format!("{:.3}%", s.over_bound_pct.mean),
            format!("{:.3}%", over_bound_theory_pct(r.config.hashes as u64)),
        ]);
    }
    noise
}

/// The faults section (empty when no run faulted).
fn faults_md(rows: &[Row], runs: u32, label: &dyn Fn(&Row) -> String) -> String {
    let faulted: Vec<&Row> = rows.iter().filter(|r| r.faults > 0).collect();
    if faulted.is_empty() {
        return String::new();
    }
    let mut md = String::from("\n## Faults\n\n");
    for r in faulted {
        if let Some(f) = &r.fault {
            md.push_str(&format!(
                "- {}: {} of {} runs: {}\n",
                label(r),
                r.faults,
                runs,
                f
            ));
        }
    }
    md
}

/// The rows of report.json.
fn json_rows(rows: &[Row], multi_backend: bool) -> Vec<serde_json::Value> {
    rows.iter()
        .map(|r| {
            let s = &r.summary;
            let mut o = json!({
                "variant": r.config.variant.name(),
                "hashes": r.config.hashes,
                "slots": r.config.slots,
                "memory_bytes": r.config.memory_bytes(),
                "exact_pct": s.exact_pct.mean,
                "mean": s.mean.mean,
                "p99": s.p99.mean,
                "max": s.max.mean,
                "bound_enw": r.bound,
                "over_bound_pct": s.over_bound_pct.mean,
                "bound_theory_pct": over_bound_theory_pct(r.config.hashes as u64),
                "faults": r.faults,
                "fault": r.fault.as_ref().map(|f| f.to_string()),
                "std": {
                    "exact_pct": s.exact_pct.std,
                    "mean": s.mean.std,
                    "p99": s.p99.std,
                    "max": s.max.std,
                    "over_bound_pct": s.over_bound_pct.std,
                },
            });
            if multi_backend {
                o["backend"] = r.backend_name().into();
                o["deterministic"] = (r.backend == Backend::Model).into();
            }
            o
        })
        .collect()
}

/// Rank bins per decade of the rank chart: coarse enough that each holds
/// several of the fine (8%-wide) bins past the first few ranks.
const RANK_BINS_PER_DECADE: f64 = 4.0;

/// The fine rank bins of `keys` keys regrouped in log-spaced bins of
/// [`RANK_BINS_PER_DECADE`]: per bin, its rank (geometric middle), the
/// key-weighted mean of the fine bins' means, and their smallest and
/// largest mean (the band).
fn coarse_rank_bins(keys: usize, means: &[f64]) -> Vec<(f64, f64, f64, f64)> {
    let mut out: Vec<(usize, usize, f64, f64, f64, f64)> = Vec::new();
    let mut last = None;
    for (&(s, e), &m) in rank_bins(keys).iter().zip(means) {
        let k = (libm::log10(s as f64) * RANK_BINS_PER_DECADE + 1e-9).floor() as i64;
        let w = (e - s) as f64;
        if last == Some(k) {
            if let Some(b) = out.last_mut() {
                b.1 = e;
                b.2 += w * m;
                b.3 += w;
                b.4 = b.4.min(m);
                b.5 = b.5.max(m);
            }
        } else {
            out.push((s, e, w * m, w, m, m));
            last = Some(k);
        }
    }
    out.into_iter()
        .map(|(s, e, sum, w, lo, hi)| (((s * (e - 1)) as f64).sqrt(), sum / w, lo, hi))
        .collect()
}

/// Rows that differ only in variant (or in backend): one colour per
/// shape, and a pair's second member dashed. The two sides' names when
/// every shape has exactly one row of each.
fn pairing(rows: &[Row]) -> (Vec<usize>, Vec<bool>, Option<(String, String)>) {
    let mut shapes: Vec<(usize, usize)> = Vec::new();
    let mut colour = Vec::new();
    let mut second = Vec::new();
    for r in rows {
        let k = (r.config.hashes, r.config.slots);
        let i = match shapes.iter().position(|&s| s == k) {
            Some(i) => {
                second.push(true);
                i
            }
            None => {
                shapes.push(k);
                second.push(false);
                shapes.len() - 1
            }
        };
        colour.push(i);
    }
    let side = |r: &Row| format!("{} {}", r.config.variant.name(), r.backend_name());
    let firsts: Vec<&Row> = rows
        .iter()
        .zip(&second)
        .filter(|x| !*x.1)
        .map(|x| x.0)
        .collect();
    let seconds: Vec<&Row> = rows
        .iter()
        .zip(&second)
        .filter(|x| *x.1)
        .map(|x| x.0)
        .collect();
    let name = |rs: &[&Row]| {
        let n = side(rs.first()?);
        rs.iter().all(|r| side(r) == n).then_some(n)
    };
    let sides = if !seconds.is_empty() && seconds.len() == firsts.len() {
        match (name(&firsts), name(&seconds)) {
            (Some(a), Some(b)) if a != b => Some((
                a.replace(" model", "").trim().to_string(),
                b.replace(" model", "").trim().to_string(),
            )),
            _ => None,
        }
    } else {
        None
    };
    (colour, second, sides)
}

/// The charts: error by rank, the error percentiles, error against
/// memory, and for paired rows (two variants or backends of each shape)
/// their difference with ±3 standard errors.
fn charts(rows: &[Row], label: &dyn Fn(&Row) -> String, keys: usize, runs: u32) -> Vec<ChartSpec> {
    let (colour, second, sides) = pairing(rows);
    let paired = sides.is_some();
    let look = |s: &mut Series, i: usize| {
        s.color = Some(colour[i]);
        if paired {
            s.share_color = true;
            // dashed in its own geometry: a percentile line stays a
            // staircase held to the axis' end, as its solid pair is
            s.dashed = second[i];
        }
    };
    let pair_note = match &sides {
        Some((a, b)) => format!(" Each shape has one colour: {a} solid, {b} dashed."),
        None => String::new(),
    };
    let mut by_rank = ChartSpec::new(
        "error_vs_rank",
        "Overcount by key rank (mean over runs)",
        "key rank (1 = busiest key, log scale)",
        "mean error = estimate − true count (events, log)",
    )
    .log_log(0.0)
    .caption(format!("Mean overcount of the keys in each rank bin (1 = busiest key; {RANK_BINS_PER_DECADE} bins per decade), log-log, with a shaded band in its colour (\"its bins' spread\" under its line in the legend) from the smallest to the largest mean of the 8%-wide bins inside it (where the smallest is 0, which the log axis has no room for, the band stops at the line; where the line is 0 too, its upper edge alone is drawn); a bin whose keys average 0 sits on the \"0\" row under the axis. Collisions add about the same expected count to every key, so the absolute error is flat across ranks for every shape; relative to the true count it is largest for the cold keys, whose counts are smallest.{pair_note}"));
    by_rank.legend = Legend::UpperLeft;
    let mut pct = ChartSpec::new(
        "error_percentiles",
        "Per-key error by percentile of keys (mean over runs)",
        "percentile of keys (1/(1−p) scale: 90%, 99%, 99.9% equally spaced)",
        "error = estimate − true count (events, log)",
    )
    .caption(format!("HdrHistogram-style percentile plot: for each percentile p of keys (x on a 1/(1−p) axis, so the tail gets the room), the error that p of the keys stay at or below; the right end of each line is the largest error. Percentiles at which the error is 0 are on the \"0\" row.{pair_note}"));
    pct.x_percentile = true;
    pct.y_log = true;
    pct.legend = Legend::UpperLeft;
    let mut mem = ChartSpec::new(
        "error_vs_memory",
        "Mean error vs sketch memory",
        "memory (KiB, log scale)",
        "mean error per key (events, log)",
    )
    .log_log(0.0)
    .caption("Mean error per key against sketch memory, one line per row count; points at the same memory differ in rows vs slots (each point is labelled with its shape). A shape with mean error 0 is on the \"0\" row.");
    for (i, r) in rows.iter().enumerate() {
        let bins = coarse_rank_bins(keys, &r.rank_bin_means);
        let mut s = Series::new(
            label(r),
            bins.iter().map(|b| (b.0, b.1)).collect(),
            SeriesStyle::Line,
        );
        look(&mut s, i);
        by_rank.series.push(s);
        // A smallest mean of 0 has no place on the log axis: there the
        // band stops at the line (and where the line is 0 too, only the
        // band's upper edge is drawn).
        let mut band = crate::report::chart::Band::new(
            "its bins' spread",
            bins.iter()
                .map(|b| (b.0, if b.2 <= 0.0 { b.1 } else { b.2 }))
                .collect(),
            bins.iter().map(|b| (b.0, b.3)).collect(),
            colour[i],
        );
        band.opacity = 0.12;
        band.follows = label(r);
        by_rank.bands.push(band);
        let n = keys.max(1) as f64;
        let q = &r.quantiles;
        let mut pts: Vec<(f64, f64)> = q
            .iter()
            .enumerate()
            .take(q.len().saturating_sub(1))
            .map(|(k, &x)| (100.0 * quantile_at(k), x))
            // beyond 1 - 1/n every quantile is the maximum
            .filter(|(p, _)| *p <= 100.0 * (1.0 - 1.0 / n))
            .collect();
        if let Some(&max) = q.last() {
            pts.push((100.0 * (1.0 - 1.0 / n), max));
        }
        let mut s = Series::new(label(r), pts, SeriesStyle::Step);
        look(&mut s, i);
        pct.series.push(s);
    }
    // Memory chart: one series per (variant, hashes), points labelled by shape.
    let mut groups: Vec<(String, Vec<&Row>)> = Vec::new();
    for r in rows {
        let g = format!(
            "{} row{}{}{}",
            r.config.hashes,
            if r.config.hashes == 1 { "" } else { "s" },
            if rows.iter().any(|o| o.config.variant != r.config.variant) {
                format!(" {}", r.config.variant.name())
            } else {
                String::new()
            },
            if rows.iter().any(|o| o.backend_name() != r.backend_name()) {
                format!(" {}", r.backend_name())
            } else {
                String::new()
            }
        );
        match groups.iter_mut().find(|(name, _)| *name == g) {
            Some((_, v)) => v.push(r),
            None => groups.push((g, vec![r])),
        }
    }
    // paired rows: one colour per row count, the pair's second dashed
    let mut hashes: Vec<usize> = rows.iter().map(|r| r.config.hashes).collect();
    hashes.sort_unstable();
    hashes.dedup();
    for (name, mut group) in groups {
        let first = group[0];
        let pair_second = paired
            && rows
                .iter()
                .zip(&second)
                .any(|(r, &sec)| sec && std::ptr::eq(r, first));
        group.sort_by_key(|r| r.config.memory_bytes());
        let pts = group
            .iter()
            .map(|r| (r.config.memory_bytes() as f64 / 1024.0, r.summary.mean.mean))
            .collect();
        // The pair's second dashed, with markers of its own shape: a shape
        // drawn as a lone point still says which side it is.
        let mut s = Series::new(name, pts, SeriesStyle::LinePoints);
        s.dashed = pair_second;
        if paired {
            s.color = hashes.iter().position(|&h| h == first.config.hashes);
            s.share_color = true;
        }
        s.point_labels = Some(
            group
                .iter()
                .map(|r| format!(" {}x{}", r.config.hashes, r.config.slots))
                .collect(),
        );
        mem.series.push(s);
    }
    let mut out = vec![by_rank, pct, mem];
    if let Some((a, b)) = &sides {
        out.push(difference_chart(rows, &second, runs, a, b));
    }
    out
}

/// The pairs' difference in mean error per key (second − first member,
/// shapes in order of memory) with a ±3 standard error band over the
/// runs, like criterion's comparison plots: a band clear of 0 is a real
/// difference.
fn difference_chart(rows: &[Row], second: &[bool], runs: u32, a: &str, b: &str) -> ChartSpec {
    let mut pairs: Vec<(&Row, &Row)> = Vec::new();
    for (r, &sec) in rows.iter().zip(second) {
        if sec {
            continue;
        }
        if let Some(o) = rows.iter().zip(second).find(|(o, s2)| {
            **s2 && o.config.hashes == r.config.hashes && o.config.slots == r.config.slots
        }) {
            pairs.push((r, o.0));
        }
    }
    pairs.sort_by_key(|(r, _)| (r.config.memory_bytes(), r.config.hashes));
    let mut spec = ChartSpec::new(
        "difference",
        format!("Mean error per key: {b} − {a}, per shape (mean over runs)"),
        "shape (rows x slots, by memory)",
        format!("{b} − {a} (events per key)"),
    )
    .caption(format!("The difference in mean error per key between {b} and {a} for each shape, with a band of ±3 standard errors over the {runs} runs (the runs' spread of each side, combined); where the band stays clear of the dashed 0 line the difference is larger than run-to-run noise."));
    spec.x_categories = pairs
        .iter()
        .map(|(r, _)| format!("{}x{}", r.config.hashes, r.config.slots))
        .collect();
    let n = f64::from(runs.max(1));
    let mut pts = Vec::new();
    let (mut lo, mut hi) = (Vec::new(), Vec::new());
    for (k, (r, o)) in pairs.iter().enumerate() {
        let (x, y) = (&r.summary.mean, &o.summary.mean);
        let d = y.mean - x.mean;
        let se = ((x.std * x.std + y.std * y.std) / n).sqrt();
        pts.push((k as f64, d));
        lo.push((k as f64, d - 3.0 * se));
        hi.push((k as f64, d + 3.0 * se));
    }
    let last = pairs.len().saturating_sub(1) as f64;
    spec.bands.push(crate::report::chart::Band::new(
        "±3 standard errors",
        lo,
        hi,
        0,
    ));
    spec.series.push(
        Series::new(
            "no difference",
            vec![(0.0, 0.0), (last, 0.0)],
            SeriesStyle::Dashed,
        )
        .color(7),
    );
    spec.series
        .push(Series::new(format!("{b} − {a}"), pts, SeriesStyle::LinePoints).color(0));
    spec.legend = Legend::LowerRight;
    spec
}
