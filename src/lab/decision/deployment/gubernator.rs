//! `gubernator`: mailgun/gubernator (gubernator-io/gubernator), each
//! replica a peer of the cluster.
//!
//! * The owner of a key: `ReplicatedConsistentHash` (replicated_hash.go):
//!   512 points a peer at `fnv1_64(itoa(i) + hex(md5(address)))`, the
//!   first point `>= fnv1_64(key)` (wrapping) owns it (`Get`).
//! * The algorithm: `tokenBucket` / `tokenBucketNewItem` (algorithms.go):
//!   despite the name a window from the key's first hit — `remaining =
//!   limit - hits`, expiring `duration` later (ms clock); `hits >
//!   remaining` is `OVER_LIMIT` without taking anything (with
//!   `DRAIN_OVER_LIMIT` remaining drops to 0); `remaining == 0` sets the
//!   item's status to `OVER_LIMIT`; an item is expired when `ExpireAt <
//!   now` (cache.go `IsExpired`).
//! * Without `GLOBAL` (`behavior: forwarding`): a non-owner forwards the
//!   request to the owner (`asyncRequest`, gubernator.go:273-283), batched
//!   per owner by the peer client (`BatchWait` 500 µs after the first
//!   queued request, or `BatchLimit` 1000 requests; peer_client.go:290-328);
//!   the owner decides. Requests reach the owner in the order their peers
//!   send them.
//! * With `GLOBAL` (`behavior: global`): a non-owner answers from its own
//!   cache as if it owned the key (`getGlobalRateLimit`,
//!   gubernator.go:403-429) and queues the hit (`QueueHit`, even when it
//!   denied it); hits are summed per key and sent to their owners
//!   `GlobalSyncWait` (100 ms) after the first queued one, or when
//!   `GlobalBatchLimit` (1000) keys are queued (`runAsyncHits`,
//!   global.go). The owner applies them with `DRAIN_OVER_LIMIT`
//!   (gubernator.go:520-526; `drain_over_limit: false` is the older
//!   behaviour where an aggregate over the remaining is dropped whole) and
//!   queues an update; updates are broadcast to every other peer
//!   `GlobalSyncWait` after the first (`runBroadcasts`), each with the
//!   owner's status read with `hits = 0`, and a peer replaces its item
//!   with it (`UpdatePeerGlobals`, gubernator.go:434-475). The timers are
//!   holster-style `Interval`s (interval.go): `Next` while sleeping queues
//!   one more firing.

use super::strategy::{Env, Strategy};
use super::FastMap;
use crate::clock::{Nanos, MILLI};
use crate::error::Result;
use crate::model::Decision;
use md5::{Digest, Md5};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

/// Points a peer puts on the ring (`defaultReplicas`).
const RING_REPLICAS: usize = 512;
/// `BatchWait`, ns (500 µs).
const BATCH_WAIT: Nanos = 500_000;
/// `BatchLimit` and `GlobalBatchLimit` (`maxBatchSize`).
const BATCH_LIMIT: usize = 1000;

/// FNV-1 64 (segmentio/fasthash `fnv1.HashString64`).
pub fn fnv1_64(s: &[u8]) -> u64 {
    let mut h: u64 = 14_695_981_039_346_656_037;
    for &b in s {
        h = h.wrapping_mul(1_099_511_628_211);
        h ^= u64::from(b);
    }
    h
}

/// The peer address of replica `i` (its gRPC address).
fn peer_address(i: usize) -> String {
    super::host_address(i).replace(":8080", ":1051")
}

/// The owners' ring over `n` peers: sorted `(hash, peer)`.
pub fn owner_ring(n: usize) -> Vec<(u64, usize)> {
    let mut ring = Vec::with_capacity(n * RING_REPLICAS);
    for p in 0..n {
        let digest = Md5::digest(peer_address(p).as_bytes());
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        for i in 0..RING_REPLICAS {
            ring.push((fnv1_64(format!("{i}{hex}").as_bytes()), p));
        }
    }
    // sort.Slice is not stable; equal hashes do not occur here.
    ring.sort_by_key(|&(h, _)| h);
    ring
}

/// The owner of `key` (`ReplicatedConsistentHash.Get`).
pub fn owner(ring: &[(u64, usize)], key: u32) -> usize {
    let h = fnv1_64(format!("fleet_{key}").as_bytes());
    let i = ring.partition_point(|&(x, _)| x < h);
    ring[if i == ring.len() { 0 } else { i }].1
}

