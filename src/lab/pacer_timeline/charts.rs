//! The charts of a `pacer_timeline` run: admitted steps as staircases,
//! waits per caller (one chart, or panels when cases differ) and the wait
//! distribution.

use super::run::{Admission, CaseResult};
use crate::report::chart::{human, ChartSpec, Legend, Series, SeriesStyle};

/// A chart axis' time unit: nanoseconds per unit and its name.
#[derive(Debug, Clone, Copy)]
struct Unit(f64, &'static str);

/// Seconds, or milliseconds for times that all stay under a second (a
/// 10 ms cadence reads as 10 ms, not 0.01 s; everything at 0 too).
fn unit_for(max_ns: f64) -> Unit {
    if max_ns < 1e9 {
        Unit(1e6, "ms")
    } else {
        Unit(1e9, "s")
    }
}

/// Cases whose every step came out the same, in first-case order: one
/// series each on the charts, labelled `a = b = c`.
fn same_outcome_groups(cases: &[CaseResult]) -> Vec<(String, &CaseResult)> {
    let key = |c: &CaseResult| -> Vec<(usize, usize, i64, Option<i64>, i64)> {
        c.steps
            .iter()
            .map(|a| (a.caller, a.step, a.started_ns, a.admitted_ns, a.waited_ns))
            .collect()
    };
    let mut groups: Vec<(Vec<String>, &CaseResult)> = Vec::new();
    for c in cases {
        let k = key(c);
        match groups.iter_mut().find(|(_, g)| {
            key(g) == k
                && g.ideal_per_s == c.ideal_per_s
                && g.ideal_burst == c.ideal_burst
                && g.ideal_bounds == c.ideal_bounds
        }) {
            Some((labels, _)) => labels.push(c.label.clone()),
            None => groups.push((vec![c.label.clone()], c)),
        }
    }
    groups
        .into_iter()
        .map(|(labels, c)| (join_labels(&labels), c))
        .collect()
}

/// `a, x = b, x` as `a = b, x`: the part after the last ", " is said once
/// when every label ends with it.
fn join_labels(labels: &[String]) -> String {
    let tail = |l: &str| l.rfind(", ").map(|i| l[i..].to_string());
    match labels.first().and_then(|l| tail(l)) {
        Some(t)
            if labels.len() > 1
                && labels
                    .iter()
                    .all(|l| tail(l).as_deref() == Some(t.as_str())) =>
        {
            let heads: Vec<&str> = labels.iter().map(|l| &l[..l.len() - t.len()]).collect();
            format!("{}{t}", heads.join(" = "))
        }
        _ => labels.join(" = "),
    }
}

/// Caller labels in order of their first caller.
fn caller_labels(c: &CaseResult) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for a in &c.steps {
        if !out.contains(&a.label) {
            out.push(a.label.clone());
        }
    }
    out
}

/// The three charts, titled and captioned, without series.
fn empty_charts(
    one_caller: bool,
    merged: bool,
    zoom: Option<(f64, f64)>,
    (tu, wu): (Unit, Unit),
    origin_s: f64,
) -> [ChartSpec; 3] {
    let time_label = if origin_s > 0.0 {
        format!("virtual time after {} s ({})", human(origin_s), tu.1)
    } else {
        format!("virtual time ({})", tu.1)
    };
    let wait_label = format!("wait ({})", wu.1);
    let mut stairs = ChartSpec::new(
        "admitted-staircase",
        "Admitted calls over time (staircase) vs the ideal rate",
        time_label,
        "calls admitted (count)",
    )
    .caption(format!(
        "Cumulative count of admitted calls against virtual time, one staircase per case{}.{}",
        if merged {
            " (cases with identical admissions drawn once, joined by \"=\")"
        } else {
            ""
        },
        match (zoom.is_some(), origin_s > 0.0) {
            (true, true) => format!(
                " The time axis is zoomed (staircase_x_s) and in {} after {} s.",
                tu.1,
                human(origin_s)
            ),
            (true, false) => " The time axis is zoomed (staircase_x_s).".to_string(),
            _ => String::new(),
        }
    ));
    stairs.legend = Legend::UpperLeft;
    let mut waits = if one_caller {
        ChartSpec::new(
            "waits-per-caller",
            "Wait of each limiter step (one caller)",
            "step # of the caller",
            wait_label.clone(),
        )
        .caption("How long each limiter step of the single caller waited, one point per step at its step number (steps are discrete: points, not lines); cases with identical waits are drawn once, joined by \"=\".")
    } else {
        ChartSpec::new(
            "waits-per-caller",
            "Wait of each limiter step, by caller",
            "caller # (file order)",
            wait_label.clone(),
        )
        .caption("How long each limiter step waited, one point per step at its caller's number (callers are discrete: points, not lines), a series per case and caller label; cases with identical waits are drawn once, joined by \"=\".")
    };
    waits.legend = Legend::UpperLeft;
    let mut dist = ChartSpec::new(
        "wait-distribution",
        "Wait-time percentiles per case (exact, every step)",
        "percentile of steps (1/(1-p) scale)",
        wait_label,
    )
    .caption("HdrHistogram-style percentile plot of the waits: for each percentile p of the steps (x on a 1/(1-p) axis, so 90%, 99%, 99.9% are equally spaced) the wait that p of the steps stay at or below, a step line per case and caller label; the right end is the longest wait. Flat at 0 up to p: that share of the steps passed at once.");
    dist.x_percentile = true;
    dist.legend = Legend::UpperLeft;
    [stairs, waits, dist]
}

