//! Point labels placed without collisions (beside their point, else
//! further out with a leader line) and the footnote listing those that
//! found no room.

use super::*;

impl Ctx<'_> {
    /// Point labels beside their points, else further out with a leader
    /// line, else listed in `dropped` (the footnote).
    pub(super) fn label_points(&self, frame: &mut Frame, dropped: &mut Vec<String>) {
        let plot = frame.plot;
        let (lasc, ldesc) = style::text_extent(size::LABEL);
        let mut taken: Vec<R> = frame.texts.iter().map(|t| t.bbox()).collect();
        taken.extend(frame.legend);
        let area = plot.pad(-1.0);
        let text_width = |t: &str| style::text_width(&plot::sign_minus(t), size::LABEL);
        let mut refs = 0usize;
        for (si, p) in self.preps.iter().enumerate() {
            for (k, label) in p.labels.iter().enumerate() {
                if label.is_empty() {
                    continue;
                }
                let (x, y) = ((frame.x_of)(p.pts[k].0), (frame.y_of)(p.pts[k].1));
                if !area.contains((x, y)) {
                    continue;
                }
                let th = lasc + ldesc;
                // The label where it fits; else a size smaller; else a
                // short reference ("[1]") at the point, spelled out in the
                // footnote; else only the footnote.
                let mut text = label.clone();
                let mut font = size::LABEL;
                let mut placed = place_label(frame, &taken, &area, (x, y), text_width(&text), th);
                if placed.is_none() {
                    let (a, d) = style::text_extent(LABEL_SMALL);
                    let tw = style::text_width(&plot::sign_minus(&text), LABEL_SMALL);
                    placed = place_label(frame, &taken, &area, (x, y), tw, a + d);
                    if placed.is_some() {
                        font = LABEL_SMALL;
                    }
                }
                if placed.is_none() {
                    text = format!("[{}]", refs + 1);
                    placed = place_label(frame, &taken, &area, (x, y), text_width(&text), th);
                    if placed.is_some() {
                        refs += 1;
                    } else {
                        text.clear();
                    }
                }
                let named = if text != *label && !text.is_empty() {
                    format!("{text} ")
                } else {
                    String::new()
                };
                if !named.is_empty() {
                    dropped.push(format!(
                        "{named}{}{}",
                        label,
                        if p.label.is_empty() {
                            String::new()
                        } else {
                            format!(" ({})", p.label)
                        }
                    ));
                }
                match placed {
                    Some((r, leader)) => {
                        let asc = style::text_extent(font).0;
                        let mut t = Txt::new(&text, r.x0, r.y0 + asc, font, "start");
                        t.fill = MUTED;
                        t.owner = Some(si);
                        t.point = Some((x, y));
                        t.leader = leader;
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
}

/// A point label's size when it finds no room at [`size::LABEL`] (px).
const LABEL_SMALL: f64 = 10.0;

/// Height of a footnote line (px).
pub(super) const FOOT_LINE: f64 = 16.0;
/// Most lines of a footnote.
const FOOT_MAX: usize = 4;

/// The footnote listing what found no room: the numbered points first
/// (a number is read with its key, so every one is listed), then labels
/// not drawn, wrapped over as many lines as they need (at most
/// [`FOOT_MAX`]; more than that ends with how many are left), the last
/// line at the canvas' bottom. `reserved` lines are laid out: a longer
/// footnote is cut to them (the caller lays the chart out again with
/// room for all).
pub(super) fn footnote_lines(
    dropped: &[String],
    w: f64,
    h: f64,
    reserved: usize,
) -> (Vec<Txt>, usize) {
    let mut items: Vec<&String> = dropped.iter().filter(|d| d.starts_with('[')).collect();
    let numbered = items.len();
    items.extend(dropped.iter().filter(|d| !d.starts_with('[')));
    let head = if numbered == 0 {
        "Not labelled for lack of room"
    } else if numbered == items.len() {
        "Marked by number for lack of room"
    } else {
        "For lack of room, marked by number or not labelled"
    };
    let max_w = w - 20.0;
    let width = |t: &str| style::text_width(&plot::sign_minus(t), size::LABEL);
    // Greedy wrap of the first `n` items (and "and m more" after them).
    let wrap = |n: usize| -> Vec<String> {
        let mut pieces: Vec<String> = items[..n]
            .iter()
            .enumerate()
            .map(|(i, d)| {
                let first = if i == 0 {
                    format!("{head}: ")
                } else {
                    String::new()
                };
                let sep = if i + 1 < n || n < items.len() {
                    ";"
                } else {
                    ""
                };
                format!("{first}{d}{sep}")
            })
            .collect();
        if n < items.len() {
            let more = format!("and {} more", items.len() - n);
            pieces.push(if n == 0 {
                format!("{head}: {more}")
            } else {
                more
            });
        }
        let mut lines: Vec<String> = Vec::new();
        for p in pieces {
            match lines.last_mut() {
                Some(l) if width(&format!("{l} {p}")) <= max_w => {
                    l.push(' ');
                    l.push_str(&p);
                }
                _ => lines.push(p),
            }
        }
        lines
    };
    let limit = reserved.clamp(1, FOOT_MAX);
    let all = wrap(items.len());
    let lines = if all.len() <= FOOT_MAX {
        all
    } else {
        (0..items.len())
            .rev()
            .map(&wrap)
            .find(|l| l.len() <= FOOT_MAX)
            .unwrap_or_default()
    };
    let need = lines.len();
    // Laid out: as many lines as reserved, the last at the bottom.
    let shown = if lines.len() <= limit {
        lines
    } else {
        (0..items.len())
            .rev()
            .map(&wrap)
            .find(|l| l.len() <= limit)
            .unwrap_or_default()
    };
    let n = shown.len();
    let txts = shown
        .into_iter()
        .enumerate()
        .map(|(i, l)| {
            let mut t = Txt::new(
                l,
                10.0,
                h - 8.0 - FOOT_LINE * (n - 1 - i) as f64,
                size::LABEL,
                "start",
            );
            t.fill = MUTED;
            fit(t, max_w)
        })
        .collect();
    (txts, need)
}

/// Where a label `tw` × `th` px goes by the point at `(x, y)`: beside it,
/// else further away with a leader line (which must not cross another
/// label nor pass by another marker); never over data, another text or
/// outside `area`, and never where it would read as another point's: a
/// label beside its point has no other marker about as near it (at least
/// 2.5 times as far, and 18 px), one with a leader none within 14 px. The
/// box and whether it needs a leader.
fn place_label(
    frame: &Frame,
    taken: &[R],
    area: &R,
    (x, y): (f64, f64),
    tw: f64,
    th: f64,
) -> Option<(R, bool)> {
    let others: Vec<(f64, f64)> = frame
        .marks
        .iter()
        .flatten()
        .copied()
        .filter(|q| (q.0 - x).abs() > 2.0 || (q.1 - y).abs() > 2.0)
        .collect();
    // Beside the point, then with a leader at growing distances: first
    // in the eight directions, then (far out, where the room is) at
    // every 22.5°, the label hung at the leader's end.
    let mut rings: Vec<Ring> = [7.0, 20.0, 36.0, 56.0, 80.0, 110.0]
        .iter()
        .map(|&dist| {
            (
                dist > 10.0,
                vec![
                    (x + dist, y - th / 2.0),
                    (x - dist - tw, y - th / 2.0),
                    (x - tw / 2.0, y - dist - th),
                    (x - tw / 2.0, y + dist),
                    (x + dist * 0.7, y - dist * 0.7 - th),
                    (x + dist * 0.7, y + dist * 0.7),
                    (x - dist * 0.7 - tw, y - dist * 0.7 - th),
                    (x - dist * 0.7 - tw, y + dist * 0.7),
                ],
            )
        })
        .collect();
    for dist in [145.0, 185.0, 230.0] {
        let hung = (0..16)
            .map(|k| {
                let a = f64::from(k) * std::f64::consts::PI / 8.0;
                let (c, s) = (a.cos(), a.sin());
                let (ex, ey) = (x + dist * c, y + dist * s);
                let bx = if c > 0.3 {
                    ex
                } else if c < -0.3 {
                    ex - tw
                } else {
                    ex - tw / 2.0
                };
                let by = if s > 0.3 {
                    ey
                } else if s < -0.3 {
                    ey - th
                } else {
                    ey - th / 2.0
                };
                (bx, by)
            })
            .collect();
        rings.push((true, hung));
    }
    for (leader, cands) in rings {
        for (bx, by) in cands {
            let r = R::new(bx, by, bx + tw, by + th);
            if !r.inside(area) || taken.iter().any(|t| t.overlaps(&r.pad(1.0))) {
                continue;
            }
            if !clear_of_data(&r, frame) {
                continue;
            }
            let own = gap((x, y), &r);
            let need = if leader {
                14.0
            } else {
                (2.5 * own + 8.0).max(18.0)
            };
            if others.iter().any(|&q| gap(q, &r) < need) {
                continue;
            }
            let near = (x.clamp(r.x0, r.x1), y.clamp(r.y0, r.y1));
            if leader
                && (taken.iter().any(|t| t.hits((x, y), near))
                    || others.iter().any(|&q| seg_gap(q, (x, y), near) < 7.0))
            {
                continue;
            }
            return Some((r, leader));
        }
    }
    None
}

/// Places a label may take around its point: whether a leader line joins
/// them, and the boxes' top-left corners, nearest first.
type Ring = (bool, Vec<(f64, f64)>);

/// Distance (px) from `p` to the rectangle `r` (0 inside it).
fn gap(p: (f64, f64), r: &R) -> f64 {
    let dx = (r.x0 - p.0).max(p.0 - r.x1).max(0.0);
    let dy = (r.y0 - p.1).max(p.1 - r.y1).max(0.0);
    (dx * dx + dy * dy).sqrt()
}

/// Distance (px) from `p` to the segment a-b.
fn seg_gap(p: (f64, f64), a: (f64, f64), b: (f64, f64)) -> f64 {
    let (dx, dy) = (b.0 - a.0, b.1 - a.1);
    let len2 = dx * dx + dy * dy;
    let t = if len2 > 0.0 {
        (((p.0 - a.0) * dx + (p.1 - a.1) * dy) / len2).clamp(0.0, 1.0)
    } else {
        0.0
    };
    let (cx, cy) = (a.0 + t * dx, a.1 + t * dy);
    ((p.0 - cx).powi(2) + (p.1 - cy).powi(2)).sqrt()
}
