//! The `deployment` field of a decision scenario: a serde type read with
//! the scenario (`deny_unknown_fields` everywhere, numbers typed, lists
//! that may be written as one value), then [`Deployment::check`]ed into
//! what the fleets are built from: the replica counts, the balancers, the
//! network and the events, each refusal one line naming the field and the
//! value. The `strategies` entries stay JSON objects: they are parameter
//! grids, expanded by the runner that owns the parameter tables (see the
//! module docs of [`crate::fleet`]).
//!
//! Objects are flat (a `type` and every setting optional) rather than
//! tagged enums, so a wrong value's path reaches the setting itself
//! (`deployment.balancer[1].table_size`), and the settings a type does not
//! take are refused by name.

use super::balancer::BalancerKind;
use super::events::{self, EventEntry};
use super::network::{self, Network, NetworkEntry, NetworkSpec};
pub use super::one_or_many::OneOrMany;
use super::run::Event;
use super::strategy::Env;
use crate::clock::{Nanos, MILLI, SECOND};
use crate::error::Result;
use crate::rng::{derive_seed, sim_rng};
use crate::scenario::Scenario;
use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;
use serde_json::{Map, Value};

/// Most replicas in one fleet.
pub const MAX_REPLICAS: u64 = 4096;

pub(crate) use crate::error::FieldError;

pub(crate) fn err(field: impl Into<String>, msg: impl Into<String>) -> FieldError {
    FieldError {
        field: field.into(),
        message: msg.into(),
    }
}

/// A balancer entry: a name, or an object with `type` and its settings.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BalancerEntry {
    /// `round_robin`, `random`, `least_request`, `ring_hash`, `maglev`,
    /// `sticky` or `from_trace`.
    pub ty: String,
    /// The object's settings (all default when written as a name).
    pub settings: BalancerSettings,
}

/// A balancer's settings; which ones a type takes is checked per type.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BalancerSettings {
    #[serde(rename = "type")]
    ty: Option<String>,
    weights: Option<Vec<f64>>,
    skew: Option<f64>,
    choice_count: Option<u64>,
    service_ms: Option<f64>,
    min_ring_size: Option<u64>,
    max_ring_size: Option<u64>,
    table_size: Option<u64>,
    mean_connection_s: Option<f64>,
    field: Option<String>,
}

impl BalancerSettings {
    /// The names of the settings given (`type` included), in field order.
    fn given(&self) -> Vec<&'static str> {
        let mut v = vec!["type"];
        let pairs = [
            ("weights", self.weights.is_some()),
            ("skew", self.skew.is_some()),
            ("choice_count", self.choice_count.is_some()),
            ("service_ms", self.service_ms.is_some()),
            ("min_ring_size", self.min_ring_size.is_some()),
            ("max_ring_size", self.max_ring_size.is_some()),
            ("table_size", self.table_size.is_some()),
            ("mean_connection_s", self.mean_connection_s.is_some()),
            ("field", self.field.is_some()),
        ];
        v.extend(pairs.iter().filter(|p| p.1).map(|p| p.0));
        v
    }
}

impl<'de> Deserialize<'de> for BalancerEntry {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = BalancerEntry;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a balancer name or an object with \"type\"")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<BalancerEntry, E> {
                Ok(BalancerEntry {
                    ty: v.to_string(),
                    settings: BalancerSettings::default(),
                })
            }
            fn visit_map<A: de::MapAccess<'de>>(
                self,
                a: A,
            ) -> std::result::Result<BalancerEntry, A::Error> {
                let settings =
                    BalancerSettings::deserialize(de::value::MapAccessDeserializer::new(a))?;
                let ty = settings.ty.clone().ok_or_else(|| {
                    de::Error::custom(format!(
                        "missing \"type\": expected one of {BALANCER_TYPES}"
                    ))
                })?;
                Ok(BalancerEntry { ty, settings })
            }
        }
        d.deserialize_any(V)
    }
}

const BALANCER_TYPES: &str =
    "round_robin, random, least_request, ring_hash, maglev, sticky, from_trace";

