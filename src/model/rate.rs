//! pingora-limits' `Rate`, modelled from `pingora-limits` 0.9.0/0.9.1
//! `src/rate.rs` (the file is byte-identical in both releases, so every
//! line:column quoted below holds for both).
//!
//! The real type is two count-min sketches ("red" and "blue" slots) and a
//! flag saying which one collects the current window. There is no timer:
//! `maybe_reset` runs at the start of every `observe`, `rate` and `rate_with`
//! call. When at least `interval` whole milliseconds have passed since the
//! last reset, the caller that wins a compare-exchange on `last_reset_time`
//! clears the *previous* slot, flips the flag, and — if two intervals or more
//! have passed — clears the other slot too. The new window therefore starts at
//! that caller's time, not at a multiple of `interval`.
//!
//! Facts reproduced here, each because a report depends on it:
//!
//! * Time inside `Rate` is `Instant::now().duration_since(start).as_millis()
//!   as u64`: whole milliseconds since creation, truncated, saturating at 0 if
//!   `now` were before `start` (`duration_since` saturates since Rust 1.60).
//!   The model is created at a virtual `start: Nanos` and every call passes
//!   `now: Nanos`.
//! * `reset_interval_ms = interval.as_millis() as u64` (truncating, so 1.5 ms
//!   is 1 ms and 0.5 ms is 0 ms), while `PROPORTIONAL_RATE_ESTIMATE_CALC_FN`
//!   divides by `interval.as_secs_f64()` (the untruncated `Duration`) and
//!   `rate()` multiplies by `1000.0 / reset_interval_ms`. Both forms are kept.
//! * `maybe_reset` returns `past_ms` computed *before* the flip, so the call
//!   that flips still sees the old `past_ms` (a `rate()` at 3208 ms with the
//!   last reset at 1108 ms takes the "two intervals missed" shortcut and
//!   returns 0 after clearing both slots).
//! * `rate_with`'s fraction is `(past_ms % reset_interval_ms) as f64 /
//!   reset_interval_ms as f64`; with a 0 ms interval that `%` panics in every
//!   build ("attempt to calculate the remainder with a divisor of zero" at
//!   rate.rs:217:40 — checked against the real crate).
//! * The compare-exchange loser runs `assert!(new >= now - 1000)` with `u64`
//!   operands: inside the first second `now - 1000` underflows. Release: the
//!   subtraction wraps and the assertion fails ("assertion failed: new >= now -
//!   1000", rate.rs:174:17); debug: the subtraction itself panics ("attempt to
//!   subtract with overflow", rate.rs:174:32). Only reachable when two callers
//!   race the same flip; see `crate::sim::race`.
//! * `now - last_reset` (rate.rs:147:23) is also a plain `u64` subtraction.
//!   `now` is read *before* `last_reset_time` is loaded, so a thread delayed
//!   between the two, while another thread with a later clock reading flips,
//!   sees `last_reset > now`: debug panics, release wraps to a huge `past_ms`,
//!   wins the compare-exchange with an *older* time (moving `last_reset_time`
//!   backwards) and clears both slots. Single-threaded it cannot happen.
//! * `reset_interval_ms * 2` (rate.rs:128:23, 167:40, 198:58) overflows in a
//!   debug build for intervals of `u64::MAX / 2` ms and more.
//!
//! Every panic of the real code is returned as a [`Fault`], never a Rust
//! panic. [`RateFixes`] switches each clearly-a-bug behaviour off separately;
//! [`RateFlavor::Fixed`] switches them all off.
//!
//! `maybe_reset` is also exposed as a step machine ([`MaybeReset`]) with one
//! step per shared-memory operation of the real function, so the concurrency
//! explorer can interleave threads; the single-threaded [`Rate::maybe_reset`]
//! and [`Rate::observe`] are exactly the composition of those steps.

use crate::clock::{Nanos, MILLI};
use crate::model::estimator::{Estimator, EstimatorConfig, Fault, FrequencyEstimator};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Rows of `Rate::new`'s sketches (`HASHES` in rate.rs).
pub const RATE_HASHES: usize = 4;
/// Counters per row of `Rate::new`'s sketches (`SLOTS` in rate.rs).
pub const RATE_SLOTS: usize = 1024;

/// Where the model's fault locations point (rate.rs is identical in 0.9.0 and
/// 0.9.1; the seed document quotes the 0.9.0 path).
const RATE_RS: &str = "pingora-limits-0.9.0/src/rate.rs";

/// Which build of the real crate is modelled: integer overflow checks are on
/// in debug builds (`cargo build`/`cargo test`) and off in release builds, so
/// the same bug panics with a different message, or not at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Build {
    /// `--release`: arithmetic wraps; only `assert!`s and `%` by zero panic.
    #[default]
    Release,
    /// Debug: overflowing `+`, `-`, `*` panic.
    Debug,
}

/// Independent switches for behaviours of the real `Rate` that are clearly
/// bugs. All `false` is the faithful model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
pub struct RateFixes {
    /// Compare-exchange loser: `assert!(new >= now.saturating_sub(1000))`
    /// instead of the underflowing `now - 1000` (rate.rs:174). Removes the A4
    /// first-second panic.
    pub loser_assert_saturating: bool,
    /// `past_ms = now.saturating_sub(last_reset)` instead of `now -
    /// last_reset` (rate.rs:147 and 167): a thread whose clock reading is
    /// older than the last reset sees 0 ms and does nothing, instead of
    /// panicking (debug) or moving the window backwards and clearing both
    /// slots (release).
    pub past_ms_saturating: bool,
    /// `rate_with` with a 0 ms `reset_interval_ms` reports fraction 0.0
    /// instead of panicking on `% 0` (rate.rs:217).
    pub zero_interval_fraction: bool,
    /// `reset_interval_ms.saturating_mul(2)` instead of `* 2` (rate.rs:128,
    /// 167, 198), which overflows for intervals of `u64::MAX / 2` ms or more.
    pub interval_double_saturating: bool,
}

impl RateFixes {
    /// The faithful model: every bug present.
    pub const NONE: RateFixes = RateFixes {
        loser_assert_saturating: false,
        past_ms_saturating: false,
        zero_interval_fraction: false,
        interval_double_saturating: false,
    };
    /// Every fix on.
    pub const ALL: RateFixes = RateFixes {
        loser_assert_saturating: true,
        past_ms_saturating: true,
        zero_interval_fraction: true,
        interval_double_saturating: true,
    };
}

