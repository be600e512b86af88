//! `periodic_sync`, Kong style: the rate-limiting plugin with
//! `policy = redis` and `sync_rate` > 0. Read from Kong/kong at 22246ef
//! (`kong/plugins/rate-limiting/policies/init.lua`, `handler.lua`).
//!
//! Per replica (one worker) three tables, keyed by the key and its
//! aligned window (`get_local_key`, init.lua:68-73, with the window start
//! of `timestamp.get_timestamps` taken from the request's arrival,
//! handler.lua:127): `cur_usage`, `cur_usage_expire_at`, `cur_delta`.
//! What the source does, step by step:
//!
//! * `usage` (init.lua:379-439): a key in `cur_usage` answers
//!   `cur_usage + cur_delta` without the store (387-389; the expiry test
//!   on 388 compares milliseconds with `ngx.time()` seconds and never
//!   fails). Otherwise one `EVAL` of `INCR` returns the store's value
//!   before the increment (407-415). The call *yields* the worker until
//!   the reply: requests that arrive during the round trip find no
//!   `cur_usage` either and each sends its own `INCR`. When a reply
//!   arrives the worker stores it in `cur_usage` and sets `cur_delta =
//!   -1` (430-436), overwriting whatever the delta was (an admission
//!   counted locally since an earlier reply is lost to the store): the
//!   `INCR` already counted this request.
//! * the handler (handler.lua:89-114, 194-201) denies when `limit -
//!   usage <= 0` and returns before `increment`; otherwise `increment`
//!   (handler.lua:208-209, init.lua:367-378, 287-299) adds 1 to
//!   `cur_delta` and calls `rate_limited_sync` (231-285), which starts a
//!   timer `sync_rate` seconds later unless one is pending: syncs follow
//!   the first unsynced admission, not a fixed grid. For a request that
//!   read the store all of this happens when the reply arrives, so its
//!   timer starts then.
//! * the timer waits while the previous sync of the plugin is still
//!   running (`plugin_sync_running`, 257-270), sleeping
//!   `ngx.sleep(redis.timeout / 2)`: the timeout is in milliseconds and
//!   `ngx.sleep` takes seconds, so with the default 2000 ms it sleeps
//!   1000 s (only reachable when a round trip outlasts `sync_rate`).
//! * the sync (`sync_to_redis`, 177-218) pipelines one `EVAL` (`EXISTS`,
//!   `INCRBY delta`, `EXPIREAT` when new) per key of `cur_delta`, waits for
//!   the reply, then clears all three tables (`clear_local_counter`, 217).
//!   Deltas added while the pipeline is in flight are wiped with the rest
//!   and never reach the store (`lose_in_flight`, on by default; off is a
//!   variant that clears only what it sent). A failed connection clears
//!   the tables too (182-187): those admissions are lost to the store.
//!
//! A store error in `usage` admits the request when `fault_tolerant`
//! (handler.lua:143-150, the default) and still increments the delta, at
//! once (an unreachable store refuses the connection; the model charges
//! no timeout). The store applies commands in the order they reach it
//! (half a round trip of the sender's link after they leave): a read's
//! value, and so its request's decision, is the store's when its `INCR`
//! gets there. At one instant: what reaches the store or a worker before
//! a request that arrives then; otherwise in the order they were sent.

use super::central::Counters;
use super::strategy::{admit_settled, Env, OwnTickets, Strategy};
use super::FastMap;
use crate::clock::{pop_due, Nanos, SECOND};
use crate::error::Result;
use crate::model::Decision;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// How long a timer sleeps when the previous sync still runs:
/// `ngx.sleep(2000 / 2)` seconds (init.lua:268, the default timeout).
const BLOCKED_SLEEP: Nanos = 1000 * SECOND;

/// One replica's tables.
#[derive(Debug, Default, Clone)]
struct Worker {
    usage: FastMap<(u32, u64), i64>,
    delta: FastMap<(u32, u64), i64>,
    /// `plugin_sync_pending`.
    pending: bool,
    /// `plugin_sync_running`.
    running: bool,
    /// Bumped on a restart: its old timers and replies are void.
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
    /// A read's reply arrives: (key, window, value before the INCR,
    /// admitted).
    Reply(u32, u64, i64, bool),
    /// A read's `INCR` reaches the store: (ticket, key, window, when the
    /// reply is back).
    Incr(u64, u32, u64, Nanos),
    /// A sync's `INCRBY` reaches the store: (key, window, delta).
    Write(u32, u64, i64),
}

/// A worker's timer or reply: (time, creation order, replica, epoch, what).
type Timer = Reverse<(Nanos, u64, usize, u32, Due)>;

