//! The exact policy's verdict on a trace, computed once: which keys are
//! *compliant* (the exact sliding log never denies them: at most `limit` in
//! any `(t − interval, t]`) and which are *limited*, with their request
//! counts — the decision lab's classification (`render::harm`), request
//! lines counted, not weights.

use super::super::input::TimedTrace;
use crate::clock::{Nanos, MILLI};
use crate::error::{Error, Result};
use crate::lab::shard::part::Shard;
use crate::oracle::limiters::SlidingLogLimiter;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::PathBuf;

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

/// One shard's exact verdicts (`size --limit --shard i/n`): the keys it
/// owns ([`crate::lab::shard::part::key_shard`]), their request lines and the
/// lines the exact sliding log denied, and the lines of the whole trace.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClassesPart {
    /// Request lines of the whole trace, whatever their key.
    pub lines: u64,
    /// The shard's keys.
    pub names: Vec<String>,
    /// Their request lines.
    pub requests: Vec<u32>,
    /// Their lines the exact sliding log denied.
    pub oracle_denied: Vec<u32>,
}

impl ClassesPart {
    /// Shard `shard`'s part of `trace`: its keys' verdicts, the others'
    /// never computed.
    pub fn of(trace: &TimedTrace, policy: LimitPolicy, shard: Shard) -> ClassesPart {
        let c = Classes::of_keys(trace, policy, |k| shard.owns_key(&trace.names[k as usize]));
        let ids: Vec<usize> = (0..c.requests.len())
            .filter(|&k| c.requests[k] > 0)
            .collect();
        ClassesPart {
            lines: trace.len() as u64,
            names: ids.iter().map(|&k| trace.names[k].clone()).collect(),
            requests: ids.iter().map(|&k| c.requests[k]).collect(),
            oracle_denied: ids.iter().map(|&k| c.oracle_denied[k]).collect(),
        }
    }
}

impl Classes {
    /// The classes of `trace` from its shards' verdicts, checked against
    /// the trace: every key on the shard its hash names, once, with the
    /// trace's request lines (an error names the shard file).
    pub fn of_shards(
        trace: &TimedTrace,
        parts: &[(PathBuf, Shard, ClassesPart)],
    ) -> Result<Classes> {
        let ids: HashMap<&str, u32> = trace
            .names
            .iter()
            .enumerate()
            .map(|(i, n)| (n.as_str(), i as u32))
            .collect();
        let keys = trace.names.len();
        let mut lines = vec![0u32; keys];
        for &k in &trace.key {
            lines[k as usize] = lines[k as usize].saturating_add(1);
        }
        let mut requests = vec![0u32; keys];
        let mut denied = vec![0u32; keys];
        let mut from: Vec<Option<usize>> = vec![None; keys];
        for (pi, (path, shard, part)) in parts.iter().enumerate() {
            let bad = |what: String| Error::input_at(path, "field size", what);
            if part.lines != trace.len() as u64 {
                return Err(bad(format!(
                    "{} request lines; the trace has {}: a shard of another trace",
                    part.lines,
                    trace.len()
                )));
            }
            let n = part.names.len();
            if part.requests.len() != n || part.oracle_denied.len() != n {
                return Err(bad("columns of different lengths".into()));
            }
            for i in 0..n {
                let name = &part.names[i];
                let Some(&k) = ids.get(name.as_str()) else {
                    return Err(bad(format!("key {name:?} is not in the trace")));
                };
                let k = k as usize;
                if !shard.owns_key(name) {
                    return Err(bad(format!(
                        "key {name:?} belongs to shard {} of {}, not {}",
                        crate::lab::shard::part::key_shard(name, shard.count),
                        shard.count,
                        shard.index
                    )));
                }
                if from[k].replace(pi).is_some() {
                    return Err(bad(format!("key {name:?} given twice")));
                }
                if part.requests[i] != lines[k] || part.oracle_denied[i] > part.requests[i] {
                    return Err(bad(format!(
                        "key {name:?}: {} requests, {} denied; the trace has {} requests",
                        part.requests[i], part.oracle_denied[i], lines[k]
                    )));
                }
                requests[k] = part.requests[i];
                denied[k] = part.oracle_denied[i];
            }
        }
        if let Some(k) = (0..keys).find(|&k| from[k].is_none() && lines[k] > 0) {
            return Err(Error::input(format!(
                "key {:?} of the trace is in no shard (of {})",
                trace.names[k],
                parts.first().map_or(0, |p| p.1.count)
            )));
        }
        Ok(Classes::from_verdicts(requests, denied))
    }
}