/// The two presets of [`RateFixes`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum RateFlavor {
    /// Exactly pingora-limits 0.9.x.
    #[default]
    Faithful,
    /// Every switch of [`RateFixes`] on.
    Fixed,
}

impl RateFlavor {
    /// The switches this preset stands for.
    pub fn fixes(self) -> RateFixes {
        match self {
            RateFlavor::Faithful => RateFixes::NONE,
            RateFlavor::Fixed => RateFixes::ALL,
        }
    }
}

/// The argument of a `rate_with` closure (`RateComponents` in rate.rs): the
/// previous window's count, the current window's count so far, the configured
/// `interval` (the untruncated `Duration`) and the elapsed fraction of the
/// current window, `(past_ms % reset_interval_ms) / reset_interval_ms`.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Serialize)]
pub struct RateComponents {
    /// Count of the key in the previous (completed) window.
    pub prev_samples: i64,
    /// Count of the key in the current window so far.
    pub curr_samples: i64,
    /// The `Duration` the `Rate` was created with.
    pub interval: Duration,
    /// Elapsed fraction of the current window, in `[0, 1)`.
    pub current_interval_fraction: f64,
}

/// `PROPORTIONAL_RATE_ESTIMATE_CALC_FN` of rate.rs: the previous window
/// weighted by the part of it that still overlaps a sliding window ending
/// now, plus the current window, per second of `interval.as_secs_f64()`
/// (the Cloudflare "counting things" estimate, as changed in 0.7.0 so that
/// `curr` is no longer weighted).
pub fn proportional_rate_estimate(c: RateComponents) -> f64 {
    let prev = c.prev_samples as f64;
    let curr = c.curr_samples as f64;
    let interval_secs = c.interval.as_secs_f64();
    let weighted = prev * (1. - c.current_interval_fraction) + curr;
    weighted / interval_secs
}

/// The same function under the real crate's name, for callers that want to
/// pass it like the real static.
pub static PROPORTIONAL_RATE_ESTIMATE_CALC_FN: fn(RateComponents) -> f64 =
    proportional_rate_estimate;

/// Fault of the compare-exchange loser's `assert!` in a release build (and in
/// a debug build once `now >= 1000`).
pub fn loser_assert_fault() -> Fault {
    Fault {
        message: "assertion failed: new >= now - 1000".to_string(),
        location: format!("{RATE_RS}:174:17"),
    }
}

/// Fault of the compare-exchange loser's `now - 1000` in a debug build.
pub fn loser_subtract_fault() -> Fault {
    Fault {
        message: "attempt to subtract with overflow".to_string(),
        location: format!("{RATE_RS}:174:32"),
    }
}

/// Fault of `now - last_reset` in a debug build when another thread's later
/// clock reading already flipped the window.
pub fn past_ms_subtract_fault() -> Fault {
    Fault {
        message: "attempt to subtract with overflow".to_string(),
        location: format!("{RATE_RS}:147:23"),
    }
}

/// Fault of `past_ms % reset_interval_ms` with a 0 ms interval (any build).
pub fn remainder_by_zero_fault() -> Fault {
    Fault {
        message: "attempt to calculate the remainder with a divisor of zero".to_string(),
        location: format!("{RATE_RS}:217:40"),
    }
}

/// The three places that compute `reset_interval_ms * 2`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DoubleSite {
    /// `rate()`, rate.rs:128:23.
    Rate,
    /// `maybe_reset`'s winner branch, rate.rs:167:40.
    MaybeReset,
    /// `rate_with()`, rate.rs:198:58.
    RateWith,
}

/// Fault of `reset_interval_ms * 2` in a debug build.
pub fn multiply_overflow_fault(site: DoubleSite) -> Fault {
    let at = match site {
        DoubleSite::Rate => "128:23",
        DoubleSite::MaybeReset => "167:40",
        DoubleSite::RateWith => "198:58",
    };
    Fault {
        message: "attempt to multiply with overflow".to_string(),
        location: format!("{RATE_RS}:{at}"),
    }
}

/// The model of pingora's `Rate`, generic over the sketch so an
/// [`crate::model::estimator::ExactCounter`] can be plugged in for
/// conformance checks.
#[derive(Debug, Clone)]
pub struct Rate<E = Estimator> {
    red_slot: E,
    blue_slot: E,
    /// `true`: the current slot is red (the real initial value).
    red_or_blue: bool,
    start: Nanos,
    reset_interval_ms: u64,
    /// Milliseconds since `start` of the last reset (initially 0).
    last_reset_time: u64,
    interval: Duration,
    build: Build,
    fixes: RateFixes,
}

impl Rate<Estimator> {
    /// `Rate::new(interval)` created at virtual time `start`: two 4 × 1024
    /// sketches. The real slots get independent random hashers; here red is
    /// seeded with `derive_seed(seed, [0])` and blue with `[1]`.
    pub fn new(interval: Duration, start: Nanos, seed: u64) -> Self {
        Self::new_with_estimator_config(
            interval,
            start,
            EstimatorConfig::new(RATE_HASHES, RATE_SLOTS),
            seed,
        )
    }

    /// `Rate::new_with_estimator_config(interval, hashes, slots)`, with the
    /// whole [`EstimatorConfig`] (hasher, overflow) selectable.
    pub fn new_with_estimator_config(
        interval: Duration,
        start: Nanos,
        config: EstimatorConfig,
        seed: u64,
    ) -> Self {
        let red = Estimator::new(config, crate::rng::derive_seed(seed, &[0]));
        let blue = Estimator::new(config, crate::rng::derive_seed(seed, &[1]));
        Self::from_slots(interval, start, red, blue)
    }
}

impl<E: FrequencyEstimator> Rate<E> {
    /// A `Rate` over two given (empty) counters; faithful release build.
    pub fn from_slots(interval: Duration, start: Nanos, red: E, blue: E) -> Self {
        Rate {
            red_slot: red,
            blue_slot: blue,
            red_or_blue: true,
            start,
            // `as u64` truncates like the real cast ("should be small not to
            // overflow").
            reset_interval_ms: interval.as_millis() as u64,
            last_reset_time: 0,
            interval,
            build: Build::Release,
            fixes: RateFixes::NONE,
        }
    }

