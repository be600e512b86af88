//! The sliding-window counter as Cloudflare describes it in "How we built
//! rate limiting capable of scaling to millions of domains" (Cloudflare
//! blog, 2017-06-07, <https://blog.cloudflare.com/counting-things-a-lot-of-different-things/>).
//! Cloudflare's edge code is not public: this models the algorithm as the
//! post states it.
//!
//! # What the post says
//! * "Every request that matches the rule is counted per client IP
//!   address"; "once that counter exceeds a threshold, further requests are
//!   not allowed to reach the origin server".
//! * Counters are kept per *sampling period* (1 s for a 10 req/s rule, 1 min
//!   for 600 req/min) in memcached, with only `GET`, `SET` and `INCR`; "only
//!   two numbers per counter": the current and the previous period's.
//! * The rate is the previous period's count weighted by the part of it
//!   still inside a sliding period, plus the current count. Its example: a
//!   limit of 50 per minute, 42 requests in the previous minute, 18 in the
//!   current one which started 15 s ago: `rate = 42 × ((60 − 15)/60) + 18 =
//!   49.5`, and "one more request during the next second and the rate
//!   limiter will start being very angry".
//! * The estimate assumes a constant rate over the previous period; on 400
//!   million requests from 270,000 sources 0.003% were wrongly allowed or
//!   limited.
//!
//! # The model
//! Per key: the index of the current window, its count `curr` and the
//! previous window's count `prev`. Windows are aligned to multiples of the
//! interval in Unix time (`window = ⌊t / interval⌋`, `t` Unix time: see
//! [`SlidingWindowCounter::origin`]); moving to the
//! next window shifts `curr` into `prev`, skipping a window or more resets
//! both. With `e` the time elapsed in the current window and `I` the
//! interval, a request of weight `w` is **admitted iff**
//!
//! ```text
//! prev × (I − e) / I + curr + w ≤ limit
//! ```
//!
//! i.e. the rate *counting this request* does not exceed the limit. Why
//! this comparison: the post's trigger is the counter *exceeding* the
//! threshold (so reaching it exactly is still within), and the counter it
//! compares includes the request, since every request is counted (`INCR`)
//! as it arrives. In the post's example the next request makes the rate
//! 50.5 > 50 and is denied; a fresh key gets exactly `limit` requests into
//! an empty window, like the lab's other limiters. It is evaluated exactly
//! in integers, `prev × (I − e) + (curr + w) × I ≤ limit × I` in `u128`
//! nanoseconds, so no float rounding enters (Cloudflare's own arithmetic,
//! presumably Lua floats, is not published).
//!
//! # Switch: [`SlidingWindowCounter::count_denied`]
//! Whether a denied request is counted (adds its weight to `curr`).
//! Cloudflare counts every request that matches a rule, so `true` is their
//! behaviour and the default: a key that keeps sending while over the
//! limit stays over it. `false` counts admitted requests only (the usual
//! textbook variant, and what the lab's exact oracles count).
//!
//! # Switch: [`SlidingWindowCounter::mitigation`] (the production design)
//! The post's production path is asynchronous: a request only checks
//! whether its client is already mitigated; the counter is incremented
//! asynchronously and, when the rate is found above the threshold, the
//! client is mitigated for the rule's period. "Once a client is
//! mitigated … we know exactly when it will end": during the period its
//! requests are blocked without even querying (or counting in) memcached.
//! With a mitigation period `P` the model does that per key: a request at
//! `t` before the key's mitigation end is **denied and not counted**;
//! otherwise it is **admitted and counted**, and if the rate counting it
//! exceeds the limit, the key is mitigated until `t + P` (the request that
//! crossed the threshold itself passed: its check came before its
//! increment). Requests arrive one at a time here, so the race window of
//! several requests crossing together is one request. Without the switch
//! (the default) the model decides synchronously, as above.
//!
//! # Not modelled
//! * Per-PoP counting (one counter set per data centre) and memcached's
//!   own expiry of old counters.
//!
//! # Memory
//! [`SLIDING_WINDOW_STATE_BYTES`] = 24 per key: the two counts and the
//! current window's index, 8 bytes each (Cloudflare names each window's
//! counter by its period instead of storing an index; memcached's key and
//! item overhead is not counted).

use crate::clock::Nanos;
use crate::error::{Error, Result};
use crate::model::{Decision, KeyState};
use std::time::Duration;

/// Bytes of one key's state: previous and current window counts and the
/// current window's index, a `u64` each.
pub const SLIDING_WINDOW_STATE_BYTES: u64 = 24;

