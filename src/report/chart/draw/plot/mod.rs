//! The laid-out chart drawn by plotters on its SVG backend: the mesh (grid,
//! axes, ticks, tick labels, axis titles), bands, series and markers in the
//! chart's coordinates, the legend, and the texts placed by the layout.
//!
//! Each part is drawn by plotters into its own layer and the layers are
//! stacked in one `<svg>`, each in a group the layout test reads
//! (`plot-area`, `series-<i>`, `band-<i>`, `legend`). The chart's
//! coordinates are axis units (log10 for log axes, −log10(1−p) for
//! percentiles, the zero row below a log axis' range); [`Ticked`] gives
//! plotters our ticks for them.

use super::*;
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::element::{DashedPathElement, Drawable, PointCollection};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters_backend::DrawingErrorKind;
use std::sync::Once;

mod marks;
use marks::*;

/// plotters' font sizes are 1.24 times the SVG `font-size` it writes.
const PT: f64 = 1.24;
/// The font plotters measures with (the embedded DejaVu Sans) and names.
const FAMILY: &str = "DejaVu Sans";
/// Width of a legend swatch's column, and the legend's inner margin (px).
const SWATCH: i32 = 36;
const LEGEND_MARGIN: i32 = 6;

type Area<'b> = DrawingArea<SVGBackend<'b>, Shift>;

/// Draws one layer of a chart (see [`layer`]).
type Layer<'a> =
    dyn Fn(&dyn Fn(&Area<'_>) -> Result<(), DrawError>) -> Result<String, DrawError> + 'a;

/// The group ids of one chart, or of panel `k` of small multiples: series
/// and bands are numbered over the whole SVG in drawing order (a panel's
/// first series is numbered after the previous panels' ones), so every
/// `series-<n>` is one group and the shared legend's `series-<n>-legend`
/// names the first panel's.
pub(super) struct Ids {
    pub(super) panel: Option<usize>,
    /// The series and bands drawn by the panels before this one.
    pub(super) before: (usize, usize),
}

impl Ids {
    /// `series-<i>` / `band-<i>` of this panel as numbered over the SVG.
    fn global(&self, target: &str) -> String {
        let shift = |kind: &str, off: usize| {
            target
                .strip_prefix(kind)
                .and_then(|n| n.parse::<usize>().ok())
                .map(|n| format!("{kind}{}", n + off))
        };
        shift("series-", self.before.0)
            .or_else(|| shift("band-", self.before.1))
            .unwrap_or_else(|| target.to_string())
    }

    /// A one-per-panel id: `base` for the chart or the first panel,
    /// `base-<k>` for the others.
    fn per_panel(&self, base: &str) -> String {
        match self.panel {
            Some(k) if k > 0 => format!("{base}-{k}"),
            _ => base.to_string(),
        }
    }
}
/// A pixel as plotters' backends take it.
type BackendCoord = (i32, i32);
type Chart2<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<Ticked, Ticked>>;

/// An axis as plotters sees it: linear in axis units, with our ticks (log
/// decades and their 2/5 steps, percentiles, the zero row) as key points.
#[derive(Debug, Clone)]
pub(super) struct Ticked {
    lo: f64,
    hi: f64,
    ticks: Vec<f64>,
}

impl Ranged for Ticked {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        RangedCoordf64::from(self.lo..self.hi).map(v, limit)
    }

    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.ticks.clone()
        }
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.lo..self.hi
    }
}

fn fonts() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // Both are valid fonts shipped by the dejavu crate; a failure
        // leaves plotters without metrics, caught by the tests.
        let _ = plotters::style::register_font(FAMILY, FontStyle::Normal, dejavu::sans::regular());
        let _ = plotters::style::register_font(FAMILY, FontStyle::Bold, dejavu::sans::bold());
    });
}

/// A band's upper edge drawn alone: a thin line of its colour, stronger
/// than its fill.
fn edge_style(c: usize, opacity: f64) -> ShapeStyle {
    palette(c)
        .mix((3.0 * opacity).clamp(0.5, 0.9))
        .stroke_width(1)
}

/// `#rrggbb` to plotters' colour.
fn color(hex: &str) -> RGBColor {
    let v = u32::from_str_radix(hex.trim_start_matches('#'), 16).unwrap_or(0);
    RGBColor((v >> 16) as u8, (v >> 8) as u8, v as u8)
}

