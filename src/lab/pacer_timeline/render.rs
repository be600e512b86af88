//! The report of a `pacer_timeline` run: listings, the summary by caller
//! label, every step as CSV, and the charts drawn by the sibling `charts`
//! module.

use super::charts::{charts, Waits};
use super::params::{Params, TimeFormat};
use super::run::{Admission, CaseResult};
use crate::error::Result;
use crate::lab::RunContext;
use crate::report::fmt::go_duration;
use crate::report::{Output, ReportBuilder, Table};
use crate::scenario::Scenario;
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// The report of `cases`; `clock_start` is t = 0 in seconds since midnight
/// for `clock` listings.
pub(super) fn render(
    sc: &Scenario,
    p: &Params,
    clock_start: Option<i64>,
    ctx: &RunContext,
    cases: &[CaseResult],
) -> Result<Output> {
    let mut report = ReportBuilder::new(sc, ctx.seed, None);
    if let Some(o) = &p.caller_order {
        report.md(&format!("**Caller order (fixed):** {o}\n\n"));
    }
    report.md("Virtual clock; every caller is a separate goroutine. Simultaneous events run in caller order (file order).\n\n");
    let mut summary = Table::new([
        "case",
        "callers",
        "label",
        "steps",
        "admitted at once",
        "refused",
        "wait p50",
        "wait p99",
        "wait max",
        "last admitted",
    ]);
    let mut csv = Table::new([
        "case",
        "caller",
        "label",
        "step",
        "started_ns",
        "admitted_ns",
        "waited_ns",
        "clock_read_ns",
        "error",
    ]);
    let mut json_cases = Vec::new();
    for c in cases {
        let listing = listing(p.time_format, clock_start, c);
        report.md(&format!("## {}\n\n```\n{listing}```\n\n", c.label));
        report.console(&format!("== {}\n{listing}", c.label));
        let label_json = label_summary(c, &mut summary);
        step_rows(c, &mut csv);
        json_cases.push(case_json(c, &listing, label_json));
    }
    report
        .md("## Summary\n\n")
        .md("Waits of the admitted steps (a refused step has no wait): p50/p99 from an HdrHistogram (3 significant digits), max exact; \"-\" when nothing was admitted. \"Admitted at once\" = steps admitted without waiting.\n\n")
        .md(&summary.markdown())
        .console(&summary.text())
        .field(
            "time_format",
            json!(format!("{:?}", p.time_format).to_lowercase()),
        )
        .field("caller_order", json!(p.caller_order))
        .field("cases", Value::Array(json_cases))
        .csv(&csv);
    let (stairs, waits, dist) = charts(cases, p.staircase_x_s);
    report.chart(&stairs)?;
    match waits {
        Waits::One(spec) => {
            report.chart(&spec)?;
        }
        Waits::Panels(spec, panels) => {
            let cols = if panels.len() > 1 { 2 } else { 1 };
            report.rendered_chart(crate::report::chart::render_grid(
                &spec.name,
                &spec.title,
                &spec.caption,
                &panels,
                cols,
            )?);
        }
    }
    report.chart(&dist)?;
    Ok(report.finish())
}

