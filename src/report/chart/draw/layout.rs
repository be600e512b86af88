//! Layout of one chart: margins, marker-line labels, axis texts, the
//! series' geometry, the legend's corner and point labels, all in px.

use super::*;

#[allow(non_snake_case)] // W, H: the canvas, as in the drawing
impl Ctx<'_> {
    pub(super) fn frame(&self, place: Place, footnote: bool) -> Frame {
        let (W, H) = (self.w, self.h);
        let spec = self.spec;
        let (xa, ya) = (self.xa, self.ya);
        let mut texts: Vec<Txt> = Vec::new();
        // Title.
        let title = fit(
            Txt::new(&spec.title, W / 2.0, 26.0, size::TITLE, "middle"),
            W - 24.0,
        );
        // A title that would shrink below 11 px (a panel's, naming merged
        // candidates) is wrapped onto two lines at the word that evens
        // them out.
        let words: Vec<&str> = spec.title.split(' ').collect();
        let top = if title.size < 11.0 && words.len() > 1 {
            let halves = |k: usize| (words[..k].join(" "), words[k..].join(" "));
            let wide = |k: usize| {
                let (a, b) = halves(k);
                style::text_width(&a, size::TITLE).max(style::text_width(&b, size::TITLE))
            };
            let k = (1..words.len())
                .min_by(|&a, &b| wide(a).total_cmp(&wide(b)))
                .unwrap_or(1);
            let (a, b) = halves(k);
            let first = fit(Txt::new(a, W / 2.0, 22.0, size::TITLE, "middle"), W - 24.0);
            let second = fit(Txt::new(b, W / 2.0, 22.0, size::TITLE, "middle"), W - 24.0);
            let size = first.size.min(second.size);
            let (asc, desc) = style::text_extent(size);
            let y2 = 22.0 + asc + desc + 2.0;
            for (mut t, y) in [(first, 22.0), (second, y2)] {
                t.size = size;
                t.y = y;
                texts.push(fit(t, W - 24.0));
            }
            y2 + desc + 8.0
        } else {
            let top = 26.0 + style::text_extent(title.size).1 + 8.0;
            texts.push(title);
            top
        };
        // Left: y label and tick widths.
        let tick_w = ya
            .ticks
            .iter()
            .map(|t| style::text_width(&t.1, size::TICK))
            .chain(ya.zero.iter().map(|z| style::text_width(z, size::TICK)))
            .fold(0.0, f64::max);
        // whole pixels: plotters draws on integer coordinates
        let left = (10.0 + 20.0 + tick_w + 12.0).round();
        let mut right = W - 26.0;
        if place == Place::Right {
            right = (W - 14.0 - self.legend_w - 14.0).round();
        }
        let (x_lo, x_hi) = (xa.lo, xa.hi);
        let x_of = move |t: f64| {
            let t = t.clamp(x_lo, x_hi);
            left + (t - x_lo) / (x_hi - x_lo) * (right - left)
        };
        let mut dropped: Vec<String> = Vec::new();
        let (vline_px, top) = self.vline_labels(&x_of, top, &mut texts, &mut dropped);
        let top = top.round();
        // Bottom: ticks, x label, legend rows, footnote.
        let mut bottom = H - 10.0;
        let foot = if footnote { Some(()) } else { None };
        if foot.is_some() {
            bottom -= 18.0;
        }
        if place == Place::Bottom {
            bottom -= self.legend_h + 14.0;
        }
        let x_label_y = (bottom - 4.0).round();
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
        // plotters' y range: the log part, extended down over the zero row
        let y_dom_lo = y_lo - zero_h / (data_bottom - top) * (y_hi - y_lo);
        let zero_y = ya.zero.as_ref().map(|_| plot_bottom - ZERO_ROW / 2.0);
        let zero_u = y_dom_lo + (ZERO_ROW / 2.0) / (plot_bottom - top) * (y_hi - y_dom_lo);
        let y_of = move |t: Option<f64>| {
            let u = match t {
                Some(t) => t.clamp(y_lo, y_hi),
                None if zero_h > 0.0 => zero_u,
                None => y_lo,
            };
            plot_bottom - (u - y_dom_lo) / (y_hi - y_dom_lo) * (plot_bottom - top)
        };
        let (x_ticks, titles) = self.axis_texts(&mut texts, &x_of, &y_of, &plot, x_label_y, zero_y);
        let mut y_ticks: Vec<(f64, String)> = ya.ticks.clone();
        if let Some(z) = &ya.zero {
            y_ticks.push((zero_u, z.clone()));
        }

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
            x_dom: (x_lo, x_hi),
            y_dom: (y_dom_lo, y_hi),
            x_ticks,
            y_ticks,
            x_label_y,
            titles,
        };

        // Legend.
        if self.n_entries > 0 {
            frame.legend = self.legend_rect(place, &frame, x_label_y);
        }

        self.label_points(&mut frame, &mut dropped);
        if !dropped.is_empty() {
            // As many of the dropped labels as fit at the smallest size,
            // then how many more.
            let numbered = dropped.iter().filter(|d| d.starts_with('[')).count();
            let head = if numbered == 0 {
                "Not labelled for lack of room"
            } else if numbered == dropped.len() {
                "Marked by number for lack of room"
            } else {
                "For lack of room, marked by number or not labelled"
            };
            let line = |n: usize| {
                let more = dropped.len() - n;
                let mut t = Txt::new(
                    format!(
                        "{head}: {}{}",
                        dropped[..n].join("; "),
                        match more {
                            0 => String::new(),
                            m => format!("{}and {m} more", if n > 0 { "; " } else { "" }),
                        }
                    ),
                    10.0,
                    H - 8.0,
                    size::LABEL,
                    "start",
                );
                t.fill = MUTED;
                fit(t, W - 20.0)
            };
            let n = (0..=dropped.len())
                .rev()
                .find(|&n| !line(n).text.ends_with('\u{2026}'))
                .unwrap_or(0);
            frame.footnote = Some(line(n));
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
    pub(super) fn vline_labels(
        &self,
        x_of: &dyn Fn(f64) -> f64,
        mut top: f64,
        texts: &mut Vec<Txt>,
        dropped: &mut Vec<String>,
    ) -> (Vec<(f64, Option<f64>)>, f64) {
        let (spec, xa) = (self.spec, self.xa);
        let W = self.w;
        let mut vline_px = Vec::new();
        let mut vl_boxes: Vec<(Txt, usize)> = Vec::new();
        for (x, label) in &spec.vlines {
            let Some(t) = fwd(self.xs, *x, self.floor.max(f64::MIN_POSITIVE)) else {
                continue;
            };
            // Off the axis: a labelled arrow at its edge, not an axis
            // stretched to it (the label should say where it is).
            let label = if t < xa.lo {
                format!("\u{2190} {label}")
            } else if t > xa.hi {
                format!("{label} \u{2192}")
            } else {
                label.clone()
            };
            let px = x_of(t);
            if label.is_empty() {
                vline_px.push((px, None));
                continue;
            }
            let mut txt = Txt::new(&label, px, 0.0, size::LABEL, "middle");
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
                    dropped.push(label);
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
    pub(super) fn axis_texts(
        &self,
        texts: &mut Vec<Txt>,
        x_of: &dyn Fn(f64) -> f64,
        y_of: &dyn Fn(Option<f64>) -> f64,
        plot: &R,
        x_label_y: f64,
        zero_y: Option<f64>,
    ) -> (Vec<(f64, String)>, (f64, f64)) {
        let (spec, xa, ya) = (self.spec, self.xa, self.ya);
        let W = self.w;
        let mut kept = Vec::new();
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
                kept.push((*t, label.clone()));
                texts.push(txt.mesh());
            }
        }
        let tick_asc = style::text_extent(size::TICK).0;
        for (t, label) in &ya.ticks {
            let y = y_of(Some(*t));
            texts.push(Txt::new(label, left - 10.0, y + tick_asc / 2.5, size::TICK, "end").mesh());
        }
        if let (Some(z), Some(y)) = (&ya.zero, zero_y) {
            texts.push(Txt::new(z, left - 10.0, y + tick_asc / 2.5, size::TICK, "end").mesh());
        }
        let xl = fit(
            Txt::new(
                &spec.x_label,
                (left + right) / 2.0,
                x_label_y,
                size::AXIS,
                "middle",
            ),
            // Centred on the plot, which a right legend moves off the
            // canvas' centre: the room on its narrower side, twice.
            2.0 * ((left + right) / 2.0).min(W - (left + right) / 2.0) - 20.0,
        )
        .mesh();
        let x_size = xl.size;
        texts.push(xl);
        let mut yl = fit(
            Txt::new(
                &spec.y_label,
                10.0 + style::text_extent(size::AXIS).0,
                (top + plot_bottom) / 2.0,
                size::AXIS,
                "middle",
            ),
            plot_bottom - top,
        )
        .mesh();
        yl.rotate = true;
        let y_size = yl.size;
        texts.push(yl);
        (kept, (x_size, y_size))
    }

    /// Every series' polyline and markers and every band's polygon, in px.
    #[allow(clippy::type_complexity)]
    pub(super) fn geometry(
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
                        // an edge at zero: cut at the axis' bottom
                        y_of_ref(fwd(self.ys, y, self.floor).or(match self.ys {
                            Scale::Log => Some(self.ya.lo),
                            _ => None,
                        })),
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
    pub(super) fn legend_rect(&self, place: Place, frame: &Frame, x_label_y: f64) -> Option<R> {
        let spec = self.spec;
        let W = self.w;
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
                let top = x_label_y + 12.0;
                Some(R::new(left, top, left + w, top + h))
            }
        }
    }

    /// Point labels beside their points, else further out with a leader
    /// line, else listed in `dropped` (the footnote).
    pub(super) fn label_points(&self, frame: &mut Frame, dropped: &mut Vec<String>) {
        let plot = frame.plot;
        let (lasc, ldesc) = style::text_extent(size::LABEL);
        let mut taken: Vec<R> = frame.texts.iter().map(|t| t.bbox()).collect();
        taken.extend(frame.legend);
        let area = plot.pad(-1.0);
        let text_width = |t: &str| style::text_width(t, size::LABEL);
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
                // The label where it fits; else a short reference ("[1]")
                // at the point, spelled out in the footnote; else only the
                // footnote.
                let mut text = label.clone();
                let mut placed = place_label(frame, &taken, &area, (x, y), text_width(&text), th);
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
                        let mut t = Txt::new(&text, r.x0, r.y0 + lasc, size::LABEL, "start");
                        t.fill = MUTED;
                        t.owner = Some(si);
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

/// Where a label `tw` × `th` px goes by the point at `(x, y)`: beside it,
/// else further away with a leader line (which must not cross another
/// label); never over data, another text or outside `area`. The box and
/// whether it needs a leader.
fn place_label(
    frame: &Frame,
    taken: &[R],
    area: &R,
    (x, y): (f64, f64),
    tw: f64,
    th: f64,
) -> Option<(R, bool)> {
    for (dist, leader) in [(7.0, false), (20.0, true), (36.0, true), (56.0, true)] {
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
            if !r.inside(area) || taken.iter().any(|t| t.overlaps(&r.pad(1.0))) {
                continue;
            }
            if !clear_of_data(&r, frame) {
                continue;
            }
            let c = ((r.x0 + r.x1) / 2.0, (r.y0 + r.y1) / 2.0);
            if leader && taken.iter().any(|t| t.hits((x, y), c)) {
                continue;
            }
            return Some((r, leader));
        }
    }
    None
}
