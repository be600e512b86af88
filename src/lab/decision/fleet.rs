//! The decision lab's side of a `deployment`: each `strategies` entry
//! planned by the strategy table (`fleet_strategies.rs`), and the grid
//! built into fleet candidates. The fleet itself
//! ([`crate::fleet`]) knows nothing of the lab: this file is the one
//! place the two meet.

use super::candidates::{Candidate, Origin, Setup};
use super::fleet_strategies::{strategies, Planned};
use super::param_grid;
use crate::clock::{Nanos, SECOND};
use crate::error::FieldError;
use crate::error::Result;
use crate::fleet::budget::{self, FleetPlan};
use crate::fleet::{
    table_bytes, Balancer, BalancerKind, Deployment, Fleet, Fleets, Identity, ReplicaFeed,
    UnixOrigin,
};
use crate::rng::{derive_seed, sim_rng};
use crate::scenario::Scenario;
use crate::workload::trace::TraceSpec;

impl UnixOrigin for Origin {
    fn unix_ns(&self) -> Option<Nanos> {
        self.is_set().then(|| self.get())
    }
}

/// Refuses what a deployment of `local` and `divided` strategies only
/// would ignore: their replicas decide alone and send nothing, so a
/// `network` and a store outage would change no decision. A `divided`
/// entry's `redivide` without a `scale_to` event is refused too (it only
/// acts on a scale event).
fn sends_something(scenario: &Scenario, dep: &Deployment) -> Result<()> {
    let which = |s: &serde_json::Map<String, serde_json::Value>| {
        s.get("strategy")
            .and_then(serde_json::Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let scales = dep.events.iter().any(|e| e.scale_to.is_some());
    for (i, s) in dep.strategies.iter().enumerate() {
        if which(s) == "divided" && s.contains_key("redivide") && !scales {
            return Err(scenario.field_error(
                format!("deployment.strategies[{i}].redivide"),
                "acts on a scale event: expected a {\"at_s\", \"scale_to\"} event in deployment.events, or no redivide",
            ));
        }
    }
    if dep
        .strategies
        .iter()
        .any(|s| !matches!(which(s).as_str(), "local" | "divided"))
    {
        return Ok(());
    }
    if dep.network.is_some() {
        return Err(scenario.field_error(
            "deployment.network",
            "local and divided replicas decide alone and send nothing: expected no network (or a strategy with a store)",
        ));
    }
    if let Some(i) = dep
        .events
        .iter()
        .position(|e| e.down == Some(crate::fleet::Down::Store))
    {
        return Err(scenario.field_error(
            format!("deployment.events[{i}].down"),
            "value \"store\": local and divided replicas use no store: expected a replica index (or a strategy with a store)",
        ));
    }
    Ok(())
}

/// Seed stream of the fleets' balancers and networks.
const FLEET_STREAM: u64 = 0xF1EE7;

/// The fleet candidates of a `deployment`: strategies x their parameter
/// grids x replicas x balancers, in that order.
pub fn fleet_candidates(
    scenario: &Scenario,
    setup: &Setup,
    dep: &Deployment,
    trace: Option<&TraceSpec>,
    budget: &dyn Fn(&Fleets) -> Result<()>,
) -> Result<(Vec<Candidate>, Fleets)> {
    let fe = |e: FieldError| scenario.field_error(e.field, e.message);
    let d = dep.check(scenario)?;
    sends_something(scenario, dep)?;
    let mut built: Vec<Planned> = Vec::new();
    for (i, s) in dep.strategies.iter().enumerate() {
        built.extend(strategies(s, &format!("deployment.strategies[{i}]"), setup).map_err(fe)?);
    }
    let total = built.len() * d.replicas.len() * d.balancers.len();
    if total > param_grid::MAX_CANDIDATES {
        return Err(scenario.field_error(
            "deployment",
            format!(
                "the grid expands to {total} fleets: expected at most {}",
                param_grid::MAX_CANDIDATES
            ),
        ));
    }
    let mut cands = Vec::new();
    let mut fleets = Fleets::new(setup.interval_ns().div_ceil(SECOND) as usize);
    let limit_all = setup.policy.limit;
    let peak_events = d.peak_scale();
    d.check_weights(scenario)?;
    // The grid's cost, checked before any fleet is built.
    for Planned { cost, .. } in &built {
        for &n in &d.replicas {
            for b in &d.balancers {
                let peak = n.max(peak_events);
                fleets.plan_fleet(FleetPlan {
                    replicas: peak,
                    foot: cost.foot,
                    ops_per_request: (cost.ops_per_request)(peak),
                    spread: !matches!(
                        b.kind,
                        BalancerKind::RingHash { .. } | BalancerKind::Maglev { .. }
                    ),
                    table: match table_bytes(&b.kind, &b.weights, n) {
                        0 => None,
                        bytes => Some((
                            xxhash_rust::xxh3::xxh3_64(
                                format!("{:?} {n} {:?}", b.kind, b.weights).as_bytes(),
                            ),
                            bytes,
                        )),
                    },
                });
            }
        }
    }
    budget(&fleets)?;
    for Planned {
        label,
        params,
        build,
        ..
    } in &built
    {
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
                    Identity {
                        strategy: label.clone(),
                        params: params.clone(),
                        balancer: b.label.clone(),
                        balancer_type: b.ty.clone(),
                        weighted: b.skew.is_none() && !b.weights.is_empty(),
                        skew: b.skew,
                    },
                );
                fleet = fleet.with_origin(Box::new(setup.origin.clone()));
                if idx == 0 && !d.events.is_empty() {
                    // One exact policy for the run: every fleet sees the
                    // same requests.
                    fleet = fleet.with_exact(limit_all, setup.interval_ns());
                }
                let name = format!("{label} x{n} {}", b.label);
                fleets.push(name.clone(), report);
                cands.push(
                    Candidate::new(name, Box::new(fleet)).in_family(format!("{label} {}", b.label)),
                );
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
        t.format
            .and_then(|f| f.row())
            .map_or("replica", |r| r.replica_field)
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
        e.replica_bytes + e.store_bytes + e.table_bytes + e.dense_bytes,
        &format!(
            "{replicas} replicas in {} fleets, about {:.0} distinct keys of {:.0} key ids, {:.0} bytes of balancer rings and tables",
            fleets.plan().len(),
            load.distinct(),
            load.keys,
            e.table_bytes
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
            if !matches!(p.foot, crate::fleet::Footprint::Store(_)) {
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
