//! A test that looks at the charts: every chart of every committed scenario
//! is rendered and its SVG laid out by usvg (text shaped with the embedded
//! font, as the PNG is drawn), then checked:
//!
//! * no two text boxes overlap, and every text box lies inside the canvas;
//! * the legend box overlaps no plotted point, line segment or band, and
//!   takes at most a quarter of its canvas (or panel);
//! * every series or band named in the legend has a visible mark inside the
//!   plot area, and no two series draw the very same path (one would hide
//!   the other);
//! * no series is 90% or more covered by the series drawn after it (within
//!   1.5 px of their strokes or marks) unless it is said to be merged (a
//!   `data-merged` attribute on its group, or its label joins names with
//!   " = " or "≈");
//! * the data (series and bands) span at least 55% of each axis' plotted
//!   range, unless the plot area's group says why (`data-axis-note-x`,
//!   `data-axis-note-y`);
//! * no two markers of different series sit on one spot (within 2 px)
//!   without a label of either series near it;
//! * a point label names its point unambiguously: beside it (no leader
//!   line), no other marker is about as near the label (under twice the
//!   label's gap to its own point, plus 4 px, or 14 px); a point marked by
//!   number (`[3]`) is spelled out in the footnote;
//! * on a log y axis no band is filled down to the axis' bottom (where a
//!   band's lower edge is 0, only its upper edge may be drawn);
//! * texts use the typographic minus for signs (`WithSlack(−1)`, not
//!   `-1`) and say `1 key`, not `1 keys`;
//! * an axis titled in seconds has a tick of at least 1 (milliseconds are
//!   drawn as ms, not as 0.002 s);
//! * a chart of one panel uses the canvas' width, not half of it.
//!
//! The SVG marks up what the checks read as groups: `plot-area`,
//! `series-<i>` and `band-<i>` (numbered over the SVG in drawing order)
//! and `legend` (the legend box) holding one `series-<i>-legend` /
//! `band-<i>-legend` group per entry; every entry must name a series or
//! band group with a mark in the plot. (Older charts appended `-legend` to
//! the series group itself: still read.)
//!
//! `RATELAB_LAYOUT_DIR=<reports folder>` checks the `*.svg` files found
//! there instead (e.g. charts of an older renderer).

use ratelab::report::chart::style::usvg_options;
use resvg::usvg::{self, tiny_skia_path::PathSegment, Node, Tree};
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Copy)]
struct Bx {
    x0: f32,
    y0: f32,
    x1: f32,
    y1: f32,
}

impl Bx {
    fn of(r: usvg::Rect) -> Self {
        Self {
            x0: r.left(),
            y0: r.top(),
            x1: r.right(),
            y1: r.bottom(),
        }
    }
    /// Overlap by more than half a pixel each way.
    fn overlaps(&self, o: &Bx) -> bool {
        self.x1.min(o.x1) - self.x0.max(o.x0) > 0.5 && self.y1.min(o.y1) - self.y0.max(o.y0) > 0.5
    }
    fn inside(&self, w: f32, h: f32) -> bool {
        self.x0 >= -0.5 && self.y0 >= -0.5 && self.x1 <= w + 0.5 && self.y1 <= h + 0.5
    }
    fn hits(&self, a: (f32, f32), b: (f32, f32)) -> bool {
        let (dx, dy) = (b.0 - a.0, b.1 - a.1);
        let (mut t0, mut t1) = (0f32, 1f32);
        for (p, q) in [
            (-dx, a.0 - self.x0),
            (dx, self.x1 - a.0),
            (-dy, a.1 - self.y0),
            (dy, self.y1 - a.1),
        ] {
            if p == 0.0 {
                if q < 0.0 {
                    return false;
                }
            } else {
                let t = q / p;
                if p < 0.0 {
                    t0 = t0.max(t);
                } else {
                    t1 = t1.min(t);
                }
                if t0 > t1 {
                    return false;
                }
            }
        }
        true
    }
}

/// A line segment (px).
type Seg = ((f32, f32), (f32, f32));
/// A `series-<i>` / `band-<i>` group: id, segments, mark boxes, a
/// fingerprint of everything it draws.
type Drawn = (String, Vec<Seg>, Vec<Bx>, String);

/// What the checks need from one laid-out SVG.
#[derive(Default)]
struct Seen {
    texts: Vec<(String, Bx)>,
    /// Legend boxes (one per panel of small multiples).
    legends: Vec<Bx>,
    /// Plot areas (one per panel), and their ids.
    plots: Vec<Bx>,
    plot_ids: Vec<String>,
    /// Per `series-<i>` / `band-<i>` group: segments, mark boxes, path data.
    groups: Vec<Drawn>,
    legend_targets: Vec<String>,
    /// Groups in the legend that are not `<target>-legend` entries.
    stray_legend_ids: Vec<String>,
    /// Inside the `legend` group while walking it.
    in_legend: bool,
    /// Texts in the legend (one per entry).
    legend_texts: usize,
    /// Per group: it carries a text (a series labelled directly).
    labelled: Vec<bool>,
    /// Per group: its id as written (with `-legend`) and its texts.
    raw_ids: Vec<String>,
    group_texts: Vec<Vec<(String, Bx)>>,
    /// Point labels in their own groups (`label-…`): id, the series
    /// group, the label's box.
    labels: Vec<(String, Option<usize>, Bx)>,
    /// Per group: its filled shapes' vertices (bands' polygons).
    fills: Vec<Vec<Vec<(f32, f32)>>>,
}

fn text_of(t: &usvg::Text) -> String {
    t.chunks().iter().map(|c| c.text()).collect()
}

