//! A fleet's lead chart: harm against what the fleet costs. A fleet's
//! cost is not its memory but the work its coordination takes: commands
//! on the shared store, messages on the network, latency added before a
//! decision, and, for a balancer that pins keys, a busiest replica that
//! takes more than its share. One panel per cost the fleets differ in,
//! limited excess on a y axis the panels share.

use super::charts::{at_edge, policy_note, shared_of, signed_pct, zoom_range};
use super::*;
use crate::report::chart::style::{size, text_width};
use crate::report::chart::{render_grid, Chart};
use crate::report::Output;

/// The costs a fleet's report states, in panel order: (what the x axis
/// says, the smallest difference between fleets worth a panel).
const COSTS: [(&str, f64); 4] = [
    ("store operations per second", 0.02),
    ("messages per second", 0.02),
    ("latency added before a decision (ms per request)", 0.02),
    ("busiest replica's requests (× an even share)", 0.05),
];

/// One fleet: its candidate, its harm (limited excess %, compliant
/// denied %) and its costs in [`COSTS`] order.
struct Fleet {
    cand: usize,
    excess: f64,
    denied: f64,
    costs: [f64; 4],
}

/// The fleets' costs from `report.json`'s `fleet` entries (matched to
/// the candidates by name): store operations, messages, added latency,
/// and the busiest replica's requests over an even share (requests /
/// replicas at the start).
fn fleets(lab: &Lab, cands: &[Candidate], json: &Value) -> Vec<Fleet> {
    let hs = harms(lab, cands);
    let entries = json["fleet"].as_array().cloned().unwrap_or_default();
    cands
        .iter()
        .enumerate()
        .filter_map(|(i, cd)| {
            let e = entries
                .iter()
                .find(|e| e["algorithm"] == cd.name.as_str())?;
            let f = |k: &str| e[k].as_f64().unwrap_or(0.0);
            let reqs: Vec<f64> = e["per_replica"]
                .as_array()
                .map(|a| a.iter().filter_map(|r| r["requests"].as_f64()).collect())
                .unwrap_or_default();
            let total: f64 = reqs.iter().sum();
            let busiest = reqs.iter().copied().fold(0.0, f64::max);
            let load = if total > 0.0 {
                busiest / total * f("replicas").max(1.0)
            } else {
                1.0
            };
            Some(Fleet {
                cand: i,
                excess: hs[i].0,
                denied: hs[i].1,
                costs: [
                    f("store_ops_per_s"),
                    f("messages_per_s"),
                    f("added_latency_ms_per_request"),
                    load,
                ],
            })
        })
        .collect()
}

/// Whether the fleets differ in cost `k` by more than its threshold (of
/// the largest, for the rates; absolute, for the load, which is 1 when
/// even).
fn differs(fs: &[Fleet], k: usize) -> bool {
    let (lo, hi) = fs
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), f| {
            (a.min(f.costs[k]), b.max(f.costs[k]))
        });
    let tol = COSTS[k].1;
    if k == 3 {
        hi - lo > tol
    } else {
        hi > 0.0 && hi - lo > tol * hi
    }
}

/// Groups of fleets whose markers would overlap in a panel (within 1.2%
/// of the x span and `near_y` of the y span of each other: about a
/// marker's width), each group in candidate order: one label lists them.
fn overlapping(pts: &[(f64, f64)], span: (f64, f64), near_y: f64) -> Vec<Vec<usize>> {
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for (i, p) in pts.iter().enumerate() {
        let near = |q: &(f64, f64)| {
            (p.0 - q.0).abs() <= 0.012 * span.0 && (p.1 - q.1).abs() <= near_y * span.1
        };
        match groups.iter_mut().find(|g| g.iter().any(|&j| near(&pts[j]))) {
            Some(g) => g.push(i),
            None => groups.push(vec![i]),
        }
    }
    groups
}

/// A strategy's fleets that differ in one setting only (`sync_ms=20`,
/// `sync_ms=50`, …; three or more), in the setting's order: drawn as a
/// line through the sweep.
struct Sweep {
    kind: usize,
    members: Vec<usize>,
    /// Each member's `key=value` word.
    setting: Vec<String>,
}

/// A line of a sweep being gathered: the words its fleets share besides
/// the setting, and each fleet with its `key=value`.
type Line<'a> = (Vec<&'a str>, Vec<(usize, String)>);

