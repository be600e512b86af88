//! Text boxes (measured with the embedded font's metrics), escaping,
//! fitting, and the legend's entries.

use super::*;

/// A laid-out text: its box and how to write it.
#[derive(Debug, Clone)]
pub(super) struct Txt {
    pub(super) text: String,
    pub(super) x: f64,
    pub(super) y: f64,
    pub(super) size: f64,
    pub(super) anchor: &'static str,
    pub(super) fill: &'static str,
    pub(super) rotate: bool,
    pub(super) bold: bool,
    /// Drawn by plotters' mesh (tick and axis labels).
    pub(super) mesh: bool,
    /// The series a point label names (drawn in that series' group).
    pub(super) owner: Option<usize>,
    /// The point a point label names (px), and whether a leader line
    /// joins them (written on the label's group for the layout test).
    pub(super) point: Option<(f64, f64)>,
    pub(super) leader: bool,
}

impl Txt {
    pub(super) fn new(
        text: impl Into<String>,
        x: f64,
        y: f64,
        size: f64,
        anchor: &'static str,
    ) -> Self {
        Self {
            text: plot::sign_minus(&text.into()),
            x,
            y,
            size,
            anchor,
            fill: INK,
            rotate: false,
            bold: false,
            mesh: false,
            owner: None,
            point: None,
            leader: false,
        }
    }
    pub(super) fn width(&self) -> f64 {
        style::text_width(&self.text, self.size) * if self.bold { 1.1 } else { 1.0 }
    }
    /// The layout box (advance width × ascent+descent).
    pub(super) fn bbox(&self) -> R {
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
    /// The same text, drawn by plotters' mesh (an axis label) rather
    /// than by us; kept in the layout for collision checks.
    pub(super) fn mesh(mut self) -> Self {
        self.mesh = true;
        self
    }
}

pub(super) fn esc(s: &str) -> String {
    crate::report::fmt::escape_markup(s, None, false)
}

/// Shrinks `t` until it is at most `max` wide (not below 9 px); a text
/// still too wide at 9 px is cut at a word with an ellipsis, so it stays
/// on the canvas.
pub(super) fn fit(mut t: Txt, max: f64) -> Txt {
    while t.width() > max && t.size > 9.0 {
        t.size -= 0.5;
    }
    if t.width() > max {
        let full = std::mem::take(&mut t.text);
        let mut cut = String::new();
        for word in full.split(' ') {
            let next = if cut.is_empty() {
                word.to_string()
            } else {
                format!("{cut} {word}")
            };
            t.text = format!("{next} \u{2026}");
            if t.width() > max {
                break;
            }
            cut = next;
        }
        t.text = format!("{cut} \u{2026}");
    }
    t
}

/// One legend row.
pub(super) struct Entry {
    /// The label.
    pub(super) label: String,
    /// `series-<i>` or `band-<i>`.
    pub(super) target: String,
    pub(super) look: Option<Look>,
    pub(super) band: Option<(usize, f64)>,
    /// A band drawn as its upper edge alone (its lower edge 0 all along a
    /// log axis): the swatch is that thin line.
    pub(super) edge: bool,
}

/// Widest legend label (px): a longer one (series merged as `a = b = c`)
/// is cut at a word with an ellipsis.
pub(super) const LEGEND_MAX: f64 = 470.0;

pub(super) fn fit_label(label: &str) -> String {
    let width = |t: &str| style::text_width(t, size::LEGEND);
    if width(label) <= LEGEND_MAX {
        return label.to_string();
    }
    let mut out = String::new();
    for word in label.split(' ') {
        let next = if out.is_empty() {
            word.to_string()
        } else {
            format!("{out} {word}")
        };
        if width(&format!("{next} \u{2026}")) > LEGEND_MAX {
            break;
        }
        out = next;
    }
    format!("{out} \u{2026}")
}
