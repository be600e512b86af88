//! The one chart style: palette, dash patterns, markers, fonts and text
//! metrics, and the SVG-to-PNG rasteriser.
//!
//! * Palette: Okabe–Ito, grey for its yellow (distinguishable under the common colour-vision
//!   deficiencies). [`assign_looks`] gives every series its own colour while
//!   the palette lasts; series that ask to share a colour
//!   ([`super::Series::share_color`]) or come after the palette is used up
//!   differ by dash pattern, so no two series share colour *and* style.
//! * Text: DejaVu Sans, embedded (the `dejavu` crate). Widths are measured by
//!   shaping with rustybuzz (kerning included) and the PNG is the SVG
//!   rasterised by resvg with the same font, so both files are one picture
//!   and the layout's measurements are the raster's.

use std::sync::{Arc, OnceLock};

/// Okabe–Ito colours as `#rrggbb`, black and grey last (grey stands in for
/// Okabe–Ito's yellow, which is too faint for lines on white).
pub const PALETTE: [&str; 8] = [
    "#0072b2", // blue
    "#e69f00", // orange
    "#009e73", // bluish green
    "#d55e00", // vermillion
    "#cc79a7", // reddish purple
    "#56b4e9", // sky blue
    "#000000", // black
    "#8c8c8c", // grey in place of yellow (#f0e442), too faint on white
];

/// Dash patterns (SVG `stroke-dasharray`, px); index 0 is solid.
pub const DASHES: [&str; 5] = ["", "8 5", "2 3", "10 4 2 4", "4 2"];

/// Marker shapes, cycled over series that draw markers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Marker {
    /// Filled circle.
    Circle,
    /// Filled triangle.
    Triangle,
    /// Filled square.
    Square,
    /// Filled diamond.
    Diamond,
    /// Stroked cross.
    Cross,
}

/// Markers in the order they are handed out.
pub const MARKERS: [Marker; 5] = [
    Marker::Circle,
    Marker::Triangle,
    Marker::Square,
    Marker::Diamond,
    Marker::Cross,
];

/// Text colour of titles, labels and ticks.
pub const INK: &str = "#1d232b";
/// Secondary text and reference lines.
pub const MUTED: &str = "#555d66";
/// Grid lines.
pub const GRID: &str = "#e6e8eb";
/// Font family written into the SVG (DejaVu first: the PNG's font).
pub const FONT_FAMILY: &str = "DejaVu Sans, Verdana, sans-serif";

/// Font sizes (px).
pub mod size {
    /// Chart title.
    pub const TITLE: f64 = 18.0;
    /// Axis labels.
    pub const AXIS: f64 = 14.0;
    /// Tick labels.
    pub const TICK: f64 = 12.5;
    /// Legend entries.
    pub const LEGEND: f64 = 12.5;
    /// Point and marker-line labels.
    pub const LABEL: f64 = 11.5;
}

/// How one series is drawn, resolved from its spec.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Look {
    /// Palette index.
    pub color: usize,
    /// Index into [`DASHES`]; `None` draws no line.
    pub dash: Option<usize>,
    /// Marker drawn at each point, if any.
    pub marker: Option<Marker>,
}

impl Look {
    /// The `#rrggbb` colour.
    pub fn rgb(&self) -> &'static str {
        PALETTE[self.color % PALETTE.len()]
    }
}

/// What a series asks for: a colour (or none), whether it may share it,
/// whether it draws a line (dashed or not) and markers.
#[derive(Debug, Clone, Copy)]
pub struct Want {
    /// Requested palette index.
    pub color: Option<usize>,
    /// May share the requested colour with an earlier series.
    pub share: bool,
    /// Draws a line: `Some(dashed)`.
    pub line: Option<bool>,
    /// Draws markers.
    pub markers: bool,
    /// With `share`: the marker of the latest series of its colour (a
    /// family's loose points beside its line), not the next one.
    pub same_marker: bool,
    /// With `markers`: this marker (an index into [`MARKERS`]) rather than
    /// the next in turn.
    pub marker: Option<usize>,
}

