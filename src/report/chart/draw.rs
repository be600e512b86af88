//! Layout and SVG of one chart: axes and ticks, the zero row of log axes,
//! series, bands, marker lines, point labels (placed without collisions),
//! and the legend (in a corner measured free of data, else outside).
//!
//! Element ids the layout test reads: `plot-area`, `series-<i>`,
//! `band-<i>`, `legend-box`, and `legend-for-series-<i>` /
//! `legend-for-band-<i>` for the legend row of each.

use super::style::{self, size, Look, Marker, Want, DASHES, GRID, INK, MUTED};
use super::{ChartSpec, Legend, SeriesStyle, SIZE};
use std::fmt::Write as _;

const W: f64 = SIZE.0 as f64;
const H: f64 = SIZE.1 as f64;
/// Marker radius (px).
const MR: f64 = 4.0;
/// Height of the zero row under a log y axis, and its gap (px).
const ZERO_ROW: f64 = 18.0;
const ZERO_GAP: f64 = 12.0;

/// An axis-aligned rectangle (px).
#[derive(Debug, Clone, Copy, PartialEq)]
struct R {
    x0: f64,
    y0: f64,
    x1: f64,
    y1: f64,
}

impl R {
    fn new(x0: f64, y0: f64, x1: f64, y1: f64) -> Self {
        Self { x0, y0, x1, y1 }
    }
    fn overlaps(&self, o: &R) -> bool {
        self.x0 < o.x1 && o.x0 < self.x1 && self.y0 < o.y1 && o.y0 < self.y1
    }
    fn inside(&self, o: &R) -> bool {
        self.x0 >= o.x0 && self.x1 <= o.x1 && self.y0 >= o.y0 && self.y1 <= o.y1
    }
    fn pad(&self, p: f64) -> R {
        R::new(self.x0 - p, self.y0 - p, self.x1 + p, self.y1 + p)
    }
    fn contains(&self, (x, y): (f64, f64)) -> bool {
        x >= self.x0 && x <= self.x1 && y >= self.y0 && y <= self.y1
    }
    /// Whether segment a-b crosses or touches the rectangle.
    fn hits(&self, a: (f64, f64), b: (f64, f64)) -> bool {
        clip(a, b, self).is_some()
    }
}

/// Liang–Barsky: the part of segment a-b inside `r`.
fn clip(a: (f64, f64), b: (f64, f64), r: &R) -> Option<((f64, f64), (f64, f64))> {
    let (dx, dy) = (b.0 - a.0, b.1 - a.1);
    let (mut t0, mut t1) = (0.0f64, 1.0f64);
    for (p, q) in [
        (-dx, a.0 - r.x0),
        (dx, r.x1 - a.0),
        (-dy, a.1 - r.y0),
        (dy, r.y1 - a.1),
    ] {
        if p == 0.0 {
            if q < 0.0 {
                return None;
            }
        } else {
            let t = q / p;
            if p < 0.0 {
                t0 = t0.max(t);
            } else {
                t1 = t1.min(t);
            }
            if t0 > t1 {
                return None;
            }
        }
    }
    Some((
        (a.0 + t0 * dx, a.1 + t0 * dy),
        (a.0 + t1 * dx, a.1 + t1 * dy),
    ))
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Scale {
    Linear,
    Log,
    Pct,
}

/// One axis: scale, range in axis units and ticks.
#[derive(Debug, Clone)]
struct Axis {
    lo: f64,
    hi: f64,
    ticks: Vec<(f64, String)>,
    /// Label of the zero row (log y with values at or below the floor).
    zero: Option<String>,
}

/// Data value to axis units; `None`: zero row (log) / not drawable.
fn fwd(scale: Scale, v: f64, floor: f64) -> Option<f64> {
    match scale {
        Scale::Linear => Some(v),
        Scale::Log => (v > 0.0 && v >= floor).then(|| v.log10()),
        Scale::Pct => Some(if v >= 100.0 {
            f64::INFINITY
        } else {
            -(1.0 - v.max(0.0) / 100.0).log10()
        }),
    }
}

/// 1, 2, 2.5, 5 × 10^k steps: (lo, hi, step) covering [lo, hi].
fn nice(lo: f64, hi: f64, target: f64, integer: bool) -> (f64, f64, f64) {
    let raw = ((hi - lo) / target).max(f64::MIN_POSITIVE);
    let mag = 10f64.powf(raw.log10().floor());
    let mut step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    if integer {
        step = step.max(1.0).round();
    }
    ((lo / step).floor() * step, (hi / step).ceil() * step, step)
}

fn decimals(step: f64) -> usize {
    let mut d = 0usize;
    while d < 9
        && ((step * 10f64.powi(d as i32)).round() - step * 10f64.powi(d as i32)).abs() > 1e-6
    {
        d += 1;
    }
    d
}

fn linear_label(v: f64, dec: usize, big: bool) -> String {
    if big {
        return super::human(v);
    }
    let s = format!("{v:.dec$}");
    if s.trim_start_matches('-')
        .chars()
        .all(|c| c == '0' || c == '.')
    {
        "0".into()
    } else {
        s
    }
}

fn decade_label(k: i32) -> String {
    log_tick_label(1, k)
}

/// The label of the log-axis tick `m` × 10^`k` (`m` in 1..=9), exact at
/// every magnitude: `0.002`, `0.05`, `5`, `200`, `2e-4`, `20k`. (Rounding
/// the value to two decimals, as plain numbers are, labelled 0.002 and
/// 0.005 as "0" and "0.01".)
fn log_tick_label(m: u32, k: i32) -> String {
    if k < -2 {
        format!("{m}e{k}")
    } else if k < 0 {
        let dec = k.unsigned_abs() as usize;
        format!("{:.dec$}", f64::from(m) * 10f64.powi(k))
    } else {
        super::human(f64::from(m) * 10f64.powi(k))
    }
}

/// A log axis' floor as a label: a one-digit mantissa as its tick would
/// be, anything else in three significant digits.
fn floor_label(v: f64) -> String {
    let k = v.log10().floor() as i32;
    let m = v / 10f64.powi(k);
    let mr = m.round();
    if (m - mr).abs() < 1e-9 && (1.0..=9.0).contains(&mr) {
        log_tick_label(mr as u32, k)
    } else {
        format!("{v:.3e}")
    }
}

fn pct_label(t: f64) -> String {
    let k = t.round() as i32;
    if k == 0 {
        return "0%".into();
    }
    let p = 100.0 * (1.0 - 10f64.powi(-k));
    let dec = (k - 2).max(0) as usize;
    format!("{p:.dec$}%")
}

/// What a log axis' zero row holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ZeroRow {
    /// Only values at or below zero.
    Zeros,
    /// Some positive values under the floor too.
    BelowFloor,
}

