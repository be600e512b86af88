//! The fleet strategies a `deployment` may list, as a table like the
//! lab's `MODELS`: one row per strategy with its parameters and how a
//! point of its parameter grid becomes a [`Planned`] strategy (label,
//! typed settings, builder, cost). Adding a strategy: its [`Strategy`] in
//! `src/fleet/`, one row here.
//!
//! The table lives with the lab, not the fleet, because its parameters
//! are the lab's [`Param`] grids and `local`/`divided` run any row of the
//! lab's model table on each replica; the fleet sees only the built
//! [`Strategy`] and the [`StrategyCost`].

use super::candidates::{self, ModelRow, Setup};
use super::param_grid::{self, Args, Param};
use crate::clock::MILLI;
use crate::error::FieldError;
use crate::error::Result;
use crate::fleet::budget::{self, Footprint, StrategyCost};
use crate::fleet::{
    ApisixSync, Central, Gubernator, KongSync, MakeReplica, OwnerRule, PerReplica, Rounding, Store,
    Strategy, StrategyParams, TieOrder,
};
use serde::Deserialize;
use serde_json::{Map, Value};

fn err(field: impl Into<String>, msg: impl Into<String>) -> FieldError {
    FieldError {
        field: field.into(),
        message: msg.into(),
    }
}

/// Builds a grid point's strategy for a fleet of `n` replicas.
pub type Build = Box<dyn Fn(usize) -> Result<Box<dyn Strategy>>>;

/// One point of a strategy's parameter grid, ready to build.
pub struct Planned {
    /// The strategy's label in the fleet's name.
    pub label: String,
    /// Its settings the fleet's tables and charts read.
    pub params: StrategyParams,
    /// The builder.
    pub build: Build,
    /// What the budget charges it.
    pub cost: StrategyCost,
}

/// What a row's planner gets: the grid point and where it came from.
pub struct Point<'a> {
    /// The run's setup (policy, seed).
    pub setup: &'a Setup,
    /// The entry's field (`deployment.strategies[i]`), for errors.
    pub field: &'a str,
    /// The row's name.
    pub which: &'static str,
    /// The lab model of a `local`/`divided` entry.
    pub model: Option<&'static ModelRow>,
    /// The grid point's arguments.
    pub args: &'a Args,
}

impl Point<'_> {
    /// The label: `head` and the point's settings (fixed, then varying),
    /// and the same without `sync_ms` (the strategy's family).
    fn label(&self, head: &str) -> (String, String) {
        let (fixed, varying) = self.args.suffixes(&["store", "flavor"]);
        let (ffixed, fvarying) = self.args.suffixes(&["store", "flavor", "sync_ms"]);
        (join(head, &fixed, &varying), join(head, &ffixed, &fvarying))
    }
}

/// One fleet strategy.
pub struct StrategyRow {
    /// The `strategy` value of an entry.
    pub name: &'static str,
    /// Its own parameters (a `local`/`divided` entry adds its model's).
    pub params: &'static [Param],
    /// Whether an entry names a lab `model` (else refused).
    pub model: bool,
    /// Whether it counts in windows of whole Unix seconds (the policy
    /// interval must be a multiple of 1000 ms).
    pub whole_seconds: bool,
    /// A grid point planned.
    pub plan: fn(&Point) -> Result<Planned, FieldError>,
}

const FAILURE: Param = Param::choice(
    "failure",
    &["open", "closed"],
    "when the store is unreachable: open admits (Envoy's failure_mode_deny = false, Kong's fault_tolerant = true; default), closed denies",
);

const DIVIDED: &[Param] = &[
    Param::choice(
        "rounding",
        &["floor", "ceil", "nearest"],
        "how limit x (1 + margin) / replicas is rounded (default floor, at least 1)",
    ),
    Param::int(
        "margin_pct",
        0,
        1000,
        "margin added before dividing, in percent (default 0)",
    ),
    Param::flag(
        "redivide",
        "re-divide when the fleet scales (replicas restart with the new limit; default true)",
    ),
];

