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
    /// instead of the underflowing `now - 1000` (rate.rs:174). Removes the first-second
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
///
/// # Examples
///
/// The write-up's sequence: ten events in the first 450 ms, then `rate()`
/// reads only the *previous* window, which a read after one interval flips in.
///
/// ```
/// use ratelab::clock::MILLI;
/// use ratelab::model::rate::Rate;
/// use std::time::Duration;
///
/// let mut r = Rate::new(Duration::from_secs(1), 0, 1);
/// for i in 0..10 {
///     assert_eq!(r.observe(b"k", 1, i * 50 * MILLI).unwrap(), (i + 1) as i64);
/// }
/// assert_eq!(r.rate(b"k", 456 * MILLI).unwrap(), 0.0); // still the first window
/// assert_eq!(r.rate(b"k", 1108 * MILLI).unwrap(), 10.0); // flipped: 10 events per 1 s
/// assert_eq!(r.window_start(), 1108 * MILLI); // the new window starts at the read
/// ```
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
        // Most calls fall inside the current window: then the machine's
        // first two steps (read the clock, load the last reset) are all it
        // does, read here directly (a call from one thread has no other
        // thread's step in between to see).
        if let Ok(past_ms) = self.past(self.elapsed_ms(now), self.last_reset_time)
            && past_ms < self.reset_interval_ms
        {
            return Ok(past_ms);
        }
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
    ///
    /// Exactly [`ObserveOp`]'s steps run back to back: `maybe_reset`, then
    /// the increment (a test holds the two to each other).
    pub fn observe(&mut self, key: &[u8], events: i64, now: Nanos) -> Result<i64, Fault> {
        self.maybe_reset(now)?;
        self.incr_current(key, events)
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
mod tests;