/// Builds an axis over `vals` (axis units), `forced` in data units.
fn axis(
    scale: Scale,
    vals: &[f64],
    forced: Option<(f64, f64)>,
    floor: f64,
    integer: bool,
    zero: Option<ZeroRow>,
) -> Axis {
    let finite: Vec<f64> = vals.iter().copied().filter(|v| v.is_finite()).collect();
    let (mut lo, mut hi) = finite
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| {
            (a.min(v), b.max(v))
        });
    if let Some((a, b)) = forced {
        let fa = fwd(scale, a, floor.min(a.abs().max(f64::MIN_POSITIVE)));
        let fb = fwd(scale, b, floor.min(b.abs().max(f64::MIN_POSITIVE)));
        if let (Some(a), Some(b)) = (fa, fb) {
            if b > a && b.is_finite() {
                lo = a;
                hi = b;
            }
        }
    }
    if !lo.is_finite() {
        (lo, hi) = match scale {
            Scale::Log => (0.0, 1.0),
            _ => (0.0, 1.0),
        };
    }
    // Only exact zeros (or less) on the zero row: "0"; values under a
    // positive floor too: "<floor".
    let zero_label = |floor: f64| {
        if floor > 0.0 && zero == Some(ZeroRow::BelowFloor) {
            format!("<{}", floor_label(floor))
        } else {
            "0".to_string()
        }
    };
    match scale {
        Scale::Log => {
            let (a, mut b) = (lo.floor(), hi.ceil());
            if b <= a {
                b = a + 1.0;
            }
            let span = b - a;
            let mut ticks = Vec::new();
            for k in a as i32..=b as i32 {
                ticks.push((f64::from(k), decade_label(k)));
                if span <= 2.0 && k < b as i32 {
                    for m in [2u32, 5] {
                        let v = f64::from(k) + f64::from(m).log10();
                        ticks.push((v, log_tick_label(m, k)));
                    }
                }
            }
            let pad = if forced.is_some() { 0.0 } else { 0.03 * span };
            Axis {
                lo: a - pad,
                hi: b + pad,
                ticks,
                zero: zero.map(|_| zero_label(floor)),
            }
        }
        Scale::Pct => {
            // one decade past the last point, so the maximum's step shows
            let mut b = hi.ceil().max(1.0);
            if hi > b - 0.3 {
                b += 1.0;
            }
            let b = b.min(7.0);
            let mut ticks: Vec<(f64, String)> = (0..=b as i32)
                .map(|k| (f64::from(k), pct_label(f64::from(k))))
                .collect();
            if b <= 2.0 {
                for p in [50.0f64, 75.0] {
                    ticks.push((-(1.0 - p / 100.0).log10(), format!("{p}%")));
                }
                ticks.sort_by(|a, b| a.0.total_cmp(&b.0));
            }
            Axis {
                lo: 0.0,
                hi: b,
                ticks,
                zero: None,
            }
        }
        Scale::Linear => {
            let forced_range = forced.is_some() && hi > lo;
            if hi <= lo {
                let d = if integer || lo == 0.0 {
                    1.0
                } else {
                    lo.abs() * 0.1
                };
                lo -= d;
                hi += d;
            }
            if !forced_range && lo > 0.0 && lo < 0.3 * hi && !integer {
                lo = 0.0;
            }
            let (a, b, step) = nice(lo, hi, 7.0, integer);
            let (a, b) = if forced_range {
                (lo, hi)
            } else if integer {
                // discrete values: half a step of room each side, off the axes
                (lo - 0.5, hi + 0.5)
            } else {
                (a, b)
            };
            let dec = decimals(step);
            let big = a.abs().max(b.abs()) >= 1e4 && step >= 1000.0;
            let mut ticks = Vec::new();
            let first = (a / step).ceil() as i64;
            let last = (b / step).floor() as i64;
            for k in first..=last {
                let v = k as f64 * step;
                ticks.push((v, linear_label(v, dec, big)));
            }
            // room inside the frame, so points on the extreme ticks stay off the axes
            let pad = if forced_range || integer {
                0.0
            } else {
                0.03 * (b - a)
            };
            Axis {
                lo: a - pad,
                hi: b + pad,
                ticks,
                zero: None,
            }
        }
    }
}

/// A series ready to draw: axis-unit points (`None` y: zero row).
struct Prep {
    label: String,
    style: SeriesStyle,
    pts: Vec<(f64, Option<f64>)>,
    labels: Vec<String>,
    want: Want,
}

/// A laid-out text: its box and how to write it.
#[derive(Debug, Clone)]
struct Txt {
    text: String,
    x: f64,
    y: f64,
    size: f64,
    anchor: &'static str,
    fill: &'static str,
    rotate: bool,
    bold: bool,
}

impl Txt {
    fn new(text: impl Into<String>, x: f64, y: f64, size: f64, anchor: &'static str) -> Self {
        Self {
            text: text.into(),
            x,
            y,
            size,
            anchor,
            fill: INK,
            rotate: false,
            bold: false,
        }
    }
    fn width(&self) -> f64 {
        style::text_width(&self.text, self.size) * if self.bold { 1.1 } else { 1.0 }
    }
    /// The layout box (advance width × ascent+descent).
    fn bbox(&self) -> R {
        let w = self.width();
        let (asc, desc) = style::text_extent(self.size);
        let x0 = match self.anchor {
            "middle" => self.x - w / 2.0,
            "end" => self.x - w,
            _ => self.x,
        };
        if self.rotate {
            // rotated -90° about (x, y): the text runs upwards.
            let (c0, c1) = (x0 - self.x, x0 - self.x + w);
            R::new(self.x - asc, self.y - c1, self.x + desc, self.y - c0)
        } else {
            R::new(x0, self.y - asc, x0 + w, self.y + desc)
        }
    }
    fn svg(&self, out: &mut String) {
        let transform = if self.rotate {
            format!(" transform=\"rotate(-90 {:.1} {:.1})\"", self.x, self.y)
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"{}\" text-anchor=\"{}\" fill=\"{}\"{}{}>{}</text>",
            self.x,
            self.y,
            self.size,
            self.anchor,
            self.fill,
            if self.bold { " font-weight=\"bold\"" } else { "" },
            transform,
            esc(&self.text)
        );
    }
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Shrinks `t` until it is at most `max` wide (not below 9 px).
fn fit(mut t: Txt, max: f64) -> Txt {
    while t.width() > max && t.size > 9.0 {
        t.size -= 0.5;
    }
    t
}

/// Where the legend goes.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Place {
    Inside,
    Right,
    Bottom,
}

