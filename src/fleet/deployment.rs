//! The `deployment` field of a decision scenario, checked: the replica
//! counts, the balancers, the network and the events, each with a
//! one-line error naming the field and the value. The `strategies`
//! entries are checked by the runner that expands them (see the module
//! docs of [`crate::fleet`]).

use super::balancer::Kind;
use super::network::{parse_samples, Latency, Network};
use super::run::{Event, EventKind};
use super::strategy::Env;
use crate::clock::{Nanos, MILLI, SECOND};
use crate::error::Result;
use crate::rng::{derive_seed, sim_rng};
use crate::scenario::Scenario;
use serde_json::{Map, Value};

/// Most replicas in one fleet.
pub const MAX_REPLICAS: u64 = 4096;

/// One balancer of the grid.
#[derive(Debug, Clone)]
pub struct BalancerSpec {
    /// Which balancer, with its settings.
    pub kind: Kind,
    /// Explicit weights, one a replica (or from `skew`); empty: even.
    pub weights: Vec<f64>,
    /// Its label in the fleet's name.
    pub label: String,
    /// The skew s (replica i weighs 1 / (i + 1)^s), when given.
    pub skew: Option<f64>,
}

/// The network every fleet of the grid runs on.
#[derive(Debug, Clone)]
pub struct NetworkSpec {
    /// The round trip of a message.
    pub latency: Latency,
    /// Share of messages lost.
    pub loss: f64,
    /// Per replica, its own round trip (empty: `latency` for all).
    pub per_replica: Vec<Latency>,
}

/// A `deployment`, checked: the grid's axes and what every fleet shares.
///
/// # Examples
///
/// ```
/// use ratelab::fleet::Deployment;
/// let s = ratelab::scenario::Scenario::parse(std::path::Path::new("f.json"),
///     r#"{"name": "f", "kind": "decision_accuracy", "seed": 1}"#).unwrap();
/// let v = serde_json::json!({"replicas": [2, 4], "balancer": "maglev",
///     "strategies": [{"strategy": "central"}],
///     "events": [{"at_s": 10, "scale_to": 8}]});
/// let d = Deployment::parse(&s, &v).unwrap();
/// assert_eq!(d.replicas, vec![2, 4]);
/// assert_eq!(d.balancers[0].label, "maglev");
/// assert_eq!(d.peak_scale(), 8);
/// let bad = serde_json::json!({"replicas": 0, "strategies": [{"strategy": "central"}]});
/// let e = Deployment::parse(&s, &bad).unwrap_err().to_string();
/// assert!(e.contains("deployment.replicas") && e.contains("value 0"), "{e}");
/// ```
#[derive(Debug, Clone)]
pub struct Deployment {
    /// Replica counts (a grid axis).
    pub replicas: Vec<usize>,
    /// Balancers (a grid axis).
    pub balancers: Vec<BalancerSpec>,
    /// Whether `balancer` was written as a list (for error fields).
    balancer_list: bool,
    /// The events every fleet goes through.
    pub events: Vec<Event>,
    /// The network.
    pub network: NetworkSpec,
    /// The `strategies` entries as written, for the runner to expand.
    pub strategies: Vec<Value>,
}

