//! `gubernator`: gubernator-io/gubernator (mailgun/gubernator), each
//! replica a peer of the cluster. Read at 3182244 (`gubernator.go`,
//! `global.go`, `peer_client.go`, `algorithms.go`, `interval.go`,
//! `config.go`, `cache.go`, `lrucache.go`, `replicated_hash.go`).
//!
//! * The owner of a key: `ReplicatedConsistentHash` (replicated_hash.go):
//!   512 points a peer at `fnv1_64(itoa(i) + hex(md5(address)))`, the
//!   first point `>= fnv1_64(key)` (wrapping) owns it (`Get`). `owner:
//!   "modulo"` (key id mod replicas) is ours, for tests that fix owners.
//! * The algorithm: `tokenBucket` / `tokenBucketNewItem`
//!   (algorithms.go:37-252): despite the name a window from the request's
//!   `CreatedAt` — a new item has `remaining = limit - hits` and expires
//!   at `CreatedAt + Duration` (203-204); `hits > remaining` is
//!   `OVER_LIMIT` without taking anything (179-190; with
//!   `DRAIN_OVER_LIMIT` remaining drops to 0); `remaining == 0` sets the
//!   item's status to `OVER_LIMIT` (161-168). Whether an item is alive is
//!   read on the deciding peer's clock at the time it decides: expired
//!   when `ExpireAt < now` (cache.go:43-55, lrucache.go:111-128).
//!   `CreatedAt` is set once, by the peer the client called, to its
//!   arrival (gubernator.go:202, 225-227) and travels with the request.
//!   Clocks are Unix milliseconds ([`Env::unix_ns`]).
//! * Without `GLOBAL` (`behavior: forwarding`): a non-owner hands the
//!   request to its peer client for the owner (`asyncRequest`,
//!   gubernator.go:279-289, 318-399). The client's `runBatch`
//!   (peer_client.go:289-344) queues it; the first queued request calls
//!   `interval.Next()`, and the batch goes when the interval ticks
//!   (`BatchWait`, 500 µs by default, config.go:140) or at once when it
//!   reaches `BatchLimit` (1000, config.go:139). The owner decides each
//!   request of the batch when the batch arrives, on its state then
//!   (`GetPeerRateLimits`, gubernator.go:477-559): the lab's decision of
//!   a forwarded request is made then, not when it was sent. A failed
//!   batch (a lost message, the peers unreachable) answers every request
//!   in it with an error: denied (the retry on a deadline, 364-378, is not
//!   modelled).
//! * With `GLOBAL` (`behavior: global`): a non-owner answers from its own
//!   cache as if it owned the key (`getGlobalRateLimit`,
//!   gubernator.go:403-429) and queues the hit (`QueueHit`, even when it
//!   denied it). `runAsyncHits` (global.go:102-151) sums hits per key —
//!   the first hit's request is kept, so its `CreatedAt` is the batch's
//!   — and sends them to their owners when the interval ticks
//!   (`GlobalSyncWait`, 100 ms) or when `GlobalBatchLimit` keys are
//!   queued (126-131); `sendHits` (155-199) waits for every owner's reply
//!   (`fan.Wait()`, 198) before the loop reads its channel again. The
//!   owner applies a peer's hits with `DRAIN_OVER_LIMIT`
//!   (gubernator.go:530-532; `drain_over_limit: false` is the older
//!   behaviour where an aggregate over the remaining is dropped whole),
//!   with the hits' `CreatedAt` (535-538 only fills a missing one), so a
//!   window it opens starts at the first hit, and queues an update
//!   (`QueueUpdate`, 669-672). `runBroadcasts` (global.go:205-243) keeps
//!   the last update per key and, on its interval or at
//!   `GlobalBatchLimit` (216), reads each key's status with `hits = 0` and
//!   the update's `CreatedAt` (257-270: an expired item is reopened as
//!   `CreatedAt + Duration`, not at the tick) and sends it to every other
//!   peer, waiting for all replies (`fan.Wait()`, 298); a peer replaces
//!   its item with the status (`UpdatePeerGlobals`,
//!   gubernator.go:434-475).
//! * The loops' timers are `Interval`s (interval.go:27-72): `Next` starts
//!   a sleep, or queues one more when a sleep is running (a buffer of
//!   one); the tick waits in a one-slot channel, and a sleep that ends
//!   while the slot is still full waits to deliver it. A loop busy in
//!   `fan.Wait()` reads neither its channel nor the tick until it is
//!   done.
//! * A request (or a delivered hit) and a tick at the same instant: Go's
//!   `select` picks uniformly among the ready cases. `tie_order:
//!   "random"` (the default) draws that pick from the fleet's seeded
//!   RNG; `"arrivals_first"` takes every arrival of the instant before
//!   the tick. A message arriving at the instant a request does is
//!   handled first.
//!
//! A peer-to-peer message uses the round trip of the non-owner's link
//! (`network.per_replica`: the forwarding or hit-sending peer, the peer
//! a broadcast goes to); a lost message fails its call after
//! `GlobalTimeout` / `BatchTimeout` (500 ms, config.go:138, 142), which a
//! waiting loop waits out. A store outage event is, for gubernator, an
//! outage of the network between peers. Not modelled: the channels'
//! capacity (`GlobalBatchLimit` slots; a full one blocks the caller, not
//! its decision), `GlobalPeerRequestsConcurrency` (100 concurrent sends),
//! the order in which the owner's workers take a batch's requests (here
//! the batch's order).

