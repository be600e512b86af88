//! A GCRA (generic cell rate algorithm) of ratelab's own, written from the
//! algorithm and held to the arithmetic of the real `governor` crate, so
//! that it decides every request exactly as governor does
//! (`tests/it/gcra_vs_governor.rs` checks that, request for request, against
//! [`crate::model::governor::GovernorKeyed`]).
//!
//! Facts taken from governor 0.10.4 (`src/gcra.rs`, `src/nanos.rs`,
//! `src/quota.rs`, `src/state/in_memory.rs`, `src/state/keyed/hashmap.rs`);
//! the code here is ours.
//!
//! # The algorithm
//! One cell is emitted every `T` (the *emission interval*, governor's
//! `replenish_1_per`), and a burst of up to `burst` cells may arrive at
//! once: the *tolerance* is `τ = T × (burst − 1)`. Each key keeps one
//! number, its *theoretical arrival time* `TAT`.
//!
//! A request of `n` cells at time `t0` (governor's `check_n` /
//! `check_key_n`):
//! * `n > burst` (in governor's terms `T × (n − 1) > τ`) can never conform:
//!   governor returns `Err(InsufficientCapacity)` and leaves the state
//!   alone. The model denies.
//! * Otherwise, with `TAT = t0` for a key that has none yet, the request is
//!   admitted iff `t0 ≥ (TAT + T × (n − 1)) ⊖ τ` (`⊖` saturates at 0), and
//!   then `TAT = max(TAT, t0) + T + T × (n − 1)` = `max(TAT, t0) + n × T`.
//!   A denied request leaves `TAT` as it was.
//!
//! # Arithmetic (as governor)
//! * Times are whole nanoseconds in a `u64` since the limiter's start
//!   (governor's `Nanos`, `t0 = now.duration_since(start)`); here virtual
//!   time, which starts at 0 like governor's `FakeRelativeClock`.
//! * `T` is the quota's period in nanoseconds (at least 1 ns); `τ` is `T`
//!   times `burst − 1`, both exact integers. A quota built from a rate,
//!   `interval / limit`, truncates to whole nanoseconds first
//!   ([`Gcra::new`]), like `Quota::per_second` and
//!   `Quota::with_period(interval / limit)`.
//! * The comparison is strict: `t0 < earliest` denies, so a request
//!   arriving exactly at `TAT − τ` is admitted.
//! * governor's state is an `AtomicU64` in which 0 means "no TAT yet"; a
//!   stored TAT is never 0 (it is at least `T` after an admission), so that
//!   is the same as an absent state. The model keeps an
//!   `Option<NonZeroU64>`, 8 bytes.
//! * governor's additions are plain `u64` `+` on `Nanos` (`src/nanos.rs:52`,
//!   used at `src/gcra.rs:161` and `:171`): in a release build (the one a
//!   service ships, without overflow checks) a TAT past `u64::MAX` (a trace
//!   spanning 584 years) wraps, and governor still answers. The model wraps
//!   the same way, so such a trace gets governor's decisions (a wrapped TAT
//!   of exactly 0 reads as "no TAT", in both).
//!
//! # Weights
//! A request's weight is its number of cells `n`. governor's `check_n`
//! takes a `NonZeroU32`: a weight of 0 or above `u32::MAX` cannot be asked,
//! and the wrapper [`GovernorKeyed`](crate::model::governor::GovernorKeyed)
//! denies it; so does this model, without touching the state.
//!
//! # Memory
//! [`GCRA_STATE_BYTES`] = 8 per key: the TAT. `T` and `τ` belong to the
//! quota (one per limiter, though this model copies them into each key's
//! state for convenience). governor's keyed store holds the same 8-byte
//! TAT per key plus its key and map entry.

use crate::clock::Nanos;
use crate::error::{Error, Result};
use crate::model::{Decision, KeyState};
use std::num::NonZeroU64;
use std::time::Duration;

/// Bytes of one key's GCRA state: its theoretical arrival time, a `u64` of
/// nanoseconds.
pub const GCRA_STATE_BYTES: u64 = 8;

/// One key's GCRA: the quota (`T`, `τ`) and the key's TAT.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gcra {
    /// Emission interval `T`, ns (≥ 1).
    t: u64,
    /// Tolerance `τ = T × (burst − 1)`, ns.
    tau: u64,
    /// Theoretical arrival time, ns; `None` before the first admission.
    tat: Option<NonZeroU64>,
}

fn bad(m: String) -> Error {
    Error::input(format!("gcra: {m}"))
}

