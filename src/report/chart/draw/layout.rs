//! Layout of one chart: margins, marker-line labels, axis texts, the
//! series' geometry, the legend's corner and point labels, all in px.

use super::*;

#[allow(non_snake_case)] // W, H: the canvas, as in the drawing
impl Ctx<'_> {
    pub(super) fn frame(&self, place: Place, footnote: usize) -> Frame {
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
        // A log x axis with values at or below zero: a "0" column left of
        // it (as the zero row under a log y axis), the axis after a gap.
        let zero_w = if xa.zero.is_some() {
            ZERO_ROW + ZERO_GAP
        } else {
            0.0
        };
        let data_left = left + zero_w;
        let zero_x = xa.zero.as_ref().map(|_| left + ZERO_ROW / 2.0);
        let x_of = move |t: f64| {
            if t == f64::NEG_INFINITY && zero_w > 0.0 {
                return left + ZERO_ROW / 2.0;
            }
            let t = t.clamp(x_lo, x_hi);
            data_left + (t - x_lo) / (x_hi - x_lo) * (right - data_left)
        };
        // plotters' x range: the log part, extended left over the column
        let x_dom_lo = x_lo - zero_w / (right - data_left) * (x_hi - x_lo);
        let zero_xu = x_dom_lo + (ZERO_ROW / 2.0) / (right - left) * (x_hi - x_dom_lo);
        let mut dropped: Vec<String> = Vec::new();
        let (vline_px, top) = self.vline_labels(&x_of, top, &mut texts, &mut dropped);
        let top = top.round();
        // Bottom: ticks, x label, legend rows, footnote.
        let mut bottom = H - 10.0;
        bottom -= FOOT_LINE * footnote as f64 + if footnote > 0 { 2.0 } else { 0.0 };
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
        let (mut x_ticks, titles) =
            self.axis_texts(&mut texts, &x_of, &y_of, &plot, x_label_y, zero_y);
        if let (Some(z), Some(zx)) = (&xa.zero, zero_x) {
            let t = Txt::new(
                z,
                zx,
                plot_bottom + 6.0 + style::text_extent(size::TICK).0,
                size::TICK,
                "middle",
            );
            texts.push(t.mesh());
            x_ticks.insert(0, (zero_xu, z.clone()));
        }
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
            footnote: Vec::new(),
            foot_need: 0,
            x_dom: (x_dom_lo, x_hi),
            zero_x,
            data_left,
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
            (frame.footnote, frame.foot_need) = footnote_lines(&dropped, W, H, footnote);
        }
        if footnote > 0 {
            frame.texts.extend(frame.footnote.iter().cloned());
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
        // (label, its row from the top, its line's x): a line runs from the
        // plot up to its label, through every row below the label's.
        let mut vl_boxes: Vec<(Txt, usize, f64)> = Vec::new();
        let bare: Vec<f64> = spec
            .vlines
            .iter()
            .filter(|(_, l)| l.is_empty())
            .filter_map(|(x, _)| fwd(self.xs, *x, self.floor.max(f64::MIN_POSITIVE)))
            .map(x_of)
            .collect();
        // Lines off the axis first: their labels cannot move from its edge,
        // the others can go to another row. Results stay in spec order.
        let at = |x: f64| fwd(self.xs, x, self.floor.max(f64::MIN_POSITIVE));
        let off = |x: f64| at(x).is_some_and(|t| t < xa.lo || t > xa.hi);
        let mut order: Vec<usize> = (0..spec.vlines.len()).collect();
        order.sort_by_key(|&i| !off(spec.vlines[i].0));
        let mut placed: Vec<Option<(f64, Option<f64>)>> = vec![None; spec.vlines.len()];
        for i in order {
            let (x, label) = &spec.vlines[i];
            let mut vline_px = Vec::new();
            let Some(t) = at(*x) else {
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
                placed[i] = Some((px, None));
                continue;
            }
            let mut txt = Txt::new(&label, px, 0.0, size::LABEL, "middle");
            txt.fill = MUTED;
            let w = txt.width();
            txt.x = px.clamp(8.0 + w / 2.0, W - 8.0 - w / 2.0);
            let span = |t: &Txt| (t.x - t.width() / 2.0 - 4.0, t.x + t.width() / 2.0 + 4.0);
            let (a, b) = span(&txt);
            let crosses = |x: f64, (c, d): (f64, f64)| x > c && x < d;
            let row = (0..4).find(|&r| {
                !bare.iter().any(|&x| crosses(x, (a, b)))
                    && vl_boxes.iter().all(|(o, rr, ox)| {
                        let (c, d) = span(o);
                        match (*rr).cmp(&r) {
                            std::cmp::Ordering::Equal => b <= c || a >= d,
                            // Its line passes through this row.
                            std::cmp::Ordering::Less => !crosses(*ox, (a, b)),
                            // This line passes through its row.
                            std::cmp::Ordering::Greater => !crosses(px, (c, d)),
                        }
                    })
            });
            match row {
                Some(r) => {
                    vl_boxes.push((txt, r, px));
                    vline_px.push((px, Some(r as f64)));
                }
                None => {
                    dropped.push(label);
                    vline_px.push((px, None));
                }
            }
            placed[i] = vline_px.pop();
        }
        let vline_px: Vec<(f64, Option<f64>)> = placed.into_iter().flatten().collect();
        let rows = vl_boxes.iter().map(|b| b.1 + 1).max().unwrap_or(0);
        let (asc, desc) = style::text_extent(size::LABEL);
        let strip_top = top + 2.0;
        top += rows as f64 * (asc + desc + 3.0) + if rows > 0 { 8.0 } else { 4.0 };
        let vline_rows_y: Vec<f64> = (0..rows)
            .map(|r| strip_top + asc + r as f64 * (asc + desc + 3.0))
            .collect();
        for (mut t, r, _) in vl_boxes {
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
    ) -> (Vec<Vec<(f64, f64)>>, Vec<Vec<(f64, f64)>>, Vec<BandPx>) {
        let (spec, xa) = (self.spec, self.xa);
        let mut lines = Vec::new();
        let mut marks = Vec::new();
        for p in self.preps {
            let mut pts: Vec<(f64, Option<f64>)> = p.pts.clone();
            if self.xs == Scale::Pct
                && let Some(&last) = pts.last()
                && p.style == SeriesStyle::Step
                && last.0 < xa.hi
            {
                pts.push((xa.hi, last.1));
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
        let bands: Vec<BandPx> = spec
            .bands
            .iter()
            .map(|b| {
                let x_px = |x: f64| {
                    x_of_ref(fwd(self.xs, x, self.floor.max(f64::MIN_POSITIVE)).unwrap_or(xa.lo))
                };
                let y_u = |y: f64| fwd(self.ys, y, self.floor);
                if self.ys != Scale::Log {
                    let map = |&(x, y): &(f64, f64)| (x_px(x), y_of_ref(y_u(y)));
                    let mut poly: Vec<(f64, f64)> = b.lower.iter().map(map).collect();
                    poly.extend(b.upper.iter().rev().map(map));
                    return BandPx {
                        fills: vec![poly],
                        edges: Vec::new(),
                    };
                }
                // On a log axis an edge at zero has no place: where the
                // lower edge is 0 the band is not filled down to the
                // axis (that would paint empty decades as data) but
                // drawn as its upper edge alone.
                let n = b.lower.len().min(b.upper.len());
                let floored = |k: usize| y_u(b.lower[k].1).is_none();
                let filled: Vec<bool> = (0..n.saturating_sub(1))
                    .map(|k| !floored(k) && !floored(k + 1))
                    .collect();
                let mut out = BandPx {
                    fills: Vec::new(),
                    edges: Vec::new(),
                };
                let mut k = 0;
                while k < filled.len() {
                    let mut e = k;
                    while e + 1 < filled.len() && filled[e + 1] == filled[k] {
                        e += 1;
                    }
                    if filled[k] {
                        let at = |p: &(f64, f64)| (x_px(p.0), y_of_ref(y_u(p.1)));
                        let mut poly: Vec<(f64, f64)> = b.lower[k..=e + 1].iter().map(at).collect();
                        poly.extend(b.upper[k..=e + 1].iter().rev().map(at));
                        out.fills.push(poly);
                    } else {
                        let mut line: Vec<(f64, f64)> = Vec::new();
                        for p in &b.upper[k..=e + 1] {
                            match y_u(p.1) {
                                Some(u) => line.push((x_px(p.0), y_of_ref(Some(u)))),
                                None => {
                                    if line.len() > 1 {
                                        out.edges.push(std::mem::take(&mut line));
                                    }
                                    line.clear();
                                }
                            }
                        }
                        if line.len() > 1 {
                            out.edges.push(line);
                        }
                    }
                    k = e + 1;
                }
                out
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
}