const CENTRAL: &[Param] = &[
    Param::choice("store", &["envoy_ratelimit", "kong_redis", "redis_gcra"], "envoyproxy/ratelimit's Redis fixed window (default), Kong's redis policy with sync_rate = -1, or go-redis/redis_rate's GCRA Lua script"),
    Param::int("burst", 1, 1_000_000_000, "redis_gcra: the burst (default: the limit, as redis_rate's PerSecond sets it)"),
    Param::flag("local_cache", "envoy_ratelimit: remember over-limit keys per replica for the window (LOCAL_CACHE_SIZE_IN_BYTES > 0; default false)"),
    Param::flag("stop_increment_when_over_limit", "envoy_ratelimit: a GET round trip before the INCRBY (default false)"),
    FAILURE,
];

const SYNC: &[Param] = &[
    Param::choice("flavor", &["kong", "apisix"], "whose sync: kong (rate-limiting, redis policy, sync_rate > 0; default) or apisix (limit-count, redis policy, sync_interval)"),
    Param::int("sync_ms", 1, 86_400_000, "the sync period in ms (Kong's sync_rate x 1000, APISIX's sync_interval x 1000: 100 up to the window, exclusive; required)"),
    Param::flag("lose_in_flight", "kong: deltas added while a sync is in flight are wiped with the tables, as Kong does (default true)"),
    Param::flag("recount_flushed_delta", "apisix: the request whose read flushed the local delta also subtracts it from the fresh remaining, as APISIX does (default true)"),
    FAILURE,
];

const GUBERNATOR: &[Param] = &[
    Param::choice("behavior", &["global", "forwarding"], "GLOBAL (answer from the local cache, hits to the owner in batches, owner broadcasts) or forwarding to the owner (default global)"),
    Param::int("global_sync_wait_ms", 1, 3_600_000, "GlobalSyncWait in ms (default 100)"),
    Param::flag("drain_over_limit", "the owner drains a peer's hits over the remaining (DRAIN_OVER_LIMIT, set since gubernator v2.4; default true)"),
    Param::int("global_batch_limit", 1, 1000, "GlobalBatchLimit: hits or updates of this many keys are sent at once (default 1000; the owner refuses a batch of more, gubernator.go:484)"),
    Param::int("batch_wait_us", 1, 3_600_000_000, "forwarding: BatchWait in µs (default 500)"),
    Param::int("batch_limit", 1, 1000, "forwarding: BatchLimit (default 1000, the most config.go allows)"),
    Param::choice("tie_order", &["random", "arrivals_first"], "a request or delivered hit and a loop's tick at the same instant: random as Go's select picks, from the fleet's seed (default), or every arrival first"),
    Param::choice("owner", &["ring", "modulo"], "the owner of a key: gubernator's consistent hash (default) or key id mod replicas (to fix owners in a test)"),
];

// Each strategy's settings, typed: a grid point's `Args` (names, types
// and ranges already checked against the row's parameters above) read
// into the row's struct, absent fields at their defaults.

/// `divided`'s settings ([`DIVIDED`]; the entry's model's are read by the
/// model's builder).
#[derive(Deserialize)]
struct DividedSettings {
    #[serde(default)]
    rounding: Rounding,
    #[serde(default)]
    margin_pct: u64,
    #[serde(default = "yes")]
    redivide: bool,
}

/// `central`'s settings ([`CENTRAL`]).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CentralSettings {
    #[serde(default)]
    store: Store,
    /// Given only with `store: redis_gcra` (default: the limit).
    burst: Option<u64>,
    #[serde(default)]
    local_cache: bool,
    #[serde(default)]
    stop_increment_when_over_limit: bool,
    #[serde(default)]
    failure: Failure,
}

/// `periodic_sync`'s settings ([`SYNC`]): what a flavour does not take
/// is refused when given, so those are options.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SyncSettings {
    #[serde(default)]
    flavor: Flavor,
    /// Required.
    sync_ms: Option<u64>,
    /// Kong only (default true).
    lose_in_flight: Option<bool>,
    /// APISIX only (default true).
    recount_flushed_delta: Option<bool>,
    /// Kong only (default open).
    failure: Option<Failure>,
}

/// `gubernator`'s settings ([`GUBERNATOR`]).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GubernatorSettings {
    #[serde(default)]
    behavior: Behavior,
    #[serde(default = "n::<100>")]
    global_sync_wait_ms: u64,
    #[serde(default = "yes")]
    drain_over_limit: bool,
    #[serde(default = "n::<1000>")]
    global_batch_limit: u64,
    #[serde(default = "n::<500>")]
    batch_wait_us: u64,
    #[serde(default = "n::<1000>")]
    batch_limit: u64,
    #[serde(default)]
    tie_order: TieOrder,
    #[serde(default)]
    owner: OwnerRule,
}

