//! `estimator_overflow`: a count-min counter driven past `isize::MAX` under
//! each overflow behaviour. Exact: no randomness is involved (one row, one
//! slot, so every key shares the cell).

use super::experiment::Experiment;
use super::RunContext;
use crate::error::Result;
use crate::model::estimator::{Estimator, EstimatorConfig, Fault, FrequencyEstimator, Overflow};
use crate::report::{Output, ReportBuilder, Table};
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

/// The heading and meaning of each behaviour in the report.
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

/// The steps replayed under one behaviour.
#[derive(Debug, Clone)]
pub struct BehaviourRun {
    /// The behaviour.
    pub behaviour: Overflow,
    /// What each increment returned, up to the panic if there was one.
    pub returned: Vec<i64>,
    /// The panic that stopped the steps, if any.
    pub fault: Option<Fault>,
    /// The counter after the last step.
    pub cell_after: Option<i64>,
}

/// The `estimator_overflow` kind.
pub struct EstimatorOverflow;

impl Experiment for EstimatorOverflow {
    type Params = Params;
    type Plan = Params;
    type Outcome = Vec<BehaviourRun>;

    fn validate(scenario: &Scenario, p: Params, _: &RunContext) -> Result<Params> {
        if p.steps.is_empty() {
            return Err(scenario.field_error(
                "steps",
                "empty: expected at least one [key, value] increment",
            ));
        }
        if p.behaviours.is_empty() {
            return Err(
                scenario.field_error("behaviours", "empty: expected wrapping and/or checked")
            );
        }
        Ok(p)
    }

    fn run(_: &Scenario, p: &Params, ctx: &RunContext) -> Result<Vec<BehaviourRun>> {
        Ok(p.behaviours
            .iter()
            .map(|&behaviour| {
                let mut cfg = EstimatorConfig::new(1, 1);
                cfg.overflow = behaviour;
                let mut e = Estimator::new(cfg, ctx.seed);
                let mut returned = Vec::new();
                let mut fault = None;
                for (key, v) in &p.steps {
                    match e.incr(key.as_bytes(), *v) {
                        Ok(r) => returned.push(r),
                        Err(f) => {
                            fault = Some(f);
                            break;
                        }
                    }
                }
                BehaviourRun {
                    behaviour,
                    returned,
                    fault,
                    cell_after: e.raw_cells().first().copied(),
                }
            })
            .collect())
    }

    fn render(
        scenario: &Scenario,
        p: &Params,
        ctx: &RunContext,
        runs: Vec<BehaviourRun>,
    ) -> Result<Output> {
        let mut console = String::new();
        let mut table = Table::new(["behaviour", "step", "key", "incr", "returned"]);
        let mut rows = Vec::new();
        for b in &runs {
            let (heading, meaning) = title(b.behaviour);
            console.push_str(&format!("== {heading}\n"));
            let fault = b.fault.iter().map(|f| format!("panic: {}", f.message));
            let results = b.returned.iter().map(i64::to_string).chain(fault);
            for (i, ((key, v), result)) in p.steps.iter().zip(results).enumerate() {
                table.push([
                    heading.to_string(),
                    (i + 1).to_string(),
                    key.clone(),
                    v.to_string(),
                    result,
                ]);
            }
            for r in &b.returned {
                console.push_str(&format!("{r}\n"));
            }
            if let Some(f) = &b.fault {
                console.push_str(&format!("panicked at {}:\n{}\n", f.location, f.message));
            }
            rows.push(json!({
                "behaviour": b.behaviour,
                "meaning": meaning,
                "values": b.returned,
                "fault": b.fault.as_ref().map(|f| json!({"message": f.message, "location": f.location})),
                "cell_after": b.cell_after,
            }));
        }
        let mut report = ReportBuilder::new(scenario, ctx.seed, None);
        report
            .md(&table.markdown())
            .md(&format!("\n```\n{console}```\n"))
            .csv(&table)
            .console(&console)
            .field("rows", rows);
        Ok(report.finish())
    }
}