/// One cache item (`TokenBucketItem` and its `ExpireAt`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Item {
    /// Tokens left.
    pub remaining: i64,
    /// Unix ms after which the item is gone.
    pub expire_at: i64,
    /// The item's status is `OVER_LIMIT`.
    pub over: bool,
}

/// gubernator's `tokenBucket` on one item: whether the hits are under the
/// limit (the response's status), updating the item.
pub fn token_bucket(
    item: &mut Option<Item>,
    now_ms: i64,
    limit: i64,
    duration_ms: i64,
    hits: i64,
    drain: bool,
) -> bool {
    if let Some(t) = item.as_mut().filter(|t| t.expire_at >= now_ms) {
        if hits == 0 {
            return !t.over;
        }
        if t.remaining == 0 && hits > 0 {
            t.over = true;
            return false;
        }
        if t.remaining == hits {
            t.remaining = 0;
            return !t.over;
        }
        if hits > t.remaining {
            if drain {
                t.remaining = 0;
            }
            return false;
        }
        t.remaining -= hits;
        return !t.over;
    }
    let mut t = Item {
        remaining: limit - hits,
        expire_at: now_ms + duration_ms,
        over: false,
    };
    let ok = hits <= limit;
    if !ok {
        t.remaining = limit;
    }
    *item = Some(t);
    ok
}

/// holster's `Interval`: a one-shot sleep, one more queued by `Next`.
#[derive(Debug, Clone, Copy, Default)]
struct Interval {
    until: Option<Nanos>,
    queued: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Due {
    /// A peer's hits interval fires.
    SendHits(usize),
    /// An owner's broadcast interval fires.
    Broadcast(usize),
    /// Hits from a peer reach their owner: (owner, batch id).
    Hits(usize, u64),
    /// A broadcast reaches a peer: (peer, batch id).
    Update(usize, u64),
}

/// gubernator peers.
pub struct Gubernator {
    global: bool,
    drain: bool,
    sync_wait: Nanos,
    limit: i64,
    duration_ms: i64,
    n: usize,
    ring: Vec<(u64, usize)>,
    caches: Vec<FastMap<u32, Item>>,
    /// GLOBAL: hits queued per peer, summed per key.
    hits: Vec<BTreeMap<u32, i64>>,
    hits_iv: Vec<Interval>,
    /// GLOBAL: keys an owner must broadcast.
    updates: Vec<BTreeMap<u32, ()>>,
    bc_iv: Vec<Interval>,
    /// Messages in flight: batch id -> contents.
    in_flight: FastMap<u64, Vec<(u32, i64, Item)>>,
    next_batch: u64,
    timers: BinaryHeap<Reverse<(Nanos, u64, Due)>>,
    seq: u64,
    /// Forwarding: (peer, owner) -> (batch opened at, requests in it).
    batches: FastMap<(usize, usize), (Nanos, usize)>,
    peak: Vec<usize>,
}

impl Gubernator {
    /// `n` peers; `global` for the GLOBAL behaviour.
    /// `GlobalSyncWait` is `sync_wait` (gubernator's default 100 ms).
    pub fn new(
        n: usize,
        limit: u64,
        interval: Nanos,
        global: bool,
        drain: bool,
        sync_wait: Nanos,
    ) -> Self {
        Self {
            global,
            drain,
            sync_wait,
            limit: limit as i64,
            duration_ms: (interval / MILLI) as i64,
            n,
            ring: owner_ring(n),
            caches: vec![FastMap::default(); n],
            hits: vec![BTreeMap::new(); n],
            hits_iv: vec![Interval::default(); n],
            updates: vec![BTreeMap::new(); n],
            bc_iv: vec![Interval::default(); n],
            in_flight: FastMap::default(),
            next_batch: 0,
            timers: BinaryHeap::new(),
            seq: 0,
            batches: FastMap::default(),
            peak: vec![0; n],
        }
    }

    fn at(&mut self, t: Nanos, d: Due) {
        self.seq += 1;
        self.timers.push(Reverse((t, self.seq, d)));
    }

    /// `Interval.Next` on `iv` at `t`; returns when to fire if it starts
    /// sleeping now.
    fn next(iv: &mut Interval, t: Nanos, d: Nanos) -> Option<Nanos> {
        match iv.until {
            Some(_) => {
                iv.queued = true;
                None
            }
            None => {
                iv.until = Some(t + d);
                iv.until
            }
        }
    }