/// One legend row.
struct Entry {
    /// The label wrapped to [`LEGEND_MAX`] px.
    lines: Vec<String>,
    /// `series-<i>` or `band-<i>`.
    target: String,
    look: Option<Look>,
    band: Option<(usize, f64)>,
}

/// Widest legend line (px); longer labels wrap, at " = " first.
const LEGEND_MAX: f64 = 420.0;

fn wrap(label: &str) -> Vec<String> {
    let width = |t: &str| style::text_width(t, size::LEGEND);
    if width(label) <= LEGEND_MAX {
        return vec![label.to_string()];
    }
    let mut lines: Vec<String> = Vec::new();
    let mut cur = String::new();
    for (i, part) in label.split(" = ").enumerate() {
        let piece = if i == 0 {
            part.to_string()
        } else {
            format!("= {part}")
        };
        let joined = if cur.is_empty() {
            piece.clone()
        } else {
            format!("{cur} {piece}")
        };
        if width(&joined) <= LEGEND_MAX || cur.is_empty() {
            cur = joined;
        } else {
            lines.push(std::mem::take(&mut cur));
            cur = piece;
        }
        // a piece too long alone: break at spaces
        while width(&cur) > LEGEND_MAX {
            let words: Vec<&str> = cur.split(' ').collect();
            let mut head = String::new();
            let mut k = 0;
            while k < words.len() {
                let next = if head.is_empty() {
                    words[k].to_string()
                } else {
                    format!("{head} {}", words[k])
                };
                if width(&next) > LEGEND_MAX && !head.is_empty() {
                    break;
                }
                head = next;
                k += 1;
            }
            if k >= words.len() {
                break;
            }
            lines.push(head);
            cur = words[k..].join(" ");
        }
    }
    if !cur.is_empty() {
        lines.push(cur);
    }
    lines
}

/// Everything placed: the frame of the plot and its geometry in px.
struct Frame {
    plot: R,
    /// Bottom of the log part (the zero row is below it).
    data_bottom: f64,
    zero_y: Option<f64>,
    x_of: Box<dyn Fn(f64) -> f64>,
    y_of: Box<dyn Fn(Option<f64>) -> f64>,
    /// Series polylines (px), per series.
    lines: Vec<Vec<(f64, f64)>>,
    /// Series marker positions (px), per series.
    marks: Vec<Vec<(f64, f64)>>,
    /// Band polygons (px).
    bands: Vec<Vec<(f64, f64)>>,
    legend: Option<R>,
    texts: Vec<Txt>,
    leaders: Vec<((f64, f64), (f64, f64))>,
    vline_px: Vec<(f64, Option<f64>)>,
    footnote: Option<Txt>,
}

