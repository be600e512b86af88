//! Faithful models of `go.uber.org/ratelimit` (github.com/uber-go/ratelimit),
//! a "leaky bucket" pacer: `Take()` blocks so that calls are spaced
//! `per / rate` apart on average.
//!
//! Source read: commit `3e5300c8868057cbf05a2818400bc45e75eaab6e`
//! (2024-04-30, after release v0.3.1), files `ratelimit.go`,
//! `limiter_atomic.go`, `limiter_atomic_int64.go`, `limiter_mutexbased.go`.
//!
//! All three implementations in that source are modelled
//! ([`LeakyVariant`]); `New` picks **`newAtomicInt64Based`**
//! ([`LeakyVariant::AtomicInt64`], the default since v0.3.0 / PR #101).
//!
//! # Shared configuration (`ratelimit.go`, `buildConfig`)
//! Defaults: `per = time.Second`, `slack = 10`. `Per(d)` sets `per`,
//! `WithSlack(n)` sets `slack = n`, `WithoutSlack` sets `slack = 0`;
//! `WithClock(c)` is what the explicit `now` argument of [`LeakyBucket::take`]
//! stands for. `perRequest = per / time.Duration(rate)` is *integer*
//! nanosecond division (Go panics for `rate == 0`: here
//! [`LeakyError::DivideByZero`]). All `Duration` arithmetic wraps like Go's
//! `int64`.
//!
//! # The variants
//! * `atomicLimiter` (`limiter_atomic.go`): state `{last, sleepFor}`. First
//!   call (`last.IsZero()`): `last = now`. Otherwise
//!   `sleepFor += perRequest - now.Sub(last)`, clamped below at
//!   `maxSlack = -slack * perRequest`; if `sleepFor > 0` the caller sleeps
//!   it, `last = now + sleepFor`, `sleepFor = 0`, else `last = now`. Take
//!   returns `last`. The sleep happens *after* the CAS, so concurrent callers
//!   do not hold each other up.
//! * `atomicInt64Limiter` (`limiter_atomic_int64.go`): one `int64`, the Unix
//!   nanoseconds of the last permission issued, **0 meaning "never"**;
//!   `maxSlack = +slack * perRequest`. New state = `now` on the first call or
//!   (slack 0 and `now - state > perRequest`); `now - maxSlack` when
//!   `maxSlack > 0` and `now - state > maxSlack + perRequest`; else
//!   `state + perRequest`. The caller sleeps `new - now` if positive and
//!   Take returns `new`, else Take returns `now`. Because 0 is the sentinel,
//!   a clock reading of exactly Unix time 0 (where
//!   `github.com/benbjohnson/clock.NewMock()` starts, and which upstream's
//!   own tests avoid by `Set(time.Now())`) leaves the limiter "fresh": every
//!   call at that instant passes.
//! * `mutexLimiter` (`limiter_mutexbased.go`): the same arithmetic as the
//!   atomic one, but the caller sleeps **while holding the mutex**, so
//!   concurrent callers are serialized: a caller arriving while another
//!   sleeps first waits for the lock and only then reads `now`. The model
//!   tracks when the lock becomes free and hands it over FIFO (Go's
//!   `sync.Mutex` is not strictly FIFO; in starvation mode it is).
//!
//! Under sequential calls the atomic and int64 variants agree (their state
//! maps to each other: next issue = `max(now - maxSlack, prev + perRequest)`),
//! except for the int64 sentinel at Unix time 0, a negative slack (the int64
//! variant then never clamps, the others clamp `sleepFor` at a *positive*
//! floor and sleep on every call) and `int64` overflow.
//!
//! # Known behaviour from the issue tracker
//! * #119 / #120 / v0.3.1 (#124): before the fix the int64 variant's clamp
//!   tested `now - state > maxSlack`, so after one idle period the slack was
//!   re-applied on every call and Take never blocked again. The source read
//!   here has the fixed test `> maxSlack + perRequest`, which the model uses.
//! * #106 / #122 / #121: users see no pacing right after an idle gap; that is
//!   the default slack of 10 (up to 10 extra calls pass at once), and
//!   `WithoutSlack` is the documented way to be strict.
//! * #15, #85, #90, #91, #94, #101: the atomic variants were introduced for
//!   throughput under contention (the mutex one suffers from lock convoys
//!   and starvation mode); the int64 one was reverted once for a bug and
//!   restored, then made the default.
//!
//! # Time
//! `now_ns` is virtual time; with [`LeakyBucketConfig::unix_origin_ns`] = 0
//! (the default, like `clock.NewMock()`) virtual time *is* the clock's
//! `UnixNano()`. Times inside are [`GoTime`]s so Go's saturating `Sub` and
//! wide `time.Time` range are reproduced.