/// A case's admitted staircase and, with an ideal rate, its ideal line in
/// the same colour (nothing when the case has no admission in the zoom).
fn staircase(
    name: &str,
    c: &CaseResult,
    zoom: Option<(f64, f64)>,
    color: usize,
    (tu, origin): (Unit, f64),
) -> Vec<Series> {
    // the ideal's rates are per second; the axis is in `tu` after `origin`
    let per_unit = tu.0 / 1e9;
    let at = |ns: f64| (ns - origin) / tu.0;
    let sorted = c.admitted_sorted();
    let mut pts = vec![];
    let start = c.steps.iter().map(|a| a.started_ns).min().unwrap_or(0);
    pts.push((at(start as f64), 0.0));
    for (k, a) in sorted.iter().enumerate() {
        pts.push((at(a.admitted_ns.unwrap_or(0) as f64), (k + 1) as f64));
    }
    let end = pts.last().map_or(0.0, |p| p.0);
    // Hold the last count a little so the final step shows.
    let tail = (end + (end * 0.02).max(0.01 / per_unit), sorted.len() as f64);
    pts.push(tail);
    let in_zoom = zoom.is_none_or(|(a, b)| {
        sorted.iter().any(|x| {
            let t = at(x.admitted_ns.unwrap_or(0) as f64);
            a <= t && t <= b
        })
    });
    let case_color = color;
    let mut out = Vec::new();
    if in_zoom {
        out.push(
            Series::new(format!("{name} (admitted)"), pts, SeriesStyle::Step).color(case_color),
        );
        let first = sorted
            .first()
            .map(|f| at(f.admitted_ns.unwrap_or(0) as f64));
        if let (Some(t0), false) = (first, c.ideal_bounds.is_empty()) {
            // A MultiLimiter: the least of its buckets' lines, a bend
            // where one overtakes another.
            let lines = &c.ideal_bounds;
            let at = |t: f64| {
                lines
                    .iter()
                    .map(|&(b, r)| b + r * per_unit * (t - t0))
                    .fold(f64::INFINITY, f64::min)
            };
            let mut ts = vec![t0, end];
            for (i, &(b1, r1)) in lines.iter().enumerate() {
                for &(b2, r2) in &lines[..i] {
                    if r1 != r2 {
                        let t = t0 + (b2 - b1) / ((r1 - r2) * per_unit);
                        if t > t0 && t < end {
                            ts.push(t);
                        }
                    }
                }
            }
            ts.sort_by(f64::total_cmp);
            let mut s = Series::new(
                format!("{name}: ideal (the least of its limiters)"),
                ts.iter().map(|&t| (t, at(t))).collect(),
                SeriesStyle::Dashed,
            )
            .color(case_color);
            s.share_color = true;
            out.push(s);
        } else if let (Some(r), Some(t0)) = (c.ideal_per_s, first) {
            let b = c.ideal_burst;
            let mut s = Series::new(
                format!(
                    "{name}: ideal {b} at once + {}/s",
                    crate::report::chart::human(r)
                ),
                vec![(t0, b), (end, b + r * per_unit * (end - t0))],
                SeriesStyle::Dashed,
            )
            .color(case_color);
            s.share_color = true;
            out.push(s);
        }
    }
    out
}

/// The wait-per-step chart: one chart, or (when cases share caller
/// numbers, so their points would fall on one spot) small multiples, a
/// panel per group of cases, under the chart's name, title and caption.
pub(super) enum Waits {
    One(ChartSpec),
    Panels(ChartSpec, Vec<ChartSpec>),
}