/// What a store-backed strategy does when its store is unreachable.
#[derive(Deserialize, Default, PartialEq)]
#[serde(rename_all = "snake_case")]
enum Failure {
    /// Admit.
    #[default]
    Open,
    /// Deny.
    Closed,
}

/// Whose periodic sync.
#[derive(Deserialize, Default, PartialEq)]
#[serde(rename_all = "snake_case")]
enum Flavor {
    /// Kong rate-limiting, redis policy, `sync_rate > 0`.
    #[default]
    Kong,
    /// APISIX limit-count, redis policy, `sync_interval`.
    Apisix,
}

/// Gubernator's behaviour.
#[derive(Deserialize, Default, PartialEq)]
#[serde(rename_all = "snake_case")]
enum Behavior {
    /// GLOBAL: answer from the local cache, hits to the owner in batches.
    #[default]
    Global,
    /// Forward every request to the key's owner.
    Forwarding,
}

fn yes() -> bool {
    true
}

fn n<const N: u64>() -> u64 {
    N
}

/// A grid point's settings as `T` (an internal error names the entry).
fn settings<T: serde::de::DeserializeOwned>(p: &Point) -> Result<T, FieldError> {
    p.args.settings().map_err(|e| err(p.field, e.message()))
}

/// The fleet strategies, in the order error messages list them.
pub const STRATEGIES: &[StrategyRow] = &[
    StrategyRow {
        name: "local",
        params: &[],
        model: true,
        whole_seconds: false,
        plan: per_replica,
    },
    StrategyRow {
        name: "divided",
        params: DIVIDED,
        model: true,
        whole_seconds: false,
        plan: per_replica,
    },
    StrategyRow {
        name: "central",
        params: CENTRAL,
        model: false,
        whole_seconds: true,
        plan: central,
    },
    StrategyRow {
        name: "periodic_sync",
        params: SYNC,
        model: false,
        whole_seconds: true,
        plan: periodic_sync,
    },
    StrategyRow {
        name: "gubernator",
        params: GUBERNATOR,
        model: false,
        whole_seconds: false,
        plan: gubernator,
    },
];

/// One `strategies` entry expanded over its parameter grid and planned.
pub fn strategies(
    o: &Map<String, Value>,
    field: &str,
    setup: &Setup,
) -> Result<Vec<Planned>, FieldError> {
    let which = o.get("strategy").and_then(Value::as_str).unwrap_or("");
    let Some(row) = STRATEGIES.iter().find(|r| r.name == which) else {
        let names: Vec<&str> = STRATEGIES.iter().map(|r| r.name).collect();
        return Err(err(
            format!("{field}.strategy"),
            format!("value {which:?}: expected one of {}", names.join(", ")),
        ));
    };
    let mut rest = o.clone();
    rest.remove("strategy");
    let mut params: Vec<Param> = Vec::new();
    let model = if row.model {
        let known = candidates::known_models;
        let model = rest.get("model").and_then(Value::as_str).ok_or_else(|| {
            err(
                format!("{field}.model"),
                format!("missing: expected one of {}", known()),
            )
        })?;
        let m = candidates::row(model).ok_or_else(|| {
            err(
                format!("{field}.model"),
                format!("value {model:?}: expected one of {}", known()),
            )
        })?;
        params.extend_from_slice(m.params);
        Some(m)
    } else {
        if rest.contains_key("model") {
            let msg = if row.name == "gubernator" {
                "gubernator has its own algorithm: expected no \"model\"".to_string()
            } else {
                format!(
                    "{} has its own store model: expected no \"model\"",
                    row.name
                )
            };
            return Err(err(format!("{field}.model"), msg));
        }
        None
    };
    if row.whole_seconds && !setup.policy.interval_ms.is_multiple_of(1000) {
        return Err(err(field, format!("policy.interval_ms {}: {} counts in windows of whole Unix seconds, expected a multiple of 1000", setup.policy.interval_ms, row.name)));
    }
    params.extend_from_slice(row.params);
    param_grid::expand(&rest, &params, field)?
        .iter()
        .map(|args| {
            (row.plan)(&Point {
                setup,
                field,
                which: row.name,
                model,
                args,
            })
        })
        .collect()
}