fn walk(g: &usvg::Group, within: Option<usize>, seen: &mut Seen) {
    for node in g.children() {
        let id = node.id().to_string();
        match node {
            Node::Group(g) => {
                let mut inner = within;
                if seen.in_legend && (id.starts_with("series-") || id.starts_with("band-")) {
                    // an entry of the legend: `<target>-legend`
                    match id.strip_suffix("-legend") {
                        Some(n) => seen.legend_targets.push(n.to_string()),
                        None => seen.stray_legend_ids.push(id.clone()),
                    }
                    walk(g, inner, seen);
                    continue;
                }
                if id.starts_with("series-") || id.starts_with("band-") {
                    // `-legend`: the legend names this series or band
                    let name = match id.strip_suffix("-legend") {
                        Some(n) => {
                            seen.legend_targets.push(n.to_string());
                            n.to_string()
                        }
                        None => id.clone(),
                    };
                    seen.groups
                        .push((name, Vec::new(), Vec::new(), String::new()));
                    seen.fills.push(Vec::new());
                    seen.labelled.push(false);
                    seen.raw_ids.push(id.clone());
                    seen.group_texts.push(Vec::new());
                    inner = Some(seen.groups.len() - 1);
                }
                if id == "legend" || id.starts_with("legend-") {
                    seen.legends.push(Bx::of(g.abs_bounding_box()));
                    seen.in_legend = true;
                    walk(g, inner, seen);
                    seen.in_legend = false;
                    continue;
                }
                if id.starts_with("plot-area") {
                    seen.plots.push(Bx::of(g.abs_bounding_box()));
                    seen.plot_ids.push(id.clone());
                }
                if id.starts_with("label-") {
                    seen.labels
                        .push((id.clone(), inner, Bx::of(g.abs_bounding_box())));
                }
                walk(g, inner, seen);
            }
            Node::Path(p) => {
                let Some(k) = within else { continue };
                let ts = p.abs_transform();
                let mut pts: Vec<usvg::tiny_skia_path::Point> = Vec::new();
                let mut segs = Vec::new();
                let mut start = None;
                let mut at = None;
                for s in p.data().segments() {
                    let mut q = match s {
                        PathSegment::MoveTo(q) => {
                            at = None;
                            q
                        }
                        PathSegment::LineTo(q) => q,
                        PathSegment::QuadTo(_, q) => q,
                        PathSegment::CubicTo(_, _, q) => q,
                        PathSegment::Close => match start {
                            Some(q) => q,
                            None => continue,
                        },
                    };
                    let raw = q;
                    ts.map_points(std::slice::from_mut(&mut q));
                    if matches!(s, PathSegment::MoveTo(_)) {
                        start = Some(raw);
                    }
                    if let Some(a) = at {
                        segs.push((a, (q.x, q.y)));
                    }
                    at = Some((q.x, q.y));
                    pts.push(q);
                }
                let bb = Bx::of(p.abs_bounding_box());
                // a marker: a small filled shape (a dash of a dashed line
                // is a small unfilled path: a segment)
                let small = bb.x1 - bb.x0 <= 12.0 && bb.y1 - bb.y0 <= 12.0 && p.fill().is_some();
                if !small && p.fill().is_some() {
                    seen.fills[k].push(pts.iter().map(|q| (q.x, q.y)).collect());
                }
                let entry = &mut seen.groups[k];
                if small {
                    entry.2.push(bb);
                } else {
                    entry.1.extend(segs);
                }
                for q in &pts {
                    entry.3.push_str(&format!("{:.0},{:.0} ", q.x, q.y));
                }
                entry.3.push('|');
            }
            Node::Text(t) => {
                if seen.in_legend {
                    seen.legend_texts += 1;
                }
                if let Some(k) = within {
                    seen.labelled[k] = true;
                    seen.group_texts[k].push((text_of(t), Bx::of(t.abs_bounding_box())));
                }
                seen.texts.push((text_of(t), Bx::of(t.abs_bounding_box())));
            }
            Node::Image(_) => {}
        }
    }
}

