//! Axes: scales, nice tick steps and labels (linear, log decades and
//! their 2/5 steps, percentiles) and the zero row of a log axis.

#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Scale {
    Linear,
    Log,
    Pct,
}

/// One axis: scale, range in axis units and ticks.
#[derive(Debug, Clone)]
pub(super) struct Axis {
    pub(super) lo: f64,
    pub(super) hi: f64,
    pub(super) ticks: Vec<(f64, String)>,
    /// Label of the zero row (log y with values at or below the floor).
    pub(super) zero: Option<String>,
}

/// Data value to axis units; `None`: zero row (log) / not drawable.
pub(super) fn fwd(scale: Scale, v: f64, floor: f64) -> Option<f64> {
    match scale {
        Scale::Linear => Some(v),
        Scale::Log => (v > 0.0 && v >= floor).then(|| v.log10()),
        Scale::Pct => Some(if v >= 100.0 {
            f64::INFINITY
        } else {
            -(1.0 - v.max(0.0) / 100.0).log10()
        }),
    }
}

/// 1, 2, 2.5, 5 × 10^k steps: (lo, hi, step) covering [lo, hi].
pub(super) fn nice(lo: f64, hi: f64, target: f64, integer: bool) -> (f64, f64, f64) {
    let raw = ((hi - lo) / target).max(f64::MIN_POSITIVE);
    let mag = 10f64.powf(raw.log10().floor());
    let mut step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    if integer {
        step = step.max(1.0).round();
    }
    ((lo / step).floor() * step, (hi / step).ceil() * step, step)
}

pub(super) fn decimals(step: f64) -> usize {
    let mut d = 0usize;
    while d < 9
        && ((step * 10f64.powi(d as i32)).round() - step * 10f64.powi(d as i32)).abs() > 1e-6
    {
        d += 1;
    }
    d
}

pub(super) fn linear_label(v: f64, dec: usize, big: bool) -> String {
    if big {
        return crate::report::chart::human(v);
    }
    let s = format!("{v:.dec$}");
    if s.trim_start_matches('-')
        .chars()
        .all(|c| c == '0' || c == '.')
    {
        "0".into()
    } else {
        s
    }
}

use crate::report::chart::human;

#[cfg(test)]
pub(super) fn decade_label(k: i32) -> String {
    log_tick_label(1, k)
}

/// The label of the log-axis tick `m` × 10^`k` (`m` in 1..=9), exact at
/// every magnitude: `0.002`, `0.05`, `5`, `200`, `2e-4`, `20k`. (Rounding
/// the value to two decimals, as plain numbers are, labelled 0.002 and
/// 0.005 as "0" and "0.01".)
pub(super) fn log_tick_label(m: u32, k: i32) -> String {
    if k < -2 {
        format!("{m}e{k}")
    } else if k < 0 {
        let dec = k.unsigned_abs() as usize;
        format!("{:.dec$}", f64::from(m) * 10f64.powi(k))
    } else {
        crate::report::chart::human(f64::from(m) * 10f64.powi(k))
    }
}

/// A log axis' floor as a label: a one-digit mantissa as its tick would
/// be, anything else in three significant digits.
pub(super) fn floor_label(v: f64) -> String {
    let k = v.log10().floor() as i32;
    let m = v / 10f64.powi(k);
    let mr = m.round();
    if (m - mr).abs() < 1e-9 && (1.0..=9.0).contains(&mr) {
        log_tick_label(mr as u32, k)
    } else {
        format!("{v:.3e}")
    }
}

pub(super) fn pct_label(t: f64) -> String {
    let k = t.round() as i32;
    if k == 0 {
        return "0%".into();
    }
    let p = 100.0 * (1.0 - 10f64.powi(-k));
    let dec = (k - 2).max(0) as usize;
    format!("{p:.dec$}%")
}

/// What a log axis' zero row holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ZeroRow {
    /// Only values at or below zero.
    Zeros,
    /// Some positive values under the floor too.
    BelowFloor,
}

/// A categorical axis: category `i` at `i`, labelled with its name.
pub(super) fn categorical(names: &[String]) -> Axis {
    Axis {
        lo: -0.6,
        hi: names.len().max(1) as f64 - 0.4,
        ticks: names
            .iter()
            .enumerate()
            .map(|(i, s)| (i as f64, s.clone()))
            .collect(),
        zero: None,
    }
}

