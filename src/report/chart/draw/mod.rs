//! Layout of one chart, drawn with plotters ([`plot`]): what plotters does
//! not do is here — the ticks of log and percentile axes, the zero row of
//! log axes, point labels placed without collisions, and the legend's
//! place (a corner measured free of data, else outside the plot).
//!
//! Group ids the layout test (and any outside checker) reads: `plot-area`
//! (`plot-area-<k>` for the other panels of small multiples), each series'
//! marks in `series-<n>` and each band in `band-<n>`, numbered over the
//! SVG in drawing order, and `legend` (`legend-<k>`) holding one group
//! `series-<n>-legend` / `band-<n>-legend` per entry.

use super::error::DrawError;
use super::style::{self, size, Look, Marker, Want, DASHES, GRID, INK, MUTED};
use super::{ChartSpec, Legend, SeriesStyle};
use std::fmt::Write as _;

mod axis;
mod geom;
mod labels;
mod layout;
mod plot;
mod prep;
mod text;

use axis::*;
use geom::*;
use labels::*;
use prep::*;
use text::*;

/// Marker radius (px).
const MR: f64 = 4.0;
/// Height of the zero row under a log y axis, and its gap (px).
const ZERO_ROW: f64 = 18.0;
const ZERO_GAP: f64 = 12.0;

/// A series ready to draw: axis-unit points (`None` y: zero row).
struct Prep {
    label: String,
    style: SeriesStyle,
    pts: Vec<(f64, Option<f64>)>,
    labels: Vec<String>,
    want: Want,
    /// Per point: off the axis, pinned at its edge (drawn as an arrow).
    at_edge: Vec<bool>,
}

/// A band in px: its filled polygons, and on a log axis the stretches of
/// its upper edge drawn alone where its lower edge is 0.
struct BandPx {
    fills: Vec<Vec<(f64, f64)>>,
    edges: Vec<Vec<(f64, f64)>>,
}

/// Where the legend goes.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Place {
    Inside,
    Right,
    Bottom,
}

/// Everything placed: the frame of the plot and its geometry in px.
struct Frame {
    plot: R,
    /// Bottom of the log part (the zero row is below it).
    data_bottom: f64,
    zero_y: Option<f64>,
    /// The "0" column left of a log x axis (its x), and where the log
    /// part starts.
    zero_x: Option<f64>,
    data_left: f64,
    x_of: Box<dyn Fn(f64) -> f64>,
    y_of: Box<dyn Fn(Option<f64>) -> f64>,
    /// Series polylines (px), per series.
    lines: Vec<Vec<(f64, f64)>>,
    /// Series marker positions (px), per series.
    marks: Vec<Vec<(f64, f64)>>,
    /// Bands (px).
    bands: Vec<BandPx>,
    legend: Option<R>,
    texts: Vec<Txt>,
    leaders: Vec<((f64, f64), (f64, f64))>,
    vline_px: Vec<(f64, Option<f64>)>,
    /// The footnote's lines as laid out (see `footnote_lines`).
    footnote: Vec<Txt>,
    /// Lines the footnote needs (the chart is laid out again with room
    /// for them).
    foot_need: usize,
    /// plotters' x range (axis units, extended left over the zero
    /// column).
    x_dom: (f64, f64),
    /// plotters' y range (axis units, extended down over the zero row).
    y_dom: (f64, f64),
    /// The x ticks that are labelled (axis units, label).
    x_ticks: Vec<(f64, String)>,
    /// The y ticks, the zero row's last (plot units, label).
    y_ticks: Vec<(f64, String)>,
    /// Baseline of the x axis title.
    x_label_y: f64,
    /// Font sizes of the x and y axis titles (shrunk to fit).
    titles: (f64, f64),
}

/// Whether `r` is clear of every drawn series, marker and band.
fn clear_of_data(r: &R, f: &Frame) -> bool {
    let rp = r.pad(2.0);
    for l in &f.lines {
        if l.windows(2).any(|w| rp.hits(w[0], w[1])) {
            return false;
        }
    }
    for m in &f.marks {
        if m.iter()
            .any(|&(x, y)| rp.overlaps(&R::new(x - MR, y - MR, x + MR, y + MR)))
        {
            return false;
        }
    }
    for band in &f.bands {
        if band
            .edges
            .iter()
            .any(|l| l.windows(2).any(|w| rp.hits(w[0], w[1])))
        {
            return false;
        }
        for b in &band.fills {
            if b.windows(2).any(|w| rp.hits(w[0], w[1])) {
                return false;
            }
            let c = ((r.x0 + r.x1) / 2.0, (r.y0 + r.y1) / 2.0);
            if [c, (r.x0, r.y0), (r.x1, r.y1), (r.x0, r.y1), (r.x1, r.y0)]
                .iter()
                .any(|&p| point_in_poly(p, b))
            {
                return false;
            }
        }
    }
    true
}

