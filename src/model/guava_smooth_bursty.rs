//! A faithful model of Guava's `RateLimiter.create(permitsPerSecond)`,
//! which is `SmoothRateLimiter.SmoothBursty` with `maxBurstSeconds = 1.0`.
//!
//! Sources read (google/guava, `guava/src/com/google/common/util/concurrent/`):
//! * `RateLimiter.java` (the version with `SleepingStopwatch` and
//!   `mutexDoNotUseDirectly`, as in every release since 16.0):
//!   `create(double)` → `create(permitsPerSecond,
//!   SleepingStopwatch.createFromSystemTimer())` → `new SmoothBursty(stopwatch,
//!   1.0 /* maxBurstSeconds */)` then `setRate`; `setRate` checks
//!   `permitsPerSecond > 0.0 && !Double.isNaN(permitsPerSecond)` ("rate must be
//!   positive") and calls `doSetRate(permitsPerSecond, stopwatch.readMicros())`;
//!   `tryAcquire(int permits)` = `tryAcquire(permits, 0, MICROSECONDS)`:
//!   `timeoutMicros = max(unit.toMicros(timeout), 0)`, `checkPermits`
//!   (`permits > 0`, "Requested permits (%s) must be positive"), then under
//!   the mutex `nowMicros = stopwatch.readMicros()`, `canAcquire(nowMicros,
//!   timeoutMicros)` = `queryEarliestAvailable(nowMicros) - timeoutMicros <=
//!   nowMicros`, and if so `reserveAndGetWaitLength(permits, nowMicros)` =
//!   `max(reserveEarliestAvailable(permits, nowMicros) - nowMicros, 0)`.
//!   `createFromSystemTimer` starts a `Stopwatch` at creation and
//!   `readMicros()` is `stopwatch.elapsed(MICROSECONDS)`: elapsed nanoseconds
//!   truncated to microseconds.
//! * `SmoothRateLimiter.java` (commit `07212fe`): `doSetRate(double, long)`
//!   does `resync(nowMicros)`, `stableIntervalMicros = SECONDS.toMicros(1L) /
//!   permitsPerSecond`, then `SmoothBursty.doSetRate`: `maxPermits =
//!   maxBurstSeconds * permitsPerSecond`; `storedPermits = maxPermits` if the
//!   old max was `+inf`, **`0.0` if the old max was `0.0` (the initial
//!   state)**, else scaled. `queryEarliestAvailable` returns
//!   `nextFreeTicketMicros`; `reserveEarliestAvailable` resyncs, returns the
//!   *old* `nextFreeTicketMicros`, spends `min(requiredPermits,
//!   storedPermits)` stored permits (free for `SmoothBursty`:
//!   `storedPermitsToWaitTime` is `0L`) and pushes `nextFreeTicketMicros` by
//!   `(long) (freshPermits * stableIntervalMicros)` with
//!   `LongMath.saturatedAdd`; `resync` adds `(nowMicros -
//!   nextFreeTicketMicros) / coolDownIntervalMicros()` (=
//!   `stableIntervalMicros`) to `storedPermits`, capped with `min(maxPermits,
//!   …)`, and moves `nextFreeTicketMicros` to `nowMicros`, only when `nowMicros
//!   > nextFreeTicketMicros`.
//!
//! # What follows from the source
//! * **A fresh limiter has no stored permits** (`storedPermits = 0.0`,
//!   `nextFreeTicketMicros = 0`), yet its first request passes whatever its
//!   weight: it is served at `nextFreeTicket = 0 <= now` and *pre-pays* the
//!   next one, pushing `nextFreeTicketMicros` by `w × stableInterval`. So a
//!   fresh `create(5.0)` passes one request at once, not five; five stored
//!   permits need one idle second first (`RateLimiterTest.testOneSecondBurst`).
//! * The first request after an idle period always passes and pushes the
//!   next free ticket by the permits it could not take from storage: a burst
//!   of `maxPermits` is followed by one more "free" request.
//! * `tryAcquire(w)` never waits: it passes iff `nextFreeTicketMicros <=
//!   nowMicros`, independent of `w`. The weight only decides how far the
//!   *next* request is pushed.
//! * Times are microseconds since the limiter's creation, truncated from
//!   nanoseconds, so two requests in the same microsecond see the same time.
//! * Doubles follow Java's operation order; `(long)` casts truncate toward
//!   zero and saturate (NaN becomes 0), which is what Rust's `as i64` does;
//!   `Math.min` returns NaN if either operand is NaN ([`java_min`]).
//! * `permitsPerSecond = +inf` is accepted (every request passes, waits are
//!   `(long) (w × 0.0) = 0`); `Double.MIN_VALUE` gives an infinite stable
//!   interval, so the first request pushes the next ticket to
//!   `Long.MAX_VALUE` and nothing passes again
//!   (`testDoubleMinValueCanAcquireExactlyOnce`).
//!
//! # As a lab limiter
//! A request of weight `w` is `tryAcquire(w)`; Java's `int permits` means
//! `w` must be in `1..=i32::MAX` (0 is Guava's `IllegalArgumentException`,
//! reported as an error). Each key's limiter is created at the key's first
//! request ([`crate::model::PerKey`] passes that time), which is when Guava's
//! stopwatch would start.

