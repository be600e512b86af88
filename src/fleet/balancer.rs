//! Load balancers: which replica serves a request.
//!
//! The hashing balancers are built as Envoy builds them, on the limit key
//! (Envoy's `hash_policy` on a header: `HashUtil::xxHash64(value)`, seed
//! 0). Replica `i` is the host `10.0.<i / 250>.<i % 250 + 1>:8080`, the
//! string Envoy hashes for a host without `use_hostname_for_hashing`.
//!
//! * ring hash (envoyproxy/envoy at e7495d2,
//!   `source/extensions/load_balancing_policies/ring_hash/
//!   ring_hash_lb.cc`): `Ring::Ring` (lines 143-239: hashes
//!   `"<address>_<i>"`, scale = `min(ceil(min_w * min_ring_size) / min_w,
//!   max_ring_size)` at 160-162, running sums `current_hashes <
//!   target_hashes` at 202-221, sorted by hash at 226-228) and
//!   `Ring::chooseHost` (93-140: the ketama binary search with signed
//!   indices, ported as is: a hash above the last point or at most the
//!   first wraps to the first);
//! * maglev (envoyproxy/envoy at a6b64f4, `.../maglev/maglev_lb.cc`):
//!   `constructMaglevTableInternal` (88-140: hosts sorted by address at
//!   110, offset `xxHash64(addr) % M` and skip `xxHash64(addr, 1) % (M -
//!   1) + 1` at 120-122) and
//!   `OriginalMaglevTable::constructImplementationInternals` (142-172:
//!   each round a host claims its next free slot when `iteration * weight
//!   >= target_weight`, line 156; the compact table Envoy picks for few
//!   hosts, 183-225, fills the same slots), lookup `table[hash % M]`
//!   (`chooseHost`, 253-266); M = 65537 by default
//!   (`MaglevTable::DefaultTableSize`, a prime);
//! * least request: Envoy's `LeastRequestLoadBalancer::unweightedHostPick`
//!   (`choice_count` draws with replacement, the first of the fewest
//!   active requests kept); a request is active for `service_ms`.
//! * round robin with weights: an earliest-deadline-first pick (Envoy's
//!   `EdfScheduler`: deadline += 1 / weight, ties to the lower index).
//! * from the trace: the replica each line names (a `replica` column, or
//!   an access log's `$upstream_addr` / `%UPSTREAM_HOST%`), replicas
//!   numbered in order of first appearance; see [`ReplicaFeed`].

use crate::clock::Nanos;
use crate::error::Result;
use crate::rng::SimRng;
use crate::workload::trace::TraceReader;
use rand::Rng;
use std::collections::HashMap;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use xxhash_rust::xxh64::xxh64;

/// The address Envoy would hash for replica `i`.
///
/// # Examples
/// ```
/// use ratelab::fleet::host_address;
/// assert_eq!(host_address(0), "10.0.0.1:8080");
/// assert_eq!(host_address(251), "10.0.1.2:8080");
/// ```
pub fn host_address(i: usize) -> String {
    format!("10.0.{}.{}:8080", i / 250, i % 250 + 1)
}

/// The hash of a limit key, as Envoy's header hash policy computes it.
pub fn key_hash(key: u32) -> u64 {
    xxh64(key.to_string().as_bytes(), 0)
}

/// Bytes of the ring or table `kind` builds over `hosts` replicas of
/// `weights` (missing weights are 1), as [`Balancer::memory_bytes`]
/// counts them: estimated before any fleet is built (an Envoy ring can be
/// 8 M entries, 128 MB). 0 for a balancer without one.
///
/// # Examples
///
/// ```
/// use ratelab::fleet::{table_bytes, BalancerKind};
/// let maglev = BalancerKind::Maglev { table_size: 65_537 };
/// assert_eq!(table_bytes(&maglev, &[], 4), 65_537 * 8);
/// ```
pub fn table_bytes(kind: &BalancerKind, weights: &[f64], hosts: usize) -> u64 {
    match *kind {
        BalancerKind::Maglev { table_size } if hosts > 0 => table_size.saturating_mul(8),
        BalancerKind::RingHash {
            min_ring_size,
            max_ring_size,
        } if hosts > 0 => {
            // The entries `ring` makes: its scale, rounded up.
            let w: Vec<f64> = (0..hosts)
                .map(|h| weights.get(h).copied().unwrap_or(1.0))
                .collect();
            let total: f64 = w.iter().sum();
            let min_w = w.iter().map(|x| x / total).fold(f64::INFINITY, f64::min);
            let scale = ((min_w * min_ring_size as f64).ceil() / min_w).min(max_ring_size as f64);
            if scale.is_finite() {
                (scale.ceil() as u64).saturating_mul(16)
            } else {
                max_ring_size.saturating_mul(16)
            }
        }
        _ => 0,
    }
}