    fn decide(&mut self, p: usize, key: u32, hits: i64, t: Nanos, drain: bool) -> bool {
        let now_ms = (t / MILLI) as i64;
        let cache = &mut self.caches[p];
        let mut item = cache.get(&key).copied();
        let ok = token_bucket(&mut item, now_ms, self.limit, self.duration_ms, hits, drain);
        if let Some(it) = item {
            cache.insert(key, it);
        }
        self.peak[p] = self.peak[p].max(cache.len());
        ok
    }

    fn queue_update(&mut self, o: usize, key: u32, t: Nanos, env: &mut Env) {
        self.updates[o].insert(key, ());
        if self.updates[o].len() >= BATCH_LIMIT {
            self.broadcast(o, t, env);
        } else if self.updates[o].len() == 1 {
            if let Some(f) = Self::next(&mut self.bc_iv[o], t, self.sync_wait) {
                self.at(f, Due::Broadcast(o));
            }
        }
    }

    fn send_hits(&mut self, p: usize, t: Nanos, env: &mut Env) {
        let hits = std::mem::take(&mut self.hits[p]);
        let mut per_owner: BTreeMap<usize, Vec<(u32, i64, Item)>> = BTreeMap::new();
        for (k, h) in hits {
            per_owner.entry(owner(&self.ring, k)).or_default().push((
                k,
                h,
                Item {
                    remaining: 0,
                    expire_at: 0,
                    over: false,
                },
            ));
        }
        for (o, reqs) in per_owner {
            if env.store_down || env.net.lost() {
                env.cost.failed += 1;
                continue;
            }
            let rtt = env.net.rtt();
            env.cost.messages += 2;
            self.next_batch += 1;
            self.in_flight.insert(self.next_batch, reqs);
            let b = self.next_batch;
            self.at(t + rtt / 2, Due::Hits(o, b));
        }
    }

    fn broadcast(&mut self, o: usize, t: Nanos, env: &mut Env) {
        let keys: Vec<u32> = std::mem::take(&mut self.updates[o]).into_keys().collect();
        let mut statuses = Vec::with_capacity(keys.len());
        for k in keys {
            // The status read with hits = 0 (which creates an item when
            // none is alive, as tokenBucketNewItem does).
            self.decide(o, k, 0, t, false);
            if let Some(&it) = self.caches[o].get(&k) {
                statuses.push((k, 0, it));
            }
        }
        for p in 0..self.n {
            if p == o {
                continue;
            }
            if env.net.lost() {
                env.cost.failed += 1;
                continue;
            }
            let rtt = env.net.rtt();
            env.cost.messages += 2;
            self.next_batch += 1;
            self.in_flight.insert(self.next_batch, statuses.clone());
            let b = self.next_batch;
            self.at(t + rtt / 2, Due::Update(p, b));
        }
    }

    fn fire(iv: &mut Interval, t: Nanos, d: Nanos) -> Option<Nanos> {
        iv.until = None;
        if iv.queued {
            iv.queued = false;
            iv.until = Some(t + d);
        }
        iv.until
    }
}

impl Strategy for Gubernator {
    fn advance(&mut self, t: Nanos, env: &mut Env) -> Result<()> {
        while let Some(&Reverse((at, _, due))) = self.timers.peek() {
            if at > t {
                break;
            }
            self.timers.pop();
            match due {
                Due::SendHits(p) if p < self.n => {
                    if !self.hits[p].is_empty() {
                        self.send_hits(p, at, env);
                    }
                    if let Some(f) = Self::fire(&mut self.hits_iv[p], at, self.sync_wait) {
                        self.at(f, Due::SendHits(p));
                    }
                }
                Due::Broadcast(o) if o < self.n => {
                    if !self.updates[o].is_empty() {
                        self.broadcast(o, at, env);
                    }
                    if let Some(f) = Self::fire(&mut self.bc_iv[o], at, self.sync_wait) {
                        self.at(f, Due::Broadcast(o));
                    }
                }
                Due::Hits(o, b) => {
                    let reqs = self.in_flight.remove(&b).unwrap_or_default();
                    if o < self.n {
                        for (k, h, _) in reqs {
                            self.decide(o, k, h, at, self.drain);
                            self.queue_update(o, k, at, env);
                        }
                    }
                }
                Due::Update(p, b) => {
                    let st = self.in_flight.remove(&b).unwrap_or_default();
                    if p < self.n {
                        for (k, _, it) in st {
                            self.caches[p].insert(k, it);
                        }
                    }
                }
                Due::SendHits(_) | Due::Broadcast(_) => {}
            }
        }
        Ok(())
    }

