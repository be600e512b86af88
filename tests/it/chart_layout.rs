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
//!   without a label of either series near it.
//!
//! The SVG marks up what the checks read as groups: `plot-area`,
//! `series-<i>` and `band-<i>` (with `-legend` appended when the legend
//! names it) and `legend` (the legend box with its entries).
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
    /// Inside the `legend` group while walking it.
    in_legend: bool,
    /// Texts in the legend (one per entry).
    legend_texts: usize,
    /// Per group: it carries a text (a series labelled directly).
    labelled: Vec<bool>,
    /// Per group: its id as written (with `-legend`) and its texts.
    raw_ids: Vec<String>,
    group_texts: Vec<Vec<(String, Bx)>>,
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
    out
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
        let o = ratelab::lab::run(&s, &ctx).unwrap();
        for c in o.charts {
            out.push((format!("{}/{}.svg", s.common.name, c.name), c.svg));
        }
    }
    out
}

#[test]
#[ignore = "slow: renders every chart of every committed scenario; .ci/run runs it"]
fn every_chart_is_laid_out_cleanly() {
    let charts = match std::env::var_os("RATELAB_LAYOUT_DIR") {
        Some(d) => svgs_in(Path::new(&d)),
        None => rendered_charts(),
    };
    assert!(charts.len() >= 20, "{} charts", charts.len());
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
