//! The watched key's charts: its onset (cumulative admitted requests as
//! its abuse starts) and its timeline (admitted per second), small
//! multiples with the exact limiter drawn under each panel.
//!
//! Candidates whose lines are equal over what is drawn (to within a
//! pixel of the shared y axis, and at least one request) are one line,
//! their names joined. Distinct lines that stay apart (they differ by
//! several pixels at a good share of the points, so neither hides the
//! other) share a panel, each in its family's colour and named in the
//! panel's legend, so the chart takes a few panels, not one per
//! candidate.

use super::*;

/// Columns of the small multiples.
const PANEL_COLS: usize = 2;

/// Most lines drawn in one panel.
const PANEL_LINES: usize = 3;

/// Panels the timeline may take at the bins' own width; more, and it is
/// drawn per policy interval instead (levels overlay where staircases of
/// short bins cannot).
const TIMELINE_PANELS: usize = 6;

/// Where `a` and `b` differ by more than `tol`: the indices.
fn differ(a: &[f64], b: &[f64], tol: f64) -> Vec<usize> {
    a.iter()
        .zip(b)
        .enumerate()
        .filter(|(_, (x, y))| (*x - *y).abs() > tol)
        .map(|(k, _)| k)
        .collect()
}

/// How a line compares with the exact limiter: ` (= exact)`, ` (= exact
/// but at 0.05 s)`, or nothing when it differs in more than three places.
fn exact_note(diff: &[usize], at: impl Fn(usize) -> String) -> String {
    match diff.len() {
        0 => " (= exact)".to_string(),
        1..=3 => format!(
            " (= exact but at {})",
            diff.iter().map(|&k| at(k)).collect::<Vec<_>>().join(", ")
        ),
        _ => String::new(),
    }
}

/// Colour of the candidate in every panel when each panel draws one
/// (its name is the panel's title).
const CANDIDATE: usize = 0;
/// Colour of the exact limiter's area under the candidate, and its opacity.
const EXACT: (usize, f64) = (7, 0.35);
/// Colour of the policy rate's strip (black, left to the references by
/// the families' colours), and its opacity.
const POLICY: (usize, f64) = (6, 0.45);

/// One drawn line: the candidates drawing it (equal to within the
/// tolerance over what is drawn), the first one's index, its points.
struct Line {
    names: Vec<String>,
    first: usize,
    pts: Vec<(f64, f64)>,
}

impl Line {
    fn ys(&self) -> Vec<f64> {
        self.pts.iter().map(|p| p.1).collect()
    }
    fn name(&self) -> String {
        merged_name(&self.names)
    }
}

/// A candidate's line before merging: its name, its index, its points.
type Drawn = (String, usize, Vec<(f64, f64)>);

/// The candidates' lines merged where they are equal to within `tol` at
/// every drawn point (names joined, in drawing order).
fn merge_lines(drawn: Vec<Drawn>, tol: f64) -> Vec<Line> {
    let mut lines: Vec<Line> = Vec::new();
    for (name, first, pts) in drawn {
        let ys: Vec<f64> = pts.iter().map(|p| p.1).collect();
        match lines
            .iter_mut()
            .find(|l| l.pts.len() == pts.len() && differ(&l.ys(), &ys, tol).is_empty())
        {
            Some(l) => l.names.push(name),
            None => lines.push(Line {
                names: vec![name],
                first,
                pts,
            }),
        }
    }
    lines
}

/// Whether two lines may share a panel: they differ by more than three
/// times the tolerance at 30% of the points or more, so neither runs
/// hidden under the other.
fn apart(a: &Line, b: &Line, tol: f64) -> bool {
    let n = a.pts.len().max(1);
    differ(&a.ys(), &b.ys(), 3.0 * tol).len() * 10 >= n * 3
}

