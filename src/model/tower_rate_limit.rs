//! tower's fixed-window `RateLimit`, modelled from `tower` 0.5.3
//! `src/limit/rate/{rate.rs,service.rs}` (feature `limit`).
//!
//! The real middleware wraps one service and counts *one total per
//! instance* (there is no key). Its state is `Ready { until, rem }` or
//! `Limited`, plus one reusable tokio `Sleep`:
//!
//! * `RateLimit::new` starts in `Ready { until: Instant::now(), rem: num }`:
//!   the window is already over, so the first `call` opens a fresh one.
//! * `call` in `Ready`: if `now >= until` the window is renewed *at the call's
//!   time* (`until = now + per`, `rem = num`). Then if `rem > 1` it decrements
//!   and stays `Ready`; otherwise (this call used the last permit) it resets
//!   the sleep to `until` and switches to `Limited`. `call` in `Limited`
//!   panics "service not ready; poll_ready must be called first".
//! * `poll_ready` in `Ready` is always ready (it never looks at `until`). In
//!   `Limited` it polls the sleep: pending until `until`; once the sleep has
//!   fired it sets `Ready { until: Instant::now() + per, rem: num }` — the new
//!   window starts when the limited caller is *polled again* (the wake time,
//!   or later if nobody polls), never at the previous boundary.
//!
//! So windows are anchored at call or wake times and drift: in a saturated
//! run with an exact timer they are back to back; with tokio's timer, which
//! rounds a deadline up to the end of a millisecond of its own time base
//! (`TimeSource::deadline_to_tick` adds 999 999 ns), each window can start up
//! to 1 ms late ([`TimerRule::CeilMillis`]); real scheduling delay adds more.
//!
//! A caller that is not ready *waits* (the contrast with pingora's Rate,
//! which neither waits nor rejects). [`FixedWindow::try_acquire`] is the
//! waiting form a discrete-event engine drives; [`FixedWindow::allow`] is a
//! non-blocking decision, what `LoadShed<RateLimit<S>>` does (an `Overloaded`
//! error when `poll_ready` is pending).

use crate::clock::{Nanos, MILLI};
use crate::model::estimator::Fault;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Where the model's fault locations point.
const TOWER_RATE: &str = "tower-0.5.3/src/limit/rate";

/// `tower::limit::rate::Rate`: `num` requests per `per`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TowerRate {
    num: u64,
    per: Duration,
}

impl TowerRate {
    /// `Rate::new(num, per)`, whose `assert!`s become faults.
    pub fn new(num: u64, per: Duration) -> Result<Self, Fault> {
        if num == 0 {
            return Err(Fault {
                message: "assertion failed: num > 0".to_string(),
                location: format!("{TOWER_RATE}/rate.rs:17:9"),
            });
        }
        if per.as_nanos() == 0 {
            return Err(Fault {
                message: "assertion failed: per.as_nanos() > 0".to_string(),
                location: format!("{TOWER_RATE}/rate.rs:18:9"),
            });
        }
        Ok(TowerRate { num, per })
    }

    /// Requests per window.
    pub fn num(&self) -> u64 {
        self.num
    }

    /// Window length.
    pub fn per(&self) -> Duration {
        self.per
    }

    /// Window length in virtual nanoseconds (saturating at `u64::MAX`; a
    /// real `Instant + per` that overflowed would panic instead).
    pub fn per_nanos(&self) -> Nanos {
        u64::try_from(self.per.as_nanos()).unwrap_or(u64::MAX)
    }
}

/// When a sleep until `deadline` is seen as elapsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum TimerRule {
    /// At `deadline` exactly (an ideal timer).
    #[default]
    Exact,
    /// At the first whole millisecond since `origin` (the runtime's start)
    /// that is `>= deadline`, as tokio's timer wheel rounds deadlines up.
    CeilMillis {
        /// Virtual time the runtime's time source started.
        origin: Nanos,
    },
}

impl TimerRule {
    /// The virtual time a sleep until `deadline` completes.
    pub fn wake_at(self, deadline: Nanos) -> Nanos {
        match self {
            TimerRule::Exact => deadline,
            TimerRule::CeilMillis { origin } => {
                let since = deadline.saturating_sub(origin);
                let ms = since.div_ceil(MILLI);
                origin.saturating_add(ms.saturating_mul(MILLI))
            }
        }
    }
}

