//! The decision report's charts: memory against harm per family, the
//! timeline of admitted requests, the harm grid (compliant denied against
//! limited excess, with its frontier) and the watched key's onset.

use super::*;

/// The candidates' families in order of first appearance.
pub(super) fn families(cands: &[Candidate]) -> Vec<&str> {
    let mut fams: Vec<&str> = Vec::new();
    for cd in cands {
        if !fams.contains(&cd.family.as_str()) {
            fams.push(&cd.family);
        }
    }
    fams
}

/// Wrong decisions against memory, one series per family.
pub(super) fn memory_chart(
    lab: &Lab,
    cands: &[Candidate],
    mems: &[u64],
    fams: &[&str],
) -> ChartSpec {
    let p = lab.p;
    let mut mem = ChartSpec::new(
        "wrong_vs_memory",
        format!(
            "Wrong decisions vs memory ({} per key per {} ms)",
            p.policy.limit, p.policy.interval_ms
        ),
        "memory (bytes, log scale)",
        "wrong decisions (% of requests, log scale)",
    );
    mem.caption =
        "wrong decisions (% of requests, vs the sliding log) against memory, log-log.".into();
    mem.x_log = true;
    mem.y_log = true;
    mem.log_floor = 1e-5;
    mem.legend = Legend::UpperRight;
    for (fi, fam) in fams.iter().enumerate() {
        let mut pts: Vec<(f64, f64, String)> = cands
            .iter()
            .zip(&lab.tallies)
            .zip(mems)
            .filter(|((cd, _), _)| cd.family == *fam)
            .map(|((cd, t), &m)| {
                let label = cd.name.strip_prefix(fam).unwrap_or("").trim().to_string();
                (
                    (m.max(1)) as f64,
                    pct(t.false_allow + t.false_deny, lab.requests),
                    label,
                )
            })
            .collect();
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        let style = if pts.len() > 1 {
            SeriesStyle::LinePoints
        } else {
            SeriesStyle::Points
        };
        let mut s = Series::new(*fam, pts.iter().map(|x| (x.0, x.1)).collect(), style);
        if pts.len() > 1 {
            s.point_labels = Some(pts.iter().map(|x| format!(" {}", x.2)).collect());
        }
        s.color = Some(fi);
        mem.series.push(s);
    }
    mem
}

/// The watched key's admitted rate over time: offered, the truth, the first
/// candidate of each per-key family, and the policy rate.
pub(super) fn timeline_chart(lab: &Lab, cands: &[Candidate], fams: &[&str]) -> Option<ChartSpec> {
    let (_, from) = lab.watch()?;
    let p = lab.p;
    let to_s = |b: usize| {
        lab.t_lo
            .saturating_add((b as u64).saturating_mul(lab.bin_w)) as f64
            / SECOND as f64
    };
    let per_s = SECOND as f64 / lab.bin_w as f64;
    let series_of = |bins: &[u64]| -> Vec<(f64, f64)> {
        bins.iter()
            .enumerate()
            .map(|(b, &v)| (to_s(b), v as f64 * per_s))
            .collect()
    };
    let mut tl = ChartSpec::new(
        "watched_timeline",
        format!(
            "Watched key {}: admitted requests per second",
            lab.watch_name().unwrap_or_default()
        ),
        "time (s)",
        format!("requests/s in {} ms bins", lab.bin_w as f64 / MILLI as f64),
    );
    tl.caption = "requests per second of the watched key admitted by each algorithm, against what was offered and what the exact sliding log admitted.".into();
    tl.vlines
        .push((from as f64 / SECOND as f64, "abuse starts".into()));
    let mut s = Series::new("offered", series_of(&lab.offered), SeriesStyle::Step);
    s.color = Some(7);
    tl.series.push(s);
    let mut s = Series::new(
        "exact sliding log (truth)",
        series_of(&lab.oracle.bins),
        SeriesStyle::Step,
    );
    s.color = Some(0);
    tl.series.push(s);
    let picks = fams
        .iter()
        .filter(|fam| !fam.contains("global"))
        .filter_map(|fam| cands.iter().position(|cd| cd.family == *fam));
    for (ci, i) in picks.enumerate() {
        let mut s = Series::new(
            cands[i].name.clone(),
            series_of(&lab.tallies[i].bins),
            SeriesStyle::Step,
        );
        s.color = Some(ci + 1);
        tl.series.push(s);
    }
    let lim = p.policy.limit as f64 * SECOND as f64 / (p.policy.interval_ms * MILLI) as f64;
    let mut s = Series::new(
        format!("policy rate ({lim} /s)"),
        vec![(to_s(0), lim), (to_s(BINS as usize), lim)],
        SeriesStyle::Dashed,
    );
    s.color = Some(6);
    tl.series.push(s);
    Some(tl)
}