    /// Selects the modelled build.
    pub fn with_build(mut self, build: Build) -> Self {
        self.build = build;
        self
    }

    /// Selects which bugs are fixed.
    pub fn with_fixes(mut self, fixes: RateFixes) -> Self {
        self.fixes = fixes;
        self
    }

    /// The modelled build.
    pub fn build(&self) -> Build {
        self.build
    }

    /// The active fixes.
    pub fn fixes(&self) -> RateFixes {
        self.fixes
    }

    /// The `Duration` given at creation.
    pub fn interval(&self) -> Duration {
        self.interval
    }

    /// `interval.as_millis() as u64`.
    pub fn reset_interval_ms(&self) -> u64 {
        self.reset_interval_ms
    }

    /// Virtual creation time.
    pub fn start(&self) -> Nanos {
        self.start
    }

    /// `last_reset_time`: ms since `start` of the last flip (0 before any).
    pub fn last_reset_ms(&self) -> u64 {
        self.last_reset_time
    }

    /// The real flag: `true` when red collects the current window.
    pub fn red_is_current(&self) -> bool {
        self.red_or_blue
    }

    /// The virtual time of the last reset, in nanoseconds since the epoch
    /// (the start of the current window).
    pub fn window_start(&self) -> Nanos {
        self.start
            .saturating_add(self.last_reset_time.saturating_mul(MILLI))
    }

    /// `Instant::now().duration_since(start).as_millis() as u64` at `now`.
    pub fn elapsed_ms(&self, now: Nanos) -> u64 {
        now.saturating_sub(self.start) / MILLI
    }

    /// The slot collecting the current window.
    pub fn current_slot(&self) -> &E {
        self.current(self.red_or_blue)
    }

    /// The slot holding the previous window.
    pub fn previous_slot(&self) -> &E {
        self.previous(self.red_or_blue)
    }

    fn current(&self, red_or_blue: bool) -> &E {
        if red_or_blue {
            &self.red_slot
        } else {
            &self.blue_slot
        }
    }

    fn previous(&self, red_or_blue: bool) -> &E {
        if red_or_blue {
            &self.blue_slot
        } else {
            &self.red_slot
        }
    }

    fn current_mut(&mut self, red_or_blue: bool) -> &mut E {
        if red_or_blue {
            &mut self.red_slot
        } else {
            &mut self.blue_slot
        }
    }

    fn previous_mut(&mut self, red_or_blue: bool) -> &mut E {
        if red_or_blue {
            &mut self.blue_slot
        } else {
            &mut self.red_slot
        }
    }

    /// `now - last_reset` as the build and fixes compute it.
    fn past(&self, now: u64, last_reset: u64) -> Result<u64, Fault> {
        if self.fixes.past_ms_saturating {
            return Ok(now.saturating_sub(last_reset));
        }
        match self.build {
            Build::Release => Ok(now.wrapping_sub(last_reset)),
            Build::Debug => now
                .checked_sub(last_reset)
                .ok_or_else(past_ms_subtract_fault),
        }
    }

    /// `reset_interval_ms * 2` as the build and fixes compute it.
    fn double_interval(&self, site: DoubleSite) -> Result<u64, Fault> {
        if self.fixes.interval_double_saturating {
            return Ok(self.reset_interval_ms.saturating_mul(2));
        }
        match self.build {
            Build::Release => Ok(self.reset_interval_ms.wrapping_mul(2)),
            Build::Debug => self
                .reset_interval_ms
                .checked_mul(2)
                .ok_or_else(|| multiply_overflow_fault(site)),
        }
    }

    /// The compare-exchange loser's `assert!(new >= now - 1000)`.
    fn loser_check(&self, new: u64, now: u64) -> Result<(), Fault> {
        let bound = if self.fixes.loser_assert_saturating {
            now.saturating_sub(1000)
        } else {
            match self.build {
                Build::Release => now.wrapping_sub(1000),
                Build::Debug => now.checked_sub(1000).ok_or_else(loser_subtract_fault)?,
            }
        };
        if new >= bound {
            Ok(())
        } else {
            Err(loser_assert_fault())
        }
    }

    /// `maybe_reset()` at `now`: flips the window when due and returns the
    /// pre-flip `past_ms`. Exactly the composition of [`MaybeReset`]'s steps.
    pub fn maybe_reset(&mut self, now: Nanos) -> Result<u64, Fault> {
        let mut op = MaybeReset::new();
        loop {
            if let StepResult::Done(past_ms) = op.step(self, now)? {
                return Ok(past_ms);
            }
        }
    }

    /// The second half of `observe`: `current(red_or_blue()).incr(key,
    /// events)` with the flag read now.
    pub fn incr_current(&mut self, key: &[u8], events: i64) -> Result<i64, Fault> {
        let red_or_blue = self.red_or_blue;
        self.current_mut(red_or_blue).incr(key, events)
    }

    /// `observe(key, events)` at `now`: the count of `key` in the current
    /// window so far, including these events.
    pub fn observe(&mut self, key: &[u8], events: i64, now: Nanos) -> Result<i64, Fault> {
        let mut op = ObserveOp::new();
        loop {
            if let StepResult::Done(count) = op.step(self, now, key, events)? {
                return Ok(count);
            }
        }
    }

    /// `rate(key)` at `now`: the previous window's count per second,
    /// `get * 1000.0 / reset_interval_ms`; 0 when two intervals or more have
    /// passed since the last reset (measured before this call's flip).
    pub fn rate(&mut self, key: &[u8], now: Nanos) -> Result<f64, Fault> {
        let past_ms = self.maybe_reset(now)?;
        if past_ms >= self.double_interval(DoubleSite::Rate)? {
            return Ok(0.0);
        }
        let prev = self.previous(self.red_or_blue).get(key);
        Ok(prev as f64 * 1000.0 / self.reset_interval_ms as f64)
    }

