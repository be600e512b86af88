//! `periodic_sync`, Kong style: the rate-limiting plugin with
//! `policy = redis` and `sync_rate` > 0
//! (`kong/plugins/rate-limiting/policies/init.lua` and `handler.lua`).
//!
//! Per replica (one worker) three tables, keyed by the key and its
//! aligned window (`get_local_key`): `cur_usage`, `cur_usage_expire_at`,
//! `cur_delta`. What the source does, step by step:
//!
//! * `usage` (init.lua:383-437): a key in `cur_usage` answers
//!   `cur_usage + cur_delta` without the store (line 389). Otherwise one
//!   `EVAL` of `INCR` returns the store's value before the increment
//!   (406-414); the replica caches it and sets `cur_delta = -1` (431-435):
//!   the `INCR` already counted this request in the store, and the
//!   increment that follows an admission brings the delta back to 0.
//! * the handler (handler.lua:108, 194) denies when `limit - usage <= 0`
//!   and returns before `increment`: a denied request that read the store
//!   leaves `cur_delta = -1`, so the next sync takes its `INCR` back.
//! * `increment` (init.lua:367-378, 287-297) adds 1 to `cur_delta` and
//!   starts a timer `sync_rate` seconds later unless one is pending
//!   (`rate_limited_sync`, 231-243): syncs follow the first unsynced
//!   admission, not a fixed grid.
//! * the sync (`sync_to_redis`, 176-217) pipelines one `EVAL` (`EXISTS`,
//!   `INCRBY delta`, `EXPIREAT` when new) per key of `cur_delta`, waits for
//!   the reply, then clears all three tables (`clear_local_counter`, 217).
//!   Deltas added while the pipeline is in flight are wiped with the rest
//!   and never reach the store (`lose_in_flight`, on by default; off is a
//!   variant that clears only what it sent). A failed connection clears
//!   the tables too (185): those admissions are lost to the store.
//!
//! A store error in `usage` admits the request when `fault_tolerant`
//! (handler.lua:143-150, the default) and still increments the delta.

use super::central::Counters;
use super::strategy::{Env, Strategy};
use super::FastMap;
use crate::clock::{Nanos, SECOND};
use crate::error::Result;
use crate::model::Decision;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// One replica's tables.
#[derive(Debug, Default, Clone)]
struct Worker {
    usage: FastMap<(u32, u64), i64>,
    delta: FastMap<(u32, u64), i64>,
    pending: bool,
    /// Bumped on a restart: its old timers are void.
    epoch: u32,
    /// Deltas sent by the sync in flight (for `lose_in_flight = false`).
    in_flight: Vec<((u32, u64), i64)>,
    peak: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Due {
    /// A sync timer fires.
    Fire,
    /// A sync's reply arrives: the tables are cleared.
    Clear,
}

/// A sync's write on its way to the store: (arrival, sequence, key,
/// window, delta).
type Write = Reverse<(Nanos, u64, u32, u64, i64)>;

/// Kong's periodic sync over a shared Redis.
pub struct KongSync {
    limit: u64,
    interval_s: u64,
    sync: Nanos,
    fail_open: bool,
    lose_in_flight: bool,
    workers: Vec<Worker>,
    timers: BinaryHeap<Reverse<(Nanos, Due, usize, u32)>>,
    /// Writes on their way to the store: (arrival, seq, key, window, delta).
    writes: BinaryHeap<Write>,
    seq: u64,
    store: Counters,
}

impl KongSync {
    /// `n` replicas syncing every `sync` ns.
    pub fn new(
        n: usize,
        limit: u64,
        interval: Nanos,
        sync: Nanos,
        fail_open: bool,
        lose_in_flight: bool,
    ) -> Self {
        Self {
            limit,
            interval_s: (interval / SECOND).max(1),
            sync,
            fail_open,
            lose_in_flight,
            workers: vec![Worker::default(); n],
            timers: BinaryHeap::new(),
            writes: BinaryHeap::new(),
            seq: 0,
            store: Counters::default(),
        }
    }

    /// Applies the writes that reached the store by `s`.
    fn deliver(&mut self, s: Nanos) {
        while let Some(&Reverse((at, _, k, win, d))) = self.writes.peek() {
            if at > s {
                break;
            }
            self.writes.pop();
            self.store.incr(k, win, d);
        }
    }

