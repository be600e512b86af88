//! The decision lab's side of a `deployment`: each `strategies` entry
//! expanded over its parameter grid (the lab's [`Param`]s, and for
//! `local`/`divided` any row of the lab's model table) into strategy
//! builders, and the grid built into fleet candidates. The fleet itself
//! ([`crate::fleet`]) knows nothing of the lab: this file is the one
//! place the two meet.

use super::candidates::{self, Candidate, Origin, Setup};
use super::spec::{self as lspec, Args, Param};
use super::TraceSpec;
use crate::clock::{Nanos, MILLI, SECOND};
use crate::error::Result;
use crate::fleet::budget::{self, FleetPlan, Footprint};
use crate::fleet::{
    ApisixSync, Balancer, BalancerKind, Central, Deployment, FieldErr, Fleet, Fleets, Gubernator,
    KongSync, MakeReplica, OwnerRule, PerReplica, ReplicaFeed, Rounding, Store, Strategy, TieOrder,
    UnixOrigin,
};
use crate::rng::{derive_seed, sim_rng};
use crate::scenario::Scenario;
use serde_json::{Map, Value};

fn err(field: impl Into<String>, msg: impl Into<String>) -> FieldErr {
    (field.into(), msg.into())
}

impl UnixOrigin for Origin {
    fn unix_ns(&self) -> Option<Nanos> {
        self.is_set().then(|| self.get())
    }
}

/// Seed stream of the fleets' balancers and networks.
const FLEET_STREAM: u64 = 0xF1EE7;
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
/// One strategy entry expanded: (label, builder of the strategy for n
/// replicas).
type Build = Box<dyn Fn(usize) -> Result<Box<dyn Strategy>>>;

/// A strategy grid point: label, sync period if any, builder, and for the
/// budget its per-key footprint and the work of a request (a function of
/// the replica count).
type Planned = (String, Option<u64>, Build, Footprint, fn(usize) -> f64);