impl Deployment {
    /// Checks a `deployment` value; errors name `deployment.<field>`.
    pub fn parse(scenario: &Scenario, dep: &Value) -> Result<Deployment> {
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
            None => vec![BalancerSpec {
                kind: Kind::RoundRobin,
                weights: Vec::new(),
                label: "round_robin".to_string(),
                skew: None,
            }],
            Some(v) => one_or_many(v, "deployment.balancer", balancer).map_err(fe)?,
        };
        let max_r = replicas.iter().copied().max().unwrap_or(1) as u64;
        let events = events(
            o.get("events"),
            MAX_REPLICAS.min(max_r.max(scale_max(o.get("events")))),
        )
        .map_err(fe)?;
        let most = max_r.max(scale_max(o.get("events"))).min(MAX_REPLICAS);
        let (latency, loss, per_replica) =
            network(o.get("network"), scenario, "deployment.network", most).map_err(fe)?;
        let strategies = o
            .get("strategies")
            .and_then(Value::as_array)
            .filter(|a| !a.is_empty())
            .ok_or_else(|| {
                scenario.field_error(
                    "deployment.strategies",
                    "missing or empty: expected a list of {\"strategy\": ...} entries",
                )
            })?
            .clone();
        Ok(Deployment {
            replicas,
            balancers,
            balancer_list: o.get("balancer").is_some_and(Value::is_array),
            events,
            network: NetworkSpec {
                latency,
                loss,
                per_replica,
            },
            strategies,
        })
    }

    /// The most replicas a `scale_to` event asks for (0 when none).
    pub fn peak_scale(&self) -> usize {
        self.events
            .iter()
            .filter_map(|e| match e.kind {
                EventKind::ScaleTo(m) => Some(m),
                _ => None,
            })
            .max()
            .unwrap_or(0)
    }

    /// Refuses explicit weights whose count is not one a replica: a
    /// count that differs would be padded (the extra replicas weigh 1) or
    /// cut without a word.
    pub fn check_weights(&self, scenario: &Scenario) -> Result<()> {
        let peak_events = self.peak_scale();
        for (j, b) in self.balancers.iter().enumerate() {
            if b.skew.is_some() || b.weights.is_empty() {
                continue;
            }
            for &n in &self.replicas {
                let peak = n.max(peak_events);
                if b.weights.len() != n && b.weights.len() != peak {
                    let field = if self.balancer_list {
                        format!("deployment.balancer[{j}].weights")
                    } else {
                        "deployment.balancer.weights".to_string()
                    };
                    return Err(scenario.field_error(
                        field,
                        format!(
                            "{} weights for {n} replicas: expected one weight a replica ({n})",
                            b.weights.len()
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// The network environment of one fleet, its randomness from `seed`.
    pub fn env(&self, seed: u64) -> Env {
        Env::new(
            Network::new(
                self.network.latency.clone(),
                self.network.loss,
                sim_rng(derive_seed(seed, &[1])),
            )
            .with_per_replica(self.network.per_replica.clone()),
        )
    }
}

/// Error as (field, message).
pub type FieldErr = (String, String);

pub(crate) fn err(field: impl Into<String>, msg: impl Into<String>) -> FieldErr {
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
fn balancer(v: &Value, field: &str) -> Result<BalancerSpec, FieldErr> {
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
    Ok(BalancerSpec {
        kind,
        weights,
        label,
        skew,
    })
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

/// Refuses a deployment event that starts after the run's end (`end_s`
/// seconds): it would never happen, and its row of the converge table
/// would read "none" as if the fleet had not converged. Names the event's
/// field.
pub fn check_event_times(
    scenario: &crate::scenario::Scenario,
    dep: &serde_json::Value,
    end_s: f64,
) -> crate::error::Result<()> {
    let Some(events) = dep.get("events").and_then(serde_json::Value::as_array) else {
        return Ok(());
    };
    for (i, e) in events.iter().enumerate() {
        for k in ["at_s", "from_s"] {
            if let Some(t) = e.get(k).and_then(serde_json::Value::as_f64)
                && t > end_s
            {
                return Err(scenario.field_error(
                    format!("deployment.events[{i}].{k}"),
                    format!(
                        "value {}: after the run's end ({end_s} s): expected a time within the run",
                        seconds_text(t)
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// A time in seconds as a message shows it: huge values in exponent form.
///
/// # Examples
///
/// ```
/// use ratelab::fleet::seconds_text;
/// assert_eq!(seconds_text(60.0), "60");
/// assert_eq!(seconds_text(1e300), "1e300");
/// ```
pub fn seconds_text(t: f64) -> String {
    if t.abs() >= 1e15 {
        format!("{t:e}")
    } else {
        format!("{t}")
    }
}
