//! What the fleets add to a report: the fleet cost table, the time to
//! converge, and the fleet charts. Kept with the fleet (not beside the
//! decision lab's renderers) because it reads only the fleets' own
//! reports ([`FleetReport`]) and the rows' harm by name.
//!
//! This file assembles the fleet sections and draws the small charts (time
//! to converge, compliant denied against skew); the two multi-panel charts,
//! the sync interval sweep and the scale event timeline, are in
//! [`super::charts`].

use super::budget::FleetPlan;
use super::run::FleetReport;
use crate::clock::{Nanos, MILLI, SECOND};
use crate::error::Result;
use crate::report::chart;
use crate::report::chart::{shared_words, without_words};
use crate::report::fmt::{bytes_human, pct_scaled};
use crate::report::{ChartSpec, Output, Series, SeriesStyle};
use crate::workload::trace::input::SharedInput;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// The fleets of a run: each candidate's name and its report handle.
#[derive(Default)]
pub struct Fleets {
    pub(super) fleets: Vec<(String, Arc<Mutex<FleetReport>>)>,
    /// The policy interval in whole seconds (at least 1): the window of the
    /// time to converge.
    window_s: usize,
    /// Per fleet: what its cost is estimated from (see [`super::budget`]).
    pub(super) plan: Vec<FleetPlan>,
    /// The trace opened once, when a `from_trace` balancer reads its
    /// replicas from it: the lab's requests read the same input.
    trace_input: Option<SharedInput>,
}
impl Fleets {
    /// No fleets yet; `window_s` is the policy interval in whole seconds
    /// (at least 1), the window of the time to converge.
    pub fn new(window_s: usize) -> Self {
        Fleets {
            window_s: window_s.max(1),
            ..Fleets::default()
        }
    }

    /// Adds a built fleet: its candidate name and its report handle.
    pub fn push(&mut self, name: String, report: Arc<Mutex<FleetReport>>) {
        self.fleets.push((name, report));
    }

    /// The trace as opened for a `from_trace` balancer (None: no fleet
    /// reads it), for the runner's requests to read in the same pass.
    pub fn trace_input(&self) -> Option<&SharedInput> {
        self.trace_input.as_ref()
    }

    /// Where a `from_trace` balancer keeps the trace it opened.
    pub fn trace_input_mut(&mut self) -> &mut Option<SharedInput> {
        &mut self.trace_input
    }

