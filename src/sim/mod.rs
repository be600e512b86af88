//! Simulation engines on the virtual clock.
//!
//! * [`des`]: a discrete-event engine for blocking limiters: agents that call
//!   a limiter, sleep until it lets them go, and continue.
//! * [`race`]: the concurrency explorer that interleaves the real steps of
//!   pingora's `Rate::maybe_reset` across virtual threads.

pub mod des;
pub mod race;
