//! `periodic_sync`, APISIX style: the `limit-count` plugin with a Redis
//! policy and `sync_interval` set (delayed sync). Read from apache/apisix
//! at f519a0f (`apisix/plugins/limit-count/delayed-syncer.lua`, `util.lua`,
//! `limit-count-redis.lua`, `limit-count-local.lua`, `init.lua`).
//!
//! One replica is one nginx instance; its shared dict holds, per key, a
//! `local_delta` (admissions not yet written to Redis) and a
//! `remote_quota` (`remaining`, `reset`, `sync_at`: what Redis said last),
//! plus one queue of keys to sync and one sync timer for the plugin
//! instance. What the source does with a request (`_delayed_sync`,
//! delayed-syncer.lua:166-334):
//!
//! * read `local_delta` (0 when absent) and `remote_quota` (168-179); the
//!   quota is stale when `reset - (now - sync_at) <= 0` (196-200);
//! * with no quota, or a stale one, it flushes *the local delta* to Redis
//!   at once (211-212): the fixed-window script (`util.lua:26-34`) `SET`s
//!   the key to the delta with `EX time_window` when it has no TTL — the
//!   window starts at the first write, it is not aligned — and otherwise
//!   `INCRBY`s it and returns its `PTTL`. Redis counts the delta whether
//!   or not it goes over (`rejected` only sets the remaining to 0,
//!   235-238). `sync_to_shm` (101-127) stores the new quota (TTL two
//!   windows) and takes the flushed delta off `local_delta`;
//! * the key is queued for the next periodic sync, admitted or not
//!   (249-260);
//! * a sync timer is started if none runs (279-322): one per replica,
//!   started by a request, that collects queued keys for `sync_interval`
//!   (374-390) and then syncs them one after another (430-446), each one
//!   Redis round trip under the key's lock (`sync_key`, 337-371: flush the
//!   key's whole `local_delta`, store the returned quota, subtract what
//!   was sent); the timer's shared-dict entry is deleted when it is done
//!   (`release`, 300), and the next request after that starts a new one;
//! * the decision is `remaining = remote_remaining - local_delta - cost`,
//!   admitted when `>= 0`, and only then `local_delta += cost` (324-331).
//!   `local_delta` here is the value read at the start: after a flush it
//!   was already sent to Redis (and is in `remote_remaining`), so the
//!   request that triggered the flush counts it twice
//!   (`recount_flushed_delta`, on as in the source; off is the fixed
//!   variant that uses what is left of the delta, 0).
//!
//! Quirks kept as the source has them: the delta flushed by a read after
//! the Redis key expired is written into the *new* window; `local_delta`
//! is created by `shdict:incr(key, v, 0, 2 * window)`, whose TTL applies
//! only when the entry is created (lua-nginx-module's `incr` `init_ttl`),
//! so a busy key's unsynced delta vanishes two windows after its first
//! admission and its next periodic sync skips it (`if delta`, 343).
//! When Redis fails the limiter falls back to a local `limit-count` of the
//! full limit on that replica (`limit-count-local.lua:96-125` over
//! resty.limit.count: a counter per key that starts with its first use and
//! lives one window), for reads and for syncs (216-231, 351-365); the
//! request waits no timeout in the model.
//!
//! Not modelled: the yield of a read's flush (the Redis call suspends the
//! request, so upstream another request of the key on the same instance
//! meanwhile reads the same delta and stale quota and flushes too; here
//! the flush, its quota and the decision are applied at the request, the
//! script at the store's time half a round trip later, in send order),
//! the queue cap (`MAX_DELAYED_SYNC_QUEUE_SIZE`, 51; the
//! timer drains the queue while it waits, 377-390, so it stays short),
//! several workers per instance, `ngx.now()`'s millisecond caching, and the
//! lock's wait (a request for a key being synced sees the synced state).
//! The store applies commands in the order the replicas send them.

use super::strategy::{Env, Strategy};
use super::FastMap;
use crate::clock::{pop_due, Nanos, MILLI};
use crate::error::Result;
use crate::model::Decision;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// What Redis said last about a key (`remote_quota`).
#[derive(Debug, Clone, Copy)]
struct Quota {
    remaining: i64,
    /// `sync_at + reset`: from then on the quota is stale.
    stale_at: Nanos,
    /// The shared-dict entry's expiry (two windows after the set).
    expires: Nanos,
}

