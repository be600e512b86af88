//! The scenario parameters of `estimator_accuracy` and their validation.

use crate::error::Result;
use crate::hash::HasherKind;
use crate::model::estimator::{EstimatorConfig, Overflow, Variant};
use crate::report::fmt::bytes_human;
use crate::scenario::Scenario;
use crate::workload::CountWorkload;
use serde::Deserialize;

/// Scenario parameters of `estimator_accuracy`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// The workload.
    pub workload: CountWorkload,
    /// Explicit shapes, in table order.
    #[serde(default)]
    pub configs: Vec<Shape>,
    /// A grid of shapes (every hashes × every slots), after `configs`.
    #[serde(default)]
    pub grid: Option<Grid>,
    /// Update rules to compare (default: pingora's count-min only).
    #[serde(default = "default_variants")]
    pub variants: Vec<Variant>,
    /// Hash family of the rows.
    #[serde(default)]
    pub hasher: HasherKind,
    /// Overflow behaviour.
    #[serde(default)]
    pub overflow: Overflow,
    /// Which implementations to measure (default: the model only). Rows of
    /// `pingora_limits` use the real crate, whose hashers are seeded from
    /// the OS at random: they are statistical, not reproducible, so a
    /// scenario that asks for them is outside the byte-identical guarantee
    /// (give those rows an `ignore` tolerance for `ratelab check`).
    #[serde(default = "default_backends")]
    pub backends: Vec<Backend>,
    /// Sketches of your own, each a child process speaking the estimator
    /// role of `docs/book/src/protocol.md`: `{"model": "exec", "command": [...],
    /// "name": "ours"}` (checked by `super::exec::entries`). Each gets
    /// every shape and run of the sweep, after the backends' rows.
    #[serde(default)]
    pub estimators: Vec<serde_json::Map<String, serde_json::Value>>,
}

/// An implementation of the count-min sketch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Backend {
    /// ratelab's model (seeded, deterministic).
    #[default]
    Model,
    /// The real `pingora_limits::estimator::Estimator` (random hashers).
    PingoraLimits,
    /// A sketch of your own in a child process (an `estimators` entry; not
    /// a `backends` value).
    #[serde(skip)]
    Exec,
}

impl Backend {
    /// Name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Model => "model",
            Backend::PingoraLimits => "pingora_limits",
            Backend::Exec => "exec",
        }
    }
}

/// Serde default: the model only.
fn default_backends() -> Vec<Backend> {
    vec![Backend::Model]
}

/// Serde default: pingora's count-min only.
fn default_variants() -> Vec<Variant> {
    vec![Variant::CountMin]
}

/// One sketch shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Shape {
    /// Rows.
    pub hashes: u64,
    /// Counters per row.
    pub slots: u64,
}

/// Every combination of the listed hashes and slots.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Grid {
    /// Row counts.
    pub hashes: Vec<u64>,
    /// Slot counts.
    pub slots: Vec<u64>,
}

/// Most rows a sketch may have.
pub const MAX_HASHES: u64 = 64;

/// Validates a shape against the memory cap; `field` names it in errors.
pub fn validate_shape(
    scenario: &Scenario,
    field: &str,
    shape: Shape,
    max_memory: u64,
) -> Result<EstimatorConfig> {
    if shape.hashes == 0 || shape.hashes > MAX_HASHES {
        return Err(scenario.field_error(
            format!("{field}.hashes"),
            format!("value {}: expected 1..={MAX_HASHES}", shape.hashes),
        ));
    }
    if shape.slots == 0 {
        return Err(scenario.field_error(
            format!("{field}.slots"),
            "value 0: expected at least 1 slot",
        ));
    }
    let memory = shape.hashes.saturating_mul(shape.slots).saturating_mul(8);
    if memory > max_memory {
        return Err(scenario.field_error(
            field,
            format!(
                "{}x{} needs {} of counters, over the memory cap of {} (raise it with --max-memory)",
                shape.hashes,
                shape.slots,
                bytes_human(memory),
                bytes_human(max_memory)
            ),
        ));
    }
    if shape.hashes.saturating_mul(shape.slots) > u64::from(u32::MAX) {
        return Err(scenario.field_error(
            field,
            format!(
                "{}x{} has more than 2^32 counters",
                shape.hashes, shape.slots
            ),
        ));
    }
    Ok(EstimatorConfig::new(
        shape.hashes as usize,
        shape.slots as usize,
    ))
}

/// The scenario's shapes × variants, validated, in table order.
pub fn configs(scenario: &Scenario, p: &Params, max_memory: u64) -> Result<Vec<EstimatorConfig>> {
    let mut shapes: Vec<(String, Shape)> = p
        .configs
        .iter()
        .enumerate()
        .map(|(i, s)| (format!("configs[{i}]"), *s))
        .collect();
    if let Some(g) = &p.grid {
        for &hashes in &g.hashes {
            for &slots in &g.slots {
                shapes.push(("grid".to_string(), Shape { hashes, slots }));
            }
        }
    }
    if shapes.is_empty() {
        return Err(scenario.field_error("configs", "no sketch shapes: give `configs` or `grid`"));
    }
    if p.variants.is_empty() {
        return Err(scenario.field_error(
            "variants",
            "empty: expected at least one of count_min, conservative",
        ));
    }
    let mut out = Vec::new();
    for variant in &p.variants {
        for (field, shape) in &shapes {
            let mut c = validate_shape(scenario, field, *shape, max_memory)?;
            c.variant = *variant;
            c.hasher = p.hasher;
            c.overflow = p.overflow;
            out.push(c);
        }
    }
    Ok(out)
}