use super::x_time_rate::GoTime;
use std::fmt;

const SECOND_NS: i64 = 1_000_000_000;

/// Which of uber-go/ratelimit's implementations to model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum LeakyVariant {
    /// `limiter_atomic.go`, `newAtomicBased`: CAS on a `{last, sleepFor}`
    /// pointer.
    Atomic,
    /// `limiter_atomic_int64.go`, `newAtomicInt64Based`: what `New` returns.
    #[default]
    AtomicInt64,
    /// `limiter_mutexbased.go`, `newMutexBased`: sleeps holding the lock.
    Mutex,
}

impl LeakyVariant {
    /// Parses a variant's name as `--variant` and scenarios spell it.
    ///
    /// # Examples
    ///
    /// ```
    /// use ratelab::model::uber_ratelimit::LeakyVariant;
    /// assert_eq!(LeakyVariant::parse("atomic-int64"), Some(LeakyVariant::AtomicInt64));
    /// assert_eq!(LeakyVariant::parse(" mutex "), Some(LeakyVariant::Mutex));
    /// assert_eq!(LeakyVariant::parse("spin"), None);
    /// ```
    pub fn parse(s: &str) -> Option<LeakyVariant> {
        match s.trim() {
            "atomic" => Some(LeakyVariant::Atomic),
            "atomic-int64" | "int64" | "atomic_int64" => Some(LeakyVariant::AtomicInt64),
            "mutex" => Some(LeakyVariant::Mutex),
            _ => None,
        }
    }
}

/// `ratelimit.New(rate, opts...)`'s parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LeakyBucketConfig {
    /// Go's `rate int`: events per `per`.
    pub rate: i64,
    /// `Per(d)`; default one second.
    pub per_ns: i64,
    /// `WithSlack(n)`; default 10, `WithoutSlack` = 0.
    pub slack: i64,
    /// The implementation.
    pub variant: LeakyVariant,
    /// Go's `UnixNano()` of virtual time 0 (0 = a `clock.NewMock()` clock).
    /// Only the int64 variant can tell (its sentinel is Unix time 0).
    pub unix_origin_ns: i64,
}

impl LeakyBucketConfig {
    /// `New(rate)` with default options: `Per(time.Second)`, slack 10, the
    /// variant `New` picks, a mock clock at the Unix epoch.
    pub fn new(rate: i64) -> Self {
        Self {
            rate,
            per_ns: SECOND_NS,
            slack: 10,
            variant: LeakyVariant::default(),
            unix_origin_ns: 0,
        }
    }

    /// `Per(d)`.
    pub fn per(mut self, per_ns: i64) -> Self {
        self.per_ns = per_ns;
        self
    }

    /// `WithSlack(n)`.
    pub fn with_slack(mut self, slack: i64) -> Self {
        self.slack = slack;
        self
    }

    /// `WithoutSlack` (= `slackOption(0)`).
    pub fn without_slack(self) -> Self {
        self.with_slack(0)
    }

    /// Selects the implementation.
    pub fn variant(mut self, variant: LeakyVariant) -> Self {
        self.variant = variant;
        self
    }

    /// Sets the Unix time of virtual time 0.
    pub fn unix_origin(mut self, unix_origin_ns: i64) -> Self {
        self.unix_origin_ns = unix_origin_ns;
        self
    }
}

