//! What a replica does with a request: the coordination strategies share
//! one seam ([`Strategy`]) so the fleet around them (balancer, events,
//! network, costs) is written once.
//!
//! `local` and `divided` are here: each replica runs its own copy of a lab
//! model (any row of the decision lab's table, `exec` included: one child
//! per replica), with the full limit or the limit divided by the replica
//! count. The store-backed strategies have their own files.
//!
//! No gateway we could find divides a limit by the replica count in its
//! code; `divided` models what operators are told to do by hand. At
//! nginx/nginx-gateway-fabric e55bfe3 the `RateLimitPolicy` becomes
//! `limit_req` on every NGINX instance with the limit as written
//! (`internal/controller/nginx/config/policies/ratelimit/generator.go`;
//! `docs/proposals/rate-limiting.md:29`: "each NGINX instance will have
//! independent limits"), and a `Scale` field that would compute the rate
//! from the number of replicas is future work (same file, line 467).
//! Kyma's `RateLimit` resource (kyma-project/api-gateway,
//! `docs/user/custom-resources/ratelimit/04-00-ratelimit.md`) configures
//! Envoy's local token bucket on each selected pod, undivided. So the
//! rounding, the margin and whether a scale event re-divides are
//! switches here, not one source's behaviour: floor (integer division)
//! is what a hand-written `limit / replicas` gives, and `redivide`
//! stands for redeploying the configuration when the replica count
//! changes (fresh state on every replica, as a reload gives).

use super::central::TIME_ZERO_UNIX_S;
use super::network::Network;
use crate::clock::Nanos;
use crate::error::Result;
use crate::model::{Admit, Decision};

/// What the strategies share with the fleet: the network, whether the
/// store is reachable, the cost counters, and where virtual time zero
/// sits on the Unix clock.
pub struct Env {
    /// Round trips and losses.
    pub net: Network,
    /// The store is unreachable (an outage event).
    pub store_down: bool,
    /// Cost counters.
    pub cost: Cost,
    /// Unix ns of virtual time zero. Every window upstream aligns to Unix
    /// time (envoyproxy/ratelimit's cache key, Kong's periods) and every
    /// Redis `TIME` reads the clock through [`Env::unix_ns`], so this one
    /// field moves them all. Default [`TIME_ZERO_UNIX_S`] seconds.
    pub origin_ns: u64,
}

/// What a strategy costs, summed over the run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Cost {
    /// Commands the shared store executed (`INCRBY` and `EXPIRE` are two).
    pub store_ops: u64,
    /// Messages on the network (a round trip is two).
    pub messages: u64,
    /// Time requests waited for the network before their decision, ns.
    pub added_latency_ns: u128,
    /// Requests decided by the failure mode (store unreachable or lost).
    pub failed: u64,
}

impl Env {
    /// An environment on `net`: store up, no costs yet, virtual zero at
    /// [`TIME_ZERO_UNIX_S`].
    ///
    /// # Examples
    /// ```
    /// use ratelab::fleet::{Env, Latency, Network, TIME_ZERO_UNIX_S};
    /// let mut e = Env::new(Network::new(Latency::Fixed(1_000_000), 0.0, ratelab::rng::sim_rng(1)));
    /// assert_eq!(e.unix_ns(5), TIME_ZERO_UNIX_S * 1_000_000_000 + 5);
    /// e.origin_ns = 7_000_000_000;
    /// assert_eq!(e.unix_ns(500_000_000), 7_500_000_000);
    /// ```
    pub fn new(net: Network) -> Self {
        Self {
            net,
            store_down: false,
            cost: Cost::default(),
            origin_ns: TIME_ZERO_UNIX_S * crate::clock::SECOND,
        }
    }

    /// Unix ns of virtual time `t` (the one place virtual time becomes
    /// wall-clock time).
    pub fn unix_ns(&self, t: Nanos) -> u64 {
        self.origin_ns.saturating_add(t)
    }

