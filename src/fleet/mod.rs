//! The fleet: one policy enforced by many replicas behind a load balancer.
//!
//! A decision scenario with a `deployment` measures fleets instead of
//! single limiters. Each candidate is one fleet — a coordination strategy
//! on N replicas behind one balancer — and is judged, like any candidate,
//! against the exact limiters of the whole fleet's traffic: at most
//! `limit` requests per key in any interval over all replicas together.
//! Without `deployment` nothing here runs and reports stay as they were.
//!
//! ```json
//! "deployment": {
//!   "replicas": [1, 8],
//!   "balancer": ["round_robin", {"type": "maglev"}],
//!   "strategies": [
//!     {"strategy": "local", "model": "token_bucket"},
//!     {"strategy": "divided", "model": "token_bucket", "rounding": "ceil"},
//!     {"strategy": "central", "store": "envoy_ratelimit", "local_cache": true},
//!     {"strategy": "periodic_sync", "sync_ms": [100, 1000]}
//!   ],
//!   "network": {"latency": {"type": "fixed", "rtt_ms": 1.0}, "loss": 0.0},
//!   "events": [{"at_s": 60, "scale_to": 12}, {"from_s": 90, "to_s": 95, "down": "store"}]
//! }
//! ```
//!
//! Every list is a grid axis (strategies x their parameter lists x
//! replicas x balancers).
//!
//! **Why a floor of its own.** A fleet is not a limiter model: it is a
//! balancer, a network, a store and events around many of them, with
//! costs (store operations, messages, added latency) and a time to
//! converge that no single limiter has. Kept inside the decision lab, it
//! reached into the lab's internals and the lab into it. Here it depends
//! only on the floors below it (`clock`, `rng`, `model` for the [`Admit`](crate::model::Admit)
//! seam and `Decision`, `oracle` for the fleet-wide exact policy,
//! `workload` for the budget's load and the trace's replica column,
//! `report` for its tables and charts, `scenario` for error messages).
//!
//! **Direction.** `lab::decision` uses the fleet; the fleet never names
//! the lab. The lab turns each `strategies` entry into a grid of
//! [`Strategy`] builders (its parameter grids and model table are the
//! lab's, so `local`/`divided` replicas run any lab model), wraps each
//! [`Fleet`] as a candidate, and implements [`UnixOrigin`] to hand the
//! fleet the run's time origin. The fleet gives back the checked
//! [`Deployment`], the [`Fleet`] itself, the budget estimate
//! (`budget`) and the report additions ([`Fleets`]).
//!
//! Modules: `deployment` (the scenario's field: a serde type, then checked),
//! `events` (its events), `run` (one fleet
//! as an [`Admit`](crate::model::Admit)), `balancer` (which replica serves a request),
//! `network` (round trips, loss), `strategy` (the seam, `local` and
//! `divided`), `central` (a shared store per decision), `kong_sync` and
//! `apisix_sync` (periodic sync), `gubernator` (owner by consistent hash,
//! forwarding or GLOBAL), `converge` (time to converge), `budget` (the
//! grid's cost before it runs), `render` (the fleet tables and charts),
//! `charts` (its two multi-panel charts: the sync sweep, the scale event).
//! Each fleet is decided in time order by one thread, so reports are the
//! same at any thread count.
//!
//! # Examples
//!
//! A fleet of 4 replicas, each with the full limit of 2 per second
//! (`local`), admits up to 4 times the policy for one key:
//!
//! ```
//! use ratelab::fleet::{Balancer, BalancerKind, Env, Fleet, Latency, Network, PerReplica};
//! use ratelab::model::Admit;
//! use ratelab::rng::sim_rng;
//! use ratelab::model::x_time_rate::TokenBucket;
//! use ratelab::model::PerKey;
//! let make: ratelab::fleet::MakeReplica = Box::new(|lim| {
//!     let per_key = PerKey::new(move |_| Ok(TokenBucket::new(lim as f64, lim as i64)));
//!     Ok(Box::new(per_key) as Box<dyn Admit + Send>)
//! });
//! let strategy = Box::new(PerReplica::new(make, 4, 2, None).unwrap());
//! let balancer = Balancer::new(BalancerKind::RoundRobin, Vec::new(), sim_rng(1));
//! let env = Env::new(Network::new(Latency::Fixed(0), 0.0, sim_rng(2)));
//! let (mut fleet, report) = Fleet::new(
//!     4, balancer, strategy, Vec::new(), env,
//!     ratelab::fleet::Identity { strategy: "local".into(), ..Default::default() },
//! );
//! let admitted = (0..10u64)
//!     .filter(|&i| fleet.admit(7, 1, i * 1000).unwrap().allowed)
//!     .count();
//! assert_eq!(admitted, 8);
//! assert_eq!(report.lock().unwrap().per_replica.len(), 4);
//! ```

mod apisix_sync;
mod balancer;
pub(crate) mod budget;
mod central;
mod charts;
mod converge;
mod deployment;
mod events;
mod gubernator;
mod kong_sync;
mod network;
mod one_or_many;
mod render;
mod run;
mod strategy;

pub use apisix_sync::ApisixSync;
pub use balancer::{
    host_address, key_hash, last_upstream, maglev, ring, ring_pick, table_bytes, Balancer,
    BalancerKind, ReplicaFeed,
};
pub use budget::{estimate, Estimate, FleetPlan, Footprint, Load};
pub use central::{gcra_allow_n, Central, Counters, Store, TIME_ZERO_UNIX_S};
pub use converge::{time_to_converge, CONVERGE_TOLERANCE};
pub use deployment::{BalancerEntry, BalancerSpec, Checked, Deployment, MAX_REPLICAS};
pub use events::{check_event_times, seconds_text, Down, EventEntry};
pub use gubernator::{
    fnv1_64, owner, owner_ring, token_bucket, Gubernator, Item, OwnerRule, TieOrder, BATCH_LIMIT,
    BATCH_WAIT,
};
pub use kong_sync::KongSync;
pub use network::{
    parse_samples, Latency, LatencyEntry, Network, NetworkEntry, NetworkSpec, ReplicaNetworkEntry,
};
pub use one_or_many::OneOrMany;
pub use render::Fleets;
pub use run::{
    Event, EventKind, Fleet, FleetReport, Identity, ReplicaTally, StrategyParams, UnixOrigin,
};
pub use strategy::{divided_limit, Cost, Env, MakeReplica, PerReplica, Rounding, Strategy};

pub(crate) use run::FastMap;
