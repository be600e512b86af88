//! The two multi-panel fleet charts: the sync interval sweep (excess and
//! cost against the sync interval) and the scale event timeline (admitted
//! per second around the first scale event).
//!
//! Why a file of their own: each is a long layout of its own (lines per
//! replica count, dashed levels, zoomed panels, legend head room) that the
//! rest of the fleet's report does not share; [`super::render`] keeps the
//! tables, the small charts and the order the charts are listed in, and
//! calls these two. They read the fleets' reports and the report's rows
//! only, like the rest of the rendering.

use super::render::{all_note, Fleets};
use super::run::FleetReport;
use crate::clock::SECOND;
use crate::report::chart::{shared_words, without_words};
use crate::report::fmt::pct_scaled;
use crate::report::{ChartSpec, Series, SeriesStyle};
use serde_json::Value;
use std::collections::BTreeMap;

/// The sweep's lines: per (replicas, strategy without its interval), each
/// point's (interval ms, limited excess %, cost per second).
type SweepLines = BTreeMap<(usize, String), Vec<(f64, f64, f64)>>;

/// Colours of a chart's lines in turn: the palette's, with orange and
/// vermillion (alike) kept apart, so the first five are distinct at a glance.
const LINE_COLORS: [usize; 6] = [0, 2, 3, 5, 4, 1];

