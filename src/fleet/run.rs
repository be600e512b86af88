//! One fleet run as a single [`Admit`]: the events in time order, the
//! balancer's pick, the strategy's decision, and the per-replica tallies
//! and timelines its report is built from.

use super::balancer::Balancer;
use super::strategy::{Cost, Env, Strategy};
use crate::clock::Nanos;
use crate::error::Result;
use crate::model::{Admit, Decision};
use crate::oracle::limiters::SlidingLogLimiter;
use std::sync::{Arc, Mutex};

/// The strategies' hash maps: ahash with its fixed keys (a fifth of the
/// CDN-edge fleet's time went to SipHash inserts; nothing depends on the
/// iteration order, which std's per-process random keys would vary).
pub(crate) type FastMap<K, V> =
    std::collections::HashMap<K, V, std::hash::BuildHasherDefault<ahash::AHasher>>;

/// Something that happens to the fleet at a virtual time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    /// The fleet now has this many replicas (new ones fresh, the highest
    /// indices removed first).
    ScaleTo(usize),
    /// The replica loses its state.
    Restart(usize),
    /// The replica is unreachable (true) or back (false); the balancer
    /// skips it meanwhile, as after an active health check.
    ReplicaDown(usize, bool),
    /// The store is unreachable (true) or back (false).
    StoreDown(bool),
}

/// An event at a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event {
    /// When, ns since the first request.
    pub at: Nanos,
    /// What.
    pub kind: EventKind,
}

/// One replica's share of a run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReplicaTally {
    /// Requests it served.
    pub requests: u64,
    /// Of which admitted.
    pub allowed: u64,
    /// Distinct keys it saw.
    pub keys: u64,
    /// Bytes of limiter state it holds at the end.
    pub memory_bytes: u64,
}

/// A strategy's settings as typed fields, so the fleet's tables and
/// charts never read them out of its label.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StrategyParams {
    /// The strategy's label without its sync period: the line a sync
    /// sweep draws.
    pub family: String,
    /// The sync period, for strategies that have one (ms).
    pub sync_ms: Option<u64>,
}

/// Who a fleet is: its strategy's and balancer's labels and settings.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Identity {
    /// The strategy's label.
    pub strategy: String,
    /// The strategy's settings.
    pub params: StrategyParams,
    /// The balancer's label.
    pub balancer: String,
    /// The balancer's type.
    pub balancer_type: String,
    /// The balancer has explicit weights.
    pub weighted: bool,
    /// The balancer's skew, when it has one.
    pub skew: Option<f64>,
}

/// What a fleet reports after its run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FleetReport {
    /// Replicas at the start.
    pub replicas: usize,
    /// Most replicas at once.
    pub peak_replicas: usize,
    /// The balancer's label.
    pub balancer: String,
    /// The strategy's label.
    pub strategy: String,
    /// Network and store costs.
    pub cost: Cost,
    /// Requests no replica could serve (all down), denied.
    pub unserved: u64,
    /// Per replica (every index that ever existed).
    pub per_replica: Vec<ReplicaTally>,
    /// Balancer state (ring, table, sticky pins), bytes.
    pub balancer_bytes: u64,
    /// The strategy's settings the charts read.
    pub params: StrategyParams,
    /// The balancer's type (`round_robin`, `maglev`, ...).
    pub balancer_type: String,
    /// The balancer has explicit weights.
    pub weighted: bool,
    /// The balancer's skew, when it has one.
    pub skew: Option<f64>,
    /// Requests admitted in each second of the run.
    pub admitted_per_s: Vec<u64>,
    /// Scale events: (time, replicas after).
    pub scale_events: Vec<(Nanos, usize)>,
    /// The events after which convergence is measured: (time, label).
    pub disturbances: Vec<(Nanos, String)>,
    /// Requests the fleet-wide exact sliding log admits in each second
    /// (kept by the first fleet of a run with events only).
    pub exact_per_s: Vec<u64>,
}

/// Where a fleet reads the Unix time of virtual time zero from: the
/// runner that feeds it knows it only at the first request (a trace's
/// first time). The runner implements this, so the fleet needs nothing of
/// the runner's types.
///
/// # Examples
///
/// ```
/// use ratelab::fleet::UnixOrigin;
/// struct Fixed(u64);
/// impl UnixOrigin for Fixed {
///     fn unix_ns(&self) -> Option<u64> {
///         Some(self.0)
///     }
/// }
/// assert_eq!(Fixed(7).unix_ns(), Some(7));
/// ```
pub trait UnixOrigin: Send {
    /// Unix ns of virtual time zero, once known.
    fn unix_ns(&self) -> Option<Nanos>;
}

/// Most one-second bins of the admitted timeline (a day).
const MAX_BINS: usize = 86_400;

