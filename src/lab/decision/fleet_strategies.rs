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
use super::spec::{self as lspec, Args, Param};
use crate::clock::MILLI;
use crate::error::FieldError;
use crate::error::Result;
use crate::fleet::budget::{self, Footprint, StrategyCost};
use crate::fleet::{
    ApisixSync, Central, Gubernator, KongSync, MakeReplica, OwnerRule, PerReplica, Rounding, Store,
    Strategy, StrategyParams, TieOrder,
};
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
    lspec::expand(&rest, &params, field)?
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
    drop(probe.limiter);
    let divide = (p.which == "divided").then(|| {
        let r = match a.str("rounding").unwrap_or("floor") {
            "ceil" => Rounding::Ceil,
            "nearest" => Rounding::Nearest,
            _ => Rounding::Floor,
        };
        (
            a.u64("margin_pct").unwrap_or(0),
            r,
            a.bool("redivide").unwrap_or(true),
        )
    });
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
        foot: Footprint::Seen(per_key),
        ops_per_request: budget::local,
    };
    Ok(planned(label.clone(), label, build, cost))
}

/// `gubernator`: owners by consistent hash, forwarding or GLOBAL.
fn gubernator(p: &Point) -> Result<Planned, FieldError> {
    let a = p.args;
    let (limit, interval) = (p.setup.policy.limit, p.setup.interval_ns());
    let global = a.str("behavior").unwrap_or("global") == "global";
    let drain = a.bool("drain_over_limit").unwrap_or(true);
    let wait = a.u64("global_sync_wait_ms").unwrap_or(100) * MILLI;
    let gbl = a.u64("global_batch_limit").unwrap_or(1000) as usize;
    let bwait = a.u64("batch_wait_us").unwrap_or(500) * 1000;
    let bl = a.u64("batch_limit").unwrap_or(1000) as usize;
    let tie = if a.str("tie_order") == Some("arrivals_first") {
        TieOrder::ArrivalsFirst
    } else {
        TieOrder::Random
    };
    let rule = if a.str("owner") == Some("modulo") {
        OwnerRule::Modulo
    } else {
        OwnerRule::Ring
    };
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
    let a = p.args;
    let (limit, interval) = (p.setup.policy.limit, p.setup.interval_ns());
    let fail_open = a.str("failure").unwrap_or("open") == "open";
    let store = match a.str("store").unwrap_or("envoy_ratelimit") {
        "kong_redis" => Store::KongRedis,
        "redis_gcra" => Store::RedisGcra,
        _ => Store::EnvoyRatelimit,
    };
    let burst = a.u64("burst");
    if burst.is_some() && store != Store::RedisGcra {
        return Err(err(
            format!("{}.burst", p.field),
            "a redis_gcra setting: expected store \"redis_gcra\"",
        ));
    }
    let burst = burst.unwrap_or(limit);
    let cache = a.bool("local_cache").unwrap_or(false);
    let stop = a.bool("stop_increment_when_over_limit").unwrap_or(false);
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
    let (a, field, setup) = (p.args, p.field, p.setup);
    let (limit, interval) = (setup.policy.limit, setup.interval_ns());
    let fail_open = a.str("failure").unwrap_or("open") == "open";
    let Some(ms) = a.u64("sync_ms") else {
        return Err(err(
            format!("{field}.sync_ms"),
            "missing: expected the sync period in ms",
        ));
    };
    let (build, cost, head): (Build, StrategyCost, &str) = if a.str("flavor") == Some("apisix") {
        for k in ["lose_in_flight", "failure"] {
            if a.str(k).is_some() || a.bool(k).is_some() {
                return Err(err(format!("{field}.{k}"), "not an APISIX setting: its delayed sync falls back to a local limit-count when Redis fails"));
            }
        }
        if ms < 100 || ms >= setup.policy.interval_ms {
            return Err(err(format!("{field}.sync_ms"), format!("value {ms}: APISIX refuses a sync_interval below 0.1 s or not below the time window ({} ms)", setup.policy.interval_ms)));
        }
        let recount = a.bool("recount_flushed_delta").unwrap_or(true);
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
        if a.bool("recount_flushed_delta").is_some() {
            return Err(err(
                format!("{field}.recount_flushed_delta"),
                "an APISIX setting: expected flavor \"apisix\"",
            ));
        }
        let lose = a.bool("lose_in_flight").unwrap_or(true);
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