/// One key's sliding-window counter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlidingWindowCounter {
    limit: u64,
    interval: u64,
    count_denied: bool,
    /// The mitigation period in ns (0: the synchronous model).
    mitigation: u64,
    /// End of the key's mitigation (requests before it are blocked).
    mitigated_until: Nanos,
    /// Index of the current window, `⌊t / interval⌋`.
    window: u64,
    /// Weight counted in the current window.
    curr: u64,
    /// Weight counted in the previous window.
    prev: u64,
    /// Unix time of virtual time 0 modulo the interval: windows are
    /// aligned to Unix time, as Cloudflare's per-minute counters are.
    shift: Nanos,
}

impl SlidingWindowCounter {
    /// At most `limit` requests per sliding `interval` (estimated),
    /// counting denied requests too (Cloudflare's behaviour; see
    /// [`SlidingWindowCounter::count_denied`]).
    ///
    /// Errors: a zero `limit` (it would deny everything), a zero
    /// `interval`, an interval over `u64::MAX` nanoseconds.
    ///
    /// # Examples
    /// The post's example: 50 per minute, 42 requests in the previous
    /// minute, 18 in this one, 15 s into it: the rate is 49.5, and one more
    /// request would make it 50.5.
    /// ```
    /// use ratelab::clock::SECOND;
    /// use ratelab::model::cloudflare_sliding_window::SlidingWindowCounter;
    /// use ratelab::model::KeyState;
    /// use std::time::Duration;
    /// let mut c = SlidingWindowCounter::new(50, Duration::from_secs(60))?;
    /// assert!(c.admit(42, 30 * SECOND)?.allowed);
    /// assert!(c.admit(18, 75 * SECOND)?.allowed); // 31.5 + 18 ≤ 50
    /// assert_eq!(c.estimate(75 * SECOND), 49.5);
    /// assert!(!c.admit(1, 75 * SECOND)?.allowed);
    /// assert!(SlidingWindowCounter::new(0, Duration::from_secs(60)).is_err());
    /// # Ok::<(), ratelab::error::Error>(())
    /// ```
    pub fn new(limit: u64, interval: Duration) -> Result<Self> {
        let bad = |m: String| Error::input(format!("sliding window counter: {m}"));
        if limit == 0 {
            return Err(bad(
                "limit 0: expected at least 1 request per interval".into()
            ));
        }
        if interval.is_zero() {
            return Err(bad("interval 0s: expected more than 0".into()));
        }
        let interval = u64::try_from(interval.as_nanos())
            .map_err(|_| bad(format!("interval {interval:?}: longer than 584 years")))?;
        Ok(Self {
            limit,
            interval,
            count_denied: true,
            mitigation: 0,
            mitigated_until: 0,
            window: 0,
            curr: 0,
            prev: 0,
            shift: 0,
        })
    }

    /// Sets the Unix time of virtual time 0 (ns): windows are `⌊Unix time /
    /// interval⌋` (without it, virtual time is Unix time).
    ///
    /// # Examples
    /// ```
    /// use ratelab::clock::MILLI;
    /// use ratelab::model::cloudflare_sliding_window::SlidingWindowCounter;
    /// use ratelab::model::KeyState;
    /// use std::time::Duration;
    /// // Virtual 0 is 0.75 s into a Unix second: the window turns at 0.25 s.
    /// let c = SlidingWindowCounter::new(4, Duration::from_secs(1))?.origin(1_767_225_600_750 * MILLI);
    /// let mut k = c;
    /// for _ in 0..4 { assert!(k.admit(1, 0)?.allowed); }
    /// // 0.5 s into the next window the previous one weighs half: 2 + 1 <= 4.
    /// assert!(k.admit(1, 750 * MILLI)?.allowed);
    /// # Ok::<(), ratelab::error::Error>(())
    /// ```
    pub fn origin(mut self, unix_ns: Nanos) -> Self {
        self.shift = unix_ns % self.interval;
        self
    }

    /// Whether a denied request adds its weight to the current window's
    /// count (`true`, the default, is Cloudflare's "every request that
    /// matches the rule is counted").
    pub fn count_denied(mut self, yes: bool) -> Self {
        self.count_denied = yes;
        self
    }