    fn fire(&mut self, r: usize, t: Nanos, env: &mut Env) {
        let w = &mut self.workers[r];
        w.pending = false;
        if env.store_down || env.net.lost() {
            env.cost.failed += 1;
            w.usage.clear();
            w.delta.clear();
            return;
        }
        let rtt = env.net.rtt();
        env.cost.messages += 2;
        let mut sent: Vec<((u32, u64), i64)> = w.delta.iter().map(|(&k, &d)| (k, d)).collect();
        // Lua's `pairs` order does not matter to the store (INCRBY
        // commutes); sorted for a deterministic sequence.
        sent.sort_unstable();
        for &((k, win), d) in &sent {
            env.cost.store_ops += 3;
            self.seq += 1;
            self.writes
                .push(Reverse((t + rtt / 2, self.seq, k, win, d)));
        }
        w.in_flight = sent;
        let epoch = w.epoch;
        self.timers.push(Reverse((t + rtt, Due::Clear, r, epoch)));
    }

    fn clear(&mut self, r: usize) {
        let w = &mut self.workers[r];
        w.usage.clear();
        if self.lose_in_flight {
            w.delta.clear();
        } else {
            for (k, d) in std::mem::take(&mut w.in_flight) {
                if let Some(x) = w.delta.get_mut(&k) {
                    *x -= d;
                    if *x == 0 {
                        w.delta.remove(&k);
                    }
                }
            }
        }
        w.in_flight.clear();
    }
}

impl Strategy for KongSync {
    fn advance(&mut self, t: Nanos, env: &mut Env) -> Result<()> {
        while let Some(&Reverse((at, due, r, epoch))) = self.timers.peek() {
            if at > t {
                break;
            }
            self.timers.pop();
            if r >= self.workers.len() || self.workers[r].epoch != epoch {
                continue;
            }
            match due {
                Due::Fire => self.fire(r, at, env),
                Due::Clear => self.clear(r),
            }
        }
        Ok(())
    }

    fn admit(&mut self, r: usize, key: u32, _w: u64, t: Nanos, env: &mut Env) -> Result<Decision> {
        let kw = (key, (t / SECOND) / self.interval_s);
        let usage: Option<i64> = match self.workers[r].usage.get(&kw) {
            Some(&u) => Some(u + self.workers[r].delta.get(&kw).copied().unwrap_or(0)),
            None => match env.round_trip(2) {
                Some(rtt) => {
                    self.deliver(t + rtt / 2);
                    let prior = self.store.incr(kw.0, kw.1, 1) - 1;
                    let w = &mut self.workers[r];
                    w.usage.insert(kw, prior);
                    w.delta.insert(kw, -1);
                    Some(prior)
                }
                None => None,
            },
        };
        let allowed = match usage {
            Some(u) => self.limit as i64 - u > 0,
            None => self.fail_open,
        };
        if allowed {
            let sync = self.sync;
            let w = &mut self.workers[r];
            *w.delta.entry(kw).or_insert(0) += 1;
            w.peak = w.peak.max(w.usage.len() + w.delta.len());
            if !w.pending {
                w.pending = true;
                let epoch = w.epoch;
                self.timers.push(Reverse((t + sync, Due::Fire, r, epoch)));
            }
        }
        Ok(Decision::from_allowed(allowed))
    }

    fn resize(&mut self, n: usize, _t: Nanos) -> Result<()> {
        // A replica shut down: its timers run premature and return without
        // syncing (init.lua:244-248), so its deltas are lost.
        self.workers.resize_with(n, Worker::default);
        Ok(())
    }

    fn restart(&mut self, r: usize, _t: Nanos) -> Result<()> {
        let epoch = self.workers[r].epoch.wrapping_add(1);
        self.workers[r] = Worker {
            epoch,
            ..Worker::default()
        };
        Ok(())
    }

    fn memory_bytes(&self, r: usize, _keys: u64) -> u64 {
        // Three Lua table slots per key (~100 bytes with the key string).
        self.workers.get(r).map_or(0, |w| w.peak as u64 * 100)
    }
}