/// Envoy's ring (`Ring::Ring`): `(hash, host)` sorted by hash.
pub fn ring(
    hosts: &[usize],
    weights: &[f64],
    min_ring_size: u64,
    max_ring_size: u64,
) -> Vec<(u64, usize)> {
    if hosts.is_empty() {
        return Vec::new();
    }
    let total: f64 = hosts.iter().map(|&h| weights[h]).sum();
    let norm: Vec<f64> = hosts.iter().map(|&h| weights[h] / total).collect();
    let min_w = norm.iter().copied().fold(f64::INFINITY, f64::min);
    let scale = ((min_w * min_ring_size as f64).ceil() / min_w).min(max_ring_size as f64);
    let mut ring = Vec::with_capacity(scale.ceil() as usize);
    let mut current = 0.0f64;
    let mut target = 0.0f64;
    for (&h, &w) in hosts.iter().zip(&norm) {
        let addr = host_address(h);
        target += scale * w;
        let mut i: u64 = 0;
        while current < target {
            let hk = format!("{addr}_{i}");
            ring.push((xxh64(hk.as_bytes(), 0), h));
            i += 1;
            current += 1.0;
        }
    }
    // std::sort by hash alone: equal hashes (never seen in practice) keep
    // an unspecified order there; a stable sort here.
    ring.sort_by_key(|&(hash, _)| hash);
    ring
}

/// `Ring::chooseHost` (ketama_get_server), signed indices as upstream.
pub fn ring_pick(ring: &[(u64, usize)], h: u64) -> Option<usize> {
    if ring.is_empty() {
        return None;
    }
    let n = ring.len() as i64;
    let mut lowp: i64 = 0;
    let mut highp: i64 = n;
    let midp: i64;
    loop {
        let mid = (lowp + highp) / 2;
        if mid == n {
            midp = 0;
            break;
        }
        let midval = ring[mid as usize].0;
        let midval1 = if mid == 0 {
            0
        } else {
            ring[mid as usize - 1].0
        };
        if h <= midval && h > midval1 {
            midp = mid;
            break;
        }
        if midval < h {
            lowp = mid + 1;
        } else {
            highp = mid - 1;
        }
        if lowp > highp {
            midp = 0;
            break;
        }
    }
    Some(ring[midp as usize].1)
}

/// Envoy's original Maglev table of `m` slots over `hosts`.
pub fn maglev(hosts: &[usize], weights: &[f64], m: u64) -> Vec<usize> {
    if hosts.is_empty() {
        return Vec::new();
    }
    let total: f64 = hosts.iter().map(|&h| weights[h]).sum();
    struct Entry {
        host: usize,
        offset: u64,
        skip: u64,
        weight: f64,
        target: f64,
        next: u64,
    }
    let mut sorted: Vec<(String, usize)> = hosts.iter().map(|&h| (host_address(h), h)).collect();
    sorted.sort();
    let mut entries: Vec<Entry> = sorted
        .iter()
        .map(|(addr, h)| Entry {
            host: *h,
            offset: xxh64(addr.as_bytes(), 0) % m,
            skip: xxh64(addr.as_bytes(), 1) % (m - 1) + 1,
            weight: weights[*h] / total,
            target: 0.0,
            next: 0,
        })
        .collect();
    let max_w = entries.iter().map(|e| e.weight).fold(0.0, f64::max);
    let mut table: Vec<usize> = vec![usize::MAX; m as usize];
    let mut filled: u64 = 0;
    let mut iteration: u32 = 1;
    let perm =
        |e: &Entry| ((e.offset as u128 + e.skip as u128 * e.next as u128) % m as u128) as usize;
    while filled < m {
        for e in entries.iter_mut() {
            if filled >= m {
                break;
            }
            if f64::from(iteration) * e.weight < e.target {
                continue;
            }
            e.target += max_w;
            let mut c = perm(e);
            while table[c] != usize::MAX {
                e.next += 1;
                c = perm(e);
            }
            table[c] = e.host;
            e.next += 1;
            filled += 1;
        }
        iteration += 1;
    }
    table
}