/// Errors of this module.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LeakyError {
    /// `rate == 0`: Go's `per / time.Duration(rate)` panics.
    DivideByZero,
}

impl fmt::Display for LeakyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::DivideByZero => write!(f, "runtime error: integer divide by zero"),
        }
    }
}

impl std::error::Error for LeakyError {}

/// The outcome of one `Take()`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Take {
    /// When the limiter read the clock (virtual ns, saturated to `i64`): the
    /// arrival time, or for the mutex variant when the caller got the lock.
    pub now_ns: i64,
    /// The `time.Time` Take returns, as `UnixNano()` minus the origin
    /// (wrapping like Go's `UnixNano`).
    pub return_ns: i64,
    /// How long the caller sleeps (0 if it does not).
    pub sleep_ns: i64,
    /// When Take returns to the caller in virtual time (`now + sleep`,
    /// saturated to `i64`). Equals `return_ns` unless something overflowed.
    pub wake_ns: i64,
}

/// One uber-go/ratelimit limiter.
///
/// # Examples
///
/// `ratelimit.New(100)`: one request per 10 ms; two callers at once, the second
/// sleeps one period.
///
/// ```
/// use ratelab::model::uber_ratelimit::{LeakyBucket, LeakyBucketConfig};
///
/// let mut l = LeakyBucket::new(LeakyBucketConfig::new(100)).unwrap();
/// assert_eq!(l.per_request_ns(), 10_000_000);
/// let t = 5_000_000_000; // virtual ns
/// assert_eq!(l.take(t).sleep_ns, 0);
/// assert_eq!(l.take(t).sleep_ns, 10_000_000);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeakyBucket {
    variant: LeakyVariant,
    per_request: i64,
    max_slack: i64,
    origin: i128,
    /// Atomic / mutex: `last` (zero time = no call yet).
    last: GoTime,
    /// Atomic / mutex: accumulated `sleepFor` (<= 0 between calls).
    sleep_for: i64,
    /// Int64: Unix nanoseconds of the last permission (0 = none).
    state: i64,
    /// Mutex: when the lock is released by the caller holding it.
    lock_free_at: GoTime,
}

impl LeakyBucket {
    /// The `newAtomicBased` / `newAtomicInt64Based` / `newMutexBased`
    /// constructor for `cfg.variant`.
    pub fn new(cfg: LeakyBucketConfig) -> Result<Self, LeakyError> {
        if cfg.rate == 0 {
            return Err(LeakyError::DivideByZero);
        }
        let per_request = cfg.per_ns.wrapping_div(cfg.rate);
        let max_slack = match cfg.variant {
            LeakyVariant::AtomicInt64 => cfg.slack.wrapping_mul(per_request),
            LeakyVariant::Atomic | LeakyVariant::Mutex => {
                (-1i64).wrapping_mul(cfg.slack).wrapping_mul(per_request)
            }
        };
        Ok(Self {
            variant: cfg.variant,
            per_request,
            max_slack,
            origin: i128::from(cfg.unix_origin_ns),
            last: GoTime::ZERO,
            sleep_for: 0,
            state: 0,
            lock_free_at: GoTime::ZERO,
        })
    }

    /// The implementation modelled.
    pub fn variant(&self) -> LeakyVariant {
        self.variant
    }

    /// `perRequest = per / rate`.
    pub fn per_request_ns(&self) -> i64 {
        self.per_request
    }

    /// `maxSlack` as the variant stores it (negative for atomic/mutex,
    /// positive for int64).
    pub fn max_slack_ns(&self) -> i64 {
        self.max_slack
    }