    /// A round trip to the store: its time, or `None` when the store is
    /// down or the message is lost (the request then waits a timeout the
    /// model does not charge).
    pub fn round_trip(&mut self, ops: u64) -> Option<Nanos> {
        self.round_trip_on(None, ops)
    }

    /// [`Env::round_trip`] over replica `r`'s link (`network.per_replica`).
    pub fn round_trip_for(&mut self, r: usize, ops: u64) -> Option<Nanos> {
        self.round_trip_on(Some(r), ops)
    }

    fn round_trip_on(&mut self, r: Option<usize>, ops: u64) -> Option<Nanos> {
        if self.store_down || self.net.lost() {
            self.cost.failed += 1;
            return None;
        }
        let rtt = match r {
            Some(r) => self.net.rtt_for(r),
            None => self.net.rtt(),
        };
        self.cost.store_ops += ops;
        self.cost.messages += 2;
        self.cost.added_latency_ns += u128::from(rtt);
        Some(rtt)
    }
}

/// The tickets a strategy gives its own direct [`Strategy::admit`] calls:
/// counted down from the top of the range, so they never meet the
/// fleet's, counted up from 1.
#[derive(Debug, Default)]
pub(crate) struct OwnTickets(u64);

impl OwnTickets {
    /// The next ticket.
    pub(crate) fn next(&mut self) -> u64 {
        self.0 += 1;
        u64::MAX - self.0
    }
}

/// [`Strategy::admit`] of a strategy that decides through tickets: the
/// request under `ticket` (the strategies count their own down from the
/// top of the range, the fleet's up from 1), settled at once if its
/// decision is pending. One body for the store-backed strategies, so a
/// direct `admit` (the reference tests) decides as the fleet does.
pub(crate) fn admit_settled<S: Strategy + ?Sized>(
    s: &mut S,
    r: usize,
    key: u32,
    w: u64,
    t: Nanos,
    env: &mut Env,
    ticket: u64,
) -> Result<Decision> {
    if let Some(d) = s.admit_ticket(r, key, w, t, env, ticket)? {
        return Ok(d);
    }
    s.settle(env)?;
    let mut out = Vec::new();
    s.resolved(&mut out);
    Ok(Decision::from_allowed(
        out.iter().any(|&(x, allowed)| x == ticket && allowed),
    ))
}

/// A coordination strategy over replicas `0..n`.
pub trait Strategy: Send {
    /// Decides a request of `key` served by replica `r` at `t`.
    fn admit(&mut self, r: usize, key: u32, w: u64, t: Nanos, env: &mut Env) -> Result<Decision>;
    /// Like [`Strategy::admit`], for a strategy whose decision is made
    /// later than the request (gubernator's owner decides a forwarded
    /// request when its batch arrives): `None` means pending, and the
    /// decision comes out of [`Strategy::resolved`] under `ticket` once
    /// the strategy's clock passes it. The default decides at once.
    fn admit_ticket(
        &mut self,
        r: usize,
        key: u32,
        w: u64,
        t: Nanos,
        env: &mut Env,
        _ticket: u64,
    ) -> Result<Option<Decision>> {
        self.admit(r, key, w, t, env).map(Some)
    }
    /// Moves the decisions made since the last call to `out` as
    /// `(ticket, allowed)`.
    fn resolved(&mut self, _out: &mut Vec<(u64, bool)>) {}
    /// Decides every pending request now, running what is due until none
    /// is left (the end of the requests the fleet was handed).
    fn settle(&mut self, _env: &mut Env) -> Result<()> {
        Ok(())
    }
    /// Runs what is due before `t` (timers, syncs).
    fn advance(&mut self, _t: Nanos, _env: &mut Env) -> Result<()> {
        Ok(())
    }
    /// The fleet now has `n` replicas (new ones start fresh; removed ones
    /// lose their state).
    fn resize(&mut self, n: usize, t: Nanos) -> Result<()>;
    /// Replica `r` restarts: its local state is lost.
    fn restart(&mut self, r: usize, t: Nanos) -> Result<()>;
    /// Bytes replica `r` holds after seeing `keys` distinct keys.
    fn memory_bytes(&self, r: usize, keys: u64) -> u64;
}

