//! The report of a characterization: the stopping table, each shape's
//! quantile table and its pitchfork chart.

use super::trials::{round_table, Characterized, Ranked};
use super::{Params, QUANTILES, QUANTILE_LABELS};
use crate::error::Result;
use crate::lab::RunContext;
use crate::metrics::over_bound_theory_pct;
use crate::report::chart::{Band, ChartSpec, Legend, Series, SeriesStyle};
use crate::report::fmt::{kib, pct_one_decimal};
use crate::report::{Heading, Output, ReportBuilder, Table};
use crate::scenario::Scenario;
use serde_json::json;

/// The report: the stopping table, then per shape its quantile table and
/// pitchfork chart.
pub(super) fn render_output(
    scenario: &Scenario,
    ctx: &RunContext,
    p: &Params,
    ranked: &Ranked,
    results: &[Characterized],
) -> Result<Output> {
    let summary = &ranked.summary;
    let mut report = ReportBuilder::new(scenario, ctx.seed, None);
    report.heading(Heading::DescriptionIfAny);
    report.md(&format!(
        "{}. Fixed stream, fresh hash seeds per trial ({} update, {} hasher). Quantiles are nearest-rank over trials at the normal equivalents of ±1, ±2, ±3 σ ({}). Trials double from {} until, from one round to the next, every contour value moves by at most {}% of its value or max({} {}, {}% of e·N/w), or {} trials.\n\n",
        summary.headline(),
        p.variant.name(),
        p.hasher.name(),
        QUANTILES.iter().map(|q| q.to_string()).collect::<Vec<_>>().join(", "),
        p.min_trials,
        p.tolerance_pct,
        p.abs_floor,
        if p.abs_floor == 1.0 { "event" } else { "events" },
        p.floor_bound_pct,
        p.max_trials
    ));
    let st = stopping_table(results);
    report
        .md(&st.markdown())
        .console(&format!("{}\n{}", summary.headline(), st.text()));
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
    let mut json_rows = Vec::new();
    for r in results {
        let name = format!("{}x{}", r.hashes, r.slots);
        let mut t = round_table(&ranked.bins, &ranked.truth, &ranked.order, &r.contours);
        t.header.push("over bound%".into());
        for (j, row) in t.rows.iter_mut().enumerate() {
            row.push(pct_one_decimal(r.over_bound_at_bin[j]));
        }
        report
            .md(&format!(
                "\n## {name}: error quantiles by rank ({} trials)\n\n",
                r.trials
            ))
            .md(&t.markdown())
            .console(&format!("\n{name}, {} trials:\n{}", r.trials, t.text()));
        bin_rows(&name, ranked, r, &mut csv);
        json_rows.push(shape_json(ranked, r));
        report.chart(&pitchfork(&name, ranked, r, false))?;
        if p.relative {
            report.chart(&pitchfork(&name, ranked, r, true))?;
        }
    }
    report
        .md("\nOver bound% is the share of errors above e·N/w, against the theory's ceiling e^-hashes.\n")
        .field("variant", p.variant.name())
        .field("hasher", p.hasher.name())
        .field("quantiles", json!(QUANTILES))
        .field(
            "stopping",
            json!({"min_trials": p.min_trials, "max_trials": p.max_trials, "tolerance_pct": p.tolerance_pct, "abs_floor": p.abs_floor, "floor_bound_pct": p.floor_bound_pct}),
        )
        .field("workload", summary.report_json(&p.workload))
        .field("shapes", serde_json::Value::Array(json_rows))
        .csv(&csv);
    Ok(report.finish())
}

/// How each shape's trials stopped, with its bound and over-bound share.
fn stopping_table(results: &[Characterized]) -> Table {
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
            format!("{:.3}%", over_bound_theory_pct(r.hashes as u64)),
        ]);
    }
    st
}

/// Adds a shape's bins to table.csv.
fn bin_rows(name: &str, ranked: &Ranked, r: &Characterized, csv: &mut Table) {
    let (truth, order) = (&ranked.truth, &ranked.order);
    for (j, b) in ranked.bins.iter().enumerate() {
        let mut row = vec![
            name.to_string(),
            b.start.to_string(),
            (b.end - 1).to_string(),
            truth[order[b.start - 1] as usize].to_string(),
            truth[order[b.end - 2] as usize].to_string(),
        ];
        row.extend(r.contours.iter().map(|q| q[j].to_string()));
        row.push(r.over_bound_at_bin[j].to_string());
        csv.push(row);
    }
}