/// Every layout problem of `svg` (empty: none).
fn problems(svg: &str) -> Vec<String> {
    let tree = match Tree::from_str(svg, &usvg_options()) {
        Ok(t) => t,
        Err(e) => return vec![format!("does not parse: {e}")],
    };
    let (w, h) = (tree.size().width(), tree.size().height());
    let mut seen = Seen::default();
    walk(tree.root(), None, &mut seen);
    let mut out = Vec::new();
    for (i, (a, ba)) in seen.texts.iter().enumerate() {
        if !ba.inside(w, h) {
            out.push(format!("text {a:?} leaves the canvas: {ba:?}"));
        }
        for (b, bb) in &seen.texts[..i] {
            if ba.overlaps(bb) {
                out.push(format!("texts {b:?} and {a:?} overlap"));
            }
        }
    }
    if seen.groups.is_empty() {
        out.push("no series marked up (series-<i> groups)".into());
    }
    if seen.plots.is_empty() {
        out.push("no plot area marked up".into());
    }
    for lb in &seen.legends {
        for (id, segs, marks, _) in &seen.groups {
            if segs.iter().any(|&(a, b)| lb.hits(a, b)) {
                out.push(format!("the legend covers a line of {id}"));
            }
            if marks.iter().any(|m| lb.overlaps(m)) {
                out.push(format!("the legend covers a point of {id}"));
            }
        }
    }
    if !seen.legends.is_empty() && seen.legend_texts != seen.legend_targets.len() {
        out.push(format!(
            "the legend has {} entries but names {} series or bands",
            seen.legend_texts,
            seen.legend_targets.len()
        ));
    }
    for id in &seen.stray_legend_ids {
        out.push(format!(
            "the legend holds {id}, not a `<target>-legend` entry"
        ));
    }
    // Series ids are unique over the SVG: an outside checker pairs each
    // legend entry with exactly one group.
    for (i, (id, ..)) in seen.groups.iter().enumerate() {
        if seen.groups[..i].iter().any(|g| &g.0 == id) {
            out.push(format!("two groups are {id}"));
        }
    }
    // Charts with several series need a legend, or a label on each.
    if seen.legends.is_empty() && seen.groups.len() > 1 {
        let unnamed = seen.labelled.iter().filter(|l| !**l).count();
        if unnamed > 0 {
            out.push(format!(
                "several series but no legend, and {unnamed} of them not labelled"
            ));
        }
    }
    let in_a_plot = |segs: &[Seg], marks: &[Bx]| {
        seen.plots.iter().any(|plot| {
            let plot = Bx {
                x0: plot.x0 - 6.0,
                y0: plot.y0 - 6.0,
                x1: plot.x1 + 6.0,
                y1: plot.y1 + 6.0,
            };
            segs.iter().any(|&(a, b)| plot.hits(a, b)) || marks.iter().any(|m| m.overlaps(&plot))
        })
    };
    for t in &seen.legend_targets {
        match seen.groups.iter().find(|g| &g.0 == t) {
            None => out.push(format!("legend names {t}, which draws nothing")),
            Some((_, segs, marks, _)) => {
                if !in_a_plot(segs, marks) {
                    out.push(format!("legend names {t}, which has no mark in the plot"));
                }
            }
        }
    }
    for (i, a) in seen.groups.iter().enumerate() {
        for b in &seen.groups[..i] {
            if a.0.starts_with("series-")
                && b.0.starts_with("series-")
                && !a.3.is_empty()
                && a.3 == b.3
            {
                out.push(format!(
                    "{} and {} draw the same path (one hides the other)",
                    b.0, a.0
                ));
            }
        }
    }
    out.extend(meaning_problems(svg, &seen, w, h));
    out
}

/// The value of attribute `attr` on the element with id `id` in the raw
/// SVG (usvg keeps no `data-*` attributes).
fn attr_of(svg: &str, id: &str, attr: &str) -> Option<String> {
    let at = svg.find(&format!("id=\"{id}\""))?;
    let start = svg[..at].rfind('<')?;
    let end = at + svg[at..].find('>')?;
    let tag = &svg[start..end];
    let key = format!(" {attr}=\"");
    let i = tag.find(&key)? + key.len();
    let j = tag[i..].find('"')?;
    Some(tag[i..i + j].to_string())
}

/// Pixels of the canvas within a radius of what was painted.
struct Mask {
    w: usize,
    h: usize,
    on: Vec<bool>,
}

impl Mask {
    fn new(w: f32, h: f32) -> Self {
        let (w, h) = (w.ceil() as usize + 1, h.ceil() as usize + 1);
        Self {
            w,
            h,
            on: vec![false; w * h],
        }
    }
    fn disc(&mut self, (x, y): (f32, f32), r: f32) {
        let (x0, x1) = ((x - r).floor().max(0.0), (x + r).ceil());
        let (y0, y1) = ((y - r).floor().max(0.0), (y + r).ceil());
        let mut px = x0;
        while px <= x1 {
            let mut py = y0;
            while py <= y1 {
                let (cx, cy) = (px + 0.5, py + 0.5);
                if (cx - x).powi(2) + (cy - y).powi(2) <= r * r {
                    let (i, j) = (px as usize, py as usize);
                    if i < self.w && j < self.h {
                        self.on[j * self.w + i] = true;
                    }
                }
                py += 1.0;
            }
            px += 1.0;
        }
    }
    fn seg(&mut self, (a, b): Seg, r: f32) {
        for p in along((a, b), 0.5) {
            self.disc(p, r);
        }
    }
    fn rect(&mut self, b: &Bx, pad: f32) {
        let c = ((b.x0 + b.x1) / 2.0, (b.y0 + b.y1) / 2.0);
        let r = (b.x1 - b.x0).max(b.y1 - b.y0) / 2.0 + pad;
        self.disc(c, r);
    }
    fn at(&self, (x, y): (f32, f32)) -> bool {
        if x < 0.0 || y < 0.0 {
            return false;
        }
        let (i, j) = (x as usize, y as usize);
        i < self.w && j < self.h && self.on[j * self.w + i]
    }
}

/// Points every `step` px along a segment, both ends included.
fn along((a, b): Seg, step: f32) -> Vec<(f32, f32)> {
    let len = ((b.0 - a.0).powi(2) + (b.1 - a.1).powi(2)).sqrt();
    let n = (len / step).ceil().max(1.0) as usize;
    (0..=n)
        .map(|k| {
            let t = k as f32 / n as f32;
            (a.0 + t * (b.0 - a.0), a.1 + t * (b.1 - a.1))
        })
        .collect()
}

fn centre(b: &Bx) -> (f32, f32) {
    ((b.x0 + b.x1) / 2.0, (b.y0 + b.y1) / 2.0)
}

/// Within 1.5 px of a later stroke: "covered".
const COVER_PX: f32 = 1.5;
/// A legend may take this share of its canvas (or panel).
const LEGEND_SHARE: f32 = 0.25;
/// The data must span this share of each axis' plotted range.
const AXIS_USE: f32 = 0.55;