fn palette(i: usize) -> RGBColor {
    color(style::PALETTE[i % style::PALETTE.len()])
}

/// A text style of `size` px (the SVG's font-size) in `fill`.
fn text_style(size: f64, fill: &str, bold: bool) -> TextStyle<'static> {
    fonts();
    let font = (FAMILY, size * PT).into_font();
    let font = if bold {
        font.style(FontStyle::Bold)
    } else {
        font
    };
    font.color(&color(fill))
}

/// A number's label with the typographic minus (U+2212); other labels
/// (category names) with it for their signs only ([`sign_minus`]:
/// `WithSlack(-1)`, `sync_rate=-1`), as every other text.
fn minus(label: &str) -> String {
    if label.chars().all(|c| "0123456789.-e+kMG%<".contains(c)) {
        label.replace('-', "\u{2212}")
    } else {
        sign_minus(label)
    }
}

/// A text with the typographic minus (U+2212) for every hyphen that is a
/// sign: before a digit, at the start or after a space, bracket, `=`,
/// `/` or `±` (`-72%`, `(-3)`), or alone between spaces (`a - b`); `2-4`,
/// `x-1`, `count-min` keep their hyphen.
pub(super) fn sign_minus(text: &str) -> String {
    let cs: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    for (i, &c) in cs.iter().enumerate() {
        let next_digit = cs
            .get(i + 1)
            .is_some_and(|n| n.is_ascii_digit() || *n == '.');
        let after_gap = i == 0 || " ([{=,:/±≈<>".contains(cs[i - 1]);
        let spaced = i > 0 && cs[i - 1] == ' ' && cs.get(i + 1) == Some(&' ');
        if c == '-' && ((next_digit && after_gap) || spaced) {
            out.push('\u{2212}');
        } else {
            out.push(c);
        }
    }
    out
}

fn err<E: std::fmt::Display>(e: E) -> DrawError {
    DrawError::plot(e)
}

/// One plotters drawing on a `size` canvas, of the part at `at` of
/// `part` px, without its `<svg>` wrapper.
fn layer<F>(
    size: (u32, u32),
    at: (i32, i32),
    part: (u32, u32),
    draw: F,
) -> Result<String, DrawError>
where
    F: FnOnce(&Area<'_>) -> Result<(), DrawError>,
{
    let mut s = String::new();
    {
        let root = SVGBackend::with_string(&mut s, size).into_drawing_area();
        draw(&root.clone().shrink(at, part))?;
        root.present().map_err(err)?;
    }
    let body = s.split_once('\n').map_or("", |x| x.1).trim_end();
    Ok(body.strip_suffix("</svg>").unwrap_or(body).to_string())
}

fn group(o: &mut String, id: &str, body: &str) {
    group_with(o, id, &[], body);
}

/// A group with `data-*` attributes (name, value) for the layout test.
fn group_with(o: &mut String, id: &str, attrs: &[(&str, &str)], body: &str) {
    let _ = write!(o, "<g id=\"{id}\"");
    for (k, v) in attrs {
        if !v.is_empty() {
            let _ = write!(o, " {k}=\"{}\"", esc(v));
        }
    }
    let _ = writeln!(o, ">");
    o.push_str(body);
    o.push_str("</g>\n");
}

/// The `<svg>` element's start: size, font, title and description.
pub(super) fn header((w, h): (u32, u32), title: &str, caption: &str) -> Result<String, DrawError> {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" font-family=\"{}\">",
        style::FONT_FAMILY
    );
    let _ = writeln!(o, "<title>{}</title>", esc(title));
    if !caption.is_empty() {
        let _ = writeln!(o, "<desc>{}</desc>", esc(caption));
    }
    o.push_str(&layer((w, h), (0, 0), (w, h), |root| {
        root.fill(&WHITE).map_err(err)
    })?);
    Ok(o)
}

/// A grid's title, centred in its strip.
pub(super) fn grid_title(size: (u32, u32), title: &str) -> Result<String, DrawError> {
    layer(size, (0, 0), size, |root| {
        let t = fit(
            Txt::new(title, f64::from(size.0) / 2.0, 26.0, size::TITLE, "middle"),
            f64::from(size.0) - 24.0,
        );
        texts(root, std::iter::once(&t))
    })
}