/// The lines packed into panels, in order: a line joins the first panel
/// with room whose lines are all apart from it, of other colours and
/// of the same group (`group`: a fleet's strategy), else opens one.
fn pack(
    lines: &[Line],
    tol: f64,
    color: &dyn Fn(usize) -> usize,
    group: &dyn Fn(&Line) -> String,
) -> Vec<Vec<usize>> {
    // A group of one line is no group: it may share any panel of
    // lines that are not a group's either.
    let raw: Vec<String> = lines.iter().map(group).collect();
    let eff: Vec<&str> = raw
        .iter()
        .map(|g| {
            if raw.iter().filter(|h| *h == g).count() > 1 {
                g.as_str()
            } else {
                ""
            }
        })
        .collect();
    let mut panels: Vec<Vec<usize>> = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let fits = |p: &Vec<usize>| {
            p.len() < PANEL_LINES
                && p.iter()
                    .all(|&j| apart(&lines[j], l, tol) && color(j) != color(i) && eff[j] == eff[i])
        };
        match panels.iter_mut().find(|p| fits(p)) {
            Some(p) => p.push(i),
            None => panels.push(vec![i]),
        }
    }
    panels
}

/// A line's name: the candidate's, without "per key" (every line drawn
/// is a per-key limiter's; a fleet's names keep it, as its table does).
fn line_name(cands: &[Candidate], name: String) -> String {
    if fleet(cands) {
        name
    } else {
        name.replace(" per key", "")
    }
}

/// Whether the candidates are a fleet's (no model row): colours by line,
/// panels by strategy.
fn fleet(cands: &[Candidate]) -> bool {
    cands.iter().any(|c| c.model.is_empty())
}

/// A line's panel group: a fleet's strategy (the first word of its
/// name), so a panel compares balancers or intervals of one strategy;
/// none for a decision's candidates.
fn group_of(is_fleet: bool) -> impl Fn(&Line) -> String {
    move |l: &Line| {
        if is_fleet {
            l.names[0].split(' ').next().unwrap_or_default().to_string()
        } else {
            String::new()
        }
    }
}

/// The panels of lines packed several to a panel: each line in its colour,
/// named in its panel's legend with how it compares with the exact limiter;
/// a panel titled with the words its candidates' names share (a fleet's
/// strategy), or a lone line's name. `base` makes a panel's spec with its
/// axes and references; its flag says whether the references are named
/// (the first panel's legend names them for all). Also the grid's columns:
/// one when a legend names a line at length and the panels are few enough
/// to stand one a row; else two, long names cut (the caption lists them).
fn overlay_panels(
    lines: &[Line],
    packs: &[Vec<usize>],
    color: &dyn Fn(usize) -> usize,
    note: &dyn Fn(&Line) -> String,
    base: &dyn Fn(usize, String, bool) -> ChartSpec,
) -> (Vec<ChartSpec>, usize) {
    let named: Vec<(String, Vec<(String, String)>)> = packs
        .iter()
        .map(|p| {
            let all: Vec<&str> = p
                .iter()
                .flat_map(|&i| lines[i].names.iter().map(String::as_str))
                .collect();
            let shared = if p.len() > 1 {
                shared_words(&all)
            } else {
                String::new()
            };
            let labels = p
                .iter()
                .map(|&i| {
                    let names: Vec<String> = lines[i]
                        .names
                        .iter()
                        .map(|n| without_words(n, &shared))
                        .collect();
                    if p.len() == 1 {
                        ("the candidate".to_string(), note(&lines[i]))
                    } else {
                        (merged_name(&names), note(&lines[i]))
                    }
                })
                .collect();
            let title = if p.len() == 1 {
                lines[p[0]].name()
            } else {
                shared
            };
            (title, labels)
        })
        .collect();
    let long = named
        .iter()
        .flat_map(|n| n.1.iter())
        .any(|l| l.0.chars().count() + l.1.chars().count() > TWO_COLS_LABEL);
    let cols = if long && packs.len() <= ONE_COL_PANELS {
        1
    } else {
        PANEL_COLS
    };
    let panels = packs
        .iter()
        .zip(named)
        .enumerate()
        .map(|(ci, (p, (title, labels)))| {
            let mut c = base(ci, title, ci == 0);
            let most = if cols > 1 {
                TWO_COLS_LABEL
            } else {
                ONE_COL_LABEL
            };
            for (&i, (name, note)) in p.iter().zip(labels) {
                let room = most.saturating_sub(note.chars().count()).max(12);
                let label = format!("{}{note}", cut(&name, room));
                let mut s = Series::new(label, lines[i].pts.clone(), SeriesStyle::Line);
                s.color = Some(color(i));
                c.series.push(s);
            }
            c
        })
        .collect();
    (panels, cols)
}