fn point_in_poly(p: (f64, f64), poly: &[(f64, f64)]) -> bool {
    let mut inside = false;
    let n = poly.len();
    for i in 0..n {
        let (a, b) = (poly[i], poly[(i + n - 1) % n]);
        if (a.1 > p.1) != (b.1 > p.1) && p.0 < (b.0 - a.0) * (p.1 - a.1) / (b.1 - a.1) + a.0 {
            inside = !inside;
        }
    }
    inside
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
    for b in &f.bands {
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
    true
}

/// Each series in axis units (non-finite points skipped), identical ones
/// merged into one with a joined label (`a = b`).
fn prepare_series(spec: &ChartSpec, xs: Scale, ys: Scale, floor: f64) -> Vec<Prep> {
    let mut preps: Vec<Prep> = Vec::new();
    for s in &spec.series {
        let mut pts = Vec::new();
        let mut labels = Vec::new();
        for (k, &(x, y)) in s.points.iter().enumerate() {
            if !x.is_finite() || !y.is_finite() {
                continue;
            }
            let tx = fwd(xs, x, floor.max(f64::MIN_POSITIVE)).unwrap_or(f64::NEG_INFINITY);
            pts.push((tx, fwd(ys, y, floor)));
            labels.push(
                s.point_labels
                    .as_ref()
                    .and_then(|l| l.get(k))
                    .map(|l| l.trim().to_string())
                    .unwrap_or_default(),
            );
        }
        let want = Want {
            color: s.color,
            share: s.share_color,
            line: match s.style {
                SeriesStyle::Points => None,
                SeriesStyle::Dashed => Some(true),
                _ => Some(false),
            },
            markers: matches!(s.style, SeriesStyle::Points | SeriesStyle::LinePoints),
        };
        if let Some(same) = preps
            .iter_mut()
            .find(|p| p.pts == pts && p.labels == labels && !pts.is_empty())
        {
            if !s.label.is_empty() {
                same.label = if same.label.is_empty() {
                    s.label.clone()
                } else {
                    format!("{} = {}", same.label, s.label)
                };
            }
            continue;
        }
        preps.push(Prep {
            label: s.label.clone(),
            style: s.style,
            pts,
            labels,
            want,
        });
    }
    preps
}

/// Discrete x with several marker-only series at the same x values:
/// dodge them side by side (as grouped bars are), so no marker hides
/// another.
fn dodge_points(preps: &mut [Prep], xs: Scale) {
    let all_integer = xs == Scale::Linear
        && !preps.is_empty()
        && preps
            .iter()
            .flat_map(|p| &p.pts)
            .all(|q| q.0.is_finite() && q.0.fract() == 0.0);
    let dodged: Vec<usize> = preps
        .iter()
        .enumerate()
        .filter(|(_, p)| p.style == SeriesStyle::Points)
        .map(|(i, _)| i)
        .collect();
    let shared_x = dodged.iter().enumerate().any(|(k, &i)| {
        dodged[..k].iter().any(|&j| {
            preps[i]
                .pts
                .iter()
                .any(|q| preps[j].pts.iter().any(|r| r.0 == q.0))
        })
    });
    if all_integer && shared_x && dodged.len() <= 8 {
        let width = 0.6 / dodged.len() as f64;
        for (k, &i) in dodged.iter().enumerate() {
            let off = (k as f64 - (dodged.len() as f64 - 1.0) / 2.0) * width;
            for q in &mut preps[i].pts {
                q.0 += off;
            }
        }
    }
}

/// The x and y axes over every series, band and marker line, with the
/// zero row of a log y axis when something is at or below zero.
fn axes(spec: &ChartSpec, preps: &[Prep], xs: Scale, ys: Scale, floor: f64) -> (Axis, Axis) {
    let integer_x = xs == Scale::Linear
        && spec
            .series
            .iter()
            .flat_map(|s| &s.points)
            .all(|p| p.0.fract() == 0.0)
        && !spec.series.is_empty();
    let mut xv: Vec<f64> = preps
        .iter()
        .flat_map(|p| p.pts.iter().map(|q| q.0))
        .collect();
    let band_pts = |f: fn(&super::Band) -> &Vec<(f64, f64)>| {
        spec.bands
            .iter()
            .flat_map(move |b| f(b).iter().copied())
            .collect::<Vec<_>>()
    };
    let band_all: Vec<(f64, f64)> = [band_pts(|b| &b.lower), band_pts(|b| &b.upper)].concat();
    xv.extend(
        band_all
            .iter()
            .filter_map(|p| fwd(xs, p.0, floor.max(f64::MIN_POSITIVE))),
    );
    xv.extend(
        spec.vlines
            .iter()
            .filter_map(|v| fwd(xs, v.0, floor.max(f64::MIN_POSITIVE))),
    );
    let mut yv: Vec<f64> = preps
        .iter()
        .flat_map(|p| p.pts.iter().filter_map(|q| q.1))
        .collect();
    yv.extend(band_all.iter().filter_map(|p| fwd(ys, p.1, floor)));
    let has_zero = ys == Scale::Log
        && (preps.iter().any(|p| p.pts.iter().any(|q| q.1.is_none()))
            || band_all.iter().any(|p| fwd(ys, p.1, floor).is_none()));
    let under_floor = spec
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .chain(band_all.iter().map(|p| p.1))
        .any(|y| y > 0.0 && y < floor);
    let zero_row = has_zero.then_some(if under_floor {
        ZeroRow::BelowFloor
    } else {
        ZeroRow::Zeros
    });
    let xa = axis(xs, &xv, spec.x_range, floor, integer_x, None);
    let ya = axis(ys, &yv, spec.y_range, floor, false, zero_row);
    (xa, ya)
}

/// The legend's rows: labelled series, then labelled bands.
fn legend_entries(spec: &ChartSpec, preps: &[Prep], looks: &[Look]) -> Vec<Entry> {
    let mut entries: Vec<Entry> = Vec::new();
    for (i, p) in preps.iter().enumerate() {
        if !p.label.is_empty() {
            entries.push(Entry {
                lines: wrap(&p.label),
                target: format!("series-{i}"),
                look: Some(looks[i].clone()),
                band: None,
            });
        }
    }
    for (i, b) in spec.bands.iter().enumerate() {
        if !b.label.is_empty() {
            entries.push(Entry {
                lines: wrap(&b.label),
                target: format!("band-{i}"),
                look: None,
                band: Some((b.color, b.opacity)),
            });
        }
    }
    entries
}

/// The SVG of `spec`.
pub(super) fn svg(spec: &ChartSpec) -> String {
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
    let mut preps = prepare_series(spec, xs, ys, floor);
    let looks = style::assign_looks(&preps.iter().map(|p| p.want).collect::<Vec<_>>());
    dodge_points(&mut preps, xs);

    let (xa, ya) = axes(spec, &preps, xs, ys, floor);

    let entries = legend_entries(spec, &preps, &looks);
    let row_h = 18.0;
    let entry_w = |e: &Entry| {
        40.0 + e
            .lines
            .iter()
            .map(|l| style::text_width(l, size::LEGEND))
            .fold(0.0, f64::max)
    };
    let legend_w = entries.iter().map(entry_w).fold(0.0, f64::max) + 12.0;
    let n_lines: usize = entries.iter().map(|e| e.lines.len()).sum();
    let wrapped = n_lines > entries.len();
    let legend_h = n_lines as f64 * row_h + 10.0;

    let ctx = Ctx {
        spec,
        preps: &preps,
        xa: &xa,
        ya: &ya,
        xs,
        ys,
        floor,
        legend_w,
        legend_h,
        n_entries: entries.len(),
        n_lines,
        wrapped,
    };
    let mut place = Place::Inside;
    let mut frame = ctx.frame(place, false);
    if !entries.is_empty() && frame.legend.is_none() {
        place = if legend_w <= 290.0 && legend_h <= 430.0 {
            Place::Right
        } else {
            Place::Bottom
        };
        frame = ctx.frame(place, false);
    }
    if frame.footnote.is_some() {
        let again = ctx.frame(place, true);
        if place != Place::Inside || again.legend.is_some() {
            frame = again;
        } else {
            frame = ctx.frame(Place::Right, true);
        }
    }
    ctx.write(&frame, &entries, &looks, row_h)
}

struct Ctx<'a> {
    spec: &'a ChartSpec,
    preps: &'a [Prep],
    xa: &'a Axis,
    ya: &'a Axis,
    xs: Scale,
    ys: Scale,
    floor: f64,
    legend_w: f64,
    legend_h: f64,
    n_entries: usize,
    n_lines: usize,
    wrapped: bool,
}