/// A shape in report.json.
fn shape_json(ranked: &Ranked, r: &Characterized) -> serde_json::Value {
    let (truth, order) = (&ranked.truth, &ranked.order);
    json!({
        "hashes": r.hashes,
        "slots": r.slots,
        "memory_bytes": r.hashes as u64 * r.slots * 8,
        "trials": r.trials,
        "stopped": if r.stable { "stable" } else { "max_trials" },
        "last_change_events": r.last_change,
        "stability_floor_events": r.floor,
        "bound_enw": r.bound,
        "over_bound_pct": r.over_bound_pct,
        "bound_theory_pct": over_bound_theory_pct(r.hashes as u64),
        "bins": ranked.bins.iter().enumerate().map(|(j, b)| json!({
            "rank_first": b.start,
            "rank_last": b.end - 1,
            "count_first": truth[order[b.start - 1] as usize],
            "count_last": truth[order[b.end - 2] as usize],
            "quantiles": r.contours.iter().map(|q| q[j]).collect::<Vec<_>>(),
            "over_bound_pct": r.over_bound_at_bin[j],
        })).collect::<Vec<_>>(),
    })
}

/// The pitchfork chart of a shape: the median against rank with the ±1σ
/// and ±2σ contours as shaded bands (top edge alone where the lower
/// edge is 0), ±3σ dotted and the bound dashed;
/// `relative` divides every error by the bin's true count (geometric mean of
/// its first and last key), as in DataSketches' characterization plots.
fn pitchfork(name: &str, ranked: &Ranked, r: &Characterized, relative: bool) -> ChartSpec {
    let bins = &ranked.bins;
    let (truth, order) = (&ranked.truth, &ranked.order);
    let count = |j: usize| {
        let b = &bins[j];
        let a = truth[order[b.start - 1] as usize].max(1) as f64;
        let z = truth[order[b.end - 2] as usize].max(1) as f64;
        (a * z).sqrt()
    };
    let scale = |j: usize, v: f64| if relative { v / count(j) } else { v };
    let contour = |q: usize| -> Vec<(f64, f64)> {
        bins.iter()
            .enumerate()
            .map(|(j, b)| (b.centre(), scale(j, r.contours[q][j])))
            .collect()
    };
    let mut spec = if relative {
        ChartSpec::new(
            format!("pitchfork_relative_{name}"),
            format!(
                "{name} count-min: relative error quantiles by rank over {} hash seeds",
                r.trials
            ),
            "key rank (1 = busiest key, log scale)",
            "relative error = (estimate - true) / true count (log)",
        )
        .caption(format!("The {name} pitchfork relative to each rank bin's true count (DataSketches' characterization style): median line, ±1σ and ±2σ quantile contours shaded (a band whose lower edge is 0 drawn as its top edge alone, as the legend says), ±3σ in sky blue (+3σ dashed, −3σ dotted), the bound e·N/w over the bin's count dashed. Relative error grows toward the cold keys, whose counts are smallest; contours at 0 are on the \"0\" row."))
    } else {
        ChartSpec::new(
            format!("pitchfork_{name}"),
            format!(
                "{name} count-min: error quantiles by rank over {} hash seeds",
                r.trials
            ),
            "key rank (1 = busiest key, log scale)",
            "error = estimate - true count (events, log)",
        )
        .caption(format!("The {name} sketch's error at each key rank over {} hash seeds: the median line, the ±1σ and ±2σ quantile contours (normal equivalents) as shaded bands (a band whose lower edge is 0 is drawn as its top edge alone, as the legend says: shaded down to the log axis' \"0\" row it would fill every decade), ±3σ in sky blue (+3σ dashed, −3σ dotted; a contour equal to the median is drawn once with it), and the count-min bound e·N/w dashed. The error is flat across ranks and stays well under the bound; count-min never undercounts, so lower contours at 0 are on the \"0\" row under the axis.", r.trials))
    }
    .log_log(0.0);
    spec.legend = Legend::UpperLeft;
    spec.bands.push(Band::new(
        format!("±2σ ({}..{})", QUANTILES[1], QUANTILES[5]),
        contour(1),
        contour(5),
        0,
    ));
    spec.bands.push(Band::new(
        format!("±1σ ({}..{})", QUANTILES[2], QUANTILES[4]),
        contour(2),
        contour(4),
        0,
    ));
    spec.bands[1].opacity = 0.35;
    spec.bands[0].opacity = 0.15;
    spec.series.push(
        Series::new(
            format!("{} (q={})", QUANTILE_LABELS[3], QUANTILES[3]),
            contour(3),
            SeriesStyle::Line,
        )
        .color(0),
    );
    let mut lo = Series::new(
        format!("{} (q={})", QUANTILE_LABELS[0], QUANTILES[0]),
        contour(0),
        SeriesStyle::Dashed,
    )
    .color(5);
    lo.share_color = true;
    let mut hi = Series::new(
        format!("{} (q={})", QUANTILE_LABELS[6], QUANTILES[6]),
        contour(6),
        SeriesStyle::Dashed,
    )
    .color(5);
    hi.share_color = true;
    spec.series.push(hi);
    spec.series.push(lo);
    let bound = bins
        .iter()
        .enumerate()
        .map(|(j, b)| (b.centre(), scale(j, r.bound)))
        .collect();
    spec.series.push(
        Series::new(
            format!(
                "e·N/w = {:.0}{}",
                r.bound,
                if relative { " / count" } else { "" }
            ),
            bound,
            SeriesStyle::Dashed,
        )
        .color(3),
    );
    spec
}