impl Gcra {
    /// `limit` cells per `interval`, bursts of up to `burst`: `T =
    /// interval / limit` truncated to whole nanoseconds (governor's
    /// `Quota::with_period(interval / limit).allow_burst(burst)`).
    ///
    /// Errors name the parameter: a zero `limit` or `interval`, a rate above
    /// one per nanosecond (`T` would be 0), and every error of
    /// [`Gcra::with_period`].
    ///
    /// # Examples
    /// ```
    /// use ratelab::clock::MILLI;
    /// use ratelab::model::gcra::Gcra;
    /// use ratelab::model::{Admit, PerKey};
    /// use std::time::Duration;
    /// // 10 per second (T = 100 ms), burst 2.
    /// let g = Gcra::new(10, Duration::from_secs(1), 2)?;
    /// let mut l = PerKey::new(move |_| Ok(g));
    /// assert!(l.admit(0, 1, 0)?.allowed);
    /// assert!(l.admit(0, 1, 0)?.allowed);
    /// assert!(!l.admit(0, 1, 0)?.allowed); // the burst is spent
    /// assert!(l.admit(0, 1, 100 * MILLI)?.allowed); // one cell per T
    /// assert!(!l.admit(0, 3, 900 * MILLI)?.allowed); // 3 cells > burst 2: never
    /// assert!(Gcra::new(0, Duration::from_secs(1), 2).is_err());
    /// # Ok::<(), ratelab::error::Error>(())
    /// ```
    pub fn new(limit: u64, interval: Duration, burst: u64) -> Result<Self> {
        if limit == 0 {
            return Err(bad("limit 0: expected at least 1 cell per interval".into()));
        }
        if interval.is_zero() {
            return Err(bad("interval 0s: expected more than 0".into()));
        }
        let t = interval.as_nanos() / u128::from(limit);
        if t == 0 {
            return Err(bad(format!(
                "limit {limit} per interval {interval:?}: more than one cell per nanosecond (T = 0)"
            )));
        }
        let t = u64::try_from(t)
            .map_err(|_| bad(format!("interval {interval:?}: longer than 584 years")))?;
        Self::with_period(Duration::from_nanos(t), burst)
    }

    /// One cell every `period` (`T`), bursts of up to `burst` cells: the
    /// arguments of [`GovernorKeyed::new`](crate::model::governor::GovernorKeyed::new).
    ///
    /// `burst` must be 1..=4294967295 (governor's `NonZeroU32`): a zero
    /// burst would admit nothing and governor cannot express it. `period`
    /// must be at least 1 ns and at most `u64::MAX` ns, and `τ = T × (burst
    /// − 1)` must fit a `u64` of nanoseconds (governor would overflow).
    ///
    /// # Examples
    /// ```
    /// use ratelab::model::gcra::Gcra;
    /// use ratelab::model::KeyState;
    /// use std::time::Duration;
    /// let mut g = Gcra::with_period(Duration::from_millis(10), 1)?;
    /// assert!(g.admit(1, 5)?.allowed);
    /// assert!(!g.admit(1, 10_000_004)?.allowed); // TAT is 10 ms after 5 ns
    /// assert!(g.admit(1, 10_000_005)?.allowed);
    /// let e = Gcra::with_period(Duration::from_millis(10), 0).unwrap_err();
    /// assert!(e.to_string().contains("burst 0"));
    /// # Ok::<(), ratelab::error::Error>(())
    /// ```
    pub fn with_period(period: Duration, burst: u64) -> Result<Self> {
        if burst == 0 || burst > u64::from(u32::MAX) {
            return Err(bad(format!(
                "burst {burst}: expected 1..=4294967295 (a zero burst admits nothing)"
            )));
        }
        if period.is_zero() {
            return Err(bad("period 0s: expected at least 1ns".into()));
        }
        let t = u64::try_from(period.as_nanos())
            .map_err(|_| bad(format!("period {period:?}: longer than 584 years")))?;
        let tau = t.checked_mul(burst - 1).ok_or_else(|| {
            bad(format!(
                "period {period:?} × (burst {burst} − 1): tolerance over 584 years"
            ))
        })?;
        Ok(Self { t, tau, tat: None })
    }

    /// The emission interval `T`, ns.
    pub fn emission_interval(&self) -> Nanos {
        self.t
    }

    /// The tolerance `τ`, ns.
    pub fn tolerance(&self) -> Nanos {
        self.tau
    }

    /// The key's theoretical arrival time, if it has one.
    pub fn tat(&self) -> Option<Nanos> {
        self.tat.map(NonZeroU64::get)
    }
}

impl KeyState for Gcra {
    const STATE_BYTES: u64 = GCRA_STATE_BYTES;