    /// The [`RateComponents`] that `rate_with` would hand its closure at
    /// `now` (this call runs `maybe_reset`, like `rate_with`).
    pub fn components(&mut self, key: &[u8], now: Nanos) -> Result<RateComponents, Fault> {
        let past_ms = self.maybe_reset(now)?;
        let (prev_samples, curr_samples) =
            if past_ms >= self.double_interval(DoubleSite::RateWith)? {
                (0, 0)
            } else if past_ms >= self.reset_interval_ms {
                (self.previous(self.red_or_blue).get(key), 0)
            } else {
                (
                    self.previous(self.red_or_blue).get(key),
                    self.current(self.red_or_blue).get(key),
                )
            };
        let current_interval_fraction = if self.reset_interval_ms == 0 {
            if self.fixes.zero_interval_fraction {
                0.0
            } else {
                return Err(remainder_by_zero_fault());
            }
        } else {
            (past_ms % self.reset_interval_ms) as f64 / self.reset_interval_ms as f64
        };
        Ok(RateComponents {
            prev_samples,
            curr_samples,
            interval: self.interval,
            current_interval_fraction,
        })
    }

    /// `rate_with(key, f)` at `now`.
    pub fn rate_with<T, F>(&mut self, key: &[u8], now: Nanos, f: F) -> Result<T, Fault>
    where
        F: FnOnce(RateComponents) -> T,
    {
        self.components(key, now).map(f)
    }
}

/// One shared-memory operation of the real `maybe_reset`, in source order.
/// Thread-local arithmetic is folded into the step that precedes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum ResetStep {
    /// `Instant::now()…as_millis()` (rate.rs:145).
    ReadClock,
    /// `last_reset_time.load`, then `past_ms = now - last_reset` and the
    /// `past_ms < reset_interval_ms` early return (rate.rs:146-152).
    LoadLastReset,
    /// `let red_or_blue = self.red_or_blue()` (rate.rs:153).
    LoadFlag,
    /// `compare_exchange(last_reset, now)`; on failure the loser's
    /// `assert!(new >= now - 1000)` (rate.rs:154-175).
    CompareExchange,
    /// Winner: `previous(red_or_blue).reset()` (rate.rs:162).
    ClearPrevious,
    /// Winner: `red_or_blue.store(!red_or_blue)` and the two-interval test
    /// (rate.rs:164-167).
    Flip,
    /// Winner, two intervals or more: `current(red_or_blue).reset()`, the
    /// stale slot, now previous (rate.rs:169).
    ClearStale,
}

/// Result of one step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepResult<T> {
    /// More steps follow.
    Continue,
    /// The operation returned this value.
    Done(T),
}

/// How this thread's compare-exchange went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum CasOutcome {
    /// It won and flipped.
    Won,
    /// Another thread had already moved `last_reset_time` to this value.
    Lost {
        /// The `Err(new)` value.
        new: u64,
    },
}

/// The real `maybe_reset` as a resumable state machine. `step` performs the
/// next [`ResetStep`] on a shared `Rate`; between steps other threads may step
/// their own machines on the same `Rate`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MaybeReset {
    next: Option<ResetStep>,
    now: u64,
    last_reset: u64,
    past_ms: u64,
    red_or_blue: bool,
    cas: Option<CasOutcome>,
    result: Option<Result<u64, Fault>>,
}

/// `Fault` has no `Hash`; hash its two strings (consistent with its `Eq`).
fn hash_result<T: std::hash::Hash, H: std::hash::Hasher>(
    r: &Option<Result<T, Fault>>,
    state: &mut H,
) {
    use std::hash::Hash;
    r.as_ref()
        .map(|r| r.as_ref().map_err(|f| (&f.message, &f.location)))
        .hash(state);
}

impl std::hash::Hash for MaybeReset {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.next.hash(state);
        self.now.hash(state);
        self.last_reset.hash(state);
        self.past_ms.hash(state);
        self.red_or_blue.hash(state);
        self.cas.hash(state);
        hash_result(&self.result, state);
    }
}

impl std::hash::Hash for ObserveOp {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.reset.hash(state);
        self.past_ms.hash(state);
        hash_result(&self.done, state);
    }
}

impl Default for MaybeReset {
    fn default() -> Self {
        Self::new()
    }
}

impl MaybeReset {
    /// A call that has not started.
    pub fn new() -> Self {
        MaybeReset {
            next: Some(ResetStep::ReadClock),
            now: 0,
            last_reset: 0,
            past_ms: 0,
            red_or_blue: true,
            cas: None,
            result: None,
        }
    }

    /// The step `step` will perform next; `None` once finished.
    pub fn next_step(&self) -> Option<ResetStep> {
        self.next
    }

    /// The clock reading (ms since `start`), once `ReadClock` ran.
    pub fn now_ms(&self) -> u64 {
        self.now
    }

    /// The compare-exchange's outcome, if it ran.
    pub fn cas_outcome(&self) -> Option<CasOutcome> {
        self.cas
    }

    /// The returned `past_ms` or the panic, once finished.
    pub fn result(&self) -> Option<&Result<u64, Fault>> {
        self.result.as_ref()
    }

    fn finish(&mut self, r: Result<u64, Fault>) -> Result<StepResult<u64>, Fault> {
        self.next = None;
        self.result = Some(r.clone());
        r.map(StepResult::Done)
    }