    /// Cloudflare's asynchronous production design: every admitted request
    /// is counted; the one that takes the rate over the limit still passes
    /// and mitigates the key for `period`, during which its requests are
    /// denied without being counted (see the module docs). A zero period
    /// is the synchronous model (the default).
    ///
    /// # Examples
    /// ```
    /// use ratelab::clock::SECOND;
    /// use ratelab::model::cloudflare_sliding_window::SlidingWindowCounter;
    /// use ratelab::model::KeyState;
    /// use std::time::Duration;
    /// let mut c = SlidingWindowCounter::new(2, Duration::from_secs(1))?
    ///     .mitigation(Duration::from_secs(10));
    /// assert!(c.admit(1, 0)?.allowed);
    /// assert!(c.admit(1, 0)?.allowed);
    /// assert!(c.admit(1, 0)?.allowed, "the crossing request passes");
    /// assert!(!c.admit(1, 5 * SECOND)?.allowed, "mitigated for 10 s");
    /// assert!(c.admit(1, 10 * SECOND)?.allowed, "and then free again");
    /// # Ok::<(), ratelab::error::Error>(())
    /// ```
    pub fn mitigation(mut self, period: Duration) -> Self {
        self.mitigation = u64::try_from(period.as_nanos()).unwrap_or(u64::MAX);
        self
    }

    /// Moves the counts to `now`'s window.
    fn roll(&mut self, now: Nanos) {
        let w = now / self.interval;
        if w == self.window {
            return;
        }
        self.prev = if w == self.window + 1 { self.curr } else { 0 };
        self.curr = 0;
        self.window = w;
    }

    /// The rate estimate at `now` as a float (for reports and tests; the
    /// decision is exact): `prev × (I − e) / I + curr`.
    pub fn estimate(&self, now: Nanos) -> f64 {
        let now = now + self.shift;
        let mut s = *self;
        s.roll(now);
        let left = s.interval - (now - s.window * s.interval);
        s.prev as f64 * (left as f64 / s.interval as f64) + s.curr as f64
    }
}

impl KeyState for SlidingWindowCounter {
    const STATE_BYTES: u64 = SLIDING_WINDOW_STATE_BYTES;