/// Harm: compliant denied % against limited excess %, one point per
/// candidate, and the Pareto frontier (lower left is better on both). A
/// candidate far outside the others on x (Cloudflare's window with denied
/// requests counted locks abusers out at about -70%) would squeeze the rest
/// into a few pixels: the axis is zoomed to the others and it is drawn at
/// the axis edge as its own series, its name and true value beside it.
pub(super) fn harm_chart(lab: &Lab, cands: &[Candidate]) -> ChartSpec {
    let p = lab.p;
    let mut c = ChartSpec::new(
        "harm",
        format!(
            "Harm per candidate ({} per key per {} ms)",
            p.policy.limit, p.policy.interval_ms
        ),
        "limited keys: admitted beyond the exact limiter (% of what it admitted)",
        "compliant keys: requests denied (%, log scale)",
    );
    c.y_log = true;
    c.log_floor = 1e-4;
    let pts: Vec<(f64, f64, &str)> = cands
        .iter()
        .zip(&lab.tallies)
        .map(|(cd, t)| {
            let h = harm(lab, t);
            (
                excess_pct(&h),
                pct(h.compliant_denied, h.compliant_requests),
                cd.name.as_str(),
            )
        })
        .filter(|pt| pt.1 <= 50.0)
        .collect();
    let xs: Vec<f64> = pts.iter().map(|x| x.0).collect();
    let zoom = zoom_range(&xs);
    // Where a point is drawn: clipped ones just inside the edge they pass.
    let drawn = |x: f64| match zoom {
        Some((lo, hi)) if x < lo || x > hi => {
            let inset = 0.02 * (hi - lo);
            if x < lo {
                lo + inset
            } else {
                hi - inset
            }
        }
        _ => x,
    };
    let clipped = |x: f64| zoom.is_some_and(|(lo, hi)| x < lo || x > hi);
    let mut sorted: Vec<(f64, f64)> = pts.iter().map(|x| (x.0, x.1)).collect();
    sorted.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
    let mut frontier: Vec<(f64, f64)> = Vec::new();
    for pt in &sorted {
        if frontier.last().map_or(true, |f| pt.1 < f.1) {
            frontier.push(*pt);
        }
    }
    let mut all = Series::new(
        "candidates (one point each; names in the table)",
        pts.iter()
            .filter(|x| !clipped(x.0))
            .map(|x| (x.0, x.1))
            .collect(),
        SeriesStyle::Points,
    );
    all.color = Some(1);
    c.series.push(all);
    let off: Vec<&(f64, f64, &str)> = pts.iter().filter(|x| clipped(x.0)).collect();
    if !off.is_empty() {
        let mut s = Series::new(
            "off the x axis (drawn at its edge; true value beside it)",
            off.iter().map(|x| (drawn(x.0), x.1)).collect(),
            SeriesStyle::Points,
        );
        s.point_labels = Some(
            off.iter()
                .map(|x| {
                    if x.0 < 0.0 {
                        format!("\u{2190} {}: {:+.1}%", x.2, x.0)
                    } else {
                        format!("{}: {:+.1}% \u{2192}", x.2, x.0)
                    }
                })
                .collect(),
        );
        s.color = Some(3);
        c.series.push(s);
    }
    if frontier.len() > 1 {
        let mut f = Series::new(
            "frontier (no candidate beats these on both)",
            frontier.iter().map(|&(x, y)| (drawn(x), y)).collect(),
            SeriesStyle::Dashed,
        );
        f.color = Some(0);
        c.series.push(f);
    }
    if let Some((lo, hi)) = zoom {
        c.x_range = Some((lo, hi));
    }
    c.caption = format!(
        "requests of compliant keys denied (% of their requests) against requests of limited keys admitted beyond the exact limiter (% of what it admitted), one point per candidate; the line joins the candidates no other beats on both. A zero share of compliant requests denied sits on the \"0\" row under the axis. Candidates that deny more than half of the compliant requests are left off (see the table).{}",
        if off.is_empty() {
            String::new()
        } else {
            format!(
                " The x axis is zoomed to the others: {} far outside {} drawn at the axis edge, with {} true value beside it.",
                if off.len() == 1 { "one candidate" } else { "candidates" },
                if off.len() == 1 { "is" } else { "are" },
                if off.len() == 1 { "its" } else { "their" },
            )
        }
    );
    c
}