/// What a ring or Maglev table is built from: the kind (0 ring, 1 Maglev),
/// its sizes, the healthy hosts and their weights' bits.
type BuiltKey = (u8, u64, u64, Vec<usize>, Vec<u64>);

fn built_key(kind: u8, a: u64, b: u64, hosts: &[usize], weights: &[f64]) -> BuiltKey {
    let bits = hosts.iter().map(|&h| weights[h].to_bits()).collect();
    (kind, a, b, hosts.to_vec(), bits)
}

/// The last few rings and tables built, shared. A ring or table is a pure
/// function of its [`BuiltKey`], and Envoy's largest (an 8M-entry ring, a
/// 5,000,011-slot table) take a second or more to build: every fleet of a
/// grid, and every setting `recommend` measures on a fleet, built its own,
/// and `recommend --replicas 8 --balancer '{"type": "maglev", "table_size":
/// 5000011}'` ran for minutes. Sharing them changes no pick.
static RINGS: Built<Vec<(u64, usize)>> = Mutex::new(Vec::new());
static TABLES: Built<Vec<usize>> = Mutex::new(Vec::new());

/// A cache of built rings or tables, oldest first.
type Built<T> = Mutex<Vec<(BuiltKey, Arc<T>)>>;

/// How many built rings (and tables) are kept for reuse: a grid's fleets
/// share one host set, and a scale event adds a few more.
const KEEP_BUILT: usize = 4;

/// The ring or table of `key` from `cache`, built by `build` when missing
/// (and then kept, the oldest dropped beyond [`KEEP_BUILT`]).
fn built<T>(cache: &Built<T>, key: BuiltKey, build: impl FnOnce() -> T) -> Arc<T> {
    if let Some(hit) = cache
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .find(|(k, _)| *k == key)
    {
        return hit.1.clone();
    }
    // Built outside the lock: fleets on other threads go on meanwhile (two
    // may build the same one; both are equal).
    let new = Arc::new(build());
    let mut c = cache.lock().unwrap_or_else(|e| e.into_inner());
    if !c.iter().any(|(k, _)| *k == key) {
        if c.len() >= KEEP_BUILT {
            c.remove(0);
        }
        c.push((key, new.clone()));
    }
    new
}

/// How a balancer picks.
#[derive(Debug, Clone, PartialEq)]
pub enum BalancerKind {
    /// Each healthy replica in turn (weighted: earliest deadline first).
    RoundRobin,
    /// Uniformly (weighted: in proportion) at random.
    Random,
    /// `choice_count` random draws, the fewest active requests wins.
    LeastRequest {
        /// Draws per pick (Envoy's default 2).
        choice_count: u32,
        /// How long a request stays active.
        service: Nanos,
    },
    /// Envoy's ring hash on the key.
    RingHash {
        /// `minimum_ring_size` (Envoy's default 1024).
        min_ring_size: u64,
        /// `maximum_ring_size` (Envoy's default 8M).
        max_ring_size: u64,
    },
    /// Envoy's Maglev on the key.
    Maglev {
        /// Table size, a prime (Envoy's default 65537).
        table_size: u64,
    },
    /// A client (key) stays on one replica for a connection's life, then
    /// reconnects to a random replica.
    Sticky {
        /// Mean connection life (exponential), ns.
        mean_connection: Nanos,
    },
    /// The replica the trace names for each request.
    FromTrace {
        /// The CSV column / JSON field / access-log field naming it.
        field: String,
    },
}

/// The replica that served each request, read from the trace in step with
/// the requests: a second reader over the same lines, in the same order,
/// whose key is the replica field. Replicas are numbered in order of first
/// appearance. nginx's `$upstream_addr` lists every upstream tried
/// (`a:80, b:80` after a retry, `a : b` after an internal redirect): the
/// last one answered, and it is the one taken. A `-` or empty value (Envoy
/// writes `-` when no upstream was chosen, e.g. a local reply) is a
/// request no replica served.
pub struct ReplicaFeed {
    reader: TraceReader,
    ids: HashMap<String, usize>,
    t0: Option<Nanos>,
    max: usize,
}

impl ReplicaFeed {
    /// A feed over `reader` allowing `max` distinct replicas.
    pub fn new(reader: TraceReader, max: usize) -> Self {
        Self {
            reader,
            ids: HashMap::new(),
            t0: None,
            max,
        }
    }