    /// Adds each fleet's costs to the report: `fleet` in report.json (one
    /// entry per fleet, with its per-replica breakdown) and a table in
    /// table.md. `duration_ns` turns counts into rates, `requests` is the
    /// number of request lines.
    pub fn annotate(&self, out: &mut Output, duration_ns: Nanos, requests: u64) -> Result<()> {
        if self.fleets.is_empty() {
            return Ok(());
        }
        let secs = (duration_ns as f64 / SECOND as f64).max(1e-9);
        let mut rows = Vec::new();
        let mut md = String::from("\n## Fleet cost\n\n| fleet | store ops/s | messages/s | added latency / request | failed | memory / replica (mean) | busiest replica share |\n|---|---:|---:|---:|---:|---:|---:|\n");
        for (name, rep) in &self.fleets {
            let Ok(r) = rep.lock() else { continue };
            let mean_lat_ms = if requests == 0 {
                0.0
            } else {
                r.cost.added_latency_ns as f64 / requests as f64 / MILLI as f64
            };
            let mem: Vec<u64> = r.per_replica.iter().map(|p| p.memory_bytes).collect();
            let mem_mean = if mem.is_empty() {
                0
            } else {
                mem.iter().sum::<u64>() / mem.len() as u64
            };
            let busiest = r.per_replica.iter().map(|p| p.requests).max().unwrap_or(0);
            let share = if requests == 0 {
                0.0
            } else {
                busiest as f64 / requests as f64
            };
            md.push_str(&format!(
                "| {name} | {:.1} | {:.1} | {:.3} ms | {} | {} | {:.1}% |\n",
                r.cost.store_ops as f64 / secs,
                r.cost.messages as f64 / secs,
                mean_lat_ms,
                r.cost.failed,
                bytes_human(mem_mean),
                share * 100.0
            ));
            rows.push(json!({
                "algorithm": name,
                "strategy": r.strategy,
                "balancer": r.balancer,
                "replicas": r.replicas,
                "peak_replicas": r.peak_replicas,
                "store_ops": r.cost.store_ops,
                "store_ops_per_s": round3(r.cost.store_ops as f64 / secs),
                "messages": r.cost.messages,
                "messages_per_s": round3(r.cost.messages as f64 / secs),
                "added_latency_ms_per_request": round3(mean_lat_ms),
                "failed": r.cost.failed,
                "unserved": r.unserved,
                "balancer_bytes": r.balancer_bytes,
                "memory_per_replica_bytes": mem_mean,
                "per_replica": r.per_replica.iter().enumerate().map(|(i, p)| json!({
                    "replica": i, "requests": p.requests, "allowed": p.allowed,
                    "keys": p.keys, "memory_bytes": p.memory_bytes,
                })).collect::<Vec<_>>(),
            }));
        }
        let converge = self.converge();
        if !converge.is_empty() {
            for (row, c) in rows.iter_mut().zip(&converge) {
                row["converge"] = Value::Array(
                    c.iter()
                        .map(|(label, at, t)| json!({"event": label, "at_s": round3(*at as f64 / SECOND as f64), "time_to_converge_s": t}))
                        .collect(),
                );
            }
            md.push_str(&self.converge_table(&converge));
        }
        if let Some(m) = out.json.as_object_mut() {
            m.insert("fleet".into(), Value::Array(rows));
        }
        out.table_md.push_str(&md);
        let mut charts = Vec::new();
        if let Some((title, caption, panels)) = self.sweep_chart(&out.json) {
            charts.push(chart::render_grid(SWEEP, &title, &caption, &panels, 2)?);
        }
        for spec in self.charts(&out.json) {
            charts.push(chart::render(&spec)?);
        }
        if let Some((name, title, caption, panels)) = self.scale_event_chart() {
            charts.push(chart::render_grid(name, &title, caption, &panels, 1)?);
        }
        if let Some(spec) = self.converge_chart(&converge) {
            charts.push(chart::render(&spec)?);
        }
        // The sweep's caption leads the report's chart list (the page
        // shows charts in that order); the others follow under their own
        // heading.
        let lead = "\n## Charts\n\n";
        let listed: Vec<&crate::report::Chart> = match out.table_md.find(lead) {
            Some(at) if charts.iter().any(|c| c.name == SWEEP) => {
                let c = charts.iter().find(|c| c.name == SWEEP);
                let line = c.map_or(String::new(), |c| {
                    format!("- `{}`: {}\n", c.name, c.caption)
                });
                out.table_md.insert_str(at + lead.len(), &line);
                charts.iter().filter(|c| c.name != SWEEP).collect()
            }
            _ => charts.iter().collect(),
        };
        if !listed.is_empty() {
            out.table_md.push_str("\n## Fleet charts\n\n");
        }
        for c in listed {
            out.table_md
                .push_str(&format!("- `{}`: {}\n", c.name, c.caption));
        }
        // A sync interval sweep leads with its chart; the dot plot of
        // each candidate's excess repeats its left panel when no candidate
        // denied a compliant request, and goes.
        let sweep = charts.iter().position(|c| c.name == SWEEP);
        if let Some(k) = sweep {
            let c = charts.remove(k);
            if !any_denied(&out.json) {
                drop_chart(out, "harm");
            }
            out.charts.insert(0, c);
        }
        out.charts.extend(charts);
        Ok(())
    }

    /// Per fleet, each disturbance's (label, time, time to converge);
    /// empty when the run has no events.
    fn converge(&self) -> Vec<Vec<(String, Nanos, Option<f64>)>> {
        let reps: Vec<FleetReport> = self
            .fleets
            .iter()
            .filter_map(|(_, r)| r.lock().ok().map(|r| r.clone()))
            .collect();
        let Some(exact) = reps.iter().map(|r| &r.exact_per_s).find(|x| !x.is_empty()) else {
            return Vec::new();
        };
        reps.iter()
            .map(|r| {
                r.disturbances
                    .iter()
                    .map(|(at, label)| {
                        let t = super::converge::time_to_converge(
                            &r.admitted_per_s,
                            exact,
                            *at,
                            self.window_s,
                            super::converge::CONVERGE_TOLERANCE,
                        );
                        (label.clone(), *at, t)
                    })
                    .collect()
            })
            .collect()
    }

