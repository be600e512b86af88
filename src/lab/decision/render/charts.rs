//! The decision report's charts: harm against memory per family (the lead),
//! harm per candidate (compliant denied against limited excess, or a
//! sorted dot plot of limited excess when no compliant request was denied)
//! and burst against harm; the watched key's onset and timeline are drawn
//! by the sibling `timeline` module.

use super::*;

/// The words every candidate's name holds once (a fleet's replica count
/// and balancer, say), said once in a chart's title rather than in every
/// label ([`shared_words`]), and the shortening of a name (or joined
/// names) without them.
pub(super) fn shared_of(cands: &[Candidate]) -> (String, impl Fn(&str) -> String) {
    let names: Vec<&str> = cands.iter().map(|c| c.name.as_str()).collect();
    let shared = shared_words(&names);
    let note = shared.clone();
    (note, move |n: &str| without_words(n, &shared))
}

/// A chart title's parenthesis: the policy, and the words every
/// candidate shares (`; all: x16 round_robin`).
pub(super) fn policy_note(lab: &Lab, shared: &str) -> String {
    let p = &*lab.p;
    let all = if shared.is_empty() {
        String::new()
    } else {
        format!("; all: {shared}")
    };
    format!(
        "({} per key per {} ms{all})",
        p.policy.limit, p.policy.interval_ms
    )
}

/// Each candidate's harm: (limited excess %, compliant denied %).
pub(super) fn harms(lab: &Lab, cands: &[Candidate]) -> Vec<(f64, f64)> {
    lab.tallies
        .iter()
        .take(cands.len())
        .map(|t| {
            let h = harm(lab, t);
            (
                excess_pct(&h),
                pct(h.compliant_denied, h.compliant_requests),
            )
        })
        .collect()
}

/// One family's points as series in its `look`: a line through those
/// inside the axis, and the ones drawn at a zoomed edge (`clamped`) as
/// loose points: joined to the others, they would draw a slope that is
/// not there. The legend names the family once.
fn push_family(
    c: &mut ChartSpec,
    look: FamilyLook,
    name: String,
    pts: &[(f64, f64)],
    labels: &[String],
    clamped: &[bool],
) {
    let part = |edge: bool| -> (Vec<(f64, f64)>, Vec<String>) {
        (0..pts.len())
            .filter(|&j| clamped[j] == edge)
            .map(|j| (pts[j], labels[j].clone()))
            .unzip()
    };
    let (on, on_labels) = part(false);
    let (edge, edge_labels) = part(true);
    let line = if on.len() > 1 {
        SeriesStyle::LinePoints
    } else {
        SeriesStyle::Points
    };
    let mut named = false;
    for (p, l, style, named_edge) in [
        (on, on_labels, line, false),
        (edge, edge_labels, SeriesStyle::Points, true),
    ] {
        if p.is_empty() {
            continue;
        }
        let mut s = Series::new(if named { String::new() } else { name.clone() }, p, style);
        // The loose points are the family's: its colour and marker.
        s.share_color = named;
        s.same_marker = named;
        named = true;
        s.point_labels = Some(l);
        look.dress(&mut s);
        // The loose points of the second pass are off the axis.
        if named_edge {
            s.at_edge = vec![true; s.points.len()];
        }
        c.series.push(s);
    }
}

