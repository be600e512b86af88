//! The cost of a fleet grid, estimated from the spec before any fleet is
//! built: the work (simulated operations: each request, each store
//! operation, each message between replicas) and the state the replicas
//! keep (bytes, counted the way the fleets report it in `per_replica`).
//!
//! **Why before.** A grid of 128 fleets × dozens of replicas is cheap to
//! describe and expensive to run; checked after the fleets were built (and
//! with every strategy charged as one limiter), a grid that needed 4 GB and
//! minutes was refused only once the memory was in use. The estimate here
//! needs only the spec: the workload's requests and how its keys are
//! spread, each fleet's replicas, balancer, strategy and per-key bytes.
//!
//! **Keys a replica sees.** A key with `c` expected requests, spread over
//! `n` replicas by a balancer that ignores the key (round robin, random,
//! least request, sticky), is seen by `n (1 − e^(−c/n))` replicas on
//! average; behind a hash of the key (ring hash, Maglev) by at most one.
//! The expected requests of every key come from the workload's key
//! distribution (Zipf ranks grouped in buckets of nearly equal weight, so
//! the sum costs a few thousand terms whatever the key count).
//!
//! **Operations a request costs**, by strategy, measured on the committed
//! fleet scenarios (`store_ops + messages` per request, plus the request):
//! local and divided 1; central 5 (an increment and a read, each a store
//! operation and a message: 4.7 to 5.9 measured); Kong's periodic sync 4.5
//! (3.0 to 8.0); APISIX's 6.5; gubernator forwarding `1 + 2 (n − 1)/n`;
//! GLOBAL `1 + n/4` (2.7 at 16 replicas, 1.2 to 4.2 at 6 depending on
//! `global_sync_wait_ms`).

use crate::workload::keys::KeyChoice;
use crate::workload::timed::TimedWorkload;

/// How a fleet's replicas hold per-key state: bytes a key, and which keys.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Footprint {
    /// Each replica keeps the keys it saw (APISIX's local counters).
    Seen(f64),
    /// Each replica keeps the keys it saw in a vector indexed by key id (a
    /// lab model per replica): besides the keys' state (the first number),
    /// the vector reaches the largest id the replica met, whatever the
    /// number of keys, at the second number of bytes a slot.
    Dense(f64, f64),
    /// Every replica keeps every key (gubernator GLOBAL's cache).
    EveryKey(f64),
    /// One replica, the key's owner, keeps it (gubernator forwarding).
    Owner(f64),
    /// One shared store keeps each key once, outside the replicas (Kong's
    /// periodic sync is counted so too: its replicas wipe their tables at
    /// every sync, so they hold the keys of one sync period).
    Store(f64),
}

/// What a strategy costs, for the estimate: its per-key state and the
/// simulated operations of a request (a function of the replica count).
#[derive(Debug, Clone, Copy)]
pub struct StrategyCost {
    /// Its per-key state.
    pub foot: Footprint,
    /// Operations a request costs on `n` replicas.
    pub ops_per_request: fn(usize) -> f64,
}

/// One fleet of a grid, as far as its cost goes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FleetPlan {
    /// Most replicas at once.
    pub replicas: usize,
    /// Its per-key state.
    pub foot: Footprint,
    /// Simulated operations per request.
    pub ops_per_request: f64,
    /// The balancer ignores the key (a key meets many replicas).
    pub spread: bool,
    /// The balancer's ring or table: (a hash of what identifies it: kind,
    /// sizes, hosts, weights; its bytes). Fleets whose balancers build the
    /// same one share it (built once), so each distinct one is counted once.
    pub table: Option<(u64, u64)>,
}

/// Work units (about 10 ns each) of one simulated fleet operation,
/// measured on a 48-fleet grid (release build: 40.1 M operations, 240,774
/// requests, in 3.6 s of CPU for the whole run, about 9 units each).
pub const UNIT_COST: f64 = 10.0;

/// The estimated cost of a grid.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    /// Simulated operations, all fleets.
    pub ops: f64,
    /// Bytes of per-key state in the replicas, all fleets (as the fleets
    /// report it in `per_replica.memory_bytes`).
    pub replica_bytes: f64,
    /// Bytes of the shared stores, all fleets.
    pub store_bytes: f64,
    /// Bytes of the balancers' rings and tables, each distinct one once.
    pub table_bytes: f64,
    /// Bytes of the vectors indexed by key id, all fleets: each replica's
    /// keys-seen bits and a lab model's per-key slots, as long as the key
    /// id range (a few requests over a large key space reach ids near its
    /// end, so this is not a function of the distinct keys).
    pub dense_bytes: f64,
}

/// Expected requests per key, as (requests of one key, how many keys have
/// about that many).
#[derive(Debug, Clone, Default)]
pub struct Load {
    /// Requests in all.
    pub requests: f64,
    /// Distinct keys.
    pub keys: f64,
    groups: Vec<(f64, f64)>,
}

/// The least bytes an empty slot of a lab model's per-key vector is
/// charged (an `Option` of the smallest key state, a GCRA's 8-byte TAT,
/// with its tag), for a model that does not say.
const EMPTY_SLOT_BYTES: f64 = 16.0;