use super::strategy::{admit_settled, Env, OwnTickets, Strategy};
use super::FastMap;
use crate::clock::{pop_due, Nanos, MILLI};
use crate::error::Result;
use crate::model::Decision;
use md5::{Digest, Md5};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::sync::Arc;

mod loops;

/// Points a peer puts on the ring (`defaultReplicas`).
const RING_REPLICAS: usize = 512;
/// `BatchWait`, ns (500 µs, config.go:140).
pub const BATCH_WAIT: Nanos = 500_000;
/// `BatchLimit` and `GlobalBatchLimit` (`maxBatchSize`, config.go:139, 143).
pub const BATCH_LIMIT: usize = 1000;
/// `GlobalTimeout` and `BatchTimeout` (500 ms).
const TIMEOUT: Nanos = 500 * MILLI;

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

/// Who owns a key (a `gubernator` entry's `owner`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OwnerRule {
    /// Upstream's consistent hash ([`owner`]).
    #[default]
    Ring,
    /// Key id mod replicas (ours: a test fixes the owners).
    Modulo,
}

/// Which goes first when a request or a delivered hit and a loop's tick
/// fall on the same instant (a `gubernator` entry's `tie_order`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TieOrder {
    /// As Go's `select`: uniformly, from the fleet's seeded RNG.
    #[default]
    Random,
    /// Every arrival of the instant before the tick.
    ArrivalsFirst,
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

/// gubernator's `tokenBucket` on one item at `now_ms` for a request
/// created at `created_ms`: whether the hits are under the limit (the
/// response's status), updating the item.
///
/// # Examples
/// ```
/// use ratelab::fleet::token_bucket;
/// let mut it = None;
/// // A request created at 100 ms, decided at 105 ms: its window ends at
/// // 100 + 1000.
/// assert!(token_bucket(&mut it, 105, 100, 2, 1000, 1, false));
/// assert_eq!(it.unwrap().expire_at, 1100);
/// ```
pub fn token_bucket(
    item: &mut Option<Item>,
    now_ms: i64,
    created_ms: i64,
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
        expire_at: created_ms + duration_ms,
        over: false,
    };
    let ok = hits <= limit;
    if !ok {
        t.remaining = limit;
    }
    *item = Some(t);
    ok
}

/// Which loop of a peer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum LoopKind {
    /// `runAsyncHits`.
    Hits,
    /// `runBroadcasts`.
    Broadcast,
    /// The peer client's `runBatch` towards this owner.
    Batch(usize),
}

/// A loop: (peer, which).
type LoopId = (usize, LoopKind);

/// A queued request: key, hits, `CreatedAt` (Unix ms), its arrival and,
/// forwarded, its ticket.
#[derive(Debug, Clone, Copy)]
struct Msg {
    key: u32,
    hits: i64,
    created_ms: i64,
    at: Nanos,
    ticket: u64,
}

/// The `Interval`'s goroutine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Runner {
    /// Waiting for `Next`.
    Idle,
    /// Sleeping until then (the tick event's sequence number).
    Sleeping(Nanos, u64),
    /// Slept, waiting for the tick slot to empty.
    Blocked,
}

/// A loop and its `Interval`.
#[derive(Debug, Clone)]
struct Loop {
    era: u64,
    runner: Runner,
    /// `Next` queued while sleeping (`in`, one slot).
    queued_next: bool,
    /// A tick waits in `C` (one slot).
    tick: bool,
    /// In `fan.Wait()`.
    busy: bool,
    /// Requests waiting in the loop's channel.
    chan: VecDeque<Msg>,
    /// Hits or updates, one per key in the order keys were first queued
    /// (`hits`, `updates`; a Go map has no order, this is one), and each
    /// key's place.
    agg: Vec<Msg>,
    at_key: FastMap<u32, usize>,
    /// The peer client's `queue`.
    queue: Vec<Msg>,
}

impl Loop {
    fn new(era: u64) -> Self {
        Self {
            era,
            runner: Runner::Idle,
            queued_next: false,
            tick: false,
            busy: false,
            chan: VecDeque::new(),
            agg: Vec::new(),
            at_key: FastMap::default(),
            queue: Vec::new(),
        }
    }
}