    /// `Take()` by a caller arriving at virtual time `now_ns`.
    ///
    /// Atomic variants read the clock at `now_ns`. The mutex variant first
    /// waits until the lock is free (callers are served in call order) and
    /// reads the clock then.
    pub fn take(&mut self, now_ns: i64) -> Take {
        let arrival = GoTime::from_i128(self.origin + i128::from(now_ns));
        match self.variant {
            LeakyVariant::Atomic => {
                let (ret, sleep) = self.take_atomic(arrival);
                self.finish(arrival, ret, sleep)
            }
            LeakyVariant::Mutex => {
                let now = arrival.max(self.lock_free_at);
                let (ret, sleep) = self.take_atomic(now);
                self.lock_free_at = now.add_dur(sleep);
                self.finish(now, ret, sleep)
            }
            LeakyVariant::AtomicInt64 => {
                let now = arrival.unix_nanos();
                let (ret, sleep) = self.take_int64(now);
                self.finish(arrival, GoTime::from_unix_nanos(ret), sleep)
            }
        }
    }

    /// The body shared by `atomicLimiter.Take` and `mutexLimiter.Take`
    /// (they differ only in where the sleep happens). Returns (Take's
    /// result, sleep).
    fn take_atomic(&mut self, now: GoTime) -> (GoTime, i64) {
        if self.last.is_zero() {
            self.last = now;
            return (now, 0);
        }
        let mut sleep_for = self
            .sleep_for
            .wrapping_add(self.per_request.wrapping_sub(now.sub_time(self.last)));
        if sleep_for < self.max_slack {
            sleep_for = self.max_slack;
        }
        let mut interval = 0;
        let mut last = now;
        if sleep_for > 0 {
            last = now.add_dur(sleep_for);
            interval = sleep_for;
            sleep_for = 0;
        }
        self.last = last;
        self.sleep_for = sleep_for;
        (last, interval)
    }

    /// `atomicInt64Limiter.Take` on Unix nanoseconds. Returns (Take's result
    /// as Unix ns, sleep).
    fn take_int64(&mut self, now: i64) -> (i64, i64) {
        let state = self.state;
        let p = self.per_request;
        let new = if state == 0 || (self.max_slack == 0 && now.wrapping_sub(state) > p) {
            now
        } else if self.max_slack > 0 && now.wrapping_sub(state) > self.max_slack.wrapping_add(p) {
            now.wrapping_sub(self.max_slack)
        } else {
            state.wrapping_add(p)
        };
        self.state = new;
        let sleep = new.wrapping_sub(now);
        if sleep > 0 {
            (new, sleep)
        } else {
            (now, 0)
        }
    }

    fn finish(&self, now: GoTime, ret: GoTime, sleep: i64) -> Take {
        let rel = |t: GoTime| t.as_i128() - self.origin;
        Take {
            now_ns: saturate(rel(now)),
            return_ns: ret.unix_nanos().wrapping_sub(self.origin as i64),
            sleep_ns: sleep,
            wake_ns: saturate(rel(now) + i128::from(sleep)),
        }
    }
}

fn saturate(v: i128) -> i64 {
    v.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
}

/// One leaky-bucket replay row: a separate caller calling `Take()` at `t_ns`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LeakyBucketResult {
    /// The arrival time.
    pub t_ns: i64,
    /// What Take returned.
    pub return_ns: i64,
}

/// Replays one `Take()` per arrival time through a fresh limiter.
pub fn replay_leaky_bucket(
    cfg: LeakyBucketConfig,
    times_ns: &[i64],
) -> Result<Vec<LeakyBucketResult>, LeakyError> {
    let mut lim = LeakyBucket::new(cfg)?;
    Ok(times_ns
        .iter()
        .map(|&t_ns| LeakyBucketResult {
            t_ns,
            return_ns: lim.take(t_ns).return_ns,
        })
        .collect())
}

/// Most `Take` calls one request may stand for (its weight): beyond it a
/// replay refuses the request (exit 2) instead of looping once per unit.
pub const MAX_TAKES_PER_REQUEST: u64 = 1 << 20;

/// uber-go's pacer as an admission limiter: uber-go paces (`Take` blocks);
/// here a request that would have had to wait is denied and takes no slot.
/// A request of weight `w` is `w` calls of `Take`, tried on a copy.
#[derive(Debug, Clone)]
pub struct DenyIfWait(pub LeakyBucket);

