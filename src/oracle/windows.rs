//! Exact per-key window counters: the ground truth that the approximate
//! models are measured against.
//!
//! * [`FlipWindowOracle`]: the fixed window *as pingora's `Rate` defines it*
//!   (window flips at the first call at least `interval` whole ms after the
//!   last flip; two or more intervals clear both windows), written
//!   independently of `crate::model::rate` with exact per-key maps, so a
//!   property test can check the model's logic and measure its sketch error
//!   separately.
//! * [`AlignedWindowOracle`]: the textbook fixed window, aligned to multiples
//!   of the interval since an origin, with no dependence on call times.
//! * [`SlidingLogOracle`]: the exact sliding window (sliding log): events in
//!   `(now - window, now]`.
//!
//! Keys are bytes and counts `i64`, as in the `FrequencyEstimator` family.
//! Counts use wrapping arithmetic so no input can panic.

use crate::clock::{Nanos, MILLI};
use std::collections::{HashMap, VecDeque};
use std::time::Duration;

/// Exact counts with `Rate`'s flip times.
#[derive(Debug, Clone, Default)]
pub struct FlipWindowOracle {
    start: Nanos,
    interval_ms: u64,
    last_flip_ms: u64,
    previous: HashMap<Vec<u8>, i64>,
    current: HashMap<Vec<u8>, i64>,
}

/// What [`FlipWindowOracle::advance`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Advance {
    /// Whole ms since the last flip, measured before this call's flip.
    pub past_ms: u64,
    /// Whether this call flipped the window.
    pub flipped: bool,
}

impl FlipWindowOracle {
    /// An oracle created at `start` with `interval` (truncated to whole ms,
    /// as `Rate` does).
    pub fn new(interval: Duration, start: Nanos) -> Self {
        FlipWindowOracle {
            start,
            interval_ms: u64::try_from(interval.as_millis()).unwrap_or(u64::MAX),
            ..Self::default()
        }
    }

    /// Start of the current window (virtual time).
    pub fn window_start(&self) -> Nanos {
        self.start
            .saturating_add(self.last_flip_ms.saturating_mul(MILLI))
    }

    /// Applies the flip rule at `now`; every observe/read calls it first.
    pub fn advance(&mut self, now: Nanos) -> Advance {
        let now_ms = now.saturating_sub(self.start) / MILLI;
        let past_ms = now_ms.saturating_sub(self.last_flip_ms);
        if past_ms < self.interval_ms {
            return Advance {
                past_ms,
                flipped: false,
            };
        }
        if past_ms >= self.interval_ms.saturating_mul(2) {
            self.previous.clear();
        } else {
            self.previous = std::mem::take(&mut self.current);
        }
        self.current.clear();
        self.last_flip_ms = now_ms;
        Advance {
            past_ms,
            flipped: true,
        }
    }

    /// Adds `events` to `key` at `now`; the key's count in the current window.
    pub fn observe(&mut self, key: &[u8], events: i64, now: Nanos) -> i64 {
        self.advance(now);
        let c = self.current.entry(key.to_vec()).or_insert(0);
        *c = c.wrapping_add(events);
        *c
    }

    /// `(previous, current)` counts of `key` at `now`, as `Rate::rate_with`
    /// would report them with an exact counter.
    pub fn counts(&mut self, key: &[u8], now: Nanos) -> (i64, i64) {
        let a = self.advance(now);
        if a.past_ms >= self.interval_ms.saturating_mul(2) {
            (0, 0)
        } else if a.past_ms >= self.interval_ms {
            (self.previous.get(key).copied().unwrap_or(0), 0)
        } else {
            (
                self.previous.get(key).copied().unwrap_or(0),
                self.current.get(key).copied().unwrap_or(0),
            )
        }
    }

    /// The previous window's count of `key` per second at `now`, as
    /// `Rate::rate` with an exact counter (0 for a 0 ms interval).
    pub fn rate(&mut self, key: &[u8], now: Nanos) -> f64 {
        let (prev, _) = self.counts(key, now);
        if self.interval_ms == 0 {
            return 0.0;
        }
        prev as f64 * 1000.0 / self.interval_ms as f64
    }
}

