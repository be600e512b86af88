//! The model against the real crate (`pingora_limits`): per shape, whether
//! the crate's mean error per key agrees with the model's within noise, as
//! a report section, a table with the crate's numbers for the statistical
//! file, and the agreement chart.
//!
//! Why a file of its own: it is the one part of the report that handles
//! the crate's random numbers, and it keeps them apart (the verdict and the
//! model's window go into the report, the crate's means only beside it);
//! [`super::render`] lays out the rest of the report and calls it.

use super::params::Backend;
use super::sweep::Row;
use crate::report::chart::{ChartSpec, Legend, Series, SeriesStyle};
use crate::report::Table;

/// The extra file that holds the real crate's rows when they are kept out
/// of the report's committed bytes: `*.statistical.*` files are not
/// byte-identical from run to run, not compared by `check` or the
/// determinism check, and not committed (`.gitignore`).
pub const STATISTICAL_FILE: &str = "crate-rows.statistical.md";

/// The model against the real crate as a chart, shape by shape (by
/// memory): the model's mean error per key, and around it the window the
/// crate's mean must fall in to agree, with how many shapes it did. The
/// crate's own means are random (hashers seeded by the OS): only
/// `with_crate` draws them (the statistical chart beside the report); the
/// report's chart says where they fell, which is stable while they agree.
pub(super) fn agreement_chart(c: &Comparison, runs: u32, with_crate: bool) -> ChartSpec {
    let mut shapes: Vec<&ShapeCmp> = c.per_shape.iter().collect();
    shapes.sort_by_key(|s| s.memory);
    let mut spec = ChartSpec::new(
        "model_vs_crate",
        format!(
            "ratelab's model vs the real pingora_limits 0.9: they agree on {} of {} shapes",
            c.agree, c.shapes
        ),
        "shape (rows x slots, by memory)",
        "mean error per key (events, log)",
    );
    spec.y_log = true;
    spec.log_floor = 1e-3;
    spec.x_categories = shapes.iter().map(|s| s.shape.clone()).collect();
    spec.caption = format!("For each sketch shape (by memory) the model's mean error per key over {runs} runs (dots), labelled with the window around it in which the real pingora_limits Estimator's mean, on the same event streams, counts as agreeing (\u{b1} 3 standard errors of the difference + 2% + 0.05; the label's width takes the crate's run-to-run spread as the model's) and whether it fell inside: {} of {} shapes agree{}. The crate seeds its hashers at random, so its means change from run to run: they are drawn only in model-vs-crate.statistical.png beside the report (not committed), while this chart, like the report, is reproducible.{}",
        c.agree,
        c.shapes,
        if c.agree == c.shapes { "" } else { " (the others are labelled \"crate outside\")" },
        if with_crate { " This is that chart: the crate's means are the second series." } else { "" });
    let xs = |k: usize| k as f64;
    let mut model = Series::new(
        "ratelab model: mean error per key (label: the crate's verdict)",
        shapes
            .iter()
            .enumerate()
            .map(|(k, s)| (xs(k), s.model))
            .collect(),
        SeriesStyle::Points,
    )
    .color(0);
    model.point_labels = Some(
        shapes
            .iter()
            .map(|s| {
                let w = crate::report::chart::human(s.window);
                if s.ok {
                    format!("crate within \u{b1}{w}")
                } else {
                    format!("crate outside \u{b1}{w}")
                }
            })
            .collect(),
    );
    spec.series.push(model);
    if with_crate {
        spec.series.push(
            Series::new(
                "pingora_limits 0.9: mean error per key",
                shapes
                    .iter()
                    .enumerate()
                    .map(|(k, s)| (xs(k), s.crate_mean))
                    .collect(),
                SeriesStyle::Points,
            )
            .color(3),
        );
    }
    spec.legend = Legend::UpperRight;
    spec
}