/// The real `State` enum.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum TowerState {
    /// Permits left in the window ending at `until`.
    Ready {
        /// End of the window.
        until: Nanos,
        /// Permits left.
        rem: u64,
    },
    /// No permit until the sleep fires.
    Limited,
}

/// What `poll_ready` returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Readiness {
    /// `Poll::Ready(Ok(()))`: `call` may be made now.
    Ready,
    /// `Poll::Pending`: the task is woken at `wake_at`.
    Pending {
        /// When the sleep fires.
        wake_at: Nanos,
    },
}

/// Result of [`FixedWindow::try_acquire`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Admit {
    /// Admitted: `poll_ready` was ready and `call` was made.
    Now,
    /// Not admitted: call `try_acquire` again at this time.
    WaitUntil(Nanos),
}

/// The model of `RateLimit<S>` (the inner service is assumed always ready).
///
/// # Examples
///
/// `RateLimit::new(svc, Rate::new(2, 1 s))`: two calls, then the caller waits
/// for the window to end; a window starts at the first call after the last
/// one ended (here at 10 ns), not on a clock boundary.
///
/// ```
/// use ratelab::model::tower_rate_limit::{Admit, FixedWindow, TowerRate};
/// use std::time::Duration;
///
/// let mut w = FixedWindow::new(TowerRate::new(2, Duration::from_secs(1)).unwrap(), 0);
/// assert_eq!(w.try_acquire(10), Admit::Now);
/// assert_eq!(w.try_acquire(20), Admit::Now);
/// assert_eq!(w.try_acquire(30), Admit::WaitUntil(10 + 1_000_000_000));
/// ```
#[derive(Debug, Clone)]
pub struct FixedWindow {
    rate: TowerRate,
    state: TowerState,
    /// The `Sleep`'s deadline (meaningful in `Limited`).
    sleep_until: Nanos,
    timer: TimerRule,
}

impl FixedWindow {
    /// `RateLimit::new(inner, rate)` at virtual time `now`.
    pub fn new(rate: TowerRate, now: Nanos) -> Self {
        FixedWindow {
            rate,
            state: TowerState::Ready {
                until: now,
                rem: rate.num(),
            },
            sleep_until: now,
            timer: TimerRule::Exact,
        }
    }

    /// Selects how the sleep's deadline is rounded.
    pub fn with_timer(mut self, timer: TimerRule) -> Self {
        self.timer = timer;
        self
    }

    /// The rate.
    pub fn rate(&self) -> TowerRate {
        self.rate
    }

    /// The current state.
    pub fn state(&self) -> TowerState {
        self.state
    }

    /// `poll_ready` at `now`.
    pub fn poll_ready(&mut self, now: Nanos) -> Readiness {
        match self.state {
            TowerState::Ready { .. } => Readiness::Ready,
            TowerState::Limited => {
                let wake_at = self.timer.wake_at(self.sleep_until);
                if now < wake_at {
                    return Readiness::Pending { wake_at };
                }
                self.state = TowerState::Ready {
                    until: now.saturating_add(self.rate.per_nanos()),
                    rem: self.rate.num(),
                };
                Readiness::Ready
            }
        }
    }

    /// `call` at `now`. Calling while `Limited` is the real panic.
    pub fn call(&mut self, now: Nanos) -> Result<(), Fault> {
        match self.state {
            TowerState::Ready { mut until, mut rem } => {
                if now >= until {
                    until = now.saturating_add(self.rate.per_nanos());
                    rem = self.rate.num();
                }
                if rem > 1 {
                    self.state = TowerState::Ready {
                        until,
                        rem: rem - 1,
                    };
                } else {
                    self.sleep_until = until;
                    self.state = TowerState::Limited;
                }
                Ok(())
            }
            TowerState::Limited => Err(Fault {
                message: "service not ready; poll_ready must be called first".to_string(),
                location: format!("{TOWER_RATE}/service.rs:145:31"),
            }),
        }
    }

