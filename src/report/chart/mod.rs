//! Charts in one style ([`style`]), laid out here and written as SVG; the
//! PNG is that same SVG rasterised with the embedded DejaVu Sans (so the
//! text is shaped and kerned, and both files are one picture).
//!
//! What every chart gets without asking:
//!
//! * a legend outside the plot, or inside in a corner that is measured to be
//!   free of data; its swatches show each series' line, dash and marker;
//! * Okabe–Ito colours, distinct per series, and dash patterns where colours
//!   must repeat ([`style::assign_looks`]);
//! * point labels and marker-line labels placed without collisions (nudged,
//!   then moved away with a leader line, else listed under the plot);
//! * on a log y axis, values at or below zero on a separate labelled "0" row
//!   under the axis instead of on it (on a linear one, points with no value
//!   at all go on a row of their own when the chart names it:
//!   [`ChartSpec::y_row_below`]);
//! * identical series drawn once, with a joined label (`a = b = c`);
//! * integer ticks when every x is an integer (discrete x: draw them as
//!   [`SeriesStyle::Points`]);
//! * percentile axes in HdrHistogram's style ([`ChartSpec::x_percentile`]):
//!   x = percentile on a 1/(1−p) log axis, so the tail gets the room;
//! * shaded bands ([`Band`]) under the series; on a log y axis, where a
//!   band's lower edge is zero, its upper edge alone as a thin line (the
//!   legend says so) instead of a fill over empty decades down to the
//!   axis;
//! * axes that hold the data: log axes end at the 1-2-5 steps around it,
//!   and a marker line far outside the data is an arrow at the axis' edge
//!   (`bound →`), not an axis stretched to it;
//! * the typographic minus (U+2212) for signs and for ` - ` in every text;
//! * `data-axis-note-x`/`-y` on the plot area when the chart says why its
//!   data fill little of an axis ([`ChartSpec::x_note`]; small multiples
//!   that share one forced range get it without asking).
//!
//! # Examples
//!
//! ```
//! use ratelab::report::chart::{render, Band, ChartSpec, Series, SeriesStyle};
//!
//! let mut spec = ChartSpec::new("demo", "Errors by rank", "rank", "error (log)");
//! spec.caption = "What the chart shows, for the review page.".into();
//! spec.x_log = true;
//! spec.y_log = true;
//! spec.series.push(Series::new(
//!     "median",
//!     vec![(1.0, 10.0), (10.0, 12.0), (100.0, 0.0)], // the 0 goes on the "0" row
//!     SeriesStyle::Line,
//! ));
//! spec.series.push(Series::new(
//!     "same data",
//!     vec![(1.0, 10.0), (10.0, 12.0), (100.0, 0.0)],
//!     SeriesStyle::Line,
//! )); // drawn once, labelled "median = same data"
//! spec.bands.push(Band::new(
//!     "±1σ",
//!     vec![(1.0, 5.0), (10.0, 6.0), (100.0, 1.0)],
//!     vec![(1.0, 20.0), (10.0, 22.0), (100.0, 3.0)],
//!     0,
//! ));
//! spec.vlines.push((10.0, "flip".into()));
//! let chart = render(&spec).unwrap();
//! assert!(chart.svg.contains("median = same data"));
//! assert_eq!(&chart.png[1..4], b"PNG");
//! ```

mod draw;
mod error;
mod spec;
pub mod style;

use crate::error::{Error, Result};

pub use error::DrawError;
pub use spec::{Band, ChartSpec, Legend, Series, SeriesStyle};
pub use style::PALETTE;

/// Chart size in pixels.
pub const SIZE: (u32, u32) = (960, 600);

/// A rendered chart.
#[derive(Debug, Clone)]
pub struct Chart {
    /// File stem.
    pub name: String,
    /// SVG text.
    pub svg: String,
    /// PNG bytes: the SVG rasterised.
    pub png: Vec<u8>,
    /// The spec's caption.
    pub caption: String,
}

/// Renders `spec` to SVG, and the SVG to PNG, on its canvas
/// ([`ChartSpec::size`], else [`SIZE`]).
pub fn render(spec: &ChartSpec) -> Result<Chart> {
    let size = spec.size.unwrap_or(SIZE);
    let svg =
        draw::svg(spec, size).map_err(|e| Error::internal(format!("chart {}: {e}", spec.name)))?;
    let rgb = style::rasterise(&svg, size)
        .map_err(|e| Error::internal(format!("chart {}: {e}", spec.name)))?;
    let png =
        encode_png(&rgb, size).map_err(|e| Error::internal(format!("chart {}: {e}", spec.name)))?;
    Ok(Chart {
        name: spec.name.clone(),
        svg,
        png,
        caption: spec.caption.clone(),
    })
}