    /// The times to converge as a dot plot: a row per fleet (sorted by
    /// the first event's time), a series per event, each point labelled
    /// with its seconds; a fleet that never converges sits at the right
    /// edge labelled "none". None when the run has no events.
    fn converge_chart(&self, conv: &[Vec<(String, Nanos, Option<f64>)>]) -> Option<ChartSpec> {
        let first = conv.first().filter(|c| !c.is_empty())?;
        let n = self.fleets.len().min(conv.len());
        let t = |i: usize, e: usize| conv[i].get(e).and_then(|c| c.2);
        let hi = (0..n)
            .flat_map(|i| (0..first.len()).filter_map(move |e| t(i, e)))
            .fold(0.0, f64::max)
            .max(1.0);
        let edge = hi * 1.15;
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by(|&a, &b| {
            let k = |i| t(i, 0).unwrap_or(f64::INFINITY);
            k(a).total_cmp(&k(b)).then(a.cmp(&b))
        });
        let names: Vec<&str> = self.fleets.iter().map(|(n, _)| n.as_str()).collect();
        let shared = shared_words(&names);
        let mut c = ChartSpec::new(
            "time_to_converge",
            format!("Time to converge after each event{}", all_note(&shared)),
            format!(
                "seconds until the fleet admits within {:.0}% of the exact policy",
                super::converge::CONVERGE_TOLERANCE * 100.0
            ),
            "",
        )
        .caption("One row per fleet, sorted: seconds after the event until its admitted requests per window stay within the tolerance of the fleet-wide exact sliding log for a full window; a dot on the axis converged at once (0 s); none (at the right edge): not before the run ends.");
        c.y_categories = order
            .iter()
            .map(|&i| without_words(names[i], &shared))
            .collect();
        for (e, (label, at, _)) in first.iter().enumerate() {
            let pts: Vec<(f64, f64)> = order
                .iter()
                .enumerate()
                .map(|(row, &i)| (t(i, e).unwrap_or(edge), row as f64))
                .collect();
            let mut s = Series::new(
                format!("{label} at {} s", round3(*at as f64 / SECOND as f64)),
                pts,
                SeriesStyle::Points,
            );
            s.point_labels = Some(
                order
                    .iter()
                    .map(|&i| match t(i, e) {
                        Some(x) => format!("{x:.1} s"),
                        None => "none".to_string(),
                    })
                    .collect(),
            );
            s.color = Some(e);
            c.series.push(s);
        }
        c.x_range = Some((0.0, edge * 1.1));
        Some(c)
    }

    /// The table of times to converge: a column per disturbance.
    fn converge_table(&self, conv: &[Vec<(String, Nanos, Option<f64>)>]) -> String {
        let Some(first) = conv.first().filter(|c| !c.is_empty()) else {
            return String::new();
        };
        let mut md = format!(
            "\n## Time to converge\n\nSeconds after each event until the fleet's admitted requests per {} s window stay within {:.0}% of the fleet-wide exact sliding log's for a full window (none: not before the run ends).\n\n| fleet |",
            self.window_s,
            super::converge::CONVERGE_TOLERANCE * 100.0
        );
        for (label, at, _) in first {
            md.push_str(&format!(
                " {label} at {} s |",
                round3(*at as f64 / SECOND as f64)
            ));
        }
        md.push_str("\n|---|");
        md.push_str(&"---:|".repeat(first.len()));
        md.push('\n');
        for ((name, _), c) in self.fleets.iter().zip(conv) {
            md.push_str(&format!("| {name} |"));
            for (_, _, t) in c {
                match t {
                    Some(t) => md.push_str(&format!(" {t:.1} s |")),
                    None => md.push_str(" none |"),
                }
            }
            md.push('\n');
        }
        md
    }