impl Ctx<'_> {
    fn frame(&self, place: Place, footnote: bool) -> Frame {
        let spec = self.spec;
        let (xa, ya) = (self.xa, self.ya);
        let mut texts: Vec<Txt> = Vec::new();
        // Title.
        let title = fit(
            Txt::new(&spec.title, W / 2.0, 26.0, size::TITLE, "middle"),
            W - 24.0,
        );
        let top = 26.0 + style::text_extent(title.size).1 + 8.0;
        texts.push(title);
        // Left: y label and tick widths.
        let tick_w = ya
            .ticks
            .iter()
            .map(|t| style::text_width(&t.1, size::TICK))
            .chain(ya.zero.iter().map(|z| style::text_width(z, size::TICK)))
            .fold(0.0, f64::max);
        let left = 10.0 + 20.0 + tick_w + 8.0;
        let mut right = W - 26.0;
        if place == Place::Right {
            right = W - 14.0 - self.legend_w - 14.0;
        }
        let (x_lo, x_hi) = (xa.lo, xa.hi);
        let x_of = move |t: f64| {
            let t = t.clamp(x_lo, x_hi);
            left + (t - x_lo) / (x_hi - x_lo) * (right - left)
        };
        let mut dropped: Vec<String> = Vec::new();
        let (vline_px, top) = self.vline_labels(&x_of, top, &mut texts, &mut dropped);
        // Bottom: ticks, x label, legend rows, footnote.
        let mut bottom = H - 10.0;
        let foot = if footnote { Some(()) } else { None };
        if foot.is_some() {
            bottom -= 18.0;
        }
        let legend_cols = if place == Place::Bottom && !self.wrapped {
            (((right - left) / self.legend_w).floor() as usize).max(1)
        } else {
            1
        };
        if place == Place::Bottom {
            let rows = if legend_cols == 1 {
                self.n_lines
            } else {
                self.n_entries.div_ceil(legend_cols)
            };
            bottom -= rows as f64 * 18.0 + 14.0;
        }
        let x_label_y = bottom - 4.0;
        let tick_y_space = 20.0;
        let plot_bottom = x_label_y - 20.0 - tick_y_space;
        let zero_h = if ya.zero.is_some() {
            ZERO_ROW + ZERO_GAP
        } else {
            0.0
        };
        let data_bottom = plot_bottom - zero_h;
        let plot = R::new(left, top, right, plot_bottom);
        let (y_lo, y_hi) = (ya.lo, ya.hi);
        let zero_y = ya.zero.as_ref().map(|_| plot_bottom - ZERO_ROW / 2.0);
        let zy = zero_y.unwrap_or(data_bottom);
        let y_of = move |t: Option<f64>| match t {
            Some(t) => {
                let t = t.clamp(y_lo, y_hi);
                data_bottom - (t - y_lo) / (y_hi - y_lo) * (data_bottom - top)
            }
            None => zy,
        };
        self.axis_texts(&mut texts, &x_of, &y_of, &plot, x_label_y, zero_y);

        let (lines, marks, bands) = self.geometry(&plot, &x_of, &y_of);
        let mut frame = Frame {
            plot,
            data_bottom,
            zero_y,
            x_of: Box::new(x_of),
            y_of: Box::new(y_of),
            lines,
            marks,
            bands,
            legend: None,
            texts,
            leaders: Vec::new(),
            vline_px,
            footnote: None,
        };

        // Legend.
        if self.n_entries > 0 {
            frame.legend = self.legend_rect(place, &frame, legend_cols, x_label_y);
        }

        self.label_points(&mut frame, &mut dropped);
        if !dropped.is_empty() {
            let mut t = Txt::new(
                format!("Not labelled for lack of room: {}", dropped.join("; ")),
                10.0,
                H - 8.0,
                size::LABEL,
                "start",
            );
            t.fill = MUTED;
            frame.footnote = Some(fit(t, W - 20.0));
        }
        if footnote {
            if let Some(f) = frame.footnote.take() {
                frame.texts.push(f.clone());
                frame.footnote = Some(f);
            }
        }
        frame
    }

    /// Marker-line labels in up to four rows above the plot (a label that
    /// fits no row is listed in the footnote instead): each line's x and
    /// the bottom of its label, and the plot's new top.
    fn vline_labels(
        &self,
        x_of: &dyn Fn(f64) -> f64,
        mut top: f64,
        texts: &mut Vec<Txt>,
        dropped: &mut Vec<String>,
    ) -> (Vec<(f64, Option<f64>)>, f64) {
        let (spec, xa) = (self.spec, self.xa);
        let mut vline_px = Vec::new();
        let mut vl_boxes: Vec<(Txt, usize)> = Vec::new();
        for (x, label) in &spec.vlines {
            let Some(t) = fwd(self.xs, *x, self.floor.max(f64::MIN_POSITIVE)) else {
                continue;
            };
            if t < xa.lo || t > xa.hi {
                continue;
            }
            let px = x_of(t);
            if label.is_empty() {
                vline_px.push((px, None));
                continue;
            }
            let mut txt = Txt::new(label, px, 0.0, size::LABEL, "middle");
            txt.fill = MUTED;
            let w = txt.width();
            txt.x = px.clamp(8.0 + w / 2.0, W - 8.0 - w / 2.0);
            let span = |t: &Txt| (t.x - t.width() / 2.0 - 4.0, t.x + t.width() / 2.0 + 4.0);
            let (a, b) = span(&txt);
            let row = (0..4).find(|&r| {
                vl_boxes.iter().filter(|(_, rr)| *rr == r).all(|(o, _)| {
                    let (c, d) = span(o);
                    b <= c || a >= d
                })
            });
            match row {
                Some(r) => {
                    vl_boxes.push((txt, r));
                    vline_px.push((px, Some(r as f64)));
                }
                None => {
                    dropped.push(label.clone());
                    vline_px.push((px, None));
                }
            }
        }
        let rows = vl_boxes.iter().map(|b| b.1 + 1).max().unwrap_or(0);
        let (asc, desc) = style::text_extent(size::LABEL);
        let strip_top = top + 2.0;
        top += rows as f64 * (asc + desc + 3.0) + if rows > 0 { 8.0 } else { 4.0 };
        let vline_rows_y: Vec<f64> = (0..rows)
            .map(|r| strip_top + asc + r as f64 * (asc + desc + 3.0))
            .collect();
        for (mut t, r) in vl_boxes {
            t.y = vline_rows_y[r];
            texts.push(t);
        }
        let vline_px: Vec<(f64, Option<f64>)> = vline_px
            .into_iter()
            .map(|(px, r)| (px, r.map(|r| vline_rows_y[r as usize] + desc + 1.0)))
            .collect();
        (vline_px, top)
    }

    /// Tick labels (x ones that would touch dropped), the zero row's
    /// label and both axis titles.
    fn axis_texts(
        &self,
        texts: &mut Vec<Txt>,
        x_of: &dyn Fn(f64) -> f64,
        y_of: &dyn Fn(Option<f64>) -> f64,
        plot: &R,
        x_label_y: f64,
        zero_y: Option<f64>,
    ) {
        let (spec, xa, ya) = (self.spec, self.xa, self.ya);
        let (left, right, top, plot_bottom) = (plot.x0, plot.x1, plot.y0, plot.y1);
        let mut last_end = f64::NEG_INFINITY;
        for (t, label) in &xa.ticks {
            let txt = Txt::new(
                label,
                x_of(*t),
                plot_bottom + 6.0 + style::text_extent(size::TICK).0,
                size::TICK,
                "middle",
            );
            let b = txt.bbox();
            if b.x0 > last_end + 6.0 && b.x0 >= 2.0 && b.x1 <= W - 2.0 {
                last_end = b.x1;
                texts.push(txt);
            }
        }
        let tick_asc = style::text_extent(size::TICK).0;
        for (t, label) in &ya.ticks {
            let y = y_of(Some(*t));
            texts.push(Txt::new(
                label,
                left - 6.0,
                y + tick_asc / 2.5,
                size::TICK,
                "end",
            ));
        }
        if let (Some(z), Some(y)) = (&ya.zero, zero_y) {
            texts.push(Txt::new(
                z,
                left - 6.0,
                y + tick_asc / 2.5,
                size::TICK,
                "end",
            ));
        }
        texts.push(fit(
            Txt::new(
                &spec.x_label,
                (left + right) / 2.0,
                x_label_y,
                size::AXIS,
                "middle",
            ),
            W - 20.0,
        ));
        let mut yl = fit(
            Txt::new(
                &spec.y_label,
                10.0 + style::text_extent(size::AXIS).0,
                (top + plot_bottom) / 2.0,
                size::AXIS,
                "middle",
            ),
            plot_bottom - top + 40.0,
        );
        yl.rotate = true;
        let b = yl.bbox();
        if b.y0 < 2.0 || b.y1 > H - 2.0 {
            yl.y = (b.y1 - b.y0) / 2.0 + 2.0;
        }
        texts.push(yl);
    }

    /// Every series' polyline and markers and every band's polygon, in px.
    #[allow(clippy::type_complexity)]
    fn geometry(
        &self,
        plot: &R,
        x_of_ref: &dyn Fn(f64) -> f64,
        y_of_ref: &dyn Fn(Option<f64>) -> f64,
    ) -> (
        Vec<Vec<(f64, f64)>>,
        Vec<Vec<(f64, f64)>>,
        Vec<Vec<(f64, f64)>>,
    ) {
        let (spec, xa) = (self.spec, self.xa);
        let mut lines = Vec::new();
        let mut marks = Vec::new();
        for p in self.preps {
            let mut pts: Vec<(f64, Option<f64>)> = p.pts.clone();
            if self.xs == Scale::Pct {
                if let Some(&last) = pts.last() {
                    if p.style == SeriesStyle::Step && last.0 < xa.hi {
                        pts.push((xa.hi, last.1));
                    }
                }
            }
            let px: Vec<(f64, f64)> = pts
                .iter()
                .map(|&(x, y)| (x_of_ref(x), y_of_ref(y)))
                .collect();
            let line: Vec<(f64, f64)> = match p.style {
                SeriesStyle::Points => Vec::new(),
                SeriesStyle::Step => {
                    let mut out = Vec::with_capacity(px.len() * 2);
                    for (i, &q) in px.iter().enumerate() {
                        if i > 0 {
                            out.push((q.0, px[i - 1].1));
                        }
                        out.push(q);
                    }
                    out
                }
                _ => px.clone(),
            };
            let m = if matches!(p.style, SeriesStyle::Points | SeriesStyle::LinePoints) {
                px.iter()
                    .copied()
                    .filter(|q| plot.pad(0.5).contains(*q))
                    .collect()
            } else {
                Vec::new()
            };
            lines.push(line);
            marks.push(m);
        }
        let bands: Vec<Vec<(f64, f64)>> = spec
            .bands
            .iter()
            .map(|b| {
                let map = |&(x, y): &(f64, f64)| {
                    (
                        x_of_ref(
                            fwd(self.xs, x, self.floor.max(f64::MIN_POSITIVE)).unwrap_or(xa.lo),
                        ),
                        y_of_ref(fwd(self.ys, y, self.floor)),
                    )
                };
                let mut poly: Vec<(f64, f64)> = b.lower.iter().map(map).collect();
                poly.extend(b.upper.iter().rev().map(map));
                poly
            })
            .collect();
        (lines, marks, bands)
    }

    /// Where the legend goes: inside, the first corner (the spec's
    /// preference first) clear of data and text; or right of the plot; or
    /// under it in `legend_cols` columns.
    fn legend_rect(
        &self,
        place: Place,
        frame: &Frame,
        legend_cols: usize,
        x_label_y: f64,
    ) -> Option<R> {
        let spec = self.spec;
        let (plot, left) = (frame.plot, frame.plot.x0);
        let (w, h) = (self.legend_w, self.legend_h);
        match place {
            Place::Inside => {
                let inner = plot.pad(-8.0);
                let corner = |c: Legend| match c {
                    Legend::UpperRight => R::new(inner.x1 - w, inner.y0, inner.x1, inner.y0 + h),
                    Legend::UpperLeft => R::new(inner.x0, inner.y0, inner.x0 + w, inner.y0 + h),
                    Legend::LowerRight => R::new(inner.x1 - w, inner.y1 - h, inner.x1, inner.y1),
                    Legend::LowerLeft => R::new(inner.x0, inner.y1 - h, inner.x0 + w, inner.y1),
                };
                let order = [
                    spec.legend,
                    Legend::UpperRight,
                    Legend::UpperLeft,
                    Legend::LowerRight,
                    Legend::LowerLeft,
                ];
                order.iter().map(|&c| corner(c)).find(|r| {
                    r.x0 >= inner.x0
                        && r.y1 <= inner.y1
                        && clear_of_data(r, frame)
                        && !frame.texts.iter().any(|t| t.bbox().overlaps(r))
                })
            }
            Place::Right => Some(R::new(W - 14.0 - w, plot.y0, W - 14.0, plot.y0 + h)),
            Place::Bottom => {
                let cols = legend_cols as f64;
                let rows = if legend_cols == 1 {
                    self.n_lines
                } else {
                    self.n_entries.div_ceil(legend_cols)
                } as f64;
                let top = x_label_y + 12.0;
                Some(R::new(left, top, left + cols * w, top + rows * 18.0 + 10.0))
            }
        }
    }

    /// Point labels beside their points, else further out with a leader
    /// line, else listed in `dropped` (the footnote).
    fn label_points(&self, frame: &mut Frame, dropped: &mut Vec<String>) {
        let plot = frame.plot;
        let (lasc, ldesc) = style::text_extent(size::LABEL);
        let mut taken: Vec<R> = frame.texts.iter().map(|t| t.bbox()).collect();
        taken.extend(frame.legend);
        let area = plot.pad(-1.0);
        for p in self.preps {
            for (k, label) in p.labels.iter().enumerate() {
                if label.is_empty() {
                    continue;
                }
                let (x, y) = ((frame.x_of)(p.pts[k].0), (frame.y_of)(p.pts[k].1));
                if !area.contains((x, y)) {
                    continue;
                }
                let tw = style::text_width(label, size::LABEL);
                let th = lasc + ldesc;
                let mut placed = None;
                'search: for (dist, leader) in
                    [(7.0, false), (20.0, true), (36.0, true), (56.0, true)]
                {
                    let cands = [
                        (x + dist, y - th / 2.0),
                        (x - dist - tw, y - th / 2.0),
                        (x - tw / 2.0, y - dist - th),
                        (x - tw / 2.0, y + dist),
                        (x + dist * 0.7, y - dist * 0.7 - th),
                        (x + dist * 0.7, y + dist * 0.7),
                        (x - dist * 0.7 - tw, y - dist * 0.7 - th),
                        (x - dist * 0.7 - tw, y + dist * 0.7),
                    ];
                    for (bx, by) in cands {
                        let r = R::new(bx, by, bx + tw, by + th);
                        if !r.inside(&area) || taken.iter().any(|t| t.overlaps(&r.pad(1.0))) {
                            continue;
                        }
                        if !clear_of_data(&r, frame) {
                            continue;
                        }
                        // A leader must not cross other labels.
                        let c = ((r.x0 + r.x1) / 2.0, (r.y0 + r.y1) / 2.0);
                        if leader && taken.iter().any(|t| t.hits((x, y), c)) {
                            continue;
                        }
                        placed = Some((r, leader));
                        break 'search;
                    }
                }
                match placed {
                    Some((r, leader)) => {
                        let mut t = Txt::new(label, r.x0, r.y0 + lasc, size::LABEL, "start");
                        t.fill = MUTED;
                        taken.push(r);
                        if leader {
                            let near = (x.clamp(r.x0, r.x1), y.clamp(r.y0, r.y1));
                            let d = ((near.0 - x).powi(2) + (near.1 - y).powi(2))
                                .sqrt()
                                .max(1e-9);
                            let start = (
                                x + (near.0 - x) / d * (MR + 1.0),
                                y + (near.1 - y) / d * (MR + 1.0),
                            );
                            frame.leaders.push((start, near));
                        }
                        frame.texts.push(t);
                    }
                    None => dropped.push(format!(
                        "{}{}",
                        label,
                        if p.label.is_empty() {
                            String::new()
                        } else {
                            format!(" ({})", p.label)
                        }
                    )),
                }
            }
        }
    }

    /// Grid lines, then the left and bottom axes (with the break above a
    /// log axis' zero row) and the x ticks.
    fn write_grid_and_axes(&self, o: &mut String, f: &Frame) {
        let p = f.plot;
        // Grid.
        o.push_str("<g stroke=\"");
        o.push_str(GRID);
        o.push_str("\" stroke-width=\"1\">\n");
        for (t, _) in &self.xa.ticks {
            let x = (f.x_of)(*t);
            let _ = writeln!(
                o,
                "<line x1=\"{x:.1}\" y1=\"{:.1}\" x2=\"{x:.1}\" y2=\"{:.1}\"/>",
                p.y0, f.data_bottom
            );
        }
        for (t, _) in &self.ya.ticks {
            let y = (f.y_of)(Some(*t));
            let _ = writeln!(
                o,
                "<line x1=\"{:.1}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\"/>",
                p.x0, p.x1
            );
        }
        if let Some(zy) = f.zero_y {
            let _ = writeln!(
                o,
                "<line x1=\"{:.1}\" y1=\"{zy:.1}\" x2=\"{:.1}\" y2=\"{zy:.1}\"/>",
                p.x0, p.x1
            );
        }
        o.push_str("</g>\n");
        // Axes: left and bottom; a break between the log part and the zero row.
        let _ = writeln!(
            o,
            "<g stroke=\"{MUTED}\" stroke-width=\"1\" fill=\"none\"><path d=\"M{:.1} {:.1}V{:.1}\"/><path d=\"M{:.1} {:.1}H{:.1}\"/>",
            p.x0, p.y0, f.data_bottom, p.x0, p.y1, p.x1
        );
        if f.zero_y.is_some() {
            let (a, b) = (f.data_bottom, p.y1);
            let _ = writeln!(
                o,
                "<path d=\"M{:.1} {:.1}V{:.1}\"/><path d=\"M{:.1} {:.1}l8 -4M{:.1} {:.1}l8 -4\"/>",
                p.x0,
                a + ZERO_GAP - 2.0,
                b,
                p.x0 - 4.0,
                a + 2.0,
                p.x0 - 4.0,
                a + ZERO_GAP - 2.0
            );
        }
        for (t, _) in &self.xa.ticks {
            let x = (f.x_of)(*t);
            let _ = writeln!(o, "<path d=\"M{x:.1} {:.1}v5\"/>", p.y1);
        }
        o.push_str("</g>\n");
    }

    /// Bands, marker lines and series, each series in a group named for
    /// the layout test.
    fn write_data(&self, o: &mut String, f: &Frame, looks: &[Look]) {
        let (spec, p) = (self.spec, f.plot);
        // Bands.
        for (i, (b, poly)) in spec.bands.iter().zip(&f.bands).enumerate() {
            let _ = writeln!(
                o,
                "<g id=\"band-{i}\" clip-path=\"url(#plot-clip)\"><path d=\"{}Z\" fill=\"{}\" fill-opacity=\"{}\" stroke=\"none\"/></g>",
                path_d(poly),
                style::PALETTE[b.color % style::PALETTE.len()],
                b.opacity
            );
        }
        // Marker lines.
        for (x, label_bottom) in &f.vline_px {
            let _ = writeln!(
                o,
                "<path d=\"M{x:.1} {:.1}V{:.1}\" stroke=\"{MUTED}\" stroke-width=\"1\" stroke-dasharray=\"4 4\" fill=\"none\"/>",
                p.y0, p.y1
            );
            if let Some(lb) = label_bottom {
                let _ = writeln!(
                    o,
                    "<path d=\"M{x:.1} {lb:.1}V{:.1}\" stroke=\"{MUTED}\" stroke-width=\"0.8\" fill=\"none\"/>",
                    p.y0
                );
            }
        }
        // Series.
        for (i, ((line, marks), look)) in f.lines.iter().zip(&f.marks).zip(looks).enumerate() {
            let _ = writeln!(o, "<g id=\"series-{i}\" clip-path=\"url(#plot-clip)\">");
            if line.len() >= 2 {
                let _ = writeln!(o, "<path d=\"{}\" {}/>", path_d(line), stroke(look, 2.0));
            } else if line.len() == 1 && marks.is_empty() {
                let (x, y) = line[0];
                marker(o, Marker::Circle, x, y, look.rgb());
            }
            for &(x, y) in marks {
                marker(o, look.marker.unwrap_or(Marker::Circle), x, y, look.rgb());
            }
            o.push_str("</g>\n");
        }
    }

    /// The legend box and one row (or wrapped rows) per entry.
    fn write_legend(&self, o: &mut String, r: R, entries: &[Entry], row_h: f64) {
        let _ = writeln!(
            o,
            "<g id=\"legend\"><rect id=\"legend-box\" x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"#ffffff\" fill-opacity=\"0.92\" stroke=\"#c8cdd3\"/>",
            r.x0,
            r.y0,
            r.x1 - r.x0,
            r.y1 - r.y0
        );
        let cols = if self.wrapped {
            1
        } else {
            (((r.x1 - r.x0) / self.legend_w).round() as usize).max(1)
        };
        let (asc, _) = style::text_extent(size::LEGEND);
        let mut line = 0usize;
        for (k, e) in entries.iter().enumerate() {
            let (c, rr) = if cols == 1 {
                (0, line)
            } else {
                (k % cols, k / cols)
            };
            line += e.lines.len();
            let x = r.x0 + 6.0 + c as f64 * self.legend_w;
            let y = r.y0 + 5.0 + rr as f64 * row_h + row_h / 2.0;
            let _ = writeln!(o, "<g id=\"legend-for-{}\">", e.target);
            if let Some(l) = &e.look {
                if l.dash.is_some() {
                    let _ = writeln!(
                        o,
                        "<path d=\"M{:.1} {y:.1}H{:.1}\" {}/>",
                        x,
                        x + 30.0,
                        stroke(l, 2.0)
                    );
                }
                if let Some(m) = l.marker {
                    marker(o, m, x + 15.0, y, l.rgb());
                }
            }
            if let Some((c, op)) = e.band {
                let _ = writeln!(
                    o,
                    "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"30\" height=\"10\" fill=\"{}\" fill-opacity=\"{op}\"/>",
                    x,
                    y - 5.0,
                    style::PALETTE[c % style::PALETTE.len()]
                );
            }
            for (j, l) in e.lines.iter().enumerate() {
                let ly = y + asc / 2.5 + j as f64 * row_h;
                Txt::new(l, x + 36.0, ly, size::LEGEND, "start").svg(o);
            }
            o.push_str("</g>\n");
        }
        o.push_str("</g>\n");
    }

    fn write(&self, f: &Frame, entries: &[Entry], looks: &[Look], row_h: f64) -> String {
        let spec = self.spec;
        let p = f.plot;
        let mut o = String::new();
        let _ = writeln!(
            o,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{W}\" height=\"{H}\" viewBox=\"0 0 {W} {H}\" font-family=\"{}\">",
            style::FONT_FAMILY
        );
        let _ = writeln!(o, "<title>{}</title>", esc(&spec.title));
        if !spec.caption.is_empty() {
            let _ = writeln!(o, "<desc>{}</desc>", esc(&spec.caption));
        }
        let _ = writeln!(o, "<rect width=\"{W}\" height=\"{H}\" fill=\"#ffffff\"/>");
        let _ = writeln!(
            o,
            "<defs><clipPath id=\"plot-clip\"><rect x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\"/></clipPath></defs>",
            p.x0 - MR - 1.0,
            p.y0 - MR - 1.0,
            p.x1 - p.x0 + 2.0 * MR + 2.0,
            p.y1 - p.y0 + 2.0 * MR + 2.0
        );
        let _ = writeln!(
            o,
            "<rect id=\"plot-area\" x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"#ffffff\" stroke=\"none\"/>",
            p.x0,
            p.y0,
            p.x1 - p.x0,
            p.y1 - p.y0
        );
        self.write_grid_and_axes(&mut o, f);
        self.write_data(&mut o, f, looks);
        // Leaders and texts.
        for (a, b) in &f.leaders {
            let _ = writeln!(
                o,
                "<path d=\"M{:.1} {:.1}L{:.1} {:.1}\" stroke=\"{MUTED}\" stroke-width=\"0.8\" fill=\"none\"/>",
                a.0, a.1, b.0, b.1
            );
        }
        for t in &f.texts {
            t.svg(&mut o);
        }
        if let Some(r) = f.legend {
            self.write_legend(&mut o, r, entries, row_h);
        }
        o.push_str("</svg>\n");
        o
    }
}