/// Height of one row of small multiples (px); the canvas is [`SIZE`]'s
/// width, `cols` panels across.
pub const PANEL_HEIGHT: u32 = 300;

/// Renders small multiples: `panels` in a grid of `cols` columns under one
/// `title`, each panel a chart of its own (title, axes, legend); give them
/// the same `x_range`/`y_range` to share axes. The canvas is [`SIZE`]'s
/// width and [`PANEL_HEIGHT`] per row (plus the title's strip); a single
/// panel gets the whole of [`SIZE`].
///
/// # Examples
///
/// ```
/// use ratelab::report::chart::{render_grid, ChartSpec, Series, SeriesStyle};
///
/// let panels: Vec<ChartSpec> = ["a", "b"]
///     .iter()
///     .map(|n| {
///         let mut c = ChartSpec::new(*n, *n, "x", "y");
///         c.series.push(Series::new("", vec![(0.0, 1.0), (1.0, 2.0)], SeriesStyle::Line));
///         c.y_range = Some((0.0, 3.0));
///         c
///     })
///     .collect();
/// let chart = render_grid("grid", "Two panels", "", &panels, 2).unwrap();
/// assert!(chart.svg.contains("plot-area-1"));
/// assert_eq!(&chart.png[1..4], b"PNG");
/// ```
pub fn render_grid(
    name: &str,
    title: &str,
    caption: &str,
    panels: &[ChartSpec],
    cols: usize,
) -> Result<Chart> {
    // Never more columns than panels, and one panel takes the whole
    // standard canvas: not a half-width chart beside empty space.
    let cols = cols.clamp(1, panels.len().max(1));
    let rows = panels.len().div_ceil(cols).max(1) as u32;
    let top = draw::grid_top(panels);
    let size = if panels.len() == 1 {
        (SIZE.0, SIZE.1.max(top + PANEL_HEIGHT))
    } else {
        (SIZE.0, top + rows * PANEL_HEIGHT)
    };
    let fail = |e: DrawError| Error::internal(format!("chart {name}: {e}"));
    let panels = shared_axes_noted(panels);
    let svg = draw::svg_grid(title, caption, &panels, cols, size).map_err(fail)?;
    let rgb = style::rasterise(&svg, size).map_err(fail)?;
    let png = encode_png(&rgb, size).map_err(|e| fail(DrawError::Raster(e.to_string())))?;
    Ok(Chart {
        name: name.to_string(),
        svg,
        png,
        caption: caption.to_string(),
    })
}

/// Panels that all force one x (or y) range share that axis on purpose,
/// so they compare at a glance: each says so on the axis
/// ([`ChartSpec::x_note`]) unless it has a note of its own.
fn shared_axes_noted(panels: &[ChartSpec]) -> Vec<ChartSpec> {
    let shared = |f: fn(&ChartSpec) -> Option<(f64, f64)>| {
        panels.len() > 1 && f(&panels[0]).is_some() && panels.iter().all(|p| f(p) == f(&panels[0]))
    };
    let (x, y) = (shared(|p| p.x_range), shared(|p| p.y_range));
    let note = format!("shared by the {} panels, so they compare", panels.len());
    panels
        .iter()
        .cloned()
        .map(|mut p| {
            if x && p.x_note.is_empty() {
                p.x_note = note.clone();
            }
            if y && p.y_note.is_empty() {
                p.y_note = note.clone();
            }
            p
        })
        .collect()
}

fn encode_png(rgb: &[u8], (w, h): (u32, u32)) -> std::result::Result<Vec<u8>, png::EncodingError> {
    let mut out = Vec::new();
    {
        let mut enc = png::Encoder::new(&mut out, w, h);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        // zlib's default level with each row's filter chosen adaptively:
        // on the committed charts 2.5x faster than `Best` with Paeth on
        // every row (0.44 s vs 1.10 s for all 61) and 3% smaller; `Fast`
        // (fdeflate) is faster still but its files nearly twice the size,
        // and baselines are committed.
        enc.set_compression(png::Compression::Default);
        enc.set_filter(png::FilterType::Paeth);
        enc.set_adaptive_filter(png::AdaptiveFilterType::Adaptive);
        let mut writer = enc.write_header()?;
        writer.write_image_data(rgb)?;
    }
    Ok(out)
}