/// The `deployment` field as written.
///
/// # Examples
///
/// ```
/// use ratelab::fleet::Deployment;
/// let s = ratelab::scenario::Scenario::parse(std::path::Path::new("f.json"),
///     r#"{"name": "f", "kind": "decision_accuracy", "seed": 1}"#).unwrap();
/// let d: Deployment = serde_json::from_str(r#"{"replicas": [2, 4], "balancer": "maglev",
///     "strategies": [{"strategy": "central"}],
///     "events": [{"at_s": 10, "scale_to": 8}]}"#).unwrap();
/// let c = d.check(&s).unwrap();
/// assert_eq!(c.replicas, vec![2, 4]);
/// assert_eq!(c.balancers[0].label, "maglev");
/// assert_eq!(c.peak_scale(), 8);
/// let bad: Deployment = serde_json::from_str(
///     r#"{"replicas": 0, "strategies": [{"strategy": "central"}]}"#).unwrap();
/// let e = bad.check(&s).unwrap_err().to_string();
/// assert!(e.contains("deployment.replicas") && e.contains("value 0"), "{e}");
/// assert!(serde_json::from_str::<Deployment>(r#"{"replicas": 1, "strategies": [], "x": 1}"#).is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Deployment {
    /// Replica counts (a grid axis).
    pub replicas: OneOrMany<u64>,
    /// Balancers (a grid axis; default round robin).
    #[serde(default)]
    pub balancer: Option<OneOrMany<BalancerEntry>>,
    /// The strategy entries, parameter grids the runner expands.
    pub strategies: Vec<Map<String, Value>>,
    /// The network.
    #[serde(default)]
    pub network: Option<NetworkEntry>,
    /// Events every fleet goes through.
    #[serde(default)]
    pub events: Vec<EventEntry>,
}

/// One balancer of the grid, checked.
#[derive(Debug, Clone)]
pub struct BalancerSpec {
    /// Which balancer, with its settings.
    pub kind: BalancerKind,
    /// Its type as written (`round_robin`, `maglev`, ...).
    pub ty: String,
    /// Explicit weights, one a replica (or from `skew`); empty: even.
    pub weights: Vec<f64>,
    /// Its label in the fleet's name.
    pub label: String,
    /// The skew s (replica i weighs 1 / (i + 1)^s), when given.
    pub skew: Option<f64>,
}

/// A deployment checked: the grid's axes and what every fleet shares.
#[derive(Debug, Clone)]
pub struct Checked {
    /// Replica counts.
    pub replicas: Vec<usize>,
    /// Balancers.
    pub balancers: Vec<BalancerSpec>,
    /// Whether `balancer` was written as a list (for error fields).
    balancer_list: bool,
    /// The events, in the order written (a fleet sorts them).
    pub events: Vec<Event>,
    /// The network.
    pub network: NetworkSpec,
}

pub(crate) fn range(field: &str, v: f64, lo: f64, hi: f64) -> std::result::Result<f64, FieldError> {
    if v.is_finite() && v >= lo && v <= hi {
        Ok(v)
    } else {
        Err(err(
            field,
            format!(
                "value {}: expected a number in {lo}..={hi}",
                crate::units::shown(v)
            ),
        ))
    }
}

fn urange(field: &str, v: u64, lo: u64, hi: u64) -> std::result::Result<u64, FieldError> {
    if (lo..=hi).contains(&v) {
        Ok(v)
    } else {
        Err(err(
            field,
            format!("value {v}: expected a number in {lo}..={hi}"),
        ))
    }
}

impl Deployment {
    /// Checks every setting but the strategies'; errors name
    /// `deployment.<field>` and the value.
    pub fn check(&self, scenario: &Scenario) -> Result<Checked> {
        let fe = |e: FieldError| scenario.field_error(e.field, e.message);
        let mut replicas = Vec::new();
        for (i, &n) in self.replicas.as_slice().iter().enumerate() {
            if !(1..=MAX_REPLICAS).contains(&n) {
                return Err(scenario.field_error(
                    self.replicas.field("deployment.replicas", i),
                    format!("value {n}: expected a whole number in 1..={MAX_REPLICAS}"),
                ));
            }
            replicas.push(n as usize);
        }
        let balancers = match &self.balancer {
            None => vec![BalancerSpec {
                kind: BalancerKind::RoundRobin,
                ty: "round_robin".to_string(),
                weights: Vec::new(),
                label: "round_robin".to_string(),
                skew: None,
            }],
            Some(b) => b
                .as_slice()
                .iter()
                .enumerate()
                .map(|(i, e)| balancer(e, &b.field("deployment.balancer", i)))
                .collect::<std::result::Result<_, _>>()
                .map_err(fe)?,
        };
        let max_r = replicas.iter().copied().max().unwrap_or(1) as u64;
        let most = max_r.max(events::scale_max(&self.events)).min(MAX_REPLICAS);
        let events = events::check(&self.events, most).map_err(fe)?;
        events::check_timeline(&self.events, &replicas).map_err(fe)?;
        let network = network::check(self.network.as_ref(), scenario, most).map_err(fe)?;
        if self.strategies.is_empty() {
            return Err(scenario.field_error(
                "deployment.strategies",
                "empty: expected a list of {\"strategy\": ...} entries",
            ));
        }
        Ok(Checked {
            replicas,
            balancers,
            balancer_list: self.balancer.as_ref().is_some_and(OneOrMany::is_list),
            events,
            network,
        })
    }
}