/// The words of a candidate's `name` that its `family` does not hold:
/// where it sits in the family's sweep (`burst=200`, `x16`, `4x8192`).
fn sweep_words(name: &str, family: &str) -> String {
    let fam: Vec<&str> = family.split(' ').collect();
    name.split(' ')
        .filter(|w| !w.is_empty() && !fam.contains(w))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A signed percentage with a typographic minus: `+1.6%`, `−71.6%`.
pub(super) fn signed_pct(v: f64) -> String {
    format!("{v:+.1}%").replace('-', "\u{2212}")
}

/// Where a value is drawn on an axis zoomed to `zoom`: a value outside
/// sits just inside the edge it passes (and is labelled with its true
/// value by the caller).
pub(super) fn at_edge(zoom: Option<(f64, f64)>, v: f64) -> (f64, bool) {
    match zoom {
        Some((lo, hi)) if v < lo || v > hi => {
            let inset = 0.02 * (hi - lo);
            (if v < lo { lo + inset } else { hi - inset }, true)
        }
        _ => (v, false),
    }
}

/// One line per family through its candidates (in the scenario's order,
/// the parameter sweep), families whose points coincide merged into one
/// line with their names joined (their words in common named once, see
/// [`merged_name`]), each name shortened by `short`: (label, candidate
/// indices).
fn family_lines(
    cands: &[Candidate],
    fams: &[&str],
    key: &[(f64, f64)],
    logs: (bool, bool),
    short: &dyn Fn(&str) -> String,
) -> Vec<(String, Vec<usize>)> {
    // Two families whose points would be drawn on top of each other are one
    // line with both names: on a linear coordinate within 0.4% of the
    // middle 80% of its values (a far outlier, drawn at a zoomed edge, does
    // not widen it), on a log one within 2% of each other (zero only with
    // zero).
    let spread = |f: fn(&(f64, f64)) -> f64| {
        let mut v: Vec<f64> = key.iter().map(f).filter(|v| v.is_finite()).collect();
        v.sort_by(f64::total_cmp);
        if v.is_empty() {
            return 0.0;
        }
        let at = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
        at(0.9) - at(0.1)
    };
    let (sx, sy) = (spread(|p| p.0), spread(|p| p.1));
    let close = |a: f64, b: f64, spread: f64, log: bool| {
        if a == b {
            true
        } else if log {
            a > 0.0 && b > 0.0 && (a / b - 1.0).abs() <= 0.02
        } else {
            (a - b).abs() <= 0.004 * spread
        }
    };
    let near =
        |a: &(f64, f64), b: &(f64, f64)| close(a.0, b.0, sx, logs.0) && close(a.1, b.1, sy, logs.1);
    let mut lines: Vec<(Vec<String>, Vec<usize>)> = Vec::new();
    for fam in fams {
        let members: Vec<usize> = (0..cands.len())
            .filter(|&i| cands[i].family == *fam)
            .collect();
        let pts: Vec<(f64, f64)> = members.iter().map(|&i| key[i]).collect();
        match lines.iter_mut().find(|(_, m)| {
            m.len() == pts.len() && m.iter().zip(&pts).all(|(&i, p)| near(&key[i], p))
        }) {
            Some(l) => l.0.push(short(fam)),
            None => lines.push((vec![short(fam)], members)),
        }
    }
    lines
        .into_iter()
        .map(|(names, m)| (merged_name(&names), m))
        .collect()
}

/// The lead chart: what each candidate costs in harm for its memory. Limited
/// excess (two-sided around the exact limiter's 0: below it abusers are
/// locked out, also harm) against memory, one line per family through its
/// sweep, labelled at its end; candidates that deny compliant requests say
/// how many beside their point.
pub(super) fn harm_memory_chart(
    lab: &Lab,
    cands: &[Candidate],
    mems: &[u64],
    fams: &[&str],
    looks: &[FamilyLook],
) -> ChartSpec {
    let hs = harms(lab, cands);
    let (shared, short) = shared_of(cands);
    let mut c = ChartSpec::new(
        "harm_vs_memory",
        format!("Harm vs memory {}", policy_note(lab, &shared)),
        "memory (bytes, log scale)",
        "limited keys: admitted beyond the exact limiter (%)",
    );
    c.x_log = true;
    let ys: Vec<f64> = hs.iter().map(|h| h.0).collect();
    let zoom = zoom_range(&ys);
    // No memory of its own (the state lives in a central store): on the
    // log axis' "0" column, not at a "1 B" that reads as a size.
    let key: Vec<(f64, f64)> = (0..cands.len())
        .map(|i| (mems[i] as f64, hs[i].0))
        .collect();
    let no_memory = mems.iter().filter(|&&m| m == 0).count();
    let mut off = 0usize;
    let lines = family_lines(cands, fams, &key, (true, false), &short);
    let swept = lines.iter().any(|(_, m)| m.len() > 1);
    // Too many lines for a legend: each named at its last point.
    let direct = lines.len() > MAX_LINES;
    for (li, (label, members)) in lines.into_iter().enumerate() {
        let look = members.first().map_or(look_at(li), |&i| looks[i]);
        let mut m = members.clone();
        m.sort_by(|&a, &b| key[a].0.total_cmp(&key[b].0).then(a.cmp(&b)));
        let pts: Vec<(f64, f64)> = m
            .iter()
            .map(|&i| (key[i].0, at_edge(zoom, key[i].1).0))
            .collect();
        let last = m.last().copied();
        // A sweep's points say which parameter each is (burst=25, x16,
        // 4x8192): without them a line's ends cannot be told apart.
        let tag = |i: usize| {
            if m.len() > 1 {
                sweep_words(&short(&cands[i].name), &short(&cands[i].family))
            } else {
                String::new()
            }
        };
        let labels: Vec<String> = m
            .iter()
            .map(|&i| {
                let mut parts = Vec::new();
                let t = tag(i);
                match (direct && Some(i) == last, t.is_empty()) {
                    (true, true) => parts.push(label.clone()),
                    (true, false) => parts.push(format!("{label}, {t}")),
                    (false, false) => parts.push(t),
                    (false, true) => {}
                }
                if at_edge(zoom, hs[i].0).1 {
                    off += 1;
                    parts.push(format!("limited excess {}", signed_pct(hs[i].0)));
                }
                if hs[i].1 > 0.0 {
                    parts.push(format!("{} of compliant denied", fmt_pct(hs[i].1)));
                }
                parts.join(": ")
            })
            .collect();
        let clamped: Vec<bool> = m.iter().map(|&i| at_edge(zoom, hs[i].0).1).collect();
        let name = if direct { String::new() } else { label };
        push_family(&mut c, look, name, &pts, &labels, &clamped);
    }
    // under every candidate, from the "0" column if one is there
    let (lo, hi) = key.iter().fold((f64::INFINITY, 0.0f64), |(a, b), k| {
        (a.min(k.0), b.max(k.0))
    });
    let mut zero = Series::new(
        "exact limiter (0)",
        vec![(lo, 0.0), (hi, 0.0)],
        SeriesStyle::Dashed,
    );
    zero.color = Some(6);
    c.series.push(zero);
    if let Some(r) = zoom {
        c.y_range = Some(r);
    }
    // Memories a few percent apart fill little of a log axis that ends at
    // its 1-2-5 steps: said on the axis (they are the same size).
    let (mlo, mhi) = mems
        .iter()
        .filter(|&&m| m > 0)
        .fold((u64::MAX, 0u64), |(a, b), &m| (a.min(m), b.max(m)));
    if mhi > 0 && (mhi as f64) < 1.5 * mlo as f64 {
        c.x_note = "every candidate's memory within 50% of the others'".into();
    }
    c.caption = format!(
        "requests of limited keys admitted beyond the exact sliding log (% of what it admitted; 0, the dashed line, is the exact limiter; below it abusers are locked out, also harm) against memory, log scale: {} (families that coincide are drawn once, names joined{}). A candidate that denies compliant requests says how many beside its point.{}{}",
        if swept {
            "one line per family through its parameter sweep, each point tagged with its parameter"
        } else {
            "one point per candidate"
        },
        match (direct, swept) {
            (false, _) => "",
            (true, true) => "; each named at its last point",
            (true, false) => "; each named beside it",
        },
        match no_memory {
            0 => String::new(),
            n => format!(
                " {} no memory of {} own (the state lives in the store): {} on the \"0\" column left of the log axis.",
                if n == 1 { "One candidate keeps" } else { "Candidates keep" },
                if n == 1 { "its" } else { "their" },
                if n == 1 { "it is" } else { "they are" },
            ),
        },
        if off == 0 {
            String::new()
        } else {
            format!(
                " The y axis is zoomed to the others: {} far outside {} drawn at its edge, labelled with {} true value.",
                if off == 1 { "one candidate" } else { "candidates" },
                if off == 1 { "is" } else { "are" },
                if off == 1 { "its" } else { "their" },
            )
        }
    );
    c
}

/// Harm when no key went over the limit (no limited excess to show): the
/// share of compliant requests each candidate denied, a sorted dot plot,
/// one labelled row per candidate.
pub(super) fn compliant_chart(lab: &Lab, cands: &[Candidate]) -> ChartSpec {
    let p = &*lab.p;
    let hs = harms(lab, cands);
    let mut order: Vec<usize> = (0..cands.len()).collect();
    order.sort_by(|&a, &b| hs[a].1.total_cmp(&hs[b].1).then(a.cmp(&b)));
    let mut c = ChartSpec::new(
        "harm",
        format!(
            "Harm per candidate ({} per key per {} ms)",
            p.policy.limit, p.policy.interval_ms
        ),
        "compliant keys: requests denied (% of their requests)",
        "",
    );
    c.y_categories = order.iter().map(|&i| cands[i].name.clone()).collect();
    let mut s = Series::new(
        "",
        order
            .iter()
            .enumerate()
            .map(|(row, &i)| (hs[i].1, row as f64))
            .collect(),
        SeriesStyle::Points,
    );
    s.point_labels = Some(order.iter().map(|&i| fmt_pct(hs[i].1)).collect());
    s.color = Some(0);
    c.series.push(s);
    c.vlines.push((0.0, "exact limiter".into()));
    let hi = hs.iter().map(|h| h.1).fold(0.0, f64::max);
    c.x_range = Some((0.0, (hi * 1.25).max(1.0)));
    c.caption = "requests of compliant keys denied (% of their requests), one row per candidate, sorted, each labelled with its value. No key went over the limit in any window, so there is no limited excess: denying a compliant request is the only harm, and the exact limiter's is 0.".into();
    c
}

/// Against burst, when the scenario sweeps one (three bursts or more):
/// limited excess and the
/// worst window over the limit, one line per burst family (families that
/// coincide drawn once, names joined), each point labelled with its value;
/// the bursts are categories (the sweep's values, equally spaced).
pub(super) fn burst_charts(
    lab: &Lab,
    cands: &[Candidate],
    fams: &[&str],
    looks: &[FamilyLook],
) -> Vec<ChartSpec> {
    let bfams: Vec<&str> = fams
        .iter()
        .copied()
        .filter(|f| burst_family(cands, f))
        .collect();
    // A sweep of two bursts is two points: the table says it.
    let sweep = |f: &&str| cands.iter().filter(|c| c.family == *f).count() >= 3;
    if !bfams.iter().any(sweep) {
        return Vec::new();
    }
    let mut bursts: Vec<u64> = cands.iter().filter_map(burst_of).collect();
    bursts.sort_unstable();
    bursts.dedup();
    let p = &*lab.p;
    let hs: Vec<Harm> = lab
        .tallies
        .iter()
        .take(cands.len())
        .map(|t| harm(lab, t))
        .collect();
    // What both charts' captions say of their lines.
    const LINES: &str = "one line per family swept over bursts (families that coincide drawn once, names joined), each point labelled with its value";
    let chart = |name: &str,
                 what: &str,
                 y_label: &str,
                 y: &dyn Fn(&Harm) -> f64,
                 fmt: &dyn Fn(f64) -> String| {
        let mut c = ChartSpec::new(
            name,
            format!(
                "{what} vs burst ({} per key per {} ms)",
                p.policy.limit, p.policy.interval_ms
            ),
            "burst (requests, log₂: each step doubles)",
            y_label,
        );
        // A doubling sweep on a log₂ axis: evenly spaced, and a law in
        // proportion to the burst keeps its shape.
        c.x_log = true;
        c.x_log2 = true;
        let key: Vec<(f64, f64)> = (0..cands.len())
            .map(|i| {
                (
                    burst_of(&cands[i]).map_or(f64::NAN, |b| b as f64),
                    y(&hs[i]),
                )
            })
            .collect();
        for (li, (label, mut members)) in
            family_lines(cands, &bfams, &key, (false, false), &|n| n.to_string())
                .into_iter()
                .enumerate()
        {
            let look = members.first().map_or(look_at(li), |&i| looks[i]);
            members.sort_by(|&a, &b| key[a].0.total_cmp(&key[b].0));
            let mut s = Series::new(
                label,
                members.iter().map(|&i| key[i]).collect(),
                SeriesStyle::LinePoints,
            );
            s.point_labels = Some(members.iter().map(|&i| fmt(key[i].1)).collect());
            look.dress(&mut s);
            c.series.push(s);
        }
        let ys: Vec<f64> = key
            .iter()
            .zip(cands)
            .filter(|(_, cd)| bfams.contains(&cd.family.as_str()))
            .map(|(k, _)| k.1)
            .filter(|v| v.is_finite())
            .collect();
        let hi = ys.iter().copied().fold(0.0, f64::max);
        c.y_range = Some((
            0.0f64.min(ys.iter().copied().fold(0.0, f64::min)),
            hi * 1.15,
        ));
        c
    };
    let (b0, b1) = (
        bursts.first().copied().unwrap_or(1) as f64,
        bursts.last().copied().unwrap_or(1) as f64,
    );
    let mut excess = chart(
        "excess_vs_burst",
        "Limited excess",
        "limited keys: admitted beyond the exact limiter (%)",
        &|h| excess_pct(h),
        &signed_pct,
    );
    // Both axes log₂ when every excess is above 0: excess in proportion
    // to the burst is then a straight line of slope 1.
    if excess
        .series
        .iter()
        .flat_map(|s| &s.points)
        .all(|p| p.1 > 0.0)
    {
        excess.y_log = true;
        excess.y_log2 = true;
        excess.y_range = None;
        excess.y_label = "limited keys: admitted beyond the exact limiter (%, log₂)".into();
    }
    excess.caption = format!(
        "requests of limited keys admitted beyond the exact sliding log (% of what it admitted) against the burst, {LINES}. The burst axis is log₂ (each step doubles it){}.",
        if excess.y_log2 {
            ", and so is the excess: a straight line of slope 1 means the excess grows in proportion to the burst"
        } else {
            ""
        }
    );
    let mut worst = chart(
        "worst_window_vs_burst",
        "Worst window",
        "most admitted for one key in one interval / limit",
        &|h| h.worst_window_ratio,
        &|v| format!("{v:.2}"),
    );
    worst.caption = format!(
        "the most requests admitted for one key in one aligned {} ms interval, over the limit ({}), against the burst, {LINES}: the dashed line at 1 is the policy, 1 + burst/limit a full bucket on top of it. The burst axis is log₂ (each step doubles it).",
        p.policy.interval_ms, p.policy.limit
    );
    let mut policy = Series::new(
        "the policy (1)",
        vec![(b0, 1.0), (b1, 1.0)],
        SeriesStyle::Dashed,
    )
    .color(7);
    policy.share_color = true;
    worst.series.push(policy);
    vec![excess, worst]
}

/// Most lines a chart draws with a legend; beyond, a dot plot or lines
/// named at their ends.
const MAX_LINES: usize = 6;

/// Harm per candidate. When fewer than two candidates deny a compliant
/// request (the one that does says how many beside its dot), a
/// sorted dot plot of limited excess, one labelled row per candidate;
/// otherwise compliant denied (log, the "0" row under it) against limited
/// excess, one line per family through its sweep (ann-benchmarks' style),
/// each named at its end, the exact limiter at the origin. Excess is
/// two-sided around the exact limiter's 0: below it abusers are locked out.
pub(super) fn harm_chart(
    lab: &Lab,
    cands: &[Candidate],
    fams: &[&str],
    looks: &[FamilyLook],
) -> ChartSpec {
    let hs = harms(lab, cands);
    let (shared, short) = shared_of(cands);
    let title = format!("Harm per candidate {}", policy_note(lab, &shared));
    let x_label = "limited keys: admitted beyond the exact limiter (% of what it admitted)";
    let xs: Vec<f64> = hs.iter().map(|h| h.0).collect();
    let zoom = zoom_range(&xs);
    let off: Vec<usize> = (0..cands.len())
        .filter(|&i| at_edge(zoom, xs[i]).1)
        .collect();
    let zoomed = if off.is_empty() {
        String::new()
    } else {
        format!(
            " The x axis is zoomed to the others: {} far outside {} an arrow at its edge, with {} true value written.",
            if off.len() == 1 { "one candidate" } else { "candidates" },
            if off.len() == 1 { "is" } else { "are" },
            if off.len() == 1 { "its" } else { "their" },
        )
    };
    let denying = hs.iter().filter(|h| h.1 > 0.0).count();
    let none_denied = denying == 0;
    // A second axis for compliant denied needs two candidates off its "0"
    // row: with one, it would be a single point on an empty axis.
    if denying < 2 || fams.len() > MAX_LINES {
        // Room left of the exact limiter's line for an arrow's value: the
        // zoomed axis starts further left when a value is off it there.
        let zoom = zoom.map(|(lo, hi)| {
            if xs.iter().any(|&x| x < lo) {
                (lo - 0.14 * (hi - lo), hi)
            } else {
                (lo, hi)
            }
        });
        let mut order: Vec<usize> = (0..cands.len()).collect();
        order.sort_by(|&a, &b| xs[a].total_cmp(&xs[b]).then(a.cmp(&b)));
        let mut c = ChartSpec::new("harm", title, x_label, "");
        let row = |i: usize| order.iter().position(|&o| o == i).unwrap_or(0) as f64;
        let label = |i: usize| {
            let mut parts = Vec::new();
            if hs[i].1 > 0.0 {
                parts.push(format!("{} of compliant denied", fmt_pct(hs[i].1)));
            }
            parts.join("; ")
        };
        // A row's notes (its true value off the axis, compliant requests
        // denied) beside its name: written beside the dot, they would run
        // across the exact limiter's line or be led there from far away.
        c.y_categories = order
            .iter()
            .map(|&i| match label(i) {
                n if n.is_empty() => short(&cands[i].name),
                n => format!("{} ({n})", short(&cands[i].name)),
            })
            .collect();
        // One series per family, in its colour and marker on every chart
        // of the report (the rows name each dot: no legend).
        let mut drawn: Vec<FamilyLook> = Vec::new();
        for &first in &order {
            let look = looks[first];
            if drawn.contains(&look) {
                continue;
            }
            drawn.push(look);
            let rows: Vec<usize> = order
                .iter()
                .copied()
                .filter(|&i| looks[i] == look)
                .collect();
            let mut s = Series::new(
                "",
                rows.iter()
                    .map(|&i| (at_edge(zoom, xs[i]).0, row(i)))
                    .collect(),
                SeriesStyle::Points,
            );
            s.at_edge = rows.iter().map(|&i| at_edge(zoom, xs[i]).1).collect();
            // Each dot says its value (an arrow's is its true one): the
            // rows name the candidates, the labels what the axis reads.
            s.point_labels = Some(rows.iter().map(|&i| signed_pct(xs[i])).collect());
            look.dress(&mut s);
            c.series.push(s);
        }
        c.vlines.push((0.0, "exact limiter".into()));
        if let Some(r) = zoom {
            c.x_range = Some(r);
        }
        let denied = if none_denied {
            "No candidate denied a compliant key's request, so this is the whole harm"
        } else if denying == 1 {
            "The one candidate that denied compliant keys' requests says how many beside its name"
        } else {
            "A candidate that denied compliant keys' requests says how many beside its name (too many families for one line each)"
        };
        c.caption = format!(
            "requests of limited keys admitted beyond the exact sliding log (% of what it admitted), one row per candidate, sorted, each dot labelled with its value. {denied}: right of the exact limiter's 0 abusers get more through, left of it they are locked out beyond the policy (also harm).{zoomed}"
        );
        return c;
    }
    let mut c = ChartSpec::new(
        "harm",
        title,
        x_label,
        "compliant keys: requests denied (%, log scale)",
    );
    c.y_log = true;
    c.log_floor = 1e-4;
    let key: Vec<(f64, f64)> = hs.clone();
    let lines = family_lines(cands, fams, &key, (false, true), &short);
    let swept = lines.iter().any(|(_, m)| m.len() > 1);
    for (li, (label, members)) in lines.into_iter().enumerate() {
        let look = members.first().map_or(look_at(li), |&i| looks[i]);
        let pts: Vec<(f64, f64)> = members
            .iter()
            .map(|&i| (at_edge(zoom, xs[i]).0, hs[i].1))
            .collect();
        let labels: Vec<String> = members
            .iter()
            .map(|&i| {
                let mut parts = Vec::new();
                if members.len() > 1 {
                    parts.push(sweep_words(
                        &short(&cands[i].name),
                        &short(&cands[i].family),
                    ));
                }
                if at_edge(zoom, xs[i]).1 {
                    parts.push(signed_pct(xs[i]));
                }
                parts.retain(|p| !p.is_empty());
                parts.join(": ")
            })
            .collect();
        let clamped: Vec<bool> = members.iter().map(|&i| at_edge(zoom, xs[i]).1).collect();
        push_family(&mut c, look, label, &pts, &labels, &clamped);
    }
    let mut exact = Series::new("exact limiter", vec![(0.0, 0.0)], SeriesStyle::Points);
    exact.color = Some(6);
    c.series.push(exact);
    if let Some(r) = zoom {
        c.x_range = Some(r);
    }
    let sweep = if swept {
        "one line per family through its parameter sweep, each point tagged with its parameter"
    } else {
        "one point per candidate"
    };
    c.caption = format!(
        "requests of compliant keys denied (% of their requests, log scale; none on the \"0\" row under the axis) against requests of limited keys admitted beyond the exact sliding log (% of what it admitted): {sweep} (families that coincide drawn once, names joined); the exact limiter sits at the origin. Both directions of x are harm: right of 0 abusers get more through, left of it they are locked out beyond the policy.{zoomed}"
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
