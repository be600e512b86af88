//! ratelab: replay workloads through faithful models of rate limiters and
//! count-min sketches on a virtual clock, and measure how wrong they are.
//!
//! # Quick start
//!
//! A scenario is the same JSON as a file in `scenarios/`; run it and read
//! its report. Here two limiters on Zipf traffic against the exact policy
//! of 10 requests per key per second:
//!
//! ```
//! use ratelab::lab::{self, RunContext};
//! use ratelab::scenario::Scenario;
//!
//! let text = r#"{
//!     "name": "quick-start",
//!     "kind": "decision_accuracy",
//!     "policy": {"limit": 10, "interval_ms": 1000},
//!     "shapes": [],
//!     "workload": {"type": "poisson", "keys": {"type": "zipf", "keys": 100, "s": 1.1},
//!                  "rate": 500.0, "duration_s": 10.0},
//!     "limiters": [{"model": "gcra"}, {"model": "sliding_window_counter"}]
//! }"#;
//! let scenario = Scenario::parse(std::path::Path::new("quick-start.json"), text)?;
//! let out = ratelab::kinds::run(&scenario, &RunContext::for_scenario(&scenario))?;
//! let rows = out.json["rows"].as_array().unwrap();
//! let oracle = &rows[0];
//! assert_eq!(oracle["algorithm"], "exact sliding log (oracle)");
//! assert_eq!(oracle["harm"]["compliant_denied"], 0, "the oracle is the policy");
//! for row in rows {
//!     println!(
//!         "{}: {} compliant requests denied, {}% excess admitted",
//!         row["algorithm"], row["harm"]["compliant_denied"], row["harm"]["limited_excess_pct"]
//!     );
//! }
//! # Ok::<(), ratelab::error::Error>(())
//! ```
//!
//! A model can also be driven call by call, with virtual time handed in:
//!
//! ```
//! use ratelab::model::estimator::{Estimator, EstimatorConfig, FrequencyEstimator};
//!
//! let mut sketch = Estimator::new(EstimatorConfig::new(4, 1024), 1);
//! sketch.incr(b"alice", 3).unwrap();
//! assert!(sketch.get(b"alice") >= 3, "count-min never undercounts");
//! ```
//!
//! Where to go next: [`lab`] (one experiment per scenario kind, the
//! [`kinds::KINDS`] registry), [`model`] (the models and the limiter seam
//! [`model::Admit`]; a limiter of your own runs through
//! [`lab::decision::run_with`]), [`check`] (baselines and expectations),
//! [`sizing`] (`ratelab size`). The user guide is `docs/book/` in the
//! repository.

#![warn(missing_docs)]

pub mod check;
mod cli;
pub mod clock;
pub mod error;
pub mod fleet;
pub mod hash;
pub mod kinds;
pub mod lab;
pub mod metrics;
pub mod model;
pub mod oracle;
pub(crate) mod prefetch;
pub(crate) mod progress;
pub mod recommend;
pub(crate) mod replay;
pub mod report;
pub mod rng;
pub mod scenario;
pub mod sim;
pub mod sizing;
pub mod strict_json;
pub(crate) mod units;
pub mod workload;

pub use cli::main_with_args;