/// Palette indices of the cases, in order: the Okabe–Ito colours that
/// stay apart from each other (blue, vermillion, green, purple, black,
/// sky blue), orange and grey last, so two cases are never orange and
/// vermillion, or blue and sky blue, unless there are more than six.
const CASE_COLORS: [usize; 8] = [0, 3, 2, 4, 6, 5, 1, 7];

/// The palette index of the `k`-th case (or case and caller label).
fn case_color(k: usize) -> usize {
    CASE_COLORS[k % CASE_COLORS.len()]
}

/// A chart of a handful of values on a compact canvas: the standard
/// width, `height` px tall (a strip of two rows, ten dots at two values).
fn compact(mut spec: ChartSpec, height: u32) -> ChartSpec {
    let (w, h) = crate::report::chart::SIZE;
    spec.size = Some((w, height.min(h)));
    spec
}

/// The staircase of admissions, the wait of every step and the wait
/// distribution: one series per group of cases with the same outcome and,
/// within a case, per caller label (calls of different kinds wait
/// differently).
pub(super) fn charts(
    cases: &[CaseResult],
    zoom: Option<(f64, f64)>,
) -> (ChartSpec, Waits, ChartSpec) {
    let groups = same_outcome_groups(cases);
    let merged = groups.len() < cases.len();
    let one_caller = cases.iter().all(|c| {
        let callers: std::collections::BTreeSet<usize> = c.steps.iter().map(|a| a.caller).collect();
        callers.len() <= 1
    });
    let end_ns = cases
        .iter()
        .flat_map(|c| &c.steps)
        .map(|a| a.admitted_ns.unwrap_or(a.started_ns))
        .max()
        .unwrap_or(0) as f64;
    let wait_ns = cases
        .iter()
        .flat_map(|c| &c.steps)
        .filter(|a| a.admitted_ns.is_some())
        .map(|a| a.waited_ns)
        .max()
        .unwrap_or(0) as f64;
    // A zoom is given in seconds: one under a second is drawn in ms after
    // the whole second at or before its middle (9.99-10.22 s reads as
    // −10-220 ms after 10 s).
    let (tu, origin) = match zoom {
        Some((a, b)) if b - a < 1.0 => (Unit(1e6, "ms"), ((a + b) / 2.0).floor().max(0.0) * 1e9),
        Some(_) => (Unit(1e9, "s"), 0.0),
        None => (unit_for(end_ns), 0.0),
    };
    let zoom = zoom.map(|(a, b)| ((a * 1e9 - origin) / tu.0, (b * 1e9 - origin) / tu.0));
    let wu = unit_for(wait_ns);
    let [mut stairs, mut waits, mut dist] =
        empty_charts(one_caller, merged, zoom, (tu, wu), origin / 1e9);
    if cases
        .iter()
        .any(|c| c.ideal_per_s.is_some() || !c.ideal_bounds.is_empty())
    {
        stairs.caption.push_str(" Each case with a rate has its ideal (its burst at once, then its rate) dashed in the same colour: a staircase below its ideal is admitting slower than the rate promises.");
    } else {
        // no case has an ideal line to draw: the title does not promise one
        stairs.title = "Admitted calls over time (staircase)".into();
    }
    if cases.iter().any(|c| !c.ideal_bounds.is_empty()) {
        stairs.caption.push_str(" A MultiLimiter's ideal is the least of its limiters' lines (each bucket's burst at once, then its rate; for the buckets every waited-on MultiLimiter goes through), so it bends where the slower one takes over.");
    }
    let mut color = 0usize;
    let mut max_wait = 0f64;
    let mut refused = 0usize;
    let mut rows: Vec<StripRow> = Vec::new();
    // (group name, its wait series named by caller label) for the panels
    let mut panels: Vec<(String, Vec<Series>)> = Vec::new();
    let mut stairs_drawn = 0usize;
    for (name, c) in &groups {
        let mut panel = Vec::new();
        // colours by the staircases drawn (a zoom may leave cases out),
        // so the drawn ones take the most distinct colours
        let drawn = staircase(name, c, zoom, case_color(stairs_drawn), (tu, origin));
        stairs_drawn += usize::from(!drawn.is_empty());
        stairs.series.extend(drawn);
        let labels = caller_labels(c);
        for label in &labels {
            let steps: Vec<&Admission> = c.steps.iter().filter(|a| &a.label == label).collect();
            let series_name = if labels.len() > 1 {
                format!("{name}: {label}")
            } else {
                name.clone()
            };
            // A refused step has no wait: it goes on the "refused" row
            // under the axis, not at 0 with the steps admitted at once.
            let wp: Vec<(f64, f64)> = steps
                .iter()
                .map(|a| {
                    (
                        if one_caller {
                            a.step as f64
                        } else {
                            a.caller as f64
                        },
                        match a.admitted_ns {
                            Some(_) => a.waited_ns.max(0) as f64 / wu.0,
                            None => f64::NEG_INFINITY,
                        },
                    )
                })
                .collect();
            refused += steps.iter().filter(|a| a.admitted_ns.is_none()).count();
            max_wait = wp
                .iter()
                .map(|p| p.1)
                .filter(|w| w.is_finite())
                .fold(max_wait, f64::max);
            panel.push(
                Series::new(label.clone(), wp.clone(), SeriesStyle::Points).color(panel.len()),
            );
            waits.series.push(
                Series::new(series_name.clone(), wp, SeriesStyle::Points).color(case_color(color)),
            );
            let w: Vec<f64> = steps
                .iter()
                .filter(|a| a.admitted_ns.is_some())
                .map(|a| a.waited_ns.max(0) as f64 / wu.0)
                .collect();
            rows.push(StripRow {
                name: series_name.clone(),
                waits: w.clone(),
                refused: steps.len() - w.len(),
            });
            dist.series.push(
                Series::new(
                    series_name,
                    crate::report::chart::percentile_points(&w),
                    SeriesStyle::Step,
                )
                .color(case_color(color)),
            );
            color += 1;
        }
        if labels.is_empty() {
            color += 1;
        }
        panels.push((name.clone(), panel));
    }
    let top = if max_wait > 0.0 { max_wait * 1.08 } else { 1.0 };
    // a little room under 0, so steps that did not wait sit above the axis
    waits.y_range = Some((-top * 0.04, top));
    dist.y_range = Some((-top * 0.04, top));
    if refused > 0 {
        waits.y_row_below = "refused".into();
        waits.caption.push_str(
            " A refused step has no wait: it is on the \"refused\" row under the axis, not at 0.",
        );
    }
    if max_wait == 0.0 {
        let note = if refused > 0 {
            "every admitted step passed at once (wait 0); the others were refused"
        } else {
            "every wait is 0: no step had to wait (nothing was limited)"
        };
        waits.y_note = note.into();
        dist.y_note = note.into();
    }
    // Percentiles of a handful of waits say less than the waits: under
    // PERCENTILE_MIN admitted steps in a row, every wait is drawn.
    if rows.iter().any(|r| r.waits.len() < PERCENTILE_MIN) {
        dist = strip(&rows, top, &dist.y_note, wu);
    }
    if max_wait == 0.0 {
        // nothing to read off the dots: the title says it
        waits.title.push_str(": every wait 0");
        dist.title.push_str(": every wait 0");
    }
    stairs.x_range = zoom;
    // Cases that share caller (or step) numbers would put their points on
    // one spot: a panel each, every point on its own caller's tick.
    let xs = |p: &[Series]| -> Vec<i64> {
        p.iter()
            .flat_map(|s| s.points.iter().map(|q| q.0 as i64))
            .collect()
    };
    let shared = panels.iter().enumerate().any(|(i, (_, a))| {
        let a = xs(a);
        panels[..i]
            .iter()
            .any(|(_, b)| xs(b).iter().any(|x| a.contains(x)))
    });
    let waits = if shared && panels.len() > 1 {
        wait_panels(waits, panels)
    } else {
        // A handful of dots at one or two waits: a compact canvas.
        let mut distinct: Vec<i64> = waits
            .series
            .iter()
            .flat_map(|s| s.points.iter())
            .filter(|p| p.1.is_finite())
            .map(|p| (p.1 * 1e6).round() as i64)
            .collect();
        distinct.sort_unstable();
        distinct.dedup();
        let mut waits = if distinct.len() <= 2 {
            compact(waits, WAITS_COMPACT)
        } else {
            waits
        };
        waits.x_categories = caller_ticks(&waits.series, TICKS_PER_CALLER_MAX);
        Waits::One(waits)
    };
    (stairs, waits, dist)
}