/// Checks of what a reader can see: a series hidden under later ones, a
/// legend eating the canvas, an axis mostly empty, markers of different
/// series on one spot with no label.
fn meaning_problems(svg: &str, seen: &Seen, w: f32, h: f32) -> Vec<String> {
    let mut out = Vec::new();
    let in_plot = |p: (f32, f32)| {
        seen.plots.iter().any(|b| {
            p.0 >= b.x0 - 1.0 && p.0 <= b.x1 + 1.0 && p.1 >= b.y0 - 1.0 && p.1 <= b.y1 + 1.0
        })
    };
    let merged = |k: usize| {
        attr_of(svg, &seen.raw_ids[k], "data-merged").is_some()
            || seen.group_texts[k]
                .iter()
                .any(|(t, _)| t.contains(" = ") || t.contains('≈'))
    };
    // A series (almost) hidden by the series drawn after it.
    let mut mask = Mask::new(w, h);
    for k in (0..seen.groups.len()).rev() {
        let (id, segs, marks, _) = &seen.groups[k];
        if !id.starts_with("series-") {
            continue;
        }
        let mut samples: Vec<(f32, f32)> = segs.iter().flat_map(|&s| along(s, 1.0)).collect();
        samples.extend(marks.iter().map(centre));
        samples.retain(|&p| in_plot(p));
        if !samples.is_empty() && !merged(k) {
            let hidden = samples.iter().filter(|&&p| mask.at(p)).count();
            let share = hidden as f32 / samples.len() as f32;
            if share >= 0.9 {
                out.push(format!(
                    "{id} is {:.0}% covered by the series drawn after it (and not said to be merged)",
                    100.0 * share
                ));
            }
        }
        for &s in segs {
            mask.seg(s, COVER_PX);
        }
        for m in marks {
            mask.rect(m, COVER_PX);
        }
    }
    // A legend over a quarter of its canvas or panel.
    let panel_area = w * h / seen.plots.len().max(1) as f32;
    for lb in &seen.legends {
        let share = (lb.x1 - lb.x0) * (lb.y1 - lb.y0) / panel_area;
        if share > LEGEND_SHARE {
            out.push(format!(
                "the legend takes {:.0}% of its canvas (at most {:.0}%)",
                100.0 * share,
                100.0 * LEGEND_SHARE
            ));
        }
    }
    // Data (series and bands) spanning too little of an axis.
    for (plot, pid) in seen.plots.iter().zip(&seen.plot_ids) {
        let inside = |p: &(f32, f32)| {
            p.0 >= plot.x0 - 2.0
                && p.0 <= plot.x1 + 2.0
                && p.1 >= plot.y0 - 2.0
                && p.1 <= plot.y1 + 2.0
        };
        let mut pts: Vec<(f32, f32)> = Vec::new();
        for (_, segs, marks, _) in &seen.groups {
            pts.extend(segs.iter().flat_map(|&(a, b)| [a, b]).filter(|p| inside(p)));
            pts.extend(marks.iter().map(centre).filter(|p| inside(p)));
        }
        if pts.is_empty() {
            continue;
        }
        let span = |f: fn(&(f32, f32)) -> f32| {
            let lo = pts.iter().map(f).fold(f32::INFINITY, f32::min);
            let hi = pts.iter().map(f).fold(f32::NEG_INFINITY, f32::max);
            hi - lo
        };
        for (axis, used, room) in [
            ("x", span(|p| p.0), plot.x1 - plot.x0),
            ("y", span(|p| p.1), plot.y1 - plot.y0),
        ] {
            let share = used / room.max(1.0);
            if share < AXIS_USE && attr_of(svg, pid, &format!("data-axis-note-{axis}")).is_none() {
                out.push(format!(
                    "{pid}: the data use {:.0}% of the {axis} axis (under {:.0}%, and no data-axis-note-{axis} says why)",
                    100.0 * share,
                    100.0 * AXIS_USE
                ));
            }
        }
    }
    // Markers of different series on one spot, neither labelled there.
    let mut spots: Vec<((f32, f32), usize)> = Vec::new();
    for (k, (id, _, marks, _)) in seen.groups.iter().enumerate() {
        if id.starts_with("series-") {
            spots.extend(marks.iter().map(|m| (centre(m), k)));
        }
    }
    spots.sort_by(|a, b| a.0 .0.total_cmp(&b.0 .0));
    let labelled_near = |k: usize, p: (f32, f32)| {
        seen.group_texts[k].iter().any(|(_, b)| {
            let c = centre(b);
            (c.0 - p.0).abs() <= 70.0 && (c.1 - p.1).abs() <= 70.0
        })
    };
    let mut pairs = std::collections::BTreeMap::<(usize, usize), usize>::new();
    for (i, &(p, a)) in spots.iter().enumerate() {
        for &(q, b) in spots[i + 1..].iter() {
            if q.0 - p.0 > 2.0 {
                break;
            }
            if a != b
                && (q.1 - p.1).abs() <= 2.0
                && !labelled_near(a, p)
                && !labelled_near(b, p)
                && !merged(a)
                && !merged(b)
            {
                *pairs.entry((a.min(b), a.max(b))).or_default() += 1;
            }
        }
    }
    for ((a, b), n) in pairs {
        out.push(format!(
            "{} and {} put {n} unlabelled marker(s) on the same spot",
            seen.groups[a].0, seen.groups[b].0
        ));
    }
    out.extend(label_problems(svg, seen));
    out.extend(text_problems(seen));
    out.extend(band_problems(svg, seen));
    out.extend(panel_problems(seen, w));
    out
}