/// A fleet as one [`Admit`]: events, balancer, strategy.
pub struct Fleet {
    n: usize,
    balancer: Balancer,
    strategy: Box<dyn Strategy>,
    events: Vec<Event>,
    next_event: usize,
    down: Vec<bool>,
    env: Env,
    tallies: Vec<ReplicaTally>,
    seen: Vec<Vec<u64>>,
    report: Arc<Mutex<FleetReport>>,
    unserved: u64,
    peak: usize,
    per_s: Vec<u64>,
    /// The fleet-wide exact policy and its admitted per second (for the
    /// time to converge).
    exact: Option<(SlidingLogLimiter, Vec<u64>)>,
    /// Requests whose decision the strategy makes later: ticket ->
    /// (replica, time, index in the batch's decisions).
    pending: FastMap<u64, (usize, Nanos, usize)>,
    resolved: Vec<(u64, bool)>,
    tickets: u64,
    /// The run's time origin, read into `env.origin_ns` at the first
    /// request it is known for (None: keep the Env's own).
    origin: Option<Box<dyn UnixOrigin>>,
}

/// Counts one admitted request in its one-second bin.
fn bin(v: &mut Vec<u64>, now: Nanos) {
    let b = (now / crate::clock::SECOND) as usize;
    if b < MAX_BINS {
        if b >= v.len() {
            v.resize(b + 1, 0);
        }
        v[b] += 1;
    }
}

impl Fleet {
    /// A fleet of `n` replicas; `events` in any order (sorted here,
    /// stable). The returned handle holds the report after the run.
    pub fn new(
        n: usize,
        mut balancer: Balancer,
        strategy: Box<dyn Strategy>,
        mut events: Vec<Event>,
        env: Env,
        id: Identity,
    ) -> (Self, Arc<Mutex<FleetReport>>) {
        events.sort_by_key(|e| e.at);
        let scale_events = events
            .iter()
            .filter_map(|e| match e.kind {
                EventKind::ScaleTo(m) => Some((e.at, m)),
                _ => None,
            })
            .collect();
        let disturbances = events
            .iter()
            .filter_map(|e| {
                let label = match e.kind {
                    EventKind::ScaleTo(m) => format!("scale to {m}"),
                    EventKind::Restart(r) => format!("restart of replica {r}"),
                    EventKind::ReplicaDown(r, false) => format!("replica {r} back"),
                    EventKind::StoreDown(false) => "store back".to_string(),
                    EventKind::ReplicaDown(_, true) | EventKind::StoreDown(true) => return None,
                };
                Some((e.at, label))
            })
            .collect();
        balancer.set_healthy((0..n).collect());
        let report = Arc::new(Mutex::new(FleetReport {
            replicas: n,
            peak_replicas: n,
            balancer: id.balancer,
            strategy: id.strategy,
            params: id.params,
            balancer_type: id.balancer_type,
            weighted: id.weighted,
            skew: id.skew,
            scale_events,
            disturbances,
            ..FleetReport::default()
        }));
        let fleet = Self {
            n,
            balancer,
            strategy,
            events,
            next_event: 0,
            down: vec![false; n],
            env,
            tallies: vec![ReplicaTally::default(); n],
            seen: vec![Vec::new(); n],
            report: Arc::clone(&report),
            unserved: 0,
            peak: n,
            per_s: Vec::new(),
            exact: None,
            pending: FastMap::default(),
            resolved: Vec::new(),
            tickets: 0,
            origin: None,
        };
        (fleet, report)
    }

    /// Takes the Unix time of virtual time zero from the run's origin (a
    /// trace's first request, a workload's epoch) once it is known: the
    /// stores' Unix-aligned windows and Redis's TIME follow it.
    pub fn with_origin(mut self, origin: Box<dyn UnixOrigin>) -> Self {
        self.origin = Some(origin);
        self
    }

    /// Also runs the fleet-wide exact sliding log (`limit` per `interval`)
    /// and records what it admits per second, for the time to converge.
    pub fn with_exact(mut self, limit: u64, interval: Nanos) -> Self {
        self.exact = Some((SlidingLogLimiter::new(limit, interval), Vec::new()));
        self
    }

    fn healthy(&self) -> Vec<usize> {
        (0..self.n).filter(|&r| !self.down[r]).collect()
    }

    fn apply(&mut self, e: Event) -> Result<()> {
        match e.kind {
            EventKind::ScaleTo(m) => {
                self.strategy.resize(m, e.at)?;
                self.n = m;
                self.down.resize(m, false);
                if self.tallies.len() < m {
                    self.tallies.resize(m, ReplicaTally::default());
                    self.seen.resize(m, Vec::new());
                }
                self.peak = self.peak.max(m);
                let h = self.healthy();
                self.balancer.set_healthy(h);
            }
            EventKind::Restart(r) if r < self.n => self.strategy.restart(r, e.at)?,
            EventKind::ReplicaDown(r, d) if r < self.n => {
                self.down[r] = d;
                let h = self.healthy();
                self.balancer.set_healthy(h);
            }
            EventKind::StoreDown(d) => self.env.store_down = d,
            // A replica that does not exist at that time: nothing to do.
            EventKind::Restart(_) | EventKind::ReplicaDown(..) => {}
        }
        Ok(())
    }

