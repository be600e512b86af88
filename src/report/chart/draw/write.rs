//! The SVG of a laid-out chart: grid, axes, bands, marker lines, series,
//! texts and legend, each in the groups the layout test reads.

use super::*;

impl Ctx<'_> {
    /// Grid lines, then the left and bottom axes (with the break above a
    /// log axis' zero row) and the x ticks.
    pub(super) fn write_grid_and_axes(&self, o: &mut String, f: &Frame) {
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
    pub(super) fn write_data(&self, o: &mut String, f: &Frame, looks: &[Look]) {
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
    pub(super) fn write_legend(&self, o: &mut String, r: R, entries: &[Entry], row_h: f64) {
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

    pub(super) fn write(&self, f: &Frame, entries: &[Entry], looks: &[Look], row_h: f64) -> String {
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

pub(super) fn path_d(pts: &[(f64, f64)]) -> String {
    let mut d = String::with_capacity(pts.len() * 14);
    for (i, (x, y)) in pts.iter().enumerate() {
        let _ = write!(d, "{}{x:.1} {y:.1}", if i == 0 { "M" } else { "L" });
    }
    d
}

pub(super) fn stroke(l: &Look, w: f64) -> String {
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

pub(super) fn marker(o: &mut String, m: Marker, x: f64, y: f64, c: &str) {
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