/// The sweeps among fleets of strategy `kind[j]` whose labels are
/// `rest[j]` (what sets each apart from its strategy's other fleets).
fn sweeps(kind: &[usize], rest: &[String]) -> Vec<Sweep> {
    let words = |j: usize| {
        rest[j]
            .split(' ')
            .filter(|w| !w.is_empty())
            .collect::<Vec<_>>()
    };
    let mut out: Vec<Sweep> = Vec::new();
    let kinds = kind.iter().copied().max().map_or(0, |m| m + 1);
    for ki in 0..kinds {
        let mine: Vec<usize> = (0..kind.len()).filter(|&j| kind[j] == ki).collect();
        // The first `key=` of the strategy with two values or more.
        let mut keys: Vec<&str> = Vec::new();
        for &j in &mine {
            for w in words(j) {
                match w.split_once('=') {
                    Some((k, _)) if !keys.contains(&k) => keys.push(k),
                    _ => {}
                }
            }
        }
        let Some(key) = keys.into_iter().find(|k| {
            let mut vals: Vec<&str> = mine
                .iter()
                .flat_map(|&j| words(j))
                .filter_map(|w| w.strip_prefix(k).and_then(|v| v.strip_prefix('=')))
                .collect();
            vals.sort_unstable();
            vals.dedup();
            vals.len() >= 2
        }) else {
            continue;
        };
        // One line per the rest of the words, through the key's values.
        let mut lines: Vec<Line<'_>> = Vec::new();
        for &j in &mine {
            let ws = words(j);
            let Some(set) = ws
                .iter()
                .find(|w| w.split_once('=').is_some_and(|(k, _)| k == key))
            else {
                continue;
            };
            let others: Vec<&str> = ws.iter().copied().filter(|w| w != set).collect();
            match lines.iter_mut().find(|l| l.0 == others) {
                Some(l) => l.1.push((j, set.to_string())),
                None => lines.push((others, vec![(j, set.to_string())])),
            }
        }
        for (_, mut m) in lines.into_iter().filter(|l| l.1.len() >= 3) {
            let value = |s: &str| {
                s.split_once('=')
                    .and_then(|(_, v)| v.parse::<f64>().ok())
                    .unwrap_or(f64::NAN)
            };
            m.sort_by(|a, b| value(&a.1).total_cmp(&value(&b.1)).then(a.0.cmp(&b.0)));
            out.push(Sweep {
                kind: ki,
                members: m.iter().map(|p| p.0).collect(),
                setting: m.into_iter().map(|p| p.1).collect(),
            });
        }
    }
    out
}

/// Names of overlapping fleets as one label: the words they share once,
/// then what differs (`divided rounding=ceil: ring_hash = maglev`).
fn joined(names: &[String]) -> String {
    if names.len() < 2 {
        return names.first().cloned().unwrap_or_default();
    }
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let shared = shared_words(&refs);
    let rest: Vec<String> = names.iter().map(|n| without_words(n, &shared)).collect();
    if shared.is_empty() {
        rest.join(" = ")
    } else {
        format!("{shared}: {}", rest.join(" = "))
    }
}

