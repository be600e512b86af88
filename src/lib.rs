//! ratelab: replay workloads through faithful models of rate limiters and
//! count-min sketches on a virtual clock, and measure how wrong they are.

#![warn(missing_docs)]

pub mod check;
pub mod cli;
pub mod clock;
pub mod error;
pub mod hash;
pub mod lab;
pub mod metrics;
pub mod model;
pub mod oracle;
pub mod progress;
pub mod replay;
pub mod report;
pub mod rng;
pub mod scenario;
pub mod sim;
pub mod sizing;
pub mod strict_json;
pub mod workload;