/// The points of an HdrHistogram-style percentile plot of `values`: the
/// k-th smallest of n at percentile 100·(k−1)/n, to draw as a
/// [`SeriesStyle::Step`] on an [`ChartSpec::x_percentile`] axis (the last
/// step, the maximum, holds to the axis end). Only changes of value are
/// kept, thinned to about 40 points per decade of 1/(1−p) (the maximum is
/// always kept), so equal distributions give equal points.
pub fn percentile_points(values: &[f64]) -> Vec<(f64, f64)> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let mut out: Vec<(f64, f64)> = Vec::new();
    let mut last_t = f64::NEG_INFINITY;
    for (k, &y) in v.iter().enumerate() {
        let p = k as f64 / n as f64;
        let t = -(1.0 - p).log10();
        let changes = out.last().is_none_or(|l| l.1 != y);
        if changes && (t - last_t >= 0.025 || k + 1 == n) {
            out.push((100.0 * p, y));
            last_t = t;
        }
    }
    out
}

/// The words every one of `names` holds exactly once (a fleet's replica
/// count and balancer, say), to be said once in a chart's title rather
/// than in every label: the words, in the first name's order, joined by
/// spaces. Empty when there are fewer than two names, or when taking them
/// out would leave a name empty or two names alike.
///
/// ```
/// use ratelab::report::chart::{shared_words, without_words};
///
/// let names = ["local bucket x8 round_robin", "divided bucket x8 round_robin"];
/// let shared = shared_words(&names);
/// assert_eq!(shared, "bucket x8 round_robin");
/// assert_eq!(without_words(names[1], &shared), "divided");
/// assert_eq!(shared_words(&["a x", "a"]), "");
/// ```
pub fn shared_words(names: &[&str]) -> String {
    let once = |n: &str, w: &str| n.split(' ').filter(|x| *x == w).count() == 1;
    let shared: Vec<&str> = match names {
        [first, _, ..] => first
            .split(' ')
            .filter(|w| !w.is_empty() && names.iter().all(|n| once(n, w)))
            .collect(),
        _ => return String::new(),
    };
    let shared = shared.join(" ");
    let mut short: Vec<String> = names.iter().map(|n| without_words(n, &shared)).collect();
    short.sort();
    if short.iter().any(String::is_empty) || short.windows(2).any(|w| w[0] == w[1]) {
        return String::new();
    }
    shared
}