/// Distance from `p` to the box `b` (0 inside it).
fn gap(p: (f32, f32), b: &Bx) -> f32 {
    let dx = (b.x0 - p.0).max(p.0 - b.x1).max(0.0);
    let dy = (b.y0 - p.1).max(p.1 - b.y1).max(0.0);
    (dx * dx + dy * dy).sqrt()
}

/// Whether box `a` lies within box `b` (half a pixel of slack).
fn within(a: &Bx, b: &Bx) -> bool {
    a.x0 >= b.x0 - 0.5 && a.x1 <= b.x1 + 0.5 && a.y0 >= b.y0 - 0.5 && a.y1 <= b.y1 + 0.5
}

/// A point label: its text, its box, the point it names (when known) and
/// whether a leader line joins them.
type PointLabel = (String, Bx, Option<(f32, f32)>, bool);

/// Point labels a reader could take for another point's, and points
/// marked by a number the footnote does not spell out.
fn label_problems(svg: &str, seen: &Seen) -> Vec<String> {
    let mut out = Vec::new();
    let marks: Vec<(f32, f32)> = seen
        .groups
        .iter()
        .filter(|g| g.0.starts_with("series-"))
        .flat_map(|g| g.2.iter().map(centre))
        .collect();
    let mut labels: Vec<PointLabel> = Vec::new();
    if seen.labels.is_empty() {
        // Charts without label groups: a label in a series' group names
        // that series' nearest marker (one further than 30 px has a
        // leader line, not checked).
        for (k, texts) in seen.group_texts.iter().enumerate() {
            for (t, b) in texts {
                let own = seen.groups[k]
                    .2
                    .iter()
                    .map(centre)
                    .min_by(|p, q| gap(*p, b).total_cmp(&gap(*q, b)))
                    .filter(|p| gap(*p, b) <= 30.0);
                labels.push((t.clone(), *b, own, false));
            }
        }
    } else {
        for (id, k, b) in &seen.labels {
            let text = k
                .and_then(|k| {
                    seen.group_texts[k]
                        .iter()
                        .find(|(_, tb)| within(tb, b))
                        .map(|x| x.0.clone())
                })
                .unwrap_or_default();
            let point = attr_of(svg, id, "data-point").and_then(|v| {
                let (x, y) = v.split_once(',')?;
                Some((x.parse().ok()?, y.parse().ok()?))
            });
            let leader = attr_of(svg, id, "data-leader").is_some();
            labels.push((text, *b, point, leader));
        }
    }
    for (text, b, own, leader) in &labels {
        let Some(p) = own else { continue };
        if *leader {
            continue;
        }
        let mine = gap(*p, b);
        let need = (2.0 * mine + 4.0).max(14.0);
        if let Some(q) = marks.iter().find(|q| {
            ((q.0 - p.0).powi(2) + (q.1 - p.1).powi(2)).sqrt() > 2.5 && gap(**q, b) < need
        }) {
            out.push(format!(
                "label {text:?} ({mine:.0} px from its point) is {:.0} px from another marker at ({:.0}, {:.0}): which point it names is unclear",
                gap(*q, b),
                q.0,
                q.1
            ));
        }
    }
    // "[3]" at a point: the footnote must say what 3 is.
    for texts in &seen.group_texts {
        for (t, _) in texts {
            let numbered = t.len() > 2
                && t.starts_with('[')
                && t.ends_with(']')
                && t[1..t.len() - 1].chars().all(|c| c.is_ascii_digit());
            let key = format!("{t} ");
            if numbered && !seen.texts.iter().any(|(o, _)| o.contains(&key)) {
                out.push(format!(
                    "a point is marked {t} but no footnote says what {t} is"
                ));
            }
        }
    }
    out
}

/// Hyphens standing for minus signs, "1 keys", and milliseconds drawn
/// as fractions of a second.
fn text_problems(seen: &Seen) -> Vec<String> {
    let mut out = Vec::new();
    const COUNTED: [&str; 14] = [
        "keys",
        "requests",
        "rows",
        "steps",
        "calls",
        "candidates",
        "shapes",
        "seeds",
        "events",
        "runs",
        "threads",
        "trials",
        "windows",
        "replicas",
    ];
    for (t, _) in &seen.texts {
        let cs: Vec<char> = t.chars().collect();
        let sign = cs.iter().enumerate().any(|(i, &c)| {
            c == '-'
                && cs
                    .get(i + 1)
                    .is_some_and(|n| n.is_ascii_digit() || *n == '.')
                && (i == 0 || " ([{=,:/±≈<>".contains(cs[i - 1]))
        });
        if sign {
            out.push(format!("text {t:?} has a hyphen for a minus sign (U+2212)"));
        }
        let words: Vec<&str> = t
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .collect();
        if words
            .windows(2)
            .any(|w| w[0] == "1" && COUNTED.contains(&w[1]))
        {
            out.push(format!("text {t:?} counts one in the plural"));
        }
    }
    // An x axis in seconds whose ticks all stay under 1: milliseconds.
    let num = |t: &str| t.replace('\u{2212}', "-").parse::<f32>().ok();
    for plot in &seen.plots {
        let under = |b: &Bx, lo: f32, hi: f32| {
            b.y0 >= plot.y1 + lo
                && b.y0 <= plot.y1 + hi
                && b.x0 >= plot.x0 - 30.0
                && b.x1 <= plot.x1 + 30.0
        };
        let ticks: Vec<f32> = seen
            .texts
            .iter()
            .filter(|(_, b)| under(b, -1.0, 25.0))
            .filter_map(|(t, _)| num(t))
            .collect();
        let title = seen
            .texts
            .iter()
            .find(|(t, b)| num(t).is_none() && under(b, 10.0, 50.0));
        if let Some((title, _)) = title
            && (title.contains("(s)") || title.contains("(s,"))
            && ticks.iter().filter(|v| **v != 0.0).count() >= 2
            && ticks.iter().all(|v| v.abs() < 1.0)
        {
            out.push(format!(
                "the x axis {title:?} is in seconds with every tick under 1 s: milliseconds"
            ));
        }
    }
    out
}