    /// A waiting caller at `now`: `poll_ready`, and if ready `call`.
    pub fn try_acquire(&mut self, now: Nanos) -> Admit {
        match self.poll_ready(now) {
            Readiness::Ready => match self.call(now) {
                Ok(()) => Admit::Now,
                // poll_ready just returned Ready, so the state is Ready.
                Err(_) => Admit::WaitUntil(now),
            },
            Readiness::Pending { wake_at } => Admit::WaitUntil(wake_at),
        }
    }

    /// Non-blocking decision (as `LoadShed` over `RateLimit`): admitted now
    /// or rejected; a rejected request does not wait.
    pub fn allow(&mut self, now: Nanos) -> bool {
        matches!(self.try_acquire(now), Admit::Now)
    }
}

/// tower's `RateLimit` as an admission limiter (`LoadShed`: reject instead
/// of wait): a request of weight `w` is `w` calls of `poll_ready`, allowed
/// only if every one of them was ready.
impl crate::model::KeyState for FixedWindow {
    /// The model's own state (tower's `RateLimit` holds the same fields).
    const STATE_BYTES: u64 = std::mem::size_of::<FixedWindow>() as u64;

    fn admit(&mut self, w: u64, now: Nanos) -> crate::error::Result<crate::model::Decision> {
        // The `w` calls in closed form (a weight of 2^40 must not loop
        // 2^40 times), call for call the same states as one at a time:
        let mut ok = true;
        let mut left = w;
        while left > 0 {
            if let TowerState::Ready { until, rem } = self.state {
                // Ready inside the window with more than one permit: each
                // call only takes a permit and succeeds.
                if now < until && rem > 1 {
                    let n = left.min(rem - 1);
                    self.state = TowerState::Ready {
                        until,
                        rem: rem - n,
                    };
                    left -= n;
                    continue;
                }
            }
            if matches!(self.state, TowerState::Limited)
                && now < self.timer.wake_at(self.sleep_until)
            {
                // Sleeping at `now`: every remaining poll is Pending, and
                // a Pending poll changes nothing.
                return Ok(crate::model::Decision::DENY);
            }
            ok &= self.allow(now);
            left -= 1;
        }
        Ok(crate::model::Decision::from_allowed(ok))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::SECOND;

    const MS: Nanos = MILLI;

    fn limiter(num: u64, per_ms: u64) -> FixedWindow {
        FixedWindow::new(
            TowerRate::new(num, Duration::from_millis(per_ms)).unwrap(),
            0,
        )
    }

    #[test]
    fn new_rejects_zero_like_the_asserts() {
        let e = TowerRate::new(0, Duration::from_secs(1)).unwrap_err();
        assert_eq!(e.message, "assertion failed: num > 0");
        let e = TowerRate::new(1, Duration::ZERO).unwrap_err();
        assert_eq!(e.message, "assertion failed: per.as_nanos() > 0");
        assert!(TowerRate::new(1, Duration::from_nanos(1)).is_ok());
    }

    #[test]
    fn first_window_starts_at_the_first_call_not_at_creation() {
        let mut l = FixedWindow::new(TowerRate::new(2, Duration::from_secs(1)).unwrap(), 0);
        assert_eq!(l.state(), TowerState::Ready { until: 0, rem: 2 });
        assert_eq!(l.try_acquire(300 * MS), Admit::Now);
        assert_eq!(
            l.state(),
            TowerState::Ready {
                until: 1300 * MS,
                rem: 1
            }
        );
        // The 2nd call uses the last permit: Limited until 1300 ms.
        assert_eq!(l.try_acquire(400 * MS), Admit::Now);
        assert_eq!(l.state(), TowerState::Limited);
        assert_eq!(l.try_acquire(500 * MS), Admit::WaitUntil(1300 * MS));
        // Woken at the boundary: a fresh window from the wake time.
        assert_eq!(l.try_acquire(1300 * MS), Admit::Now);
        assert_eq!(
            l.state(),
            TowerState::Ready {
                until: 2300 * MS,
                rem: 1
            }
        );
    }

    #[test]
    fn window_after_limited_starts_when_polled_not_at_the_boundary() {
        let mut l = limiter(1, 100);
        assert_eq!(l.try_acquire(0), Admit::Now); // num = 1: Limited at once
        assert_eq!(l.state(), TowerState::Limited);
        // Nobody polls until 250 ms: the new window is [250, 350).
        assert_eq!(l.poll_ready(250 * MS), Readiness::Ready);
        assert_eq!(
            l.state(),
            TowerState::Ready {
                until: 350 * MS,
                rem: 1
            }
        );
        // The call may come later still: Ready never checks `until` in
        // poll_ready, and call renews an expired window at the call's time.
        assert_eq!(l.call(400 * MS), Ok(()));
        assert_eq!(l.state(), TowerState::Limited);
        assert_eq!(
            l.poll_ready(450 * MS),
            Readiness::Pending { wake_at: 500 * MS }
        );
    }

    #[test]
    fn call_while_limited_is_the_real_panic() {
        let mut l = limiter(1, 100);
        l.call(0).unwrap();
        let f = l.call(MS).unwrap_err();
        assert_eq!(
            f.message,
            "service not ready; poll_ready must be called first"
        );
        assert_eq!(f.location, "tower-0.5.3/src/limit/rate/service.rs:145:31");
    }

    #[test]
    fn a_weight_is_its_calls_in_closed_form() {
        use crate::model::KeyState;
        // Against w single calls, for weights around the window's permits.
        for w in [1u64, 2, 3, 4, 5, 7] {
            for start in [0u64, 400 * MS, 1500 * MS] {
                let mut fast = limiter(5, 1000);
                let mut slow = limiter(5, 1000);
                for (i, t) in [start, start + 10 * MS, start + 999 * MS, start + 2100 * MS]
                    .into_iter()
                    .enumerate()
                {
                    let got = fast.admit(w, t).unwrap().allowed;
                    let mut want = true;
                    for _ in 0..w {
                        want &= slow.allow(t);
                    }
                    assert_eq!(got, want, "w {w} start {start} request {i}");
                    assert_eq!(fast.state(), slow.state());
                }
            }
        }
        // A weight of 2^40 answers at once.
        let mut l = limiter(5, 1000);
        assert!(!l.admit(1 << 40, 0).unwrap().allowed);
        assert!(matches!(l.state(), TowerState::Limited));
    }

    #[test]
    fn saturated_waiting_caller_gets_num_per_window_back_to_back() {
        // 3 per 1 s, a caller that always retries at the wake time.
        let mut l = limiter(3, 1000);
        let mut t = 0;
        let mut admitted = Vec::new();
        while admitted.len() < 9 {
            match l.try_acquire(t) {
                Admit::Now => admitted.push(t),
                Admit::WaitUntil(w) => t = w,
            }
        }
        let s = SECOND;
        assert_eq!(admitted, vec![0, 0, 0, s, s, s, 2 * s, 2 * s, 2 * s]);
    }

    #[test]
    fn tokio_millisecond_rounding_delays_each_window() {
        let rate = TowerRate::new(1, Duration::from_micros(1500)).unwrap();
        let mut l = FixedWindow::new(rate, 0).with_timer(TimerRule::CeilMillis { origin: 0 });
        let mut t = 0;
        let mut admitted = Vec::new();
        while admitted.len() < 4 {
            match l.try_acquire(t) {
                Admit::Now => admitted.push(t),
                Admit::WaitUntil(w) => t = w,
            }
        }
        // 1.5 ms windows become 2 ms apart: deadlines 1.5, 3.5, 5.5 ms round
        // up to 2, 4, 6 ms.
        assert_eq!(admitted, vec![0, 2 * MS, 4 * MS, 6 * MS]);
        assert_eq!(TimerRule::Exact.wake_at(1_500_000), 1_500_000);
        assert_eq!(TimerRule::CeilMillis { origin: 100 }.wake_at(100), 100);
        assert_eq!(TimerRule::CeilMillis { origin: 100 }.wake_at(101), 100 + MS);
    }

    #[test]
    fn allow_rejects_without_waiting_and_counts_one_total() {
        let mut l = limiter(2, 1000);
        // "keys" do not exist: any two requests use the window up.
        assert!(l.allow(0));
        assert!(l.allow(10 * MS));
        assert!(!l.allow(20 * MS));
        assert!(!l.allow(999 * MS));
        assert!(l.allow(1000 * MS));
        assert!(l.allow(1500 * MS));
        assert!(!l.allow(1999 * MS));
        assert!(l.allow(2000 * MS));
    }
}