/// Whether band `b` reaches zero (or under the floor) on a log y axis:
/// there only its upper edge is drawn, and the legend says so.
fn band_cut(spec: &ChartSpec, b: &super::Band) -> bool {
    spec.y_log
        && b.lower
            .iter()
            .chain(&b.upper)
            .any(|p| p.1.is_finite() && (p.1 <= 0.0 || p.1 < spec.log_floor))
}

/// Whether band `b` is drawn as its upper edge alone: its lower edge at
/// zero (or under the floor) everywhere on a log y axis.
fn band_edge_only(spec: &ChartSpec, b: &super::Band) -> bool {
    spec.y_log
        && !b.lower.is_empty()
        && b.lower
            .iter()
            .all(|p| p.1.is_finite() && (p.1 <= 0.0 || p.1 < spec.log_floor))
}

/// The legend's rows: labelled series, then labelled bands (a band that
/// [`super::Band::follows`] a series right after that series' row).
fn legend_entries(spec: &ChartSpec, preps: &[Prep], looks: &[Look]) -> Vec<Entry> {
    let band_entry = |i: usize, b: &super::Band| {
        // A band under its series' entry is short (the series' spread,
        // say): the chart's caption says where it is its edge alone.
        let label = if !b.follows.is_empty() {
            b.label.clone()
        } else if band_edge_only(spec, b) {
            format!("{} (lower edge 0: its top edge)", b.label)
        } else if band_cut(spec, b) {
            format!("{} (where its lower edge is 0: top edge)", b.label)
        } else {
            b.label.clone()
        };
        Entry {
            label: fit_label(&plot::sign_minus(&label)),
            target: format!("band-{i}"),
            look: None,
            band: Some((b.color, b.opacity)),
            edge: band_edge_only(spec, b),
        }
    };
    // A band follows the first series of its label (identical series
    // merged into one keep the first's label at its head).
    let follows = |b: &super::Band, label: &str| {
        !b.follows.is_empty() && label.split(" = ").next() == Some(b.follows.as_str())
    };
    let mut placed = vec![false; spec.bands.len()];
    let mut entries: Vec<Entry> = Vec::new();
    for (i, p) in preps.iter().enumerate() {
        if !p.label.is_empty() {
            entries.push(Entry {
                label: fit_label(&plot::sign_minus(&p.label)),
                target: format!("series-{i}"),
                look: Some(looks[i].clone()),
                band: None,
                edge: false,
            });
            for (k, b) in spec.bands.iter().enumerate() {
                if !placed[k] && !b.label.is_empty() && follows(b, &p.label) {
                    placed[k] = true;
                    entries.push(band_entry(k, b));
                }
            }
        }
    }
    for (i, b) in spec.bands.iter().enumerate() {
        if !placed[i] && !b.label.is_empty() {
            entries.push(band_entry(i, b));
        }
    }
    entries
}

/// The SVG of `spec` on a `size` canvas.
pub(super) fn svg(spec: &ChartSpec, size: (u32, u32)) -> Result<String, DrawError> {
    let mut o = plot::header(size, &spec.title, &spec.caption)?;
    let ids = plot::Ids {
        panel: None,
        before: (0, 0),
    };
    o.push_str(&panel(spec, size, (0, 0), None, Own::Legend, &ids)?);
    o.push_str("</svg>\n");
    Ok(o)
}

