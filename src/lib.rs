//! ratelab: replay workloads through faithful models of rate limiters and
//! count-min sketches on a virtual clock, and measure how wrong they are.

pub mod algo;
pub mod clock;
pub mod error;
pub mod hash;
pub mod rng;
pub mod scenario;
pub mod workload;
