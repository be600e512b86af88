//! Marks drawn in the chart's coordinates: markers, arrows for points off
//! the axis, dash patterns, and the legend's swatches.

use super::*;

/// (size, gap) of each dash pattern of [`DASHES`] (plotters' dashes are
/// one size and one gap).
pub(super) fn dash(d: usize) -> Option<(u32, u32)> {
    match d % DASHES.len() {
        0 => None,
        1 => Some((8, 5)),
        2 => Some((2, 3)),
        3 => Some((14, 4)),
        _ => Some((4, 2)),
    }
}

/// Draws marker `m` of colour `c` at each of `pts` on `chart`; a point is
/// (x, y) in the chart's units and (sx, sy) is one pixel in them (plotters'
/// composed elements would tie the marker to the backend's lifetime).
pub(super) fn markers<DB: DrawingBackend, X, Y>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<X, Y>>,
    m: Marker,
    pts: &[(f64, f64)],
    (sx, sy): (f64, f64),
    c: RGBColor,
) -> Result<(), DrawError>
where
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    let r = MR;
    let it = pts.iter().copied();
    match m {
        Marker::Circle => chart
            .draw_series(it.map(|q| Circle::new(q, r as i32, c.filled())))
            .map(|_| ()),
        Marker::Triangle => chart
            .draw_series(it.map(|q| TriangleMarker::new(q, r as i32 + 1, c.filled())))
            .map(|_| ()),
        Marker::Cross => chart
            .draw_series(it.map(|q| Cross::new(q, r as i32, c.stroke_width(2))))
            .map(|_| ()),
        Marker::Square => {
            let (dx, dy) = (0.85 * r * sx, 0.85 * r * sy);
            chart
                .draw_series(
                    it.map(|(x, y)| {
                        Rectangle::new([(x - dx, y - dy), (x + dx, y + dy)], c.filled())
                    }),
                )
                .map(|_| ())
        }
        Marker::Diamond => {
            let (dx, dy) = (r * sx, 1.15 * r * sy);
            chart
                .draw_series(it.map(|(x, y)| {
                    Polygon::new(
                        vec![(x, y + dy), (x + dx, y), (x, y - dy), (x - dx, y)],
                        c.filled(),
                    )
                }))
                .map(|_| ())
        }
    }
    .map_err(err)
}

/// Points pinned at the top or bottom edge of the y axis (their values lie
/// beyond it), drawn as arrows pointing off the axis: a value at the edge
/// would read as the value.
pub(super) fn edge_arrows<DB: DrawingBackend, X, Y>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<X, Y>>,
    pts: &[(f64, f64)],
    (sx, sy): (f64, f64),
    ((x_lo, x_hi), (y_lo, y_hi)): ((f64, f64), (f64, f64)),
    on_x: bool,
    c: RGBColor,
) -> Result<(), DrawError>
where
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    chart
        .draw_series(pts.iter().map(|&(x, y)| {
            // Towards the nearer end of the axis it is pinned on.
            let v = if on_x {
                (if x < (x_lo + x_hi) / 2.0 { -1.0 } else { 1.0 }, 0.0)
            } else if y >= (y_lo + y_hi) / 2.0 {
                (0.0, 1.0)
            } else {
                (0.0, -1.0)
            };
            let (long, half) = (1.6 * MR, MR);
            // tip, then the two corners of the base (px scaled to units)
            // centred on the point, so it marks the point its label names
            let tip = (x + v.0 * 0.6 * long * sx, y + v.1 * 0.6 * long * sy);
            let back = (x - v.0 * 0.6 * long * sx, y - v.1 * 0.6 * long * sy);
            let side = (v.1 * half * sx, v.0 * half * sy);
            Polygon::new(
                vec![
                    tip,
                    (back.0 + side.0, back.1 + side.1),
                    (back.0 - side.0, back.1 - side.1),
                ],
                c.filled(),
            )
        }))
        .map(|_| ())
        .map_err(err)
}

/// A legend swatch: the series' line (dashed as drawn) with its marker in
/// the middle, or the band's fill, 30 px wide from its point. An element of
/// our own, made of plotters' elements (their composition would tie the
/// swatch to the backend's lifetime, which plotters' legend does not allow).
pub(super) struct Swatch {
    pub(super) at: BackendCoord,
    pub(super) look: Option<Look>,
    pub(super) band: Option<(usize, f64)>,
    /// The band is drawn as its upper edge alone: a thin line.
    pub(super) edge: bool,
}

impl<'a> PointCollection<'a, BackendCoord> for &'a Swatch {
    type Point = &'a BackendCoord;
    type IntoIter = std::iter::Once<&'a BackendCoord>;
    fn point_iter(self) -> Self::IntoIter {
        std::iter::once(&self.at)
    }
}

impl<DB: DrawingBackend> Drawable<DB> for Swatch {
    fn draw<I: Iterator<Item = BackendCoord>>(
        &self,
        mut pos: I,
        b: &mut DB,
        ps: (u32, u32),
    ) -> Result<(), DrawingErrorKind<DB::ErrorType>> {
        let Some((x, y)) = pos.next() else {
            return Ok(());
        };
        let ends = || vec![(x, y), (x + 30, y)].into_iter();
        if let (Some((c, op)), true) = (self.band, self.edge) {
            return PathElement::new(vec![(0, 0)], edge_style(c, op)).draw(ends(), b, ps);
        }
        if let Some((c, op)) = self.band {
            let fill = palette(c).mix(op).filled();
            return Rectangle::new([(0, 0), (0, 0)], fill).draw(
                vec![(x, y - 5), (x + 30, y + 5)].into_iter(),
                b,
                ps,
            );
        }
        let Some(l) = &self.look else {
            return Ok(());
        };
        let c = palette(l.color);
        let st = c.stroke_width(2);
        match l.dash.map(dash) {
            None => {}
            Some(None) => PathElement::new(vec![(0, 0)], st).draw(ends(), b, ps)?,
            Some(Some((d, g))) => {
                DashedPathElement::new(vec![(0, 0)], d, g, st).draw(ends(), b, ps)?
            }
        }
        let r = MR as i32;
        let mid = std::iter::once((x + 15, y));
        match l.marker {
            None => Ok(()),
            Some(Marker::Circle) => Circle::new((0, 0), r, c.filled()).draw(mid, b, ps),
            Some(Marker::Triangle) => {
                TriangleMarker::new((0, 0), r + 1, c.filled()).draw(mid, b, ps)
            }
            Some(Marker::Cross) => Cross::new((0, 0), r, c.stroke_width(2)).draw(mid, b, ps),
            Some(Marker::Square) => Rectangle::new([(0, 0), (0, 0)], c.filled()).draw(
                vec![(x + 15 - 3, y - 3), (x + 15 + 3, y + 3)].into_iter(),
                b,
                ps,
            ),
            Some(Marker::Diamond) => Polygon::new(vec![(0, 0)], c.filled()).draw(
                vec![(x + 15, y - 5), (x + 19, y), (x + 15, y + 5), (x + 11, y)].into_iter(),
                b,
                ps,
            ),
        }
    }
}
