//! The `deployment` field of a decision scenario: checked, expanded into a
//! grid and built into fleet candidates; and the fleets' costs added to
//! the report.

use super::apisix_sync::ApisixSync;
use super::balancer::{Balancer, Kind, ReplicaFeed};
use super::budget::{self, FleetPlan, Footprint};
use super::central::{Central, Store};
use super::gubernator::{Gubernator, OwnerRule, TieOrder};
use super::kong_sync::KongSync;
use super::network::{parse_samples, Latency, Network};
use super::strategy::{Env, PerReplica, Rounding, Strategy};
use super::{Event, EventKind, Fleet, FleetReport};
use crate::clock::{Nanos, MILLI, SECOND};
use crate::error::Result;
use crate::lab::decision::candidates::{self, Candidate, Setup};
use crate::lab::decision::spec::{self as lspec, Args, Param};
use crate::report::chart;
use crate::report::chart::{shared_words, without_words};
use crate::report::fmt::{bytes_human, pct_scaled};
use crate::report::{ChartSpec, Output, Series, SeriesStyle};
use crate::rng::{derive_seed, sim_rng};
use crate::scenario::Scenario;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// Seed stream of the fleets' balancers and networks.
const FLEET_STREAM: u64 = 0xF1EE7;

/// Most replicas in one fleet.
pub const MAX_REPLICAS: u64 = 4096;

