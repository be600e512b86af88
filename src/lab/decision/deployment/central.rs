//! `central`: every decision through a shared store on the virtual
//! network.
//!
//! * `envoy_ratelimit`: envoyproxy/ratelimit's Redis fixed window
//!   (`src/redis/fixed_cache_impl.go`, `DoLimit`). The cache key ends in
//!   `(now / divider) * divider` with `now` the service's Unix seconds
//!   (`src/limiter/cache_key.go:81-82`): windows aligned to the interval.
//!   Each request is one pipeline `INCRBY key hits` + `EXPIRE key divider`
//!   (`pipelineAppend`, fixed_cache_impl.go:36-37), over the limit when the
//!   value after the increment exceeds it (`IsOverLimitThresholdReached`,
//!   `src/limiter/base_limiter.go:76-79`): denied requests are counted
//!   too. With the local cache (`LOCAL_CACHE_SIZE_IN_BYTES` > 0, off by
//!   default) a key found over the limit is remembered by the replica that
//!   saw it (`localCache.Set`, base_limiter.go:119) and its later requests
//!   in that window are denied without a store trip
//!   (`IsOverLimitWithLocalCache`, fixed_cache_impl.go:103); the entry
//!   exists from the reply's arrival. `stop_increment_when_over_limit`
//!   (`STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT`) adds a `GET` round trip
//!   first; with one descriptor `getHitsAddend` (fixed_cache_impl.go:44-72)
//!   still increments a key that would go over ("near limit"), so only the
//!   cost changes — a quirk kept as the source has it.
//! * `kong_redis`: Kong's rate-limiting plugin, `policy = redis`,
//!   `sync_rate = -1` (`kong/plugins/rate-limiting/policies/init.lua`,
//!   `redis.usage`: one `EVAL` of `INCR` (+ `EXPIRE` on the first) that
//!   returns the value before the increment, lines 406-414; the handler
//!   stops when `limit - usage <= 0`, handler.lua:108). Windows are
//!   aligned (`timestamp.get_timestamps`), every request counts, weight 1.
//!
//! The store applies requests in the order the replicas send them (exact
//! for a fixed latency; with a random one, two requests whose round trips
//! cross are applied in send order). An unreachable store (an outage, a
//! lost message) decides by the failure mode: Envoy's
//! `failure_mode_deny` (default false: admit), Kong's `fault_tolerant`
//! (default true: admit).

use super::strategy::{Env, Strategy};
use crate::clock::{Nanos, SECOND};
use crate::error::Result;
use crate::model::Decision;
use std::collections::HashMap;

/// Which store protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Store {
    /// envoyproxy/ratelimit's Redis fixed window.
    EnvoyRatelimit,
    /// Kong rate-limiting, redis policy, `sync_rate = -1`.
    KongRedis,
}

/// Counters of a Redis shared by the fleet: `(key, window) -> value`, old
/// windows dropped as they expire.
#[derive(Debug, Default)]
pub struct Counters {
    map: HashMap<(u32, u64), i64>,
    newest: u64,
}

impl Counters {
    /// Adds `by` to `(key, window)` and returns the value after.
    pub fn incr(&mut self, key: u32, window: u64, by: i64) -> i64 {
        if window > self.newest {
            self.newest = window;
            // EXPIRE: a window's key lives one interval past its start.
            let keep = window.saturating_sub(1);
            self.map.retain(|&(_, w), _| w >= keep);
        }
        let v = self.map.entry((key, window)).or_insert(0);
        *v += by;
        *v
    }
    /// Keys alive.
    pub fn len(&self) -> usize {
        self.map.len()
    }
    /// No keys alive.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

/// A central store strategy.
pub struct Central {
    store: Store,
    limit: u64,
    divider_s: u64,
    counters: Counters,
    local_cache: bool,
    stop_increment: bool,
    fail_open: bool,
    /// Per replica: key -> (window, the cache entry's arrival).
    cache: Vec<HashMap<u32, (u64, Nanos)>>,
    peak_cache: Vec<usize>,
}

impl Central {
    /// `n` replicas in front of one store; `interval` is the policy's (a
    /// whole number of seconds: the store's windows are Unix seconds).
    pub fn new(
        store: Store,
        n: usize,
        limit: u64,
        interval: Nanos,
        local_cache: bool,
        stop_increment: bool,
        fail_open: bool,
    ) -> Self {
        Self {
            store,
            limit,
            divider_s: (interval / SECOND).max(1),
            counters: Counters::default(),
            local_cache,
            stop_increment,
            fail_open,
            cache: vec![HashMap::new(); n],
            peak_cache: vec![0; n],
        }
    }
}

impl Strategy for Central {
    fn admit(&mut self, r: usize, key: u32, w: u64, t: Nanos, env: &mut Env) -> Result<Decision> {
        let window = (t / SECOND) / self.divider_s;
        match self.store {
            Store::EnvoyRatelimit => {
                if self.local_cache {
                    if let Some(&(win, at)) = self.cache[r].get(&key) {
                        if win == window && at <= t {
                            return Ok(Decision::DENY);
                        }
                    }
                }
                let mut rtt = 0;
                if self.stop_increment {
                    // The GET pipeline first.
                    match env.round_trip(1) {
                        Some(x) => rtt += x,
                        None => return Ok(Decision::from_allowed(self.fail_open)),
                    }
                }
                match env.round_trip(2) {
                    Some(x) => rtt += x,
                    None => return Ok(Decision::from_allowed(self.fail_open)),
                }
                let after = self.counters.incr(key, window, w as i64);
                let over = after > self.limit as i64;
                if over && self.local_cache {
                    let e = self.cache[r].entry(key).or_insert((window, t + rtt));
                    if e.0 != window {
                        *e = (window, t + rtt);
                    }
                    self.peak_cache[r] = self.peak_cache[r].max(self.cache[r].len());
                }
                Ok(Decision::from_allowed(!over))
            }
            Store::KongRedis => {
                if env.round_trip(2).is_none() {
                    return Ok(Decision::from_allowed(self.fail_open));
                }
                let prior = self.counters.incr(key, window, 1) - 1;
                Ok(Decision::from_allowed(self.limit as i64 - prior > 0))
            }
        }
    }

    fn resize(&mut self, n: usize, _t: Nanos) -> Result<()> {
        self.cache.resize_with(n, HashMap::new);
        self.peak_cache.resize(n, 0);
        Ok(())
    }

    fn restart(&mut self, r: usize, _t: Nanos) -> Result<()> {
        self.cache[r].clear();
        Ok(())
    }

    fn memory_bytes(&self, r: usize, _keys: u64) -> u64 {
        // A freecache entry: the key (~40 bytes) and a 24-byte header.
        self.peak_cache.get(r).map_or(0, |&c| c as u64 * 64)
    }
}