/// Kong's periodic sync over a shared Redis.
pub struct KongSync {
    limit: u64,
    interval_s: u64,
    sync: Nanos,
    fail_open: bool,
    lose_in_flight: bool,
    workers: Vec<Worker>,
    /// (time, creation order, replica, epoch, what).
    timers: BinaryHeap<Timer>,
    seq: u64,
    pending: usize,
    resolved: Vec<(u64, bool)>,
    own_tickets: OwnTickets,
    store: Counters,
    /// The next worker's epoch (a replica added again must not inherit
    /// the timers of the one removed).
    epochs: u32,
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
            seq: 0,
            pending: 0,
            resolved: Vec::new(),
            own_tickets: OwnTickets::default(),
            store: Counters::default(),
            epochs: 0,
        }
    }

    fn at(&mut self, t: Nanos, r: usize, due: Due) {
        self.seq += 1;
        let epoch = self.workers[r].epoch;
        self.timers.push(Reverse((t, self.seq, r, epoch, due)));
    }

    /// Handles one timer, reply or store arrival.
    fn handle(&mut self, at: Nanos, r: usize, epoch: u32, due: Due, env: &mut Env) {
        match due {
            // What reaches the store is applied whatever became of its
            // sender.
            Due::Write(k, win, d) => {
                self.store.incr(k, win, d);
            }
            Due::Incr(ticket, k, win, reply) => {
                let prior = self.store.incr(k, win, 1) - 1;
                let allowed = self.limit as i64 - prior > 0;
                self.pending = self.pending.saturating_sub(1);
                self.resolved.push((ticket, allowed));
                if r < self.workers.len() && self.workers[r].epoch == epoch {
                    self.at(reply, r, Due::Reply(k, win, prior, allowed));
                }
            }
            _ if r >= self.workers.len() || self.workers[r].epoch != epoch => {}
            Due::Fire => self.fire(r, at, env),
            Due::Clear => self.clear(r),
            Due::Reply(k, win, prior, allowed) => self.reply(r, (k, win), prior, allowed, at),
        }
    }

    /// `increment` of an admitted request at `t`: the delta, and a timer
    /// unless one is pending.
    fn increment(&mut self, r: usize, kw: (u32, u64), t: Nanos) {
        let w = &mut self.workers[r];
        *w.delta.entry(kw).or_insert(0) += 1;
        w.peak = w.peak.max(w.usage.len() + w.delta.len());
        if !w.pending {
            w.pending = true;
            self.at(t + self.sync, r, Due::Fire);
        }
    }

    fn fire(&mut self, r: usize, t: Nanos, env: &mut Env) {
        if self.workers[r].running {
            // The previous sync still runs: sleep and look again.
            self.at(t + BLOCKED_SLEEP, r, Due::Fire);
            return;
        }
        let w = &mut self.workers[r];
        w.pending = false;
        if env.store_down || env.net.lost() {
            env.cost.failed += 1;
            w.usage.clear();
            w.delta.clear();
            return;
        }
        w.running = true;
        let rtt = env.net.rtt_for(r);
        env.cost.messages += 2;
        let mut sent: Vec<((u32, u64), i64)> = w.delta.iter().map(|(&k, &d)| (k, d)).collect();
        // Lua's `pairs` order does not matter to the store (INCRBY
        // commutes); sorted for a deterministic sequence.
        sent.sort_unstable();
        for &((k, win), d) in &sent {
            env.cost.store_ops += 3;
            self.at(t + rtt / 2, r, Due::Write(k, win, d));
        }
        self.workers[r].in_flight = sent;
        self.at(t + rtt, r, Due::Clear);
    }

    fn clear(&mut self, r: usize) {
        let w = &mut self.workers[r];
        w.running = false;
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

    /// A read's reply at `t`: `cur_usage`, `cur_delta = -1`, then the
    /// handler's increment when admitted.
    fn reply(&mut self, r: usize, kw: (u32, u64), prior: i64, allowed: bool, t: Nanos) {
        let w = &mut self.workers[r];
        w.usage.insert(kw, prior);
        w.delta.insert(kw, -1);
        w.peak = w.peak.max(w.usage.len() + w.delta.len());
        if allowed {
            self.increment(r, kw, t);
        }
    }
}

impl Strategy for KongSync {
    fn advance(&mut self, t: Nanos, env: &mut Env) -> Result<()> {
        while let Some((at, _, r, epoch, due)) = pop_due(&mut self.timers, |e| e.0 <= t) {
            self.handle(at, r, epoch, due, env);
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
        _w: u64,
        t: Nanos,
        env: &mut Env,
        ticket: u64,
    ) -> Result<Option<Decision>> {
        let kw = (key, (env.unix_ns(t) / SECOND) / self.interval_s);
        if let Some(&u) = self.workers[r].usage.get(&kw) {
            let usage = u + self.workers[r].delta.get(&kw).copied().unwrap_or(0);
            let allowed = self.limit as i64 - usage > 0;
            if allowed {
                self.increment(r, kw, t);
            }
            return Ok(Some(Decision::from_allowed(allowed)));
        }
        match env.round_trip_for(r, 2) {
            Some(rtt) => {
                // The INCR reaches the store half a round trip later (its
                // answer decides); the worker resumes with it a round trip
                // later.
                self.pending += 1;
                self.at(t + rtt / 2, r, Due::Incr(ticket, kw.0, kw.1, t + rtt));
                Ok(None)
            }
            None => {
                if self.fail_open {
                    self.increment(r, kw, t);
                }
                Ok(Some(Decision::from_allowed(self.fail_open)))
            }
        }
    }

    fn resolved(&mut self, out: &mut Vec<(u64, bool)>) {
        out.append(&mut self.resolved);
    }

    fn settle(&mut self, env: &mut Env) -> Result<()> {
        while self.pending > 0 {
            let Some(Reverse((at, _, r, epoch, due))) = self.timers.pop() else {
                break;
            };
            self.handle(at, r, epoch, due, env);
        }
        Ok(())
    }

    fn resize(&mut self, n: usize, _t: Nanos) -> Result<()> {
        // A replica shut down: its timers run premature and return without
        // syncing (init.lua:244-248), so its deltas are lost.
        self.workers.truncate(n);
        while self.workers.len() < n {
            self.epochs += 1;
            self.workers.push(Worker {
                epoch: self.epochs,
                ..Worker::default()
            });
        }
        Ok(())
    }

    fn restart(&mut self, r: usize, _t: Nanos) -> Result<()> {
        self.epochs += 1;
        self.workers[r] = Worker {
            epoch: self.epochs,
            ..Worker::default()
        };
        Ok(())
    }

    fn memory_bytes(&self, r: usize, _keys: u64) -> u64 {
        // Three Lua table slots per key (~100 bytes with the key string).
        self.workers.get(r).map_or(0, |w| w.peak as u64 * 100)
    }
}