    fn admit(&mut self, w: u64, now: Nanos) -> Result<Decision> {
        // Not expressible as governor's NonZeroU32 cell count.
        if w == 0 || w > u64::from(u32::MAX) {
            return Ok(Decision::DENY);
        }
        // The cells beyond the first, in time; more than τ: InsufficientCapacity.
        let extra = u128::from(self.t) * u128::from(w - 1);
        if extra > u128::from(self.tau) {
            return Ok(Decision::DENY);
        }
        let extra = extra as u64; // ≤ τ, which fits
        let tat = self.tat.map_or(now, NonZeroU64::get);
        // governor: `(tat + additional_weight).saturating_sub(tau)`, `+`
        // wrapping as in its release build (module docs).
        let earliest = tat.wrapping_add(extra).saturating_sub(self.tau);
        if now < earliest {
            return Ok(Decision::DENY);
        }
        // governor: `cmp::max(tat, t0) + t + additional_weight`.
        let next = tat.max(now).wrapping_add(self.t).wrapping_add(extra);
        self.tat = NonZeroU64::new(next);
        Ok(Decision::ALLOW)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::{MILLI, SECOND};

    fn g(period_ms: u64, burst: u64) -> Gcra {
        Gcra::with_period(Duration::from_millis(period_ms), burst).unwrap()
    }

    fn ok(g: &mut Gcra, w: u64, t: Nanos) -> bool {
        g.admit(w, t).unwrap().allowed
    }

    #[test]
    fn quota_parameters_follow_governor() {
        // per_second(3): T = 1 s / 3 truncated; tau = T × (burst − 1).
        let q = Gcra::new(3, Duration::from_secs(1), 3).unwrap();
        assert_eq!(q.emission_interval(), 333_333_333);
        assert_eq!(q.tolerance(), 666_666_666);
        assert_eq!(q.tat(), None);
        assert_eq!(g(10, 1).tolerance(), 0);
    }

    #[test]
    fn a_full_burst_then_one_cell_per_interval() {
        let mut q = g(100, 3);
        for _ in 0..3 {
            assert!(ok(&mut q, 1, 0));
        }
        assert!(!ok(&mut q, 1, 0));
        assert_eq!(q.tat(), Some(300 * MILLI));
        // TAT − τ = 100 ms: admitted exactly then, not a nanosecond before.
        assert!(!ok(&mut q, 1, 100 * MILLI - 1));
        assert!(ok(&mut q, 1, 100 * MILLI));
        assert!(!ok(&mut q, 1, 100 * MILLI));
    }

    #[test]
    fn n_cells_are_all_or_nothing_and_capped_by_the_burst() {
        let mut q = g(10, 4);
        assert!(!ok(&mut q, 5, 0)); // InsufficientCapacity
        assert_eq!(q.tat(), None);
        assert!(ok(&mut q, 4, 0));
        assert_eq!(q.tat(), Some(40 * MILLI));
        // Two cells need TAT + T − τ = 20 ms.
        assert!(!ok(&mut q, 2, 20 * MILLI - 1));
        assert_eq!(q.tat(), Some(40 * MILLI)); // a denial leaves TAT alone
        assert!(ok(&mut q, 2, 20 * MILLI));
        assert_eq!(q.tat(), Some(60 * MILLI));
    }

    #[test]
    fn an_idle_key_starts_from_now() {
        let mut q = g(10, 2);
        assert!(ok(&mut q, 2, 5 * SECOND));
        assert_eq!(q.tat(), Some(5 * SECOND + 20 * MILLI));
        assert!(ok(&mut q, 2, 60 * SECOND));
        assert_eq!(q.tat(), Some(60 * SECOND + 20 * MILLI));
    }

    #[test]
    fn weights_governor_cannot_take_are_denied() {
        let mut q = g(10, 2);
        assert!(!ok(&mut q, 0, 0));
        assert!(!ok(&mut q, u64::from(u32::MAX) + 1, 0));
        assert_eq!(q.tat(), None);
    }

    #[test]
    fn bad_parameters_are_one_line_errors_naming_them() {
        let msg = |r: Result<Gcra>| r.unwrap_err().to_string();
        let s = Duration::from_secs(1);
        assert!(msg(Gcra::new(0, s, 1)).contains("limit 0"));
        assert!(msg(Gcra::new(1, Duration::ZERO, 1)).contains("interval 0s"));
        assert!(msg(Gcra::new(2_000_000_000, s, 1)).contains("limit 2000000000"));
        assert!(msg(Gcra::with_period(s, 0)).contains("burst 0"));
        assert!(msg(Gcra::with_period(s, 1 << 32)).contains("burst 4294967296"));
        assert!(msg(Gcra::with_period(Duration::ZERO, 1)).contains("period 0s"));
        assert!(msg(Gcra::with_period(Duration::from_secs(1 << 40), 1 << 30)).contains("period"));
    }

    #[test]
    fn a_tat_past_u64_wraps_as_governor_release_does() {
        let mut q = g(10, 1);
        q.tat = NonZeroU64::new(u64::MAX - 5);
        // max(TAT, t) + T wraps: admitted, TAT just past 0.
        assert!(ok(&mut q, 1, u64::MAX - 1));
        assert_eq!(q.tat(), Some((u64::MAX - 1).wrapping_add(10 * MILLI)));
        // The wrapped TAT is in the past of a late request: admitted again.
        assert!(ok(&mut q, 1, u64::MAX));
    }
}