impl crate::model::KeyState for DenyIfWait {
    /// `atomicInt64Limiter`: 64 + 8 + 56 bytes of padding and state,
    /// perRequest 8, maxSlack 8, clock interface 16.
    const STATE_BYTES: u64 = 160;

    fn admit(
        &mut self,
        w: u64,
        now: crate::clock::Nanos,
    ) -> crate::error::Result<crate::model::Decision> {
        if w > MAX_TAKES_PER_REQUEST {
            return Err(crate::error::Error::input(format!(
                "uber-go ratelimit: a request of weight {w} is {w} Take calls; more than {MAX_TAKES_PER_REQUEST} per request is refused (the work grows with the weight, and Go's int64 arithmetic wraps long before)"
            )));
        }
        let mut trial = self.0.clone();
        let mut wait = 0;
        for _ in 0..w {
            wait = trial.take(now as i64).sleep_ns;
        }
        if wait > 0 {
            return Ok(crate::model::Decision::DENY);
        }
        self.0 = trial;
        Ok(crate::model::Decision::ALLOW)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: i64 = 1_000_000;
    const ALL: [LeakyVariant; 3] = [
        LeakyVariant::Atomic,
        LeakyVariant::AtomicInt64,
        LeakyVariant::Mutex,
    ];
    /// A realistic clock origin (2023-11-14), away from the int64 sentinel.
    const ORIGIN: i64 = 1_700_000_000 * SECOND_NS;

    fn bucket(cfg: LeakyBucketConfig) -> LeakyBucket {
        match LeakyBucket::new(cfg) {
            Ok(b) => b,
            Err(e) => panic!("bad test config: {e}"),
        }
    }

    #[test]
    fn config_defaults_match_build_config() {
        let c = LeakyBucketConfig::new(100);
        assert_eq!((c.per_ns, c.slack), (SECOND_NS, 10));
        assert_eq!(c.variant, LeakyVariant::AtomicInt64);
        let b = bucket(c);
        assert_eq!(b.per_request_ns(), 10 * MS);
        assert_eq!(b.max_slack_ns(), 100 * MS);
        let a = bucket(c.variant(LeakyVariant::Atomic));
        assert_eq!(a.max_slack_ns(), -100 * MS);
        // Integer division: 1s / 3 = 333333333ns.
        let b = bucket(LeakyBucketConfig::new(3));
        assert_eq!(b.per_request_ns(), 333_333_333);
        let b = bucket(LeakyBucketConfig::new(2).per(60 * SECOND_NS));
        assert_eq!(b.per_request_ns(), 30 * SECOND_NS);
        assert_eq!(
            LeakyBucket::new(LeakyBucketConfig::new(0)),
            Err(LeakyError::DivideByZero)
        );
    }

    /// Cadence: New(100), one goroutine calling Take in a loop: Take returns 0,
    /// 10ms, 20ms, ... after the first, exactly, for every variant.
    #[test]
    fn cadence() {
        for v in ALL {
            let mut lim = bucket(LeakyBucketConfig::new(100).variant(v).unix_origin(ORIGIN));
            let mut now = 0;
            let mut returned = Vec::new();
            for _ in 0..10 {
                let t = lim.take(now);
                returned.push(t.return_ns);
                now = t.wake_ns;
            }
            let want: Vec<i64> = (0..10).map(|i| i * 10 * MS).collect();
            assert_eq!(returned, want, "{v:?}");
        }
    }

    /// Slack after idle: one call, a 10 s idle gap, then 20 callers at once. Slack 10:
    /// 11 pass at once (the idle one plus 10 banked), then 10 ms pacing.
    /// WithoutSlack: 1 passes, then 10 ms pacing.
    #[test]
    fn slack_after_idle() {
        for v in ALL {
            for (slack, at_once) in [(10, 11), (0, 1)] {
                let cfg = LeakyBucketConfig::new(100)
                    .with_slack(slack)
                    .variant(v)
                    .unix_origin(ORIGIN);
                let mut lim = bucket(cfg);
                lim.take(0);
                let t0 = 10 * SECOND_NS;
                let got: Vec<i64> = (0..20).map(|_| lim.take(t0).return_ns - t0).collect();
                let want: Vec<i64> = (0..20)
                    .map(|i| {
                        if i < at_once {
                            0
                        } else {
                            (i - at_once + 1) * 10 * MS
                        }
                    })
                    .collect();
                assert_eq!(got, want, "{v:?} slack {slack}");
            }
        }
    }

    #[test]
    fn atomic_callers_do_not_wait_for_each_other_mutex_ones_do() {
        // Three callers at t=0 on New(10): all variants return 0, 100, 200 ms.
        for v in ALL {
            let mut lim = bucket(LeakyBucketConfig::new(10).variant(v).unix_origin(ORIGIN));
            let r: Vec<Take> = (0..3).map(|_| lim.take(0)).collect();
            let ret: Vec<i64> = r.iter().map(|t| t.return_ns).collect();
            assert_eq!(ret, vec![0, 100 * MS, 200 * MS], "{v:?}");
            let now: Vec<i64> = r.iter().map(|t| t.now_ns).collect();
            if v == LeakyVariant::Mutex {
                // The third caller read the clock only when the second
                // released the lock.
                assert_eq!(now, vec![0, 0, 100 * MS]);
            } else {
                assert_eq!(now, vec![0, 0, 0]);
            }
        }
    }

    #[test]
    fn mutex_lock_wait_changes_the_clock_reading() {
        // New(10) (100 ms), slack 0. Caller A at 0, B at 0 sleeps till 100,
        // C arrives at 50 but reads now=100 after B releases the lock.
        let cfg = LeakyBucketConfig::new(10)
            .without_slack()
            .unix_origin(ORIGIN);
        let mut m = bucket(cfg.variant(LeakyVariant::Mutex));
        m.take(0);
        assert_eq!(m.take(0).wake_ns, 100 * MS);
        let c = m.take(50 * MS);
        assert_eq!(
            (c.now_ns, c.sleep_ns, c.return_ns),
            (100 * MS, 100 * MS, 200 * MS)
        );
        let mut a = bucket(cfg.variant(LeakyVariant::Atomic));
        a.take(0);
        a.take(0);
        let c = a.take(50 * MS);
        assert_eq!(
            (c.now_ns, c.sleep_ns, c.return_ns),
            (50 * MS, 150 * MS, 200 * MS)
        );
    }

    #[test]
    fn int64_sentinel_at_unix_zero() {
        // With a clock at the Unix epoch (clock.NewMock()), state stays 0.
        let mut lim = bucket(LeakyBucketConfig::new(10));
        for _ in 0..5 {
            assert_eq!(lim.take(0).return_ns, 0);
        }
        assert_eq!(lim.take(1).return_ns, 1);
        assert_eq!(lim.take(1).return_ns, 1 + 100 * MS);
        // The pointer-based variant uses time.Time{}.IsZero() instead.
        let mut lim = bucket(LeakyBucketConfig::new(10).variant(LeakyVariant::Atomic));
        assert_eq!(lim.take(0).return_ns, 0);
        assert_eq!(lim.take(0).return_ns, 100 * MS);
    }

    #[test]
    fn negative_slack_differs_between_variants() {
        // WithSlack(-1): atomic clamps sleepFor at +perRequest (always
        // sleeps); int64 never clamps, so idle time is banked without limit.
        let cfg = LeakyBucketConfig::new(10)
            .with_slack(-1)
            .unix_origin(ORIGIN);
        let mut a = bucket(cfg.variant(LeakyVariant::Atomic));
        a.take(0);
        let t = a.take(10 * SECOND_NS);
        assert_eq!(t.sleep_ns, 100 * MS);
        let mut i = bucket(cfg.variant(LeakyVariant::AtomicInt64));
        i.take(0);
        let passed = (0..200)
            .filter(|_| i.take(10 * SECOND_NS).sleep_ns == 0)
            .count();
        assert_eq!(passed, 100);
    }

    #[test]
    fn replay_matches_take() {
        let cfg = LeakyBucketConfig::new(100).unix_origin(ORIGIN);
        let rows = replay_leaky_bucket(cfg, &[0, 0, 5 * MS, 100 * MS]);
        let got: Vec<i64> = rows
            .unwrap_or_default()
            .iter()
            .map(|r| r.return_ns)
            .collect();
        assert_eq!(got, vec![0, 10 * MS, 20 * MS, 100 * MS]);
        assert!(replay_leaky_bucket(LeakyBucketConfig::new(0), &[0]).is_err());
    }

    #[test]
    fn extreme_values_do_not_panic() {
        for v in ALL {
            for rate in [1, -1, i64::MAX, i64::MIN] {
                for per in [i64::MAX, i64::MIN, 0, 1] {
                    for slack in [i64::MAX, i64::MIN, 0, 10] {
                        let cfg = LeakyBucketConfig {
                            rate,
                            per_ns: per,
                            slack,
                            variant: v,
                            unix_origin_ns: i64::MAX,
                        };
                        let mut lim = bucket(cfg);
                        for t in [i64::MIN, 0, i64::MAX, i64::MAX] {
                            let _ = lim.take(t);
                        }
                    }
                }
            }
        }
    }

    fn int(s: &str) -> i64 {
        s.parse().unwrap_or_else(|e| panic!("bad int {s:?}: {e}"))
    }

    /// Replays one golden file (expected values produced by the real
    /// uber-go/ratelimit at 3e5300c, see tests/golden/pacers/README.md).
    fn check_golden(name: &str, text: &str) {
        let mut lines = text.lines();
        let header = lines.next().unwrap_or_default();
        let mut cfg = LeakyBucketConfig::new(1);
        for kv in header.trim_start_matches('#').split_whitespace() {
            match kv.split_once('=') {
                Some(("variant", v)) => {
                    cfg.variant = match v {
                        "atomic" => LeakyVariant::Atomic,
                        "mutex" => LeakyVariant::Mutex,
                        "int64" => LeakyVariant::AtomicInt64,
                        other => panic!("{name}: variant {other}"),
                    }
                }
                Some(("rate", v)) => cfg.rate = int(v),
                Some(("per_ns", v)) => cfg.per_ns = int(v),
                Some(("slack", v)) => cfg.slack = int(v),
                Some(("unix_origin_ns", v)) => cfg.unix_origin_ns = int(v),
                _ => panic!("{name}: bad header {header:?}"),
            }
        }
        let _columns = lines.next();
        let mut lim = bucket(cfg);
        let mut rows = 0;
        for (i, line) in lines.enumerate() {
            let f: Vec<i64> = line.split(',').map(int).collect();
            assert_eq!(f.len(), 3, "{name} row {i}");
            let t = lim.take(f[0]);
            assert_eq!(
                (t.return_ns, t.sleep_ns),
                (f[1], f[2]),
                "{name} row {i}: {line}"
            );
            rows += 1;
        }
        assert!(rows > 0, "{name}: no rows");
    }

    #[test]
    fn golden_traces_from_real_uber_go_ratelimit() {
        for (name, text) in [
            (
                "lb_b1_b2_int64",
                include_str!("../../tests/golden/pacers/lb_b1_b2_int64.csv"),
            ),
            (
                "lb_b2_without_slack_atomic",
                include_str!("../../tests/golden/pacers/lb_b2_without_slack_atomic.csv"),
            ),
            (
                "lb_mutex_slack3",
                include_str!("../../tests/golden/pacers/lb_mutex_slack3.csv"),
            ),
            (
                "lb_int64_unix_epoch_sentinel",
                include_str!("../../tests/golden/pacers/lb_int64_unix_epoch_sentinel.csv"),
            ),
            (
                "lb_atomic_per_minute",
                include_str!("../../tests/golden/pacers/lb_atomic_per_minute.csv"),
            ),
            (
                "lb_int64_negative_slack",
                include_str!("../../tests/golden/pacers/lb_int64_negative_slack.csv"),
            ),
        ] {
            check_golden(name, text);
        }
    }
}
