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
//! * `redis_gcra`: the GCRA Lua script of go-redis/redis_rate (v10,
//!   `lua.go:7-65`, from rwz/redis-gcra), as `AllowN` runs it
//!   (`rate.go:95-127`: arguments burst, rate, period in seconds, cost).
//!   In double arithmetic, as Lua has it: `emission_interval = period /
//!   rate`, `increment = emission_interval * cost`, `burst_offset =
//!   emission_interval * burst` (lua.go:17-19); `now` is Redis `TIME` as
//!   seconds since 2017-01-01 plus microseconds / 1e6 (28-30); the stored
//!   TAT (absent: now) is raised to now (32-40); `new_tat = tat +
//!   increment`, `remaining = (now - (new_tat - burst_offset)) /
//!   emission_interval`, denied when negative without writing anything
//!   (42-57); admitted, `SET key new_tat EX ceil(new_tat - now)` (59-62).
//!   The burst defaults to the limit, as `PerSecond`/`PerMinute` set it
//!   (rate.go:51-57). The virtual clock's zero is 2026-01-01 00:00 UTC for
//!   `TIME`, so the doubles round as they would today. Redis stores the
//!   TAT exactly (a Lua number argument is written with all its digits).
//!   A quirk the doubles bring, kept: at today's `TIME` (2.8e8 s after
//!   2017) a full burst at one instant loses its last request (burst 10:
//!   the tenth sees `diff = -2.4e-7` and is denied), as the script's own
//!   comment on the precision of `now` foresees.
//!
//! The store applies commands in the order they reach it (half a round
//! trip of the sender's link after the request, after the `GET` round
//! trip with `stop_increment_when_over_limit`), and the request's
//! decision is the store's answer then: a nearer replica's later request
//! can be counted first. A command reaching the store at the instant a
//! request arrives at a replica is applied first; two at one instant in
//! send order. An unreachable store (an outage, a
//! lost message) decides by the failure mode: Envoy's
//! `failure_mode_deny` (default false: admit), Kong's `fault_tolerant`
//! (default true: admit).

use super::strategy::{admit_settled, Env, OwnTickets, Strategy};
use super::FastMap;
use crate::clock::{pop_due, Nanos, MILLI, SECOND};
use crate::error::Result;
use crate::model::Decision;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Which store protocol (a `central` entry's `store`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Store {
    /// envoyproxy/ratelimit's Redis fixed window.
    #[default]
    EnvoyRatelimit,
    /// Kong rate-limiting, redis policy, `sync_rate = -1`.
    KongRedis,
    /// go-redis/redis_rate's GCRA script.
    RedisGcra,
}

/// Unix seconds of the virtual clock's zero for Redis `TIME`
/// (2026-01-01 00:00:00 UTC).
pub const TIME_ZERO_UNIX_S: u64 = 1_767_225_600;

/// redis_rate's epoch for `TIME` (`jan_1_2017`, lua.go:28).
const JAN_1_2017: u64 = 1_483_228_800;

/// One `allowN` call of redis_rate's script on a key's stored `(tat,
/// expiry ms)` at store time `at_unix_ns` (Unix ns, what `TIME` reads):
/// whether it is allowed, and the new stored value when it writes.
///
/// # Examples
/// ```
/// use ratelab::fleet::{gcra_allow_n, TIME_ZERO_UNIX_S};
/// // 10 per second, burst 10, eleven requests at one instant: nine pass.
/// // The script's doubles at 2026's TIME (2.8e8 s since 2017) round the
/// // tenth's `now - allow_at` to -2.4e-7 instead of 0.
/// let mut stored = None;
/// let ok = (0..11)
///     .filter(|_| {
///         let at = TIME_ZERO_UNIX_S * 1_000_000_000 + 5_000_000;
///         let (ok, new) = gcra_allow_n(stored, 10, 10, 1.0, 1, at);
///         stored = new.or(stored);
///         ok
///     })
///     .count();
/// assert_eq!(ok, 9);
/// ```
pub fn gcra_allow_n(
    stored: Option<(f64, u64)>,
    burst: u64,
    rate: u64,
    period_s: f64,
    cost: u64,
    at_unix_ns: u64,
) -> (bool, Option<(f64, u64)>) {
    let emission_interval = period_s / rate as f64;
    let increment = emission_interval * cost as f64;
    let burst_offset = emission_interval * burst as f64;
    let us = at_unix_ns / 1000;
    let secs = us / 1_000_000;
    let now = secs as f64 - JAN_1_2017 as f64 + (us % 1_000_000) as f64 / 1_000_000.0;
    let now_ms = at_unix_ns / MILLI;
    let tat = match stored {
        // Redis drops the key when now > its expiry.
        Some((tat, exp_ms)) if now_ms <= exp_ms => tat,
        _ => now,
    };
    let tat = tat.max(now);
    let new_tat = tat + increment;
    let allow_at = new_tat - burst_offset;
    let diff = now - allow_at;
    let remaining = diff / emission_interval;
    if remaining < 0.0 {
        return (false, None);
    }
    let reset_after = new_tat - now;
    if reset_after > 0.0 {
        let ex_s = libm::ceil(reset_after) as u64;
        return (true, Some((new_tat, now_ms + ex_s * 1000)));
    }
    (true, None)
}