/// Builds an axis over `vals` (axis units), `forced` in data units.
pub(super) fn axis(
    scale: Scale,
    vals: &[f64],
    forced: Option<(f64, f64)>,
    floor: f64,
    integer: bool,
    zero: Option<ZeroRow>,
) -> Axis {
    let finite: Vec<f64> = vals.iter().copied().filter(|v| v.is_finite()).collect();
    let (mut lo, mut hi) = finite
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| {
            (a.min(v), b.max(v))
        });
    if let Some((a, b)) = forced {
        let fa = fwd(scale, a, floor.min(a.abs().max(f64::MIN_POSITIVE)));
        let fb = fwd(scale, b, floor.min(b.abs().max(f64::MIN_POSITIVE)));
        if let (Some(a), Some(b)) = (fa, fb)
            && b > a
            && b.is_finite()
        {
            lo = a;
            hi = b;
        }
    }
    if !lo.is_finite() {
        (lo, hi) = match scale {
            Scale::Log => (0.0, 1.0),
            _ => (0.0, 1.0),
        };
    }
    // Only exact zeros (or less) on the zero row: "0"; values under a
    // positive floor too: "<floor".
    let zero_label = |floor: f64| {
        if floor > 0.0 && zero == Some(ZeroRow::BelowFloor) {
            format!("<{}", floor_label(floor))
        } else {
            "0".to_string()
        }
    };
    match scale {
        Scale::Log => {
            // Bounds at the 1-2-5 steps around the data (not whole
            // decades: a decade of data would get an axis of two); a
            // forced range as it is.
            let steps = [0.0, 2f64.log10(), 5f64.log10(), 1.0];
            let down = |v: f64| {
                let k = v.floor();
                k + steps
                    .iter()
                    .rev()
                    .find(|&&c| k + c <= v + 1e-9)
                    .unwrap_or(&0.0)
            };
            let up = |v: f64| {
                let k = v.floor();
                k + steps.iter().find(|&&c| k + c >= v - 1e-9).unwrap_or(&1.0)
            };
            let (a, mut b) = if forced.is_some() {
                (lo, hi)
            } else {
                (down(lo), up(hi))
            };
            if b <= a {
                b = up(a + 0.01);
            }
            let span = b - a;
            let mut ticks = Vec::new();
            for k in a.floor() as i32..=b.ceil() as i32 {
                let mut at = vec![(1u32, f64::from(k))];
                if span <= 2.0 {
                    for m in [2u32, 5] {
                        at.push((m, f64::from(k) + f64::from(m).log10()));
                    }
                }
                for (m, v) in at {
                    if v >= a - 1e-9 && v <= b + 1e-9 {
                        ticks.push((v, log_tick_label(m, k)));
                    }
                }
            }
            if ticks.len() < 2 {
                ticks = vec![(a, human(10f64.powf(a))), (b, human(10f64.powf(b)))];
            }
            let pad = if forced.is_some() { 0.0 } else { 0.03 * span };
            Axis {
                lo: a - pad,
                hi: b + pad,
                ticks,
                zero: zero.map(|_| zero_label(floor)),
            }
        }
        Scale::Pct => {
            // one decade past the last point, so the maximum's step shows
            let mut b = hi.ceil().max(1.0);
            if hi > b - 0.3 {
                b += 1.0;
            }
            let b = b.min(7.0);
            let mut ticks: Vec<(f64, String)> = (0..=b as i32)
                .map(|k| (f64::from(k), pct_label(f64::from(k))))
                .collect();
            if b <= 2.0 {
                for p in [50.0f64, 75.0] {
                    ticks.push((-(1.0 - p / 100.0).log10(), format!("{p}%")));
                }
                ticks.sort_by(|a, b| a.0.total_cmp(&b.0));
            }
            Axis {
                lo: 0.0,
                hi: b,
                ticks,
                zero: None,
            }
        }
        Scale::Linear => {
            let forced_range = forced.is_some() && hi > lo;
            if hi <= lo {
                let d = if integer || lo == 0.0 {
                    1.0
                } else {
                    lo.abs() * 0.1
                };
                lo -= d;
                hi += d;
            }
            if !forced_range && lo > 0.0 && lo < 0.3 * hi && !integer {
                lo = 0.0;
            }
            let (a, b, step) = nice(lo, hi, 7.0, integer);
            let (a, b) = if forced_range {
                (lo, hi)
            } else if integer {
                // discrete values: half a step of room each side, off the axes
                (lo - 0.5, hi + 0.5)
            } else {
                (a, b)
            };
            let dec = decimals(step);
            let big = a.abs().max(b.abs()) >= 1e4 && step >= 1000.0;
            let mut ticks = Vec::new();
            let first = (a / step).ceil() as i64;
            let last = (b / step).floor() as i64;
            for k in first..=last {
                let v = k as f64 * step;
                ticks.push((v, linear_label(v, dec, big)));
            }
            // room inside the frame, so points on the extreme ticks stay off the axes
            let pad = if forced_range || integer {
                0.0
            } else {
                0.03 * (b - a)
            };
            Axis {
                lo: a - pad,
                hi: b + pad,
                ticks,
                zero: None,
            }
        }
    }
}