fn strategies(
    o: &Map<String, Value>,
    field: &str,
    setup: &Setup,
) -> Result<Vec<Planned>, FieldErr> {
    let which = o.get("strategy").and_then(Value::as_str).unwrap_or("");
    let mut rest = o.clone();
    rest.remove("strategy");
    let whole_s = setup.policy.interval_ms.is_multiple_of(1000);
    let limit = setup.policy.limit;
    let interval = setup.interval_ns();
    match which {
        "local" | "divided" => {
            let model = rest.get("model").and_then(Value::as_str).ok_or_else(|| err(format!("{field}.model"), format!("missing: expected one of {}", candidates::known_models())))?.to_string();
            let row = candidates::row(&model).ok_or_else(|| err(format!("{field}.model"), format!("value {model:?}: expected one of {}", candidates::known_models())))?;
            let mut params: Vec<Param> = row.params.to_vec();
            if which == "divided" {
                params.extend_from_slice(DIVIDED);
            }
            let grid = lspec::expand(&rest, &params, field)?;
            let mut out: Vec<Planned> = Vec::new();
            for a in grid {
                // The label the lab gives the model, built once to check it.
                let probe = candidates::build(setup, row, &a).map_err(|e| err(field, e.message()))?;
                // Its bytes a key, as the fleet reports a replica's state.
                let per_key = probe.limiter.memory_bytes(1 << 16) as f64 / 65536.0;
                drop(probe.limiter);
                let divide = (which == "divided").then(|| {
                    let r = match a.str("rounding").unwrap_or("floor") {
                        "ceil" => Rounding::Ceil,
                        "nearest" => Rounding::Nearest,
                        _ => Rounding::Floor,
                    };
                    (a.u64("margin_pct").unwrap_or(0), r, a.bool("redivide").unwrap_or(true))
                });
                let label = format!("{which} {}", probe.name);
                let (s, a2) = (setup.clone(), a.clone());
                out.push((
                    label,
                    None,
                    Box::new(move |n| {
                        let (s, a) = (s.clone(), a2.clone());
                        let make: MakeReplica = Box::new(move |lim| {
                            let mut s2 = s.clone();
                            s2.policy.limit = lim;
                            Ok(candidates::build(&s2, row, &a)?.limiter)
                        });
                        Ok(Box::new(PerReplica::new(make, n, limit, divide)?) as Box<dyn Strategy>)
                    }),
                    Footprint::Seen(per_key),
                    budget::local as fn(usize) -> f64,
                ));
            }
            Ok(out)
        }
        "gubernator" => {
            if rest.contains_key("model") {
                return Err(err(format!("{field}.model"), "gubernator has its own algorithm: expected no \"model\""));
            }
            let grid = lspec::expand(&rest, GUBERNATOR, field)?;
            let mut out: Vec<Planned> = Vec::new();
            for a in grid {
                let global = a.str("behavior").unwrap_or("global") == "global";
                let drain = a.bool("drain_over_limit").unwrap_or(true);
                let wait = a.u64("global_sync_wait_ms").unwrap_or(100) * MILLI;
                let gbl = a.u64("global_batch_limit").unwrap_or(1000) as usize;
                let bwait = a.u64("batch_wait_us").unwrap_or(500) * 1000;
                let bl = a.u64("batch_limit").unwrap_or(1000) as usize;
                let tie = if a.str("tie_order") == Some("arrivals_first") { TieOrder::ArrivalsFirst } else { TieOrder::Random };
                let rule = if a.str("owner") == Some("modulo") { OwnerRule::Modulo } else { OwnerRule::Ring };
                let (fixed, varying) = a.suffixes(&["behavior"]);
                let head = if global { "gubernator GLOBAL" } else { "gubernator forwarding" };
                let label = join(head, &fixed, &varying);
                let (foot, work): (Footprint, fn(usize) -> f64) = if global {
                    (Footprint::EveryKey(120.0), budget::broadcast as fn(usize) -> f64)
                } else {
                    (Footprint::Owner(120.0), budget::forwarding as fn(usize) -> f64)
                };
                out.push((label, None, Box::new(move |n| Ok(Box::new(Gubernator::new(n, limit, interval, global, drain, wait).with_batch(bwait, bl).with_global_batch_limit(gbl).with_owner(rule).with_tie_order(tie)) as Box<dyn Strategy>)), foot, work));
            }
            Ok(out)
        }
        "central" | "periodic_sync" => {
            if rest.contains_key("model") {
                return Err(err(format!("{field}.model"), format!("{which} has its own store model: expected no \"model\"")));
            }
            if !whole_s {
                return Err(err(field, format!("policy.interval_ms {}: {which} counts in windows of whole Unix seconds, expected a multiple of 1000", setup.policy.interval_ms)));
            }
            let params = if which == "central" { CENTRAL } else { SYNC };
            let grid = lspec::expand(&rest, params, field)?;
            let mut out: Vec<Planned> = Vec::new();
            for a in grid {
                let fail_open = a.str("failure").unwrap_or("open") == "open";
                let (fixed, varying) = suffixes(&a);
                if which == "central" {
                    let store = match a.str("store").unwrap_or("envoy_ratelimit") {
                        "kong_redis" => Store::KongRedis,
                        "redis_gcra" => Store::RedisGcra,
                        _ => Store::EnvoyRatelimit,
                    };
                    let burst = a.u64("burst");
                    if burst.is_some() && store != Store::RedisGcra {
                        return Err(err(format!("{field}.burst"), "a redis_gcra setting: expected store \"redis_gcra\""));
                    }
                    let burst = burst.unwrap_or(limit);
                    let cache = a.bool("local_cache").unwrap_or(false);
                    let stop = a.bool("stop_increment_when_over_limit").unwrap_or(false);
                    let name = match store {
                        Store::EnvoyRatelimit => "envoy ratelimit redis",
                        Store::KongRedis => "kong redis sync_rate=-1",
                        Store::RedisGcra => "redis_rate gcra",
                    };
                    let label = join(&format!("central {name}"), &fixed, &varying);
                    out.push((label, None, Box::new(move |n| Ok(Box::new(Central::new(store, n, limit, interval, cache, stop, fail_open).with_burst(burst)) as Box<dyn Strategy>)), Footprint::Store(64.0), budget::central as fn(usize) -> f64));
                } else {
                    let Some(ms) = a.u64("sync_ms") else {
                        return Err(err(format!("{field}.sync_ms"), "missing: expected the sync period in ms"));
                    };
                    if a.str("flavor") == Some("apisix") {
                        for k in ["lose_in_flight", "failure"] {
                            if a.str(k).is_some() || a.bool(k).is_some() {
                                return Err(err(format!("{field}.{k}"), "not an APISIX setting: its delayed sync falls back to a local limit-count when Redis fails"));
                            }
                        }
                        if ms < 100 || ms >= setup.policy.interval_ms {
                            return Err(err(format!("{field}.sync_ms"), format!("value {ms}: APISIX refuses a sync_interval below 0.1 s or not below the time window ({} ms)", setup.policy.interval_ms)));
                        }
                        let recount = a.bool("recount_flushed_delta").unwrap_or(true);
                        let label = join("periodic_sync apisix", &fixed, &varying);
                        out.push((label, Some(ms), Box::new(move |n| Ok(Box::new(ApisixSync::new(n, limit, interval, ms * MILLI, recount)) as Box<dyn Strategy>)), Footprint::Seen(160.0), budget::apisix_sync as fn(usize) -> f64));
                        continue;
                    }
                    if a.bool("recount_flushed_delta").is_some() {
                        return Err(err(format!("{field}.recount_flushed_delta"), "an APISIX setting: expected flavor \"apisix\""));
                    }
                    let lose = a.bool("lose_in_flight").unwrap_or(true);
                    let label = join("periodic_sync kong", &fixed, &varying);
                    out.push((label, Some(ms), Box::new(move |n| Ok(Box::new(KongSync::new(n, limit, interval, ms * MILLI, fail_open, lose)) as Box<dyn Strategy>)), Footprint::Store(128.0), budget::kong_sync as fn(usize) -> f64));
                }
            }
            Ok(out)
        }
        other => Err(err(format!("{field}.strategy"), format!("value {other:?}: expected one of local, divided, central, periodic_sync, gubernator"))),
    }
}