    /// The fleet charts this run has data for besides the sweep's and the
    /// scale event's: compliant requests denied against the balancer's
    /// skew (a line per strategy).
    fn charts(&self, json: &Value) -> Vec<ChartSpec> {
        let reps: Vec<(String, FleetReport)> = self
            .fleets
            .iter()
            .filter_map(|(n, r)| r.lock().ok().map(|r| (n.clone(), r.clone())))
            .collect();
        let row = |name: &str, f: &str| -> f64 {
            json["rows"]
                .as_array()
                .and_then(|rows| rows.iter().find(|r| r["algorithm"] == name))
                .and_then(|r| r["harm"][f].as_f64())
                .unwrap_or(0.0)
        };
        let mut out = Vec::new();
        // Balancer skew: one line per strategy. The same balancer without
        // skew or weights (its label is the bare type) is the line's skew 0.
        let skewed: Vec<(&str, usize, &str)> = reps
            .iter()
            .filter(|(_, r)| r.skew.is_some())
            .map(|(_, r)| (r.strategy.as_str(), r.replicas, r.balancer_type.as_str()))
            .collect();
        let mut lines: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
        for (name, r) in &reps {
            // The same balancer sending evenly: no weights, no skew.
            let even = || {
                !r.weighted
                    && skewed.contains(&(r.strategy.as_str(), r.replicas, r.balancer_type.as_str()))
            };
            let s = match r.skew {
                Some(s) => s,
                None if even() => 0.0,
                None => continue,
            };
            lines
                .entry(format!("{} x{}", r.strategy, r.replicas))
                .or_default()
                .push((s, row(name, "compliant_denied_pct")));
        }
        if lines.values().any(|p| p.len() >= 2) {
            let names: Vec<&str> = lines.keys().map(String::as_str).collect();
            let shared = shared_words(&names);
            let mut c = ChartSpec::new(
                "compliant_denied_vs_skew",
                format!(
                    "Compliant requests denied against the balancer's skew{}",
                    all_note(&shared)
                ),
                "skew s (replica i gets weight 1 / (i + 1)^s)",
                "compliant keys: requests denied (%)",
            )
            .caption("Each line one strategy (skew 0: the same balancer sending evenly), each point above 0 labelled with its value (a 0 the lines share, once): an uneven balancer sends more than its share to the first replicas, and a divided limit then denies clients that are within the policy.");
            // A point several lines share is labelled once, on the first.
            let all: Vec<(f64, f64)> = lines.values().flatten().copied().collect();
            for (label, mut pts) in lines {
                pts.sort_by(|a, b| a.0.total_cmp(&b.0));
                let labels = pts
                    .iter()
                    .map(|p| {
                        let shared = all.iter().filter(|q| *q == p).count() > 1;
                        let labelled = c.series.iter().any(|s| s.points.contains(p));
                        if p.1 > 0.0 {
                            pct_scaled(p.1)
                        } else if shared && !labelled {
                            "0%".into()
                        } else {
                            String::new()
                        }
                    })
                    .collect();
                let mut s =
                    Series::new(without_words(&label, &shared), pts, SeriesStyle::LinePoints);
                s.point_labels = Some(labels);
                c.series.push(s);
            }
            out.push(c);
        }
        out
    }
}

/// The sync interval sweep's chart, the report's lead when drawn.
const SWEEP: &str = "excess_vs_sync_interval";

/// Whether some row of the report denied a compliant request.
fn any_denied(json: &Value) -> bool {
    json["rows"].as_array().is_some_and(|rows| {
        rows.iter()
            .any(|r| r["harm"]["compliant_denied_pct"].as_f64().unwrap_or(0.0) > 0.0)
    })
}

/// Removes chart `name` from a report, and its line from table.md's list.
fn drop_chart(out: &mut Output, name: &str) {
    out.charts.retain(|c| c.name != name);
    let mark = format!("- `{name}`: ");
    out.table_md = out
        .table_md
        .split_inclusive('\n')
        .filter(|l| !l.starts_with(&mark))
        .collect();
}

/// A title's note of the words every series' name shares (said once
/// there, not in each label): ` (all: x10 round_robin)`.
pub(super) fn all_note(shared: &str) -> String {
    if shared.is_empty() {
        String::new()
    } else {
        format!(" (all: {shared})")
    }
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}