/// The case's admitted times, listed in `format`.
fn listing(format: TimeFormat, clock_start: Option<i64>, c: &CaseResult) -> String {
    let mut listing = String::new();
    let sorted = c.admitted_sorted();
    match format {
        TimeFormat::Delta => {
            let mut prev: Option<i64> = None;
            for (i, a) in sorted.iter().enumerate() {
                let t = a.admitted_ns.unwrap_or(0);
                let d = t - prev.unwrap_or(a.started_ns);
                listing.push_str(&format!("{i} {}\n", go_duration(d)));
                prev = Some(t);
            }
        }
        TimeFormat::Clock => {
            let start = clock_start.unwrap_or(0);
            for a in &sorted {
                listing.push_str(&format!(
                    "{} {}\n",
                    clock_label(start, a.admitted_ns.unwrap_or(0)),
                    a.label
                ));
            }
            let end = c
                .steps
                .iter()
                .map(|a| a.started_ns + a.waited_ns)
                .max()
                .unwrap_or(0);
            listing.push_str(&format!("{} Done.\n", clock_label(start, end)));
        }
        TimeFormat::Offset => {
            for a in &c.steps {
                let what = match a.admitted_ns {
                    Some(t) => format!("admitted {}", go_duration(t)),
                    None => match &a.error {
                        Some(e) => format!("refused ({e})"),
                        None => "refused".to_string(),
                    },
                };
                listing.push_str(&format!(
                    "#{:<3} {:<16} at {:<8} {what:<22} waited {}{}\n",
                    a.caller,
                    a.label,
                    go_duration(a.started_ns),
                    go_duration(a.waited_ns),
                    a.clock_read_ns
                        .filter(|r| *r != a.started_ns)
                        .map(|r| format!(" (clock read at {})", go_duration(r)))
                        .unwrap_or_default()
                ));
            }
        }
    }
    listing
}

/// Adds the case's rows to the summary table (one per caller label, in
/// order of the label's first caller); returns their report.json form.
fn label_summary(c: &CaseResult, summary: &mut Table) -> Vec<Value> {
    let mut by_label: BTreeMap<(usize, String), Vec<&Admission>> = BTreeMap::new();
    let mut first_caller: BTreeMap<String, usize> = BTreeMap::new();
    for a in &c.steps {
        let fc = *first_caller.entry(a.label.clone()).or_insert(a.caller);
        by_label.entry((fc, a.label.clone())).or_default().push(a);
    }
    let mut label_json = Vec::new();
    for ((_, label), steps) in &by_label {
        let (n, once, waits) = wait_stats(steps);
        let dur = |v: Option<i64>| v.map(go_duration).unwrap_or_else(|| "-".into());
        let (p50, p99, max) = match waits {
            Some((a, b, c)) => (Some(a as i64), Some(b as i64), Some(c)),
            None => (None, None, None),
        };
        let callers: std::collections::BTreeSet<usize> = steps.iter().map(|a| a.caller).collect();
        let refused = steps.iter().filter(|a| a.admitted_ns.is_none()).count();
        let last = steps.iter().filter_map(|a| a.admitted_ns).max();
        summary.push([
            c.label.clone(),
            callers.len().to_string(),
            label.clone(),
            n.to_string(),
            once.to_string(),
            refused.to_string(),
            dur(p50),
            dur(p99),
            dur(max),
            last.map(go_duration).unwrap_or_else(|| "-".into()),
        ]);
        label_json.push(json!({
            "label": label, "callers": callers.len(), "steps": n, "admitted_at_once": once,
            "refused": refused, "wait_p50_ns": p50, "wait_p99_ns": p99, "wait_max_ns": max,
            "last_admitted_ns": last,
        }));
    }
    label_json
}

/// Adds the case's steps to table.csv.
fn step_rows(c: &CaseResult, csv: &mut Table) {
    for a in &c.steps {
        csv.push([
            c.label.clone(),
            a.caller.to_string(),
            a.label.clone(),
            a.step.to_string(),
            a.started_ns.to_string(),
            a.admitted_ns.map(|t| t.to_string()).unwrap_or_default(),
            a.waited_ns.to_string(),
            a.clock_read_ns.map(|t| t.to_string()).unwrap_or_default(),
            a.error.clone().unwrap_or_default(),
        ]);
    }
}