/// Ranks of a Zipf in buckets of at most this relative weight change.
const BUCKET: f64 = 1.01;

impl Load {
    /// The expected load of a timed workload (its requests at the highest
    /// rate, as the work budget charges them).
    ///
    /// # Examples
    ///
    /// ```
    /// use ratelab::fleet::Load;
    /// let w = serde_json::from_str(r#"{"type": "poisson",
    ///     "keys": {"type": "uniform", "keys": 100}, "rate": 10.0, "duration_s": 100.0}"#).unwrap();
    /// let load = Load::of(&w);
    /// assert_eq!(load.requests, 1000.0);
    /// // 10 requests a key, spread over 4 replicas: each key meets ~3.6.
    /// let seen = load.seen(4, true);
    /// assert!((seen - 100.0 * 4.0 * (1.0 - (-2.5f64).exp())).abs() < 1e-6);
    /// assert!((load.seen(4, false) - 100.0).abs() < 0.01);
    /// ```
    pub fn of(w: &TimedWorkload) -> Load {
        let mut l = Load::default();
        l.add(w);
        l
    }

    fn add(&mut self, w: &TimedWorkload) {
        match w {
            TimedWorkload::Mix { parts } => {
                for p in parts {
                    self.add(p);
                }
            }
            TimedWorkload::FlashCrowd {
                keys,
                flash_rate,
                flash_duration_s,
                ..
            } => {
                let flash = flash_rate * flash_duration_s;
                let total = w.max_events();
                self.keys_of(keys, (total - flash).max(0.0));
                self.push(flash, 1.0);
            }
            TimedWorkload::CardinalityAttack {
                keys,
                attack_keys,
                per_key,
                ..
            } => {
                let attack = *attack_keys as f64 * *per_key as f64;
                let total = w.max_events();
                self.keys_of(keys, (total - attack).max(0.0));
                self.push(*per_key as f64, *attack_keys as f64);
            }
            TimedWorkload::Poisson { keys, .. }
            | TimedWorkload::OnOff { keys, .. }
            | TimedWorkload::Mmpp { keys, .. }
            | TimedWorkload::Diurnal { keys, .. } => self.keys_of(keys, w.max_events()),
        }
    }

    fn push(&mut self, per_key: f64, keys: f64) {
        if keys > 0.0 {
            self.requests += per_key * keys;
            self.keys += keys;
            self.groups.push((per_key, keys));
        }
    }

    /// `total` requests over a key distribution.
    fn keys_of(&mut self, k: &KeyChoice, total: f64) {
        match *k {
            KeyChoice::Uniform { keys } => self.push(total / keys.max(1) as f64, keys as f64),
            KeyChoice::Zipf { keys, s } => {
                let n = keys.max(1);
                // Buckets of ranks [a, b) whose weights differ by at most
                // BUCKET; the weight of rank r is r^-s.
                let mut buckets = Vec::new();
                let mut a = 1u64;
                let mut norm = 0.0;
                while a <= n {
                    let step = if s > 0.0 {
                        let grow = libm::pow(BUCKET, 1.0 / s);
                        ((a as f64 * (grow - 1.0)).floor() as u64).max(1)
                    } else {
                        n
                    };
                    // A tiny `s` makes `grow` infinite and `step` u64::MAX:
                    // saturate (one bucket) rather than wrap around.
                    let b = a.saturating_add(step).min(n + 1);
                    let mid = (a as f64 + b as f64 - 1.0) / 2.0;
                    let w = libm::pow(mid.max(1.0), -s);
                    let count = (b - a) as f64;
                    norm += w * count;
                    buckets.push((w, count));
                    a = b;
                }
                for (w, count) in buckets {
                    self.push(total * w / norm, count);
                }
            }
        }
    }

    /// Expected (replica, key) pairs: how many replicas see each key,
    /// summed over the keys, for `n` replicas behind a balancer that
    /// spreads a key (`spread`) or sends it to one replica.
    pub fn seen(&self, n: usize, spread: bool) -> f64 {
        let n = n.max(1) as f64;
        self.groups
            .iter()
            .map(|&(c, k)| {
                let per = if spread {
                    n * -libm::expm1(-c / n)
                } else {
                    -libm::expm1(-c)
                };
                per * k
            })
            .sum()
    }

    /// Expected distinct keys of the whole run.
    pub fn distinct(&self) -> f64 {
        self.seen(1, false)
    }
}