impl Fleets {
    /// The sync interval sweep, two panels: the limited keys' excess
    /// against the sync interval (a line per replica count) and what the
    /// fleet costs (store operations and messages per second) against it,
    /// each with the fleets that do not sync periodically as dashed levels:
    /// the trade-off the sweep is for. None unless some line has two
    /// intervals or more.
    pub(super) fn sweep_chart(&self, json: &Value) -> Option<(String, String, Vec<ChartSpec>)> {
        let reps: Vec<(String, FleetReport)> = self
            .fleets
            .iter()
            .filter_map(|(n, r)| r.lock().ok().map(|r| (n.clone(), r.clone())))
            .collect();
        let harm = |name: &str| -> f64 {
            json["rows"]
                .as_array()
                .and_then(|rows| rows.iter().find(|r| r["algorithm"] == name))
                .and_then(|r| r["harm"]["limited_excess_pct"].as_f64())
                .unwrap_or(0.0)
        };
        let cost_of = |name: &str, f: &str| -> f64 {
            json["fleet"]
                .as_array()
                .and_then(|rows| rows.iter().find(|r| r["algorithm"] == name))
                .and_then(|r| r[f].as_f64())
                .unwrap_or(0.0)
        };
        let cost = |name: &str| cost_of(name, "store_ops_per_s") + cost_of(name, "messages_per_s");
        // One line per (replicas, strategy without its interval).
        let mut lines: SweepLines = BTreeMap::new();
        let mut levels: Vec<(String, f64, f64)> = Vec::new();
        for (name, r) in &reps {
            match r.params.sync_ms {
                Some(ms) => lines
                    .entry((r.replicas, r.params.family.clone()))
                    .or_default()
                    .push((ms as f64, harm(name), cost(name))),
                None => levels.push((name.clone(), harm(name), cost(name))),
            }
        }
        let swept = |p: &Vec<(f64, f64, f64)>| p.iter().any(|q| q.0 != p[0].0);
        if !lines.values().any(swept) {
            return None;
        }
        let xs: Vec<f64> = lines.values().flatten().map(|p| p.0).collect();
        let x_range = (
            xs.iter().copied().fold(f64::INFINITY, f64::min),
            xs.iter().copied().fold(0.0, f64::max),
        );
        let families: Vec<&str> = lines.keys().map(|k| k.1.as_str()).collect();
        let one_family = families.windows(2).all(|w| w[0] == w[1]);
        let label = |(n, fam): &(usize, String)| {
            if one_family {
                format!("{n} replicas")
            } else {
                format!("{n} replicas, {fam}")
            }
        };
        // Levels that are equal on a panel are one dashed line, named once,
        // without the words every fleet's name shares (the title says them).
        let all_names: Vec<&str> = reps.iter().map(|(n, _)| n.as_str()).collect();
        let everyone = shared_words(&all_names);
        for l in &mut levels {
            l.0 = without_words(&l.0, &everyone);
        }
        let level_names: Vec<&str> = levels.iter().map(|l| l.0.as_str()).collect();
        let shared = shared_words(&level_names);
        let has = |f: &str| reps.iter().any(|(n, _)| cost_of(n, f) > 0.0);
        let cost_label = match (has("store_ops_per_s"), has("messages_per_s")) {
            (true, true) => "store operations + messages /s",
            (false, true) => "messages /s",
            _ => "store operations /s",
        };
        let panel = |name: &str,
                     title: &str,
                     y: &str,
                     pick: &dyn Fn(&(f64, f64, f64)) -> f64,
                     fmt: &dyn Fn(f64) -> String| {
            let mut c = ChartSpec::new(name, title, "sync interval (ms, log scale)", y);
            c.x_log = true;
            for (k, (key, pts)) in lines.iter().enumerate() {
                let mut pts: Vec<(f64, f64)> = pts.iter().map(|p| (p.0, pick(p))).collect();
                pts.sort_by(|a, b| a.0.total_cmp(&b.0));
                c.series.push(
                    Series::new(label(key), pts, SeriesStyle::Line)
                        .color(LINE_COLORS[k % LINE_COLORS.len()]),
                );
            }
            let mut drawn: Vec<(f64, Vec<String>)> = Vec::new();
            for (n, h, co) in &levels {
                let v = pick(&(0.0, *h, *co));
                let short = without_words(n, &shared);
                match drawn
                    .iter_mut()
                    .find(|d| (d.0 - v).abs() <= 1e-9 * v.abs().max(1.0))
                {
                    Some(d) => d.1.push(short),
                    None => drawn.push((v, vec![short])),
                }
            }
            for (v, names) in drawn {
                let who = match (names.len(), shared.is_empty()) {
                    (1, _) | (_, true) => names.join(" = "),
                    _ => format!("{shared} ({})", names.join(" = ")),
                };
                let mut s = Series::new(
                    format!("{who}: {}", fmt(v)),
                    vec![(x_range.0, v), (x_range.1, v)],
                    SeriesStyle::Dashed,
                );
                s.color = Some(6);
                c.series.push(s);
            }
            c
        };
        let excess = panel(
            "panel-0",
            "Excess: grows with the interval",
            "limited keys' excess (%)",
            &|p| p.1,
            &|v| pct_scaled(v),
        );
        let mut spend = panel(
            "panel-1",
            "Cost: barely falls",
            cost_label,
            &|p| p.2,
            &|v| format!("{v:.0}/s"),
        );
        // The cost from 0, so a small saving reads as small.
        let top = spend
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.1))
            .fold(0.0, f64::max);
        spend.y_range = Some((0.0, top * 1.1));
        spend.y_note = "from 0, so the saving reads at its size".to_string();
        let names: Vec<&str> = reps.iter().map(|(n, _)| n.as_str()).collect();
        let title = format!(
            "Syncing less often: excess against what it saves{}",
            all_note(&shared_words(&names))
        );
        let caption = format!("Left: how much more than the fleet-wide exact sliding log the limited keys get, against the sync interval (log scale), a line per replica count; right: what the fleet costs ({cost_label}) at each interval, from 0. The fleets that do not sync periodically are the dashed levels, named with their value. Each candidate's excess is here, so the report has no separate dot plot of it.");
        Some((title, caption, vec![excess, spend]))
    }

    /// Around the first scale event, the fleet's admitted requests per
    /// second beyond the fleet-wide exact sliding log's (admitted per
    /// second when the run kept no exact count), a line per fleet in
    /// distinct colours, each named with its mean level before and after
    /// the event; when some fleets stay far below the others, a second
    /// panel zooms on them so their difference shows. None without a
    /// scale event.
    pub(super) fn scale_event_chart(
        &self,
    ) -> Option<(&'static str, String, &'static str, Vec<ChartSpec>)> {
        let reps: Vec<(String, FleetReport)> = self
            .fleets
            .iter()
            .filter_map(|(n, r)| r.lock().ok().map(|r| (n.clone(), r.clone())))
            .collect();
        let &(at, m) = reps.iter().find_map(|(_, r)| r.scale_events.first())?;
        let at_s = at as f64 / SECOND as f64;
        let (lo, hi) = (at_s - 30.0, at_s + 30.0);
        let names: Vec<&str> = reps.iter().map(|(n, _)| n.as_str()).collect();
        let shared = shared_words(&names);
        let exact = reps
            .iter()
            .map(|(_, r)| &r.exact_per_s)
            .find(|x| !x.is_empty())
            .cloned();
        let lines: Vec<(String, Vec<(f64, f64)>)> = reps
            .iter()
            .map(|(name, r)| {
                let pts: Vec<(f64, f64)> = r
                    .admitted_per_s
                    .iter()
                    .enumerate()
                    .map(|(i, &v)| {
                        let x = exact.as_ref().map_or(0, |e| e.get(i).copied().unwrap_or(0));
                        (i as f64 + 0.5, v as f64 - x as f64)
                    })
                    .filter(|p| p.0 >= lo && p.0 <= hi)
                    .collect();
                (name.clone(), pts)
            })
            .filter(|l| !l.1.is_empty())
            .collect();
        if lines.is_empty() {
            return None;
        }
        let short = distinct_words(&lines.iter().map(|l| l.0.as_str()).collect::<Vec<_>>());
        let mean = |pts: &[(f64, f64)], after: bool| {
            let v: Vec<f64> = pts
                .iter()
                .filter(|p| (p.0 >= at_s) == after)
                .map(|p| p.1)
                .collect();
            v.iter().sum::<f64>() / v.len().max(1) as f64
        };
        let signed = |v: f64| {
            let sign = if v < -0.5 {
                "\u{2212}"
            } else if exact.is_some() {
                "+"
            } else {
                ""
            };
            format!("{sign}{:.0}", v.abs())
        };
        let reach = |pts: &[(f64, f64)]| pts.iter().map(|p| p.1.abs()).fold(0.0, f64::max);
        let widest = lines.iter().map(|l| reach(&l.1)).fold(0.0, f64::max);
        // Fleets within a fifth of the widest reach: drawn again, zoomed.
        let near: Vec<usize> = (0..lines.len())
            .filter(|&k| reach(&lines[k].1) <= 0.2 * widest)
            .collect();
        let zoom = !near.is_empty() && near.len() < lines.len();
        let y = if exact.is_some() {
            "beyond the exact limit (/s)"
        } else {
            "admitted by the fleet (/s)"
        };
        let panel = |k: usize, title: String, which: &[usize]| {
            let mut c = ChartSpec::new(format!("panel-{k}"), title, "time (s)", y);
            c.vlines.push((at_s, format!("scale to {m}")));
            c.x_range = Some((lo, hi));
            for &i in which {
                let (name, pts) = (&short[i], &lines[i].1);
                let (b, a) = (mean(pts, false), mean(pts, true));
                c.series.push(
                    Series::new(
                        format!("{name}: {}/s before, {}/s after", signed(b), signed(a)),
                        pts.clone(),
                        SeriesStyle::Line,
                    )
                    .color(LINE_COLORS[i % LINE_COLORS.len()]),
                );
            }
            // Head room over the lines for the legend (a row a line).
            let ys = which.iter().flat_map(|&i| lines[i].1.iter().map(|p| p.1));
            let (y0, y1) = ys.fold((f64::INFINITY, f64::NEG_INFINITY), |a, y| {
                (a.0.min(y), a.1.max(y))
            });
            let share = (0.2 + 0.08 * which.len() as f64).min(0.6);
            let span = (y1 - y0).max(1.0);
            c.y_range = Some((y0 - 0.05 * span, y1 + span * share / (1.0 - share)));
            c.y_note = "head room above the lines for the legend".to_string();
            c
        };
        let far: Vec<usize> = (0..lines.len())
            .filter(|k| !zoom || !near.contains(k))
            .collect();
        let mut panels = vec![panel(
            0,
            if zoom {
                "The fleets far above the exact limit".into()
            } else {
                String::new()
            },
            &far,
        )];
        if zoom {
            panels.push(panel(
                1,
                "The fleets near the exact limit, on their own scale".into(),
                &near,
            ));
        }
        let title = format!(
            "{} around the scale to {m} replicas{}",
            if exact.is_some() {
                "Admitted per second beyond the exact limit"
            } else {
                "Admitted per second"
            },
            all_note(&shared)
        );
        let caption = if exact.is_some() {
            "Each line one fleet, 30 s either side of the first scale event (the vertical line): the requests it admitted each second minus the fleet-wide exact sliding log's, each named with its mean level before and after the event (0: the exact limit); the fleets within a fifth of the farthest one's reach are drawn in the lower panel on their own scale, where a divided limit that is not re-divided shows its extra admissions after the scale."
        } else {
            "Each line one fleet, 30 s either side of the first scale event (the vertical line), each named with its mean level before and after the event: a divided limit that re-divides drops at once; one that does not admits more per replica added."
        };
        Some(("scale_event_timeline", title, caption, panels))
    }
}

/// Fleet names cut to what tells them apart on one chart: the words
/// every name shares, and those that half the names or more share beside
/// their first (the strategy, kept), go; the names as they were if that
/// would make two alike.
fn distinct_words(names: &[&str]) -> Vec<String> {
    let n = names.len();
    let count = |w: &str| {
        names
            .iter()
            .filter(|m| m.split(' ').any(|x| x == w))
            .count()
    };
    let cut: Vec<String> = names
        .iter()
        .map(|m| {
            m.split(' ')
                .enumerate()
                .filter(|(k, w)| *k == 0 || 2 * count(w) < n)
                .map(|(_, w)| w)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    let mut sorted = cut.clone();
    sorted.sort();
    sorted.dedup();
    if sorted.len() == n && n > 2 {
        cut
    } else {
        names.iter().map(|m| m.to_string()).collect()
    }
}
