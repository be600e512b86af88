//! `estimator_overflow`: a counter driven past `isize::MAX` under each overflow
//! behaviour (EXPERIMENTS.md A2). Exact: no randomness is involved (one row,
//! one slot, so every key shares the cell).

use super::{report_head, RunContext};
use crate::error::Result;
use crate::model::estimator::{Estimator, EstimatorConfig, FrequencyEstimator, Overflow};
use crate::report::{Output, Table};
use crate::scenario::Scenario;
use serde::Deserialize;
use serde_json::json;

/// Scenario parameters.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Increments applied in order: `[key, value]` pairs.
    pub steps: Vec<(String, i64)>,
    /// Behaviours to compare.
    pub behaviours: Vec<Overflow>,
}

/// How the document names each behaviour.
fn title(o: Overflow) -> (&'static str, &'static str) {
    match o {
        Overflow::Wrapping => (
            "release overflow",
            "0.9.1, and 0.9.0 release builds: wrapping",
        ),
        Overflow::Checked => (
            "debug overflow",
            "0.9.0 debug build: checked `current + value`",
        ),
    }
}

/// Runs an `estimator_overflow` scenario.
pub fn run(scenario: &Scenario, ctx: &RunContext) -> Result<Output> {
    let p: Params = scenario.params()?;
    if p.steps.is_empty() {
        return Err(scenario.field_error(
            "steps",
            "empty: expected at least one [key, value] increment",
        ));
    }
    if p.behaviours.is_empty() {
        return Err(scenario.field_error("behaviours", "empty: expected wrapping and/or checked"));
    }
    let mut console = String::new();
    let mut table = Table::new(["behaviour", "step", "key", "incr", "returned"]);
    let mut rows = Vec::new();
    for &b in &p.behaviours {
        let mut cfg = EstimatorConfig::new(1, 1);
        cfg.overflow = b;
        let mut e = Estimator::new(cfg, ctx.seed);
        let (heading, meaning) = title(b);
        console.push_str(&format!("== {heading}\n"));
        let mut values = Vec::new();
        let mut fault = None;
        for (i, (key, v)) in p.steps.iter().enumerate() {
            match e.incr(key.as_bytes(), *v) {
                Ok(r) => {
                    console.push_str(&format!("{r}\n"));
                    table.push([
                        heading.to_string(),
                        (i + 1).to_string(),
                        key.clone(),
                        v.to_string(),
                        r.to_string(),
                    ]);
                    values.push(r);
                }
                Err(f) => {
                    console.push_str(&format!("panicked at {}:\n{}\n", f.location, f.message));
                    table.push([
                        heading.to_string(),
                        (i + 1).to_string(),
                        key.clone(),
                        v.to_string(),
                        format!("panic: {}", f.message),
                    ]);
                    fault = Some(f);
                    break;
                }
            }
        }
        rows.push(json!({
            "behaviour": b,
            "meaning": meaning,
            "values": values,
            "fault": fault.as_ref().map(|f| json!({"message": f.message, "location": f.location})),
            "cell_after": e.raw_cells().first(),
        }));
    }
    let mut md = format!(
        "# {}\n\n{}\n\n",
        scenario.common.name, scenario.common.description
    );
    md.push_str(&table.markdown());
    md.push_str(&format!("\n```\n{console}```\n"));
    let mut j = report_head(scenario, ctx, None);
    j.insert("rows".into(), serde_json::Value::Array(rows));
    Ok(Output {
        json: serde_json::Value::Object(j),
        table_md: md,
        table_csv: table.csv(),
        charts: vec![],
        console,
        extra_files: vec![],
    })
}
