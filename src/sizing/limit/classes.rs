//! The exact policy's verdict on a trace, computed once: which keys are
//! *compliant* (the exact sliding log never denies them: at most `limit` in
//! any `(t − interval, t]`) and which are *limited*, with their request
//! counts — the decision lab's classification (`render::harm`), request
//! lines counted, not weights.

use super::super::input::TimedTrace;
use crate::clock::{Nanos, MILLI};
use crate::oracle::limiters::SlidingLogLimiter;

/// The policy: at most `limit` per key per `interval_ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LimitPolicy {
    /// Requests per key per interval.
    pub limit: u64,
    /// Interval, ms.
    pub interval_ms: u64,
}

impl LimitPolicy {
    /// The interval, ns.
    pub fn interval_ns(&self) -> Nanos {
        self.interval_ms * MILLI
    }
}

/// Per-key classes and totals under the exact sliding log.
#[derive(Debug, Clone, Default)]
pub struct Classes {
    /// Request lines per key id.
    pub requests: Vec<u32>,
    /// Lines the exact sliding log denied, per key id.
    pub oracle_denied: Vec<u32>,
    /// Keys never denied by the exact limiter.
    pub compliant_keys: u64,
    /// Their request lines.
    pub compliant_requests: u64,
    /// Keys denied at least once.
    pub limited_keys: u64,
    /// Their request lines.
    pub limited_requests: u64,
    /// Lines of limited keys the exact limiter admitted.
    pub limited_oracle_admitted: u64,
}

impl Classes {
    /// Runs the exact sliding log over the trace.
    pub fn of(trace: &TimedTrace, policy: LimitPolicy) -> Classes {
        Self::of_keys(trace, policy, |_| true)
    }

    /// Runs the exact sliding log over the requests of the keys `mine`
    /// keeps (one shard's: a key's verdict depends on its own requests
    /// only); the others count as keys without requests.
    pub fn of_keys(trace: &TimedTrace, policy: LimitPolicy, mine: impl Fn(u32) -> bool) -> Classes {
        let keys = trace.names.len();
        let mut requests = vec![0u32; keys];
        let mut denied = vec![0u32; keys];
        let mut log = SlidingLogLimiter::new(policy.limit, policy.interval_ns());
        let owned: Vec<bool> = (0..keys as u32).map(mine).collect();
        for i in 0..trace.len() {
            let k = trace.key[i];
            if !owned[k as usize] {
                continue;
            }
            requests[k as usize] = requests[k as usize].saturating_add(1);
            if !log.allow(k, trace.w(i), trace.t[i]) {
                denied[k as usize] = denied[k as usize].saturating_add(1);
            }
        }
        Self::from_verdicts(requests, denied)
    }

    /// The classes of per-key request and denied counts (by key id).
    pub fn from_verdicts(requests: Vec<u32>, oracle_denied: Vec<u32>) -> Classes {
        let keys = requests.len().min(oracle_denied.len());
        let mut c = Classes {
            requests,
            oracle_denied,
            ..Classes::default()
        };
        for k in 0..keys {
            let (n, d) = (u64::from(c.requests[k]), u64::from(c.oracle_denied[k]));
            if n == 0 {
                continue;
            }
            if d == 0 {
                c.compliant_keys += 1;
                c.compliant_requests += n;
            } else {
                c.limited_keys += 1;
                c.limited_requests += n;
                c.limited_oracle_admitted += n - d;
            }
        }
        c
    }

    /// Whether key id `k` is compliant.
    #[inline]
    pub fn is_compliant(&self, k: u32) -> bool {
        self.oracle_denied[k as usize] == 0
    }
}