/// The cost of `plan`'s fleets under `load`.
pub fn estimate(plan: &[FleetPlan], load: &Load) -> Estimate {
    let mut e = Estimate {
        ops: 0.0,
        replica_bytes: 0.0,
        store_bytes: 0.0,
        table_bytes: 0.0,
        dense_bytes: 0.0,
    };
    let distinct = load.distinct();
    let mut tables: Vec<u64> = Vec::new();
    for f in plan {
        if let Some((id, bytes)) = f.table
            && !tables.contains(&id)
        {
            tables.push(id);
            e.table_bytes += bytes as f64;
        }
        e.ops += load.requests * f.ops_per_request;
        // Every replica's keys-seen bits span the id range.
        e.dense_bytes += f.replicas as f64 * load.keys / 8.0;
        match f.foot {
            Footprint::Seen(b) => e.replica_bytes += load.seen(f.replicas, f.spread) * b,
            Footprint::Dense(b, slot) => {
                let seen = load.seen(f.replicas, f.spread);
                e.replica_bytes += seen * b;
                // The slots below the largest id that hold no key's state.
                e.dense_bytes +=
                    (f.replicas as f64 * load.keys - seen).max(0.0) * slot.max(EMPTY_SLOT_BYTES);
            }
            Footprint::EveryKey(b) => e.replica_bytes += f.replicas as f64 * distinct * b,
            Footprint::Owner(b) => e.replica_bytes += distinct * b,
            Footprint::Store(b) => e.store_bytes += distinct * b,
        }
    }
    e
}

/// Upper bound of the fleet state one distinct key costs, all fleets:
/// what a trace's keys are charged as it is read (its requests and keys
/// are not known before).
pub fn per_key_bytes(plan: &[FleetPlan]) -> u64 {
    plan.iter()
        .map(|f| match f.foot {
            Footprint::Seen(b) | Footprint::Dense(b, _) | Footprint::EveryKey(b) => {
                b * f.replicas as f64
            }
            Footprint::Owner(b) | Footprint::Store(b) => b,
        })
        .sum::<f64>()
        .ceil()
        .min(u64::MAX as f64) as u64
}

/// Operations a request costs under a central store.
pub fn central(_n: usize) -> f64 {
    5.0
}

/// ... under Kong's periodic sync.
pub fn kong_sync(_n: usize) -> f64 {
    4.5
}

/// ... under APISIX's delayed sync.
pub fn apisix_sync(_n: usize) -> f64 {
    6.5
}

/// ... under gubernator forwarding: a request not on its owner goes there
/// and back.
pub fn forwarding(n: usize) -> f64 {
    1.0 + 2.0 * (n.max(1) - 1) as f64 / n.max(1) as f64
}

/// ... under gubernator GLOBAL: the owner broadcasts updates to its peers.
pub fn broadcast(n: usize) -> f64 {
    1.0 + n as f64 / 4.0
}

/// ... with no coordination (local and divided limits).
pub fn local(_n: usize) -> f64 {
    1.0
}

/// The grid's plans, kept with its fleets: every estimate is made here.
impl super::render::Fleets {
    /// Adds a fleet's plan (in candidate order, before any is built).
    pub fn plan_fleet(&mut self, plan: FleetPlan) {
        self.plan.push(plan);
    }

    /// Each fleet's plan, in candidate order.
    pub fn plan(&self) -> &[FleetPlan] {
        &self.plan
    }

    /// The most fleet state a distinct key costs, all fleets (bytes).
    pub fn per_key_bytes(&self) -> u64 {
        per_key_bytes(&self.plan)
    }

    /// The grid's cost estimate for `workload` (see [`Load`](Load)).
    pub fn estimate(&self, workload: &crate::workload::timed::TimedWorkload) -> Estimate {
        estimate(&self.plan, &Load::of(workload))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zipf_buckets_keep_the_requests_and_the_keys() {
        let w: TimedWorkload = serde_json::from_str(
            r#"{"type": "poisson", "keys": {"type": "zipf", "keys": 100000, "s": 1.1},
                "rate": 1000.0, "duration_s": 60.0}"#,
        )
        .unwrap();
        let l = Load::of(&w);
        assert!((l.requests - 60000.0).abs() < 1e-6 * 60000.0);
        assert!((l.keys - 100000.0).abs() < 1e-9);
        assert!(l.groups.len() < 5000, "{}", l.groups.len());
        // Fewer distinct keys than keys: the tail is rarely drawn.
        let d = l.distinct();
        assert!(d > 5000.0 && d < 60000.0, "{d}");
        // Spread over 8 replicas a key meets more replicas than one, at
        // most 8.
        assert!(l.seen(8, true) > d && l.seen(8, true) < 8.0 * d);
    }

    /// A nearly flat Zipf (`s` = 1e-300: the bucket growth is infinite)
    /// is one bucket of every key, not a wrapped-around rank walk that
    /// pushed buckets until memory ran out.
    #[test]
    fn a_nearly_flat_zipf_is_one_bucket() {
        for s in ["1e-300", "1e-12", "0.001"] {
            let w: TimedWorkload = serde_json::from_str(&format!(
                r#"{{"type": "poisson", "keys": {{"type": "zipf", "keys": 1000, "s": {s}}},
                    "rate": 10.0, "duration_s": 10.0}}"#
            ))
            .unwrap();
            let l = Load::of(&w);
            assert!(l.groups.len() <= 2, "s = {s}: {} buckets", l.groups.len());
            assert!((l.keys - 1000.0).abs() < 1e-9, "s = {s}: {}", l.keys);
            assert!((l.requests - 100.0).abs() < 1e-6, "s = {s}: {}", l.requests);
        }
    }
}