fn suffixes(a: &Args) -> (String, String) {
    a.suffixes(&["store", "flavor"])
}

fn join(head: &str, fixed: &str, varying: &str) -> String {
    [head, fixed, varying]
        .iter()
        .filter(|s| !s.is_empty())
        .copied()
        .collect::<Vec<_>>()
        .join(" ")
}

/// The fleet candidates of a `deployment`: strategies x their parameter
/// grids x replicas x balancers, in that order.
pub fn fleet_candidates(
    scenario: &Scenario,
    setup: &Setup,
    dep: &Deployment,
    trace: Option<&TraceSpec>,
    budget: &dyn Fn(&Fleets) -> Result<()>,
) -> Result<(Vec<Candidate>, Fleets)> {
    let fe = |(f, m): FieldErr| scenario.field_error(f, m);
    let d = dep.check(scenario)?;
    let mut built: Vec<Planned> = Vec::new();
    for (i, s) in dep.strategies.iter().enumerate() {
        built.extend(strategies(s, &format!("deployment.strategies[{i}]"), setup).map_err(fe)?);
    }
    let total = built.len() * d.replicas.len() * d.balancers.len();
    if total > lspec::MAX_CANDIDATES {
        return Err(scenario.field_error(
            "deployment",
            format!(
                "the grid expands to {total} fleets: expected at most {}",
                lspec::MAX_CANDIDATES
            ),
        ));
    }
    let mut cands = Vec::new();
    let mut fleets = Fleets::new(setup.interval_ns().div_ceil(SECOND) as usize);
    let limit_all = setup.policy.limit;
    let peak_events = d.peak_scale();
    d.check_weights(scenario)?;
    // The grid's cost, checked before any fleet is built.
    for (_, _, _, foot, work) in &built {
        for &n in &d.replicas {
            for b in &d.balancers {
                let peak = n.max(peak_events);
                fleets.plan_fleet(FleetPlan {
                    replicas: peak,
                    foot: *foot,
                    ops_per_request: work(peak),
                    spread: !matches!(
                        b.kind,
                        BalancerKind::RingHash { .. } | BalancerKind::Maglev { .. }
                    ),
                });
            }
        }
    }
    budget(&fleets)?;
    for (label, sync_ms, build, _, _) in &built {
        for &n in &d.replicas {
            for b in &d.balancers {
                let idx = cands.len() as u64;
                let seed = derive_seed(setup.seed, &[FLEET_STREAM, idx]);
                let env = d.env(seed);
                let mut bal = Balancer::new(
                    b.kind.clone(),
                    b.weights.clone(),
                    sim_rng(derive_seed(seed, &[2])),
                );
                if let BalancerKind::FromTrace { field } = &b.kind {
                    let feed =
                        replica_feed(scenario, setup, trace, field, n, fleets.trace_input_mut())?;
                    bal = bal.with_feed(feed);
                }
                let strategy = build(n)
                    .map_err(|e| scenario.field_error("deployment.strategies", e.message()))?;
                let (mut fleet, report) = Fleet::new(
                    n,
                    bal,
                    strategy,
                    d.events.clone(),
                    env,
                    (b.label.clone(), label.clone()),
                    (*sync_ms, b.skew),
                );
                fleet = fleet.with_origin(Box::new(setup.origin.clone()));
                if idx == 0 && !d.events.is_empty() {
                    // One exact policy for the run: every fleet sees the
                    // same requests.
                    fleet = fleet.with_exact(limit_all, setup.interval_ns());
                }
                let name = format!("{label} x{n} {}", b.label);
                fleets.push(name.clone(), report);
                cands.push(Candidate {
                    name,
                    family: format!("{label} {}", b.label),
                    limiter: Box::new(fleet),
                });
            }
        }
    }
    Ok((cands, fleets))
}