/// Gap between the entries of a row legend (px).
const ROW_GAP: f64 = 18.0;

/// Width of `entries` as one row: each swatch, its label and a gap.
pub(super) fn row_legend_width(entries: &[Entry]) -> f64 {
    entries
        .iter()
        .map(|e| f64::from(SWATCH) + style::text_width(&e.label, size::LEGEND))
        .sum::<f64>()
        + ROW_GAP * entries.len().saturating_sub(1) as f64
}

/// A legend as one row centred on the canvas at height `y` (a grid's
/// shared legend), in the `legend` group.
pub(super) fn row_legend(size: (u32, u32), y: f64, entries: &[Entry]) -> Result<String, DrawError> {
    let mut body = String::new();
    let mut x = (f64::from(size.0) - row_legend_width(entries)) / 2.0;
    for e in entries {
        let at = (x.round() as i32, y.round() as i32);
        let entry = layer(size, (0, 0), size, |root| {
            root.draw(&Swatch {
                at,
                look: e.look.clone(),
                band: e.band,
                edge: e.edge,
            })
            .map_err(err)?;
            let st = text_style(size::LEGEND, INK, false).pos(Pos::new(HPos::Left, VPos::Center));
            root.draw(&Text::new(e.label.clone(), (at.0 + SWATCH, at.1), st))
                .map_err(err)
        })?;
        // The shared legend names the first panel's series (numbered
        // from 0 over the SVG).
        group(&mut body, &format!("{}-legend", e.target), &entry);
        x += f64::from(SWATCH) + style::text_width(&e.label, size::LEGEND) + ROW_GAP;
    }
    let mut o = String::new();
    group(&mut o, "legend", &body);
    Ok(o)
}

/// Texts placed by the layout (baseline and anchor) as plotters texts.
fn texts<'t>(root: &Area<'_>, ts: impl Iterator<Item = &'t Txt>) -> Result<(), DrawError> {
    for t in ts {
        let h = match t.anchor {
            "middle" => HPos::Center,
            "end" => HPos::Right,
            _ => HPos::Left,
        };
        // plotters hangs text from its top (dy = 0.76em): the layout's
        // baseline is 0.76em below.
        let top = t.y - 0.76 * t.size;
        let st = text_style(t.size, t.fill, t.bold).pos(Pos::new(h, VPos::Top));
        root.draw(&Text::new(
            sign_minus(&t.text),
            (t.x.round() as i32, top.round() as i32),
            st,
        ))
        .map_err(err)?;
    }
    Ok(())
}

/// The legend's size as plotters lays it out: the widest label plus the
/// swatch column and margins, rows at plotters' line height.
pub(super) fn legend_size(entries: &[Entry]) -> (f64, f64) {
    if entries.is_empty() {
        return (0.0, 0.0);
    }
    let font = text_style(size::LEGEND, INK, false);
    let mut text = MultiLineText::<BackendCoord, &str>::new((0, 0), &font);
    for e in entries {
        text.push_line(e.label.as_str());
    }
    let (w, h) = text.estimate_dimension().unwrap_or((0, 0));
    (
        f64::from(w + SWATCH + 2 * LEGEND_MARGIN),
        f64::from(h + 2 * LEGEND_MARGIN),
    )
}