    /// Performs the next step. `now` is only read by `ReadClock`. Stepping a
    /// finished call returns its result again and changes nothing.
    pub fn step<E: FrequencyEstimator>(
        &mut self,
        rate: &mut Rate<E>,
        now: Nanos,
    ) -> Result<StepResult<u64>, Fault> {
        let Some(step) = self.next else {
            return match &self.result {
                Some(r) => r.clone().map(StepResult::Done),
                None => Ok(StepResult::Continue),
            };
        };
        match step {
            ResetStep::ReadClock => {
                self.now = rate.elapsed_ms(now);
                self.next = Some(ResetStep::LoadLastReset);
                Ok(StepResult::Continue)
            }
            ResetStep::LoadLastReset => {
                self.last_reset = rate.last_reset_time;
                match rate.past(self.now, self.last_reset) {
                    Err(fault) => self.finish(Err(fault)),
                    Ok(past_ms) => {
                        self.past_ms = past_ms;
                        if past_ms < rate.reset_interval_ms {
                            self.finish(Ok(past_ms))
                        } else {
                            self.next = Some(ResetStep::LoadFlag);
                            Ok(StepResult::Continue)
                        }
                    }
                }
            }
            ResetStep::LoadFlag => {
                self.red_or_blue = rate.red_or_blue;
                self.next = Some(ResetStep::CompareExchange);
                Ok(StepResult::Continue)
            }
            ResetStep::CompareExchange => {
                if rate.last_reset_time == self.last_reset {
                    rate.last_reset_time = self.now;
                    self.cas = Some(CasOutcome::Won);
                    self.next = Some(ResetStep::ClearPrevious);
                    Ok(StepResult::Continue)
                } else {
                    let new = rate.last_reset_time;
                    self.cas = Some(CasOutcome::Lost { new });
                    let checked = rate.loser_check(new, self.now);
                    self.finish(checked.map(|()| self.past_ms))
                }
            }
            ResetStep::ClearPrevious => {
                rate.previous_mut(self.red_or_blue).reset();
                self.next = Some(ResetStep::Flip);
                Ok(StepResult::Continue)
            }
            ResetStep::Flip => {
                rate.red_or_blue = !self.red_or_blue;
                // rate.rs:167 recomputes `now - last_reset` from the same
                // locals; in a debug build it cannot fail if :147 did not.
                let stale = rate
                    .past(self.now, self.last_reset)
                    .and_then(|past| Ok(past >= rate.double_interval(DoubleSite::MaybeReset)?));
                match stale {
                    Err(fault) => self.finish(Err(fault)),
                    Ok(true) => {
                        self.next = Some(ResetStep::ClearStale);
                        Ok(StepResult::Continue)
                    }
                    Ok(false) => self.finish(Ok(self.past_ms)),
                }
            }
            ResetStep::ClearStale => {
                // "this is the previous one now because we just flipped"
                rate.current_mut(self.red_or_blue).reset();
                self.finish(Ok(self.past_ms))
            }
        }
    }
}

/// One `observe` call as steps: the [`MaybeReset`] steps, then `Incr` (the
/// flag load and the sketch's `incr`, one step: no other thread's step can
/// change whether the real call panics in between).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ObserveOp {
    reset: MaybeReset,
    past_ms: Option<u64>,
    done: Option<Result<i64, Fault>>,
}

/// A step of [`ObserveOp`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum ObserveStep {
    /// A step of `maybe_reset`.
    Reset(ResetStep),
    /// `current(red_or_blue()).incr(key, events)` (rate.rs:139).
    Incr,
}

impl ObserveOp {
    /// An `observe` call that has not started.
    pub fn new() -> Self {
        Self::default()
    }

    /// The next step; `None` once finished.
    pub fn next_step(&self) -> Option<ObserveStep> {
        if self.done.is_some() {
            return None;
        }
        match self.reset.next_step() {
            Some(s) => Some(ObserveStep::Reset(s)),
            None => Some(ObserveStep::Incr),
        }
    }

    /// The inner `maybe_reset` machine.
    pub fn reset(&self) -> &MaybeReset {
        &self.reset
    }

    /// `maybe_reset`'s `past_ms`, once it returned.
    pub fn past_ms(&self) -> Option<u64> {
        self.past_ms
    }