/// `name` without the words of `shared` ([`shared_words`]); each part of
/// a joined name (`a = b`) loses them.
pub fn without_words(name: &str, shared: &str) -> String {
    if shared.is_empty() {
        return name.to_string();
    }
    let drop: Vec<&str> = shared.split(' ').collect();
    name.split(" = ")
        .map(|part| {
            part.split(' ')
                .filter(|w| !drop.contains(w))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect::<Vec<_>>()
        .join(" = ")
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
        // plotters writes a text element's content on its own line.
        let flat = c.svg.replace('\n', "");
        assert!(flat.contains(">0</text>"), "zero row");
        assert_eq!(&c.png[1..4], b"PNG");
        // deterministic
        assert_eq!(render(&spec).unwrap().png, c.png);
    }

    #[test]
    fn panels_with_the_same_legend_share_one() {
        let panel = |label: &str| {
            let mut c = ChartSpec::new("p", "p", "x", "y");
            c.series
                .push(Series::new(label, vec![(0.0, 1.0), (1.0, 2.0)], SeriesStyle::Line).color(0));
            c.series.push(
                Series::new("ref", vec![(0.0, 2.0), (1.0, 1.0)], SeriesStyle::Dashed).color(1),
            );
            c
        };
        let shared = render_grid("g", "t", "", &[panel("a"), panel("a")], 2).unwrap();
        assert_eq!(shared.svg.matches("id=\"legend").count(), 1);
        // Series numbered over the SVG: the second panel's are 2 and 3;
        // the shared legend names the first panel's.
        for id in [
            "series-0",
            "series-1",
            "series-2",
            "series-3",
            "series-0-legend",
        ] {
            assert!(shared.svg.contains(&format!("id=\"{id}\"")), "{id}");
        }
        assert!(
            !shared.svg.contains("series-2-legend"),
            "the others name nothing"
        );
        // Different legends: each panel keeps its own.
        let own = render_grid("g", "t", "", &[panel("a"), panel("b")], 2).unwrap();
        assert_eq!(own.svg.matches("id=\"legend").count(), 2);
    }

    /// Points pinned at the axis' edge are arrows pointing off it, not
    /// markers that read as values at the edge.
    #[test]
    fn points_off_the_axis_are_arrows() {
        let mut spec = ChartSpec::new("e", "Edge", "x", "y");
        spec.series
            .push(Series::new("on", vec![(0.0, 1.0), (1.0, 2.0)], SeriesStyle::Points).color(0));
        let mut off = Series::new("", vec![(0.5, 0.0)], SeriesStyle::Points).color(0);
        off.share_color = true;
        off.same_marker = true;
        spec.series.push(off.clone());
        spec.y_range = Some((0.0, 3.0));
        let plain = render(&spec).unwrap();
        spec.series[1].at_edge = vec![true];
        let arrow = render(&spec).unwrap();
        let marks = |c: &Chart| group(&c.svg, "series-1\"").to_string();
        assert!(marks(&plain).contains("<circle"), "{}", marks(&plain));
        let a = marks(&arrow);
        assert!(a.contains("<polygon") && !a.contains("<circle"), "{a}");
    }

    #[test]
    fn points_without_a_value_go_on_the_named_row_below() {
        let mut spec = ChartSpec::new("w", "Waits", "caller", "wait (s)");
        spec.series.push(Series::new(
            "case",
            vec![(0.0, 0.0), (1.0, f64::NEG_INFINITY), (2.0, 2.0)],
            SeriesStyle::Points,
        ));
        let flat = |c: &Chart| c.svg.replace('\n', "");
        // Not named: the point is not drawn, no row.
        let bare = render(&spec).unwrap();
        assert!(!flat(&bare).contains(">refused</text>"));
        spec.y_row_below = "refused".into();
        let rowed = render(&spec).unwrap();
        assert!(
            flat(&rowed).contains(">refused</text>"),
            "the row is labelled"
        );
        // One more marker: the refused point, below the 0 tick's marker.
        let marks = |c: &Chart| c.svg.matches("<circle").count();
        assert_eq!(marks(&rowed), marks(&bare) + 1);
    }

    /// The `<g id="{id}...">` group of `svg`, up to its end.
    fn group<'a>(svg: &'a str, id: &str) -> &'a str {
        let at = svg.find(&format!("<g id=\"{id}")).expect(id);
        let end = svg[at..].find("</g>").map_or(svg.len(), |e| at + e);
        &svg[at..end]
    }

    #[test]
    fn a_log_x_axis_puts_zero_in_a_column_of_its_own() {
        let mut spec = ChartSpec::new("m", "Memory", "bytes (log)", "excess (%)");
        spec.x_log = true;
        spec.series.push(Series::new(
            "fleet",
            vec![(0.0, 1.0), (4096.0, 2.0), (1e6, 3.0)],
            SeriesStyle::Points,
        ));
        let svg = render(&spec).unwrap().svg.replace('\n', "");
        assert!(svg.contains(">0</text>"), "the 0 column is labelled");
        // all three points drawn: the one at 0 is not dropped
        assert_eq!(group(&svg, "series-0").matches("<circle").count(), 3);
    }

    #[test]
    fn a_band_reaching_zero_on_a_log_axis_draws_its_upper_edge_alone() {
        let mut spec = ChartSpec::new("b", "Band", "rank", "error (log)");
        spec.y_log = true;
        spec.series.push(Series::new(
            "median",
            vec![(1.0, 5.0), (2.0, 6.0), (3.0, 5.0)],
            SeriesStyle::Line,
        ));
        spec.bands.push(Band::new(
            "spread",
            vec![(1.0, 0.0), (2.0, 0.0), (3.0, 0.0)],
            vec![(1.0, 20.0), (2.0, 30.0), (3.0, 20.0)],
            0,
        ));
        let svg = render(&spec).unwrap().svg;
        let band = group(&svg, "band-0");
        assert!(
            !band.contains("<polygon"),
            "no fill down to the axis: {band}"
        );
        assert!(band.contains("<polyline"), "its upper edge: {band}");
        assert!(
            svg.contains("lower edge 0: its top edge"),
            "the legend says so"
        );
        // Where the lower edge is above 0 the band is filled again.
        spec.bands[0].lower = vec![(1.0, 0.0), (2.0, 3.0), (3.0, 2.0)];
        let svg = render(&spec).unwrap().svg;
        let band = group(&svg, "band-0");
        assert!(
            band.contains("<polygon") && band.contains("<polyline"),
            "{band}"
        );
    }

    #[test]
    fn one_panel_takes_the_whole_canvas() {
        let mut c = ChartSpec::new("p", "p", "x", "y");
        c.series.push(Series::new(
            "s",
            vec![(0.0, 1.0), (1.0, 2.0)],
            SeriesStyle::Line,
        ));
        let chart = render_grid("g", "One panel", "", &[c], 2).unwrap();
        assert!(chart
            .svg
            .starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"960\" height=\"600\""));
        let plot = group(&chart.svg, "plot-area");
        let w: f64 = plot
            .split("width=\"")
            .nth(1)
            .and_then(|r| r.split('"').next())
            .and_then(|v| v.parse().ok())
            .unwrap();
        assert!(w > 600.0, "plot {w} px wide");
    }

    /// A doubling sweep on a log₂ axis is ticked at its own values, not
    /// at the decades' 1-2-5 steps.
    #[test]
    fn a_log2_axis_ticks_a_doubling_sweep_at_its_values() {
        let mut spec = ChartSpec::new("b", "Burst", "burst", "excess");
        spec.x_log = true;
        spec.series.push(Series::new(
            "s",
            vec![
                (25.0, 1.2),
                (50.0, 2.5),
                (100.0, 5.0),
                (200.0, 9.9),
                (400.0, 19.9),
            ],
            SeriesStyle::LinePoints,
        ));
        let ticks = |spec: &ChartSpec| render(spec).unwrap().svg.replace('\n', "");
        let decades = ticks(&spec);
        assert!(!decades.contains(">25</text>") && decades.contains(">500</text>"));
        spec.x_log2 = true;
        let doubling = ticks(&spec);
        for t in ["25", "50", "100", "200", "400"] {
            assert!(doubling.contains(&format!(">{t}</text>")), "{t}");
        }
        assert!(!doubling.contains(">500</text>"));
    }

    #[test]
    fn shared_words_are_said_once() {
        let names = [
            "central redis x16 round_robin",
            "local bucket x16 round_robin",
        ];
        assert_eq!(shared_words(&names), "x16 round_robin");
        assert_eq!(
            without_words(
                "central redis x16 round_robin = local bucket x16 round_robin",
                "x16 round_robin"
            ),
            "central redis = local bucket"
        );
        // taking them out would leave two names alike, or one empty: kept
        assert_eq!(shared_words(&["a b x", "a b y x", "a b x y"]), "");
        assert_eq!(shared_words(&["a"]), "");
    }

    #[test]
    fn numbers() {
        assert_eq!(human(0.04), "0.04");
        assert_eq!(human(1_500_000.0), "1.5M");
        let p = percentile_points(&[3.0, 1.0, 2.0, 2.0]);
        assert_eq!(p.first(), Some(&(0.0, 1.0)));
        assert_eq!(p.last(), Some(&(75.0, 3.0)));
        assert_eq!(percentile_points(&[0.0; 7]), percentile_points(&[0.0; 2]));
    }

    /// A band that follows its series is named right under it in the
    /// legend (the others after every series), and a chart may ask for a
    /// compact canvas.
    #[test]
    fn a_band_follows_its_series_in_the_legend_and_canvases_can_be_compact() {
        let mut spec = ChartSpec::new("f", "Follows", "x", "y");
        for (k, l) in ["a", "b"].iter().enumerate() {
            let y = k as f64 * 10.0;
            spec.series.push(
                Series::new(*l, vec![(0.0, y + 1.0), (1.0, y + 2.0)], SeriesStyle::Line).color(k),
            );
            let mut b = Band::new(
                format!("{l} spread"),
                vec![(0.0, y), (1.0, y + 1.0)],
                vec![(0.0, y + 2.0), (1.0, y + 3.0)],
                k,
            );
            b.follows = (*l).to_string();
            spec.bands.push(b);
        }
        let svg = render(&spec).unwrap().svg;
        let at = |id: &str| svg.find(&format!("id=\"{id}-legend\"")).expect(id);
        assert!(at("series-0") < at("band-0") && at("band-0") < at("series-1"));
        assert!(at("series-1") < at("band-1"));
        spec.size = Some((960, 300));
        let c = render(&spec).unwrap();
        assert!(c.svg.contains("height=\"300\""));
        // PNG header: width and height, big-endian, at bytes 16..24
        assert_eq!(&c.png[16..24], &[0, 0, 3, 192, 0, 0, 1, 44]);
    }
}