fn path_d(pts: &[(f64, f64)]) -> String {
    let mut d = String::with_capacity(pts.len() * 14);
    for (i, (x, y)) in pts.iter().enumerate() {
        let _ = write!(d, "{}{x:.1} {y:.1}", if i == 0 { "M" } else { "L" });
    }
    d
}

fn stroke(l: &Look, w: f64) -> String {
    let dash = l.dash.map(|d| DASHES[d % DASHES.len()]).unwrap_or("");
    format!(
        "fill=\"none\" stroke=\"{}\" stroke-width=\"{w}\" stroke-linejoin=\"round\"{}",
        l.rgb(),
        if dash.is_empty() {
            String::new()
        } else {
            format!(" stroke-dasharray=\"{dash}\"")
        }
    )
}

fn marker(o: &mut String, m: Marker, x: f64, y: f64, c: &str) {
    let r = MR;
    let _ = match m {
        Marker::Circle => writeln!(o, "<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"{r}\" fill=\"{c}\"/>"),
        Marker::Square => writeln!(
            o,
            "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{}\" height=\"{}\" fill=\"{c}\"/>",
            x - r * 0.85,
            y - r * 0.85,
            r * 1.7,
            r * 1.7
        ),
        Marker::Triangle => writeln!(
            o,
            "<path d=\"M{x:.1} {:.1}L{:.1} {:.1}L{:.1} {:.1}Z\" fill=\"{c}\"/>",
            y - r * 1.1,
            x + r,
            y + r * 0.8,
            x - r,
            y + r * 0.8
        ),
        Marker::Diamond => writeln!(
            o,
            "<path d=\"M{x:.1} {:.1}L{:.1} {y:.1}L{x:.1} {:.1}L{:.1} {y:.1}Z\" fill=\"{c}\"/>",
            y - r * 1.15,
            x + r,
            y + r * 1.15,
            x - r
        ),
        Marker::Cross => writeln!(
            o,
            "<path d=\"M{:.1} {:.1}L{:.1} {:.1}M{:.1} {:.1}L{:.1} {:.1}\" stroke=\"{c}\" stroke-width=\"2\" fill=\"none\"/>",
            x - r,
            y - r,
            x + r,
            y + r,
            x - r,
            y + r,
            x + r,
            y - r
        ),
    };
}

#[cfg(test)]
mod tests {
    use super::*;

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
