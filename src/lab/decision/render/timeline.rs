//! The watched key's charts: its onset (cumulative admitted requests as
//! its abuse starts) and its timeline (admitted per second), one panel per
//! candidate with the exact limiter drawn under it.

use super::*;

/// Columns of the small multiples.
const PANEL_COLS: usize = 2;

/// Where `a` and `b` differ by more than `tol`: the indices.
fn differ(a: &[f64], b: &[f64], tol: f64) -> Vec<usize> {
    a.iter()
        .zip(b)
        .enumerate()
        .filter(|(_, (x, y))| (*x - *y).abs() > tol)
        .map(|(k, _)| k)
        .collect()
}

/// A panel's title: the candidate, and how it compares with the exact
/// limiter drawn over it (the same everywhere, the same but at a few
/// places, named; or different).
fn panel_title(name: &str, diff: &[usize], at: impl Fn(usize) -> String) -> String {
    match diff.len() {
        0 => format!("{name} (= exact)"),
        1..=3 => format!(
            "{name} (= exact but at {})",
            diff.iter().map(|&k| at(k)).collect::<Vec<_>>().join(", ")
        ),
        _ => name.to_string(),
    }
}

/// Colour of the candidate in every panel (its name is the panel's title).
const CANDIDATE: usize = 0;
/// Colour of the exact limiter's area under the candidate, and its opacity.
const EXACT: (usize, f64) = (7, 0.35);
/// Colour of the policy rate's line.
const POLICY: usize = 1;