/// The SVG of small multiples: `panels` in a grid of `cols` columns on a
/// `size` canvas under `title` (each panel keeps its own title and axes;
/// give them the same ranges to share axes). Panels whose legends are all
/// the same get one legend, in a row under the title ([`grid_top`] makes
/// room for it), and none of their own.
pub(super) fn svg_grid(
    title: &str,
    caption: &str,
    panels: &[ChartSpec],
    cols: usize,
    size: (u32, u32),
) -> Result<String, DrawError> {
    let cols = cols.max(1);
    let rows = panels.len().div_ceil(cols).max(1);
    let shared = shared_legend(panels);
    let top = grid_top(panels);
    let (pw, ph) = (size.0 / cols as u32, (size.1 - top) / rows as u32);
    let mut o = plot::header(size, title, caption)?;
    o.push_str(&plot::grid_title(size, title)?);
    if let Some(entries) = &shared {
        o.push_str(&plot::row_legend(
            size,
            GRID_TITLE + LEGEND_ROW / 2.0,
            entries,
        )?);
    }
    let mut before = (0, 0);
    for (k, spec) in panels.iter().enumerate() {
        let ids = plot::Ids {
            panel: Some(k),
            before,
        };
        let (xs, ys, floor) = scales(spec);
        before.0 += prepare_series(spec, xs, ys, floor).len();
        before.1 += spec.bands.len();
        let at = (
            ((k % cols) as u32 * pw) as i32,
            (top + (k / cols) as u32 * ph) as i32,
        );
        let own = if shared.is_some() {
            Own::Shared { first: k == 0 }
        } else {
            Own::Legend
        };
        o.push_str(&panel(spec, (pw, ph), at, Some((k, size)), own, &ids)?);
    }
    o.push_str("</svg>\n");
    Ok(o)
}

/// Height of a grid's title strip (px).
const GRID_TITLE: f64 = 40.0;
/// Height of a grid's shared legend row (px).
const LEGEND_ROW: f64 = 24.0;

/// Where a grid's panels start (px): under its title, and its shared
/// legend when the panels have one.
pub(super) fn grid_top(panels: &[ChartSpec]) -> u32 {
    let legend = if shared_legend(panels).is_some() {
        LEGEND_ROW
    } else {
        0.0
    };
    (GRID_TITLE + legend) as u32
}

/// Every panel's legend entries, resolved as the panel draws them.
fn entries_of(spec: &ChartSpec) -> Vec<Entry> {
    let (xs, ys, floor) = scales(spec);
    let preps = prepare_series(spec, xs, ys, floor);
    let looks = style::assign_looks(&preps.iter().map(|p| p.want).collect::<Vec<_>>());
    legend_entries(spec, &preps, &looks)
}

/// The one legend of small multiples whose legends are all the same (and
/// fit one row), else None.
fn shared_legend(panels: &[ChartSpec]) -> Option<Vec<Entry>> {
    let first = entries_of(panels.first()?);
    let same = |e: &[Entry]| {
        e.len() == first.len()
            && e.iter().zip(&first).all(|(a, b)| {
                a.label == b.label
                    && a.target == b.target
                    && a.look == b.look
                    && a.band == b.band
                    && a.edge == b.edge
            })
    };
    let fits = plot::row_legend_width(&first) <= f64::from(super::SIZE.0) - 24.0;
    (panels.len() > 1
        && !first.is_empty()
        && fits
        && panels[1..].iter().all(|p| same(&entries_of(p))))
    .then_some(first)
}

/// A panel's legend: its own, or the grid's (drawn once above the grid;
/// the first panel's series are the ones it names).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Own {
    Legend,
    Shared { first: bool },
}

/// The x and y scales of `spec`, and its log floor.
fn scales(spec: &ChartSpec) -> (Scale, Scale, f64) {
    let floor = if spec.log_floor > 0.0 {
        spec.log_floor
    } else {
        0.0
    };
    let xs = if spec.x_percentile {
        Scale::Pct
    } else if spec.x_log {
        Scale::Log
    } else {
        Scale::Linear
    };
    let ys = if spec.y_log {
        Scale::Log
    } else {
        Scale::Linear
    };
    (xs, ys, floor)
}

