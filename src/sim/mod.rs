//! Simulation engines on the virtual clock.
//!
//! Both engines make concurrency deterministic, so a report is a pure
//! function of its scenario: the discrete-event engine fixes one order for
//! simultaneous callers and says which; the race explorer either fixes or
//! seeds the interleaving, or enumerates every one.
//!
//! * [`des`] — a discrete-event engine for blocking limiters: agents that
//!   call a limiter, sleep until it lets them go, and continue.
//! * [`race`] — the concurrency explorer that interleaves the real steps of
//!   pingora's `Rate::maybe_reset` across virtual threads.

pub mod des;
pub mod race;