/// Bands filled down to the bottom of a log y axis (their zero edge).
fn band_problems(svg: &str, seen: &Seen) -> Vec<String> {
    let mut out = Vec::new();
    for (plot, pid) in seen.plots.iter().zip(&seen.plot_ids) {
        let Some(bottom) =
            attr_of(svg, pid, "data-y-log-bottom").and_then(|v| v.parse::<f32>().ok())
        else {
            continue;
        };
        for (k, (id, _, _, _)) in seen.groups.iter().enumerate() {
            if !id.starts_with("band-") {
                continue;
            }
            let floored = seen.fills[k].iter().any(|poly| {
                poly.iter()
                    .filter(|q| {
                        q.0 >= plot.x0 - 1.0 && q.0 <= plot.x1 + 1.0 && (q.1 - bottom).abs() <= 0.75
                    })
                    .count()
                    >= 2
            });
            if floored {
                out.push(format!(
                    "{id} is filled down to the bottom of its log axis (y = {bottom:.0}): a zero edge drawn as if it were data"
                ));
            }
        }
    }
    out
}

/// A chart of one panel drawn on under half the canvas' width, the rest
/// of it empty (a grid's column with no other panel).
fn panel_problems(seen: &Seen, w: f32) -> Vec<String> {
    match seen.plots.as_slice() {
        [one] if one.x1 - one.x0 < 0.45 * w && one.x1 < 0.6 * w => vec![format!(
            "its one plot is {:.0} px wide on a {w:.0} px canvas, the rest empty",
            one.x1 - one.x0
        )],
        _ => Vec::new(),
    }
}

fn svgs_in(dir: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    for d in dirs {
        let mut files: Vec<PathBuf> = std::fs::read_dir(&d)
            .unwrap()
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "svg"))
            .collect();
        files.sort();
        for f in files {
            out.push((
                format!("{}", f.strip_prefix(dir).unwrap_or(&f).display()),
                std::fs::read_to_string(&f).unwrap(),
            ));
        }
    }
    out
}

fn rendered_charts() -> Vec<(String, String)> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let files = ratelab::scenario::scenario_files(&root.join("scenarios")).unwrap();
    let mut out = Vec::new();
    for f in files {
        let s = ratelab::scenario::Scenario::load(&f).unwrap();
        let ctx = ratelab::lab::RunContext::for_scenario(&s);
        let o = ratelab::kinds::run(&s, &ctx).unwrap();
        for c in o.charts {
            out.push((format!("{}/{}.svg", s.common.name, c.name), c.svg));
        }
    }
    out
}

#[test]
#[ignore = "slow: renders every chart of every committed scenario; .ci/run runs it"]
fn every_chart_is_laid_out_cleanly() {
    let (charts, least) = match std::env::var_os("RATELAB_LAYOUT_DIR") {
        Some(d) => (svgs_in(Path::new(&d)), 1),
        None => (rendered_charts(), 20),
    };
    assert!(charts.len() >= least, "{} charts", charts.len());
    let mut bad = Vec::new();
    for (name, svg) in &charts {
        for p in problems(svg) {
            bad.push(format!("{name}: {p}"));
        }
    }
    let failing: std::collections::BTreeSet<&str> = bad
        .iter()
        .map(|b| b.split(": ").next().unwrap_or(""))
        .collect();
    assert!(
        bad.is_empty(),
        "{} problem(s) in {} of {} charts:\n{}",
        bad.len(),
        failing.len(),
        charts.len(),
        bad.join("\n")
    );
}

#[test]
fn the_checks_catch_a_bad_chart() {
    // Overlapping texts, one off the canvas, a legend over a line, a
    // legend entry whose series draws outside the plot, and a legend entry
    // for no series: every check fires.
    let svg = r##"<svg xmlns="http://www.w3.org/2000/svg" width="200" height="100" font-family="DejaVu Sans">
<g id="plot-area"><rect x="10" y="10" width="180" height="80" fill="#fff"/></g>
<g id="series-0"><path d="M10 50L190 50" stroke="#000" fill="none"/></g>
<g id="series-1-legend"><path d="M150 98L160 98" stroke="#000" fill="none"/></g>
<g id="legend"><rect x="100" y="40" width="60" height="40" fill="#fff"/>
<text x="105" y="55" font-size="10">ghost</text><text x="105" y="75" font-size="10">ghost 2</text></g>
<text x="20" y="30" font-size="12">time</text><text x="25" y="30" font-size="12">ime</text>
<text x="190" y="95" font-size="12">outside</text>
</svg>"##;
    let p = problems(svg).join("\n");
    for want in [
        "overlap",
        "leaves the canvas",
        "covers a line",
        "no mark in the plot",
        "the legend has 2 entries but names 1",
    ] {
        assert!(p.contains(want), "{want}: {p}");
    }
}