impl Checked {
    /// The most replicas a `scale_to` event asks for (0 when none).
    pub fn peak_scale(&self) -> usize {
        self.events
            .iter()
            .filter_map(|e| match e.kind {
                super::run::EventKind::ScaleTo(m) => Some(m),
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

/// A balancer entry checked: its kind, weights and label.
fn balancer(e: &BalancerEntry, field: &str) -> std::result::Result<BalancerSpec, FieldError> {
    let ty = e.ty.as_str();
    let o = &e.settings;
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
                format!("value {other:?}: expected one of {BALANCER_TYPES}"),
            ))
        }
    };
    if let Some(k) = o.given().into_iter().find(|k| !allowed.contains(k)) {
        return Err(err(
            format!("{field}.{k}"),
            format!("unknown for {ty}: expected one of {}", allowed.join(", ")),
        ));
    }
    let f = |k: &str| format!("{field}.{k}");
    let mut weights = Vec::new();
    let mut label = ty.to_string();
    if let Some(w) = &o.weights {
        if w.is_empty() {
            return Err(err(
                f("weights"),
                "value []: expected a list of positive numbers, one per replica",
            ));
        }
        for (i, &x) in w.iter().enumerate() {
            // 1e-6..=1e6: a weight is relative to the others, and a ratio
            // beyond 1e12 is a replica that never serves, not a weight.
            if !(x.is_finite() && (1e-6..=1e6).contains(&x)) {
                return Err(err(
                    format!("{field}.weights[{i}]"),
                    format!(
                        "value {}: expected a number in 1e-6..=1e6",
                        crate::units::shown(x)
                    ),
                ));
            }
            weights.push(x);
        }
        label = format!("{ty} weighted");
    }
    let skew = o
        .skew
        .map(|s| range(&f("skew"), s, 0.0, 10.0))
        .transpose()?;
    if let Some(s) = skew {
        if !weights.is_empty() {
            return Err(err(f("skew"), "give weights or skew, not both"));
        }
        // Replica i weighs 1 / (i + 1)^skew.
        weights = (0..MAX_REPLICAS as usize)
            .map(|i| 1.0 / libm::pow(i as f64 + 1.0, s))
            .collect();
        label = format!("{ty} skew={s}");
    }
    let kind = match ty {
        "round_robin" => BalancerKind::RoundRobin,
        "random" => BalancerKind::Random,
        "least_request" => {
            // Envoy's `LeastRequestLbConfig.choice_count` is validated
            // `uint32 = {gte: 2}` (cluster.proto): one draw is random.
            let c = urange(&f("choice_count"), o.choice_count.unwrap_or(2), 2, 100)?;
            let s = range(&f("service_ms"), o.service_ms.unwrap_or(10.0), 0.0, 3.6e6)?;
            BalancerKind::LeastRequest {
                choice_count: c as u32,
                service: (s * MILLI as f64).round() as Nanos,
            }
        }
        "ring_hash" => {
            let lo = urange(
                &f("min_ring_size"),
                o.min_ring_size.unwrap_or(1024),
                1,
                8_388_608,
            )?;
            let hi = urange(
                &f("max_ring_size"),
                o.max_ring_size.unwrap_or(8_388_608),
                1,
                8_388_608,
            )?;
            if lo > hi {
                return Err(err(field, format!("min_ring_size {lo} / max_ring_size {hi}: expected whole numbers, min <= max (Envoy refuses it)")));
            }
            BalancerKind::RingHash {
                min_ring_size: lo,
                max_ring_size: hi,
            }
        }
        "maglev" => {
            let m = urange(
                &f("table_size"),
                o.table_size.unwrap_or(65537),
                3,
                5_000_011,
            )?;
            if !is_prime(m) {
                return Err(err(
                    f("table_size"),
                    format!("value {m}: expected a prime (Envoy refuses others)"),
                ));
            }
            if m != 65537 {
                label = format!("maglev table_size={m}");
            }
            BalancerKind::Maglev { table_size: m }
        }
        "from_trace" => {
            let name = match &o.field {
                None => String::new(),
                Some(x) if !x.trim().is_empty() => x.clone(),
                Some(x) => {
                    return Err(err(
                        f("field"),
                        format!(
                            "value {x:?}: expected the name of the trace's replica column or field"
                        ),
                    ))
                }
            };
            BalancerKind::FromTrace { field: name }
        }
        _ => {
            let s = range(
                &f("mean_connection_s"),
                o.mean_connection_s.unwrap_or(10.0),
                0.000_001,
                1e7,
            )?;
            label = format!("sticky {s} s");
            BalancerKind::Sticky {
                mean_connection: (s * SECOND as f64).round() as Nanos,
            }
        }
    };
    Ok(BalancerSpec {
        kind,
        ty: ty.to_string(),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Top {
        deployment: Deployment,
    }

    /// The error a deployment gives, read as a scenario's field is (the
    /// serde type with its path) and then checked.
    fn error(dep: &str) -> String {
        let path = std::path::Path::new("bad.json");
        let v: Value = serde_json::from_str(&format!("{{\"deployment\": {dep}}}")).unwrap();
        let s = Scenario::parse(
            path,
            r#"{"name": "b", "kind": "decision_accuracy", "seed": 1}"#,
        )
        .unwrap();
        let e = match crate::scenario::from_value::<Top>(path, v) {
            Err(e) => e,
            Ok(t) => t.deployment.check(&s).unwrap_err(),
        };
        assert_eq!(e.exit_code(), 2);
        let m = e.to_string();
        assert!(!m.contains('\n'), "{m}");
        m
    }

    #[test]
    fn bad_input_names_the_field_and_the_value() {
        let s = r#""strategies": [{"strategy": "central"}]"#;
        let cases = [
            (
                format!(r#"{{"replicas": "x", {s}}}"#),
                "deployment.replicas",
                "\"x\"",
            ),
            (
                format!(r#"{{"replicas": [2, 0], {s}}}"#),
                "deployment.replicas[1]",
                "value 0",
            ),
            (
                format!(r#"{{"replicas": [], {s}}}"#),
                "deployment.replicas",
                "empty list",
            ),
            (
                format!(r#"{{"replicas": 2, "replica": 3, {s}}}"#),
                "deployment.replica",
                "unknown field",
            ),
            (
                format!(
                    r#"{{"replicas": 2, "balancer": ["random", {{"type": "maglev", "table_size": "big"}}], {s}}}"#
                ),
                "deployment.balancer[1].table_size",
                "\"big\"",
            ),
            (
                format!(
                    r#"{{"replicas": 2, "balancer": {{"type": "maglev", "weights": [1, 2]}}, {s}}}"#
                ),
                "deployment.balancer.weights",
                "unknown for maglev",
            ),
            (
                format!(
                    r#"{{"replicas": 2, "balancer": {{"type": "least_request", "choice_count": 2.5}}, {s}}}"#
                ),
                "deployment.balancer.choice_count",
                "2.5",
            ),
            (
                format!(r#"{{"replicas": 2, "balancer": "roundrobin", {s}}}"#),
                "deployment.balancer.type",
                "\"roundrobin\"",
            ),
            (
                format!(r#"{{"replicas": 2, "events": [{{"at_s": 1, "scale_to": 9000}}], {s}}}"#),
                "deployment.events[0].scale_to",
                "value 9000",
            ),
            (
                format!(
                    r#"{{"replicas": 2, "events": [{{"from_s": 1, "to_s": 2, "down": "db"}}], {s}}}"#
                ),
                "deployment.events[0].down",
                "\"db\"",
            ),
            (
                format!(
                    r#"{{"replicas": 2, "events": [{{"from_s": 1, "to_s": 2, "down": 5}}], {s}}}"#
                ),
                "deployment.events[0].down",
                "value 5",
            ),
            (
                format!(r#"{{"replicas": 2, "network": {{"loss": 2}}, {s}}}"#),
                "deployment.network.loss",
                "value 2",
            ),
            (
                format!(
                    r#"{{"replicas": 2, "network": {{"latency": {{"type": "fixed", "median_ms": 2}}}}, {s}}}"#
                ),
                "deployment.network.latency.median_ms",
                "unknown for fixed",
            ),
            (
                r#"{"replicas": 2, "strategies": []}"#.to_string(),
                "deployment.strategies",
                "empty",
            ),
        ];
        for (dep, field, value) in cases {
            let m = error(&dep);
            assert!(m.contains(&format!("field {field}:")), "{dep}: {m}");
            assert!(m.contains(value), "{dep}: {m}");
        }
    }

    #[test]
    fn one_value_and_a_list_check_alike() {
        let path = std::path::Path::new("ok.json");
        let s = Scenario::parse(
            path,
            r#"{"name": "b", "kind": "decision_accuracy", "seed": 1}"#,
        )
        .unwrap();
        let one: Deployment = serde_json::from_str(
            r#"{"replicas": 3, "balancer": {"type": "sticky", "mean_connection_s": 2},
                "strategies": [{"strategy": "central"}],
                "events": [{"from_s": 1, "to_s": 2, "down": 2}]}"#,
        )
        .unwrap();
        let c = one.check(&s).unwrap();
        assert_eq!(c.replicas, vec![3]);
        assert_eq!(c.balancers[0].label, "sticky 2 s");
        assert_eq!(c.events.len(), 2);
        let many: Deployment = serde_json::from_str(
            r#"{"replicas": [3], "balancer": [{"type": "sticky", "mean_connection_s": 2}],
                "strategies": [{"strategy": "central"}]}"#,
        )
        .unwrap();
        assert_eq!(many.check(&s).unwrap().balancers[0].label, "sticky 2 s");
    }
}
