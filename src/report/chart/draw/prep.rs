//! The series in axis units, and the axes that hold them: what is drawn
//! before anything is placed.

use super::*;

/// Each series in axis units (non-finite points skipped), identical ones
/// merged into one with a joined label (`a = b`).
pub(super) fn prepare_series(spec: &ChartSpec, xs: Scale, ys: Scale, floor: f64) -> Vec<Prep> {
    let mut preps: Vec<Prep> = Vec::new();
    for s in &spec.series {
        let mut pts = Vec::new();
        let mut labels = Vec::new();
        let mut at_edge = Vec::new();
        // y = −∞ on a linear axis with a row below it: on that row.
        let row_below = ys == Scale::Linear && !spec.y_row_below.is_empty();
        for (k, &(x, y)) in s.points.iter().enumerate() {
            let below = row_below && y == f64::NEG_INFINITY;
            if !x.is_finite() || !(y.is_finite() || below) {
                continue;
            }
            let tx = fwd(xs, x, floor.max(f64::MIN_POSITIVE)).unwrap_or(f64::NEG_INFINITY);
            pts.push((tx, if below { None } else { fwd(ys, y, floor) }));
            at_edge.push(s.at_edge.get(k).copied().unwrap_or(false));
            labels.push(
                s.point_labels
                    .as_ref()
                    .and_then(|l| l.get(k))
                    .map(|l| l.trim().to_string())
                    .unwrap_or_default(),
            );
        }
        let want = Want {
            color: s.color,
            share: s.share_color,
            line: match s.style {
                SeriesStyle::Points => None,
                SeriesStyle::Dashed => Some(true),
                _ => Some(s.dashed),
            },
            markers: matches!(s.style, SeriesStyle::Points | SeriesStyle::LinePoints),
            same_marker: s.same_marker,
            marker: s.marker,
        };
        if let Some(same) = preps
            .iter_mut()
            .find(|p| p.pts == pts && p.labels == labels && !pts.is_empty())
        {
            if !s.label.is_empty() {
                same.label = if same.label.is_empty() {
                    s.label.clone()
                } else {
                    format!("{} = {}", same.label, s.label)
                };
            }
            continue;
        }
        preps.push(Prep {
            label: s.label.clone(),
            style: s.style,
            pts,
            labels,
            want,
            at_edge,
        });
    }
    preps
}

/// Discrete x with several marker-only series at the same x values:
/// dodge them side by side (as grouped bars are), so no marker hides
/// another.
pub(super) fn dodge_points(preps: &mut [Prep], xs: Scale) {
    let all_integer = xs == Scale::Linear
        && !preps.is_empty()
        && preps
            .iter()
            .flat_map(|p| &p.pts)
            .all(|q| q.0.is_finite() && q.0.fract() == 0.0);
    let dodged: Vec<usize> = preps
        .iter()
        .enumerate()
        .filter(|(_, p)| p.style == SeriesStyle::Points)
        .map(|(i, _)| i)
        .collect();
    let shared_x = dodged.iter().enumerate().any(|(k, &i)| {
        dodged[..k].iter().any(|&j| {
            preps[i]
                .pts
                .iter()
                .any(|q| preps[j].pts.iter().any(|r| r.0 == q.0))
        })
    });
    if all_integer && shared_x && dodged.len() <= 8 {
        let width = 0.6 / dodged.len() as f64;
        for (k, &i) in dodged.iter().enumerate() {
            let off = (k as f64 - (dodged.len() as f64 - 1.0) / 2.0) * width;
            for q in &mut preps[i].pts {
                q.0 += off;
            }
        }
    }
}

