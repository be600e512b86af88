//! Exact limiters used as decision oracles for the policy "at most `limit`
//! requests per key per `interval`".
//!
//! Both count **admitted** requests only: a denied request is not recorded,
//! which is what a real limiter enforces (a client over the limit still gets
//! `limit` requests per interval through). Keys are dense ids (`u32`); state
//! lives in vectors indexed by id that grow on demand.
//!
//! * [`SlidingLogLimiter`]: allow iff the key's admitted weight in
//!   `(t − interval, t]` plus this request's weight is at most `limit`. The
//!   primary oracle: it is what "L per interval" means to most readers.
//! * [`AlignedWindowLimiter`]: the same test over aligned windows
//!   `[k·interval, (k+1)·interval)` (multiples of the interval since time 0,
//!   i.e. since the Unix epoch for traces).

use crate::clock::Nanos;
use std::collections::VecDeque;

/// Exact sliding-log limiter over admitted requests.
#[derive(Debug, Clone)]
pub struct SlidingLogLimiter {
    interval: Nanos,
    limit: u64,
    /// Per key: admitted `(time, weight)` within the last interval, and their sum.
    logs: Vec<KeyLog>,
}

/// One key's log. Most keys of a big trace have at most one admitted
/// request in any interval: the oldest entry lives here, and only a key
/// with more has a heap buffer (a `VecDeque` per key was a heap block and
/// a second cache miss per request for every key, a tenth of a
/// one-candidate decision run).
#[derive(Debug, Clone, Default)]
struct KeyLog {
    /// Admitted weight in the log.
    sum: u64,
    /// The oldest entry, if the log has any.
    first: Option<(Nanos, u64)>,
    /// The entries after `first`, oldest first.
    rest: VecDeque<(Nanos, u64)>,
}

impl SlidingLogLimiter {
    /// A limiter admitting at most `limit` per key in any `(t − interval, t]`.
    pub fn new(limit: u64, interval: Nanos) -> Self {
        Self {
            interval: interval.max(1),
            limit,
            logs: Vec::new(),
        }
    }

    /// Admitted weight of `key` in `(now − interval, now]` (drops older entries).
    pub fn count(&mut self, key: u32, now: Nanos) -> u64 {
        let k = key as usize;
        if k >= self.logs.len() {
            return 0;
        }
        let log = &mut self.logs[k];
        while let Some((t, w)) = log.first {
            if t + self.interval <= now {
                log.first = log.rest.pop_front();
                log.sum -= w;
            } else {
                break;
            }
        }
        if log.rest.is_empty() && log.rest.capacity() > 64 {
            log.rest.shrink_to_fit();
        }
        log.sum
    }

    /// Decides a request of `weight` at `now` (times must not decrease).
    pub fn allow(&mut self, key: u32, weight: u64, now: Nanos) -> bool {
        let k = key as usize;
        if k >= self.logs.len() {
            self.logs.resize_with(k + 1, Default::default);
        }
        let c = self.count(key, now);
        if c.saturating_add(weight) > self.limit {
            return false;
        }
        let log = &mut self.logs[k];
        if log.first.is_none() {
            log.first = Some((now, weight));
        } else {
            log.rest.push_back((now, weight));
        }
        log.sum += weight;
        true
    }
}

/// Exact aligned fixed-window limiter over admitted requests.
#[derive(Debug, Clone)]
pub struct AlignedWindowLimiter {
    interval: Nanos,
    limit: u64,
    /// Per key: (window index + 1, admitted weight); 0 = never seen.
    windows: Vec<(u64, u64)>,
}

impl AlignedWindowLimiter {
    /// A limiter admitting at most `limit` per key in each aligned window.
    pub fn new(limit: u64, interval: Nanos) -> Self {
        Self {
            interval: interval.max(1),
            limit,
            windows: Vec::new(),
        }
    }

