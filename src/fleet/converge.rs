//! Time to converge: how long after a disturbance (a scale event, a
//! restart, the end of an outage) the fleet admits what the fleet-wide
//! exact policy admits again.
//!
//! Definition, on one-second bins of admitted requests (`F[b]` for the
//! fleet, `X[b]` for the exact sliding log over all its traffic, bin `b`
//! covering `[b, b + 1)` s), with `W` = the policy interval in whole
//! seconds (at least 1):
//!
//! * a window starting at bin `b` is *within tolerance* when
//!   `|sum F[b..b+W] - sum X[b..b+W]| <= max(tol x sum X[b..b+W], 1)`;
//! * the fleet has *converged at* bin `c` when the `W` windows starting
//!   at `c, c + 1, …, c + W - 1` are all within tolerance (it stays
//!   within for a full window);
//! * the time to converge after an event at `E` is `c - E` for the first
//!   such `c` at or after `E` (rounded up to a whole second), or none when
//!   the run ends first (windows reaching the run's last, partial second
//!   are not judged).
//!
//! A fleet that was never within tolerance (local limiters behind round
//! robin admit N times the limit) has no time to converge: it is reported
//! as none, not as a large number.

use crate::clock::{Nanos, SECOND};

/// The tolerance of the time to converge: within 10% of the exact policy.
pub const CONVERGE_TOLERANCE: f64 = 0.10;

/// Seconds from `event` until the fleet's admitted per window stays within
/// `tol` of the exact policy's for a full window (see the module doc), or
/// `None` when it does not before the run ends. `fleet` and `exact` are
/// admitted requests per second; `window_s` the policy interval in whole
/// seconds.
///
/// # Examples
/// ```
/// use ratelab::fleet::time_to_converge;
/// // The fleet admits double for 3 s after an event at 10.5 s.
/// let exact = vec![100; 30];
/// let mut fleet = exact.clone();
/// for b in 11..14 {
///     fleet[b] = 200;
/// }
/// assert_eq!(time_to_converge(&fleet, &exact, 10_500_000_000, 1, 0.1), Some(3.5));
/// ```
pub fn time_to_converge(
    fleet: &[u64],
    exact: &[u64],
    event: Nanos,
    window_s: usize,
    tol: f64,
) -> Option<f64> {
    let w = window_s.max(1);
    let n = fleet.len().max(exact.len());
    // The last bin is partial: windows must end before it.
    let last_start = n.checked_sub(1 + w)?;
    let at = |v: &[u64], b: usize| v.get(b).copied().unwrap_or(0);
    let sum = |v: &[u64], b: usize| (b..b + w).map(|i| at(v, i)).sum::<u64>() as f64;
    let within = |b: usize| {
        let (f, x) = (sum(fleet, b), sum(exact, b));
        (f - x).abs() <= f64::max(tol * x, 1.0)
    };
    let first = event.div_ceil(SECOND) as usize;
    let mut run = 0;
    for b in first..=last_start {
        if within(b) {
            run += 1;
            if run == w {
                let c = b + 1 - w;
                let secs =
                    (c as u128 * u128::from(SECOND) - u128::from(event)) as f64 / SECOND as f64;
                return Some((secs * 1000.0).round() / 1000.0);
            }
        } else {
            run = 0;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fleet_already_within_converges_at_the_next_second() {
        let x = vec![50; 20];
        assert_eq!(time_to_converge(&x, &x, 4 * SECOND, 1, 0.1), Some(0.0));
        assert_eq!(
            time_to_converge(&x, &x, 4 * SECOND + SECOND / 4, 1, 0.1),
            Some(0.75)
        );
    }

    #[test]
    fn it_must_stay_within_for_a_full_window() {
        // Window 3 s: bins 5, 6 and 7 within, 8 to 11 off, fine from 12.
        let x = vec![100; 40];
        let mut f = vec![300; 40];
        for (b, v) in f.iter_mut().enumerate() {
            if (5..8).contains(&b) || b >= 12 {
                *v = 100;
            }
        }
        let t = time_to_converge(&f, &x, 5 * SECOND, 3, 0.1).unwrap();
        assert_eq!(t, 7.0, "windows from 12 to 14 are the first three in a row");
    }

    #[test]
    fn never_within_is_none_and_the_partial_last_second_is_not_judged() {
        let x = vec![100; 10];
        let f = vec![200; 10];
        assert_eq!(time_to_converge(&f, &x, SECOND, 1, 0.1), None);
        let mut g = x.clone();
        g[..9].fill(200);
        assert_eq!(time_to_converge(&g, &x, SECOND, 1, 0.1), None);
    }
}