/// What happens at a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    /// A loop's `fan.Wait()` returns: (loop, generation).
    Free(LoopId, u64),
    /// Hits from a peer reach their owner: (owner, message id).
    Hits(usize, u64),
    /// A broadcast reaches a peer: (peer, message id).
    Update(usize, u64),
    /// A forwarded batch reaches its owner: (owner, message id).
    Forward(usize, u64),
    /// A loop's interval ends its sleep: (loop, generation, sequence).
    Tick(LoopId, u64, u64),
}

impl Ev {
    /// Arrivals (0) before ticks (1) at one instant.
    fn class(&self) -> u8 {
        u8::from(matches!(self, Ev::Tick(..)))
    }
}

/// gubernator peers.
pub struct Gubernator {
    global: bool,
    drain: bool,
    sync_wait: Nanos,
    batch_wait: Nanos,
    batch_limit: usize,
    global_batch_limit: usize,
    owner_rule: OwnerRule,
    tie: TieOrder,
    limit: i64,
    duration_ms: i64,
    n: usize,
    ring: Vec<(u64, usize)>,
    caches: Vec<FastMap<u32, Item>>,
    loops: FastMap<LoopId, Loop>,
    eras: u64,
    /// Messages in flight: id -> requests (hits, forwarded batches).
    msgs: FastMap<u64, Vec<Msg>>,
    /// Broadcasts in flight: id -> statuses.
    statuses: FastMap<u64, Arc<Vec<(u32, Item)>>>,
    next_msg: u64,
    /// (time, class, sequence, what).
    timers: BinaryHeap<Reverse<(Nanos, u8, u64, Ev)>>,
    seq: u64,
    /// Forwarded requests not yet decided.
    pending: usize,
    resolved: Vec<(u64, bool)>,
    /// Tickets of direct [`Strategy::admit`] calls.
    own_tickets: OwnTickets,
    peak: Vec<usize>,
}

impl Gubernator {
    /// `n` peers; `global` for the GLOBAL behaviour. `GlobalSyncWait` is
    /// `sync_wait` (gubernator's default 100 ms); the other settings take
    /// upstream's defaults (change them with the `with_` methods).
    pub fn new(
        n: usize,
        limit: u64,
        interval: Nanos,
        global: bool,
        drain: bool,
        sync_wait: Nanos,
    ) -> Self {
        let mut g = Self {
            global,
            drain,
            sync_wait: sync_wait.max(1),
            batch_wait: BATCH_WAIT,
            batch_limit: BATCH_LIMIT,
            global_batch_limit: BATCH_LIMIT,
            owner_rule: OwnerRule::Ring,
            tie: TieOrder::Random,
            limit: limit as i64,
            duration_ms: (interval / MILLI) as i64,
            n: 0,
            ring: Vec::new(),
            caches: Vec::new(),
            loops: FastMap::default(),
            eras: 0,
            msgs: FastMap::default(),
            statuses: FastMap::default(),
            next_msg: 0,
            timers: BinaryHeap::new(),
            seq: 0,
            pending: 0,
            resolved: Vec::new(),
            own_tickets: OwnTickets::default(),
            peak: Vec::new(),
        };
        g.set_peers(n);
        g
    }

    /// `BatchWait` (ns, at least 1) and `BatchLimit` of the peer clients.
    pub fn with_batch(mut self, wait: Nanos, limit: usize) -> Self {
        self.batch_wait = wait.max(1);
        self.batch_limit = limit.max(1);
        self
    }

    /// `GlobalBatchLimit`.
    pub fn with_global_batch_limit(mut self, limit: usize) -> Self {
        self.global_batch_limit = limit.max(1);
        self
    }

    /// Who owns a key.
    ///
    /// # Examples
    /// Forwarding on two peers, key 1 owned by peer 1 (`modulo`): peer 0's
    /// request waits in its batch and is decided when the batch reaches
    /// the owner, 500 µs + half a round trip later.
    /// ```
    /// use ratelab::fleet::{
    ///     Env, Gubernator, Latency, Network, OwnerRule, Strategy, TieOrder,
    /// };
    /// let mut g = Gubernator::new(2, 1, 1_000_000_000, false, true, 100_000_000)
    ///     .with_owner(OwnerRule::Modulo)
    ///     .with_tie_order(TieOrder::ArrivalsFirst);
    /// let mut env = Env::new(Network::new(Latency::Fixed(1_000_000), 0.0, ratelab::rng::sim_rng(1)));
    /// assert_eq!(g.owner_of(1), 1);
    /// assert!(g.admit_ticket(0, 1, 1, 0, &mut env, 7)?.is_none());
    /// // The owner's own request at 0.9 ms takes the only token first.
    /// g.advance(900_000, &mut env)?;
    /// assert!(g.admit_ticket(1, 1, 1, 900_000, &mut env, 8)?.unwrap().allowed);
    /// g.advance(1_000_000, &mut env)?;
    /// let mut done = Vec::new();
    /// g.resolved(&mut done);
    /// assert_eq!(done, vec![(7, false)]);
    /// # Ok::<(), ratelab::error::Error>(())
    /// ```
    pub fn with_owner(mut self, rule: OwnerRule) -> Self {
        self.owner_rule = rule;
        self.set_peers(self.n);
        self
    }