/// Exact counts in windows `[origin + k·interval, origin + (k+1)·interval)`.
#[derive(Debug, Clone)]
pub struct AlignedWindowOracle {
    origin: Nanos,
    interval: Nanos,
    window: u64,
    counts: HashMap<Vec<u8>, i64>,
}

impl AlignedWindowOracle {
    /// Windows of `interval` (at least 1 ns) starting at `origin`.
    pub fn new(interval: Nanos, origin: Nanos) -> Self {
        AlignedWindowOracle {
            origin,
            interval: interval.max(1),
            window: 0,
            counts: HashMap::new(),
        }
    }

    /// Index of the window containing `now` (times before `origin` count as
    /// window 0).
    pub fn window_of(&self, now: Nanos) -> u64 {
        now.saturating_sub(self.origin) / self.interval
    }

    fn roll(&mut self, now: Nanos) {
        let w = self.window_of(now);
        if w != self.window {
            self.window = w;
            self.counts.clear();
        }
    }

    /// Adds `events` to `key` at `now`; the key's count in `now`'s window.
    pub fn observe(&mut self, key: &[u8], events: i64, now: Nanos) -> i64 {
        self.roll(now);
        let c = self.counts.entry(key.to_vec()).or_insert(0);
        *c = c.wrapping_add(events);
        *c
    }

    /// The key's count in `now`'s window.
    pub fn count(&mut self, key: &[u8], now: Nanos) -> i64 {
        self.roll(now);
        self.counts.get(key).copied().unwrap_or(0)
    }
}

/// One key's events still in the window, oldest first, and their sum.
type KeyLog = (VecDeque<(Nanos, i64)>, i64);

/// Exact sliding-window counts: events with time `t` where
/// `now - window < t <= now`.
#[derive(Debug, Clone)]
pub struct SlidingLogOracle {
    window: Nanos,
    logs: HashMap<Vec<u8>, KeyLog>,
}

impl SlidingLogOracle {
    /// A sliding window of `window` nanoseconds.
    pub fn new(window: Nanos) -> Self {
        SlidingLogOracle {
            window,
            logs: HashMap::new(),
        }
    }

    fn evict(window: Nanos, log: &mut KeyLog, now: Nanos) {
        // An event at t is inside iff t + window > now.
        while let Some(&(t, n)) = log.0.front() {
            if t.saturating_add(window) > now {
                break;
            }
            log.0.pop_front();
            log.1 = log.1.wrapping_sub(n);
        }
    }

    /// Records `events` for `key` at `now` (times must not decrease per key
    /// for exact results) and returns the key's count in the window.
    pub fn observe(&mut self, key: &[u8], events: i64, now: Nanos) -> i64 {
        let window = self.window;
        let log = self.logs.entry(key.to_vec()).or_default();
        Self::evict(window, log, now);
        if window > 0 {
            log.0.push_back((now, events));
            log.1 = log.1.wrapping_add(events);
        }
        log.1
    }