use crate::clock::Nanos;
use crate::error::{Error, Result};
use crate::model::{Decision, KeyState};

/// Java's `Math.min(double, double)`: NaN if either is NaN, and `-0.0` is
/// smaller than `0.0`.
pub fn java_min(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        return f64::NAN;
    }
    if a == 0.0 && b == 0.0 {
        return if a.is_sign_negative() { a } else { b };
    }
    if a <= b {
        a
    } else {
        b
    }
}

/// `SECONDS.toMicros(1L)` as the `double` Java divides.
const MICROS_PER_SECOND: f64 = 1_000_000.0;

/// Guava's `SmoothBursty` with its `SleepingStopwatch`.
#[derive(Debug, Clone, PartialEq)]
pub struct GuavaSmoothBursty {
    /// When the stopwatch was started (virtual ns).
    started_at: Nanos,
    /// `maxBurstSeconds` (1.0 for `RateLimiter.create`).
    max_burst_seconds: f64,
    /// `storedPermits`.
    stored_permits: f64,
    /// `maxPermits`.
    max_permits: f64,
    /// `stableIntervalMicros`.
    stable_interval_micros: f64,
    /// `nextFreeTicketMicros`.
    next_free_ticket_micros: i64,
}

impl GuavaSmoothBursty {
    /// `RateLimiter.create(permitsPerSecond)` with the stopwatch started at
    /// `now`.
    ///
    /// # Errors
    /// `permits_per_second` must be `> 0.0` and not NaN (Guava's
    /// `setRate` check); `+inf` is accepted, as upstream does.
    ///
    /// # Examples
    /// ```
    /// use ratelab::clock::MILLI;
    /// use ratelab::model::guava_smooth_bursty::GuavaSmoothBursty;
    /// let mut r = GuavaSmoothBursty::create(5.0, 0)?;
    /// assert!(r.try_acquire(1, 0)?);          // the first request pre-pays
    /// assert!(!r.try_acquire(1, 0)?);         // the next ticket is at 200 ms
    /// assert!(!r.try_acquire(1, 199 * MILLI)?);
    /// assert!(r.try_acquire(1, 200 * MILLI)?);
    /// assert!(GuavaSmoothBursty::create(0.0, 0).is_err());
    /// assert!(GuavaSmoothBursty::create(f64::NAN, 0).is_err());
    /// # Ok::<(), ratelab::error::Error>(())
    /// ```
    pub fn create(permits_per_second: f64, now: Nanos) -> Result<Self> {
        Self::with_max_burst_seconds(permits_per_second, 1.0, now)
    }