/// The model against the real crate.
pub(super) struct Comparison {
    /// The report's section: per shape the model's mean error and whether
    /// the crate's agrees (nothing of the crate's random numbers).
    pub(super) md: String,
    /// The same with the crate's numbers, for the statistical file.
    pub(super) numbers: Table,
    /// Shapes run on both, and how many agree.
    pub(super) shapes: usize,
    pub(super) agree: usize,
    /// Per shape run on both, in the rows' order.
    per_shape: Vec<ShapeCmp>,
}

/// One shape of the model against the real crate.
struct ShapeCmp {
    /// `hashes x slots`, and the sketch's memory (bytes) to order by.
    shape: String,
    memory: u64,
    /// The model's mean error per key (mean over runs).
    model: f64,
    /// How far the crate's mean may be from the model's and agree, its
    /// run-to-run spread taken as the model's (the verdict, `ok`, uses
    /// its own): from the model's numbers alone, so reproducible.
    window: f64,
    /// The crate's mean error per key (mean over runs): random, for the
    /// statistical chart only.
    crate_mean: f64,
    ok: bool,
}

/// The model against the real crate, shape by shape (an empty section when
/// no shape ran on both).
pub(super) fn model_vs_crate(rows: &[Row], runs: u32) -> Comparison {
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
    let mut per_shape = Vec::new();
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
        let n = f64::from(runs.max(1));
        let window = 3.0 * (2.0 * a.std * a.std / n).sqrt() + 0.02 * a.mean.abs() + 0.05;
        all &= ok;
        agree += usize::from(ok);
        let shape = format!("{}x{}", m.config.hashes, m.config.slots);
        per_shape.push(ShapeCmp {
            shape: shape.clone(),
            memory: m.config.memory_bytes(),
            model: a.mean,
            window,
            crate_mean: b.mean,
            ok,
        });
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
        per_shape,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(shape: &str, memory: u64, model: f64, crate_mean: f64, ok: bool) -> ShapeCmp {
        ShapeCmp {
            shape: shape.into(),
            memory,
            model,
            window: 0.1 * model + 0.05,
            crate_mean,
            ok,
        }
    }

    /// The agreement chart draws the model and where the crate fell, never
    /// the crate's (random) means: two runs whose crate means differ but
    /// agree alike give the same chart; the statistical one draws them.
    #[test]
    fn the_agreement_chart_is_reproducible_and_says_the_verdict() {
        let cmp = |crate_means: [f64; 2], ok: [bool; 2]| Comparison {
            md: String::new(),
            numbers: Table::new(["shape"]),
            shapes: 2,
            agree: ok.iter().filter(|&&o| o).count(),
            per_shape: vec![
                shape("4x8192", 4 * 8192 * 8, 4.7, crate_means[0], ok[0]),
                shape("4x1024", 4 * 1024 * 8, 210.0, crate_means[1], ok[1]),
            ],
        };
        let a = agreement_chart(&cmp([4.6, 212.0], [true, true]), 10, false);
        let b = agreement_chart(&cmp([4.9, 205.0], [true, true]), 10, false);
        let svg = |s: &ChartSpec| crate::report::chart::render(s).unwrap().svg;
        assert_eq!(svg(&a), svg(&b));
        assert!(a.title.contains("agree on 2 of 2"), "{}", a.title);
        // shapes by memory, every model point labelled with its verdict
        assert_eq!(a.x_categories, ["4x1024", "4x8192"]);
        assert_eq!(a.series.len(), 1);
        let labels = a.series[0].point_labels.clone().unwrap();
        assert!(
            labels.iter().all(|l| l.starts_with("crate within")),
            "{labels:?}"
        );
        let off = agreement_chart(&cmp([9.0, 212.0], [false, true]), 10, false);
        assert!(off.title.contains("agree on 1 of 2"));
        let labels = off.series[0].point_labels.clone().unwrap();
        assert!(labels[1].starts_with("crate outside"), "{labels:?}");
        // the statistical chart has the crate's means as a second series
        let with = agreement_chart(&cmp([4.6, 212.0], [true, true]), 10, true);
        assert_eq!(with.series[1].points, vec![(0.0, 212.0), (1.0, 4.6)]);
    }
}