/// The case in report.json: admitted times in order, the listing, the
/// summary by label and each caller's steps.
fn case_json(c: &CaseResult, listing: &str, label_json: Vec<Value>) -> Value {
    let mut callers_json: BTreeMap<usize, (String, Vec<Value>)> = BTreeMap::new();
    for a in &c.steps {
        let e = callers_json
            .entry(a.caller)
            .or_insert_with(|| (a.label.clone(), Vec::new()));
        e.1.push(json!({
            "started_ns": a.started_ns, "admitted_ns": a.admitted_ns, "waited_ns": a.waited_ns,
            "clock_read_ns": a.clock_read_ns, "error": a.error,
        }));
    }
    let rows: Vec<Value> = callers_json
        .into_iter()
        .map(|(caller, (label, steps))| json!({"caller": caller, "label": label, "steps": steps}))
        .collect();
    json!({
        "label": c.label,
        "x_time_behaviour": c.go_version.name(),
        "admitted_ns_in_order": c.admitted_sorted().iter().map(|a| a.admitted_ns).collect::<Vec<_>>(),
        "listing": listing,
        "by_label": label_json,
        "rows": rows,
    })
}

/// `hh:mm:ss` as seconds since midnight.
pub(super) fn parse_clock(s: &str) -> Option<i64> {
    let p: Vec<i64> = s
        .split(':')
        .map(|x| x.parse().ok())
        .collect::<Option<_>>()?;
    match p.as_slice() {
        [h, m, sec] if (0..24).contains(h) && (0..60).contains(m) && (0..60).contains(sec) => {
            Some(h * 3600 + m * 60 + sec)
        }
        _ => None,
    }
}

/// `hh:mm:ss` of `t_ns` after `start_s` (seconds since midnight), wrapping
/// at midnight.
fn clock_label(start_s: i64, t_ns: i64) -> String {
    let s = (start_s + t_ns.div_euclid(1_000_000_000)).rem_euclid(86_400);
    format!("{:02}:{:02}:{:02}", s / 3600, (s / 60) % 60, s % 60)
}

/// Rounds to 3 significant digits, the histogram's precision (so a bucket
/// edge such as 4.001366015 s shows as the 4 s it stands for).
fn round3(v: u64) -> u64 {
    let mut scale = 1u64;
    while v / scale >= 1000 {
        scale *= 10;
    }
    (v + scale / 2) / scale * scale
}

/// Wait-time statistics of a set of steps: (count, admitted at once, and
/// over the admitted steps only — a refused step did not wait to be let
/// through, so its 0 is no wait — p50 and p99 via HdrHistogram and the
/// exact max; None when none was admitted).
fn wait_stats(steps: &[&Admission]) -> (usize, usize, Option<(u64, u64, i64)>) {
    let mut h = hdrhistogram::Histogram::<u64>::new(3).ok();
    let mut max = None;
    let mut at_once = 0;
    for a in steps.iter().filter(|a| a.admitted_ns.is_some()) {
        if a.waited_ns == 0 {
            at_once += 1;
        }
        max = Some(max.unwrap_or(0).max(a.waited_ns));
        if let Some(h) = h.as_mut() {
            let _ = h.record(a.waited_ns.max(0) as u64);
        }
    }
    let waits = match (&h, max) {
        (Some(h), Some(max)) if !h.is_empty() => Some((
            round3(h.value_at_quantile(0.5)),
            round3(h.value_at_quantile(0.99)),
            max,
        )),
        (_, Some(max)) => Some((0, 0, max)),
        _ => None,
    };
    (steps.len(), at_once, waits)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEC: i64 = 1_000_000_000;

    #[test]
    fn durations_and_clock_labels() {
        assert_eq!(round3(4_001_366_015), 4_000_000_000);
        assert_eq!(round3(999), 999);
        assert_eq!(go_duration(0), "0");
        assert_eq!(go_duration(1_500_000_000), "1.5s");
        assert_eq!(go_duration(60 * SEC), "1m0s");
        assert_eq!(go_duration(333_333_333), "333.333333ms");
        assert_eq!(go_duration(1_500), "1.5µs");
        assert_eq!(go_duration(-7), "-7ns");
        assert_eq!(
            clock_label(parse_clock("01:40:15").unwrap_or(0), 60 * SEC),
            "01:41:15"
        );
    }
}