/// One panel's exact limiter: the area under its curve, light grey, drawn
/// under the candidate, so that where they coincide the candidate's line
/// runs along its edge and where they differ both show.
fn exact_area(pts: &[(f64, f64)]) -> Band {
    let (lo, hi) = (
        pts.first().map_or(0.0, |p| p.0),
        pts.last().map_or(0.0, |p| p.0),
    );
    let mut b = Band::new(
        "exact sliding log",
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

/// The watched key's admitted rate over time, small multiples: one panel
/// per per-key family (its first candidate), shared axes, the exact
/// sliding log as a light area under each candidate's line, the policy
/// rate as an orange strip, one legend for the grid. What the key offered is
/// in the title.
pub(super) fn timeline_chart(
    lab: &Lab,
    cands: &[Candidate],
    fams: &[&str],
) -> Option<Result<crate::report::Chart>> {
    let (_, from) = lab.watch()?;
    let p = &*lab.p;
    let to_s = |b: usize| {
        lab.t_lo
            .saturating_add((b as u64).saturating_mul(lab.bin_w)) as f64
            / SECOND as f64
    };
    let per_s = SECOND as f64 / lab.bin_w as f64;
    let rate = |bins: &[u64]| -> Vec<f64> { bins.iter().map(|&v| v as f64 * per_s).collect() };
    let lim = p.policy.limit as f64 * SECOND as f64 / (p.policy.interval_ms * MILLI) as f64;
    let exact = rate(&lab.oracle.bins);
    let (shared, short) = shared_of(cands);
    // Candidates drawing the same line share a panel (names joined), as
    // in the onset chart: equal panels side by side hide nothing but
    // take the room of the ones that differ.
    let mut groups: Vec<(Vec<String>, Vec<f64>)> = Vec::new();
    for i in picks(cands, fams) {
        let mine = rate(&lab.tallies[i].bins);
        let name = short(&cands[i].name);
        match groups.iter_mut().find(|g| g.1 == mine) {
            Some(g) => g.0.push(name),
            None => groups.push((vec![name], mine)),
        }
    }
    let merged = groups.iter().any(|g| g.0.len() > 1);
    let top = groups
        .iter()
        .flat_map(|g| g.1.iter().copied())
        .chain(exact.iter().copied())
        .fold(lim, f64::max);
    let x_range = (to_s(0), to_s(BINS as usize));
    let offered_peak = rate(&lab.offered).into_iter().fold(0.0, f64::max);
    let bin_ms = lab.bin_w as f64 / MILLI as f64;
    let panels: Vec<ChartSpec> = groups
        .into_iter()
        .enumerate()
        .map(|(ci, (names, mine))| {
            let diff = differ(&mine, &exact, 0.5 * per_s);
            let title = panel_title(&merged_name(&names), &diff, |k| format!("{:.2} s", to_s(k)));
            let mut c = ChartSpec::new(
                format!("panel-{ci}"),
                title,
                "time (s)",
                format!("requests/s ({bin_ms} ms bins)"),
            );
            c.bands.push(exact_area(&staircase(&exact, to_s)));
            c.series.push(candidate_line(staircase(&mine, to_s)));
            // The policy rate as a thin strip under the candidate: a
            // candidate admitting exactly the policy runs along it, and
            // neither hides the other.
            let half = 0.012 * top * 1.05;
            let mut b = Band::new(
                format!("policy ({lim}/s)"),
                vec![(x_range.0, lim - half), (x_range.1, lim - half)],
                vec![(x_range.0, lim + half), (x_range.1, lim + half)],
                POLICY,
            );
            b.opacity = 0.7;
            c.bands.push(b);
            c.vlines.push((from as f64 / SECOND as f64, String::new()));
            c.x_range = Some(x_range);
            c.y_range = Some((0.0, top * 1.05));
            c
        })
        .collect();
    let title = format!(
        "Watched key {}: admitted requests per second (it offered up to {:.0}/s; abuse from {:.0} s, dotted{})",
        lab.watch_name().unwrap_or_default(),
        offered_peak,
        from as f64 / SECOND as f64,
        if shared.is_empty() { String::new() } else { format!("; all: {shared}") },
    );
    let caption = format!(
        "requests per second of the watched key admitted by each per-key family's first candidate (one panel each, named over it, the same axes{}): the candidate's line over the exact sliding log's light grey area, so where the line runs along the area's edge the two are equal and where they part both show; the policy rate ({lim}/s) an orange strip. A panel's title says when the candidate equals the exact limiter, or at which bins alone it differs. The dotted line is where the key's abuse starts; what it offered is in the title.",
        if merged { "; candidates drawing the same line share a panel, names joined" } else { "" }
    );
    Some(crate::report::chart::render_grid(
        "watched_timeline",
        &title,
        &caption,
        &panels,
        PANEL_COLS,
    ))
}

/// An onset panel: the names drawing its line, the burst suffix of its
/// title (empty: none), the line.
type OnsetPanel = (Vec<String>, String, Vec<(f64, f64)>);

/// Onset bins drawn: from a fifth of an interval before the abuse starts
/// (bin 50 is its start) to three intervals after it.
pub(super) const ONSET_DRAWN: std::ops::RangeInclusive<usize> = 40..=200;

/// The watched key's onset: cumulative admitted requests, counted from one
/// interval before its abuse starts, drawn over its first intervals, small
/// multiples: one panel per per-key family, the exact sliding log as a
/// light area under each candidate's line, shared axes, one legend. What it offered is in the title: as a
/// line it dwarfed the admitted ones.
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
    // One panel per per-key family's first candidate, or per member of a
    // family swept over bursts; candidates drawing the same line at the
    // same burst share a panel (names joined).
    let mut drawn: Vec<OnsetPanel> = Vec::new();
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
            let (name, suffix) = match burst_of(&cands[i]).filter(|_| swept) {
                Some(b) => (short(fam), format!(", burst {b}")),
                None => (short(&cands[i].name), String::new()),
            };
            drawn.push((vec![name], suffix, pts));
        }
    }
    let top = drawn
        .iter()
        .flat_map(|p| p.2.iter().map(|q| q.1))
        .chain(exact.iter().map(|p| p.1))
        .fold(1.0, f64::max);
    // A pixel of the panels' y axis, in requests: lines closer than that
    // are one line as drawn.
    let tol = (top / 300.0).max(1.0);
    let ys = |pts: &[(f64, f64)]| pts.iter().map(|p| p.1).collect::<Vec<_>>();
    let mut panels_of: Vec<OnsetPanel> = Vec::new();
    for (names, suffix, pts) in drawn {
        match panels_of
            .iter_mut()
            .find(|p| p.1 == suffix && differ(&ys(&p.2), &ys(&pts), tol).is_empty())
        {
            Some(p) => p.0.extend(names),
            None => panels_of.push((names, suffix, pts)),
        }
    }
    let swept = panels_of.iter().any(|p| !p.1.is_empty());
    let x_range = (to_s(*ONSET_DRAWN.start()), to_s(end));
    let panels: Vec<ChartSpec> = panels_of
        .into_iter()
        .enumerate()
        .map(|(ci, (names, suffix, pts))| {
            let diff = differ(&ys(&pts), &ys(&exact), tol);
            let name = format!("{}{suffix}", merged_name(&names));
            let title = panel_title(&name, &diff, |k| format!("{:.2} s", pts[k].0));
            let mut c = ChartSpec::new(
                format!("panel-{ci}"),
                title,
                "time since the abuse started (s)",
                "admitted (cumulative)",
            );
            c.bands.push(exact_area(&exact));
            c.series.push(candidate_line(pts));
            c.vlines.push((0.0, String::new()));
            c.x_range = Some(x_range);
            c.y_range = Some((0.0, top * 1.05));
            c
        })
        .collect();
    let title = format!(
        "Watched key {}: admitted requests around its abuse start (dotted; it offered {} in the first {} s{})",
        lab.watch_name().unwrap_or_default(),
        offered,
        secs(at(end).saturating_sub(from)),
        if shared.is_empty() { String::new() } else { format!("; all: {shared}") },
    );
    let caption = if swept {
        "the watched key's admitted requests, cumulative, counted from one interval before its abuse starts and drawn from a fifth of an interval before it to three intervals after (the title gives what it offered): one panel per burst of each family swept over bursts, and per other per-key family (its first candidate), the same axes; candidates whose lines are equal to within a pixel at the same burst share a panel (names joined). The candidate's line is over the exact sliding log's light grey area (where the line runs along the area's edge the two are equal). How much of the burst each limiter lets through before it settles at the policy rate; a panel's title says when the candidate equals the exact limiter to within a pixel, or at which points alone it differs."
    } else {
        "the watched key's admitted requests, cumulative, counted from one interval before its abuse starts and drawn from a fifth of an interval before it to three intervals after (the title gives what it offered): one panel per per-key family (its first candidate), the same axes, candidates whose lines are equal to within a pixel sharing a panel (names joined); the candidate's line over the exact sliding log's light grey area (where the line runs along the area's edge the two are equal). How much of the burst each limiter lets through before it settles at the policy rate; a panel's title says when the candidate equals the exact limiter to within a pixel, or at which points alone it differs."
    }
    .to_string();
    Some(crate::report::chart::render_grid(
        "watched_onset",
        &title,
        &caption,
        &panels,
        PANEL_COLS,
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
    let first = &words[0];
    let (pre, post) = (
        first[..head].join(" "),
        first[first.len() - tail..].join(" "),
    );
    let joined = rest.join(" = ");
    match (pre.is_empty(), post.is_empty()) {
        (true, true) => joined,
        (false, true) => format!("{pre}: {joined}"),
        (true, false) => format!("{joined} {post}"),
        (false, false) => format!("{pre}: {joined} {post}"),
    }
}

#[cfg(test)]
mod tests {
    use super::merged_name;

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
        // A name that is all shared words keeps its last word.
        assert_eq!(merged_name(&s(&["a b", "a b c"])), "a: b = b c");
    }
}