    fn publish(&self) {
        if let Ok(mut rep) = self.report.lock() {
            rep.cost = self.env.cost.clone();
            rep.unserved = self.unserved;
            rep.peak_replicas = self.peak;
            rep.balancer_bytes = self.balancer.memory_bytes();
            rep.admitted_per_s.clone_from(&self.per_s);
            if let Some((_, x)) = &self.exact {
                rep.exact_per_s.clone_from(x);
            }
            rep.per_replica = self
                .tallies
                .iter()
                .enumerate()
                .map(|(r, t)| {
                    let keys: u64 = self.seen[r].iter().map(|w| u64::from(w.count_ones())).sum();
                    ReplicaTally {
                        keys,
                        memory_bytes: self.strategy.memory_bytes(r, keys),
                        ..t.clone()
                    }
                })
                .collect();
        }
    }
}

impl Fleet {
    /// One request: events due, the exact policy, the strategy's timers,
    /// the balancer's pick and the strategy's decision (pushed to `out`,
    /// or a placeholder its ticket fills in later).
    fn step(&mut self, key: u32, w: u64, now: Nanos, out: &mut Vec<Decision>) -> Result<()> {
        while let Some(&e) = self.events.get(self.next_event) {
            if e.at > now {
                break;
            }
            self.next_event += 1;
            // The strategy's own timers before the event run without it
            // (a sync before an outage reaches the store).
            self.strategy
                .advance(e.at.saturating_sub(1), &mut self.env)?;
            self.collect(out);
            self.apply(e)?;
        }
        if let Some((x, bins)) = &mut self.exact
            && x.allow(key, w, now)
        {
            bin(bins, now);
        }
        self.strategy.advance(now, &mut self.env)?;
        self.collect(out);
        let Some(r) = self
            .balancer
            .pick_checked(key, now)?
            .filter(|&r| r < self.n)
        else {
            self.unserved += 1;
            out.push(Decision::DENY);
            return Ok(());
        };
        self.tickets += 1;
        let ticket = self.tickets;
        let t = &mut self.tallies[r];
        t.requests += 1;
        let bits = &mut self.seen[r];
        let (i, b) = (key as usize / 64, key % 64);
        if i >= bits.len() {
            bits.resize(i + 1, 0);
        }
        bits[i] |= 1 << b;
        match self
            .strategy
            .admit_ticket(r, key, w, now, &mut self.env, ticket)?
        {
            Some(d) => {
                self.record(r, now, d.allowed);
                out.push(d);
            }
            None => {
                self.pending.insert(ticket, (r, now, out.len()));
                out.push(Decision::DENY);
            }
        }
        self.collect(out);
        Ok(())
    }

    fn record(&mut self, r: usize, now: Nanos, allowed: bool) {
        if allowed {
            bin(&mut self.per_s, now);
            self.tallies[r].allowed += 1;
        }
    }

    /// Fills in the decisions the strategy has made since.
    fn collect(&mut self, out: &mut [Decision]) {
        if self.pending.is_empty() {
            return;
        }
        self.resolved.clear();
        self.strategy.resolved(&mut self.resolved);
        for (ticket, allowed) in std::mem::take(&mut self.resolved) {
            if let Some((r, now, i)) = self.pending.remove(&ticket) {
                self.record(r, now, allowed);
                if let Some(d) = out.get_mut(i) {
                    *d = Decision::from_allowed(allowed);
                }
            }
        }
    }
}

impl Admit for Fleet {
    fn admit(&mut self, key: u32, w: u64, now: Nanos) -> Result<Decision> {
        let mut out = Vec::with_capacity(1);
        self.admit_batch(&[(key, w, now)], &mut out)?;
        Ok(out[0])
    }

    /// In time order; a decision the strategy makes later than its request
    /// (gubernator forwarding) is filled in when the strategy's clock
    /// passes it, and the ones still pending at the end of the batch are
    /// settled then (a request of the next batch earlier than such a
    /// decision is then seen after it: exact within a batch of 65,536).
    fn admit_batch(&mut self, reqs: &[(u32, u64, Nanos)], out: &mut Vec<Decision>) -> Result<()> {
        if let Some(t) = self.origin.as_ref().and_then(|o| o.unix_ns()) {
            self.env.origin_ns = t;
            self.origin = None;
        }
        out.reserve(reqs.len());
        for &(key, w, now) in reqs {
            self.step(key, w, now, out)?;
        }
        if !self.pending.is_empty() {
            self.strategy.settle(&mut self.env)?;
            self.collect(out);
            // A strategy settles every ticket; one it did not stays denied.
            self.pending.clear();
        }
        self.publish();
        Ok(())
    }

    fn memory_bytes(&self, _keys: u64) -> u64 {
        // The fleet's whole state: every replica's (at the end) and the
        // balancer's.
        let per: u64 = (0..self.n)
            .map(|r| {
                let keys: u64 = self.seen[r].iter().map(|w| u64::from(w.count_ones())).sum();
                self.strategy.memory_bytes(r, keys)
            })
            .sum();
        per + self.balancer.memory_bytes()
    }
}
