//! Text boxes (measured with the embedded font's metrics), escaping,
//! fitting, and the legend's entries with their line wrapping.

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
    pub(super) fn svg(&self, out: &mut String) {
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

pub(super) fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Shrinks `t` until it is at most `max` wide (not below 9 px).
pub(super) fn fit(mut t: Txt, max: f64) -> Txt {
    while t.width() > max && t.size > 9.0 {
        t.size -= 0.5;
    }
    t
}

/// One legend row.
pub(super) struct Entry {
    /// The label wrapped to [`LEGEND_MAX`] px.
    pub(super) lines: Vec<String>,
    /// `series-<i>` or `band-<i>`.
    pub(super) target: String,
    pub(super) look: Option<Look>,
    pub(super) band: Option<(usize, f64)>,
}

/// Widest legend line (px); longer labels wrap, at " = " first.
pub(super) const LEGEND_MAX: f64 = 420.0;

pub(super) fn wrap(label: &str) -> Vec<String> {
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