    /// Same-instant ties between arrivals and ticks.
    pub fn with_tie_order(mut self, tie: TieOrder) -> Self {
        self.tie = tie;
        self
    }

    /// The owner of `key` among the current peers.
    pub fn owner_of(&self, key: u32) -> usize {
        match self.owner_rule {
            OwnerRule::Ring => owner(&self.ring, key),
            OwnerRule::Modulo => key as usize % self.n.max(1),
        }
    }
}

/// Unix ms of virtual time `t` (`MillisecondNow`, `epochMillis`).
fn unix_ms(env: &Env, t: Nanos) -> i64 {
    (env.unix_ns(t) / MILLI) as i64
}

impl Strategy for Gubernator {
    fn advance(&mut self, t: Nanos, env: &mut Env) -> Result<()> {
        // Ticks at exactly `t` wait for the requests of the instant (they
        // come through `maybe_tick_first`).
        while let Some((at, _, _, ev)) =
            pop_due(&mut self.timers, |e| e.0 < t || (e.0 == t && e.1 != 1))
        {
            self.handle(at, ev, env)?;
        }
        Ok(())
    }

    fn admit(&mut self, p: usize, key: u32, w: u64, t: Nanos, env: &mut Env) -> Result<Decision> {
        let ticket = self.own_tickets.next();
        admit_settled(self, p, key, w, t, env, ticket)
    }

    fn admit_ticket(
        &mut self,
        p: usize,
        key: u32,
        w: u64,
        t: Nanos,
        env: &mut Env,
        ticket: u64,
    ) -> Result<Option<Decision>> {
        let o = self.owner_of(key);
        let hits = w as i64;
        let m = Msg {
            key,
            hits,
            created_ms: unix_ms(env, t),
            at: t,
            ticket,
        };
        if o == p || self.global {
            let id = if o == p {
                (p, LoopKind::Broadcast)
            } else {
                (p, LoopKind::Hits)
            };
            if self.global {
                self.maybe_tick_first(id, t, env)?;
            }
            let ok = self.decide(p, key, hits, t, m.created_ms, false, env);
            if self.global {
                self.arrive(id, m, t, env)?;
            }
            return Ok(Some(Decision::from_allowed(ok)));
        }
        let id = (p, LoopKind::Batch(o));
        self.pending += 1;
        self.maybe_tick_first(id, t, env)?;
        self.arrive(id, m, t, env)?;
        Ok(None)
    }

    fn resolved(&mut self, out: &mut Vec<(u64, bool)>) {
        out.append(&mut self.resolved);
    }

    fn settle(&mut self, env: &mut Env) -> Result<()> {
        while self.pending > 0 {
            let Some(Reverse((at, _, _, ev))) = self.timers.pop() else {
                break;
            };
            self.handle(at, ev, env)?;
        }
        Ok(())
    }

    fn resize(&mut self, n: usize, _t: Nanos) -> Result<()> {
        self.drop_loops(|&(p, k)| p < n && !matches!(k, LoopKind::Batch(o) if o >= n));
        self.caches.truncate(n);
        self.peak.truncate(n);
        self.set_peers(n);
        Ok(())
    }

    fn restart(&mut self, r: usize, _t: Nanos) -> Result<()> {
        self.caches[r].clear();
        self.drop_loops(|&(p, _)| p != r);
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
        assert!(token_bucket(&mut it, 0, 0, 2, 1000, 1, false));
        assert!(token_bucket(&mut it, 10, 10, 2, 1000, 1, false));
        assert!(!token_bucket(&mut it, 20, 20, 2, 1000, 1, false));
        assert!(it.unwrap().over);
        // Still alive at ExpireAt, gone after.
        assert!(!token_bucket(&mut it, 1000, 1000, 2, 1000, 1, false));
        assert!(token_bucket(&mut it, 1001, 1001, 2, 1000, 1, false));
        // An aggregate over the remaining takes nothing unless drained.
        let mut b = None;
        token_bucket(&mut b, 0, 0, 10, 1000, 4, false);
        assert!(!token_bucket(&mut b, 1, 1, 10, 1000, 7, false));
        assert_eq!(b.unwrap().remaining, 6);
        assert!(!token_bucket(&mut b, 1, 1, 10, 1000, 7, true));
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