/// The x and y axes over every series, band and marker line, with the
/// zero row of a log y axis when something is at or below zero.
pub(super) fn axes(
    spec: &ChartSpec,
    preps: &[Prep],
    xs: Scale,
    ys: Scale,
    floor: f64,
) -> (Axis, Axis) {
    let integer_x = xs == Scale::Linear
        && spec
            .series
            .iter()
            .flat_map(|s| &s.points)
            .all(|p| p.0.fract() == 0.0)
        && !spec.series.is_empty();
    let mut xv: Vec<f64> = preps
        .iter()
        .flat_map(|p| p.pts.iter().map(|q| q.0))
        .collect();
    let band_pts = |f: fn(&crate::report::chart::Band) -> &Vec<(f64, f64)>| {
        spec.bands
            .iter()
            .flat_map(move |b| f(b).iter().copied())
            .collect::<Vec<_>>()
    };
    let band_all: Vec<(f64, f64)> = [band_pts(|b| &b.lower), band_pts(|b| &b.upper)].concat();
    xv.extend(
        band_all
            .iter()
            .filter_map(|p| fwd(xs, p.0, floor.max(f64::MIN_POSITIVE))),
    );
    // Marker lines widen the axis only when near the data (within a
    // quarter of its span); one far outside is an arrow at the edge.
    let (dlo, dhi) = xv
        .iter()
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| {
            (a.min(v), b.max(v))
        });
    let reach = if dhi > dlo {
        0.25 * (dhi - dlo)
    } else {
        f64::INFINITY
    };
    xv.extend(
        spec.vlines
            .iter()
            .filter_map(|v| fwd(xs, v.0, floor.max(f64::MIN_POSITIVE)))
            .filter(|&t| !dlo.is_finite() || (t >= dlo - reach && t <= dhi + reach)),
    );
    let mut yv: Vec<f64> = preps
        .iter()
        .flat_map(|p| p.pts.iter().filter_map(|q| q.1))
        .collect();
    yv.extend(band_all.iter().filter_map(|p| fwd(ys, p.1, floor)));
    // A band's edge at zero is not drawn (see `band_cut`): only its
    // upper edge there, not a fill down to the zero row across empty
    // decades.
    let has_zero = ys == Scale::Log && preps.iter().any(|p| p.pts.iter().any(|q| q.1.is_none()));
    let under_floor = spec
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .chain(band_all.iter().map(|p| p.1))
        .any(|y| y > 0.0 && y < floor);
    let zero_row = has_zero.then_some(if under_floor {
        ZeroRow::BelowFloor
    } else {
        ZeroRow::Zeros
    });
    let mut xa = if spec.x_categories.is_empty() {
        axis(xs, &xv, spec.x_range, floor, integer_x, None)
    } else {
        categorical(&spec.x_categories)
    };
    // On a log x axis a value at or below zero has no place: a "0"
    // column left of the axis holds it.
    if xs == Scale::Log
        && preps
            .iter()
            .any(|p| p.pts.iter().any(|q| q.0 == f64::NEG_INFINITY))
    {
        xa.zero = Some("0".into());
    }
    let mut ya = if spec.y_categories.is_empty() {
        axis(ys, &yv, spec.y_range, floor, false, zero_row)
    } else {
        categorical(&spec.y_categories)
    };
    let below = preps.iter().any(|p| p.pts.iter().any(|q| q.1.is_none()));
    if ys == Scale::Linear && below && spec.y_categories.is_empty() {
        ya.zero = Some(spec.y_row_below.clone());
    }
    if spec.x_log2 && xs == Scale::Log && spec.x_categories.is_empty() {
        doubling_ticks(&mut xa, &xv);
    }
    if spec.y_log2 && ys == Scale::Log && spec.y_categories.is_empty() {
        doubling_ticks(&mut ya, &yv);
    }
    (xa, ya)
}

/// A log axis' ticks at doubling steps ([`ChartSpec::x_log2`]): at the
/// data's own values when each is the smallest times a power of two (a
/// sweep 25, 50, …, 400), else at powers of two. `vals` in axis units
/// (log10); the axis' range is kept.
pub(super) fn doubling_ticks(a: &mut Axis, vals: &[f64]) {
    let data: Vec<f64> = vals
        .iter()
        .filter(|v| v.is_finite())
        .map(|v| 10f64.powf(*v))
        .collect();
    let Some(v0) = data.iter().copied().reduce(f64::min) else {
        return;
    };
    let doubles = |v: f64| {
        let k = (v / v0).log2();
        (k - k.round()).abs() < 1e-6
    };
    let base = if data.iter().all(|&v| doubles(v)) {
        v0
    } else {
        1.0
    };
    let (lo, hi) = (10f64.powf(a.lo), 10f64.powf(a.hi));
    let first = (lo / base).log2().ceil() as i32;
    let last = (hi / base).log2().floor() as i32;
    let ticks: Vec<(f64, String)> = (first..=last)
        .map(|k| {
            let v = base * 2f64.powi(k);
            (v.log10(), crate::report::chart::human(v))
        })
        .collect();
    if ticks.len() >= 2 {
        a.ticks = ticks;
    }
}