    /// Performs the next step. A fault ends the call (the real thread
    /// panics); stepping a finished call returns its result again.
    pub fn step<E: FrequencyEstimator>(
        &mut self,
        rate: &mut Rate<E>,
        now: Nanos,
        key: &[u8],
        events: i64,
    ) -> Result<StepResult<i64>, Fault> {
        if let Some(done) = &self.done {
            return done.clone().map(StepResult::Done);
        }
        if self.reset.next_step().is_some() {
            return match self.reset.step(rate, now) {
                Ok(StepResult::Continue) => Ok(StepResult::Continue),
                Ok(StepResult::Done(past_ms)) => {
                    self.past_ms = Some(past_ms);
                    Ok(StepResult::Continue)
                }
                Err(fault) => {
                    self.done = Some(Err(fault.clone()));
                    Err(fault)
                }
            };
        }
        let r = rate.incr_current(key, events);
        self.done = Some(r.clone());
        r.map(StepResult::Done)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::SECOND;
    use crate::model::estimator::{ExactCounter, Overflow};

    const MS: Nanos = MILLI;

    fn exact(interval: Duration, start: Nanos) -> Rate<ExactCounter> {
        Rate::from_slots(interval, start, ExactCounter::new(), ExactCounter::new())
    }

    /// A3: interval 1 s, 10 events in the first 450 ms (at 0, 50, …, 450 ms),
    /// then at each read time `rate()` and then `rate_with(proportional)`.
    #[test]
    fn a3_timeline_is_exact() {
        let mut r = Rate::new(Duration::from_secs(1), 0, 7);
        for i in 0..10u64 {
            assert_eq!(r.observe(b"k", 1, i * 50 * MS), Ok(i as i64 + 1));
        }
        let reads = [456u64, 902, 1108, 1510, 2104, 3208];
        let mut rates = Vec::new();
        let mut props = Vec::new();
        for t in reads {
            rates.push(r.rate(b"k", t * MS).unwrap());
            props.push(
                r.rate_with(b"k", t * MS, proportional_rate_estimate)
                    .unwrap(),
            );
            if t == 1108 {
                // This read flipped: the new window starts at 1108 ms.
                assert_eq!(r.last_reset_ms(), 1108);
                assert_eq!(r.window_start(), 1108 * MS);
            }
        }
        assert_eq!(rates, vec![0.0, 0.0, 10.0, 10.0, 10.0, 0.0]);
        // Fractions 0.456, 0.902, 0 (flipped by the rate() just before),
        // 402/1000, 996/1000, 0 (both slots cleared).
        let expected = [
            10.0,
            10.0,
            10.0,
            10.0 * (1.0 - 402.0 / 1000.0),
            10.0 * (1.0 - 996.0 / 1000.0),
            0.0,
        ];
        assert_eq!(props, expected.to_vec());
        assert!((props[3] - 5.98).abs() < 1e-12);
        assert!((props[4] - 0.04).abs() < 1e-12);
        // The table prints {:.1}: 6.0 and 0.0.
        assert_eq!(format!("{:.1}", props[3]), "6.0");
        assert_eq!(format!("{:.1}", props[4]), "0.0");
        assert_eq!(r.last_reset_ms(), 3208);
    }

    #[test]
    fn a3_order_matters_rate_with_first_at_the_flip() {
        // If rate_with is the call that flips at 1108, it sees the pre-flip
        // past_ms = 1108: prev = 10, curr = 0, fraction = 108/1000.
        let mut r = exact(Duration::from_secs(1), 0);
        for i in 0..10u64 {
            r.observe(b"k", 1, i * 50 * MS).unwrap();
        }
        let c = r.components(b"k", 1108 * MS).unwrap();
        assert_eq!((c.prev_samples, c.curr_samples), (10, 0));
        assert_eq!(c.current_interval_fraction, 108.0 / 1000.0);
        assert_eq!(proportional_rate_estimate(c), 10.0 * (1.0 - 0.108));
    }

    #[test]
    fn time_is_whole_ms_since_a_virtual_start() {
        let start = 5 * SECOND + 123_456;
        let mut r = exact(Duration::from_millis(100), start);
        r.observe(b"a", 1, start).unwrap();
        // 99.999999 ms after start truncates to 99 ms: no flip.
        assert_eq!(r.maybe_reset(start + 100 * MS - 1), Ok(99));
        assert_eq!(r.observe(b"a", 1, start + 100 * MS - 1), Ok(2));
        // exactly 100 ms: flips, returns the pre-flip past_ms.
        assert_eq!(r.maybe_reset(start + 100 * MS), Ok(100));
        assert_eq!(r.last_reset_ms(), 100);
        assert_eq!(r.observe(b"a", 1, start + 100 * MS), Ok(1));
        // before start: duration_since saturates to 0 ms.
        let mut r = exact(Duration::from_millis(100), start);
        assert_eq!(r.elapsed_ms(start - 1), 0);
        assert_eq!(r.maybe_reset(0), Ok(0));
    }

    #[test]
    fn real_crate_unit_test_observe_rate() {
        // pingora's own test_observe_rate, on the virtual clock.
        let mut r = Rate::new(Duration::from_secs(1), 0, 1);
        assert_eq!(r.observe(b"1", 3, 0), Ok(3));
        assert_eq!(r.observe(b"1", 2, 0), Ok(5));
        assert_eq!(r.rate(b"1", 0), Ok(0.0));
        assert_eq!(r.observe(b"1", 4, SECOND), Ok(4));
        assert_eq!(r.rate(b"1", SECOND), Ok(5.0));
        assert_eq!(r.rate(b"1", 2 * SECOND), Ok(4.0));
        assert_eq!(r.rate(b"1", 3 * SECOND), Ok(0.0));
    }

    #[test]
    fn real_crate_unit_test_custom_90_10() {
        let f = |c: RateComponents| {
            (c.prev_samples as f64 * 0.1 + c.curr_samples as f64 * 0.9) / c.interval.as_secs_f64()
        };
        let mut r = Rate::new(Duration::from_secs(1), 0, 1);
        r.observe(b"1", 3, 0).unwrap();
        r.observe(b"1", 2, 0).unwrap();
        assert_eq!(r.rate_with(b"1", 0, f), Ok(5. * 0.9));
        assert_eq!(r.observe(b"1", 4, SECOND), Ok(4));
        assert_eq!(r.rate_with(b"1", SECOND, f), Ok(5. * 0.1 + 4. * 0.9));
        assert_eq!(r.rate_with(b"1", 2 * SECOND, f), Ok(4. * 0.1));
        assert_eq!(r.rate_with(b"1", 3 * SECOND, f), Ok(0.0));
    }

    #[test]
    fn two_intervals_clear_both_slots() {
        let mut r = exact(Duration::from_millis(10), 0);
        r.observe(b"a", 5, 0).unwrap();
        r.observe(b"a", 7, 12 * MS).unwrap(); // flip at 12: prev = 5
        assert_eq!(r.previous_slot().get(b"a"), 5);
        // 31 - 12 = 19 < 20: ordinary flip, prev = 7.
        assert_eq!(r.maybe_reset(31 * MS), Ok(19));
        assert_eq!(r.previous_slot().get(b"a"), 7);
        // 51 - 31 = 20 >= 20: both cleared, rate 0 even though prev existed.
        r.observe(b"a", 3, 35 * MS).unwrap();
        assert_eq!(r.rate(b"a", 51 * MS), Ok(0.0));
        assert_eq!(r.previous_slot().get(b"a"), 0);
        assert_eq!(r.current_slot().get(b"a"), 0);
        assert_eq!(r.last_reset_ms(), 51);
    }

    #[test]
    fn rate_uses_truncated_ms_but_proportional_uses_the_duration() {
        // 1.5 ms: reset_interval_ms = 1, as_secs_f64 = 0.0015.
        let mut r = exact(Duration::from_micros(1500), 0);
        assert_eq!(r.reset_interval_ms(), 1);
        r.observe(b"a", 3, 0).unwrap();
        assert_eq!(r.rate(b"a", MS), Ok(3.0 * 1000.0 / 1.0));
        let p = r.rate_with(b"a", MS, proportional_rate_estimate).unwrap();
        assert_eq!(p, 3.0 / 0.0015);
        assert_ne!(p, 3000.0);
    }

    #[test]
    fn zero_ms_interval_faults_in_rate_with_only() {
        for build in [Build::Release, Build::Debug] {
            let mut r = exact(Duration::from_micros(500), 0).with_build(build);
            assert_eq!(r.reset_interval_ms(), 0);
            // every call flips and clears both slots
            assert_eq!(r.observe(b"a", 2, 0), Ok(2));
            assert_eq!(r.observe(b"a", 2, 0), Ok(2));
            assert_eq!(r.rate(b"a", 0), Ok(0.0));
            let err = r.rate_with(b"a", 0, proportional_rate_estimate);
            assert_eq!(err, Err(remainder_by_zero_fault()));
            let mut fixed = exact(Duration::from_micros(500), 0).with_fixes(RateFixes {
                zero_interval_fraction: true,
                ..RateFixes::NONE
            });
            let c = fixed.components(b"a", 0).unwrap();
            assert_eq!(c.current_interval_fraction, 0.0);
        }
        assert_eq!(
            remainder_by_zero_fault().location,
            "pingora-limits-0.9.0/src/rate.rs:217:40"
        );
    }

    #[test]
    fn doubling_overflows_only_in_debug() {
        let huge = Duration::from_millis(u64::MAX);
        let mut dbg = exact(huge, 0).with_build(Build::Debug);
        assert_eq!(dbg.observe(b"a", 1, 0), Ok(1));
        assert_eq!(
            dbg.rate(b"a", 0),
            Err(multiply_overflow_fault(DoubleSite::Rate))
        );
        assert_eq!(
            dbg.components(b"a", 0).map(|_| ()),
            Err(multiply_overflow_fault(DoubleSite::RateWith))
        );
        let mut rel = exact(huge, 0);
        assert_eq!(rel.rate(b"a", 0), Ok(0.0));
        let mut fixed = exact(huge, 0)
            .with_build(Build::Debug)
            .with_fixes(RateFlavor::Fixed.fixes());
        assert_eq!(fixed.rate(b"a", 0), Ok(0.0));
        assert_eq!(
            multiply_overflow_fault(DoubleSite::MaybeReset).location,
            "pingora-limits-0.9.0/src/rate.rs:167:40"
        );
    }

    #[test]
    fn step_machine_single_thread_sequence() {
        let mut r = exact(Duration::from_millis(10), 0);
        r.observe(b"a", 1, 0).unwrap();
        // Not due: ReadClock, LoadLastReset, done.
        let mut op = MaybeReset::new();
        let mut seen = Vec::new();
        while let Some(s) = op.next_step() {
            seen.push(s);
            op.step(&mut r, 5 * MS).unwrap();
        }
        assert_eq!(seen, vec![ResetStep::ReadClock, ResetStep::LoadLastReset]);
        assert_eq!(op.result(), Some(&Ok(5)));
        // Due after 2 intervals: all seven steps.
        let mut op = MaybeReset::new();
        let mut seen = Vec::new();
        while let Some(s) = op.next_step() {
            seen.push(s);
            op.step(&mut r, 25 * MS).unwrap();
        }
        use ResetStep::*;
        assert_eq!(
            seen,
            vec![
                ReadClock,
                LoadLastReset,
                LoadFlag,
                CompareExchange,
                ClearPrevious,
                Flip,
                ClearStale
            ]
        );
        assert_eq!(op.cas_outcome(), Some(CasOutcome::Won));
        assert!(!r.red_is_current());
        // stepping a finished call is a no-op returning the same value
        assert_eq!(op.step(&mut r, 99 * MS), Ok(StepResult::Done(25)));
        assert_eq!(r.last_reset_ms(), 25);
    }

    /// Two callers race one flip inside the first second (interval < 1 s):
    /// the loser faults, with the build's message.
    fn race_two(build: Build, fixes: RateFixes, t: Nanos) -> Result<u64, Fault> {
        let mut r = exact(Duration::from_millis(10), 0)
            .with_build(build)
            .with_fixes(fixes);
        let (mut a, mut b) = (MaybeReset::new(), MaybeReset::new());
        for _ in 0..3 {
            a.step(&mut r, t).unwrap(); // ReadClock, LoadLastReset, LoadFlag
            b.step(&mut r, t).unwrap();
        }
        assert_eq!(a.step(&mut r, t), Ok(StepResult::Continue)); // a wins
        let lost = b.step(&mut r, t);
        assert_eq!(b.cas_outcome(), Some(CasOutcome::Lost { new: t / MS }));
        lost.map(|s| match s {
            StepResult::Done(p) => p,
            StepResult::Continue => u64::MAX,
        })
    }

    #[test]
    fn cas_loser_in_first_second_faults_per_build() {
        let rel = race_two(Build::Release, RateFixes::NONE, 10 * MS).unwrap_err();
        assert_eq!(rel.message, "assertion failed: new >= now - 1000");
        assert_eq!(rel.location, "pingora-limits-0.9.0/src/rate.rs:174:17");
        let dbg = race_two(Build::Debug, RateFixes::NONE, 10 * MS).unwrap_err();
        assert_eq!(dbg.message, "attempt to subtract with overflow");
        assert_eq!(dbg.location, "pingora-limits-0.9.0/src/rate.rs:174:32");
        // After the first second the loser is fine in both builds.
        assert_eq!(
            race_two(Build::Release, RateFixes::NONE, 1000 * MS),
            Ok(1000)
        );
        assert_eq!(race_two(Build::Debug, RateFixes::NONE, 1000 * MS), Ok(1000));
        // Fixed: no fault in the first second either.
        let fix = RateFixes {
            loser_assert_saturating: true,
            ..RateFixes::NONE
        };
        assert_eq!(race_two(Build::Release, fix, 10 * MS), Ok(10));
        assert_eq!(race_two(Build::Debug, fix, 10 * MS), Ok(10));
    }

    #[test]
    fn stale_clock_reading_moves_the_window_backwards_in_release() {
        // Thread A reads the clock at 19 ms, thread B at 20 ms; B flips first
        // (last_reset 0 -> 20), then A loads last_reset = 20 > 19.
        let setup = |build: Build, fixes: RateFixes| {
            let mut r = exact(Duration::from_millis(10), 0)
                .with_build(build)
                .with_fixes(fixes);
            r.observe(b"k", 4, 0).unwrap();
            r.observe(b"k", 3, 12 * MS).unwrap(); // flip at 12, prev = 4
            r.observe(b"k", 6, 19 * MS).unwrap();
            let mut a = MaybeReset::new();
            a.step(&mut r, 21 * MS).unwrap(); // ReadClock: 21
            assert_eq!(r.maybe_reset(22 * MS), Ok(10)); // B flips at 22
            r.observe(b"k", 2, 22 * MS).unwrap();
            (r, a)
        };
        // Release: past = 21 - 22 wraps, A wins the CAS 22 -> 21 and clears
        // both slots.
        let (mut r, mut a) = setup(Build::Release, RateFixes::NONE);
        let mut last = Ok(StepResult::Continue);
        while a.next_step().is_some() {
            last = a.step(&mut r, 0);
        }
        assert_eq!(last, Ok(StepResult::Done(u64::MAX)));
        assert_eq!(r.last_reset_ms(), 21);
        assert_eq!(r.current_slot().get(b"k"), 0);
        assert_eq!(r.previous_slot().get(b"k"), 0);
        // Debug: the subtraction panics.
        let (mut r, mut a) = setup(Build::Debug, RateFixes::NONE);
        assert_eq!(a.step(&mut r, 0), Err(past_ms_subtract_fault()));
        assert_eq!(r.last_reset_ms(), 22);
        // Fixed: past 0, nothing happens.
        let (mut r, mut a) = setup(Build::Debug, RateFlavor::Fixed.fixes());
        assert_eq!(a.step(&mut r, 0), Ok(StepResult::Done(0)));
        assert_eq!(r.current_slot().get(b"k"), 2);
        assert_eq!(r.previous_slot().get(b"k"), 6 + 3);
    }

    #[test]
    fn observe_is_the_composition_of_steps() {
        let mut a = exact(Duration::from_millis(10), 0);
        let mut b = exact(Duration::from_millis(10), 0);
        for (i, t) in [0u64, 3, 10, 11, 25, 26, 60, 61, 69, 70].iter().enumerate() {
            let key = [i as u8 % 3];
            let via_api = a.observe(&key, 2, t * MS);
            let mut op = ObserveOp::new();
            let mut steps = 0;
            let via_steps = loop {
                steps += 1;
                match op.step(&mut b, t * MS, &key, 2) {
                    Ok(StepResult::Done(v)) => break Ok(v),
                    Ok(StepResult::Continue) => {}
                    Err(e) => break Err(e),
                }
            };
            assert_eq!(via_api, via_steps);
            assert!(steps >= 3);
            assert_eq!(op.next_step(), None);
            assert_eq!(a.last_reset_ms(), b.last_reset_ms());
            assert_eq!(a.red_is_current(), b.red_is_current());
        }
    }

    #[test]
    fn sketch_overflow_fault_passes_through_observe() {
        let mut cfg = EstimatorConfig::new(1, 1);
        cfg.overflow = Overflow::Checked;
        let mut r = Rate::new_with_estimator_config(Duration::from_secs(1), 0, cfg, 3);
        assert_eq!(r.observe(b"a", i64::MAX, 0), Ok(i64::MAX));
        let fault = r.observe(b"a", 1, 0).unwrap_err();
        assert_eq!(fault.message, "attempt to add with overflow");
    }

    #[test]
    fn default_rate_uses_two_4x1024_sketches_with_different_seeds() {
        let r = Rate::new(Duration::from_secs(1), 0, 11);
        assert_eq!(r.current_slot().config().hashes, RATE_HASHES);
        assert_eq!(r.current_slot().config().slots, RATE_SLOTS);
        assert_eq!(r.current_slot().memory_bytes(), 32 * 1024);
        assert_ne!(
            r.current_slot().cells(b"key"),
            r.previous_slot().cells(b"key")
        );
    }

    #[test]
    fn static_fn_matches_the_function() {
        let c = RateComponents {
            prev_samples: 8,
            curr_samples: 3,
            interval: Duration::from_millis(500),
            current_interval_fraction: 0.25,
        };
        assert_eq!(
            PROPORTIONAL_RATE_ESTIMATE_CALC_FN(c),
            (8.0 * 0.75 + 3.0) / 0.5
        );
    }

    /// The real crate, in real time, against the model fed the same ms
    /// offsets. Interval 200 ms; every call is at least 50 ms away from 200 or
    /// 400 ms after the last flip, so sleep jitter cannot change a flip. The
    /// fraction is the only value that depends on the exact millisecond: it
    /// is compared with a 25 ms tolerance, everything else exactly.
    #[test]
    fn conforms_to_real_pingora_rate() {
        use pingora_limits::rate::{Rate as Real, RateComponents as RealComponents};
        use std::time::Instant;

        #[derive(Debug, Clone, Copy)]
        enum Call {
            Observe(&'static str, isize),
            Rate(&'static str),
            RateWith(&'static str),
        }
        use Call::*;
        let schedule: &[(u64, Call)] = &[
            (0, Observe("a", 1)),
            (40, Observe("a", 2)),
            (40, Observe("b", 1)),
            (100, Rate("a")),
            (100, RateWith("a")),
            (250, Observe("a", 1)), // flips at 250
            (300, Rate("a")),
            (300, Rate("b")),
            (300, RateWith("b")),
            (380, Observe("c", 5)),
            (520, Observe("b", 1)), // flips at 520
            (600, Rate("c")),
            (600, Rate("a")),
            (600, RateWith("a")),
            (1000, Rate("a")), // 480 ms >= 2 intervals: clears both
            (1050, RateWith("b")),
            (1050, Observe("a", 1)),
            (1150, Observe("a", 1)),
            (1150, Rate("a")),
            (1260, Rate("a")), // flips at 1260
            (1260, RateWith("a")),
        ];
        let interval = Duration::from_millis(200);
        let real = Real::new(interval);
        let t0 = Instant::now();
        let mut model = exact(interval, 0);
        for &(at, call) in schedule {
            let target = t0 + Duration::from_millis(at);
            let now = Instant::now();
            if target > now {
                std::thread::sleep(target - now);
            }
            let v = at * MS;
            match call {
                Observe(k, n) => {
                    let got = real.observe(&k, n);
                    let want = model.observe(k.as_bytes(), n as i64, v).unwrap();
                    assert_eq!(got as i64, want, "observe {k} at {at}");
                }
                Rate(k) => {
                    let got = real.rate(&k);
                    let want = model.rate(k.as_bytes(), v).unwrap();
                    assert_eq!(got, want, "rate {k} at {at}");
                }
                RateWith(k) => {
                    let got = real.rate_with(&k, |c: RealComponents| c);
                    let want = model.components(k.as_bytes(), v).unwrap();
                    assert_eq!(got.prev_samples as i64, want.prev_samples, "{k}@{at}");
                    assert_eq!(got.curr_samples as i64, want.curr_samples, "{k}@{at}");
                    assert_eq!(got.interval, want.interval);
                    let d = (got.current_interval_fraction - want.current_interval_fraction).abs();
                    assert!(d <= 0.125, "fraction {k}@{at}: {got:?} vs {want:?}");
                }
            }
        }
        assert_eq!(model.last_reset_ms(), 1260);
        assert!(t0.elapsed() < Duration::from_secs(3));
    }

    #[test]
    fn real_crate_zero_interval_panics_like_the_model() {
        use pingora_limits::rate::{Rate as Real, PROPORTIONAL_RATE_ESTIMATE_CALC_FN as F};
        let real = Real::new(Duration::from_micros(500));
        assert_eq!(real.observe(&"a", 2), 2);
        assert_eq!(real.rate(&"a"), 0.0);
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            real.rate_with(&"a", F);
        }));
        let payload = caught.unwrap_err();
        let msg = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap();
        assert_eq!(msg, remainder_by_zero_fault().message);
    }
}
