//! Exact oracles: what a limiter or a window *should* have said.
//!
//! `windows` holds the exact window counts that pingora `Rate` is compared
//! with (same-flip, aligned and sliding); `limiters` the exact admission
//! limiters (sliding log, aligned fixed windows) that the decision lab
//! compares every candidate's decisions with.

pub(crate) mod limiters;
pub(crate) mod windows;

pub use limiters::{AlignedWindowLimiter, SlidingLogLimiter};
pub use windows::{Advance, AlignedWindowOracle, FlipWindowOracle, SlidingLogOracle};