/// Builds one replica's limiter for a per-replica limit.
pub type MakeReplica = Box<dyn Fn(u64) -> Result<Box<dyn Admit + Send>> + Send>;

/// How `divided` rounds `limit / n` (its entry's `rounding`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Rounding {
    /// Down (integer division), at least 1.
    #[default]
    Floor,
    /// Up.
    Ceil,
    /// To nearest, at least 1.
    Nearest,
}

/// The per-replica limit of `divided`: `limit * (1 + margin_pct / 100) / n`
/// rounded, at least 1.
///
/// # Examples
/// ```
/// use ratelab::fleet::{divided_limit, Rounding};
/// assert_eq!(divided_limit(100, 8, 0, Rounding::Floor), 12);
/// assert_eq!(divided_limit(100, 8, 0, Rounding::Ceil), 13);
/// assert_eq!(divided_limit(100, 8, 20, Rounding::Nearest), 15);
/// assert_eq!(divided_limit(5, 8, 0, Rounding::Floor), 1);
/// ```
pub fn divided_limit(limit: u64, n: usize, margin_pct: u64, rounding: Rounding) -> u64 {
    let num = u128::from(limit) * u128::from(100 + margin_pct);
    let den = 100 * n.max(1) as u128;
    let v = match rounding {
        Rounding::Floor => num / den,
        Rounding::Ceil => num.div_ceil(den),
        Rounding::Nearest => (2 * num + den) / (2 * den),
    };
    u64::try_from(v).unwrap_or(u64::MAX).max(1)
}

/// `local` (every replica the full limit) or `divided`.
pub struct PerReplica {
    make: MakeReplica,
    replicas: Vec<Box<dyn Admit + Send>>,
    /// The replicas' current limit.
    limit: u64,
    full: u64,
    divide: Option<(u64, Rounding, bool)>,
}

impl PerReplica {
    /// `n` replicas each enforcing `limit` (`divide`: margin, rounding,
    /// whether a scale event re-divides).
    pub fn new(
        make: MakeReplica,
        n: usize,
        limit: u64,
        divide: Option<(u64, Rounding, bool)>,
    ) -> Result<Self> {
        let per = match divide {
            Some((m, r, _)) => divided_limit(limit, n, m, r),
            None => limit,
        };
        let replicas = (0..n).map(|_| make(per)).collect::<Result<Vec<_>>>()?;
        Ok(Self {
            make,
            replicas,
            limit: per,
            full: limit,
            divide,
        })
    }

    /// The limit each replica enforces now.
    pub fn replica_limit(&self) -> u64 {
        self.limit
    }
}

impl Strategy for PerReplica {
    fn admit(&mut self, r: usize, key: u32, w: u64, t: Nanos, _env: &mut Env) -> Result<Decision> {
        self.replicas[r].admit(key, w, t)
    }

    fn resize(&mut self, n: usize, _t: Nanos) -> Result<()> {
        if let Some((m, rounding, true)) = self.divide {
            let per = divided_limit(self.full, n, m, rounding);
            if per != self.limit {
                // A new configuration reloads every replica: fresh state.
                self.limit = per;
                self.replicas.clear();
            }
        }
        self.replicas.truncate(n);
        while self.replicas.len() < n {
            self.replicas.push((self.make)(self.limit)?);
        }
        Ok(())
    }

    fn restart(&mut self, r: usize, _t: Nanos) -> Result<()> {
        self.replicas[r] = (self.make)(self.limit)?;
        Ok(())
    }

    fn memory_bytes(&self, r: usize, keys: u64) -> u64 {
        self.replicas.get(r).map_or(0, |l| l.memory_bytes(keys))
    }
}