/// A chart with a hidden series, a legend over a quarter of the canvas,
/// data on a sliver of the y axis and two series' markers on one spot.
const MEANINGLESS: &str = r##"<svg xmlns="http://www.w3.org/2000/svg" width="400" height="200" font-family="DejaVu Sans">
<g id="plot-area"PLOTNOTE><rect x="10" y="10" width="380" height="180" fill="#fff"/></g>
<g id="series-0-legend"MERGED><path d="M10 100L390 101" stroke="#000" stroke-width="2" fill="none"/></g>
<g id="series-1-legend"><path d="M10 100L390 100" stroke="#f00" stroke-width="2" fill="none"/></g>
<g id="series-2"><circle cx="200" cy="95" r="4" fill="#0f0"/>LABEL</g>
<g id="series-3"><circle cx="201.5" cy="95" r="4" fill="#00f"/></g>
<g id="legend"><rect x="20" y="110" width="LEGENDW" height="70" fill="#fff"/>
<text x="25" y="130" font-size="10">a</text><text x="25" y="160" font-size="10">b</text></g>
</svg>"##;

#[test]
fn the_meaning_checks_catch_a_bad_chart() {
    let bad = MEANINGLESS
        .replace("PLOTNOTE", "")
        .replace("MERGED", "")
        .replace("LABEL", "")
        .replace("LEGENDW", "200");
    let p = problems(&bad).join("\n");
    for want in [
        "series-0 is 100% covered by the series drawn after it",
        "plot-area: the data use 3% of the y axis",
        "series-2 and series-3 put 1 unlabelled marker(s) on the same spot",
    ] {
        assert!(p.contains(want), "{want}: {p}");
    }
    // The legend fires over a quarter only.
    assert!(
        !p.contains("the legend takes 18% of its canvas (at most"),
        "{p}"
    );
    let wide = MEANINGLESS
        .replace("PLOTNOTE", "")
        .replace("MERGED", "")
        .replace("LABEL", "")
        .replace("LEGENDW", "300");
    assert!(
        problems(&wide)
            .join("\n")
            .contains("the legend takes 26% of its canvas (at most 25%)"),
        "{}",
        problems(&wide).join("\n")
    );
    // Said to be merged, the range explained, the spot labelled: quiet.
    let good = MEANINGLESS
        .replace(
            "PLOTNOTE",
            r#" data-axis-note-y="the values differ by 1 in 1000""#,
        )
        .replace("MERGED", r#" data-merged="equal to b but at the end""#)
        .replace(
            "LABEL",
            r#"<text x="210" y="90" font-size="10">c = d</text>"#,
        )
        .replace("LEGENDW", "200");
    let p = problems(&good).join("\n");
    for quiet in ["covered", "of the y axis", "same spot", "of its canvas"] {
        assert!(!p.contains(quiet), "{quiet}: {p}");
    }
}

/// A chart with a label nearer another point than its own, a point
/// marked by a number no footnote spells out, a band filled down to the
/// bottom of its log axis, a hyphen for a minus, "1 keys", milliseconds
/// as fractions of a second and one plot on a third of its canvas.
const UNCLEAR: &str = r##"<svg xmlns="http://www.w3.org/2000/svg" width="400" height="200" font-family="DejaVu Sans">
<g id="plot-area" data-y-log-bottom="150"><rect x="10" y="10" width="PLOTW" height="150" fill="#fff"/></g>
<g id="band-0"><path d="M20 100L150 100L150 BANDLOWL20 BANDLOWZ" fill="#00f" fill-opacity="0.2"/></g>
<g id="series-0"><circle cx="40" cy="60" r="4" fill="#0f0"/><circle cx="100" cy="60" r="4" fill="#0f0"/>
<g id="label-0.0" data-point="40,60"LEADER><text x="48" y="64" font-size="10">first point label</text></g>
<text x="104" y="40" font-size="10">[2]</text></g>
<text x="20" y="175" font-size="10">TICK1</text><text x="80" y="175" font-size="10">TICK2</text>
<text x="40" y="192" font-size="10">UNIT</text>
<text x="170" y="30" font-size="10">SIGNS</text>
FOOT</svg>"##;

#[test]
fn the_checks_of_labels_bands_and_texts_catch_a_bad_chart() {
    let fill = |plot_w: &str,
                low: &str,
                leader: &str,
                ticks: (&str, &str),
                unit: &str,
                signs: &str,
                foot: &str| {
        UNCLEAR
            .replace("PLOTW", plot_w)
            .replace("BANDLOW", low)
            .replace("LEADER", leader)
            .replace("TICK1", ticks.0)
            .replace("TICK2", ticks.1)
            .replace("UNIT", unit)
            .replace("SIGNS", signs)
            .replace("FOOT", foot)
    };
    let bad = fill(
        "150",
        "150",
        "",
        ("0.002", "0.004"),
        "time (s)",
        "WithSlack(-1), 1 keys",
        "",
    );
    let p = problems(&bad).join("\n");
    for want in [
        "label \"first point label\"",
        "which point it names is unclear",
        "a point is marked [2] but no footnote says what [2] is",
        "band-0 is filled down to the bottom of its log axis",
        "has a hyphen for a minus sign",
        "counts one in the plural",
        "is in seconds with every tick under 1 s: milliseconds",
        "its one plot is 150 px wide on a 400 px canvas",
    ] {
        assert!(p.contains(want), "{want}: {p}");
    }
    // A leader line to the label, the number's key under the chart, the
    // band's lower edge off the axis' bottom, signs and counts written
    // right, milliseconds in ms, the plot across the canvas: quiet.
    let good = fill(
        "380",
        "140",
        r#" data-leader="1""#,
        ("2", "4"),
        "time (ms)",
        "WithSlack(\u{2212}1), 1 key",
        r#"<text x="180" y="120" font-size="9">[2] the second point</text>"#,
    );
    let p = problems(&good).join("\n");
    for quiet in [
        "which point it names",
        "no footnote says",
        "filled down to the bottom",
        "hyphen for a minus",
        "in the plural",
        "milliseconds",
        "its one plot",
    ] {
        assert!(!p.contains(quiet), "{quiet}: {p}");
    }
}

/// What an outside checker reads from an SVG's markup alone (no layout):
/// every problem of its semantic groups (empty: none). A `<title>` and a
/// `<desc>`; a `plot-area` group; series (and bands) numbered over the
/// SVG, each id once; and each `series-<n>-legend` / `band-<n>-legend`
/// entry of the `legend` group naming a group that draws something.
fn semantic_problems(svg: &str) -> Vec<String> {
    use resvg::usvg::roxmltree::Document;
    let doc = match Document::parse(svg) {
        Ok(d) => d,
        Err(e) => return vec![format!("does not parse: {e}")],
    };
    let root = doc.root_element();
    let mut out = Vec::new();
    for want in ["title", "desc"] {
        let text = root
            .children()
            .find(|n| n.has_tag_name(want))
            .and_then(|n| n.text())
            .unwrap_or("");
        if text.trim().is_empty() {
            out.push(format!("no <{want}>"));
        }
    }
    let groups: Vec<_> = root
        .descendants()
        .filter(|n| n.has_tag_name("g") && n.attribute("id").is_some())
        .collect();
    let id = |n: &resvg::usvg::roxmltree::Node| n.attribute("id").unwrap_or("").to_string();
    if !groups.iter().any(|g| id(g) == "plot-area") {
        out.push("no plot-area group".into());
    }
    let in_legend = |n: &resvg::usvg::roxmltree::Node| {
        n.ancestors().skip(1).any(|a| {
            a.attribute("id")
                .is_some_and(|i| i == "legend" || i.starts_with("legend-"))
        })
    };
    let marks = |n: &resvg::usvg::roxmltree::Node| {
        n.descendants()
            .filter(|d| {
                ["polyline", "path", "circle", "rect", "polygon", "line"]
                    .iter()
                    .any(|t| d.has_tag_name(*t))
            })
            .count()
    };
    let mut series: Vec<String> = Vec::new();
    for g in groups.iter().filter(|g| !in_legend(g)) {
        let i = id(g);
        let numbered = |kind: &str| {
            i.strip_prefix(kind)
                .is_some_and(|n| n.parse::<usize>().is_ok())
        };
        if numbered("series-") || numbered("band-") {
            if series.contains(&i) {
                out.push(format!("two groups are {i}"));
            }
            series.push(i);
        } else if i.starts_with("series-") || i.starts_with("band-") {
            out.push(format!("{i}: not series-<n> / band-<n>"));
        }
    }
    // Series are numbered in drawing order, from 0, without gaps.
    let nums: Vec<usize> = series
        .iter()
        .filter_map(|s| s.strip_prefix("series-")?.parse().ok())
        .collect();
    if nums != (0..nums.len()).collect::<Vec<_>>() {
        out.push(format!(
            "series not numbered 0.. in drawing order: {nums:?}"
        ));
    }
    for g in groups.iter().filter(|g| in_legend(g)) {
        let i = id(g);
        let Some(target) = i.strip_suffix("-legend") else {
            out.push(format!("the legend holds {i}, not a <target>-legend entry"));
            continue;
        };
        match groups.iter().find(|s| id(s) == target && !in_legend(s)) {
            None => out.push(format!("the legend names {target}, which has no group")),
            Some(s) if marks(s) == 0 => {
                out.push(format!("the legend names {target}, which draws nothing"))
            }
            Some(_) => {}
        }
    }
    out
}

/// Every committed chart carries the markup an outside checker reads:
/// each series in its legend is one non-empty `series-<n>` group.
#[test]
fn every_committed_chart_pairs_its_legend_with_its_series() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("reports");
    let mut svgs: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .flat_map(|e| std::fs::read_dir(e.unwrap().path()).into_iter().flatten())
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "svg"))
        .collect();
    svgs.sort();
    assert!(svgs.len() > 50, "only {} charts under reports/", svgs.len());
    let mut legends = 0;
    let mut bad = Vec::new();
    for p in &svgs {
        let svg = std::fs::read_to_string(p).unwrap();
        legends += usize::from(svg.contains("-legend\""));
        for e in semantic_problems(&svg) {
            bad.push(format!("{}: {e}", p.display()));
        }
    }
    assert!(legends > 50, "only {legends} charts with legend entries");
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn the_semantic_check_catches_a_bad_chart() {
    let good = r##"<svg xmlns="http://www.w3.org/2000/svg" width="200" height="100">
<title>t</title><desc>d</desc>
<g id="plot-area"><rect x="0" y="0" width="9" height="9"/></g>
<g id="series-0"><path d="M0 0L9 9"/></g>
<g id="series-1">SECOND</g>
<g id="legend"><g id="series-0-legend"><text>a</text></g><g id="series-1-legend"><text>b</text></g></g>
</svg>"##;
    assert!(semantic_problems(&good.replace("SECOND", "<circle r=\"2\"/>")).is_empty());
    let p = semantic_problems(&good.replace("SECOND", "")).join("\n");
    assert!(p.contains("series-1, which draws nothing"), "{p}");
    let p = semantic_problems(
        &good
            .replace("<title>t</title>", "")
            .replace("series-1\"", "series-2\""),
    )
    .join("\n");
    assert!(
        p.contains("no <title>")
            && p.contains("series-1, which has no group")
            && p.contains("numbered"),
        "{p}"
    );
}
