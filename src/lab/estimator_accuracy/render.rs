//! The report of an `estimator_accuracy` sweep (whole or merged from
//! shards): the main table, run-to-run noise, faults, the model against the
//! real crate, and three charts.

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

/// The extra file that holds the real crate's rows when they are kept out
/// of the report's committed bytes: `*.statistical.*` files are not
/// byte-identical from run to run, not compared by `check` or the
/// determinism check, and not committed (`.gitignore`).
pub const STATISTICAL_FILE: &str = "crate-rows.statistical.md";

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
        .charts(&charts(rows, &label, first.keys as usize))?;
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

/// The three charts: error by rank, the error percentiles and error
/// against memory.
fn charts(rows: &[Row], label: &dyn Fn(&Row) -> String, keys: usize) -> [ChartSpec; 3] {
    let bins = rank_bins(keys);
    let mut by_rank = ChartSpec::new(
        "error_vs_rank",
        "Overcount by key rank (mean over runs)",
        "key rank (1 = busiest key, log scale)",
        "mean error = estimate - true count (events, log)",
    )
    .log_log(0.0)
    .caption("Mean overcount of the keys in each rank bin (1 = busiest key), log-log; a shape whose bins average 0 sits on the \"0\" row under the axis. Collisions add about the same expected count to every key, so the absolute error is flat across ranks for every shape (noisier where a bin holds few keys); relative to the true count it is largest for the cold keys, whose counts are smallest.");
    by_rank.legend = Legend::UpperLeft;
    let mut pct = ChartSpec::new(
        "error_percentiles",
        "Per-key error by percentile of keys (mean over runs)",
        "percentile of keys (1/(1-p) scale: 90%, 99%, 99.9% equally spaced)",
        "error = estimate - true count (events, log)",
    )
    .caption("HdrHistogram-style percentile plot: for each percentile p of keys (x on a 1/(1-p) axis, so the tail gets the room), the error that p of the keys stay at or below; the right end of each line is the largest error. Percentiles at which the error is 0 are on the \"0\" row.");
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
        let pts = bins
            .iter()
            .zip(&r.rank_bin_means)
            .map(|(&(s, e), &m)| (((s * (e - 1)) as f64).sqrt(), m))
            .collect();
        let mut s = Series::new(label(r), pts, SeriesStyle::Line);
        s.color = Some(i);
        by_rank.series.push(s);
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
        s.color = Some(i);
        pct.series.push(s);
    }
    // Memory chart: one series per (variant, hashes), points labelled by shape.
    let mut groups: Vec<(String, Vec<&Row>)> = Vec::new();
    for r in rows {
        let g = format!(
            "{} rows{}{}",
            r.config.hashes,
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
    for (name, mut group) in groups {
        group.sort_by_key(|r| r.config.memory_bytes());
        let pts = group
            .iter()
            .map(|r| (r.config.memory_bytes() as f64 / 1024.0, r.summary.mean.mean))
            .collect();
        let mut s = Series::new(name, pts, SeriesStyle::LinePoints);
        s.point_labels = Some(
            group
                .iter()
                .map(|r| format!(" {}x{}", r.config.hashes, r.config.slots))
                .collect(),
        );
        mem.series.push(s);
    }
    [by_rank, pct, mem]
}

/// The model against the real crate.
struct Comparison {
    /// The report's section: per shape the model's mean error and whether
    /// the crate's agrees (nothing of the crate's random numbers).
    md: String,
    /// The same with the crate's numbers, for the statistical file.
    numbers: Table,
    /// Shapes run on both, and how many agree.
    shapes: usize,
    agree: usize,
}

/// The model against the real crate, shape by shape (an empty section when
/// no shape ran on both).
fn model_vs_crate(rows: &[Row], runs: u32) -> Comparison {
    let mut t = Table::new(["shape", "model mean error", "within noise"]);
    let mut numbers = Table::new([
        "shape",
        "model mean error",
        "pingora_limits mean error",
        "difference",
        "within noise",
    ]);
    let mut all = true;
    let (mut shapes, mut agree) = (0, 0);
    for m in rows.iter().filter(|r| r.backend == Backend::Model) {
        let Some(c) = rows
            .iter()
            .find(|r| r.backend == Backend::PingoraLimits && r.config == m.config)
        else {
            continue;
        };
        shapes += 1;
        let (a, b) = (&m.summary.mean, &c.summary.mean);
        let se = ((a.std * a.std + b.std * b.std) / f64::from(runs.max(1))).sqrt();
        let ok = (a.mean - b.mean).abs() <= 3.0 * se + 0.02 * a.mean.abs().max(b.mean.abs()) + 0.05;
        all &= ok;
        agree += usize::from(ok);
        let shape = format!("{}x{}", m.config.hashes, m.config.slots);
        let model = format!("{:.2} ± {:.2}", a.mean, a.std);
        let verdict = if ok { "yes" } else { "NO" }.to_string();
        numbers.push([
            shape.clone(),
            model.clone(),
            format!("{:.2} ± {:.2}", b.mean, b.std),
            format!("{:+.2}", b.mean - a.mean),
            verdict.clone(),
        ]);
        t.push([shape, model, verdict]);
    }
    let md = if shapes == 0 {
        String::new()
    } else {
        format!(
            "\n## Model vs the real crate\n\nThe real `pingora_limits::estimator::Estimator` (0.9) ran on the same event streams, {runs} runs a shape. Its hashers are seeded at random by the OS, so its numbers change from run to run: they are kept out of this report's tables, charts and rows (every byte here is reproducible) and written to `{STATISTICAL_FILE}` beside it (not committed). What is reported is the comparison: agreement = the mean errors differ by at most 3 standard errors over {runs} runs (+2% of the mean for the different hash family, +0.05). **Verdict: {}**\n\n{}",
            if all {
                "the model agrees with the real crate within noise for every shape."
            } else {
                "the model and the real crate differ beyond noise for at least one shape (marked NO)."
            },
            t.markdown()
        )
    };
    Comparison {
        md,
        numbers,
        shapes,
        agree,
    }
}