/// One chart's groups, laid out on a `size` canvas at `at` (a panel `k` of
/// a grid on a canvas of its own size, or the whole canvas).
fn panel(
    spec: &ChartSpec,
    size: (u32, u32),
    at: (i32, i32),
    grid: Option<(usize, (u32, u32))>,
    own: Own,
    ids: &plot::Ids,
) -> Result<String, DrawError> {
    let (xs, ys, floor) = scales(spec);
    let mut preps = prepare_series(spec, xs, ys, floor);
    let looks = style::assign_looks(&preps.iter().map(|p| p.want).collect::<Vec<_>>());
    dodge_points(&mut preps, xs);

    let (xa, ya) = axes(spec, &preps, xs, ys, floor);

    let mut entries = legend_entries(spec, &preps, &looks);
    // A grid's shared legend: none laid out here; the first panel's
    // groups say what it names.
    let named = match own {
        Own::Legend => None,
        Own::Shared { first } => {
            let all = std::mem::take(&mut entries);
            Some(if first { all } else { Vec::new() })
        }
    };
    let (legend_w, legend_h) = plot::legend_size(&entries);

    let ctx = Ctx {
        spec,
        w: f64::from(size.0),
        h: f64::from(size.1),
        preps: &preps,
        xa: &xa,
        ya: &ya,
        xs,
        ys,
        floor,
        legend_w,
        legend_h,
        n_entries: entries.len(),
    };
    let mut place = Place::Inside;
    let mut frame = ctx.frame(place, 0);
    if !entries.is_empty() && frame.legend.is_none() {
        // Under the plot a tall legend squeezes it flat: beside it then,
        // if it fits the height and leaves the plot half the width.
        // A narrow legend goes beside the plot; a wide one that is short
        // goes under it (beside, it would halve the plot's width).
        let squeezes = ctx.h - legend_h < 330.0;
        let wide_and_short = legend_w > 0.3 * ctx.w && legend_h <= 0.25 * ctx.h;
        place = if !wide_and_short
            && ((legend_w <= 430.0 && legend_h <= 430.0)
                || (squeezes && legend_h <= ctx.h - 80.0 && legend_w <= ctx.w * 0.5))
        {
            Place::Right
        } else {
            Place::Bottom
        };
        frame = ctx.frame(place, 0);
    }
    // Room for the footnote (what found no room in the plot), laid out
    // again until it holds its lines.
    let mut reserved = 0;
    for _ in 0..4 {
        if frame.foot_need <= reserved {
            break;
        }
        reserved = frame.foot_need;
        let again = ctx.frame(place, reserved);
        if place != Place::Inside || again.legend.is_some() {
            frame = again;
        } else {
            place = Place::Right;
            frame = ctx.frame(place, reserved);
        }
    }
    ctx.plot(
        &frame,
        named.as_ref().unwrap_or(&entries),
        &looks,
        at,
        grid,
        ids,
    )
}