/// The chart of harm against the fleets' costs, when they differ in one
/// (None: every fleet costs the same, and memory or harm say the rest).
pub(super) fn cost_spec(
    lab: &Lab,
    cands: &[Candidate],
    json: &Value,
) -> Option<(String, String, Vec<ChartSpec>)> {
    let fs = fleets(lab, cands, json);
    let drawn: Vec<usize> = (0..COSTS.len()).filter(|&k| differs(&fs, k)).collect();
    if fs.len() < 2 || drawn.is_empty() {
        return None;
    }
    let looks = family_looks(lab, cands);
    let (shared, short) = shared_of(cands);
    let ys: Vec<f64> = fs.iter().map(|f| f.excess).collect();
    let zoom = zoom_range(&ys);
    let (ylo, yhi) = match zoom {
        Some(r) => r,
        None => {
            let lo = ys.iter().copied().fold(0.0, f64::min);
            let hi = ys.iter().copied().fold(0.0, f64::max);
            let pad = 0.08 * (hi - lo).max(1.0);
            (lo - pad, hi + pad)
        }
    };
    // Each fleet's strategy (its colour and marker, named in the legend)
    // and what tells it from the strategy's other fleets (its label).
    let full: Vec<String> = fs.iter().map(|f| short(&cands[f.cand].name)).collect();
    let mut kinds: Vec<(String, FamilyLook)> = Vec::new();
    let mut kind = Vec::new();
    for f in &fs {
        let look = looks[f.cand];
        match kinds.iter().position(|k| k.1 == look) {
            Some(k) => kind.push(k),
            None => {
                kind.push(kinds.len());
                kinds.push((String::new(), look));
            }
        }
    }
    let mut rest = full.clone();
    for (ki, k) in kinds.iter_mut().enumerate() {
        let mine: Vec<usize> = (0..fs.len()).filter(|&j| kind[j] == ki).collect();
        if let [one] = mine[..] {
            k.0 = full[one].clone();
            rest[one] = String::new();
            continue;
        }
        let names: Vec<&str> = mine.iter().map(|&j| full[j].as_str()).collect();
        k.0 = shared_words(&names);
        if k.0.is_empty() {
            k.0 = short(&colour_key(&cands[fs[mine[0]].cand], true));
        }
        for &j in &mine {
            rest[j] = without_words(&full[j], &k.0);
        }
    }
    let sweeps = sweeps(&kind, &rest);
    let on_line: Vec<Option<usize>> = (0..fs.len())
        .map(|j| sweeps.iter().position(|l| l.members.contains(&j)))
        .collect();
    // The strategies in a legend when it fits: on one panel, beside it;
    // on several, one row above them all (every panel's legend the same).
    // Else each point names its fleet in full.
    let row: f64 = kinds
        .iter()
        .map(|k| k.0.as_str())
        .chain(["exact limiter (0)"])
        .map(|l| 36.0 + text_width(l, size::LEGEND) + 18.0)
        .sum();
    let legend = drawn.len() == 1 || row <= 920.0;
    let mut off = 0usize;
    let mut panels = Vec::new();
    for (pi, &k) in drawn.iter().enumerate() {
        let mut c = ChartSpec::new(
            format!("harm_vs_cost_{k}"),
            "",
            COSTS[k].0,
            "limited excess (%)",
        );
        c.y_range = Some((ylo, yhi));
        let xs: Vec<f64> = fs.iter().map(|f| f.costs[k]).collect();
        let xlo = if k == 3 { 1.0 } else { 0.0 };
        let xhi = xs.iter().copied().fold(xlo, f64::max);
        let xspan = (xhi - xlo).max(1e-9);
        c.x_range = Some((xlo - 0.04 * xspan, xhi + 0.12 * xspan));
        if k == 3 {
            // The ratio's reference: every replica its share.
            c.vlines.push((1.0, "even share".into()));
        }
        let pts: Vec<(f64, f64)> = fs
            .iter()
            .map(|f| (f.costs[k], at_edge(zoom, f.excess).0))
            .collect();
        // A marker is about 2% of a whole canvas' plot height, 4.5% of a
        // panel's.
        let near_y = if drawn.len() == 1 { 0.02 } else { 0.045 };
        // Points on a sweep's line keep their place (the line joins them).
        let loose: Vec<usize> = (0..fs.len()).filter(|&j| on_line[j].is_none()).collect();
        let loose_pts: Vec<(f64, f64)> = loose.iter().map(|&j| pts[j]).collect();
        let groups: Vec<Vec<usize>> = overlapping(&loose_pts, (xspan, yhi - ylo), near_y)
            .into_iter()
            .map(|g| g.into_iter().map(|i| loose[i]).collect())
            .collect();
        // Overlapping fleets are one point (at their mean, less than a
        // marker's width from each) with one label listing them: apart,
        // no label could sit beside one without touching the others.
        let mut at = pts.clone();
        let mut labels = vec![String::new(); fs.len()];
        for g in &groups {
            let n = g.len() as f64;
            let mean = (
                g.iter().map(|&j| pts[j].0).sum::<f64>() / n,
                g.iter().map(|&j| pts[j].1).sum::<f64>() / n,
            );
            for &j in g {
                at[j] = mean;
            }
            let one_kind = g.iter().all(|&j| kind[j] == kind[g[0]]);
            // Each fleet's own notes beside its name: off the axis, or
            // denying compliant requests.
            let note = |j: usize| {
                let f = &fs[j];
                let mut n = Vec::new();
                if at_edge(zoom, f.excess).1 {
                    n.push(signed_pct(f.excess));
                }
                if f.denied > 0.0 {
                    n.push(format!("{} compliant denied", fmt_pct(f.denied)));
                }
                n.join(", ")
            };
            if pi == 0 {
                off += g.iter().filter(|&&j| at_edge(zoom, fs[j].excess).1).count();
            }
            let names: Vec<String> = g
                .iter()
                .map(|&j| {
                    let name = if one_kind && legend {
                        rest[j].clone()
                    } else {
                        full[j].clone()
                    };
                    match (g.len(), name.is_empty(), note(j)) {
                        (_, _, n) if n.is_empty() => name,
                        (1, true, n) => n,
                        (1, false, n) => format!("{name}: {n}"),
                        (_, _, n) => format!("{name} ({n})"),
                    }
                })
                .collect();
            labels[g[0]] = joined(&names);
        }
        // A sweep's points: its ends named (the first in full, the last by
        // its setting), the ones between only by a note of their own.
        for l in &sweeps {
            let n = l.members.len();
            for (p, &j) in l.members.iter().enumerate() {
                // Three points are all named; more, the ends.
                let name = match p {
                    0 => rest[j].clone(),
                    _ if p == n - 1 || n == 3 => l.setting[p].clone(),
                    _ => String::new(),
                };
                let f = &fs[j];
                let mut notes = Vec::new();
                if at_edge(zoom, f.excess).1 {
                    notes.push(signed_pct(f.excess));
                    if pi == 0 {
                        off += 1;
                    }
                }
                if f.denied > 0.0 {
                    notes.push(format!("{} compliant denied", fmt_pct(f.denied)));
                }
                labels[j] = match (name.is_empty(), notes.is_empty()) {
                    (_, true) => name,
                    (true, false) => format!("{}: {}", l.setting[p], notes.join(", ")),
                    (false, false) => format!("{name}: {}", notes.join(", ")),
                };
            }
        }
        // One series per strategy, in the order of the candidates: the
        // colour and marker of harm.png, named in the first panel's
        // legend (each point then names what is its own).
        for (ki, (kname, look)) in kinds.iter().enumerate() {
            let loose: Vec<usize> = (0..fs.len())
                .filter(|&j| kind[j] == ki && on_line[j].is_none())
                .collect();
            let mut parts: Vec<(Vec<usize>, SeriesStyle)> = Vec::new();
            if !loose.is_empty() {
                parts.push((loose, SeriesStyle::Points));
            }
            for l in sweeps.iter().filter(|l| l.kind == ki) {
                parts.push((l.members.clone(), SeriesStyle::LinePoints));
            }
            for (n, (mine, style)) in parts.into_iter().enumerate() {
                let named = legend && n == 0;
                let mut s = Series::new(
                    if named { kname.clone() } else { String::new() },
                    mine.iter().map(|&j| at[j]).collect(),
                    style,
                );
                s.point_labels = Some(mine.iter().map(|&j| labels[j].clone()).collect());
                s.at_edge = mine
                    .iter()
                    .map(|&j| at_edge(zoom, fs[j].excess).1)
                    .collect();
                look.dress(&mut s);
                c.series.push(s);
            }
        }
        let mut zero = Series::new(
            "exact limiter (0)",
            vec![(xlo - 0.04 * xspan, 0.0), (xhi + 0.12 * xspan, 0.0)],
            SeriesStyle::Dashed,
        );
        zero.color = Some(6);
        // Drawn first: a fleet exactly at 0 sits on the line, not under it.
        c.series.insert(0, zero);
        panels.push(c);
    }
    let same: Vec<&str> = (0..COSTS.len())
        .filter(|k| !drawn.contains(k))
        .map(|k| match k {
            0 => "store operations",
            1 => "messages",
            2 => "added latency",
            _ => "load on the busiest replica",
        })
        .collect();
    let title = format!("Harm vs the fleet's cost {}", policy_note(lab, &shared));
    let caption = format!(
        "requests of limited keys admitted beyond the fleet-wide exact sliding log (% of what it admitted; 0, the dashed line, is the exact limiter; below it abusers are locked out, also harm) against what each fleet costs, one panel per cost the fleets differ in: {}. The panels share the y axis; each strategy has one colour and marker (as in `harm`), named in the legend, and each point says what sets its fleet apart from the strategy's others (balancer, setting); fleets whose points would overlap are one point named in one label, and a fleet that denies compliant requests says how many.{}{}",
        drawn.iter().map(|&k| COSTS[k].0).collect::<Vec<_>>().join("; "),
        if same.is_empty() {
            String::new()
        } else {
            format!(
                " Not drawn, the same for every fleet: {}.",
                same.join(", ")
            )
        },
        if off == 0 {
            String::new()
        } else {
            format!(
                " The y axis is zoomed to the others: {} far outside {} an arrow at its edge, labelled with {} true value.",
                if off == 1 { "one fleet" } else { "fleets" },
                if off == 1 { "is" } else { "are" },
                if off == 1 { "its" } else { "their" },
            )
        }
    );
    Some((title, caption, panels))
}