    /// `new SmoothBursty(stopwatch, maxBurstSeconds)` then `setRate` (the
    /// package-private constructor; `create` uses 1.0).
    ///
    /// # Errors
    /// A bad rate as in [`GuavaSmoothBursty::create`]; `max_burst_seconds`
    /// must be finite and `>= 0` (Guava does not check it; a negative or
    /// NaN value makes `maxPermits` meaningless).
    pub fn with_max_burst_seconds(
        permits_per_second: f64,
        max_burst_seconds: f64,
        now: Nanos,
    ) -> Result<Self> {
        if !(max_burst_seconds.is_finite() && max_burst_seconds >= 0.0) {
            return Err(Error::input(format!(
                "guava: max_burst_seconds {max_burst_seconds}: expected a finite number >= 0"
            )));
        }
        let mut r = Self {
            started_at: now,
            max_burst_seconds,
            stored_permits: 0.0,
            max_permits: 0.0,
            stable_interval_micros: 0.0,
            next_free_ticket_micros: 0,
        };
        r.set_rate(permits_per_second, now)?;
        Ok(r)
    }

    /// `stopwatch.readMicros()`: elapsed ns since creation, truncated to µs.
    pub fn read_micros(&self, now: Nanos) -> i64 {
        (now.saturating_sub(self.started_at) / 1_000) as i64
    }

    /// `RateLimiter.setRate(permitsPerSecond)`.
    ///
    /// # Errors
    /// "rate must be positive" for `<= 0` or NaN.
    pub fn set_rate(&mut self, permits_per_second: f64, now: Nanos) -> Result<()> {
        // checkArgument(permitsPerSecond > 0.0 && !Double.isNaN(permitsPerSecond)).
        if permits_per_second <= 0.0 || permits_per_second.is_nan() {
            return Err(Error::input(format!(
                "guava: permits_per_second {permits_per_second}: rate must be positive"
            )));
        }
        let now_micros = self.read_micros(now);
        // SmoothRateLimiter.doSetRate(double, long)
        self.resync(now_micros);
        let stable_interval_micros = MICROS_PER_SECOND / permits_per_second;
        self.stable_interval_micros = stable_interval_micros;
        // SmoothBursty.doSetRate(double, double)
        let old_max_permits = self.max_permits;
        self.max_permits = self.max_burst_seconds * permits_per_second;
        if old_max_permits == f64::INFINITY {
            self.stored_permits = self.max_permits;
        } else {
            self.stored_permits = if old_max_permits == 0.0 {
                0.0
            } else {
                self.stored_permits * self.max_permits / old_max_permits
            };
        }
        Ok(())
    }

    /// `getRate()` = `SECONDS.toMicros(1L) / stableIntervalMicros`.
    pub fn rate(&self) -> f64 {
        MICROS_PER_SECOND / self.stable_interval_micros
    }

    /// `storedPermits`.
    pub fn stored_permits(&self) -> f64 {
        self.stored_permits
    }

    /// `maxPermits`.
    pub fn max_permits(&self) -> f64 {
        self.max_permits
    }

    /// `nextFreeTicketMicros` (µs since creation).
    pub fn next_free_ticket_micros(&self) -> i64 {
        self.next_free_ticket_micros
    }

    /// `tryAcquire(permits)`: `tryAcquire(permits, 0, MICROSECONDS)`.
    ///
    /// # Errors
    /// `permits <= 0` (Guava's `IllegalArgumentException`).
    pub fn try_acquire(&mut self, permits: i32, now: Nanos) -> Result<bool> {
        Ok(self.try_acquire_timeout(permits, 0, now)?.is_some())
    }

    /// `tryAcquire(permits, timeout, MICROSECONDS)`; a negative timeout is
    /// treated as zero, as upstream does. `Some(micros)` when the permits
    /// were reserved: the microseconds the caller then sleeps (0 for
    /// `tryAcquire(permits)`), `None` when `tryAcquire` returns false.
    ///
    /// # Errors
    /// `permits <= 0`.
    pub fn try_acquire_timeout(
        &mut self,
        permits: i32,
        timeout_micros: i64,
        now: Nanos,
    ) -> Result<Option<i64>> {
        let timeout_micros = timeout_micros.max(0);
        check_permits(permits)?;
        let now_micros = self.read_micros(now);
        if !self.can_acquire(now_micros, timeout_micros) {
            return Ok(None);
        }
        Ok(Some(self.reserve_and_get_wait_length(permits, now_micros)))
    }