/// The `from_trace` balancer's feed: the scenario's trace read with the
/// replica field as its key (default: a `replica` column, Envoy's
/// `UPSTREAM_HOST`, nginx's `upstream_addr`), from the same opened input
/// as the lab's requests (`shared`, opened here the first time): the
/// trace is read once, so standard input or a pipe work as a file does.
fn replica_feed(
    scenario: &Scenario,
    setup: &Setup,
    trace: Option<&TraceSpec>,
    field: &str,
    n: usize,
    shared: &mut Option<crate::workload::trace::input::SharedInput>,
) -> Result<ReplicaFeed> {
    let Some(t) = trace else {
        return Err(scenario.field_error(
            "deployment.balancer",
            "from_trace reads the replica of each request from the trace: expected a trace, not a workload",
        ));
    };
    let field = if !field.is_empty() {
        field
    } else {
        match t.format.as_deref() {
            None | Some("csv") | Some("jsonl") => "replica",
            Some(f) if f.starts_with("envoy") && f != "envoy-json" => "UPSTREAM_HOST",
            Some(_) => "upstream_addr",
        }
    };
    let input = match shared {
        Some(s) => s.input(),
        None => {
            let path = crate::lab::decision::source::trace_path(scenario, t);
            let s = crate::workload::trace::input::SharedInput::new(
                crate::workload::trace::input::open_input(&path)?,
            );
            let input = s.input();
            *shared = Some(s);
            input
        }
    };
    let reader = crate::lab::decision::source::open_trace(
        scenario,
        t,
        setup.seed,
        Some(field),
        Some(input),
    )?;
    Ok(ReplicaFeed::new(reader, n))
}