    /// Decides a request of `weight` at `now`.
    pub fn allow(&mut self, key: u32, weight: u64, now: Nanos) -> bool {
        let k = key as usize;
        if k >= self.windows.len() {
            self.windows.resize(k + 1, (0, 0));
        }
        let w = now / self.interval + 1;
        let slot = &mut self.windows[k];
        if slot.0 != w {
            *slot = (w, 0);
        }
        if slot.1.saturating_add(weight) > self.limit {
            return false;
        }
        slot.1 += weight;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::SECOND;

    #[test]
    fn sliding_log_exactly_limit_per_interval_is_never_denied() {
        let mut s = SlidingLogLimiter::new(10, SECOND);
        // 10 per second, evenly spaced, for 100 s: every one allowed.
        for i in 0..1000u64 {
            assert!(s.allow(0, 1, i * SECOND / 10), "request {i} denied");
        }
    }

    #[test]
    fn sliding_log_limit_plus_one_in_one_interval_denies_exactly_one() {
        let mut s = SlidingLogLimiter::new(10, SECOND);
        let denied = (0..11u64)
            .filter(|i| !s.allow(7, 1, i * SECOND / 20))
            .count();
        assert_eq!(denied, 1);
        // The window is (t − 1 s, t]: at exactly 1 s the first request leaves.
        assert!(s.allow(7, 1, SECOND));
        assert!(!s.allow(7, 1, SECOND));
    }

    #[test]
    fn sliding_log_counts_admitted_only() {
        let mut s = SlidingLogLimiter::new(2, SECOND);
        assert!(s.allow(0, 1, 0));
        assert!(s.allow(0, 1, 1));
        for i in 2..100 {
            assert!(!s.allow(0, 1, i));
        }
        // Denied requests left no trace: two more fit one interval later.
        assert!(s.allow(0, 1, SECOND));
        assert!(s.allow(0, 1, SECOND + 1));
        assert!(s.allow(1, 2, SECOND + 1));
        assert!(!s.allow(1, 1, SECOND + 2));
    }

    #[test]
    fn sliding_log_matches_a_plain_list_of_admissions() {
        // Keys with one entry at a time, keys with many, weights of 0 to 3:
        // the same decisions and counts as filtering a plain list.
        use rand::Rng;
        let mut rng = crate::rng::sim_rng(11);
        let (limit, interval) = (5u64, 1_000u64);
        let mut s = SlidingLogLimiter::new(limit, interval);
        let mut plain: Vec<Vec<(Nanos, u64)>> = vec![Vec::new(); 6];
        let mut now = 0;
        for _ in 0..20_000 {
            now += rng.random_range(0..200u64);
            let k = rng.random_range(0..6u32);
            let w = rng.random_range(0..4u64);
            let log = &mut plain[k as usize];
            log.retain(|&(t, _)| t + interval > now);
            let sum: u64 = log.iter().map(|e| e.1).sum();
            let want = sum + w <= limit;
            if want {
                log.push((now, w));
            }
            assert_eq!(s.allow(k, w, now), want, "key {k} at {now}");
            let k2 = rng.random_range(0..7u32);
            let left: u64 = plain.get(k2 as usize).map_or(0, |l| {
                l.iter().filter(|e| e.0 + interval > now).map(|e| e.1).sum()
            });
            assert_eq!(s.count(k2, now), left);
        }
    }

    #[test]
    fn aligned_window_resets_at_multiples() {
        let mut a = AlignedWindowLimiter::new(3, SECOND);
        let t = SECOND - 3;
        assert!(a.allow(0, 1, t) && a.allow(0, 1, t + 1) && a.allow(0, 1, t + 2));
        assert!(!a.allow(0, 1, t + 2));
        // The boundary lets a fresh burst through: 6 within 4 ns.
        assert!(a.allow(0, 3, SECOND));
        assert!(!a.allow(0, 1, SECOND + 1));
    }
}
