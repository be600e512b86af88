//! Charts in one consistent style, rendered to SVG and PNG in memory.
//!
//! * Font: DejaVu Sans embedded in the binary (the `dejavu` crate) and
//!   registered with plotters' ab_glyph backend, so no system font library is
//!   needed and PNGs are identical on every machine.
//! * Palette: Okabe–Ito, which stays distinguishable for the common forms of
//!   colour blindness; series also differ by marker where points are drawn.
//! * Log axes are drawn by plotting log10 of the values on a linear axis and
//!   labelling only the powers of ten, so one code path serves every chart.
//!   Values at or below zero cannot sit on a log axis: they are drawn at the
//!   axis floor (`log_floor`), which the axis label says.

use crate::error::{Error, Result};
use plotters::coord::Shift;
use plotters::prelude::*;
use std::sync::Once;

/// Okabe–Ito colours (black and yellow last: least visible on white).
pub const PALETTE: [RGBColor; 8] = [
    RGBColor(0, 114, 178),   // blue
    RGBColor(230, 159, 0),   // orange
    RGBColor(0, 158, 115),   // bluish green
    RGBColor(213, 94, 0),    // vermillion
    RGBColor(204, 121, 167), // reddish purple
    RGBColor(86, 180, 233),  // sky blue
    RGBColor(0, 0, 0),       // black
    RGBColor(240, 228, 66),  // yellow
];

/// Default chart size in pixels.
pub const SIZE: (u32, u32) = (960, 600);

/// How a series is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeriesStyle {
    /// A polyline through the points.
    Line,
    /// A dashed polyline.
    Dashed,
    /// Markers only.
    Points,
    /// A polyline with markers.
    LinePoints,
    /// A staircase: each value holds until the next x.
    Step,
}

/// One labelled series.
#[derive(Debug, Clone)]
pub struct Series {
    /// Legend label.
    pub label: String,
    /// (x, y) in data units.
    pub points: Vec<(f64, f64)>,
    /// How to draw it.
    pub style: SeriesStyle,
    /// Optional text next to each point (same length as `points`).
    pub point_labels: Option<Vec<String>>,
    /// Palette index override (to keep a colour per algorithm across charts).
    pub color: Option<usize>,
}

impl Series {
    /// A series drawn with `style`.
    pub fn new(label: impl Into<String>, points: Vec<(f64, f64)>, style: SeriesStyle) -> Self {
        Self {
            label: label.into(),
            points,
            style,
            point_labels: None,
            color: None,
        }
    }
}

/// Where the legend goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Legend {
    /// Top right.
    UpperRight,
    /// Top left.
    UpperLeft,
    /// Bottom right.
    LowerRight,
    /// Bottom left.
    LowerLeft,
}

/// A chart to render.
#[derive(Debug, Clone)]
pub struct ChartSpec {
    /// File stem (`<name>.svg`, `<name>.png`).
    pub name: String,
    /// Title shown above the plot.
    pub title: String,
    /// X axis label, with units.
    pub x_label: String,
    /// Y axis label, with units.
    pub y_label: String,
    /// Log-scale x.
    pub x_log: bool,
    /// Log-scale y.
    pub y_log: bool,
    /// Smallest value drawn on a log axis (values below are drawn here).
    pub log_floor: f64,
    /// The series.
    pub series: Vec<Series>,
    /// Vertical marker lines (x, label).
    pub vlines: Vec<(f64, String)>,
    /// Force the y range (data units).
    pub y_range: Option<(f64, f64)>,
    /// Force the x range (data units).
    pub x_range: Option<(f64, f64)>,
    /// Legend position.
    pub legend: Legend,
}

impl ChartSpec {
    /// A linear-axes chart with no series yet.
    pub fn new(
        name: impl Into<String>,
        title: impl Into<String>,
        x_label: impl Into<String>,
        y_label: impl Into<String>,
    ) -> Self {
        Self {
            name: name.into(),
            title: title.into(),
            x_label: x_label.into(),
            y_label: y_label.into(),
            x_log: false,
            y_log: false,
            log_floor: 0.1,
            series: Vec::new(),
            vlines: Vec::new(),
            y_range: None,
            x_range: None,
            legend: Legend::UpperRight,
        }
    }

    /// The same chart with both axes logarithmic, values at or below zero
    /// drawn at `floor`.
    pub fn log_log(mut self, floor: f64) -> Self {
        self.x_log = true;
        self.y_log = true;
        self.log_floor = floor;
        self
    }
}

/// A rendered chart.
#[derive(Debug, Clone)]
pub struct Chart {
    /// File stem.
    pub name: String,
    /// SVG text.
    pub svg: String,
    /// PNG bytes.
    pub png: Vec<u8>,
}

static FONTS: Once = Once::new();

fn register_fonts() {
    FONTS.call_once(|| {
        // DejaVu Sans is a valid TrueType font; failure here would only mean
        // plotters draws no text, which the chart tests would catch.
        let _ = plotters::style::register_font(
            "sans-serif",
            FontStyle::Normal,
            dejavu::sans::regular(),
        );
        let _ = plotters::style::register_font("sans-serif", FontStyle::Bold, dejavu::sans::bold());
    });
}

