//! A test that looks at the charts: every chart of every committed scenario
//! is rendered and its SVG laid out by usvg (text shaped with the embedded
//! font, as the PNG is drawn), then checked:
//!
//! * no two text boxes overlap, and every text box lies inside the canvas;
//! * the legend box overlaps no plotted point, line segment or band;
//! * every series or band named in the legend has a visible mark inside the
//!   plot area, and no two series draw the very same path (one would hide
//!   the other).
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
    /// Plot areas (one per panel).
    plots: Vec<Bx>,
    /// Per `series-<i>` / `band-<i>` group: segments, mark boxes, path data.
    groups: Vec<Drawn>,
    legend_targets: Vec<String>,
    /// Inside the `legend` group while walking it.
    in_legend: bool,
    /// Texts in the legend (one per entry).
    legend_texts: usize,
    /// Per group: it carries a text (a series labelled directly).
    labelled: Vec<bool>,
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