/// Adds the fleets' cost chart to a finished report, first among its
/// charts (where a single limiter's harm against memory leads), its
/// caption first in table.md's list of charts.
pub(crate) fn add_cost_chart(lab: &Lab, cands: &[Candidate], out: &mut Output) -> Result<()> {
    let Some((title, caption, panels)) = cost_spec(lab, cands, &out.json) else {
        return Ok(());
    };
    let chart: Chart = render_grid("harm_vs_cost", &title, &caption, &panels, 1)?;
    let line = format!("- `{}`: {}\n", chart.name, chart.caption);
    const HEAD: &str = "## Charts\n\n";
    match out.table_md.find(HEAD) {
        Some(at) => out.table_md.insert_str(at + HEAD.len(), &line),
        None => out.table_md.push_str(&format!("\n{HEAD}{line}")),
    }
    out.charts.insert(0, chart);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn a_setting_swept_three_times_is_a_line_per_the_other_words() {
        // Two replica counts through three intervals, and a loose fleet.
        let rest = s(&[
            "sync_ms=500 x4",
            "sync_ms=20 x4",
            "sync_ms=100 x4",
            "sync_ms=20 x16",
            "sync_ms=100 x16",
            "sync_ms=500 x16",
            "",
        ]);
        let kind = [0, 0, 0, 0, 0, 0, 1];
        let lines = sweeps(&kind, &rest);
        assert_eq!(lines.len(), 2);
        // In the setting's numeric order, not the text's (100 < 20 < 500).
        assert_eq!(lines[0].members, [1, 2, 0]);
        assert_eq!(
            lines[0].setting,
            s(&["sync_ms=20", "sync_ms=100", "sync_ms=500"])
        );
        assert_eq!(lines[1].members, [3, 4, 5]);
        // Two values are two points, not a line.
        assert!(sweeps(&[0, 0], &s(&["skew=1", "skew=2"])).is_empty());
        // Fleets differing in no setting: no line.
        assert!(sweeps(&[0, 0, 0], &s(&["a", "b", "c"])).is_empty());
    }

    #[test]
    fn markers_within_a_markers_width_are_one_group_and_others_not() {
        let pts = [(0.0, 10.0), (0.005, 10.2), (0.5, 10.0), (0.0, 60.0)];
        let g = overlapping(&pts, (1.0, 100.0), 0.02);
        assert_eq!(g, vec![vec![0, 1], vec![2], vec![3]]);
        assert_eq!(
            joined(&s(&["divided ring_hash", "divided maglev"])),
            "divided: ring_hash = maglev"
        );
        assert_eq!(joined(&s(&["a", "b"])), "a = b");
    }

    #[test]
    fn a_cost_is_drawn_only_where_the_fleets_differ_in_it() {
        let fleet = |costs: [f64; 4]| Fleet {
            cand: 0,
            excess: 0.0,
            denied: 0.0,
            costs,
        };
        let fs = [
            fleet([0.0, 100.0, 0.0, 1.0]),
            fleet([0.0, 101.0, 0.5, 1.02]),
            fleet([0.0, 200.0, 0.0, 3.0]),
        ];
        assert!(!differs(&fs, 0), "no store anywhere");
        assert!(differs(&fs, 1) && differs(&fs, 2) && differs(&fs, 3));
        // Loads within a twentieth of an even share are even.
        assert!(!differs(&fs[..2], 3));
        // Rates within 2% of the largest are the same.
        assert!(!differs(&fs[..2], 1));
    }
}