/// Renders `spec` to SVG and PNG.
pub fn render(spec: &ChartSpec) -> Result<Chart> {
    register_fonts();
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        draw(root, spec).map_err(|e| Error::internal(format!("chart {}: {e}", spec.name)))?;
    }
    let mut rgb = vec![0u8; (SIZE.0 * SIZE.1 * 3) as usize];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, SIZE).into_drawing_area();
        draw(root, spec).map_err(|e| Error::internal(format!("chart {}: {e}", spec.name)))?;
    }
    let png =
        encode_png(&rgb, SIZE).map_err(|e| Error::internal(format!("chart {}: {e}", spec.name)))?;
    Ok(Chart {
        name: spec.name.clone(),
        svg,
        png,
    })
}

fn encode_png(rgb: &[u8], (w, h): (u32, u32)) -> std::result::Result<Vec<u8>, png::EncodingError> {
    let mut out = Vec::new();
    {
        let mut enc = png::Encoder::new(&mut out, w, h);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        // Baselines are committed: spend CPU on smaller files.
        enc.set_compression(png::Compression::Best);
        enc.set_filter(png::FilterType::Paeth);
        let mut writer = enc.write_header()?;
        writer.write_image_data(rgb)?;
    }
    Ok(out)
}

fn to_axis(v: f64, log: bool, floor: f64) -> f64 {
    if log {
        v.max(floor).log10()
    } else {
        v
    }
}

/// Tick labels: plain numbers with k/M/G suffixes; on log axes only powers of ten.
fn tick(v: f64, log: bool) -> String {
    if log {
        let r = v.round();
        if (v - r).abs() > 1e-6 {
            return String::new();
        }
        return human(10f64.powi(r as i32));
    }
    human(v)
}

/// A compact human form of a number for tick labels.
pub fn human(v: f64) -> String {
    let a = v.abs();
    let (x, suffix) = if a >= 1e9 {
        (v / 1e9, "G")
    } else if a >= 1e6 {
        (v / 1e6, "M")
    } else if a >= 1e4 {
        (v / 1e3, "k")
    } else {
        (v, "")
    };
    let s = if (x - x.round()).abs() < 1e-9 {
        format!("{}", x.round() as i64)
    } else if x.abs() >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string()
    };
    format!("{s}{suffix}")
}

fn range(
    values: impl Iterator<Item = f64>,
    forced: Option<(f64, f64)>,
    log: bool,
    floor: f64,
) -> (f64, f64) {
    if let Some((a, b)) = forced {
        let (a, b) = (to_axis(a, log, floor), to_axis(b, log, floor));
        if b > a {
            return (a, b);
        }
    }
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in values.filter(|v| v.is_finite()) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    if log {
        // whole decades, so the labelled powers of ten frame the data
        return (
            lo.floor(),
            if hi.ceil() > lo.floor() {
                hi.ceil()
            } else {
                lo.floor() + 1.0
            },
        );
    }
    if hi <= lo {
        return (lo - 1.0, hi + 1.0);
    }
    let pad = (hi - lo) * 0.05;
    (
        if lo >= 0.0 && lo - pad < 0.0 {
            0.0
        } else {
            lo - pad
        },
        hi + pad,
    )
}

/// Each series' finite points on the axes (log10 on log axes, values at or
/// below zero at the floor); a step series gets its corners.
fn axis_points(spec: &ChartSpec) -> Vec<Vec<(f64, f64)>> {
    let floor = spec.log_floor;
    spec.series
        .iter()
        .map(|s| {
            let pts: Vec<(f64, f64)> = s
                .points
                .iter()
                .filter(|(x, y)| x.is_finite() && y.is_finite())
                .map(|&(x, y)| (to_axis(x, spec.x_log, floor), to_axis(y, spec.y_log, floor)))
                .collect();
            if s.style == SeriesStyle::Step {
                let mut out = Vec::with_capacity(pts.len() * 2);
                for (i, &(x, y)) in pts.iter().enumerate() {
                    if i > 0 {
                        out.push((x, pts[i - 1].1));
                    }
                    out.push((x, y));
                }
                out
            } else {
                pts
            }
        })
        .collect()
}

type DrawResult<DB> =
    std::result::Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