/// One replica's shared dict.
#[derive(Debug, Default, Clone)]
struct Node {
    /// `local_delta`: (value, expiry fixed at creation).
    delta: FastMap<u32, (i64, Nanos)>,
    quota: FastMap<u32, Quota>,
    /// The keys queued since the last drain, first push first.
    queue: Vec<u32>,
    queued: FastMap<u32, ()>,
    /// `time_to_sync_records[syncer_id]` (the worker's memory of the timer).
    record: Option<Nanos>,
    /// The timer's shared-dict entry: its `time_to_sync`, until released.
    timer: Option<Nanos>,
    /// Keys the running sync still has to write.
    syncing: Vec<u32>,
    next_key: usize,
    /// The fallback limit-count: key -> (consumed, expiry), and its
    /// `end_time` entries (reset header) key -> end.
    fallback: FastMap<u32, (i64, Nanos)>,
    fallback_end: FastMap<u32, Nanos>,
    /// Bumped on a restart: the old timer is void.
    epoch: u32,
    peak: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Due {
    /// `time_to_sync` reached: drain the queue, sync the first key.
    Drain,
    /// The previous key's reply is back: sync the next key (or release).
    Next,
}

/// APISIX `limit-count` with delayed Redis sync.
pub struct ApisixSync {
    limit: i64,
    window: Nanos,
    sync: Nanos,
    recount_flushed: bool,
    nodes: Vec<Node>,
    /// (time, kind, replica, epoch).
    timers: BinaryHeap<Reverse<(Nanos, Due, usize, u32)>>,
    /// Redis: key -> (count, expiry in ms).
    redis: FastMap<u32, (i64, u64)>,
    last_purge_ms: u64,
}

impl ApisixSync {
    /// `n` replicas, `limit` per `window` (whole seconds), syncing every
    /// `sync` (APISIX accepts 100 ms up to the window, exclusive).
    pub fn new(n: usize, limit: u64, window: Nanos, sync: Nanos, recount_flushed: bool) -> Self {
        Self {
            limit: limit as i64,
            window,
            sync,
            recount_flushed,
            nodes: vec![Node::default(); n],
            timers: BinaryHeap::new(),
            redis: FastMap::default(),
            last_purge_ms: 0,
        }
    }

    /// The fixed-window script (`util.lua:26-34`) at store time `at_unix`
    /// (Unix ns, Redis' clock): the count after and the TTL in ms.
    fn script(&mut self, key: u32, cost: i64, at_unix: u64) -> (i64, u64) {
        let now_ms = at_unix / MILLI;
        let window_ms = self.window / MILLI;
        if now_ms >= self.last_purge_ms + window_ms {
            // Expired keys go (Redis would evict them lazily or actively).
            self.last_purge_ms = now_ms;
            self.redis.retain(|_, v| v.1 >= now_ms);
        }
        match self.redis.get_mut(&key) {
            // A key is expired when now > its expiry (Redis' keyIsExpired).
            Some(v) if v.1 >= now_ms => {
                v.0 += cost;
                (v.0, v.1 - now_ms)
            }
            _ => {
                self.redis.insert(key, (cost, now_ms + window_ms));
                (cost, window_ms)
            }
        }
    }

    /// The fallback `limit-count-local` at `t`: (remaining or negative
    /// when rejected, reset ns).
    fn fallback(&mut self, r: usize, key: u32, cost: i64, t: Nanos) -> (i64, Nanos) {
        let (limit, window) = (self.limit, self.window);
        let node = &mut self.nodes[r];
        let e = node.fallback.entry(key).or_insert((0, t + window));
        if t >= e.1 {
            *e = (0, t + window);
        }
        e.0 += cost;
        let remaining = limit - e.0;
        let reset = if remaining == limit - cost {
            node.fallback_end.insert(key, t + window);
            window
        } else {
            node.fallback_end
                .get(&key)
                .map_or(0, |&end| end.saturating_sub(t))
        };
        (remaining, reset)
    }