    /// The replica of the next request, which the lab decides at `now`
    /// (ns since the first request); an error when the feed is out of step
    /// or names more replicas than the fleet has.
    pub fn next(&mut self, now: Nanos) -> Result<Option<usize>> {
        let (t, name) = match self.reader.next_ref() {
            Some(Ok((t, name, _))) => (t, last_upstream(name).to_string()),
            Some(Err(e)) => return Err(e),
            None => {
                return Err(self
                    .reader
                    .file_error("the replica column ended before the requests"))
            }
        };
        let start = *self.t0.get_or_insert(t);
        if t - start != now {
            return Err(self.reader.line_error(format!(
                "replica {name:?} at {} ns, but the request decided is at {now} ns: the replicas must come from the trace's own lines",
                t - start
            )));
        }
        if name.is_empty() || name == "-" {
            return Ok(None);
        }
        let next = self.ids.len();
        let id = *self.ids.entry(name.clone()).or_insert(next);
        if id >= self.max {
            return Err(self.reader.line_error(format!(
                "replica {name:?} is distinct replica number {}: deployment.replicas is {}",
                id + 1,
                self.max
            )));
        }
        Ok(Some(id))
    }
}

/// The upstream that answered, from an `$upstream_addr` value.
///
/// # Examples
/// ```
/// use ratelab::fleet::last_upstream;
/// assert_eq!(last_upstream("10.0.0.1:80, 10.0.0.2:80"), "10.0.0.2:80");
/// assert_eq!(last_upstream("10.0.0.1:80 : 10.0.0.3:80"), "10.0.0.3:80");
/// assert_eq!(last_upstream("pod-a"), "pod-a");
/// ```
pub fn last_upstream(v: &str) -> &str {
    let v = v.rsplit(", ").next().unwrap_or(v);
    v.rsplit(" : ").next().unwrap_or(v).trim()
}

/// A balancer over the replicas `0..n`, some of which may be down.
pub struct Balancer {
    kind: BalancerKind,
    weights: Vec<f64>,
    healthy: Vec<usize>,
    rr_next: usize,
    deadlines: Vec<f64>,
    active: Vec<VecDeque<Nanos>>,
    ring: Arc<Vec<(u64, usize)>>,
    table: Arc<Vec<usize>>,
    sticky: Vec<(u32, Nanos)>,
    rng: SimRng,
    /// The healthy replicas' weights differ.
    uneven: bool,
    feed: Option<Box<ReplicaFeed>>,
}

impl Balancer {
    /// A balancer of `kind` with per-replica `weights` (indexed by replica;
    /// replicas beyond the list weigh 1).
    pub fn new(kind: BalancerKind, weights: Vec<f64>, rng: SimRng) -> Self {
        Self {
            kind,
            weights,
            healthy: Vec::new(),
            rr_next: 0,
            deadlines: Vec::new(),
            active: Vec::new(),
            ring: Arc::default(),
            table: Arc::default(),
            sticky: Vec::new(),
            rng,
            uneven: false,
            feed: None,
        }
    }

    /// Reads each request's replica from `feed` (the `from_trace` kind).
    pub fn with_feed(mut self, feed: ReplicaFeed) -> Self {
        self.feed = Some(Box::new(feed));
        self
    }

    /// The replica serving a request of `key` at `t`, as [`pick`](Self::pick),
    /// or the one the trace names (whether or not it is healthy: the log
    /// records who served it).
    pub fn pick_checked(&mut self, key: u32, t: Nanos) -> Result<Option<usize>> {
        match &mut self.feed {
            Some(f) => f.next(t),
            None => Ok(self.pick(key, t)),
        }
    }

    fn weight(&self, r: usize) -> f64 {
        self.weights.get(r).copied().unwrap_or(1.0)
    }

    fn weighted(&self) -> bool {
        self.uneven
    }