/// Up to this many callers (or steps) on a chart's width, each gets a
/// tick of its own (half as many on a panel, half as wide).
const TICKS_PER_CALLER_MAX: usize = 24;

/// A tick per caller number from 0 to the last, when there are at most
/// `max`: a point sits on its own caller's tick instead of between ticks
/// every 2 or 5 callers. Empty (a numeric axis) for more.
fn caller_ticks(series: &[Series], max: usize) -> Vec<String> {
    let last = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .fold(0f64, f64::max);
    if last.fract() != 0.0 || last as usize + 1 > max {
        return Vec::new();
    }
    (0..=last as usize).map(|i| i.to_string()).collect()
}

/// The height (px) of a waits chart whose dots take at most two values.
const WAITS_COMPACT: u32 = 330;

/// The height (px) of a strip of `rows` rows: room for the title and the
/// axis, and a row's height each, up to the standard canvas.
fn strip_height(rows: usize) -> u32 {
    (110 + 56 * rows as u32).max(230)
}

/// A percentile plot needs this many values in each line; with fewer,
/// the waits are drawn one by one ([`strip`]).
const PERCENTILE_MIN: usize = 100;

/// One row of the wait strip: a case (and caller label), the waits of its
/// admitted steps, and how many were refused.
struct StripRow {
    name: String,
    waits: Vec<f64>,
    refused: usize,
}