    /// Writes `delta` of `key` from replica `r` at `t` (a read's flush or a
    /// periodic sync) and stores the quota Redis returns (`sync_to_shm`).
    /// Returns when the reply is back. `waits`: a request waits for the
    /// reply (a read), not a periodic sync.
    fn flush(
        &mut self,
        r: usize,
        key: u32,
        delta: i64,
        t: Nanos,
        env: &mut Env,
        waits: bool,
    ) -> Nanos {
        let (remaining, reset, sync_at) = match env.round_trip_for(r, 2) {
            Some(rtt) => {
                if !waits {
                    env.cost.added_latency_ns -= u128::from(rtt);
                }
                let (count, ttl_ms) = self.script(key, delta, env.unix_ns(t + rtt / 2));
                ((self.limit - count).max(0), ttl_ms * MILLI, t + rtt)
            }
            None => {
                let (rem, reset) = self.fallback(r, key, delta, t);
                (rem.max(0), reset, t)
            }
        };
        let window = self.window;
        let node = &mut self.nodes[r];
        node.quota.insert(
            key,
            Quota {
                remaining,
                stale_at: sync_at + reset,
                expires: sync_at + 2 * window,
            },
        );
        incr(&mut node.delta, key, -delta, sync_at, 2 * window);
        sync_at
    }

    /// Syncs the running timer's next key on replica `r` at `t`.
    fn sync_next(&mut self, r: usize, t: Nanos, env: &mut Env) {
        loop {
            let node = &mut self.nodes[r];
            let Some(&key) = node.syncing.get(node.next_key) else {
                // Done: `release` deletes the timer's entry.
                node.syncing.clear();
                node.next_key = 0;
                node.timer = None;
                return;
            };
            node.next_key += 1;
            // `sync_key`: a key whose delta entry is gone is skipped.
            let Some(d) = alive(&node.delta, key, t) else {
                continue;
            };
            let back = self.flush(r, key, d, t, env, false);
            let epoch = self.nodes[r].epoch;
            self.timers.push(Reverse((back, Due::Next, r, epoch)));
            return;
        }
    }
}

/// A shared-dict `incr(key, by, 0, ttl)` at `t`: the TTL is set only when
/// the entry is created.
fn incr(m: &mut FastMap<u32, (i64, Nanos)>, key: u32, by: i64, t: Nanos, ttl: Nanos) {
    let e = m.entry(key).or_insert((0, t + ttl));
    if t >= e.1 {
        *e = (0, t + ttl);
    }
    e.0 += by;
}

/// A shared-dict `get` at `t`.
fn alive(m: &FastMap<u32, (i64, Nanos)>, key: u32, t: Nanos) -> Option<i64> {
    m.get(&key).filter(|e| t < e.1).map(|e| e.0)
}

impl Strategy for ApisixSync {
    fn advance(&mut self, t: Nanos, env: &mut Env) -> Result<()> {
        while let Some((at, due, r, epoch)) = pop_due(&mut self.timers, |e| e.0 <= t) {
            if r >= self.nodes.len() || self.nodes[r].epoch != epoch {
                continue;
            }
            if due == Due::Drain {
                let node = &mut self.nodes[r];
                node.syncing = std::mem::take(&mut node.queue);
                node.queued.clear();
                node.next_key = 0;
            }
            self.sync_next(r, at, env);
        }
        Ok(())
    }

