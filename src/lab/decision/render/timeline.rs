//! The watched key's charts: its onset (cumulative admitted requests as
//! its abuse starts) and its timeline (admitted per second), small
//! multiples with the exact limiter drawn under each panel. This file
//! turns the run's bins into each chart's lines, axes, title and caption;
//! merging the lines and packing them into panels is `panels`.

use super::*;

/// Panels the timeline may take at the bins' own width; more, and it is
/// drawn per policy interval instead (levels overlay where staircases of
/// short bins cannot).
const TIMELINE_PANELS: usize = 6;

/// Colour of the policy rate's strip (black, left to the references by
/// the families' colours), and its opacity.
const POLICY: (usize, f64) = (6, 0.45);

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