    /// The healthy replicas changed: rebuild what depends on them (as
    /// Envoy rebuilds its ring or table on a host-set change).
    pub fn set_healthy(&mut self, healthy: Vec<usize>) {
        let n = healthy.iter().max().map_or(0, |m| m + 1);
        self.healthy = healthy;
        self.uneven = self
            .healthy
            .iter()
            .any(|&h| self.weight(h) != self.weight(self.healthy[0]));
        let w: Vec<f64> = (0..n).map(|r| self.weight(r)).collect();
        if self.active.len() < n {
            self.active.resize_with(n, VecDeque::new);
        }
        self.deadlines = self.healthy.iter().map(|&h| 1.0 / w[h]).collect();
        match self.kind {
            BalancerKind::RingHash {
                min_ring_size,
                max_ring_size,
            } => {
                let key = built_key(0, min_ring_size, max_ring_size, &self.healthy, &w);
                self.ring = built(&RINGS, key, || {
                    ring(&self.healthy, &w, min_ring_size, max_ring_size)
                });
            }
            BalancerKind::Maglev { table_size } => {
                let key = built_key(1, table_size, 0, &self.healthy, &w);
                self.table = built(&TABLES, key, || maglev(&self.healthy, &w, table_size));
            }
            _ => {}
        }
    }

    /// The replica serving a request of `key` at `t` (`None`: none is up).
    pub fn pick(&mut self, key: u32, t: Nanos) -> Option<usize> {
        let n = self.healthy.len();
        if n == 0 {
            return None;
        }
        Some(match self.kind {
            BalancerKind::RoundRobin if !self.weighted() => {
                let r = self.healthy[self.rr_next % n];
                self.rr_next = (self.rr_next + 1) % n;
                r
            }
            BalancerKind::RoundRobin => {
                let mut best = 0;
                for i in 1..n {
                    if self.deadlines[i] < self.deadlines[best] {
                        best = i;
                    }
                }
                let h = self.healthy[best];
                self.deadlines[best] += 1.0 / self.weight(h);
                h
            }
            BalancerKind::Random => self.random_pick(),
            BalancerKind::LeastRequest {
                choice_count,
                service,
            } => {
                let mut cand: Option<usize> = None;
                for _ in 0..choice_count.max(1) {
                    let c = self.healthy[self.rng.random_range(0..n)];
                    let q = &mut self.active[c];
                    while q.front().is_some_and(|&f| f <= t) {
                        q.pop_front();
                    }
                    let better = match cand {
                        None => true,
                        Some(b) => self.active[c].len() < self.active[b].len(),
                    };
                    if better {
                        cand = Some(c);
                    }
                }
                let c = cand.unwrap_or(self.healthy[0]);
                self.active[c].push_back(t + service);
                c
            }
            BalancerKind::RingHash { .. } => ring_pick(&self.ring, key_hash(key))?,
            BalancerKind::Maglev { table_size } => {
                self.table[(key_hash(key) % table_size) as usize]
            }
            BalancerKind::Sticky { mean_connection } => {
                let k = key as usize;
                if k >= self.sticky.len() {
                    self.sticky.resize(k + 1, (u32::MAX, 0));
                }
                let (r, until) = self.sticky[k];
                if r != u32::MAX && t < until && self.healthy.contains(&(r as usize)) {
                    r as usize
                } else {
                    let r = self.random_pick();
                    let u: f64 = self.rng.random::<f64>();
                    let life = -libm::log(1.0 - u) * mean_connection as f64;
                    self.sticky[k] = (r as u32, t.saturating_add(life as Nanos).max(t + 1));
                    r
                }
            }
            // Without its feed (never built so): the first healthy one.
            BalancerKind::FromTrace { .. } => self.healthy[0],
        })
    }

    fn random_pick(&mut self) -> usize {
        let n = self.healthy.len();
        if !self.weighted() {
            return self.healthy[self.rng.random_range(0..n)];
        }
        let total: f64 = self.healthy.iter().map(|&h| self.weight(h)).sum();
        let mut x = self.rng.random::<f64>() * total;
        for &h in &self.healthy {
            x -= self.weight(h);
            if x < 0.0 {
                return h;
            }
        }
        self.healthy[n - 1]
    }