    fn admit(&mut self, p: usize, key: u32, w: u64, t: Nanos, env: &mut Env) -> Result<Decision> {
        let o = owner(&self.ring, key);
        let hits = w as i64;
        if o == p {
            let ok = self.decide(p, key, hits, t, false);
            if self.global {
                self.queue_update(o, key, t, env);
            }
            return Ok(Decision::from_allowed(ok));
        }
        if self.global {
            let ok = self.decide(p, key, hits, t, false);
            let q = &mut self.hits[p];
            *q.entry(key).or_insert(0) += hits;
            let len = q.len();
            if len == BATCH_LIMIT {
                self.send_hits(p, t, env);
            } else if len == 1 {
                if let Some(f) = Self::next(&mut self.hits_iv[p], t, self.sync_wait) {
                    self.at(f, Due::SendHits(p));
                }
            }
            return Ok(Decision::from_allowed(ok));
        }
        // Forwarding: join the open batch to the owner or open one.
        let b = self.batches.entry((p, o)).or_insert((0, 0));
        let wait = if b.1 > 0 && t < b.0 + BATCH_WAIT && b.1 < BATCH_LIMIT {
            b.1 += 1;
            b.0 + BATCH_WAIT - t
        } else {
            *b = (t, 1);
            env.cost.messages += 2;
            BATCH_WAIT
        };
        if env.store_down || env.net.lost() {
            env.cost.failed += 1;
            return Ok(Decision::from_allowed(false));
        }
        let rtt = env.net.rtt();
        env.cost.added_latency_ns += u128::from(wait + rtt);
        Ok(Decision::from_allowed(self.decide(o, key, hits, t, false)))
    }

    fn resize(&mut self, n: usize, _t: Nanos) -> Result<()> {
        self.n = n;
        self.ring = owner_ring(n);
        self.caches.resize_with(n, FastMap::default);
        self.hits.resize_with(n, BTreeMap::new);
        self.hits_iv.resize(n, Interval::default());
        self.updates.resize_with(n, BTreeMap::new);
        self.bc_iv.resize(n, Interval::default());
        self.peak.resize(n, 0);
        Ok(())
    }

    fn restart(&mut self, r: usize, _t: Nanos) -> Result<()> {
        self.caches[r].clear();
        self.hits[r].clear();
        self.updates[r].clear();
        Ok(())
    }

    fn memory_bytes(&self, r: usize, _keys: u64) -> u64 {
        // A cache entry: the hash key, a CacheItem and a TokenBucketItem.
        self.peak.get(r).map_or(0, |&c| c as u64 * 120)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_bucket_is_a_window_from_the_first_hit() {
        let mut it = None;
        assert!(token_bucket(&mut it, 0, 2, 1000, 1, false));
        assert!(token_bucket(&mut it, 10, 2, 1000, 1, false));
        assert!(!token_bucket(&mut it, 20, 2, 1000, 1, false));
        assert!(it.unwrap().over);
        // Still alive at ExpireAt, gone after.
        assert!(!token_bucket(&mut it, 1000, 2, 1000, 1, false));
        assert!(token_bucket(&mut it, 1001, 2, 1000, 1, false));
        // An aggregate over the remaining takes nothing unless drained.
        let mut b = None;
        token_bucket(&mut b, 0, 10, 1000, 4, false);
        assert!(!token_bucket(&mut b, 1, 10, 1000, 7, false));
        assert_eq!(b.unwrap().remaining, 6);
        assert!(!token_bucket(&mut b, 1, 10, 1000, 7, true));
        assert_eq!(b.unwrap().remaining, 0);
    }

    #[test]
    fn fnv1_matches_the_reference_vectors() {
        // FNV-1 64 of "" and "a" (the published test vectors).
        assert_eq!(fnv1_64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1_64(b"a"), 0xaf63_bd4c_8601_b7be);
    }

    #[test]
    fn owners_cluster_as_fnv1_does() {
        // FNV-1 ends with an XOR, no multiply: keys that differ in their
        // last byte hash to neighbours and share an owner. With decimal
        // keys the owners are very uneven (6 peers, 4000 keys: one owns
        // none, one 2100 — counted independently with Python hashlib), as
        // upstream's would be.
        let ring = owner_ring(6);
        assert_eq!(fnv1_64(b"fleet_19") - fnv1_64(b"fleet_10"), 7);
        let first = owner(&ring, 10);
        assert!((11..20).all(|k| owner(&ring, k) == first));
        let mut c = [0u32; 6];
        for k in 0..4000 {
            c[owner(&ring, k)] += 1;
        }
        assert_eq!(c, [1010, 0, 700, 90, 100, 2100]);
    }
}
