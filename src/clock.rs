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

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Virtual nanoseconds since the simulation epoch: the one time type at
/// module boundaries.
pub type Nanos = u64;

/// One millisecond in nanoseconds.
pub const MILLI: Nanos = 1_000_000;
/// One second in nanoseconds.
pub const SECOND: Nanos = 1_000_000_000;

/// The earliest entry of a time-ordered queue (a min-heap of tuples that
/// start with their time), taken off when `due` says it is due: `while let
/// Some(e) = pop_due(&mut queue, |e| e.0 <= t)` runs, in time order, what
/// is due by `t`.
///
/// ```
/// use std::cmp::Reverse;
/// use std::collections::BinaryHeap;
/// let mut q = BinaryHeap::from([Reverse((5u64, 'b')), Reverse((2, 'a')), Reverse((9, 'c'))]);
/// let mut ran = Vec::new();
/// while let Some((_, e)) = ratelab::clock::pop_due(&mut q, |e| e.0 <= 5) {
///     ran.push(e);
/// }
/// assert_eq!((ran, q.len()), (vec!['a', 'b'], 1));
/// ```
pub fn pop_due<T: Ord>(
    queue: &mut BinaryHeap<Reverse<T>>,
    due: impl FnOnce(&T) -> bool,
) -> Option<T> {
    if !due(&queue.peek()?.0) {
        return None;
    }
    queue.pop().map(|Reverse(e)| e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_are_nanoseconds() {
        assert_eq!(SECOND, 1_000 * MILLI);
        assert_eq!(MILLI, 1_000_000);
    }
}
