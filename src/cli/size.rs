//! `ratelab size`: the cheapest count-min shape for a workload and targets
//! (the search and its report are in [`crate::sizing`]).
//!
//! Exit codes: 0 a shape meets every target; 1 none does within the memory
//! cap (the best shape found is printed and `size.json` is still written,
//! with `"recommendation": null`); 2 bad input (unparsable target, empty
//! trace, zero keys, ...).

use super::init_threads;
use crate::error::{Error, Result};
pub use crate::sizing::command::{compute, SizeArgs};

/// `ratelab size`.
pub fn run(a: &SizeArgs) -> Result<i32> {
    init_threads(a.threads)?;
    let report = compute(a)?;
    report.write(&a.out)?;
    out!("{}", report.console);
    outln!("-> {}", a.out.display());
    match report.failure {
        Some(msg) if !report.met => Err(Error::check(msg)),
        _ => Ok(0),
    }
}