/// Resolves every series' look: distinct colours while the palette lasts
/// (a requested colour already taken moves to the first free one unless the
/// series shares on purpose), markers cycled, and dash patterns bumped until
/// no two series have the same colour, dash and marker.
///
/// # Examples
///
/// ```
/// use ratelab::report::chart::style::{assign_looks, Want};
///
/// let line = Want { color: Some(6), share: false, line: Some(false), markers: false, same_marker: false, marker: None };
/// // Two series asking for black: the second gets another colour.
/// let looks = assign_looks(&[line, line]);
/// assert_eq!(looks[0].color, 6);
/// assert_ne!(looks[1].color, 6);
/// // Sharing on purpose keeps the colour and changes the dash instead.
/// let tied = Want { share: true, ..line };
/// let looks = assign_looks(&[line, tied]);
/// assert_eq!(looks[1].color, 6);
/// assert_ne!(looks[0].dash, looks[1].dash);
/// ```
pub fn assign_looks(wants: &[Want]) -> Vec<Look> {
    let mut used = [false; PALETTE.len()];
    let mut next_auto = 0usize;
    let mut looks: Vec<Look> = Vec::with_capacity(wants.len());
    let mut marker_i = 0usize;
    for w in wants {
        let color = match w.color.map(|c| c % PALETTE.len()) {
            Some(c) if !used[c] || w.share => c,
            Some(c) => (0..PALETTE.len()).find(|&k| !used[k]).unwrap_or(c),
            None => {
                while next_auto < PALETTE.len() && used[next_auto] {
                    next_auto += 1;
                }
                if next_auto < PALETTE.len() {
                    next_auto
                } else {
                    looks.len() % PALETTE.len()
                }
            }
        };
        used[color] = true;
        let kept = if w.markers && w.share && w.same_marker {
            looks
                .iter()
                .rev()
                .find(|l| l.color == color)
                .and_then(|l| l.marker)
        } else {
            None
        };
        let marker = if kept.is_some() {
            kept
        } else if let (true, Some(m)) = (w.markers, w.marker) {
            Some(MARKERS[m % MARKERS.len()])
        } else if w.markers {
            let m = MARKERS[marker_i % MARKERS.len()];
            marker_i += 1;
            Some(m)
        } else {
            None
        };
        let mut look = Look {
            color,
            dash: w.line.map(usize::from),
            marker,
        };
        // Same colour as an earlier series: differ by dash (or marker).
        // Every dash (or marker) of this colour taken: the next colour.
        // Loose points of a family look like it on purpose.
        let mut tries = 0;
        while kept.is_none()
            && looks.contains(&look)
            && tries < PALETTE.len() * DASHES.len() * MARKERS.len()
        {
            tries += 1;
            match look.dash {
                Some(d) => {
                    look.dash = Some((d + 1) % DASHES.len());
                    if tries % DASHES.len() == 0 {
                        look.color = (look.color + 1) % PALETTE.len();
                    }
                }
                None => {
                    let m = look.marker.unwrap_or(Marker::Circle);
                    let k = MARKERS.iter().position(|x| *x == m).unwrap_or(0);
                    look.marker = Some(MARKERS[(k + 1) % MARKERS.len()]);
                    if tries % MARKERS.len() == 0 {
                        look.color = (look.color + 1) % PALETTE.len();
                    }
                }
            }
        }
        looks.push(look);
    }
    looks
}

/// The embedded DejaVu Sans, parsed once for shaping.
fn face() -> &'static rustybuzz::Face<'static> {
    static FACE: OnceLock<rustybuzz::Face<'static>> = OnceLock::new();
    FACE.get_or_init(|| {
        rustybuzz::Face::from_slice(dejavu::sans::regular(), 0)
            .unwrap_or_else(|| panic!("the embedded DejaVu Sans does not parse"))
    })
}

/// Advance width of `text` at `size` px, shaped with kerning: the width the
/// rasteriser draws.
pub fn text_width(text: &str, size: f64) -> f64 {
    let f = face();
    let mut buf = rustybuzz::UnicodeBuffer::new();
    buf.push_str(text);
    let glyphs = rustybuzz::shape(f, &[], buf);
    let units: i64 = glyphs
        .glyph_positions()
        .iter()
        .map(|p| i64::from(p.x_advance))
        .sum();
    units as f64 * size / f64::from(f.units_per_em())
}

/// Ascent and descent (positive, px) of the font at `size`.
pub fn text_extent(size: f64) -> (f64, f64) {
    let f = face();
    let upem = f64::from(f.units_per_em());
    (
        f64::from(f.ascender()) * size / upem,
        -f64::from(f.descender()) * size / upem,
    )
}