    fn admit(&mut self, w: u64, now: Nanos) -> Result<Decision> {
        if self.mitigation > 0 {
            if now < self.mitigated_until {
                return Ok(Decision::DENY);
            }
            let u = now + self.shift;
            self.roll(u);
            self.curr = self.curr.saturating_add(w);
            let i = u128::from(self.interval);
            let left = u128::from(self.interval - (u - self.window * self.interval));
            let rate = (u128::from(self.prev) * left).saturating_add(u128::from(self.curr) * i);
            if rate > u128::from(self.limit) * i {
                self.mitigated_until = now.saturating_add(self.mitigation);
            }
            return Ok(Decision::ALLOW);
        }
        let u = now + self.shift;
        self.roll(u);
        let i = u128::from(self.interval);
        // Time of the previous window still inside the sliding one: I − e.
        let left = u128::from(self.interval - (u - self.window * self.interval));
        let lhs = (u128::from(self.prev) * left)
            .saturating_add((u128::from(self.curr) + u128::from(w)).saturating_mul(i));
        let allowed = lhs <= u128::from(self.limit) * i;
        if allowed || self.count_denied {
            self.curr = self.curr.saturating_add(w);
        }
        Ok(Decision::from_allowed(allowed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::SECOND;

    fn minute(limit: u64) -> SlidingWindowCounter {
        SlidingWindowCounter::new(limit, Duration::from_secs(60)).unwrap()
    }

    fn ok(c: &mut SlidingWindowCounter, w: u64, t: Nanos) -> bool {
        c.admit(w, t).unwrap().allowed
    }

    /// 10 per minute; 8 in the previous window, 5 in the current one.
    fn eight_then_five() -> SlidingWindowCounter {
        let mut c = minute(10);
        for i in 0..8 {
            assert!(ok(&mut c, 1, i * SECOND));
        }
        // At 60 s + 0: 8 × 1 + 0 + 1 = 9 ≤ 10, then 10: the 3rd is denied.
        assert!(ok(&mut c, 1, 60 * SECOND));
        assert!(ok(&mut c, 1, 60 * SECOND));
        assert!(!ok(&mut c, 1, 60 * SECOND)); // counted (Cloudflare)
                                              // 10 s in: 8 × 50/60 + 3 + 1 = 10.67 > 10: denied and counted.
        assert!(!ok(&mut c, 1, 70 * SECOND));
        assert!(!ok(&mut c, 1, 70 * SECOND));
        assert_eq!((c.prev, c.curr), (8, 5));
        c
    }

    #[test]
    fn the_hand_computed_case() {
        let mut c = eight_then_five();
        // 15 s into the window: 8 × 45/60 + 5 = 6 + 5 = 11 (> 10 already).
        assert_eq!(c.estimate(75 * SECOND), 11.0);
        assert!(!ok(&mut c, 1, 75 * SECOND)); // 12 > 10
                                              // 45 s in (the denial above was counted): 8 × 15/60 + 6 = 8.
        assert_eq!(c.estimate(105 * SECOND), 8.0);
        assert!(ok(&mut c, 1, 105 * SECOND)); // 2 + 6 + 1 = 9
        assert!(ok(&mut c, 1, 105 * SECOND)); // 2 + 7 + 1 = 10
        assert!(!ok(&mut c, 1, 105 * SECOND)); // 2 + 8 + 1 = 11
    }

    #[test]
    fn reaching_the_limit_exactly_is_within_it() {
        let mut c = minute(10);
        for i in 0..8 {
            assert!(ok(&mut c, 1, i * SECOND));
        }
        for _ in 0..4 {
            assert!(ok(&mut c, 1, 75 * SECOND)); // 6 + 0 + 1 up to 6 + 3 + 1 = 10
        }
        assert!(!ok(&mut c, 1, 75 * SECOND)); // 6 + 4 + 1 = 11
                                              // A weighted request is one decision, all or nothing.
        let mut d = minute(10).count_denied(false);
        assert!(!ok(&mut d, 11, 0));
        assert!(ok(&mut d, 10, 0)); // the denied 11 was not counted
    }

    #[test]
    fn the_posts_example() {
        let mut c = minute(50);
        assert!(ok(&mut c, 42, 59 * SECOND));
        for _ in 0..18 {
            assert!(ok(&mut c, 1, 75 * SECOND)); // 31.5 + 17 + 1 ≤ 50
        }
        assert_eq!(c.estimate(75 * SECOND), 49.5);
        assert!(!ok(&mut c, 1, 75 * SECOND)); // 50.5 > 50
    }

    #[test]
    fn count_denied_is_the_switch_between_counting_every_request_or_admitted_ones() {
        let run = |count_denied: bool| {
            let mut c = SlidingWindowCounter::new(2, Duration::from_secs(1))
                .unwrap()
                .count_denied(count_denied);
            let first: Vec<bool> = (0..3).map(|_| ok(&mut c, 1, 0)).collect();
            assert_eq!(first, [true, true, false]);
            // Half way into the next window: prev × 0.5 + 0 + 1.
            ok(&mut c, 1, SECOND + SECOND / 2)
        };
        assert!(!run(true)); // 3 × 0.5 + 1 = 2.5 > 2
        assert!(run(false)); // 2 × 0.5 + 1 = 2 ≤ 2
    }

    #[test]
    fn mitigation_lets_the_crossing_request_pass_then_blocks_without_counting() {
        let mut c = minute(3).mitigation(Duration::from_secs(30));
        for t in [0, 1, 2] {
            assert!(ok(&mut c, 1, t * SECOND));
        }
        // The fourth takes the rate to 4 > 3: it passes, and mitigates.
        assert!(ok(&mut c, 1, 3 * SECOND));
        // Blocked until 33 s, and not counted: the 29 blocked requests leave
        // the counts as they were.
        for t in 4..33 {
            assert!(!ok(&mut c, 1, t * SECOND));
        }
        assert_eq!(c.curr, 4);
        // At 33 s the mitigation is over; the window still holds 4 > 3,
        // so the next request passes and mitigates again (asynchronous).
        assert!(ok(&mut c, 1, 33 * SECOND));
        assert!(!ok(&mut c, 1, 34 * SECOND));
        // Without the switch the fourth request is denied at once.
        let mut s = minute(3);
        for t in [0, 1, 2] {
            assert!(ok(&mut s, 1, t * SECOND));
        }
        assert!(!ok(&mut s, 1, 3 * SECOND));
    }

    #[test]
    fn a_skipped_window_forgets_both_counts() {
        let mut c = minute(3);
        assert!(ok(&mut c, 3, 0));
        let mut d = c;
        assert!(!ok(&mut d, 1, 61 * SECOND)); // the next window: 3 × 59/60 + 1 > 3
        assert!(ok(&mut c, 3, 125 * SECOND)); // two windows later: nothing left
        assert_eq!((c.prev, c.curr), (0, 3));
    }

    #[test]
    fn bad_parameters_name_themselves() {
        let e = |r: Result<SlidingWindowCounter>| r.unwrap_err().to_string();
        assert!(e(SlidingWindowCounter::new(0, Duration::from_secs(1))).contains("limit 0"));
        assert!(e(SlidingWindowCounter::new(1, Duration::ZERO)).contains("interval 0s"));
    }
}