/// The x range that leaves out far outliers, when there are any: the
/// values within three interquartile ranges (at least one percentage
/// point) of the middle half, and zero (the exact limiter), padded by a
/// tenth; None when nothing is outside, or leaving the outliers in would
/// stretch the axis less than threefold.
pub(super) fn zoom_range(xs: &[f64]) -> Option<(f64, f64)> {
    if xs.len() < 4 {
        return None;
    }
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let (q1, q3) = (v[n / 4], v[(3 * n) / 4]);
    let iqr = (q3 - q1).max(1.0);
    let (lo_b, hi_b) = (q1 - 3.0 * iqr, q3 + 3.0 * iqr);
    let inside: Vec<f64> = v
        .iter()
        .copied()
        .filter(|&x| x >= lo_b && x <= hi_b)
        .collect();
    if inside.len() == n {
        return None;
    }
    let a = inside.iter().copied().fold(0.0f64, f64::min);
    let b = inside.iter().copied().fold(0.0f64, f64::max);
    let span = (b - a).max(1.0);
    if v[n - 1] - v[0] < 3.0 * span {
        return None;
    }
    Some((a - 0.1 * span, b + 0.1 * span))
}

/// One line of the onset chart: its label, points and the cumulative
/// counts it was compared by.
pub(super) type OnsetLine = (String, Vec<(f64, f64)>, Vec<u64>);

/// Onset bins drawn: from a fifth of an interval before the abuse starts
/// (bin 50 is its start) to three intervals after it.
pub(super) const ONSET_DRAWN: std::ops::RangeInclusive<usize> = 40..=200;

/// The watched key's onset: cumulative admitted requests, counted from one
/// interval before its abuse starts, drawn over its first intervals. What it
/// offered is in the title: as a line it dwarfed the admitted ones.
pub(super) fn onset_chart(lab: &Lab, cands: &[Candidate], fams: &[&str]) -> Option<ChartSpec> {
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
    let mut c = ChartSpec::new(
        "watched_onset",
        format!(
            "Watched key {}: admitted requests around its abuse start (it offered {} in the first {} s)",
            lab.watch_name().unwrap_or_default(),
            offered,
            secs(at(end).saturating_sub(from)),
        ),
        "time since the abuse started (s)",
        "requests admitted (cumulative)",
    );
    c.caption = "the watched key's admitted requests, cumulative, counted from one interval before its abuse starts and drawn from a fifth of an interval before it to three intervals after (the title gives what it offered): how much of the burst each limiter lets through before it settles at the policy rate. Lines within a pixel of each other are drawn once, with their names joined.".into();
    let picks = fams
        .iter()
        .filter(|fam| !fam.contains("global"))
        .filter_map(|fam| cands.iter().position(|cd| cd.family == *fam));
    // Candidates whose admitted counts match an earlier one's to within
    // about a pixel (a 300th of the highest count) are drawn once, with
    // both names.
    let truth = std::iter::once(("exact sliding log (truth)".to_string(), &lab.oracle.onset));
    let others = picks.map(|i| (cands[i].name.clone(), &lab.tallies[i].onset));
    let all: Vec<(String, Vec<(f64, f64)>)> = truth
        .chain(others)
        .map(|(name, onset)| (name, cumulative(onset)))
        .collect();
    let top = all
        .iter()
        .flat_map(|(_, pts)| pts.iter().map(|p| p.1 as u64))
        .max()
        .unwrap_or(0);
    let tol = (top / 300).max(1);
    let mut lines: Vec<OnsetLine> = Vec::new();
    for (name, pts) in all {
        let sums: Vec<u64> = pts.iter().map(|p| p.1 as u64).collect();
        match lines.iter_mut().find(|l| {
            l.2.len() == sums.len() && l.2.iter().zip(&sums).all(|(a, b)| a.abs_diff(*b) <= tol)
        }) {
            Some(l) => l.0 = format!("{} = {}", l.0, name),
            None => lines.push((name, pts, sums)),
        }
    }
    for (ci, (name, pts, _)) in lines.into_iter().enumerate() {
        let mut s = Series::new(name, pts, SeriesStyle::Line);
        s.color = Some(ci);
        c.series.push(s);
    }
    c.vlines.push((0.0, "abuse starts".into()));
    Some(c)
}