    /// `acquire(permits)`: reserves and returns the microseconds the caller
    /// sleeps (`reserve(permits)`).
    ///
    /// # Errors
    /// `permits <= 0`.
    pub fn acquire(&mut self, permits: i32, now: Nanos) -> Result<i64> {
        check_permits(permits)?;
        let now_micros = self.read_micros(now);
        Ok(self.reserve_and_get_wait_length(permits, now_micros))
    }

    fn can_acquire(&self, now_micros: i64, timeout_micros: i64) -> bool {
        // Java's long subtraction wraps.
        self.query_earliest_available(now_micros)
            .wrapping_sub(timeout_micros)
            <= now_micros
    }

    fn reserve_and_get_wait_length(&mut self, permits: i32, now_micros: i64) -> i64 {
        let moment_available = self.reserve_earliest_available(permits, now_micros);
        moment_available.wrapping_sub(now_micros).max(0)
    }

    fn query_earliest_available(&self, _now_micros: i64) -> i64 {
        self.next_free_ticket_micros
    }

    fn reserve_earliest_available(&mut self, required_permits: i32, now_micros: i64) -> i64 {
        self.resync(now_micros);
        let return_value = self.next_free_ticket_micros;
        let required = f64::from(required_permits);
        let stored_permits_to_spend = java_min(required, self.stored_permits);
        let fresh_permits = required - stored_permits_to_spend;
        // SmoothBursty.storedPermitsToWaitTime is 0L.
        let wait_micros = 0i64.wrapping_add((fresh_permits * self.stable_interval_micros) as i64);
        self.next_free_ticket_micros = self.next_free_ticket_micros.saturating_add(wait_micros);
        self.stored_permits -= stored_permits_to_spend;
        return_value
    }

    fn resync(&mut self, now_micros: i64) {
        if now_micros > self.next_free_ticket_micros {
            // SmoothBursty.coolDownIntervalMicros() = stableIntervalMicros.
            let new_permits = now_micros.wrapping_sub(self.next_free_ticket_micros) as f64
                / self.stable_interval_micros;
            self.stored_permits = java_min(self.max_permits, self.stored_permits + new_permits);
            self.next_free_ticket_micros = now_micros;
        }
    }
}

fn check_permits(permits: i32) -> Result<()> {
    if permits > 0 {
        Ok(())
    } else {
        Err(Error::input(format!(
            "guava: permits {permits}: Requested permits must be positive"
        )))
    }
}

impl KeyState for GuavaSmoothBursty {
    /// 64-bit HotSpot, compressed oops, 8-byte alignment: the `SmoothBursty`
    /// object (12-byte header, `stopwatch` and `mutexDoNotUseDirectly`
    /// references, `storedPermits`, `maxPermits`, `stableIntervalMicros`,
    /// `nextFreeTicketMicros`, `maxBurstSeconds`: 60 → 64), the anonymous
    /// `SleepingStopwatch` (header + `stopwatch` reference: 16), its
    /// `Stopwatch` (header, `ticker` reference, `isRunning`, `elapsedNanos`,
    /// `startTick`: 33 → 40) and the lazily made mutex `Object` (16). The
    /// system `Ticker` is a shared singleton and not counted.
    const STATE_BYTES: u64 = 136;

    fn admit(&mut self, w: u64, now: Nanos) -> Result<Decision> {
        let permits = i32::try_from(w).map_err(|_| {
            Error::input(format!(
                "guava: weight {w}: tryAcquire takes an int (at most {})",
                i32::MAX
            ))
        })?;
        Ok(Decision::from_allowed(self.try_acquire(permits, now)?))
    }
}

