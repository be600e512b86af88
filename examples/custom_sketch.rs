//! A frequency estimator of your own, measured by ratelab in CI: implement
//! [`ratelab::model::estimator::FrequencyEstimator`], replay an
//! `estimator_accuracy` scenario's workload through it on the same streams
//! as the model's rows
//! ([`ratelab::lab::estimator_accuracy::run_with_estimator`]), and check the
//! figures with a scenario's `expect` syntax ([`ratelab::check`]).
//!
//! ```text
//! cargo run --release --example custom_sketch
//! ```
//!
//! Exits 1 when an expectation fails, 2 on a bad scenario. `cargo test`
//! builds and runs it (tests/it/exec_examples.rs).

use ratelab::check::{evaluate, render_table, Spec};
use ratelab::lab::estimator_accuracy::{run_with_estimator, CellOutcome};
use ratelab::lab::RunContext;
use ratelab::model::estimator::{Fault, FrequencyEstimator};
use ratelab::scenario::Scenario;
use serde_json::json;

/// Ours: a count-min sketch with conservative update (a row is raised only
/// up to the new minimum) and FNV-1a hashing, seeded per row.
struct Conservative {
    rows: usize,
    slots: usize,
    seeds: Vec<u64>,
    cells: Vec<i64>,
}

impl Conservative {
    fn new(rows: usize, slots: usize, seed: u64) -> Self {
        let seeds = (0..rows as u64)
            .map(|r| seed ^ (r + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15))
            .collect();
        Self {
            rows,
            slots,
            seeds,
            cells: vec![0; rows * slots],
        }
    }

    fn cell(&self, row: usize, key: &[u8]) -> usize {
        let mut h = 0xcbf2_9ce4_8422_2325u64 ^ self.seeds[row];
        for &b in key {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        h ^= h >> 29;
        row * self.slots + (h % self.slots as u64) as usize
    }
}

impl FrequencyEstimator for Conservative {
    fn incr(&mut self, key: &[u8], value: i64) -> Result<i64, Fault> {
        let idx: Vec<usize> = (0..self.rows).map(|r| self.cell(r, key)).collect();
        let target = idx.iter().map(|&i| self.cells[i]).min().unwrap_or(0) + value;
        for &i in &idx {
            self.cells[i] = self.cells[i].max(target);
        }
        Ok(target)
    }
    fn decr(&mut self, key: &[u8], value: i64) {
        for r in 0..self.rows {
            let i = self.cell(r, key);
            self.cells[i] -= value;
        }
    }
    fn get(&self, key: &[u8]) -> i64 {
        (0..self.rows)
            .map(|r| self.cells[self.cell(r, key)])
            .min()
            .unwrap_or(0)
    }
    fn reset(&mut self) {
        self.cells.iter_mut().for_each(|c| *c = 0);
    }
    fn memory_bytes(&self) -> u64 {
        (self.cells.len() * 8) as u64
    }
}

fn main() -> std::process::ExitCode {
    match run() {
        Ok(true) => std::process::ExitCode::SUCCESS,
        Ok(false) => std::process::ExitCode::from(1),
        Err(e) => {
            eprintln!("error: {}", e.message());
            std::process::ExitCode::from(2)
        }
    }
}

fn run() -> ratelab::error::Result<bool> {
    let (hashes, slots) = (4, 1024);
    let scenario = json!({
        "name": "custom-sketch", "kind": "estimator_accuracy", "seed": 1, "runs": 2,
        "workload": {"type": "harmonic", "keys": 2000, "top": 20000, "min": 10},
        "configs": [{"hashes": hashes, "slots": slots}]
    });
    let s = Scenario::parse(
        std::path::Path::new("custom-sketch.json"),
        &scenario.to_string(),
    )?;
    let ctx = RunContext::for_scenario(&s);
    // pingora's model on the same shape, as the lab reports it.
    let lab = ratelab::kinds::run(&s, &ctx)?;
    let ours: Vec<CellOutcome> = run_with_estimator(&s, &ctx, slots, &|seed| {
        Ok(Box::new(Conservative::new(hashes, slots, seed)))
    })?;
    let n = ours.len() as f64;
    let mean = |f: &dyn Fn(&CellOutcome) -> f64| ours.iter().map(f).sum::<f64>() / n;
    let report = json!({
        "model": lab.json["rows"][0].clone(),
        "ours": {
            "exact_pct": mean(&|o| o.stats.exact_pct),
            "mean": mean(&|o| o.stats.mean),
            // The smallest error over runs: a count-min never undercounts.
            "min_error": ours.iter().map(|o| o.quantiles[0]).fold(f64::INFINITY, f64::min),
        }
    });
    println!(
        "{}",
        serde_json::to_string_pretty(&report).unwrap_or_default()
    );
    let expect = json!({
        "ours.min_error": ">= 0",
        "ours.exact_pct": ">= 50",
    });
    let spec = Spec::parse(Some(&expect), None)?;
    let findings = evaluate(&report, None, &spec);
    let mut failed = findings.iter().any(|f| f.verdict.failed());
    // Conservative update never overcounts more than the standard update.
    let model_mean = report["model"]["mean"].as_f64().unwrap_or(0.0);
    if report["ours"]["mean"].as_f64().unwrap_or(f64::MAX) > model_mean {
        println!("ours overcounts more than pingora's count-min ({model_mean})");
        failed = true;
    }
    let rows: Vec<(String, _)> = findings
        .into_iter()
        .map(|f| ("custom-sketch".to_string(), f))
        .collect();
    print!("{}", render_table(&rows));
    Ok(!failed)
}