/// Refuses a grid whose replicas would need more work or memory than
/// the budget allows, before any fleet is built (see [`crate::fleet::budget`]: the
/// state grows with the keys each replica sees, the work with the
/// operations each strategy makes of a request).
pub(crate) fn check_budget(
    fleets: &Fleets,
    scenario: &Scenario,
    workload: &crate::workload::timed::TimedWorkload,
    ctx: &crate::lab::RunContext,
) -> Result<()> {
    if fleets.plan().is_empty() {
        return Ok(());
    }
    let load = budget::Load::of(workload);
    let e = budget::estimate(fleets.plan(), &load);
    let replicas: usize = fleets.plan().iter().map(|p| p.replicas).sum();
    ctx.check_work(
        scenario,
        "deployment",
        e.ops,
        budget::UNIT_COST,
        &format!(
            "up to {:.0} requests through {} fleets ({replicas} replicas in all), {:.3e} simulated operations",
            load.requests,
            fleets.plan().len(),
            e.ops
        ),
    )?;
    ctx.check_memory(
        scenario,
        "deployment",
        e.replica_bytes + e.store_bytes,
        &format!(
            "{replicas} replicas in {} fleets, about {:.0} distinct keys",
            fleets.plan().len(),
            load.distinct()
        ),
        "fewer replicas or strategies",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each fleet of a grid (every strategy, two replica counts, a key-blind
    /// and a key-hash balancer) run, and what it measured (operations:
    /// requests + store operations + messages; state: the sum of its
    /// replicas' `memory_bytes`) compared with the estimate made before it
    /// was built: within 2x both ways.
    #[test]
    fn estimates_are_within_2x_of_what_the_fleets_measure() {
        let json = r#"{"name": "grid", "kind": "decision_accuracy", "seed": 5,
          "policy": {"limit": 20, "interval_ms": 1000}, "shapes": [],
          "workload": {"type": "poisson", "keys": {"type": "zipf", "keys": 3000, "s": 1.0},
                       "rate": 400.0, "duration_s": 30.0},
          "deployment": {"replicas": [3, 8], "balancer": ["round_robin", {"type": "ring_hash"}],
            "strategies": [{"strategy": "local", "model": "token_bucket"},
                           {"strategy": "divided", "model": "gcra"},
                           {"strategy": "central"},
                           {"strategy": "periodic_sync", "sync_ms": 1000},
                           {"strategy": "periodic_sync", "flavor": "apisix", "sync_ms": 500},
                           {"strategy": "gubernator"},
                           {"strategy": "gubernator", "behavior": "forwarding"}]}}"#;
        let scenario =
            crate::scenario::Scenario::parse(std::path::Path::new("grid.json"), json).unwrap();
        let ctx = crate::lab::RunContext::for_scenario(&scenario);
        let prep = super::super::prepare(&scenario, &ctx, Vec::new()).unwrap();
        let plan = prep.fleets.as_ref().unwrap().plan().to_vec();
        let load = budget::Load::of(prep.p.workload.as_ref().unwrap());
        drop(prep);
        let out = super::super::run_with(&scenario, &ctx, Vec::new()).unwrap();
        let rows = out.json["fleet"].as_array().unwrap();
        assert_eq!(rows.len(), plan.len());
        let requests = out.json["requests"]["lines"].as_f64().unwrap();
        let within = |est: f64, got: f64| est <= 2.0 * got && got <= 2.0 * est;
        let mut compared_bytes = 0;
        for (p, row) in plan.iter().zip(rows) {
            let name = row["algorithm"].as_str().unwrap();
            let e = budget::estimate(std::slice::from_ref(p), &load);
            let ops =
                requests + row["store_ops"].as_f64().unwrap() + row["messages"].as_f64().unwrap();
            assert!(
                within(e.ops, ops),
                "{name}: {} estimated, {ops} measured",
                e.ops
            );
            let bytes: f64 = row["per_replica"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r["memory_bytes"].as_f64().unwrap())
                .sum();
            if !matches!(p.foot, Footprint::Store(_)) {
                compared_bytes += 1;
                assert!(
                    within(e.replica_bytes, bytes),
                    "{name}: {} bytes estimated, {bytes} measured",
                    e.replica_bytes
                );
            }
        }
        assert_eq!(compared_bytes, 20);
    }
}