fn join(head: &str, fixed: &str, varying: &str) -> String {
    [head, fixed, varying]
        .iter()
        .filter(|s| !s.is_empty())
        .copied()
        .collect::<Vec<_>>()
        .join(" ")
}

/// A planned strategy without a sync period.
fn planned(label: String, family: String, build: Build, cost: StrategyCost) -> Planned {
    Planned {
        label,
        params: StrategyParams {
            family,
            sync_ms: None,
        },
        build,
        cost,
    }
}

/// `local` and `divided`: a lab model on each replica.
fn per_replica(p: &Point) -> Result<Planned, FieldError> {
    let (setup, a) = (p.setup, p.args);
    let Some(row) = p.model else {
        return Err(err(p.field, "expected a model"));
    };
    // The label the lab gives the model, built once to check it.
    let probe = candidates::build(setup, row, a).map_err(|e| err(p.field, e.message()))?;
    // Its bytes a key, as the fleet reports a replica's state.
    let per_key = probe.limiter.memory_bytes(1 << 16) as f64 / 65536.0;
    let slot = probe.limiter.dense_slot_bytes() as f64;
    drop(probe.limiter);
    let divide = match p.which {
        "divided" => {
            let d: DividedSettings = settings(p)?;
            Some((d.margin_pct, d.rounding, d.redivide))
        }
        _ => None,
    };
    let label = format!("{} {}", p.which, probe.name);
    let (s, a2, limit) = (setup.clone(), a.clone(), setup.policy.limit);
    let build: Build = Box::new(move |n| {
        let (s, a) = (s.clone(), a2.clone());
        let make: MakeReplica = Box::new(move |lim| {
            let mut s2 = s.clone();
            s2.policy.limit = lim;
            Ok(candidates::build(&s2, row, &a)?.limiter)
        });
        Ok(Box::new(PerReplica::new(make, n, limit, divide)?) as Box<dyn Strategy>)
    });
    let cost = StrategyCost {
        foot: Footprint::Dense(per_key, slot),
        ops_per_request: budget::local,
    };
    Ok(planned(label.clone(), label, build, cost))
}

/// `gubernator`: owners by consistent hash, forwarding or GLOBAL.
fn gubernator(p: &Point) -> Result<Planned, FieldError> {
    let a = p.args;
    let (limit, interval) = (p.setup.policy.limit, p.setup.interval_ns());
    let g: GubernatorSettings = settings(p)?;
    let global = g.behavior == Behavior::Global;
    // A setting of the other behaviour would be ignored (unless the entry
    // lists both behaviours: it then applies to the fleets of its own).
    if !a.varies("behavior") {
        let (other, theirs): (&str, &[&str]) = if global {
            ("forwarding", &["batch_wait_us", "batch_limit"])
        } else {
            ("global", &["global_sync_wait_ms", "global_batch_limit"])
        };
        if let Some(k) = theirs.iter().find(|k| a.u64(k).is_some()) {
            return Err(err(
                format!("{}.{k}", p.field),
                format!("a behavior {other:?} setting: expected behavior \"{other}\" (or both)"),
            ));
        }
    }
    let drain = g.drain_over_limit;
    let wait = g.global_sync_wait_ms * MILLI;
    let gbl = g.global_batch_limit as usize;
    let bwait = g.batch_wait_us * 1000;
    let bl = g.batch_limit as usize;
    let (tie, rule) = (g.tie_order, g.owner);
    let (fixed, varying) = a.suffixes(&["behavior"]);
    let head = if global {
        "gubernator GLOBAL"
    } else {
        "gubernator forwarding"
    };
    let label = join(head, &fixed, &varying);
    let cost = if global {
        StrategyCost {
            foot: Footprint::EveryKey(120.0),
            ops_per_request: budget::broadcast,
        }
    } else {
        StrategyCost {
            foot: Footprint::Owner(120.0),
            ops_per_request: budget::forwarding,
        }
    };
    let build: Build = Box::new(move |n| {
        Ok(Box::new(
            Gubernator::new(n, limit, interval, global, drain, wait)
                .with_batch(bwait, bl)
                .with_global_batch_limit(gbl)
                .with_owner(rule)
                .with_tie_order(tie),
        ) as Box<dyn Strategy>)
    });
    Ok(planned(label.clone(), label, build, cost))
}