    /// The key's count in `(now - window, now]`.
    pub fn count(&mut self, key: &[u8], now: Nanos) -> i64 {
        let window = self.window;
        match self.logs.get_mut(key) {
            Some(log) => {
                Self::evict(window, log, now);
                log.1
            }
            None => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::estimator::{EstimatorConfig, ExactCounter};
    use crate::model::rate::Rate;
    use crate::rng::sim_rng;
    use rand::Rng;

    const MS: Nanos = MILLI;

    #[test]
    fn flip_oracle_matches_the_a3_timeline() {
        let mut o = FlipWindowOracle::new(Duration::from_secs(1), 0);
        for i in 0..10 {
            o.observe(b"k", 1, i * 50 * MS);
        }
        let rates: Vec<f64> = [456u64, 902, 1108, 1510, 2104, 3208]
            .iter()
            .map(|&t| o.rate(b"k", t * MS))
            .collect();
        assert_eq!(rates, vec![0.0, 0.0, 10.0, 10.0, 10.0, 0.0]);
        assert_eq!(o.window_start(), 3208 * MS);
    }

    /// Random schedules: the model with an exact counter equals the oracle on
    /// every call; with a small sketch it never undercounts.
    #[test]
    fn rate_model_equals_flip_oracle_and_sketch_never_undercounts() {
        for seed in 0..20u64 {
            let mut rng = sim_rng(seed);
            let interval = Duration::from_millis(rng.random_range(0..40));
            let start = rng.random_range(0..5 * MS);
            let mut oracle = FlipWindowOracle::new(interval, start);
            let mut exact =
                Rate::from_slots(interval, start, ExactCounter::new(), ExactCounter::new());
            let mut sketch =
                Rate::new_with_estimator_config(interval, start, EstimatorConfig::new(2, 8), seed);
            let mut t = start;
            for _ in 0..400 {
                t += rng.random_range(0..4 * MS);
                let key = [rng.random_range(0..12u8)];
                if rng.random_bool(0.7) {
                    let n = rng.random_range(1..4);
                    let want = oracle.observe(&key, n, t);
                    assert_eq!(exact.observe(&key, n, t), Ok(want));
                    assert!(sketch.observe(&key, n, t).unwrap() >= want);
                } else {
                    let (p, c) = oracle.counts(&key, t);
                    if interval.as_millis() == 0 {
                        // rate_with faults on % 0; compare rate() instead.
                        assert_eq!(exact.rate(&key, t), Ok(0.0));
                        assert_eq!(sketch.rate(&key, t), Ok(0.0));
                    } else {
                        let got = exact.components(&key, t).unwrap();
                        assert_eq!((got.prev_samples, got.curr_samples), (p, c));
                        let s = sketch.components(&key, t).unwrap();
                        assert!(s.prev_samples >= p && s.curr_samples >= c);
                    }
                }
                assert_eq!(exact.window_start(), oracle.window_start());
                assert_eq!(sketch.window_start(), oracle.window_start());
            }
        }
    }

    #[test]
    fn aligned_windows_ignore_call_times() {
        let mut o = AlignedWindowOracle::new(1000 * MS, 0);
        assert_eq!(o.observe(b"a", 1, 900 * MS), 1);
        // 1050 ms is a new aligned window even though the call-driven window
        // would still be open.
        assert_eq!(o.observe(b"a", 1, 1050 * MS), 1);
        assert_eq!(o.observe(b"a", 1, 1999 * MS), 2);
        assert_eq!(o.count(b"a", 2000 * MS), 0);
        assert_eq!(o.window_of(2000 * MS), 2);
        let mut shifted = AlignedWindowOracle::new(10, 5);
        assert_eq!(shifted.window_of(14), 0);
        assert_eq!(shifted.window_of(15), 1);
        assert_eq!(shifted.count(b"x", 0), 0);
    }

    #[test]
    fn sliding_log_counts_half_open_window() {
        let mut o = SlidingLogOracle::new(1000 * MS);
        assert_eq!(o.observe(b"a", 1, 0), 1);
        assert_eq!(o.observe(b"a", 2, 500 * MS), 3);
        assert_eq!(o.count(b"a", 999 * MS), 3);
        // the event at 0 leaves at exactly 1000 ms
        assert_eq!(o.count(b"a", 1000 * MS), 2);
        assert_eq!(o.observe(b"b", 1, 1000 * MS), 1);
        assert_eq!(o.count(b"a", 1500 * MS), 0);
        assert_eq!(o.count(b"zz", 0), 0);
        let mut empty = SlidingLogOracle::new(0);
        assert_eq!(empty.observe(b"a", 5, 7), 0);
    }

    #[test]
    fn flip_window_can_exceed_sliding_truth() {
        // The proxy example's point: the call-driven window admits 2 events 150 ms apart
        // where a 1 s sliding window holds both.
        let mut flip = FlipWindowOracle::new(Duration::from_secs(1), 0);
        let mut slide = SlidingLogOracle::new(1000 * MS);
        flip.observe(b"1", 1, 0);
        slide.observe(b"1", 1, 0);
        assert_eq!(flip.observe(b"2", 1, 900 * MS), 1);
        assert_eq!(slide.observe(b"2", 1, 900 * MS), 1);
        assert_eq!(flip.observe(b"2", 1, 1050 * MS), 1);
        assert_eq!(slide.observe(b"2", 1, 1050 * MS), 2);
    }
}
