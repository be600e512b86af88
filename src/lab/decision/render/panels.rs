//! The small multiples the watched key's charts are drawn as (`timeline`):
//! the candidates' lines merged where they are equal, packed several to a
//! panel where they stay apart, and each panel made with its legend, its
//! exact limiter's area and its head room. Its own file because none of it
//! knows which chart it draws (onset or timeline): it takes lines of
//! points and gives panels, and its rules are tested on plain lines here.
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

/// Where `a` and `b` differ by more than `tol`: the indices.
pub(super) fn differ(a: &[f64], b: &[f64], tol: f64) -> Vec<usize> {
    a.iter()
        .zip(b)
        .enumerate()
        .filter(|(_, (x, y))| (*x - *y).abs() > tol)
        .map(|(k, _)| k)
        .collect()
}

/// How a line compares with the exact limiter: ` (= exact)`, ` (= exact
/// but at 0.05 s)`, or nothing when it differs in more than three places.
pub(super) fn exact_note(diff: &[usize], at: impl Fn(usize) -> String) -> String {
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

/// One drawn line: the candidates drawing it (equal to within the
/// tolerance over what is drawn), the first one's index, its points.
pub(super) struct Line {
    pub(super) names: Vec<String>,
    pub(super) first: usize,
    pub(super) pts: Vec<(f64, f64)>,
}

impl Line {
    pub(super) fn ys(&self) -> Vec<f64> {
        self.pts.iter().map(|p| p.1).collect()
    }
    pub(super) fn name(&self) -> String {
        merged_name(&self.names)
    }
}

/// A candidate's line before merging: its name, its index, its points.
pub(super) type Drawn = (String, usize, Vec<(f64, f64)>);

/// The candidates' lines merged where they are equal to within `tol` at
/// every drawn point (names joined, in drawing order).
pub(super) fn merge_lines(drawn: Vec<Drawn>, tol: f64) -> Vec<Line> {
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
pub(super) fn pack(
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
pub(super) fn line_name(cands: &[Candidate], name: String) -> String {
    if fleet(cands) {
        name
    } else {
        name.replace(" per key", "")
    }
}

/// Whether the candidates are a fleet's (no model row): colours by line,
/// panels by strategy.
pub(super) fn fleet(cands: &[Candidate]) -> bool {
    cands.iter().any(|c| c.model.is_empty())
}

/// A line's panel group: a fleet's strategy (the first word of its
/// name), so a panel compares balancers or intervals of one strategy;
/// none for a decision's candidates.
pub(super) fn group_of(is_fleet: bool) -> impl Fn(&Line) -> String {
    move |l: &Line| {
        if is_fleet {
            l.names[0].split(' ').next().unwrap_or_default().to_string()
        } else {
            String::new()
        }
    }
}

/// The panels of a chart, and the grid's columns. When no two lines can
/// share a panel: one per line, titled with its name and `note` (how it
/// compares with the exact limiter), a shared legend, two columns. Else
/// lines packed several to a panel: each line in its colour, named in its
/// panel's legend with its note; a panel titled with the words its
/// candidates' names share (a fleet's strategy), or a lone line's name;
/// one column when a legend names a line at length and the panels are few
/// enough to stand one a row, else two, long names cut (the caption lists
/// them). `base(ci, title, labelled)` makes a panel's spec with its axes
/// and references; `labelled` says whether the references are named (the
/// first panel's legend names them for all).
pub(super) fn panels_for(
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
        return (panels, PANEL_COLS);
    }
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
pub(super) fn head_room(overlaid: bool, rows: usize) -> f64 {
    if overlaid {
        let share = (0.1 + 0.08 * rows as f64).min(0.55);
        1.0 / (1.0 - share)
    } else {
        1.05
    }
}

/// Why a panel's y axis reaches above its data.
pub(super) const ROOM_NOTE: &str = "head room above the lines for the legend";

/// The caption's list of the lines that are several candidates, names in
/// full (a legend may shorten them).
pub(super) fn merged_list(lines: &[Line]) -> String {
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
pub(super) fn exact_area(pts: &[(f64, f64)], labelled: bool) -> Band {
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
pub(super) fn staircase(r: &[f64], to_s: impl Fn(usize) -> f64) -> Vec<(f64, f64)> {
    r.iter()
        .enumerate()
        .flat_map(|(b, &v)| [(to_s(b), v), (to_s(b + 1), v)])
        .collect()
}

/// A line's colour: its family's (the same on every chart of the
/// report), or for a fleet its place among the lines.
pub(super) fn line_color<'a>(
    cands: &'a [Candidate],
    lines: &'a [Line],
) -> impl Fn(usize) -> usize + 'a {
    move |i: usize| family_color(cands, lines[i].first, i % 6)
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