fn draw<DB: DrawingBackend>(root: DrawingArea<DB, Shift>, spec: &ChartSpec) -> DrawResult<DB> {
    root.fill(&WHITE)?;
    let floor = spec.log_floor;
    let series = axis_points(spec);
    let xs = series
        .iter()
        .flatten()
        .map(|p| p.0)
        .chain(spec.vlines.iter().map(|v| to_axis(v.0, spec.x_log, floor)));
    let (x0, x1) = range(xs, spec.x_range, spec.x_log, floor);
    let (y0, y1) = range(
        series.iter().flatten().map(|p| p.1),
        spec.y_range,
        spec.y_log,
        floor,
    );

    let mut chart = ChartBuilder::on(&root)
        .caption(&spec.title, ("sans-serif", 24).into_font())
        .margin(16)
        .x_label_area_size(56)
        .y_label_area_size(80)
        .build_cartesian_2d(x0..x1, y0..y1)?;
    let (x_log, y_log) = (spec.x_log, spec.y_log);
    let x_fmt = move |v: &f64| tick(*v, x_log);
    let y_fmt = move |v: &f64| tick(*v, y_log);
    chart
        .configure_mesh()
        .x_desc(spec.x_label.as_str())
        .y_desc(spec.y_label.as_str())
        .x_labels(12)
        .y_labels(10)
        .x_label_formatter(&x_fmt)
        .y_label_formatter(&y_fmt)
        .label_style(("sans-serif", 15))
        .axis_desc_style(("sans-serif", 17))
        .light_line_style(RGBColor(238, 238, 238))
        .bold_line_style(RGBColor(210, 210, 210))
        .draw()?;

    for (i, (s, pts)) in spec.series.iter().zip(&series).enumerate() {
        let color = PALETTE[s.color.unwrap_or(i) % PALETTE.len()];
        let line = color.stroke_width(2);
        let legend_style = line;
        let anno = match s.style {
            SeriesStyle::Line | SeriesStyle::Step => {
                chart.draw_series(LineSeries::new(pts.iter().copied(), line))?
            }
            SeriesStyle::Dashed => {
                chart.draw_series(DashedLineSeries::new(pts.iter().copied(), 8, 5, line))?
            }
            SeriesStyle::Points => chart.draw_series(pts.iter().map(|&p| marker(p, i, color)))?,
            SeriesStyle::LinePoints => {
                chart.draw_series(LineSeries::new(pts.iter().copied(), line))?;
                chart.draw_series(pts.iter().map(|&p| marker(p, i, color)))?
            }
        };
        if !s.label.is_empty() {
            anno.label(s.label.as_str())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 22, y)], legend_style));
        }
        if let Some(labels) = &s.point_labels {
            chart.draw_series(pts.iter().zip(labels).map(|(&p, l)| {
                Text::new(
                    l.clone(),
                    p,
                    ("sans-serif", 13).into_font().color(&RGBColor(60, 60, 60)),
                )
            }))?;
        }
    }
    for (x, label) in &spec.vlines {
        let x = to_axis(*x, spec.x_log, floor);
        let grey = RGBColor(120, 120, 120);
        chart.draw_series(DashedLineSeries::new(
            vec![(x, y0), (x, y1)],
            4,
            4,
            grey.stroke_width(1),
        ))?;
        if !label.is_empty() {
            chart.draw_series(std::iter::once(Text::new(
                label.clone(),
                (x, y1),
                ("sans-serif", 13).into_font().color(&grey),
            )))?;
        }
    }
    if spec.series.iter().any(|s| !s.label.is_empty()) {
        let pos = match spec.legend {
            Legend::UpperRight => SeriesLabelPosition::UpperRight,
            Legend::UpperLeft => SeriesLabelPosition::UpperLeft,
            Legend::LowerRight => SeriesLabelPosition::LowerRight,
            Legend::LowerLeft => SeriesLabelPosition::LowerLeft,
        };
        chart
            .configure_series_labels()
            .position(pos)
            .label_font(("sans-serif", 15))
            .background_style(WHITE.mix(0.9))
            .border_style(RGBColor(180, 180, 180))
            .draw()?;
    }
    root.present()?;
    Ok(())
}

/// A marker whose shape cycles with the series index (circle, triangle, cross).
fn marker<DB: DrawingBackend>(
    p: (f64, f64),
    i: usize,
    color: RGBColor,
) -> DynElement<'static, DB, (f64, f64)> {
    match i % 3 {
        0 => Circle::new(p, 4, color.filled()).into_dyn(),
        1 => TriangleMarker::new(p, 5, color.filled()).into_dyn(),
        _ => Cross::new(p, 4, color.stroke_width(2)).into_dyn(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_svg_with_text_and_a_valid_png() {
        let mut spec = ChartSpec::new("t", "A title", "x (ms)", "y (events)");
        spec.y_log = true;
        spec.series.push(Series::new(
            "s1",
            vec![(1.0, 1.0), (2.0, 100.0), (3.0, 0.0)],
            SeriesStyle::LinePoints,
        ));
        spec.vlines.push((2.0, "flip".into()));
        let c = render(&spec).unwrap();
        assert!(c.svg.starts_with("<svg"));
        assert!(c.svg.contains("A title") && c.svg.contains("flip") && c.svg.contains("s1"));
        assert_eq!(&c.png[1..4], b"PNG");
        // deterministic
        assert_eq!(render(&spec).unwrap().png, c.png);
    }

    #[test]
    fn ticks() {
        assert_eq!(tick(3.0, true), "1000");
        assert_eq!(tick(4.0, true), "10k");
        assert_eq!(tick(2.5, true), "");
        assert_eq!(human(0.04), "0.04");
        assert_eq!(human(1_500_000.0), "1.5M");
    }
}