/// Longest legend label that leaves two panels a row room for the plot.
const TWO_COLS_LABEL: usize = 45;

/// Most panels drawn one a row (about 1,240 px).
const ONE_COL_PANELS: usize = 4;

/// Longest legend label of a panel the canvas' width (the legend's own
/// limit, about 470 px).
const ONE_COL_LABEL: usize = 68;

/// A name cut at a word to `most` characters, with an ellipsis (the
/// caption lists the names in full), so what follows it (how it compares
/// with the exact limiter) stays in the legend.
fn cut(label: &str, most: usize) -> String {
    if label.chars().count() <= most {
        return label.to_string();
    }
    let mut out = String::new();
    for w in label.split(' ') {
        if out.chars().count() + w.chars().count() + 3 > most {
            break;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(w);
    }
    format!("{out} \u{2026}")
}

/// Head room over the data, as a factor of the top: a panel of several
/// lines keeps the rows of its legend (`rows`) clear of them; one line a
/// panel needs a twentieth.
fn head_room(overlaid: bool, rows: usize) -> f64 {
    if overlaid {
        let share = (0.1 + 0.08 * rows as f64).min(0.55);
        1.0 / (1.0 - share)
    } else {
        1.05
    }
}

/// Why a panel's y axis reaches above its data.
const ROOM_NOTE: &str = "head room above the lines for the legend";

/// The caption's list of the lines that are several candidates, names in
/// full (a legend may shorten them).
fn merged_list(lines: &[Line]) -> String {
    let merged: Vec<String> = lines
        .iter()
        .filter(|l| l.names.len() > 1)
        .map(|l| l.names.join(" = "))
        .collect();
    if merged.is_empty() {
        String::new()
    } else {
        format!(" Drawn as one line: {}.", merged.join("; "))
    }
}

/// One panel's exact limiter: the area under its curve, light grey, drawn
/// under the candidates, so that where they coincide a candidate's line
/// runs along its edge and where they differ both show. Unnamed
/// (`labelled` false) in panels after the first, whose legend names it.
fn exact_area(pts: &[(f64, f64)], labelled: bool) -> Band {
    let (lo, hi) = (
        pts.first().map_or(0.0, |p| p.0),
        pts.last().map_or(0.0, |p| p.0),
    );
    let mut b = Band::new(
        if labelled { "exact sliding log" } else { "" },
        vec![(lo, 0.0), (hi, 0.0)],
        pts.to_vec(),
        EXACT.0,
    );
    b.opacity = EXACT.1;
    b
}

/// The candidate of a panel, in the same colour and legend entry in every
/// panel (the grid's one legend names it).
fn candidate_line(pts: Vec<(f64, f64)>) -> Series {
    let mut s = Series::new("candidate (named over its panel)", pts, SeriesStyle::Line);
    s.color = Some(CANDIDATE);
    s
}

/// A staircase's corners: each bin's value held from its start to the
/// next bin's (the last bin drawn too).
fn staircase(r: &[f64], to_s: impl Fn(usize) -> f64) -> Vec<(f64, f64)> {
    r.iter()
        .enumerate()
        .flat_map(|(b, &v)| [(to_s(b), v), (to_s(b + 1), v)])
        .collect()
}

/// The panels of a chart: one per line, a shared legend, when no two
/// lines can share a panel; else lines packed several to a panel
/// ([`overlay_panels`]). `base(ci, title, labelled)` makes a panel with
/// its axes and references; `note` says how a line compares with the
/// exact limiter.
fn panels_for(
    lines: &[Line],
    packs: &[Vec<usize>],
    color: &dyn Fn(usize) -> usize,
    note: &dyn Fn(&Line) -> String,
    base: &dyn Fn(usize, String, bool) -> ChartSpec,
) -> (Vec<ChartSpec>, usize) {
    if packs.iter().all(|p| p.len() == 1) {
        let panels = lines
            .iter()
            .enumerate()
            .map(|(ci, l)| {
                let mut c = base(ci, format!("{}{}", l.name(), note(l)), true);
                c.series.push(candidate_line(l.pts.clone()));
                c
            })
            .collect();
        (panels, PANEL_COLS)
    } else {
        overlay_panels(lines, packs, color, note, base)
    }
}

/// A line's colour: its family's (the same on every chart of the
/// report), or for a fleet its place among the lines.
fn line_color<'a>(cands: &'a [Candidate], lines: &'a [Line]) -> impl Fn(usize) -> usize + 'a {
    move |i: usize| family_color(cands, lines[i].first, i % 6)
}

/// The watched key's admitted rate over time, small multiples: each
/// per-key family's first candidate, equal lines merged and lines apart
/// packed several to a panel, shared axes, the exact sliding log as a
/// light area under the lines, the policy rate as a dark strip. Drawn
/// at the lab's bins; when that takes more than [`TIMELINE_PANELS`]
/// panels (staircases of short bins hide each other), per policy
/// interval. What the key offered is in the title.
pub(super) fn timeline_chart(
    lab: &Lab,
    cands: &[Candidate],
    fams: &[&str],
) -> Option<Result<crate::report::Chart>> {
    let (_, from) = lab.watch()?;
    let p = &*lab.p;
    let interval = p.policy.interval_ms * MILLI;
    let lim = p.policy.limit as f64 * SECOND as f64 / interval as f64;
    let (shared, short) = shared_of(cands);
    let is_fleet = fleet(cands);
    let fine = timeline_lines(lab, cands, fams, &short, 1);
    let fine_packs = fine.pack(cands, is_fleet);
    let per = interval / lab.bin_w.max(1);
    let coarse = fine_packs.len() > TIMELINE_PANELS
        && per > 1
        && interval.is_multiple_of(lab.bin_w.max(1))
        && BINS.is_multiple_of(per);
    let (tl, packs) = if coarse {
        let tl = timeline_lines(lab, cands, fams, &short, per);
        let packs = tl.pack(cands, is_fleet);
        (tl, packs)
    } else {
        (fine, fine_packs)
    };
    let x_range = (
        tl.to_s(0),
        lab.t_lo.saturating_add(BINS.saturating_mul(lab.bin_w)) as f64 / SECOND as f64,
    );
    let overlaid = packs.iter().any(|p| p.len() > 1);
    let rows = packs.iter().map(Vec::len).max().unwrap_or(1) + 2;
    let room = head_room(overlaid, rows);
    let offered_peak = tl.offered_peak;
    let top = tl.top.max(lim);
    let bin_ms = tl.bin_w as f64 / MILLI as f64;
    let color = line_color(cands, &tl.lines);
    let exact_pts = staircase(&tl.exact, |b| tl.to_s(b));
    let exact = tl.exact.clone();
    let note = |l: &Line| {
        let ys: Vec<f64> = l.pts.iter().step_by(2).map(|p| p.1).collect();
        let diff = differ(&ys, &exact, tl.tol);
        exact_note(&diff, |k| format!("{:.2} s", tl.to_s(k)))
    };
    let y_label = if coarse {
        format!("requests/s (per {bin_ms} ms interval)")
    } else {
        format!("requests/s ({bin_ms} ms bins)")
    };
    let base = |ci: usize, title: String, labelled: bool| {
        let mut c = ChartSpec::new(format!("panel-{ci}"), title, "time (s)", y_label.clone());
        c.bands.push(exact_area(&exact_pts, labelled));
        // The policy rate as a thin strip under the lines: a line
        // admitting exactly the policy runs along it, and neither hides
        // the other.
        let half = 0.012 * top * room;
        let mut b = Band::new(
            if labelled {
                format!("policy ({lim}/s)")
            } else {
                String::new()
            },
            vec![(x_range.0, lim - half), (x_range.1, lim - half)],
            vec![(x_range.0, lim + half), (x_range.1, lim + half)],
            POLICY.0,
        );
        b.opacity = POLICY.1;
        c.bands.push(b);
        c.vlines.push((from as f64 / SECOND as f64, String::new()));
        c.x_range = Some(x_range);
        c.y_range = Some((0.0, top * room));
        if overlaid {
            c.y_note = ROOM_NOTE.to_string();
        }
        c
    };
    let (panels, cols) = panels_for(&tl.lines, &packs, &color, &note, &base);
    let merged = tl.lines.iter().any(|l| l.names.len() > 1);
    let title = format!(
        "Watched key {}: admitted requests per second (it offered up to {:.0}/s; abuse from {:.0} s, dotted{})",
        lab.watch_name().unwrap_or_default(),
        offered_peak,
        from as f64 / SECOND as f64,
        if shared.is_empty() { String::new() } else { format!("; all: {shared}") },
    );
    let tol_words = format!(
        "{:.1}/s (a pixel of the shared y axis or one request in a {bin_ms} ms {}, whichever is more)",
        tl.tol,
        if coarse { "interval" } else { "bin" }
    );
    let caption = format!(
        "requests per second of the watched key admitted by each per-key family's first candidate{}, the same axes in every panel{}{}: the lines over the exact sliding log's light grey area, so where a line runs along the area's edge the two are equal and where they part both show; the policy rate ({lim}/s) a dark strip. A line's name says when it equals the exact limiter (to within the same tolerance), or at which {} alone it differs. The dotted line is where the key's abuse starts; what it offered is in the title.{}",
        if coarse {
            format!(", counted per policy interval ({bin_ms} ms: drawn at the lab's {} ms bins the staircases would need more than {TIMELINE_PANELS} panels, since they hide each other)", lab.bin_w as f64 / MILLI as f64)
        } else {
            String::new()
        },
        if merged {
            format!("; candidates whose lines are equal over the drawn window to within {tol_words} are one line, names joined with \" = \"")
        } else {
            String::new()
        },
        if overlaid {
            "; lines that stay apart share a panel, each in its family's colour and named in its panel's legend (the first panel's legend names the references)"
        } else {
            "; one panel per line, named over it"
        },
        if coarse { "intervals" } else { "bins" },
        merged_list(&tl.lines),
    );
    Some(crate::report::chart::render_grid(
        "watched_timeline",
        &title,
        &caption,
        &panels,
        cols,
    ))
}

/// The timeline's lines at bins of `per` lab bins: merged, with what the
/// panels share.
struct Timeline {
    lines: Vec<Line>,
    exact: Vec<f64>,
    top: f64,
    tol: f64,
    offered_peak: f64,
    t_lo: Nanos,
    bin_w: Nanos,
}

impl Timeline {
    fn to_s(&self, b: usize) -> f64 {
        self.t_lo
            .saturating_add((b as u64).saturating_mul(self.bin_w)) as f64
            / SECOND as f64
    }
    fn pack(&self, cands: &[Candidate], is_fleet: bool) -> Vec<Vec<usize>> {
        let color = line_color(cands, &self.lines);
        pack(&self.lines, self.tol, &color, &group_of(is_fleet))
    }
}

/// The watched key's admitted rate per bin of `per` lab bins, each
/// per-key family's first candidate, lines equal to within a pixel (or
/// one request a bin) merged.
fn timeline_lines(
    lab: &Lab,
    cands: &[Candidate],
    fams: &[&str],
    short: &dyn Fn(&str) -> String,
    per: u64,
) -> Timeline {
    let per = per.max(1) as usize;
    let bin_w = lab.bin_w.saturating_mul(per as u64);
    let per_s = SECOND as f64 / bin_w as f64;
    let rate = |bins: &[u64]| -> Vec<f64> {
        bins.chunks(per)
            .map(|c| c.iter().sum::<u64>() as f64 * per_s)
            .collect()
    };
    let exact = rate(&lab.oracle.bins);
    let rates: Vec<(String, usize, Vec<f64>)> = picks(cands, fams)
        .into_iter()
        .map(|i| {
            (
                line_name(cands, short(&cands[i].name)),
                i,
                rate(&lab.tallies[i].bins),
            )
        })
        .collect();
    let lim = lab.p.policy.limit as f64 * SECOND as f64 / (lab.p.policy.interval_ms * MILLI) as f64;
    let top = rates
        .iter()
        .flat_map(|r| r.2.iter().copied())
        .chain(exact.iter().copied())
        .fold(lim, f64::max);
    // A pixel of a panel's y axis (about 200 px tall), at least one
    // request in a bin.
    let tol = (top * 1.05 / 200.0).max(per_s);
    let t_lo = lab.t_lo;
    let to_s =
        |b: usize| t_lo.saturating_add((b as u64).saturating_mul(bin_w)) as f64 / SECOND as f64;
    let drawn = rates
        .into_iter()
        .map(|(n, i, r)| (n, i, staircase(&r, to_s)))
        .collect();
    let offered_peak = rate(&lab.offered).into_iter().fold(0.0, f64::max);
    Timeline {
        lines: merge_lines(drawn, tol),
        exact,
        top,
        tol,
        offered_peak,
        t_lo,
        bin_w,
    }
}

/// Onset bins drawn: from a fifth of an interval before the abuse starts
/// (bin 50 is its start) to three intervals after it.
pub(super) const ONSET_DRAWN: std::ops::RangeInclusive<usize> = 40..=200;

/// The watched key's onset: cumulative admitted requests, counted from one
/// interval before its abuse starts, drawn over its first intervals, small
/// multiples: each per-key family's first candidate (each member of a
/// family swept over bursts), lines equal over the drawn window merged
/// and lines apart packed several to a panel, the exact sliding log as a
/// light area under the lines, shared axes. What it offered is in the
/// title: as a line it dwarfed the admitted ones.
pub(super) fn onset_chart(
    lab: &Lab,
    cands: &[Candidate],
    fams: &[&str],
) -> Option<Result<crate::report::Chart>> {
    let (w, start) = lab.onset()?;
    let (_, from) = lab.watch()?;
    // Saturating: a watched key whose abuse starts after the run ends still
    // gets a (flat) chart, not an overflow.
    let at = |b: usize| start.saturating_add((b as u64).saturating_mul(w));
    let to_s = |b: usize| (at(b) as f64 - from as f64) / SECOND as f64;
    let cumulative = |bins: &[u64]| -> Vec<(f64, f64)> {
        let mut sum = 0u64;
        let mut out = Vec::new();
        for b in 0..=bins.len() {
            if ONSET_DRAWN.contains(&b) {
                out.push((to_s(b), sum as f64));
            }
            if let Some(v) = bins.get(b) {
                sum += v;
            }
        }
        out
    };
    let abuse_bin = ((from - start.min(from)) / w.max(1)) as usize;
    let end = *ONSET_DRAWN.end();
    let offered: u64 = lab
        .offered_onset
        .iter()
        .take(end)
        .skip(abuse_bin.min(end))
        .sum();
    let secs = |t: Nanos| t as f64 / SECOND as f64;
    let exact = cumulative(&lab.oracle.onset);
    let (shared, short) = shared_of(cands);
    // Each per-key family's first candidate, or each member of a family
    // swept over bursts (its burst in its name).
    let mut drawn: Vec<Drawn> = Vec::new();
    for &first in &picks(cands, fams) {
        let fam = &cands[first].family;
        let swept = burst_family(cands, fam);
        let members: Vec<usize> = if swept {
            (0..cands.len())
                .filter(|&i| cands[i].family == *fam)
                .collect()
        } else {
            vec![first]
        };
        for i in members {
            let pts = cumulative(&lab.tallies[i].onset);
            let name = match burst_of(&cands[i]).filter(|_| swept) {
                Some(b) => format!("{}, burst {b}", line_name(cands, short(fam))),
                None => line_name(cands, short(&cands[i].name)),
            };
            drawn.push((name, i, pts));
        }
    }
    let top = drawn
        .iter()
        .flat_map(|p| p.2.iter().map(|q| q.1))
        .chain(exact.iter().map(|p| p.1))
        .fold(1.0, f64::max);
    // A pixel of the panels' y axis (about 200 px tall), in requests, at
    // least one request: lines closer than that are one line as drawn.
    let tol = (top * 1.05 / 200.0).max(1.0);
    let lines = merge_lines(drawn, tol);
    let color = line_color(cands, &lines);
    let is_fleet = fleet(cands);
    let packs = pack(&lines, tol, &color, &group_of(is_fleet));
    let overlaid = packs.iter().any(|p| p.len() > 1);
    let rows = packs.iter().map(Vec::len).max().unwrap_or(1) + 1;
    let room = head_room(overlaid, rows);
    let x_range = (to_s(*ONSET_DRAWN.start()), to_s(end));
    let exact_ys: Vec<f64> = exact.iter().map(|p| p.1).collect();
    let note = |l: &Line| {
        let diff = differ(&l.ys(), &exact_ys, tol);
        exact_note(&diff, |k| format!("{:.2} s", l.pts[k].0))
    };
    let base = |ci: usize, title: String, labelled: bool| {
        let mut c = ChartSpec::new(
            format!("panel-{ci}"),
            title,
            "time since the abuse started (s)",
            "admitted (cumulative)",
        );
        c.bands.push(exact_area(&exact, labelled));
        c.vlines.push((0.0, String::new()));
        c.x_range = Some(x_range);
        c.y_range = Some((0.0, top * room));
        if overlaid {
            c.y_note = ROOM_NOTE.to_string();
        }
        c
    };
    let (panels, cols) = panels_for(&lines, &packs, &color, &note, &base);
    let title = format!(
        "Watched key {}: admitted requests around its abuse start (dotted; it offered {} in the first {} s{})",
        lab.watch_name().unwrap_or_default(),
        offered,
        secs(at(end).saturating_sub(from)),
        if shared.is_empty() { String::new() } else { format!("; all: {shared}") },
    );
    let caption = format!(
        "the watched key's admitted requests, cumulative, counted from one interval before its abuse starts and drawn from a fifth of an interval before it to three intervals after (the title gives what it offered), for each per-key family's first candidate{}, the same axes in every panel; candidates whose lines are equal over the drawn window to within {tol:.1} requests (a pixel of the shared y axis, at least one request) are one line, names joined with \" = \"{}. The lines are over the exact sliding log's light grey area (where a line runs along the area's edge the two are equal): how much of the burst each limiter lets through before it settles at the policy rate. A line's name says when it equals the exact limiter to within the same tolerance, or at which points alone it differs.{}",
        if lines.iter().any(|l| l.names.iter().any(|n| n.contains(", burst "))) {
            " and each burst of a family swept over bursts"
        } else {
            ""
        },
        if overlaid {
            "; lines that stay apart share a panel, each in its family's colour and named in its panel's legend (the first panel's legend names the exact limiter)"
        } else {
            "; one panel per line, named over it"
        },
        merged_list(&lines),
    );
    Some(crate::report::chart::render_grid(
        "watched_onset",
        &title,
        &caption,
        &panels,
        cols,
    ))
}

/// Names of candidates drawing one line, joined with " = " and the words
/// they share named once, so the title fits its panel: `divided x8
/// ring_hash` and `divided x8 maglev` give `divided x8: ring_hash =
/// maglev`; a shared tail follows the joined parts (`x/time/rate =
/// governor GCRA per key`), as it does after a shared head (`central:
/// envoy = kong sync x8 round_robin`).
pub(super) fn merged_name(names: &[String]) -> String {
    if names.len() < 2 {
        return names.join(" = ");
    }
    let words: Vec<Vec<&str>> = names.iter().map(|n| n.split(' ').collect()).collect();
    let shortest = words.iter().map(Vec::len).min().unwrap_or(0);
    let shared = |at: &dyn Fn(&Vec<&str>, usize) -> String| {
        (0..shortest)
            .take_while(|&k| words.iter().all(|w| at(w, k) == at(&words[0], k)))
            .count()
    };
    let head = shared(&|w, k| w[k].to_string());
    let tail = shared(&|w, k| w[w.len() - 1 - k].to_string()).min(shortest - head);
    // Every name keeps at least one word of its own.
    let (head, tail) = if head + tail >= shortest {
        (head.min(shortest - 1), 0)
    } else {
        (head, tail)
    };
    let rest: Vec<String> = words
        .iter()
        .map(|w| w[head..w.len() - tail].join(" "))
        .collect();
    // A part that ended in a comma before the shared tail (`x, burst
    // 200`) keeps it once, before the tail: `x = y, burst 200`.
    let comma = tail > 0 && rest.iter().all(|r| r.ends_with(','));
    let rest: Vec<String> = rest
        .iter()
        .map(|r| {
            if comma {
                r.trim_end_matches(',').to_string()
            } else {
                r.clone()
            }
        })
        .collect();
    let first = &words[0];
    let (pre, post) = (
        first[..head].join(" "),
        first[first.len() - tail..].join(" "),
    );
    let joined = rest.join(" = ");
    match (pre.is_empty(), post.is_empty()) {
        (true, true) => joined,
        (false, true) => format!("{pre}: {joined}"),
        (true, false) if comma => format!("{joined}, {post}"),
        (true, false) => format!("{joined} {post}"),
        (false, false) if comma => format!("{pre}: {joined}, {post}"),
        (false, false) => format!("{pre}: {joined} {post}"),
    }
}

#[cfg(test)]
mod tests {
    use super::{merge_lines, merged_name, pack};

    fn line(name: &str, ys: &[f64]) -> super::Drawn {
        let pts = ys.iter().enumerate().map(|(k, &y)| (k as f64, y)).collect();
        (name.to_string(), 0, pts)
    }

    #[test]
    fn lines_equal_within_the_tolerance_are_one_line() {
        let lines = merge_lines(
            vec![
                line("a", &[0.0, 10.0, 20.0]),
                line("b", &[0.0, 10.5, 19.5]),
                line("c", &[0.0, 12.0, 20.0]),
            ],
            1.0,
        );
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0].names, vec!["a", "b"]);
        assert_eq!(lines[1].names, vec!["c"]);
    }

    #[test]
    fn lines_apart_share_a_panel_and_close_ones_do_not() {
        let lines = merge_lines(
            vec![
                line("flat", &[100.0; 10]),
                line("high", &[400.0; 10]),
                // differs from "flat" at one point in ten: it would run
                // hidden under it, so it gets a panel of its own
                line(
                    "flat but once",
                    &[100., 300., 100., 100., 100., 100., 100., 100., 100., 100.],
                ),
                line("mid", &[250.0; 10]),
                line("low", &[10.0; 10]),
            ],
            1.0,
        );
        let packs = pack(&lines, 1.0, &|i| i, &|_| String::new());
        // at most three to a panel, in order
        assert_eq!(packs, vec![vec![0, 1, 3], vec![2, 4]]);
        // one colour twice: not in one panel
        let packs = pack(&lines, 1.0, &|i| i % 2, &|_| String::new());
        assert!(packs.iter().all(|p| p.len() <= 2));
        // groups (a fleet's strategies) never share a panel
        let group = |l: &super::Line| (l.names[0] == "high" || l.names[0] == "low").to_string();
        let packs = pack(&lines, 1.0, &|i| i, &group);
        assert_eq!(packs, vec![vec![0, 3], vec![1, 4], vec![2]]);
        // a group of one line is none: all lines are free to share
        let alone = |l: &super::Line| l.names[0].clone();
        let packs = pack(&lines, 1.0, &|i| i, &alone);
        assert_eq!(packs, vec![vec![0, 1, 3], vec![2, 4]]);
    }

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn merged_names_share_their_common_words_once() {
        assert_eq!(merged_name(&s(&["a b"])), "a b");
        assert_eq!(
            merged_name(&s(&["div x8 ring", "div x8 maglev"])),
            "div x8: ring = maglev"
        );
        assert_eq!(
            merged_name(&s(&["c envoy x8 rr", "c kong sync x8 rr"])),
            "c: envoy = kong sync x8 rr"
        );
        assert_eq!(
            merged_name(&s(&["x/time/rate per key", "governor GCRA per key"])),
            "x/time/rate = governor GCRA per key"
        );
        assert_eq!(merged_name(&s(&["a x", "b y"])), "a x = b y");
        assert_eq!(
            merged_name(&s(&["x/time/rate, burst 200", "governor GCRA, burst 200"])),
            "x/time/rate = governor GCRA, burst 200"
        );
        // A name that is all shared words keeps its last word.
        assert_eq!(merged_name(&s(&["a b", "a b c"])), "a: b = b c");
    }
}
