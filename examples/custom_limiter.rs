//! A limiter of your own, measured by ratelab in CI: implement
//! [`ratelab::model::Admit`] (here through [`KeyState`] and [`PerKey`]), run
//! a decision scenario with it beside the built-in candidates and the exact
//! oracles ([`ratelab::lab::decision::run_with`]), and check the report with
//! the same expectations a scenario's `expect` holds ([`ratelab::check`]).
//!
//! ```text
//! cargo run --release --example custom_limiter
//! ```
//!
//! Exits 1 when an expectation fails (so a CI job fails), 2 on a bad
//! scenario. `cargo test` builds and runs it (tests/it/exec_examples.rs).

use ratelab::check::{evaluate, render_table, Spec};
use ratelab::clock::{Nanos, MILLI};
use ratelab::lab::{decision, RunContext};
use ratelab::model::{Decision, KeyState, PerKey};
use ratelab::scenario::Scenario;
use serde_json::json;

const LIMIT: u64 = 10;
const INTERVAL_MS: u64 = 1000;

/// Ours: a fixed window aligned to multiples of the interval, counting
/// admitted requests (exactly the lab's second oracle).
struct AlignedWindow {
    window: u64,
    admitted: u64,
}

impl KeyState for AlignedWindow {
    const STATE_BYTES: u64 = 16;
    fn admit(&mut self, w: u64, now: Nanos) -> ratelab::error::Result<Decision> {
        let window = now / (INTERVAL_MS * MILLI);
        if window != self.window {
            self.window = window;
            self.admitted = 0;
        }
        let ok = self.admitted + w <= LIMIT;
        if ok {
            self.admitted += w;
        }
        Ok(Decision::from_allowed(ok))
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
    let scenario = json!({
        "name": "custom-limiter", "kind": "decision_accuracy", "seed": 7,
        "policy": {"limit": LIMIT, "interval_ms": INTERVAL_MS}, "shapes": [],
        "workload": {"type": "mix", "parts": [
            {"type": "poisson", "keys": {"type": "zipf", "keys": 500, "s": 1.1}, "rate": 800.0, "duration_s": 30.0},
            {"type": "flash_crowd", "keys": {"type": "uniform", "keys": 3}, "rate": 2.0,
             "flash_rate": 60.0, "flash_start_s": 10.0, "flash_duration_s": 5.0, "duration_s": 30.0}]},
        // Only the built-in GCRA beside ours (omit `limiters` for all of them).
        "limiters": [{"model": "gcra"}]
    });
    let s = Scenario::parse(
        std::path::Path::new("custom-limiter.json"),
        &scenario.to_string(),
    )?;
    let ctx = RunContext::for_scenario(&s);
    let ours = decision::Candidate::new(
        "ours",
        Box::new(PerKey::new(|_| {
            Ok(AlignedWindow {
                window: 0,
                admitted: 0,
            })
        })),
    );
    let out = decision::run_with(&s, &ctx, vec![ours])?;
    print!("{}", out.table_md);
    // What CI holds the limiter to, written as a scenario's `expect`.
    let expect = json!({
        "rows[algorithm=ours].vs_fixed_window.false_allow": "== 0",
        "rows[algorithm=ours].vs_fixed_window.false_deny": "== 0",
        // Never denies a client that kept to the policy.
        "rows[algorithm=ours].harm.compliant_denied": "== 0",
        "rows[algorithm=ours].wrong_pct": "< 20",
    });
    let spec = Spec::parse(Some(&expect), None)?;
    let findings = evaluate(&out.json, None, &spec);
    let failed = findings.iter().any(|f| f.verdict.failed());
    let rows: Vec<(String, _)> = findings
        .into_iter()
        .map(|f| ("custom-limiter".to_string(), f))
        .collect();
    print!("{}", render_table(&rows));
    Ok(!failed)
}