impl Ctx<'_> {
    /// The chart's coordinate system on `root`: the plot rectangle of the
    /// layout, axis units, our ticks.
    fn chart<'a, 'b>(&self, root: &'a Area<'b>, f: &Frame) -> Result<Chart2<'a, 'b>, DrawError> {
        let p = f.plot;
        let x_area_bottom = (f.x_label_y + 4.0).round();
        let ticked = |dom: (f64, f64), ticks: &[(f64, String)]| Ticked {
            lo: dom.0,
            hi: dom.1,
            ticks: ticks.iter().map(|t| t.0).collect(),
        };
        ChartBuilder::on(root)
            .margin_top(p.y0 as i32)
            .margin_right((self.w - p.x1) as i32)
            .margin_left(10)
            .margin_bottom((self.h - x_area_bottom).max(0.0) as i32)
            .set_label_area_size(LabelAreaPosition::Left, (p.x0 - 10.0) as i32)
            .set_label_area_size(LabelAreaPosition::Bottom, (x_area_bottom - p.y1) as i32)
            .build_cartesian_2d(ticked(f.x_dom, &f.x_ticks), ticked(f.y_dom, &f.y_ticks))
            .map_err(err)
    }

    /// A layout pixel in the chart's coordinates.
    fn to_u(f: &Frame, (x, y): (f64, f64)) -> (f64, f64) {
        let p = f.plot;
        (
            f.x_dom.0 + (x - p.x0) / (p.x1 - p.x0) * (f.x_dom.1 - f.x_dom.0),
            f.y_dom.0 + (p.y1 - y) / (p.y1 - p.y0) * (f.y_dom.1 - f.y_dom.0),
        )
    }

    /// Grid, axes, ticks and their labels, the axis titles, and the break
    /// above a log axis' zero row.
    fn mesh(&self, root: &Area<'_>, f: &Frame) -> Result<(), DrawError> {
        let mut chart = self.chart(root, f)?;
        let label = |ticks: &[(f64, String)], v: f64| {
            ticks
                .iter()
                .min_by(|a, b| (a.0 - v).abs().total_cmp(&(b.0 - v).abs()))
                .map(|t| minus(&t.1))
                .unwrap_or_default()
        };
        let xl = |v: &f64| label(&f.x_ticks, *v);
        let yl = |v: &f64| label(&f.y_ticks, *v);
        chart
            .configure_mesh()
            .x_desc(sign_minus(&self.spec.x_label))
            .y_desc(sign_minus(&self.spec.y_label))
            .axis_desc_style(text_style(f.titles.0.min(f.titles.1), INK, false))
            .label_style(text_style(size::TICK, INK, false))
            .bold_line_style(color(GRID))
            .light_line_style(TRANSPARENT)
            .axis_style(color(MUTED))
            .set_tick_mark_size(LabelAreaPosition::Left, 5)
            .set_tick_mark_size(LabelAreaPosition::Bottom, 5)
            .x_label_formatter(&xl)
            .y_label_formatter(&yl)
            .draw()
            .map_err(err)?;
        if f.zero_y.is_some() {
            let (x0, a) = (f.plot.x0 as i32, f.data_bottom as i32);
            let gap = ZERO_GAP as i32;
            let muted = color(MUTED);
            root.draw(&Rectangle::new(
                [(x0 - 1, a + 1), (x0 + 2, a + gap - 2)],
                WHITE.filled(),
            ))
            .map_err(err)?;
            for y in [a + 2, a + gap - 2] {
                root.draw(&PathElement::new(vec![(x0 - 4, y), (x0 + 4, y - 4)], muted))
                    .map_err(err)?;
            }
        }
        if f.zero_x.is_some() {
            // the break in the x axis between the "0" column and the rest
            let (b, y0) = ((f.data_left - ZERO_GAP) as i32, f.plot.y1 as i32);
            let gap = ZERO_GAP as i32;
            let muted = color(MUTED);
            root.draw(&Rectangle::new(
                [(b + 1, y0 - 2), (b + gap - 2, y0 + 1)],
                WHITE.filled(),
            ))
            .map_err(err)?;
            for x in [b + 2, b + gap - 2] {
                root.draw(&PathElement::new(vec![(x - 4, y0 + 4), (x, y0 - 4)], muted))
                    .map_err(err)?;
            }
        }
        Ok(())
    }

    /// Series `i`: its line (solid, dashed or none), markers and point
    /// labels.
    fn series(&self, root: &Area<'_>, f: &Frame, i: usize, look: &Look) -> Result<(), DrawError> {
        let mut chart = self.chart(root, f)?;
        let c = palette(look.color);
        let line: Vec<(f64, f64)> = f.lines[i].iter().map(|&q| Self::to_u(f, q)).collect();
        let marks: Vec<(f64, f64)> = f.marks[i].iter().map(|&q| Self::to_u(f, q)).collect();
        let lone = (line.len() == 1).then(|| line[0]);
        if line.len() >= 2 {
            let st = c.stroke_width(2);
            match look.dash.and_then(dash) {
                None => chart.draw_series(LineSeries::new(line, st)).map(|_| ()),
                Some((d, g)) => chart
                    .draw_series(DashedLineSeries::new(line, d, g, st))
                    .map(|_| ()),
            }
            .map_err(err)?;
        }
        let (m, marks) = if lone.is_some() && marks.is_empty() {
            (Marker::Circle, lone.into_iter().collect())
        } else {
            (look.marker.unwrap_or(Marker::Circle), marks)
        };
        let p = f.plot;
        let px = (
            (f.x_dom.1 - f.x_dom.0) / (p.x1 - p.x0),
            (f.y_dom.1 - f.y_dom.0) / (p.y1 - p.y0),
        );
        let edge = &self.preps[i].at_edge;
        if edge.len() == marks.len() && edge.iter().any(|e| *e) {
            let (off, on): (Vec<_>, Vec<_>) = marks.iter().zip(edge).partition(|(_, e)| **e);
            let off: Vec<(f64, f64)> = off.into_iter().map(|(q, _)| *q).collect();
            let on: Vec<(f64, f64)> = on.into_iter().map(|(q, _)| *q).collect();
            let axes = ((self.xa.lo, self.xa.hi), (self.ya.lo, self.ya.hi));
            // Pinned on x when only x's range is fixed, else on y.
            let on_x = self.spec.x_range.is_some() && self.spec.y_range.is_none();
            edge_arrows(&mut chart, &off, px, axes, on_x, c)?;
            return markers(&mut chart, m, &on, px, c);
        }
        markers(&mut chart, m, &marks, px, c)
    }

    /// The legend at the layout's place, laid out as plotters lays out
    /// its series labels (a box, one row per entry at its line height),
    /// each entry (swatch and label) in a group `<target>-legend` so an
    /// outside checker can pair it with the series it names.
    fn legend(
        &self,
        r: R,
        entries: &[Entry],
        layer: &Layer<'_>,
        ids: &Ids,
    ) -> Result<String, DrawError> {
        let font = text_style(size::LEGEND, INK, false);
        let (x0, y0) = (r.x0.round() as i32, r.y0.round() as i32);
        let mut text = MultiLineText::<BackendCoord, &str>::new(
            (x0 + SWATCH + LEGEND_MARGIN, y0 + LEGEND_MARGIN),
            &font,
        );
        let labels: Vec<String> = entries.iter().map(|e| sign_minus(&e.label)).collect();
        for l in &labels {
            text.push_line(l.as_str());
        }
        let (w, h) = text.estimate_dimension().map_err(err)?;
        let (w, h) = (w + SWATCH + 2 * LEGEND_MARGIN, h + 2 * LEGEND_MARGIN);
        let rows = text.compute_line_layout().map_err(err)?;
        let mut o = layer(&|root| {
            let b = [(x0, y0), (x0 + w, y0 + h)];
            root.draw(&Rectangle::new(b, WHITE.mix(0.92).filled()))
                .map_err(err)?;
            root.draw(&Rectangle::new(b, color("#c8cdd3"))).map_err(err)
        })?;
        for ((e, l), ((tx, ty), (_, ty1))) in entries.iter().zip(&labels).zip(rows) {
            let body = layer(&|root| {
                root.draw(&Text::new(l.clone(), (tx, ty), font.clone()))
                    .map_err(err)?;
                root.draw(&Swatch {
                    at: (x0 + LEGEND_MARGIN, (ty + ty1) / 2),
                    look: e.look.clone(),
                    band: e.band,
                    edge: e.edge,
                })
                .map_err(err)
            })?;
            group(&mut o, &format!("{}-legend", ids.global(&e.target)), &body);
        }
        Ok(o)
    }

    /// The laid-out chart's groups: on the whole canvas, or as panel `k`
    /// of a grid on a `canvas` at `at` (its ids then carry `k`).
    pub(super) fn plot(
        &self,
        f: &Frame,
        entries: &[Entry],
        looks: &[Look],
        at: (i32, i32),
        grid: Option<(usize, (u32, u32))>,
        ids: &Ids,
    ) -> Result<String, DrawError> {
        let spec = self.spec;
        let p = f.plot;
        let part = (self.w as u32, self.h as u32);
        let canvas = grid.map_or(part, |g| g.1);
        let layer = |draw: &dyn Fn(&Area<'_>) -> Result<(), DrawError>| {
            layer(canvas, at, part, |a| draw(a))
        };
        let mut o = String::new();
        let plot_rect = layer(&|root| {
            root.draw(&Rectangle::new(
                [(p.x0 as i32, p.y0 as i32), (p.x1 as i32, p.y1 as i32)],
                WHITE.filled(),
            ))
            .map_err(err)
        })?;
        // Where a log y axis' data end (its zero row is below): no band
        // may be filled down to it (the layout test reads it).
        let log_bottom = if self.ys == Scale::Log {
            format!("{:.1}", f.data_bottom + f64::from(at.1))
        } else {
            String::new()
        };
        group_with(
            &mut o,
            &ids.per_panel("plot-area"),
            &[
                ("data-axis-note-x", spec.x_note.as_str()),
                ("data-axis-note-y", spec.y_note.as_str()),
                ("data-y-log-bottom", log_bottom.as_str()),
            ],
            &plot_rect,
        );
        o.push_str(&layer(&|root| self.mesh(root, f))?);
        let named = |kind: &str, i: usize| ids.global(&format!("{kind}-{i}"));
        for (i, (b, px)) in spec.bands.iter().zip(&f.bands).enumerate() {
            let body =
                layer(&|root| {
                    let mut chart = self.chart(root, f)?;
                    let units = |l: &Vec<(f64, f64)>| -> Vec<(f64, f64)> {
                        l.iter().map(|&q| Self::to_u(f, q)).collect()
                    };
                    chart
                        .draw_series(px.fills.iter().map(|p| {
                            Polygon::new(units(p), palette(b.color).mix(b.opacity).filled())
                        }))
                        .map_err(err)?;
                    // The upper edge alone where the band reaches 0 (log y):
                    // a thin line of the band's colour, stronger than its fill.
                    let edge = edge_style(b.color, b.opacity);
                    for l in &px.edges {
                        chart
                            .draw_series(LineSeries::new(units(l), edge))
                            .map_err(err)?;
                    }
                    Ok(())
                })?;
            group(&mut o, &named("band", i), &body);
        }
        // Marker lines and the connectors to their labels.
        o.push_str(&layer(&|root| {
            let muted = color(MUTED);
            for (x, label_bottom) in &f.vline_px {
                let x = x.round() as i32;
                root.draw(&DashedPathElement::new(
                    vec![(x, p.y0 as i32), (x, p.y1 as i32)],
                    4,
                    4,
                    muted,
                ))
                .map_err(err)?;
                if let Some(lb) = label_bottom {
                    root.draw(&PathElement::new(
                        vec![(x, lb.round() as i32), (x, p.y0 as i32)],
                        muted,
                    ))
                    .map_err(err)?;
                }
            }
            Ok(())
        })?);
        for (i, look) in looks.iter().enumerate() {
            let series_id = named("series", i);
            let mut body = layer(&|root| self.series(root, f, i, look))?;
            // Its point labels, each in a group saying which point it
            // names (canvas px) and whether a leader joins them.
            for (k, t) in f.texts.iter().filter(|t| t.owner == Some(i)).enumerate() {
                let text = layer(&|root| texts(root, std::iter::once(t)))?;
                let point = t
                    .point
                    .map(|(x, y)| format!("{:.1},{:.1}", x + f64::from(at.0), y + f64::from(at.1)))
                    .unwrap_or_default();
                let leader = if t.leader { "1" } else { "" };
                group_with(
                    &mut body,
                    &format!("label-{}.{k}", &series_id["series-".len()..]),
                    &[("data-point", point.as_str()), ("data-leader", leader)],
                    &text,
                );
            }
            group(&mut o, &series_id, &body);
        }
        // Leaders, then every text the layout placed (the mesh drew its own).
        o.push_str(&layer(&|root| {
            let muted = color(MUTED);
            for (a, b) in &f.leaders {
                root.draw(&PathElement::new(
                    vec![
                        (a.0.round() as i32, a.1.round() as i32),
                        (b.0.round() as i32, b.1.round() as i32),
                    ],
                    muted,
                ))
                .map_err(err)?;
            }
            texts(
                root,
                f.texts.iter().filter(|t| !t.mesh && t.owner.is_none()),
            )
        })?);
        if let Some(r) = f.legend {
            let body = self.legend(r, entries, &layer, ids)?;
            group(&mut o, &ids.per_panel("legend"), &body);
        }
        Ok(o)
    }
}
