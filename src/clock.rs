//! Virtual time.
//!
//! Nothing inside a simulation reads the wall clock: every algorithm is handed
//! `now` explicitly, so a replay is a pure function of its input and seed.
//!
//! # One time type at the seams
//!
//! Time that crosses a module boundary is one type: [`Nanos`], virtual
//! nanoseconds since the simulation's epoch, as a `u64`. Workloads, traces,
//! oracles and reports all speak it. A model whose upstream library counts
//! time in Go's signed `int64` nanoseconds keeps that type inside itself (so
//! its overflow and sign behaviour stay faithful) and converts at its own
//! edge. The one exception is the discrete-event engine
//! ([`crate::sim::des`]), whose only job is to drive those Go models: it runs
//! on their signed clock so they are called without conversion.
//!
//! Nanoseconds in a `u64` cover 584 years, so a trace's timestamps cannot
//! overflow in practice; code that adds durations *saturates* rather than
//! wraps, and code that must detect overflow uses the `checked_*` forms.

/// Virtual nanoseconds since the simulation epoch: the one time type at
/// module boundaries.
pub type Nanos = u64;

/// One millisecond in nanoseconds.
pub const MILLI: Nanos = 1_000_000;
/// One second in nanoseconds.
pub const SECOND: Nanos = 1_000_000_000;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_are_nanoseconds() {
        assert_eq!(SECOND, 1_000 * MILLI);
        assert_eq!(MILLI, 1_000_000);
    }
}