struct Ctx<'a> {
    spec: &'a ChartSpec,
    /// The canvas (or panel) size, px.
    w: f64,
    h: f64,
    preps: &'a [Prep],
    xa: &'a Axis,
    ya: &'a Axis,
    xs: Scale,
    ys: Scale,
    floor: f64,
    legend_w: f64,
    legend_h: f64,
    n_entries: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signs_get_the_typographic_minus() {
        assert_eq!(plot::sign_minus("-72% excess"), "\u{2212}72% excess");
        assert_eq!(
            plot::sign_minus("estimate - true"),
            "estimate \u{2212} true"
        );
        assert_eq!(
            plot::sign_minus("(-3, x=-0.5)"),
            "(\u{2212}3, x=\u{2212}0.5)"
        );
        for kept in ["count-min", "2-4 ms", "x-1", "1e-3"] {
            assert_eq!(plot::sign_minus(kept), kept);
        }
    }

    /// A log axis ends at the 1-2-5 steps around the data, not at whole
    /// decades: data from 30 to 400 get 20..500, not 10..1000.
    #[test]
    fn log_axes_hug_the_data() {
        let a = axis(
            Scale::Log,
            &[30f64.log10(), 400f64.log10()],
            None,
            0.0,
            false,
            None,
        );
        let (lo, hi) = (10f64.powf(a.lo), 10f64.powf(a.hi));
        assert!(
            (15.0..=20.0).contains(&lo) && (500.0..600.0).contains(&hi),
            "{lo}..{hi}"
        );
        let labels: Vec<&str> = a.ticks.iter().map(|t| t.1.as_str()).collect();
        assert_eq!(labels, ["20", "50", "100", "200", "500"]);
    }

    /// A marker line far from the data does not stretch the axis: it is
    /// an arrow at the edge, labelled.
    #[test]
    fn a_far_marker_line_is_an_arrow_at_the_edge() {
        let mut spec = ChartSpec::new("t", "t", "x", "y");
        spec.series.push(super::super::Series::new(
            "s",
            vec![(0.0, 1.0), (10.0, 2.0)],
            SeriesStyle::Line,
        ));
        spec.vlines.push((1000.0, "bound".into()));
        let svg = svg(&spec, super::super::SIZE).unwrap();
        assert!(svg.contains("bound \u{2192}"), "{svg}");
        assert!(!svg.replace('\n', "").contains(">1000</text>"));
    }

    /// A line runs from the plot up to its label: a label in a lower row
    /// may not sit across it. The off-axis arrow's label, which cannot
    /// move from the edge, takes the top row; the other goes below it,
    /// clear of the arrow's line.
    #[test]
    fn marker_line_labels_are_not_crossed_by_another_line() {
        let mut spec = ChartSpec::new("t", "t", "x", "y");
        spec.series.push(super::super::Series::new(
            "s",
            vec![(0.0, 1.0), (10.0, 2.0)],
            SeriesStyle::Line,
        ));
        spec.vlines
            .push((9.3, "pick: a label about as wide as the bound's".into()));
        spec.vlines
            .push((1000.0, "bound: 2x2647213 (40.4MiB)".into()));
        let svg = svg(&spec, super::super::SIZE).unwrap();
        let y_of = |label: &str| -> f64 {
            let at = svg.find(label).unwrap_or_else(|| panic!("{label}: {svg}"));
            let tag = &svg[svg[..at].rfind("<text").unwrap()..at];
            let y = tag.split(" y=\"").nth(1).unwrap();
            y[..y.find('"').unwrap()].parse().unwrap()
        };
        assert!(y_of("bound:") < y_of("pick:"), "{svg}");
    }

    #[test]
    fn ticks_are_readable() {
        let a = axis(Scale::Linear, &[0.0, 0.01], None, 0.0, false, None);
        let labels: Vec<&str> = a.ticks.iter().map(|t| t.1.as_str()).collect();
        assert_eq!(labels.first(), Some(&"0"));
        let uniq: std::collections::BTreeSet<&&str> = labels.iter().collect();
        assert_eq!(uniq.len(), labels.len(), "{labels:?}");
        let a = axis(Scale::Linear, &[0.0], None, 0.0, true, None);
        assert!(a.ticks.iter().all(|t| t.0.fract() == 0.0));
        assert_eq!(pct_label(0.0), "0%");
        assert_eq!(pct_label(2.0), "99%");
        assert_eq!(pct_label(3.0), "99.9%");
        assert_eq!(decade_label(-5), "1e-5");
        assert_eq!(decade_label(3), "1000");
        assert_eq!(decade_label(4), "10k");
    }

    /// Every log axis of up to two decades gets 1-2-5 ticks; at any
    /// magnitude their labels are distinct and read back as their values.
    #[test]
    fn log_tick_labels_are_distinct_at_every_magnitude() {
        for lo in -7..6 {
            let vals = [f64::from(lo) + 0.1, f64::from(lo) + 1.9];
            let a = axis(Scale::Log, &vals, None, 0.0, false, None);
            let labels: Vec<&str> = a.ticks.iter().map(|t| t.1.as_str()).collect();
            assert_eq!(labels.len(), 7, "{labels:?}");
            let uniq: std::collections::BTreeSet<&&str> = labels.iter().collect();
            assert_eq!(uniq.len(), labels.len(), "{labels:?}");
            for (v, l) in &a.ticks {
                let back: f64 = if let Some(n) = l.strip_suffix('k') {
                    n.parse::<f64>().unwrap() * 1e3
                } else if let Some(n) = l.strip_suffix('M') {
                    n.parse::<f64>().unwrap() * 1e6
                } else {
                    l.parse().unwrap()
                };
                let want = 10f64.powf(*v);
                assert!((back - want).abs() <= 1e-9 * want, "{l} for {want}");
            }
        }
        assert_eq!(log_tick_label(2, -3), "2e-3");
        assert_eq!(log_tick_label(5, -3), "5e-3");
        assert_eq!(log_tick_label(2, -2), "0.02");
        assert_eq!(log_tick_label(5, -1), "0.5");
        assert_eq!(log_tick_label(5, 0), "5");
        assert_eq!(log_tick_label(2, 4), "20k");
    }

    #[test]
    fn the_zero_row_says_what_it_holds() {
        let row = |zero| axis(Scale::Log, &[-3.0, -1.0], None, 1e-4, false, Some(zero)).zero;
        assert_eq!(row(ZeroRow::Zeros).as_deref(), Some("0"));
        assert_eq!(row(ZeroRow::BelowFloor).as_deref(), Some("<1e-4"));
        let a = axis(
            Scale::Log,
            &[-3.0, -1.0],
            None,
            2.5e-5,
            false,
            Some(ZeroRow::BelowFloor),
        );
        assert_eq!(a.zero.as_deref(), Some("<2.500e-5"));
        assert_eq!(floor_label(0.01), "0.01");
        assert_eq!(floor_label(3e-6), "3e-6");
    }
}
