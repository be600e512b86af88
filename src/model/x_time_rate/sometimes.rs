//! `golang.org/x/time/rate`'s `Sometimes` (`rate/sometimes.go`, unchanged
//! from its introduction through v0.13.0): runs a function for the first
//! `First` calls, every `Every`-th call (starting with the first), or when
//! `Interval` has elapsed since it last ran — the union of the three. The
//! first call always runs.
//!
//! Go's `Do` reads `time.Since(s.last)` with `s.last` starting as the zero
//! `time.Time`; `Time.Sub` saturates at the largest `Duration`, so even an
//! `Interval` of `math.MaxInt64` lets the first timed check pass. `s.last =
//! time.Now()` is set only when `Interval > 0`.

use super::GoTime;

/// `rate.Sometimes{First, Every, Interval}` and its unexported state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sometimes {
    /// `First`: if non-zero, the first N calls run.
    pub first: i64,
    /// `Every`: if non-zero, every Nth call runs.
    pub every: i64,
    /// `Interval` in ns: if non-zero and elapsed since the last run, the
    /// call runs.
    pub interval_ns: i64,
    count: i64,
    last: GoTime,
}

impl Sometimes {
    /// `rate.Sometimes{First: first, Every: every, Interval: interval}`.
    pub fn new(first: i64, every: i64, interval_ns: i64) -> Self {
        Self {
            first,
            every,
            interval_ns,
            count: 0,
            last: GoTime::ZERO,
        }
    }

    /// `Do(f)` at `time.Unix(0, t_ns)`: whether `f` runs.
    pub fn do_at(&mut self, t_ns: i64) -> bool {
        let now = GoTime::from_unix_nanos(t_ns);
        let run = self.count == 0
            || (self.first > 0 && self.count < self.first)
            // Go's % truncates toward zero like Rust's (Every > 0 here).
            || (self.every > 0 && self.count % self.every == 0)
            || (self.interval_ns > 0 && now.sub_time(self.last) >= self.interval_ns);
        if run && self.interval_ns > 0 {
            self.last = now;
        }
        self.count = self.count.wrapping_add(1);
        run
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs(mut s: Sometimes, times: &[i64]) -> Vec<bool> {
        times.iter().map(|&t| s.do_at(t)).collect()
    }

    #[test]
    fn upstream_examples() {
        assert_eq!(
            runs(Sometimes::new(0, 0, 0), &[0, 0, 0]),
            [true, false, false]
        );
        assert_eq!(
            runs(Sometimes::new(2, 0, 0), &[0, 0, 0]),
            [true, true, false]
        );
        assert_eq!(
            runs(Sometimes::new(0, 2, 0), &[0, 0, 0]),
            [true, false, true]
        );
        let s = 1_000_000_000;
        assert_eq!(
            runs(Sometimes::new(0, 0, s), &[0, 0, s]),
            [true, false, true]
        );
        assert_eq!(
            runs(Sometimes::new(2, 2, 2 * s), &[0, 0, 0, 2 * s, 2 * s, 2 * s]),
            [true, true, true, true, true, false]
        );
        assert_eq!(runs(Sometimes::new(0, 0, i64::MAX), &[5, 6]), [true, false]);
        assert_eq!(runs(Sometimes::new(0, 0, -1), &[5, 6]), [true, false]);
    }
}