/// One key's Guava limiter called with `acquire(w)` instead of
/// `tryAcquire(w)`: every request is admitted, after the wait `acquire`
/// returns (its microseconds, reported as the decision's delay), which is
/// how most Guava callers use it.
///
/// # Examples
/// ```
/// use ratelab::clock::SECOND;
/// use ratelab::model::guava_smooth_bursty::{GuavaAcquire, GuavaSmoothBursty};
/// use ratelab::model::KeyState;
/// let mut g = GuavaAcquire(GuavaSmoothBursty::create(2.0, 0)?);
/// assert_eq!(g.admit(1, 0)?.delay, 0);
/// let d = g.admit(1, 0)?; // pre-paid by the first: waits 0.5 s
/// assert!(d.allowed && d.delay == SECOND / 2, "{d:?}");
/// # Ok::<(), ratelab::error::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct GuavaAcquire(pub GuavaSmoothBursty);

impl KeyState for GuavaAcquire {
    const STATE_BYTES: u64 = GuavaSmoothBursty::STATE_BYTES;

    fn admit(&mut self, w: u64, now: Nanos) -> Result<Decision> {
        let permits = i32::try_from(w).map_err(|_| {
            Error::input(format!(
                "guava: weight {w}: acquire takes an int (at most {})",
                i32::MAX
            ))
        })?;
        let micros = self.0.acquire(permits, now)?;
        Ok(Decision {
            allowed: true,
            delay: u64::try_from(micros).unwrap_or(0).saturating_mul(1_000),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::{MILLI, SECOND};

    const MICRO: Nanos = 1_000;

    fn lim(pps: f64) -> GuavaSmoothBursty {
        match GuavaSmoothBursty::create(pps, 0) {
            Ok(l) => l,
            Err(e) => panic!("{e}"),
        }
    }

    /// Replays `acquire`s on a fake stopwatch the way Guava's
    /// `RateLimiterTest.FakeStopwatch` does: sleeping advances the clock.
    struct Fake {
        lim: GuavaSmoothBursty,
        now: Nanos,
        events: Vec<String>,
    }

    impl Fake {
        fn new(pps: f64) -> Self {
            Self {
                lim: lim(pps),
                now: 0,
                events: Vec::new(),
            }
        }
        fn acquire(&mut self, permits: i32) -> i64 {
            let micros = self.lim.acquire(permits, self.now).unwrap();
            self.now += micros as u64 * MICRO;
            self.events
                .push(format!("R{:.2}", micros as f64 / MICROS_PER_SECOND));
            micros
        }
        fn sleep_millis(&mut self, ms: u64) {
            self.now += ms * MILLI;
            self.events.push(format!("U{:.2}", ms as f64 / 1_000.0));
        }
        fn try_acquire(&mut self, permits: i32) -> bool {
            self.lim.try_acquire(permits, self.now).unwrap()
        }
        /// `tryAcquire(permits, timeout, MICROSECONDS)`, sleeping on success.
        fn try_acquire_timeout(&mut self, permits: i32, timeout_micros: i64) -> bool {
            match self
                .lim
                .try_acquire_timeout(permits, timeout_micros, self.now)
                .unwrap()
            {
                Some(micros) => {
                    self.now += micros as u64 * MICRO;
                    true
                }
                None => false,
            }
        }
    }

    /// RateLimiterTest.testSimple: R0.00, R0.20, R0.20.
    #[test]
    fn test_simple() {
        let mut f = Fake::new(5.0);
        for _ in 0..3 {
            f.acquire(1);
        }
        assert_eq!(f.events, ["R0.00", "R0.20", "R0.20"]);
    }

    /// RateLimiterTest.testImmediateTryAcquire.
    #[test]
    fn test_immediate_try_acquire() {
        let mut r = lim(1.0);
        assert!(r.try_acquire(1, 0).unwrap());
        assert!(!r.try_acquire(1, 0).unwrap());
    }

    /// RateLimiterTest.testDoubleMinValueCanAcquireExactlyOnce.
    #[test]
    fn test_double_min_value_can_acquire_exactly_once() {
        let mut f = Fake::new(f64::from_bits(1)); // Double.MIN_VALUE
        assert!(f.try_acquire(1));
        assert!(!f.try_acquire(1));
        f.sleep_millis(i32::MAX as u64);
        assert!(!f.try_acquire(1));
        assert_eq!(f.lim.next_free_ticket_micros(), i64::MAX);
    }

    /// RateLimiterTest.testSimpleRateUpdate / setRate's check: zero,
    /// negative and NaN rates are rejected.
    #[test]
    fn rate_must_be_positive() {
        for bad in [0.0, -0.0, -10.0, f64::NAN, f64::NEG_INFINITY] {
            let e = GuavaSmoothBursty::create(bad, 0).unwrap_err();
            assert!(e.message().contains("permits_per_second"), "{e:?}");
        }
        assert!(GuavaSmoothBursty::create(f64::INFINITY, 0).is_ok());
        let mut r = lim(5.0);
        r.set_rate(10.0, 0).unwrap();
        assert_eq!(r.rate(), 10.0);
    }

    /// RateLimiterTest.testAcquireParameterValidation.
    #[test]
    fn permits_must_be_positive() {
        let mut r = lim(999.0);
        for p in [0, -1] {
            assert!(r.acquire(p, 0).is_err());
            assert!(r.try_acquire(p, 0).is_err());
            assert!(r.try_acquire_timeout(p, SECOND as i64 / 1000, 0).is_err());
        }
        assert!(r.admit(0, 0).is_err());
        assert!(r.admit(u64::from(u32::MAX), 0).is_err());
    }

    /// RateLimiterTest.testSimpleWithWait / testSimpleAcquireReturnValues.
    #[test]
    fn test_simple_with_wait() {
        let mut f = Fake::new(5.0);
        assert_eq!(f.acquire(1), 0);
        f.sleep_millis(200);
        assert_eq!(f.acquire(1), 0);
        assert_eq!(f.acquire(1), 200_000);
        assert_eq!(f.events, ["R0.00", "U0.20", "R0.00", "R0.20"]);
    }

    /// RateLimiterTest.testSimpleAcquireEarliestAvailableIsInPast.
    #[test]
    fn test_earliest_available_is_in_past() {
        let mut f = Fake::new(5.0);
        assert_eq!(f.acquire(1), 0);
        f.sleep_millis(400);
        assert_eq!(f.acquire(1), 0);
        assert_eq!(f.acquire(1), 0);
        assert_eq!(f.acquire(1), 200_000);
    }

    /// RateLimiterTest.testOneSecondBurst: a fresh limiter stores nothing;
    /// after an idle second it holds maxPermits = 5.
    #[test]
    fn test_one_second_burst() {
        let mut f = Fake::new(5.0);
        assert_eq!(f.lim.stored_permits(), 0.0);
        assert_eq!(f.lim.max_permits(), 5.0);
        f.sleep_millis(1000);
        f.sleep_millis(1000);
        f.acquire(1);
        f.acquire(1);
        f.acquire(3);
        f.acquire(1);
        f.acquire(1);
        assert_eq!(
            f.events,
            ["U1.00", "U1.00", "R0.00", "R0.00", "R0.00", "R0.00", "R0.20"]
        );
    }

    /// RateLimiterTest.testSimpleWeights: the weight is paid by the *next*
    /// request.
    #[test]
    fn test_simple_weights() {
        let mut f = Fake::new(1.0);
        for p in [1, 1, 2, 4, 8, 1] {
            f.acquire(p);
        }
        assert_eq!(
            f.events,
            ["R0.00", "R1.00", "R1.00", "R2.00", "R4.00", "R8.00"]
        );
    }

    /// RateLimiterTest.testTryAcquire_noWaitAllowed.
    #[test]
    fn test_try_acquire_no_wait_allowed() {
        let mut f = Fake::new(5.0);
        assert!(f.try_acquire(1));
        assert!(!f.try_acquire(1));
        assert!(!f.try_acquire(1));
        f.sleep_millis(100);
        assert!(!f.try_acquire(1));
    }

    /// RateLimiterTest.testTryAcquire_someWaitAllowed (a granted
    /// tryAcquire with a timeout sleeps on the fake stopwatch).
    #[test]
    fn test_try_acquire_some_wait_allowed() {
        let mut f = Fake::new(5.0);
        assert!(f.try_acquire_timeout(1, 0));
        assert!(f.try_acquire_timeout(1, 200_000));
        assert!(!f.try_acquire_timeout(1, 100_000));
        f.sleep_millis(100);
        assert!(f.try_acquire_timeout(1, 100_000));
    }

    /// RateLimiterTest.testTryAcquire_overflow: `nextFree - Long.MAX_VALUE`
    /// does not overflow into a refusal.
    #[test]
    fn test_try_acquire_overflow() {
        let mut f = Fake::new(5.0);
        assert!(f.try_acquire_timeout(1, 0));
        f.sleep_millis(100);
        assert!(f.try_acquire_timeout(1, i64::MAX));
    }

    /// RateLimiterTest.testTryAcquire_negative: a negative timeout is zero.
    #[test]
    fn test_try_acquire_negative() {
        let mut f = Fake::new(5.0);
        assert!(f.try_acquire_timeout(5, 0));
        f.sleep_millis(900);
        assert!(!f.try_acquire_timeout(1, i64::MIN));
        f.sleep_millis(100);
        assert!(f.try_acquire_timeout(1, -1));
    }

    /// RateLimiterTest.testInfinity_Bursty (first part): an infinite rate
    /// never waits, whatever the weight.
    #[test]
    fn test_infinity_bursty() {
        let mut f = Fake::new(f64::INFINITY);
        f.acquire(i32::MAX / 4);
        f.acquire(i32::MAX / 2);
        f.acquire(i32::MAX);
        assert_eq!(f.events, ["R0.00", "R0.00", "R0.00"]);
        assert!(f.try_acquire(i32::MAX));
    }

    /// The first request after idle passes and pre-pays: weight 10 at 1/s
    /// passes at once, then nothing for 10 s (9 s after a stored permit).
    #[test]
    fn heavy_first_request_passes_and_prepays() {
        let mut r = lim(1.0);
        assert!(r.admit(10, 0).unwrap().allowed);
        assert!(!r.admit(1, 9_999_999 * MICRO).unwrap().allowed);
        assert!(r.admit(1, 10 * SECOND).unwrap().allowed);
    }

    /// readMicros truncates: 999 ns after a 1 µs ticket is still µs 0.
    #[test]
    fn microsecond_truncation_and_creation_offset() {
        let mut r = GuavaSmoothBursty::create(1_000_000.0, 5 * SECOND + 500).unwrap();
        assert_eq!(r.read_micros(5 * SECOND + 1_499), 0);
        assert!(r.try_acquire(1, 5 * SECOND + 500).unwrap());
        assert!(!r.try_acquire(1, 5 * SECOND + 1_499).unwrap());
        assert!(r.try_acquire(1, 5 * SECOND + 1_500).unwrap());
    }

    /// Stored permits are capped at maxPermits = 1 s × rate, and the
    /// request after the burst is the extra "free" one that pre-pays.
    #[test]
    fn burst_after_long_idle_is_capped() {
        let mut r = lim(10.0);
        assert!(r.try_acquire(1, 0).unwrap());
        let t = 60 * SECOND;
        let passed = (0..100).filter(|_| r.try_acquire(1, t).unwrap()).count();
        assert_eq!(passed, 11);
        assert_eq!(r.stored_permits(), 0.0);
    }

    #[test]
    fn java_min_matches_math_min() {
        assert!(java_min(f64::NAN, 1.0).is_nan());
        assert!(java_min(1.0, f64::NAN).is_nan());
        assert!(java_min(0.0, -0.0).is_sign_negative());
        assert!(java_min(-0.0, 0.0).is_sign_negative());
        assert_eq!(java_min(2.0, 3.0), 2.0);
        // (long) casts: truncation toward zero, saturation, NaN -> 0.
        assert_eq!((-1.9f64) as i64, -1);
        assert_eq!(f64::INFINITY as i64, i64::MAX);
        assert_eq!(std::hint::black_box(f64::NAN) as i64, 0);
    }
}
