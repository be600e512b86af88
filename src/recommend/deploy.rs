//! A setting run as a fleet: the decision lab's `deployment` it becomes
//! (`--replicas`, `--balancer`, or a family whose counter is shared) and
//! the fleet replay that measures it.

use super::search::*;
use crate::error::{Error, Result};
use crate::lab::decision;
use crate::sizing::limit::LimitPolicy;
use serde_json::{Map, Value};

/// How the decision lab runs a setting: as a `limiters` entry, or as a
/// fleet (a `deployment` with one strategy).
#[derive(Debug, Clone, PartialEq)]
pub enum LabForm {
    /// A `limiters` entry.
    Limiter(Value),
    /// A fleet: the deployment's one strategy entry, and the policy its
    /// store-backed strategies enforce (the setting's own limit and
    /// window, e.g. Kong's `minute: 600`; `None`: the intent's).
    Fleet {
        /// The `strategies` entry.
        strategy: Value,
        /// The (limit, window) the strategy counts with.
        enforced: Option<LimitPolicy>,
    },
}

/// `--replicas N --balancer B`: the fleet a setting is measured on.
#[derive(Debug, Clone, PartialEq)]
pub struct Deploy {
    /// Replicas.
    pub replicas: u64,
    /// The balancer, as a `deployment.balancer` value (`"round_robin"`).
    pub balancer: Value,
}

/// The decision lab's `deployment` object of a fleet of one strategy.
///
/// # Examples
///
/// ```
/// use ratelab::recommend::search::{deployment_json, Deploy};
/// let d = Deploy { replicas: 4, balancer: "maglev".into() };
/// let v = deployment_json(&d, &serde_json::json!({"strategy": "central", "store": "kong_redis"}));
/// assert_eq!(v["replicas"], 4);
/// assert_eq!(v["strategies"][0]["store"], "kong_redis");
/// ```
pub fn deployment_json(deploy: &Deploy, strategy: &Value) -> Value {
    let mut m = Map::new();
    m.insert("replicas".into(), deploy.replicas.into());
    m.insert("balancer".into(), deploy.balancer.clone());
    m.insert("strategies".into(), Value::Array(vec![strategy.clone()]));
    Value::Object(m)
}

/// Builds a probe fleet on `deploy` (each replica a token bucket), so that
/// a balancer the fleet lab refuses is refused before any search, with
/// the lab's reason.
///
/// # Examples
///
/// ```
/// use ratelab::recommend::search::{check_deploy, Deploy};
/// use ratelab::sizing::limit::LimitPolicy;
/// let p = LimitPolicy { limit: 10, interval_ms: 1000 };
/// let ok = Deploy { replicas: 3, balancer: "maglev".into() };
/// assert!(check_deploy(&ok, p).is_ok());
/// let bad = Deploy { replicas: 3, balancer: serde_json::json!({"type": "maglev", "table_size": 10}) };
/// let e = check_deploy(&bad, p).unwrap_err();
/// assert!(e.message().contains("expected a prime"), "{}", e.message());
/// ```
pub fn check_deploy(deploy: &Deploy, policy: LimitPolicy) -> Result<()> {
    let setup = super::search::setup(policy, 1);
    let dep = deployment_json(
        deploy,
        &serde_json::json!({"strategy": "local", "model": "token_bucket"}),
    );
    let sc = crate::scenario::Scenario::parse(
        std::path::Path::new("recommend"),
        r#"{"name": "recommend", "kind": "decision_accuracy"}"#,
    )?;
    typed(&dep)
        .and_then(|dep| decision::fleet::fleet_candidates(&sc, &setup, &dep, None, &|_| Ok(())))
        .map(|_| ())
        .map_err(|e| {
            let m = e.message();
            let m = m.split_once("field deployment.").map_or(m, |x| x.1);
            Error::input(format!("--balancer {}: {m}", deploy.balancer))
        })
}

/// The decision lab's batch: a fleet decides this many requests at a time
/// (a decision made after its request is filled in within the batch).
const LAB_BATCH: usize = 1 << 16;

/// Decisions made up front, handed out one by one (a fleet decides a
/// batch at once, as the lab runs it; the harm tally asks per request).
pub(super) struct Decided(pub(super) std::vec::IntoIter<bool>);

impl crate::model::Admit for Decided {
    fn admit(&mut self, _: u32, _: u64, _: crate::clock::Nanos) -> Result<crate::model::Decision> {
        let a = self
            .0
            .next()
            .ok_or_else(|| Error::internal("more requests than decisions"))?;
        Ok(crate::model::Decision::from_allowed(a))
    }
    fn memory_bytes(&self, _: u64) -> u64 {
        0
    }
}

/// Builds and runs `strategy` as the decision lab builds a one-strategy
/// `deployment` (the same fleet, seeds and batches as a scenario with
/// that deployment and `seed`), returning each request's decision and
/// the fleet's memory.
pub(super) fn run_fleet(
    part: &Part,
    policy: LimitPolicy,
    deploy: &Deploy,
    strategy: &Value,
    enforced: Option<LimitPolicy>,
    seed: u64,
) -> Result<(Vec<bool>, u64)> {
    let setup_policy = enforced.unwrap_or(policy);
    let setup = super::search::setup(setup_policy, seed);
    setup.origin.set(part.trace.t0);
    let dep = deployment_json(deploy, strategy);
    let sc = crate::scenario::Scenario::parse(
        std::path::Path::new("recommend"),
        &serde_json::json!({"name": "recommend", "kind": "decision_accuracy", "seed": seed})
            .to_string(),
    )?;
    let (mut cands, _fleets) =
        decision::fleet::fleet_candidates(&sc, &setup, &typed(&dep)?, None, &|_| Ok(()))?;
    let mut cand = cands
        .pop()
        .ok_or_else(|| Error::internal("a deployment without a fleet"))?;
    let reqs: Vec<(u32, u64, crate::clock::Nanos)> = (0..part.trace.len())
        .map(|i| (part.trace.key[i], part.trace.w(i), part.trace.t[i]))
        .collect();
    let mut out = Vec::with_capacity(reqs.len());
    for chunk in reqs.chunks(LAB_BATCH) {
        cand.limiter.admit_batch(chunk, &mut out)?;
    }
    if out.len() != reqs.len() {
        return Err(Error::internal(
            "a fleet decided a different number of requests",
        ));
    }
    let memory = cand.limiter.memory_bytes(part.keys);
    Ok((out.into_iter().map(|d| d.allowed).collect(), memory))
}

/// A `deployment` object read as the decision lab reads a scenario's: its
/// errors name the field under `deployment.`.
fn typed(dep: &Value) -> Result<crate::fleet::Deployment> {
    #[derive(serde::Deserialize)]
    struct Scenario {
        deployment: crate::fleet::Deployment,
    }
    let w: Scenario = crate::scenario::from_value(
        std::path::Path::new("recommend"),
        serde_json::json!({ "deployment": dep }),
    )?;
    Ok(w.deployment)
}