/// The waits as a strip plot: a row per case and caller label, a marker
/// per distinct wait labelled with how many steps waited it ("×5"), the
/// refused steps counted in the row's name (they have no wait).
fn strip(rows: &[StripRow], top: f64, y_note: &str, wu: Unit) -> ChartSpec {
    // The first case on the top row, as the listings read.
    let rows: Vec<&StripRow> = rows.iter().rev().collect();
    let mut c = ChartSpec::new(
        "wait-distribution",
        "Every wait, per case (admitted steps)",
        format!("wait ({})", wu.1),
        "",
    )
    .caption(format!("The wait of every admitted step, one row per case and caller label, one marker per distinct wait labelled with how many steps waited it (×n); refused steps have no wait and are counted in the row's name. Drawn value by value rather than as percentiles: each row has fewer than {PERCENTILE_MIN} steps."));
    c.y_categories = rows
        .iter()
        .map(|r| match (r.refused, r.waits.len()) {
            (0, _) => r.name.clone(),
            (k, 0) => format!("{}: all {k} refused", r.name),
            (k, n) => format!("{}: {k} of {} refused", r.name, k + n),
        })
        .collect();
    let mut pts = Vec::new();
    let mut labels = Vec::new();
    for (row, r) in rows.iter().enumerate() {
        let mut w = r.waits.clone();
        w.sort_by(f64::total_cmp);
        for chunk in w.chunk_by(|a, b| a == b) {
            pts.push((chunk[0], row as f64));
            labels.push(if chunk.len() > 1 {
                format!("\u{d7}{}", chunk.len())
            } else {
                String::new()
            });
        }
    }
    let mut s = Series::new("", pts, SeriesStyle::Points).color(0);
    s.point_labels = Some(labels);
    c.series.push(s);
    c.x_range = Some((-top * 0.04, top));
    c.x_note = y_note.to_string();
    // A row per case: categories, not a range the data should fill.
    c.y_note = "one row per case and caller label".into();
    compact(c, strip_height(rows.len()))
}

/// `waits` as small multiples: a panel per group of cases, its series
/// named by caller label, every panel on the same axes so they compare.
fn wait_panels(waits: ChartSpec, panels: Vec<(String, Vec<Series>)>) -> Waits {
    let x_max = panels
        .iter()
        .flat_map(|(_, s)| s.iter().flat_map(|s| s.points.iter().map(|p| p.0)))
        .fold(0f64, f64::max);
    // every panel the same ticks, so they compare
    let all: Vec<Series> = panels.iter().flat_map(|(_, s)| s.iter().cloned()).collect();
    let ticks = caller_ticks(&all, TICKS_PER_CALLER_MAX / 2);
    let specs = panels
        .into_iter()
        .map(|(name, series)| {
            let mut p = ChartSpec::new("panel", name, waits.x_label.clone(), waits.y_label.clone());
            p.series = series;
            p.y_range = waits.y_range;
            p.x_range = Some((-0.5, x_max + 0.5));
            p.x_categories = ticks.clone();
            p.y_note = waits.y_note.clone();
            p.y_row_below = waits.y_row_below.clone();
            p.legend = Legend::UpperLeft;
            p
        })
        .collect();
    let mut spec = waits;
    spec.caption.push_str(" A panel per case (cases with identical outcomes share one, joined by \"=\"), so each case's points sit on their own callers' ticks, a series per caller label, all panels on the same axes.");
    Waits::Panels(spec, specs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joined_labels_say_a_shared_tail_once() {
        let l = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            join_labels(&l(&["atomic, slack 10", "mutex, slack 10"])),
            "atomic = mutex, slack 10"
        );
        assert_eq!(join_labels(&l(&["atomic", "mutex"])), "atomic = mutex");
    }
}