    /// Bytes the balancer holds (its ring or table, sticky pins).
    pub fn memory_bytes(&self) -> u64 {
        let feed = self.feed.as_ref().map_or(0, |f| f.ids.len() * 48);
        (self.ring.len() * 16 + self.table.len() * 8 + self.sticky.len() * 12 + feed) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::sim_rng;

    /// Balancers of one kind, size and host set share one ring or table
    /// (built once: fleets of a grid and recommend's settings each built
    /// their own, minutes for Envoy's largest), equal to a fresh build; a
    /// host set the cache never saw gets its own.
    #[test]
    fn balancers_of_one_host_set_share_their_ring_or_table() {
        let hosts: Vec<usize> = (0..5).collect();
        let w = [1.0, 2.0, 1.0, 1.0, 3.0];
        let make = |kind: BalancerKind, healthy: Vec<usize>| {
            let mut b = Balancer::new(kind, w.to_vec(), sim_rng(1));
            b.set_healthy(healthy);
            b
        };
        let maglev_kind = BalancerKind::Maglev { table_size: 10007 };
        let (a, b) = (
            make(maglev_kind.clone(), hosts.clone()),
            make(maglev_kind.clone(), hosts.clone()),
        );
        assert!(Arc::ptr_eq(&a.table, &b.table));
        assert_eq!(*a.table, maglev(&hosts, &w, 10007));
        let c = make(maglev_kind, vec![0, 1, 2, 3]);
        assert!(!Arc::ptr_eq(&a.table, &c.table));
        assert_eq!(*c.table, maglev(&[0, 1, 2, 3], &w, 10007));
        let ring_kind = BalancerKind::RingHash {
            min_ring_size: 2048,
            max_ring_size: 4096,
        };
        let (a, b) = (
            make(ring_kind.clone(), hosts.clone()),
            make(ring_kind, hosts.clone()),
        );
        assert!(Arc::ptr_eq(&a.ring, &b.ring));
        assert_eq!(*a.ring, ring(&hosts, &w, 2048, 4096));
    }

    #[test]
    fn maglev_fills_every_slot_evenly() {
        let hosts: Vec<usize> = (0..8).collect();
        let t = maglev(&hosts, &[1.0; 8], 65537);
        let mut count = [0u64; 8];
        for &h in &t {
            count[h] += 1;
        }
        // Equal weights: every host claims one slot a round, so the
        // counts differ by at most one.
        let (lo, hi) = (count.iter().min().unwrap(), count.iter().max().unwrap());
        assert!(hi - lo <= 1, "{count:?}");
        assert_eq!(count.iter().sum::<u64>(), 65537);
    }

    #[test]
    fn maglev_moves_few_keys_when_a_host_leaves() {
        let all: Vec<usize> = (0..10).collect();
        let less: Vec<usize> = (0..9).collect();
        let a = maglev(&all, &[1.0; 10], 65537);
        let b = maglev(&less, &[1.0; 10], 65537);
        let moved = a.iter().zip(&b).filter(|(x, y)| x != y && **x != 9).count();
        // Slots of the surviving hosts that change owner: a few percent.
        assert!(moved < 65537 / 10, "{moved}");
    }

    #[test]
    fn ring_has_the_scaled_size_and_picks_the_next_point() {
        let hosts: Vec<usize> = (0..3).collect();
        let r = ring(&hosts, &[1.0; 3], 1024, 8 << 20);
        // min weight 1/3: ceil(1024 / 3) * 3 = 1026 points.
        assert_eq!(r.len(), 1026);
        assert!(r.windows(2).all(|w| w[0].0 <= w[1].0));
        let h = r[10].0 - 1;
        assert_eq!(ring_pick(&r, h), Some(r[10].1));
        assert_eq!(ring_pick(&r, r[10].0), Some(r[10].1));
        assert_eq!(ring_pick(&r, u64::MAX), Some(r[0].1));
    }

    #[test]
    fn round_robin_cycles_and_weights_follow_edf() {
        let mut b = Balancer::new(BalancerKind::RoundRobin, vec![], sim_rng(1));
        b.set_healthy(vec![0, 1, 2]);
        let p: Vec<usize> = (0..6).map(|i| b.pick(0, i).unwrap()).collect();
        assert_eq!(p, vec![0, 1, 2, 0, 1, 2]);
        let mut w = Balancer::new(BalancerKind::RoundRobin, vec![3.0, 1.0], sim_rng(1));
        w.set_healthy(vec![0, 1]);
        let c0 = (0..400).filter(|&i| w.pick(0, i).unwrap() == 0).count();
        assert_eq!(c0, 300);
    }

    #[test]
    fn sticky_keeps_a_client_on_one_replica_within_a_connection() {
        let mut b = Balancer::new(
            BalancerKind::Sticky {
                mean_connection: 1_000_000_000_000,
            },
            vec![],
            sim_rng(2),
        );
        b.set_healthy((0..8).collect());
        let first = b.pick(5, 0).unwrap();
        assert!((1..100).all(|i| b.pick(5, i).unwrap() == first));
    }
}