    fn admit(&mut self, r: usize, key: u32, _w: u64, t: Nanos, env: &mut Env) -> Result<Decision> {
        let local_delta = alive(&self.nodes[r].delta, key, t).unwrap_or(0);
        let quota = self.nodes[r]
            .quota
            .get(&key)
            .copied()
            .filter(|q| t < q.expires);
        let stale = match quota {
            Some(q) if t >= q.stale_at => {
                // `reset < 0` also forgets the timer record (199).
                if t > q.stale_at {
                    self.nodes[r].record = None;
                }
                true
            }
            Some(_) => false,
            None => true,
        };
        if stale {
            self.flush(r, key, local_delta, t, env, true);
        }
        let sync = self.sync;
        let epoch = self.nodes[r].epoch;
        let node = &mut self.nodes[r];
        let remote_remaining = node.quota.get(&key).map_or(0, |q| q.remaining);
        if node.queued.insert(key, ()).is_none() {
            node.queue.push(key);
        }
        if node.record.is_none_or(|rec| rec <= t) {
            match node.timer {
                None => {
                    let at = t + sync;
                    node.timer = Some(at);
                    node.record = Some(at);
                    self.timers.push(Reverse((at, Due::Drain, r, epoch)));
                }
                Some(at) => node.record = Some(at),
            }
        }
        let counted = if stale && !self.recount_flushed {
            alive(&node.delta, key, t).unwrap_or(0)
        } else {
            local_delta
        };
        let remaining = remote_remaining - counted - 1;
        let allowed = remaining >= 0;
        if allowed {
            incr(&mut node.delta, key, 1, t, 2 * self.window);
        }
        node.peak = node.peak.max(node.delta.len().max(node.quota.len()));
        Ok(Decision::from_allowed(allowed))
    }

    fn resize(&mut self, n: usize, _t: Nanos) -> Result<()> {
        // A removed instance's timer exits premature (`ngx.worker.exiting`,
        // 392): its deltas never reach Redis.
        for node in self.nodes.iter_mut().skip(n) {
            node.epoch = node.epoch.wrapping_add(1);
        }
        self.nodes.truncate(n);
        self.nodes.resize_with(n, Node::default);
        Ok(())
    }

    fn restart(&mut self, r: usize, _t: Nanos) -> Result<()> {
        let epoch = self.nodes[r].epoch.wrapping_add(1);
        self.nodes[r] = Node {
            epoch,
            ..Node::default()
        };
        Ok(())
    }

    fn memory_bytes(&self, r: usize, _keys: u64) -> u64 {
        // Two shared-dict entries per key (`local_delta#key`, and
        // `remote_quota#key` with its JSON), ~80 bytes each with the
        // key string and the node header.
        self.nodes.get(r).map_or(0, |n| n.peak as u64 * 160)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::SECOND;
    use crate::fleet::{Latency, Network};
    use crate::rng::sim_rng;

    fn env() -> Env {
        Env::new(Network::new(Latency::Fixed(MILLI), 0.0, sim_rng(1)))
    }

    /// One replica, one key: the first request reads Redis (a SET of 0),
    /// then the quota answers locally until the sync writes the delta.
    #[test]
    fn one_replica_counts_locally_between_syncs() {
        let mut s = ApisixSync::new(1, 5, SECOND, 200 * MILLI, true);
        let mut e = env();
        let mut ok = 0;
        for i in 0..10 {
            let t = i * 10 * MILLI;
            s.advance(t, &mut e).unwrap();
            ok += u32::from(s.admit(0, 7, 1, t, &mut e).unwrap().allowed);
        }
        assert_eq!(ok, 5);
        assert_eq!(e.cost.messages, 2, "one read, no sync yet");
        s.advance(300 * MILLI, &mut e).unwrap();
        assert_eq!(s.redis[&7].0, 5, "the sync wrote the five admissions");
    }

    /// A read after the quota went stale flushes the delta (into the new
    /// window) and counts it again for the request that read (the
    /// source's quirk); the fixed variant does not.
    #[test]
    fn a_flushing_read_counts_the_delta_twice() {
        let run = |recount| {
            let mut s = ApisixSync::new(1, 4, SECOND, 500 * MILLI, recount);
            let mut e = env();
            // 0 s: read (quota 4 until 1.001 s), admit; 0.5 s: the sync
            // writes 1 (quota 3); 0.9 s: three admissions, unsynced when
            // the quota goes stale (the next sync is due at 1.4 s).
            let mut out = Vec::new();
            for t in [0, 900, 901, 902, 1002] {
                let t = t * MILLI;
                s.advance(t, &mut e).unwrap();
                out.push(s.admit(0, 1, 1, t, &mut e).unwrap().allowed);
            }
            (out, s.redis[&1].0)
        };
        let (quirk, in_new_window) = run(true);
        assert_eq!(quirk, [true, true, true, true, false]);
        assert_eq!(in_new_window, 3, "the old window's delta opens the new one");
        let (fixed, _) = run(false);
        assert_eq!(fixed, [true; 5]);
    }
}