/// The fleets of a run: each candidate's name and its report handle.
#[derive(Default)]
pub struct Fleets {
    fleets: Vec<(String, Arc<Mutex<FleetReport>>)>,
    /// The policy interval in whole seconds (at least 1): the window of the
    /// time to converge.
    window_s: usize,
    /// Per fleet: what its cost is estimated from (see [`budget`]).
    plan: Vec<FleetPlan>,
    /// The trace opened once, when a `from_trace` balancer reads its
    /// replicas from it: the lab's requests read the same input.
    trace_input: Option<crate::workload::trace::input::SharedInput>,
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

/// Error as (field, message).
type FieldErr = (String, String);

fn err(field: impl Into<String>, msg: impl Into<String>) -> FieldErr {
    (field.into(), msg.into())
}

/// A list or a single value, each checked by `f`.
fn one_or_many<T>(
    v: &Value,
    field: &str,
    f: impl Fn(&Value, &str) -> Result<T, FieldErr>,
) -> Result<Vec<T>, FieldErr> {
    match v {
        Value::Array(a) if a.is_empty() => {
            Err(err(field, "empty list: expected at least one value"))
        }
        Value::Array(a) => a
            .iter()
            .enumerate()
            .map(|(i, x)| f(x, &format!("{field}[{i}]")))
            .collect(),
        other => Ok(vec![f(other, field)?]),
    }
}

fn num(
    o: &Map<String, Value>,
    k: &str,
    field: &str,
    lo: f64,
    hi: f64,
) -> Result<Option<f64>, FieldErr> {
    match o.get(k) {
        None => Ok(None),
        Some(v) => match v.as_f64() {
            Some(x) if x.is_finite() && x >= lo && x <= hi => Ok(Some(x)),
            _ => Err(err(
                format!("{field}.{k}"),
                format!("value {v}: expected a number in {lo}..={hi}"),
            )),
        },
    }
}

/// A balancer entry: its kind, weights and label.
fn balancer(v: &Value, field: &str) -> Result<(Kind, Vec<f64>, String, Option<f64>), FieldErr> {
    let obj: Map<String, Value> = match v {
        Value::String(s) => [("type".to_string(), Value::String(s.clone()))]
            .into_iter()
            .collect(),
        Value::Object(o) => o.clone(),
        other => {
            return Err(err(
                field,
                format!("value {other}: expected a balancer name or an object with \"type\""),
            ))
        }
    };
    const TYPES: &str = "round_robin, random, least_request, ring_hash, maglev, sticky, from_trace";
    let ty = obj.get("type").and_then(Value::as_str).ok_or_else(|| {
        err(
            format!("{field}.type"),
            format!("missing or not a string: expected one of {TYPES}"),
        )
    })?;
    let allowed: &[&str] = match ty {
        "round_robin" | "random" => &["type", "weights", "skew"],
        "least_request" => &["type", "choice_count", "service_ms"],
        "ring_hash" => &["type", "min_ring_size", "max_ring_size"],
        "maglev" => &["type", "table_size"],
        "sticky" => &["type", "mean_connection_s"],
        "from_trace" => &["type", "field"],
        other => {
            return Err(err(
                format!("{field}.type"),
                format!("value {other:?}: expected one of {TYPES}"),
            ))
        }
    };
    if let Some(k) = obj.keys().find(|k| !allowed.contains(&k.as_str())) {
        return Err(err(
            format!("{field}.{k}"),
            format!("unknown for {ty}: expected one of {}", allowed.join(", ")),
        ));
    }
    let mut weights = Vec::new();
    let mut label = ty.to_string();
    if let Some(w) = obj.get("weights") {
        let a = w.as_array().filter(|a| !a.is_empty()).ok_or_else(|| {
            err(
                format!("{field}.weights"),
                format!("value {w}: expected a list of positive numbers, one per replica"),
            )
        })?;
        for (i, x) in a.iter().enumerate() {
            match x.as_f64() {
                Some(f) if f.is_finite() && f > 0.0 && f <= 1e6 => weights.push(f),
                _ => {
                    return Err(err(
                        format!("{field}.weights[{i}]"),
                        format!("value {x}: expected a number > 0 and <= 1e6"),
                    ))
                }
            }
        }
        label = format!("{ty} weighted");
    }
    let skew = num(&obj, "skew", field, 0.0, 10.0)?;
    if let Some(s) = skew {
        if !weights.is_empty() {
            return Err(err(
                format!("{field}.skew"),
                "give weights or skew, not both",
            ));
        }
        // Replica i weighs 1 / (i + 1)^skew.
        weights = (0..MAX_REPLICAS as usize)
            .map(|i| 1.0 / libm::pow(i as f64 + 1.0, s))
            .collect();
        label = format!("{ty} skew={s}");
    }
    let kind = match ty {
        "round_robin" => Kind::RoundRobin,
        "random" => Kind::Random,
        "least_request" => {
            let c = num(&obj, "choice_count", field, 1.0, 100.0)?.unwrap_or(2.0);
            if c.fract() != 0.0 {
                return Err(err(
                    format!("{field}.choice_count"),
                    format!("value {c}: expected a whole number"),
                ));
            }
            let s = num(&obj, "service_ms", field, 0.0, 3.6e6)?.unwrap_or(10.0);
            Kind::LeastRequest {
                choice_count: c as u32,
                service: (s * MILLI as f64).round() as Nanos,
            }
        }
        "ring_hash" => {
            let lo = num(&obj, "min_ring_size", field, 1.0, 8_388_608.0)?.unwrap_or(1024.0);
            let hi = num(&obj, "max_ring_size", field, 1.0, 8_388_608.0)?.unwrap_or(8_388_608.0);
            if lo > hi || lo.fract() != 0.0 || hi.fract() != 0.0 {
                return Err(err(field, format!("min_ring_size {lo} / max_ring_size {hi}: expected whole numbers, min <= max (Envoy refuses it)")));
            }
            Kind::RingHash {
                min_ring_size: lo as u64,
                max_ring_size: hi as u64,
            }
        }
        "maglev" => {
            let m = num(&obj, "table_size", field, 3.0, 5_000_011.0)?.unwrap_or(65537.0);
            if m.fract() != 0.0 || !is_prime(m as u64) {
                return Err(err(
                    format!("{field}.table_size"),
                    format!("value {m}: expected a prime (Envoy refuses others)"),
                ));
            }
            if m as u64 != 65537 {
                label = format!("maglev table_size={m}");
            }
            Kind::Maglev {
                table_size: m as u64,
            }
        }
        "from_trace" => {
            let f = match obj.get("field") {
                None => String::new(),
                Some(Value::String(f)) if !f.trim().is_empty() => f.clone(),
                Some(v) => {
                    return Err(err(
                        format!("{field}.field"),
                        format!(
                            "value {v}: expected the name of the trace's replica column or field"
                        ),
                    ))
                }
            };
            Kind::FromTrace { field: f }
        }
        _ => {
            let s = num(&obj, "mean_connection_s", field, 0.000_001, 1e7)?.unwrap_or(10.0);
            label = format!("sticky {s} s");
            Kind::Sticky {
                mean_connection: (s * SECOND as f64).round() as Nanos,
            }
        }
    };
    Ok((kind, weights, label, skew))
}

fn is_prime(n: u64) -> bool {
    n >= 2
        && (2..)
            .take_while(|d| d * d <= n)
            .all(|d| !n.is_multiple_of(d))
}

/// The network: (latency, loss, per-replica latencies). `replicas` is the
/// most replicas a fleet of the grid can have: `per_replica` needs one
/// entry each.
fn network(
    v: Option<&Value>,
    scenario: &Scenario,
    field: &str,
    replicas: u64,
) -> Result<(Latency, f64, Vec<Latency>), FieldErr> {
    let Some(v) = v else {
        return Ok((Latency::Fixed(MILLI), 0.0, Vec::new()));
    };
    let o = v.as_object().ok_or_else(|| {
        err(
            field,
            format!("value {v}: expected an object with latency and loss"),
        )
    })?;
    if let Some(k) = o
        .keys()
        .find(|k| !["latency", "loss", "per_replica"].contains(&k.as_str()))
    {
        return Err(err(
            format!("{field}.{k}"),
            "unknown: expected latency, loss or per_replica",
        ));
    }
    let loss = num(o, "loss", field, 0.0, 1.0)?.unwrap_or(0.0);
    let lat = match o.get("latency") {
        None => Latency::Fixed(MILLI),
        Some(l) => latency(l, scenario, &format!("{field}.latency"))?,
    };
    let mut per = Vec::new();
    if let Some(p) = o.get("per_replica") {
        let f = format!("{field}.per_replica");
        let a = p.as_array().ok_or_else(|| {
            err(
                &f,
                format!("value {p}: expected a list with one {{\"latency\": ...}} per replica"),
            )
        })?;
        if a.len() as u64 != replicas {
            return Err(err(
                &f,
                format!(
                    "{} entries: expected one per replica ({replicas}, the most replicas a fleet has)",
                    a.len()
                ),
            ));
        }
        for (i, e) in a.iter().enumerate() {
            let fi = format!("{f}[{i}]");
            // `{"latency": {...}}`, or the latency object itself.
            let l = match e.as_object() {
                Some(eo) if eo.contains_key("latency") => {
                    if let Some(k) = eo.keys().find(|k| k.as_str() != "latency") {
                        return Err(err(format!("{fi}.{k}"), "unknown: expected latency"));
                    }
                    latency(&eo["latency"], scenario, &format!("{fi}.latency"))?
                }
                _ => latency(e, scenario, &fi)?,
            };
            per.push(l);
        }
    }
    Ok((lat, loss, per))
}

/// A latency object (`{"type": "fixed", "rtt_ms": 1}` and the others).
fn latency(l: &Value, scenario: &Scenario, f: &str) -> Result<Latency, FieldErr> {
    let lo = l.as_object().ok_or_else(|| {
        err(
            f,
            format!("value {l}: expected {{\"type\": \"fixed\", \"rtt_ms\": 1}}"),
        )
    })?;
    let ty = lo.get("type").and_then(Value::as_str).unwrap_or("");
    let allowed: &[&str] = match ty {
        "fixed" => &["type", "rtt_ms"],
        "lognormal" => &["type", "median_ms", "sigma"],
        "samples" => &["type", "path"],
        other => {
            return Err(err(
                format!("{f}.type"),
                format!("value {other:?}: expected fixed, lognormal or samples"),
            ))
        }
    };
    if let Some(k) = lo.keys().find(|k| !allowed.contains(&k.as_str())) {
        return Err(err(
            format!("{f}.{k}"),
            format!("unknown for {ty}: expected one of {}", allowed.join(", ")),
        ));
    }
    let ns = |x: f64| (x * MILLI as f64).round() as Nanos;
    Ok(match ty {
        "fixed" => Latency::Fixed(ns(num(lo, "rtt_ms", f, 0.0, 3.6e6)?.unwrap_or(1.0))),
        "lognormal" => Latency::LogNormal {
            median: ns(num(lo, "median_ms", f, 0.0, 3.6e6)?.unwrap_or(1.0)),
            sigma: num(lo, "sigma", f, 0.0, 5.0)?.unwrap_or(0.5),
        },
        _ => {
            let p = lo.get("path").and_then(Value::as_str).ok_or_else(|| {
                err(
                    format!("{f}.path"),
                    "missing: expected a CSV of round trips in ms",
                )
            })?;
            let path = scenario.resolve(p);
            // 64 MiB: millions of round trips, far more than a distribution
            // needs; `/dev/zero` is refused, not read.
            const MAX_SAMPLES_BYTES: u64 = 64 << 20;
            let bytes = crate::report::pending::read_bounded(
                &path,
                MAX_SAMPLES_BYTES,
                "a latency samples file",
            )
            .map_err(|e| err(format!("{f}.path"), e.message()))?;
            let text = String::from_utf8(bytes).map_err(|e| {
                err(
                    format!("{f}.path"),
                    format!(
                        "{}: byte {}: not valid UTF-8",
                        path.display(),
                        e.utf8_error().valid_up_to()
                    ),
                )
            })?;
            Latency::Samples(
                parse_samples(&text)
                    .map_err(|m| err(format!("{f}.path"), format!("{}: {m}", path.display())))?,
            )
        }
    })
}

/// The events, checked.
fn events(v: Option<&Value>, max_replicas: u64) -> Result<Vec<Event>, FieldErr> {
    let Some(v) = v else { return Ok(Vec::new()) };
    let a = v.as_array().ok_or_else(|| {
        err(
            "deployment.events",
            format!("value {v}: expected a list of events"),
        )
    })?;
    let mut out = Vec::new();
    let secs = |x: f64| (x * SECOND as f64).round() as Nanos;
    for (i, e) in a.iter().enumerate() {
        let f = format!("deployment.events[{i}]");
        let o = e
            .as_object()
            .ok_or_else(|| err(&f, format!("value {e}: expected an object")))?;
        if let Some(k) = o.keys().find(|k| {
            !["at_s", "scale_to", "restart", "from_s", "to_s", "down"].contains(&k.as_str())
        }) {
            return Err(err(
                format!("{f}.{k}"),
                "unknown: expected {at_s, scale_to | restart} or {from_s, to_s, down}",
            ));
        }
        let replica = |k: &str| -> Result<Option<u64>, FieldErr> {
            match o.get(k) {
                None => Ok(None),
                Some(x) => match x.as_u64() {
                    Some(r) if r < max_replicas => Ok(Some(r)),
                    _ => Err(err(
                        format!("{f}.{k}"),
                        format!("value {x}: expected a replica index below {max_replicas}"),
                    )),
                },
            }
        };
        if let Some(d) = o.get("down") {
            let from = num(o, "from_s", &f, 0.0, 1e9)?.ok_or_else(|| {
                err(
                    format!("{f}.from_s"),
                    "missing: an outage needs from_s and to_s",
                )
            })?;
            let to = num(o, "to_s", &f, 0.0, 1e9)?.ok_or_else(|| {
                err(
                    format!("{f}.to_s"),
                    "missing: an outage needs from_s and to_s",
                )
            })?;
            if to <= from {
                return Err(err(
                    format!("{f}.to_s"),
                    format!("value {to}: expected more than from_s ({from})"),
                ));
            }
            let (a, b) = if d == "store" {
                (EventKind::StoreDown(true), EventKind::StoreDown(false))
            } else {
                let r = replica("down")?.ok_or_else(|| {
                    err(
                        format!("{f}.down"),
                        format!("value {d}: expected \"store\" or a replica index"),
                    )
                })? as usize;
                (
                    EventKind::ReplicaDown(r, true),
                    EventKind::ReplicaDown(r, false),
                )
            };
            out.push(Event {
                at: secs(from),
                kind: a,
            });
            out.push(Event {
                at: secs(to),
                kind: b,
            });
            continue;
        }
        let at = num(o, "at_s", &f, 0.0, 1e9)?.ok_or_else(|| {
            err(
                format!("{f}.at_s"),
                "missing: expected at_s with scale_to or restart, or from_s/to_s with down",
            )
        })?;
        let kind = match (o.get("scale_to"), replica("restart")?) {
            (Some(s), None) => match s.as_u64() {
                Some(n) if (1..=MAX_REPLICAS).contains(&n) => EventKind::ScaleTo(n as usize),
                _ => {
                    return Err(err(
                        format!("{f}.scale_to"),
                        format!("value {s}: expected 1..={MAX_REPLICAS}"),
                    ))
                }
            },
            (None, Some(r)) => EventKind::Restart(r as usize),
            _ => return Err(err(&f, "expected exactly one of scale_to and restart")),
        };
        out.push(Event { at: secs(at), kind });
    }
    Ok(out)
}

/// One strategy entry expanded: (label, builder of the strategy for n
/// replicas).
type Build = Box<dyn Fn(usize) -> Result<Box<dyn Strategy>>>;

/// A strategy grid point: label, sync period if any, builder, and for the
/// budget its per-key footprint and the work of a request (a function of
/// the replica count).
type Planned = (String, Option<u64>, Build, Footprint, fn(usize) -> f64);

fn strategies(entry: &Value, field: &str, setup: &Setup) -> Result<Vec<Planned>, FieldErr> {
    let o = entry.as_object().ok_or_else(|| {
        err(
            field,
            format!("value {entry}: expected an object with \"strategy\""),
        )
    })?;
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
                        let make: super::MakeReplica = Box::new(move |lim| {
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
    dep: &Value,
    budget: &dyn Fn(&Fleets) -> Result<()>,
) -> Result<(Vec<Candidate>, Fleets)> {
    let fe = |(f, m): FieldErr| scenario.field_error(f, m);
    let o = dep.as_object().ok_or_else(|| {
        scenario.field_error("deployment", format!("value {dep}: expected an object"))
    })?;
    const FIELDS: &[&str] = &["replicas", "balancer", "strategies", "network", "events"];
    if let Some(k) = o.keys().find(|k| !FIELDS.contains(&k.as_str())) {
        return Err(scenario.field_error(
            format!("deployment.{k}"),
            format!("unknown: expected one of {}", FIELDS.join(", ")),
        ));
    }
    let replicas = one_or_many(
        o.get("replicas").ok_or_else(|| {
            scenario.field_error(
                "deployment.replicas",
                "missing: expected a number or a list",
            )
        })?,
        "deployment.replicas",
        |v, f| match v.as_u64() {
            Some(n) if (1..=MAX_REPLICAS).contains(&n) => Ok(n as usize),
            _ => Err(err(
                f,
                format!("value {v}: expected a whole number in 1..={MAX_REPLICAS}"),
            )),
        },
    )
    .map_err(fe)?;
    let balancers = match o.get("balancer") {
        None => vec![(
            Kind::RoundRobin,
            Vec::new(),
            "round_robin".to_string(),
            None,
        )],
        Some(v) => one_or_many(v, "deployment.balancer", balancer).map_err(fe)?,
    };
    let max_r = replicas.iter().copied().max().unwrap_or(1) as u64;
    let evs = events(
        o.get("events"),
        MAX_REPLICAS.min(max_r.max(scale_max(o.get("events")))),
    )
    .map_err(fe)?;
    let most = max_r.max(scale_max(o.get("events"))).min(MAX_REPLICAS);
    let (lat, loss, per_replica) =
        network(o.get("network"), scenario, "deployment.network", most).map_err(fe)?;
    let list = o
        .get("strategies")
        .and_then(Value::as_array)
        .filter(|a| !a.is_empty())
        .ok_or_else(|| {
            scenario.field_error(
                "deployment.strategies",
                "missing or empty: expected a list of {\"strategy\": ...} entries",
            )
        })?;
    let mut built: Vec<Planned> = Vec::new();
    for (i, s) in list.iter().enumerate() {
        built.extend(strategies(s, &format!("deployment.strategies[{i}]"), setup).map_err(fe)?);
    }
    let total = built.len() * replicas.len() * balancers.len();
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
    let mut fleets = Fleets {
        window_s: setup.interval_ns().div_ceil(SECOND).max(1) as usize,
        ..Fleets::default()
    };
    let limit_all = setup.policy.limit;
    let peak_events = evs
        .iter()
        .filter_map(|e| match e.kind {
            EventKind::ScaleTo(m) => Some(m),
            _ => None,
        })
        .max()
        .unwrap_or(0);
    // Explicit weights are one a replica: a count that differs would be
    // padded (the extra replicas weigh 1) or cut without a word.
    for (j, (_, weights, _, skew)) in balancers.iter().enumerate() {
        if skew.is_some() || weights.is_empty() {
            continue;
        }
        for &n in &replicas {
            let peak = n.max(peak_events);
            if weights.len() != n && weights.len() != peak {
                let field = if o.get("balancer").is_some_and(Value::is_array) {
                    format!("deployment.balancer[{j}].weights")
                } else {
                    "deployment.balancer.weights".to_string()
                };
                return Err(scenario.field_error(
                    field,
                    format!(
                        "{} weights for {n} replicas: expected one weight a replica ({n})",
                        weights.len()
                    ),
                ));
            }
        }
    }
    // The grid's cost, checked before any fleet is built.
    for (_, _, _, foot, work) in &built {
        for &n in &replicas {
            for (kind, ..) in &balancers {
                let peak = n.max(peak_events);
                fleets.plan.push(FleetPlan {
                    replicas: peak,
                    foot: *foot,
                    ops_per_request: work(peak),
                    spread: !matches!(kind, Kind::RingHash { .. } | Kind::Maglev { .. }),
                });
            }
        }
    }
    budget(&fleets)?;
    for (label, sync_ms, build, _, _) in &built {
        for &n in &replicas {
            for (kind, weights, blabel, skew) in &balancers {
                let idx = cands.len() as u64;
                let seed = derive_seed(setup.seed, &[FLEET_STREAM, idx]);
                let env = Env::new(
                    Network::new(lat.clone(), loss, sim_rng(derive_seed(seed, &[1])))
                        .with_per_replica(per_replica.clone()),
                );
                let mut bal = Balancer::new(
                    kind.clone(),
                    weights.clone(),
                    sim_rng(derive_seed(seed, &[2])),
                );
                if let Kind::FromTrace { field } = kind {
                    let feed = replica_feed(scenario, setup, field, n, &mut fleets.trace_input)?;
                    bal = bal.with_feed(feed);
                }
                let strategy = build(n)
                    .map_err(|e| scenario.field_error("deployment.strategies", e.message()))?;
                let (mut fleet, report) = Fleet::new(
                    n,
                    bal,
                    strategy,
                    evs.clone(),
                    env,
                    (blabel.clone(), label.clone()),
                    (*sync_ms, *skew),
                );
                fleet = fleet.with_origin(setup.origin.clone());
                if idx == 0 && !evs.is_empty() {
                    // One exact policy for the run: every fleet sees the
                    // same requests.
                    fleet = fleet.with_exact(limit_all, setup.interval_ns());
                }
                let name = format!("{label} x{n} {blabel}");
                fleets.fleets.push((name.clone(), report));
                cands.push(
                    Candidate::new(name, Box::new(fleet)).in_family(format!("{label} {blabel}")),
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
    field: &str,
    n: usize,
    shared: &mut Option<crate::workload::trace::input::SharedInput>,
) -> Result<ReplicaFeed> {
    let p: crate::lab::decision::Params = scenario.params()?;
    let Some(t) = p.trace.as_ref() else {
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

/// The largest `scale_to` of the events (0 when none).
fn scale_max(v: Option<&Value>) -> u64 {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|e| e.get("scale_to").and_then(Value::as_u64))
                .max()
                .unwrap_or(0)
        })
        .unwrap_or(0)
}

impl Fleets {
    /// The trace as opened for a `from_trace` balancer (None: no fleet
    /// reads it), for the lab's requests to read in the same pass.
    pub(crate) fn trace_input(&self) -> Option<&crate::workload::trace::input::SharedInput> {
        self.trace_input.as_ref()
    }

    /// Refuses a grid whose replicas would need more work or memory than
    /// the budget allows, before any fleet is built (see [`budget`]: the
    /// state grows with the keys each replica sees, the work with the
    /// operations each strategy makes of a request).
    pub(crate) fn check_budget(
        &self,
        scenario: &Scenario,
        workload: &crate::workload::timed::TimedWorkload,
        ctx: &crate::lab::RunContext,
    ) -> Result<()> {
        if self.plan.is_empty() {
            return Ok(());
        }
        let load = budget::Load::of(workload);
        let e = budget::estimate(&self.plan, &load);
        let replicas: usize = self.plan.iter().map(|p| p.replicas).sum();
        ctx.check_work(
            scenario,
            "deployment",
            e.ops,
            budget::UNIT_COST,
            &format!(
                "up to {:.0} requests through {} fleets ({replicas} replicas in all), {:.3e} simulated operations",
                load.requests,
                self.plan.len(),
                e.ops
            ),
        )?;
        ctx.check_memory(
            scenario,
            "deployment",
            e.replica_bytes + e.store_bytes,
            &format!(
                "{replicas} replicas in {} fleets, about {:.0} distinct keys",
                self.plan.len(),
                load.distinct()
            ),
            "fewer replicas or strategies",
        )
    }

    /// Each fleet's plan, in candidate order.
    #[cfg(test)]
    pub(crate) fn plan(&self) -> &[FleetPlan] {
        &self.plan
    }

    /// The most fleet state a distinct key costs, all fleets (bytes).
    pub fn per_key_bytes(&self) -> u64 {
        budget::per_key_bytes(&self.plan)
    }

    /// The grid's cost estimate for `workload` (see [`crate::lab::decision::deployment::Load`]).
    pub fn estimate(&self, workload: &crate::workload::timed::TimedWorkload) -> budget::Estimate {
        budget::estimate(&self.plan, &budget::Load::of(workload))
    }

    /// Adds each fleet's costs to the report: `fleet` in report.json (one
    /// entry per fleet, with its per-replica breakdown) and a table in
    /// table.md. `duration_ns` turns counts into rates, `requests` is the
    /// number of request lines.
    pub fn annotate(&self, out: &mut Output, duration_ns: Nanos, requests: u64) -> Result<()> {
        if self.fleets.is_empty() {
            return Ok(());
        }
        let secs = (duration_ns as f64 / SECOND as f64).max(1e-9);
        let mut rows = Vec::new();
        let mut md = String::from("\n## Fleet cost\n\n| fleet | store ops/s | messages/s | added latency / request | failed | memory / replica (mean) | busiest replica share |\n|---|---:|---:|---:|---:|---:|---:|\n");
        for (name, rep) in &self.fleets {
            let Ok(r) = rep.lock() else { continue };
            let mean_lat_ms = if requests == 0 {
                0.0
            } else {
                r.cost.added_latency_ns as f64 / requests as f64 / MILLI as f64
            };
            let mem: Vec<u64> = r.per_replica.iter().map(|p| p.memory_bytes).collect();
            let mem_mean = if mem.is_empty() {
                0
            } else {
                mem.iter().sum::<u64>() / mem.len() as u64
            };
            let busiest = r.per_replica.iter().map(|p| p.requests).max().unwrap_or(0);
            let share = if requests == 0 {
                0.0
            } else {
                busiest as f64 / requests as f64
            };
            md.push_str(&format!(
                "| {name} | {:.1} | {:.1} | {:.3} ms | {} | {} | {:.1}% |\n",
                r.cost.store_ops as f64 / secs,
                r.cost.messages as f64 / secs,
                mean_lat_ms,
                r.cost.failed,
                bytes_human(mem_mean),
                share * 100.0
            ));
            rows.push(json!({
                "algorithm": name,
                "strategy": r.strategy,
                "balancer": r.balancer,
                "replicas": r.replicas,
                "peak_replicas": r.peak_replicas,
                "store_ops": r.cost.store_ops,
                "store_ops_per_s": round3(r.cost.store_ops as f64 / secs),
                "messages": r.cost.messages,
                "messages_per_s": round3(r.cost.messages as f64 / secs),
                "added_latency_ms_per_request": round3(mean_lat_ms),
                "failed": r.cost.failed,
                "unserved": r.unserved,
                "balancer_bytes": r.balancer_bytes,
                "memory_per_replica_bytes": mem_mean,
                "per_replica": r.per_replica.iter().enumerate().map(|(i, p)| json!({
                    "replica": i, "requests": p.requests, "allowed": p.allowed,
                    "keys": p.keys, "memory_bytes": p.memory_bytes,
                })).collect::<Vec<_>>(),
            }));
        }
        let converge = self.converge();
        if !converge.is_empty() {
            for (row, c) in rows.iter_mut().zip(&converge) {
                row["converge"] = Value::Array(
                    c.iter()
                        .map(|(label, at, t)| json!({"event": label, "at_s": round3(*at as f64 / SECOND as f64), "time_to_converge_s": t}))
                        .collect(),
                );
            }
            md.push_str(&self.converge_table(&converge));
        }
        if let Some(m) = out.json.as_object_mut() {
            m.insert("fleet".into(), Value::Array(rows));
        }
        out.table_md.push_str(&md);
        let specs = self.charts(&out.json);
        if !specs.is_empty() {
            out.table_md.push_str("\n## Fleet charts\n\n");
        }
        for spec in specs {
            out.table_md
                .push_str(&format!("- `{}`: {}\n", spec.name, spec.caption));
            out.charts.push(chart::render(&spec)?);
        }
        Ok(())
    }

    /// Per fleet, each disturbance's (label, time, time to converge);
    /// empty when the run has no events.
    fn converge(&self) -> Vec<Vec<(String, Nanos, Option<f64>)>> {
        let reps: Vec<FleetReport> = self
            .fleets
            .iter()
            .filter_map(|(_, r)| r.lock().ok().map(|r| r.clone()))
            .collect();
        let Some(exact) = reps.iter().map(|r| &r.exact_per_s).find(|x| !x.is_empty()) else {
            return Vec::new();
        };
        reps.iter()
            .map(|r| {
                r.disturbances
                    .iter()
                    .map(|(at, label)| {
                        let t = super::time_to_converge(
                            &r.admitted_per_s,
                            exact,
                            *at,
                            self.window_s,
                            super::CONVERGE_TOLERANCE,
                        );
                        (label.clone(), *at, t)
                    })
                    .collect()
            })
            .collect()
    }

    /// The table of times to converge: a column per disturbance.
    fn converge_table(&self, conv: &[Vec<(String, Nanos, Option<f64>)>]) -> String {
        let Some(first) = conv.first().filter(|c| !c.is_empty()) else {
            return String::new();
        };
        let mut md = format!(
            "\n## Time to converge\n\nSeconds after each event until the fleet's admitted requests per {} s window stay within {:.0}% of the fleet-wide exact sliding log's for a full window (none: not before the run ends).\n\n| fleet |",
            self.window_s,
            super::CONVERGE_TOLERANCE * 100.0
        );
        for (label, at, _) in first {
            md.push_str(&format!(
                " {label} at {} s |",
                round3(*at as f64 / SECOND as f64)
            ));
        }
        md.push_str("\n|---|");
        md.push_str(&"---:|".repeat(first.len()));
        md.push('\n');
        for ((name, _), c) in self.fleets.iter().zip(conv) {
            md.push_str(&format!("| {name} |"));
            for (_, _, t) in c {
                match t {
                    Some(t) => md.push_str(&format!(" {t:.1} s |")),
                    None => md.push_str(" none |"),
                }
            }
            md.push('\n');
        }
        md
    }

    /// The fleet charts this run has data for: excess against the sync
    /// interval (a line per replica count), compliant requests denied
    /// against the balancer's skew (a line per strategy), admitted per
    /// second around a scale event (a line per fleet).
    fn charts(&self, json: &Value) -> Vec<ChartSpec> {
        let reps: Vec<(String, FleetReport)> = self
            .fleets
            .iter()
            .filter_map(|(n, r)| r.lock().ok().map(|r| (n.clone(), r.clone())))
            .collect();
        let row = |name: &str, f: &str| -> f64 {
            json["rows"]
                .as_array()
                .and_then(|rows| rows.iter().find(|r| r["algorithm"] == name))
                .and_then(|r| r["harm"][f].as_f64())
                .unwrap_or(0.0)
        };
        let mut out = Vec::new();
        // Sync interval: one line per (replicas, strategy without its
        // interval), drawn when some line has two intervals or more (one
        // interval is a point, and the table says it).
        let mut lines: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
        for (name, r) in &reps {
            if let Some(ms) = r.sync_ms {
                let fam: Vec<&str> = r
                    .strategy
                    .split_whitespace()
                    .filter(|w| !w.starts_with("sync_ms="))
                    .collect();
                lines
                    .entry(format!("{} replicas, {}", r.replicas, fam.join(" ")))
                    .or_default()
                    .push((ms as f64, row(name, "limited_excess_pct")));
            }
        }
        let swept = |p: &Vec<(f64, f64)>| p.iter().any(|q| q.0 != p[0].0);
        if lines.values().any(swept) {
            let mut c = ChartSpec::new(
                "excess_vs_sync_interval",
                "Excess over the exact limit against the sync interval",
                "sync interval (ms, log scale)",
                "limited keys: admitted beyond the exact limiter (%)",
            )
            .caption("Each line one replica count: how much more than the fleet-wide exact sliding log the limited keys get as the replicas sync less often.");
            c.x_log = true;
            for (label, mut pts) in lines {
                pts.sort_by(|a, b| a.0.total_cmp(&b.0));
                c.series
                    .push(Series::new(label, pts, SeriesStyle::LinePoints));
            }
            out.push(c);
        }
        // Balancer skew: one line per strategy. The same balancer without
        // skew or weights (its label is the bare type) is the line's skew 0.
        let skewed: Vec<(&str, usize, &str)> = reps
            .iter()
            .filter(|(_, r)| r.skew.is_some())
            .map(|(_, r)| {
                let ty = r.balancer.split(" skew=").next().unwrap_or_default();
                (r.strategy.as_str(), r.replicas, ty)
            })
            .collect();
        let mut lines: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
        for (name, r) in &reps {
            let even = || skewed.contains(&(r.strategy.as_str(), r.replicas, r.balancer.as_str()));
            let s = match r.skew {
                Some(s) => s,
                None if even() => 0.0,
                None => continue,
            };
            lines
                .entry(format!("{} x{}", r.strategy, r.replicas))
                .or_default()
                .push((s, row(name, "compliant_denied_pct")));
        }
        if lines.values().any(|p| p.len() >= 2) {
            let names: Vec<&str> = lines.keys().map(String::as_str).collect();
            let shared = shared_words(&names);
            let mut c = ChartSpec::new(
                "compliant_denied_vs_skew",
                format!(
                    "Compliant requests denied against the balancer's skew{}",
                    all_note(&shared)
                ),
                "skew s (replica i gets weight 1 / (i + 1)^s)",
                "compliant keys: requests denied (%)",
            )
            .caption("Each line one strategy (skew 0: the same balancer sending evenly), each point above 0 labelled with its value (a 0 the lines share, once): an uneven balancer sends more than its share to the first replicas, and a divided limit then denies clients that are within the policy.");
            // A point several lines share is labelled once, on the first.
            let all: Vec<(f64, f64)> = lines.values().flatten().copied().collect();
            for (label, mut pts) in lines {
                pts.sort_by(|a, b| a.0.total_cmp(&b.0));
                let labels = pts
                    .iter()
                    .map(|p| {
                        let shared = all.iter().filter(|q| *q == p).count() > 1;
                        let labelled = c.series.iter().any(|s| s.points.contains(p));
                        if p.1 > 0.0 {
                            pct_scaled(p.1)
                        } else if shared && !labelled {
                            "0%".into()
                        } else {
                            String::new()
                        }
                    })
                    .collect();
                let mut s =
                    Series::new(without_words(&label, &shared), pts, SeriesStyle::LinePoints);
                s.point_labels = Some(labels);
                c.series.push(s);
            }
            out.push(c);
        }
        // Timeline around the first scale event.
        if let Some(&(at, m)) = reps.iter().find_map(|(_, r)| r.scale_events.first()) {
            let at_s = at as f64 / SECOND as f64;
            let (lo, hi) = (at_s - 30.0, at_s + 30.0);
            let names: Vec<&str> = reps.iter().map(|(n, _)| n.as_str()).collect();
            let shared = shared_words(&names);
            let mut c = ChartSpec::new(
                "scale_event_timeline",
                format!(
                    "Admitted per second around the scale to {m} replicas{}",
                    all_note(&shared)
                ),
                "time (s)",
                "requests admitted by the fleet per second",
            )
            .caption("Each line one fleet, 30 s either side of the first scale event (the vertical line): a divided limit that re-divides drops at once; one that does not admits more per replica added.");
            c.vlines.push((at_s, format!("scale to {m}")));
            for (name, r) in &reps {
                let pts: Vec<(f64, f64)> = r
                    .admitted_per_s
                    .iter()
                    .enumerate()
                    .map(|(i, &v)| (i as f64 + 0.5, v as f64))
                    .filter(|p| p.0 >= lo && p.0 <= hi)
                    .collect();
                if !pts.is_empty() {
                    c.series.push(Series::new(
                        without_words(name, &shared),
                        pts,
                        SeriesStyle::Line,
                    ));
                }
            }
            if !c.series.is_empty() {
                out.push(c);
            }
        }
        out
    }
}

/// A title's note of the words every series' name shares (said once
/// there, not in each label): ` (all: x10 round_robin)`.
fn all_note(shared: &str) -> String {
    if shared.is_empty() {
        String::new()
    } else {
        format!(" (all: {shared})")
    }
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}
