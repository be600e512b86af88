//! Virtual time.
//!
//! Nothing inside a simulation reads the wall clock: every algorithm is handed
//! `now` explicitly (or a `&impl Clock`), so a replay is a pure function of its
//! input and seed. This mirrors governor's `FakeRelativeClock`: time is an
//! integer number of nanoseconds since the simulation's epoch, shared by
//! everyone holding a handle, and only moves when the driver calls
//! [`FakeRelativeClock::advance`] or [`FakeRelativeClock::set`].
//!
//! Nanoseconds in a `u64` cover 584 years, so a trace's timestamps cannot
//! overflow in practice; arithmetic helpers here *saturate* rather than wrap,
//! and callers that need to detect overflow use the `checked_*` forms.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Nanoseconds since the simulation epoch.
pub type Nanos = u64;

/// One millisecond in nanoseconds.
pub const MILLI: Nanos = 1_000_000;
/// One second in nanoseconds.
pub const SECOND: Nanos = 1_000_000_000;

/// A source of "now" for the algorithms under test.
pub trait Clock {
    /// The current virtual time in nanoseconds since the epoch.
    fn now(&self) -> Nanos;
}

/// A virtual clock that only moves when told to.
///
/// Cloning yields another handle on the *same* time, so a limiter and the
/// driver that advances time can share one clock (as in governor).
#[derive(Debug, Clone, Default)]
pub struct FakeRelativeClock {
    now: Arc<AtomicU64>,
}

/// The name the rest of ratelab uses: the one virtual clock.
pub type VirtualClock = FakeRelativeClock;

impl FakeRelativeClock {
    /// A clock at the epoch (t = 0).
    pub fn new() -> Self {
        Self::default()
    }

    /// A clock starting at `t`.
    pub fn starting_at(t: Nanos) -> Self {
        let clock = Self::default();
        clock.set(t);
        clock
    }

    /// Moves time forward by `by` nanoseconds (saturating at `u64::MAX`).
    pub fn advance(&self, by: Nanos) {
        let now = self.now.load(Ordering::Relaxed);
        self.now.store(now.saturating_add(by), Ordering::Relaxed);
    }

    /// Sets the time to `t`. Time never moves backwards: an earlier `t` is a
    /// bug in the driver, so it is ignored in release and asserted in debug.
    pub fn set(&self, t: Nanos) {
        let now = self.now.load(Ordering::Relaxed);
        debug_assert!(t >= now, "virtual time moved backwards: {t} < {now}");
        self.now.store(t.max(now), Ordering::Relaxed);
    }
}

impl Clock for FakeRelativeClock {
    fn now(&self) -> Nanos {
        self.now.load(Ordering::Relaxed)
    }
}

/// Whole milliseconds in `t`, truncated like `Duration::as_millis`.
pub fn whole_millis(t: Nanos) -> u64 {
    t / MILLI
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clones_share_time_and_advance_saturates() {
        let clock = FakeRelativeClock::new();
        let other = clock.clone();
        assert_eq!(other.now(), 0);
        clock.advance(5 * MILLI);
        assert_eq!(other.now(), 5_000_000);
        clock.set(SECOND);
        assert_eq!(other.now(), SECOND);
        clock.advance(u64::MAX);
        assert_eq!(other.now(), u64::MAX);
    }

    #[test]
    fn whole_millis_truncates() {
        assert_eq!(whole_millis(1_999_999), 1);
        assert_eq!(whole_millis(2_000_000), 2);
    }
}