/// `central`: a shared store decides every request.
fn central(p: &Point) -> Result<Planned, FieldError> {
    let (limit, interval) = (p.setup.policy.limit, p.setup.interval_ns());
    let c: CentralSettings = settings(p)?;
    let fail_open = c.failure == Failure::Open;
    let store = c.store;
    let burst = c.burst;
    if burst.is_some() && store != Store::RedisGcra {
        return Err(err(
            format!("{}.burst", p.field),
            "a redis_gcra setting: expected store \"redis_gcra\"",
        ));
    }
    let burst = burst.unwrap_or(limit);
    for k in ["local_cache", "stop_increment_when_over_limit"] {
        if p.args.bool(k).is_some() && store != Store::EnvoyRatelimit {
            return Err(err(
                format!("{}.{k}", p.field),
                "an envoy_ratelimit setting: expected store \"envoy_ratelimit\"",
            ));
        }
    }
    let (cache, stop) = (c.local_cache, c.stop_increment_when_over_limit);
    let name = match store {
        Store::EnvoyRatelimit => "envoy ratelimit redis",
        Store::KongRedis => "kong redis sync_rate=-1",
        Store::RedisGcra => "redis_rate gcra",
    };
    let (label, family) = p.label(&format!("central {name}"));
    let build: Build = Box::new(move |n| {
        Ok(Box::new(
            Central::new(store, n, limit, interval, cache, stop, fail_open).with_burst(burst),
        ) as Box<dyn Strategy>)
    });
    let cost = StrategyCost {
        foot: Footprint::Store(64.0),
        ops_per_request: budget::central,
    };
    Ok(planned(label, family, build, cost))
}

/// `periodic_sync`: Kong's or APISIX's counters synced every `sync_ms`.
fn periodic_sync(p: &Point) -> Result<Planned, FieldError> {
    let (field, setup) = (p.field, p.setup);
    let (limit, interval) = (setup.policy.limit, setup.interval_ns());
    let s: SyncSettings = settings(p)?;
    let Some(ms) = s.sync_ms else {
        return Err(err(
            format!("{field}.sync_ms"),
            "missing: expected the sync period in ms",
        ));
    };
    let (build, cost, head): (Build, StrategyCost, &str) = if s.flavor == Flavor::Apisix {
        for (k, given) in [
            ("lose_in_flight", s.lose_in_flight.is_some()),
            ("failure", s.failure.is_some()),
        ] {
            if given {
                return Err(err(format!("{field}.{k}"), "not an APISIX setting: its delayed sync falls back to a local limit-count when Redis fails"));
            }
        }
        if ms < 100 || ms >= setup.policy.interval_ms {
            return Err(err(format!("{field}.sync_ms"), format!("value {ms}: APISIX refuses a sync_interval below 0.1 s or not below the time window ({} ms)", setup.policy.interval_ms)));
        }
        let recount = s.recount_flushed_delta.unwrap_or(true);
        (
            Box::new(move |n| {
                Ok(
                    Box::new(ApisixSync::new(n, limit, interval, ms * MILLI, recount))
                        as Box<dyn Strategy>,
                )
            }),
            StrategyCost {
                foot: Footprint::Seen(160.0),
                ops_per_request: budget::apisix_sync,
            },
            "periodic_sync apisix",
        )
    } else {
        if s.recount_flushed_delta.is_some() {
            return Err(err(
                format!("{field}.recount_flushed_delta"),
                "an APISIX setting: expected flavor \"apisix\"",
            ));
        }
        let lose = s.lose_in_flight.unwrap_or(true);
        let fail_open = s.failure.unwrap_or_default() == Failure::Open;
        (
            Box::new(move |n| {
                Ok(Box::new(KongSync::new(
                    n,
                    limit,
                    interval,
                    ms * MILLI,
                    fail_open,
                    lose,
                )) as Box<dyn Strategy>)
            }),
            StrategyCost {
                foot: Footprint::Store(128.0),
                ops_per_request: budget::kong_sync,
            },
            "periodic_sync kong",
        )
    };
    let (label, family) = p.label(head);
    Ok(Planned {
        label,
        params: StrategyParams {
            family,
            sync_ms: Some(ms),
        },
        build,
        cost,
    })
}