/// Counters of a Redis shared by the fleet: `(key, window) -> value`, old
/// windows dropped as they expire.
#[derive(Debug, Default)]
pub struct Counters {
    map: FastMap<(u32, u64), i64>,
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

/// What reaches the store or a replica at a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    /// A request's command reaches the store: (ticket, replica, key,
    /// weight, window, when its reply is back).
    Command(u64, usize, u32, u64, u64, Nanos),
    /// envoy_ratelimit's local cache learns a key is over: (replica, key,
    /// window).
    Over(usize, u32, u64),
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
    cache: Vec<FastMap<u32, (u64, Nanos)>>,
    peak_cache: Vec<usize>,
    /// redis_gcra: the burst, and each key's stored (TAT, expiry ms).
    burst: u64,
    tats: FastMap<u32, (f64, u64)>,
    /// Commands on their way, in the order they reach the store: (time,
    /// sequence, what).
    events: BinaryHeap<Reverse<(Nanos, u64, Ev)>>,
    seq: u64,
    pending: usize,
    resolved: Vec<(u64, bool)>,
    own_tickets: OwnTickets,
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
            cache: vec![FastMap::default(); n],
            peak_cache: vec![0; n],
            burst: limit,
            tats: FastMap::default(),
            events: BinaryHeap::new(),
            seq: 0,
            pending: 0,
            resolved: Vec::new(),
            own_tickets: OwnTickets::default(),
        }
    }

    /// redis_gcra's burst (default: the limit).
    pub fn with_burst(mut self, burst: u64) -> Self {
        self.burst = burst;
        self
    }

    fn at(&mut self, t: Nanos, ev: Ev) {
        self.seq += 1;
        self.events.push(Reverse((t, self.seq, ev)));
    }

    /// A command reaches the store at `at`: the store's answer decides
    /// the request.
    fn command(&mut self, at: Nanos, ev: Ev, env: &mut Env) {
        match ev {
            Ev::Over(r, key, window) => {
                if let Some(c) = self.cache.get_mut(r) {
                    let e = c.entry(key).or_insert((window, at));
                    if e.0 != window {
                        *e = (window, at);
                    }
                    self.peak_cache[r] = self.peak_cache[r].max(c.len());
                }
            }
            Ev::Command(ticket, r, key, w, window, reply) => {
                let ok = match self.store {
                    Store::EnvoyRatelimit => {
                        let after = self.counters.incr(key, window, w as i64);
                        let over = after > self.limit as i64;
                        if over && self.local_cache {
                            // The entry exists from the reply's arrival.
                            self.at(reply, Ev::Over(r, key, window));
                        }
                        !over
                    }
                    Store::RedisGcra => {
                        let stored = self.tats.get(&key).copied();
                        let period_s = self.divider_s as f64;
                        let (ok, new) = gcra_allow_n(
                            stored,
                            self.burst,
                            self.limit,
                            period_s,
                            w,
                            env.unix_ns(at),
                        );
                        if let Some(v) = new {
                            // TIME, GET and the SET.
                            env.cost.store_ops += 1;
                            self.tats.insert(key, v);
                        }
                        ok
                    }
                    Store::KongRedis => {
                        let prior = self.counters.incr(key, window, 1) - 1;
                        self.limit as i64 - prior > 0
                    }
                };
                self.pending = self.pending.saturating_sub(1);
                self.resolved.push((ticket, ok));
            }
        }
    }
}

impl Strategy for Central {
    fn advance(&mut self, t: Nanos, env: &mut Env) -> Result<()> {
        while let Some((at, _, ev)) = pop_due(&mut self.events, |e| e.0 <= t) {
            self.command(at, ev, env);
        }
        Ok(())
    }

    fn admit(&mut self, r: usize, key: u32, w: u64, t: Nanos, env: &mut Env) -> Result<Decision> {
        let ticket = self.own_tickets.next();
        admit_settled(self, r, key, w, t, env, ticket)
    }

    fn admit_ticket(
        &mut self,
        r: usize,
        key: u32,
        w: u64,
        t: Nanos,
        env: &mut Env,
        ticket: u64,
    ) -> Result<Option<Decision>> {
        // The cache key's window: Unix seconds of the request
        // (cache_key.go:81-82, Kong's `get_timestamps`).
        let window = (env.unix_ns(t) / SECOND) / self.divider_s;
        let fail = Some(Decision::from_allowed(self.fail_open));
        let mut before = 0;
        match self.store {
            Store::EnvoyRatelimit => {
                if self.local_cache
                    && let Some(&(win, at)) = self.cache[r].get(&key)
                    && win == window
                    && at <= t
                {
                    return Ok(Some(Decision::DENY));
                }
                if self.stop_increment {
                    // The GET pipeline first.
                    match env.round_trip_for(r, 1) {
                        Some(x) => before = x,
                        None => return Ok(fail),
                    }
                }
            }
            Store::RedisGcra | Store::KongRedis => {}
        }
        let Some(rtt) = env.round_trip_for(r, 2) else {
            return Ok(fail);
        };
        let sent = t + before;
        self.pending += 1;
        self.at(
            sent + rtt / 2,
            Ev::Command(ticket, r, key, w, window, sent + rtt),
        );
        Ok(None)
    }

    fn resolved(&mut self, out: &mut Vec<(u64, bool)>) {
        out.append(&mut self.resolved);
    }

    fn settle(&mut self, env: &mut Env) -> Result<()> {
        while self.pending > 0 {
            let Some(Reverse((at, _, ev))) = self.events.pop() else {
                break;
            };
            self.command(at, ev, env);
        }
        Ok(())
    }

    fn resize(&mut self, n: usize, _t: Nanos) -> Result<()> {
        self.cache.resize_with(n, FastMap::default);
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