/// The font database the rasteriser uses: DejaVu Sans regular and bold.
fn fontdb() -> Arc<resvg::usvg::fontdb::Database> {
    static DB: OnceLock<Arc<resvg::usvg::fontdb::Database>> = OnceLock::new();
    DB.get_or_init(|| {
        let mut db = resvg::usvg::fontdb::Database::new();
        db.load_font_data(dejavu::sans::regular().to_vec());
        db.load_font_data(dejavu::sans::bold().to_vec());
        // generic families too, so any SVG's text lays out with it
        db.set_sans_serif_family("DejaVu Sans");
        db.set_serif_family("DejaVu Sans");
        db.set_monospace_family("DejaVu Sans");
        Arc::new(db)
    })
    .clone()
}

/// Parsing options resolving every family to the embedded DejaVu Sans.
pub fn usvg_options() -> resvg::usvg::Options<'static> {
    resvg::usvg::Options {
        font_family: "DejaVu Sans".into(),
        fontdb: fontdb(),
        ..resvg::usvg::Options::default()
    }
}

/// Rasterises `svg` (w x h px) to RGB bytes with the embedded font.
pub fn rasterise(svg: &str, (w, h): (u32, u32)) -> Result<Vec<u8>, super::error::DrawError> {
    let tree = resvg::usvg::Tree::from_str(svg, &usvg_options())
        .map_err(|e| super::error::DrawError::Raster(e.to_string()))?;
    let mut pixmap = resvg::tiny_skia::Pixmap::new(w, h)
        .ok_or_else(|| super::error::DrawError::Raster(format!("bad size {w}x{h}")))?;
    pixmap.fill(resvg::tiny_skia::Color::WHITE);
    resvg::render(
        &tree,
        resvg::tiny_skia::Transform::default(),
        &mut pixmap.as_mut(),
    );
    // Opaque (white background): premultiplied RGBA is plain RGBA.
    Ok(pixmap
        .data()
        .chunks_exact(4)
        .flat_map(|p| [p[0], p[1], p[2]])
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kerning_is_measured() {
        // "AV" kerns in DejaVu Sans: narrower than its letters apart.
        let pair = text_width("AV", 100.0);
        let apart = text_width("A", 100.0) + text_width("V", 100.0);
        assert!(pair < apart - 1.0, "{pair} vs {apart}");
        assert!(text_width("time", 14.0) > 20.0);
    }

    #[test]
    fn loose_points_keep_their_familys_marker() {
        let line = Want {
            color: Some(1),
            share: false,
            line: Some(false),
            markers: true,
            same_marker: false,
            marker: None,
        };
        let other = Want {
            color: Some(2),
            ..line
        };
        let loose = Want {
            share: true,
            line: None,
            same_marker: true,
            ..line
        };
        let looks = assign_looks(&[other, line, loose, other]);
        // Beside a lone point of the family (no line), the very same look.
        let lone = Want { line: None, ..line };
        let twin = assign_looks(&[lone, loose]);
        assert_eq!(twin[0], twin[1]);
        // Colour and marker of the line of colour 1, without its line;
        // the series after it takes the marker that comes next.
        assert_eq!((looks[2].color, looks[2].marker), (1, looks[1].marker));
        assert_eq!(looks[2].dash, None);
        assert_ne!(looks[3].marker, looks[1].marker);
        assert_eq!(looks[3].marker, Some(MARKERS[2]));
    }

    #[test]
    fn an_asked_marker_is_kept_and_tells_a_repeated_colour_apart() {
        let fam = |color, marker| Want {
            color: Some(color),
            share: true,
            line: None,
            markers: true,
            same_marker: false,
            marker: Some(marker),
        };
        let looks = assign_looks(&[fam(1, 3), fam(1, 0), fam(2, 3)]);
        assert_eq!(looks[0].marker, Some(MARKERS[3]));
        // The same colour asked twice: kept, told apart by the marker.
        assert_eq!((looks[1].color, looks[1].marker), (1, Some(MARKERS[0])));
        assert_eq!(looks[2].marker, Some(MARKERS[3]));
    }

    #[test]
    fn no_two_looks_alike() {
        let w = Want {
            color: Some(0),
            share: true,
            line: Some(false),
            markers: false,
            same_marker: false,
            marker: None,
        };
        let looks = assign_looks(&[w; 12]);
        for (i, a) in looks.iter().enumerate() {
            for b in &looks[..i] {
                assert_ne!(a, b);
            }
        }
    }
}
