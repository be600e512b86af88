//! A faithful model of Envoy's local rate limit token buckets (the HTTP
//! `local_ratelimit` filter and everything else built on
//! `Filters::Common::LocalRateLimit::LocalRateLimiterImpl`), in both
//! generations ([`EnvoyBucket`]).
//!
//! Sources read (envoyproxy/envoy):
//! * `source/extensions/filters/common/local_ratelimit/local_ratelimit_impl.{h,cc}`,
//!   the 1.31 version that holds both buckets behind the runtime guard
//!   `envoy.reloadable_features.no_timer_based_rate_limit_token_bucket`,
//!   and the pre-1.31 version (timer only, with `tokens_`/`fill_time_` in
//!   `LocalRateLimiterImpl` itself).
//! * `source/common/common/token_bucket_impl.{h,cc}`, the version whose
//!   `AtomicTokenBucketImpl` keeps one `std::atomic<double>
//!   time_in_seconds_` and a `consume(cb)` template (after folly's
//!   `TokenBucket`).
//! * `changelogs/1.31.0.yaml` (July 19, 2024), behavior change, area
//!   `local_ratelimit`: "Updated the token bucket implementation to use non-timer
//!   based token bucket. The tokens will be refilled when the token bucket is
//!   accessed and no dependency on the timer", revertible with that guard set
//!   to `false`. Later changelogs list the guard as removed, so the timer
//!   bucket is gone from current Envoy.
//! * `api/envoy/type/v3/token_bucket.proto`: `max_tokens` `gt: 0`,
//!   `tokens_per_fill` `gt: 0` (default 1), `fill_interval` required `gt {}`.
//! * `test/extensions/filters/common/local_ratelimit/local_ratelimit_test.cc`
//!   for the tests translated below.
//!
//! # Configuration (`LocalRateLimiterImpl` constructor)
//! `fill_interval` is read in whole milliseconds (`PROTOBUF_GET_MS_OR_DEFAULT`,
//! sub-millisecond parts dropped) and must be `>= 50ms` ("local rate limit
//! token bucket fill timer must be >= 50ms") in both generations: the check
//! runs whenever a fill timer is created, which is for any positive
//! interval. Zeros: the proto validation refuses `max_tokens = 0`,
//! `tokens_per_fill = 0` and a zero `fill_interval` before the constructor
//! runs (the constructor itself would accept a zero interval and simply make
//! no timer, so a timer bucket would never refill); the model refuses all
//! three.
//!
//! # [`EnvoyBucket::TimerRefill`] (`TimerTokenBucket`, default before 1.31)
//! * `tokens_` is a `uint32_t`, starting at `max_tokens`.
//! * `consume`: `false` if `tokens_ == 0`, else `tokens_ - 1` (CAS loop).
//! * `onFillTimer`, run by a dispatcher timer re-armed with `fill_interval`
//!   after each run: `tokens_ = min(max_tokens, tokens_ + tokens_per_fill)`
//!   in **`uint32_t` arithmetic, so the sum wraps** when `max_tokens +
//!   tokens_per_fill > 2^32 - 1` and the bucket can *lose* tokens on a fill
//!   (reproduced).
//! * Ticks are modelled at exactly `origin + k × fill_interval`, `k >= 1`,
//!   where `origin` is when the limiter (and every configured descriptor's
//!   bucket, all made in the constructor) was created; a request at the very
//!   instant of a tick sees the tick. Real timers drift (each re-arm happens
//!   after the callback ran, on the main thread's millisecond timer wheel);
//!   that drift is not modelled.
//!
//! # [`EnvoyBucket::Continuous`] (`AtomicTokenBucket`, default since 1.31)
//! * `fill_rate = tokens_per_fill / duration<double>(fill_interval).count()`
//!   tokens per second, then `max(|fill_rate|, 1 / (365 × 24 × 3600))`.
//! * State: one `double time_in_seconds_`, initialised to `now −
//!   max_tokens / fill_rate` (`init_fill`: the bucket starts full), where
//!   `now` is `duration<double>(monotonicTime().time_since_epoch()).count()`,
//!   i.e. monotonic nanoseconds `as f64 / 1e9` (the offset of the monotonic
//!   clock is [`EnvoyLocalRateLimit::monotonic_origin`], default 0; it changes
//!   the rounding of every float below: at an uptime of a few thousand
//!   seconds a freshly filled 1-token bucket can hold 0.99999999999909
//!   tokens and refuse its first request, which the model reproduces).
//! * `consume(cb)`: `total = min(max_tokens, (now − time_old) × fill_rate)`;
//!   `consumed = cb(total)`, where the local rate limiter's callback is
//!   `total < tokens ? 0.0 : tokens` with `tokens = 1.0 / share_factor`
//!   (share factor 1.0 here: no `local_cluster_rate_limit`); `consumed == 0`
//!   is a refusal; else `time_in_seconds_ = now − (total − consumed) /
//!   fill_rate`. A refused request leaves the state untouched.
//!
//! # Weights
//! The 1.31 buckets take one token per request. Later Envoy versions pass a
//! request cost (`to_consume`) to the same continuous callback (`tokens =
//! to_consume / factor`), all-or-nothing; the model uses that for a request of
//! weight `w` in [`EnvoyBucket::Continuous`] (so `w = 0` is *refused*: the
//! callback returns 0, which `consume` reads as "no tokens"). For
//! [`EnvoyBucket::TimerRefill`], which never had weights, `w` is taken
//! all-or-nothing too: refused if `tokens_ == 0` (upstream's own test) or
//! `tokens_ < w`, else `tokens_ -= w`.
//!
//! # Keys
//! Envoy keeps one bucket per configured descriptor (and, in newer
//! versions, per dynamic descriptor in an LRU); the model gives each key
//! its own bucket ([`EnvoyLocalRateLimit::per_key`]) or one bucket for all
//! ([`EnvoyLocalRateLimit::global`], the filter's default bucket). Buckets
//! of statically configured descriptors all exist from the start, so per
//! key the timer phase is the run's origin (time 0), and a key first seen
//! later finds its bucket full.

use crate::clock::{Nanos, MILLI};
use crate::error::{Error, Result};
use crate::model::{Admit, Decision, Global, KeyState, PerKey};
use std::time::Duration;

/// Which token bucket generation to model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum EnvoyBucket {
    /// `TimerTokenBucket`: whole `tokens_per_fill` added at each
    /// `fill_interval` tick (the default before 1.31, and with the runtime
    /// guard `no_timer_based_rate_limit_token_bucket` set to `false`).
    TimerRefill,
    /// `AtomicTokenBucket`: continuous refill at `tokens_per_fill /
    /// fill_interval` (the default since 1.31).
    #[default]
    Continuous,
}

/// `1.0 / (365 * 24 * 60 * 60)`: `kMinFillRate`, one token a year.
const MIN_FILL_RATE: f64 = 1.0 / (365.0 * 24.0 * 60.0 * 60.0);

/// A local rate limit configuration (`envoy.type.v3.TokenBucket` plus the
/// bucket generation).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EnvoyLocalRateLimit {
    max_tokens: u32,
    tokens_per_fill: u32,
    fill_interval_ms: u64,
    bucket: EnvoyBucket,
    monotonic_origin_ns: u64,
}

impl EnvoyLocalRateLimit {
    /// A validated configuration. `fill_interval` is truncated to whole
    /// milliseconds, as Envoy reads it.
    ///
    /// # Errors
    /// `max_tokens` and `tokens_per_fill` must be `> 0` (the proto's
    /// `gt: 0`); `fill_interval` must be `> 0` (the proto) and `>= 50ms`
    /// (the constructor).
    ///
    /// # Examples
    /// ```
    /// use ratelab::model::envoy_local_rate_limit::{EnvoyBucket, EnvoyLocalRateLimit};
    /// use std::time::Duration;
    /// let cfg = EnvoyLocalRateLimit::new(1, 1, Duration::from_millis(200), EnvoyBucket::TimerRefill)?;
    /// let mut b = cfg.timer_bucket(0);
    /// assert!(b.consume(1, 0));
    /// assert!(!b.consume(1, 199_000_000));
    /// assert!(b.consume(1, 200_000_000)); // the tick at 200 ms refilled one token
    /// assert!(EnvoyLocalRateLimit::new(1, 1, Duration::from_millis(49), EnvoyBucket::Continuous).is_err());
    /// # Ok::<(), ratelab::error::Error>(())
    /// ```
    pub fn new(
        max_tokens: u32,
        tokens_per_fill: u32,
        fill_interval: Duration,
        bucket: EnvoyBucket,
    ) -> Result<Self> {
        if max_tokens == 0 {
            return Err(Error::input(
                "envoy: max_tokens 0: must be > 0 (TokenBucket.max_tokens gt: 0)",
            ));
        }
        if tokens_per_fill == 0 {
            return Err(Error::input(
                "envoy: tokens_per_fill 0: must be > 0 (TokenBucket.tokens_per_fill gt: 0)",
            ));
        }
        if fill_interval.is_zero() {
            return Err(Error::input(
                "envoy: fill_interval 0s: must be > 0 (TokenBucket.fill_interval gt {})",
            ));
        }
        let fill_interval_ms = u64::try_from(fill_interval.as_millis()).unwrap_or(u64::MAX);
        if fill_interval_ms < 50 {
            return Err(Error::input(format!(
                "envoy: fill_interval {fill_interval:?}: local rate limit token bucket fill timer must be >= 50ms"
            )));
        }
        Ok(Self {
            max_tokens,
            tokens_per_fill,
            fill_interval_ms,
            bucket,
            monotonic_origin_ns: 0,
        })
    }

    /// The monotonic clock's reading at virtual time 0 (default 0). Only the
    /// continuous bucket reads absolute time (as `f64` seconds), so only its
    /// rounding depends on this.
    pub fn monotonic_origin(mut self, ns: u64) -> Self {
        self.monotonic_origin_ns = ns;
        self
    }

    /// The bucket generation.
    pub fn bucket(&self) -> EnvoyBucket {
        self.bucket
    }

    /// `fill_interval` in whole milliseconds.
    pub fn fill_interval_ms(&self) -> u64 {
        self.fill_interval_ms
    }

    /// `fill_rate_`: tokens per second, floored at one token a year.
    pub fn fill_rate(&self) -> f64 {
        let rate = f64::from(self.tokens_per_fill) / (self.fill_interval_ms as f64 / 1e3);
        rate.abs().max(MIN_FILL_RATE)
    }

    /// A timer bucket created (full, its timer armed) at `created_at`.
    pub fn timer_bucket(&self, created_at: Nanos) -> EnvoyTimerBucket {
        EnvoyTimerBucket {
            max_tokens: self.max_tokens,
            tokens_per_fill: self.tokens_per_fill,
            interval_ns: self.fill_interval_ms.saturating_mul(MILLI),
            origin: created_at,
            ticks_done: 0,
            tokens: self.max_tokens,
        }
    }

    /// A continuous bucket created (full) at `created_at`.
    pub fn atomic_bucket(&self, created_at: Nanos) -> EnvoyAtomicBucket {
        let fill_rate = self.fill_rate();
        let max_tokens = f64::from(self.max_tokens);
        let mut b = EnvoyAtomicBucket {
            max_tokens,
            fill_rate,
            time_in_seconds: 0.0,
            origin_ns: self.monotonic_origin_ns,
        };
        // init_fill: time_in_seconds -= max_tokens_ / fill_rate_.
        b.time_in_seconds = b.now_seconds(created_at) - max_tokens / fill_rate;
        b
    }

    /// One bucket per key, all made when the configuration loads (virtual
    /// time 0), in the configured generation.
    pub fn per_key(self) -> Box<dyn Admit + Send> {
        match self.bucket {
            EnvoyBucket::TimerRefill => Box::new(PerKey::new(move |_| Ok(self.timer_bucket(0)))),
            EnvoyBucket::Continuous => Box::new(PerKey::new(move |_| Ok(self.atomic_bucket(0)))),
        }
    }

    /// One bucket for every key (the filter's default bucket), made at
    /// virtual time 0.
    pub fn global(self) -> Box<dyn Admit + Send> {
        match self.bucket {
            EnvoyBucket::TimerRefill => Box::new(Global(self.timer_bucket(0))),
            EnvoyBucket::Continuous => Box::new(Global(self.atomic_bucket(0))),
        }
    }
}

/// `TimerTokenBucket`: a `uint32_t` token count refilled by a timer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EnvoyTimerBucket {
    max_tokens: u32,
    tokens_per_fill: u32,
    interval_ns: Nanos,
    origin: Nanos,
    ticks_done: u64,
    tokens: u32,
}

impl EnvoyTimerBucket {
    /// Runs the `onFillTimer` calls due by `now` (ticks at `origin + k ×
    /// fill_interval`, `k >= 1`).
    pub fn run_timers(&mut self, now: Nanos) {
        let due = now.saturating_sub(self.origin) / self.interval_ns;
        let n = due.saturating_sub(self.ticks_done);
        if n == 0 {
            return;
        }
        self.ticks_done = due;
        let (max, add) = (self.max_tokens, self.tokens_per_fill);
        if u64::from(max) + u64::from(add) <= u64::from(u32::MAX) {
            // No wrap possible: n fills are min(max, tokens + n × add).
            let sum = u64::from(self.tokens).saturating_add(n.saturating_mul(u64::from(add)));
            self.tokens = sum.min(u64::from(max)) as u32;
        } else {
            self.tokens = wrapping_fills(self.tokens, max, add, n);
        }
    }

    /// One `onFillTimer`: `min(max_tokens_, expected_tokens +
    /// tokens_per_fill)` in `uint32_t` (wrapping) arithmetic.
    pub fn on_fill_timer(&mut self) {
        self.tokens = self
            .max_tokens
            .min(self.tokens.wrapping_add(self.tokens_per_fill));
    }

    /// The tokens left (`remainingTokens`), without running timers.
    pub fn tokens(&self) -> u32 {
        self.tokens
    }

    /// `consume` for a request of weight `w` at `now` (timers first).
    pub fn consume(&mut self, w: u64, now: Nanos) -> bool {
        self.run_timers(now);
        if self.tokens == 0 || u64::from(self.tokens) < w {
            return false;
        }
        self.tokens -= w as u32;
        true
    }
}

/// `n` wrapping `onFillTimer` calls from `tokens`, in closed form (a trace
/// with a long gap and a 1 ns fill interval must not loop once per tick).
/// With `d = 2^32 − add`, a fill wraps exactly when `t >= d`, giving
/// `t − d` (never above max); otherwise it gives `min(max, t + add)`. So
/// the fills alternate runs of subtracting `d` and runs of adding `add`,
/// each run's length computed at once, and the value at the start of each
/// run (a function of the value alone) is remembered to skip whole cycles.
fn wrapping_fills(tokens: u32, max: u32, add: u32, n: u64) -> u32 {
    let d = (1u64 << 32) - u64::from(add);
    let (max, add) = (u64::from(max), u64::from(add));
    let mut t = u64::from(tokens);
    let mut n = n;
    let mut seen: std::collections::HashMap<u64, u64> = std::collections::HashMap::new();
    let mut skipped = false;
    while n > 0 {
        if !skipped && let Some(before) = seen.insert(t, n) {
            // The same value `before − n` ticks ago: skip whole cycles.
            n %= before - n;
            skipped = true;
            continue;
        }
        if t >= d {
            let k = n.min(t / d);
            t -= k * d;
            n -= k;
        } else {
            let k = n.min((d - t).div_ceil(add));
            t = max.min(t + k * add);
            n -= k;
        }
    }
    t as u32
}

impl KeyState for EnvoyTimerBucket {
    /// `TimerTokenBucket` on x86-64: vptr 8, `multiplier_` 8, `parent_` 8,
    /// `tokens_` 4 (+4 padding), `fill_time_` 8, `max_tokens_` 4,
    /// `tokens_per_fill_` 4, `fill_interval_` 8, `fill_rate_` 8 = 64, plus
    /// the `make_shared` control block (vptr + two counts) 16. The
    /// descriptor's key and map node are not counted.
    const STATE_BYTES: u64 = 80;

    fn admit(&mut self, w: u64, now: Nanos) -> Result<Decision> {
        Ok(Decision::from_allowed(self.consume(w, now)))
    }
}

/// `AtomicTokenBucket` over `AtomicTokenBucketImpl`: the token count is
/// derived from one time.
#[derive(Clone, Debug, PartialEq)]
pub struct EnvoyAtomicBucket {
    max_tokens: f64,
    fill_rate: f64,
    time_in_seconds: f64,
    origin_ns: u64,
}

impl EnvoyAtomicBucket {
    /// `timeNowInSeconds()`: monotonic ns as `f64`, divided by 1e9.
    fn now_seconds(&self, now: Nanos) -> f64 {
        self.origin_ns.saturating_add(now) as f64 / 1e9
    }

    /// `remainingTokens()` at `now`.
    pub fn remaining_tokens(&self, now: Nanos) -> f64 {
        let time_now = self.now_seconds(now);
        cpp_min(
            self.max_tokens,
            (time_now - self.time_in_seconds) * self.fill_rate,
        )
    }

    /// `consume(cb)` with the local rate limiter's callback for `w` tokens.
    pub fn consume(&mut self, w: u64, now: Nanos) -> bool {
        let time_now = self.now_seconds(now);
        let time_old = self.time_in_seconds;
        let total_tokens = cpp_min(self.max_tokens, (time_now - time_old) * self.fill_rate);
        let tokens = w as f64 / 1.0;
        let consumed = if total_tokens < tokens { 0.0 } else { tokens };
        if consumed == 0.0 {
            return false;
        }
        let total_tokens_new = total_tokens - consumed;
        self.time_in_seconds = time_now - (total_tokens_new / self.fill_rate);
        true
    }
}

/// `std::min(a, b)`: `(b < a) ? b : a`.
fn cpp_min(a: f64, b: f64) -> f64 {
    if b < a {
        b
    } else {
        a
    }
}

impl KeyState for EnvoyAtomicBucket {
    /// `AtomicTokenBucket` on x86-64: vptr 8 plus `AtomicTokenBucketImpl`
    /// (`max_tokens_` 8, `fill_rate_` 8, `time_in_seconds_` 8,
    /// `time_source_` reference 8) = 40, plus the `make_shared` control
    /// block 16. The descriptor's key and map node are not counted.
    const STATE_BYTES: u64 = 56;

    fn admit(&mut self, w: u64, now: Nanos) -> Result<Decision> {
        Ok(Decision::from_allowed(self.consume(w, now)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrapping_fills_in_closed_form_equal_one_by_one() {
        let cases: [(u32, u32); 6] = [
            (u32::MAX, u32::MAX),
            (u32::MAX - 3, 7),
            (3_000_000_000, 2_000_000_000),
            (2, u32::MAX),
            ((1 << 31) + 5, 1 << 31),
            (4_000_000_000, 300_000_001),
        ];
        for (max, add) in cases {
            for start in [0u32, 1, max / 3, max] {
                let mut slow = start;
                for n in 0..300u64 {
                    assert_eq!(
                        wrapping_fills(start, max, add, n),
                        slow,
                        "{max} {add} {start} {n}"
                    );
                    slow = max.min(slow.wrapping_add(add));
                }
            }
        }
        // 2^40 ticks answer at once.
        let _ = wrapping_fills(5, u32::MAX, u32::MAX, 1 << 40);
    }

    const MS: Nanos = MILLI;

    fn cfg(max: u32, per_fill: u32, ms: u64, b: EnvoyBucket) -> EnvoyLocalRateLimit {
        match EnvoyLocalRateLimit::new(max, per_fill, Duration::from_millis(ms), b) {
            Ok(c) => c,
            Err(e) => panic!("{e}"),
        }
    }

    /// local_ratelimit_test.cc TooFastFillRate, plus the proto's `gt: 0`s.
    #[test]
    fn config_validation() {
        for b in [EnvoyBucket::TimerRefill, EnvoyBucket::Continuous] {
            let e = EnvoyLocalRateLimit::new(100, 1, Duration::from_millis(49), b).unwrap_err();
            assert!(e.message().contains("fill timer must be >= 50ms"), "{e:?}");
            // 50.9 ms is read as 50 ms, which is allowed.
            let c = EnvoyLocalRateLimit::new(1, 1, Duration::from_micros(50_900), b).unwrap();
            assert_eq!(c.fill_interval_ms(), 50);
            // 49.9 ms is read as 49 ms.
            assert!(EnvoyLocalRateLimit::new(1, 1, Duration::from_micros(49_900), b).is_err());
            assert!(EnvoyLocalRateLimit::new(0, 1, Duration::from_secs(1), b)
                .unwrap_err()
                .message()
                .contains("max_tokens 0"));
            assert!(EnvoyLocalRateLimit::new(1, 0, Duration::from_secs(1), b)
                .unwrap_err()
                .message()
                .contains("tokens_per_fill 0"));
            assert!(EnvoyLocalRateLimit::new(1, 1, Duration::ZERO, b)
                .unwrap_err()
                .message()
                .contains("fill_interval 0s"));
        }
    }

    /// Envoy's TokenBucket and AtomicTokenBucket tests share this script
    /// (200 ms, 1 token per fill, 1 max): one token, refused until 200 ms,
    /// one again at 600 ms (capped at 1 however many ticks passed).
    const TOKEN_BUCKET_1_1_200MS: [(u64, bool); 7] = [
        (0, true),
        (0, false),
        (0, false),
        (200, true),
        (200, false),
        (600, true),
        (600, false),
    ];

    /// Consumes one token at each `(ms, expected)` step of a script.
    fn script(mut consume: impl FnMut(Nanos) -> bool, steps: &[(u64, bool)]) {
        for (i, &(ms, want)) in steps.iter().enumerate() {
            assert_eq!(consume(ms * MS), want, "step {i} at {ms} ms");
        }
    }

    /// local_ratelimit_test.cc TokenBucket (timer): 200 ms, 1, 1; then
    /// 0 -> 1 tokens at 200 ms, 0 -> 1 -> 1 (two ticks) at 600 ms.
    #[test]
    fn timer_token_bucket() {
        let mut b = cfg(1, 1, 200, EnvoyBucket::TimerRefill).timer_bucket(0);
        script(|t| b.consume(1, t), &TOKEN_BUCKET_1_1_200MS);
    }

    /// local_ratelimit_test.cc TokenBucketMultipleTokensPerFill: 200 ms, 2, 2
    /// (0 -> 2 -> 1 at 200 ms, 1 -> 2 -> 1 at 400 ms).
    #[test]
    fn timer_multiple_tokens_per_fill() {
        let mut b = cfg(2, 2, 200, EnvoyBucket::TimerRefill).timer_bucket(0);
        let steps = [
            (0, true),
            (0, true),
            (0, false),
            (200, true),
            (400, true),
            (400, true),
            (400, false),
        ];
        script(|t| b.consume(1, t), &steps);
    }

    /// local_ratelimit_test.cc TokenBucketMaxTokensGreaterThanTokensPerFill:
    /// 200 ms, 2, 1.
    #[test]
    fn timer_max_tokens_greater_than_tokens_per_fill() {
        let mut b = cfg(2, 1, 200, EnvoyBucket::TimerRefill).timer_bucket(0);
        let steps = [(0, true), (0, true), (0, false), (200, true), (200, false)];
        script(|t| b.consume(1, t), &steps);
    }

    /// local_ratelimit_test.cc TokenBucketStatus (timer): 3000 ms, 2, 2 —
    /// time passing between ticks refills nothing.
    #[test]
    fn timer_refills_only_on_ticks() {
        let mut b = cfg(2, 2, 3000, EnvoyBucket::TimerRefill).timer_bucket(0);
        assert!(b.consume(1, 0));
        assert!(b.consume(1, 1000 * MS));
        assert_eq!(b.tokens(), 0);
        assert!(!b.consume(1, 2000 * MS));
        b.run_timers(3000 * MS);
        assert_eq!(b.tokens(), 2);
    }

    /// local_ratelimit_test.cc AtomicTokenBucket: 200 ms, 1, 1 (0 -> 1 -> 1,
    /// capped, at 600 ms).
    #[test]
    fn atomic_token_bucket() {
        let mut b = cfg(1, 1, 200, EnvoyBucket::Continuous).atomic_bucket(0);
        script(|t| b.consume(1, t), &TOKEN_BUCKET_1_1_200MS);
    }

    /// The continuous bucket refills fractions between ticks; the timer one
    /// does not: 2 tokens per 1 s, bucket of 2, drained at 0.
    #[test]
    fn continuous_refills_between_ticks() {
        let c = cfg(2, 2, 1000, EnvoyBucket::Continuous);
        let mut a = c.atomic_bucket(0);
        let mut t = c.timer_bucket(0);
        for b in [true, true, false] {
            assert_eq!(a.consume(1, 0), b);
            assert_eq!(t.consume(1, 0), b);
        }
        assert!(a.consume(1, 500 * MS));
        assert!(!t.consume(1, 500 * MS));
        assert!((a.remaining_tokens(750 * MS) - 0.5).abs() < 1e-9);
        assert!(t.consume(1, 1000 * MS));
    }

    /// Timer ticks keep the creation phase: a bucket made at 30 ms with a
    /// 100 ms interval refills at 130, 230, … ms.
    #[test]
    fn timer_ticks_from_creation() {
        let mut b = cfg(1, 1, 100, EnvoyBucket::TimerRefill).timer_bucket(30 * MS);
        script(
            |t| b.consume(1, t),
            &[(30, true), (129, false), (130, true), (229, false)],
        );
    }

    /// `uint32_t` wrap in onFillTimer: max 4e9, tokens_per_fill 4e9. A full
    /// bucket *loses* tokens at each tick.
    #[test]
    fn timer_refill_wraps_in_u32() {
        let mut b =
            cfg(4_000_000_000, 4_000_000_000, 100, EnvoyBucket::TimerRefill).timer_bucket(0);
        assert_eq!(b.tokens(), 4_000_000_000);
        b.run_timers(100 * MS);
        let wrapped = 4_000_000_000u32.wrapping_add(4_000_000_000);
        assert_eq!(b.tokens(), wrapped);
        assert!(wrapped < 4_000_000_000);
        // No wrap: a long idle period is one min().
        let mut b = cfg(10, 3, 100, EnvoyBucket::TimerRefill).timer_bucket(0);
        assert!(b.consume(10, 0));
        b.run_timers(200 * MS);
        assert_eq!(b.tokens(), 6);
        b.run_timers(1_000_000 * MS);
        assert_eq!(b.tokens(), 10);
    }

    /// Weights: all or nothing in both; weight 0 is refused by the
    /// continuous callback and passes a non-empty timer bucket.
    #[test]
    fn weights() {
        let c = cfg(5, 5, 1000, EnvoyBucket::Continuous);
        let mut a = c.atomic_bucket(0);
        let mut t = c.timer_bucket(0);
        assert!(!a.consume(6, 0));
        assert!(!t.consume(6, 0));
        assert!(a.consume(5, 0));
        assert!(t.consume(4, 0));
        assert!(!a.consume(0, 0));
        assert!(t.consume(0, 0));
        assert!(t.consume(1, 0));
        assert!(!t.consume(0, 0));
    }

    /// A refused request leaves the continuous state as it was.
    #[test]
    fn refusal_leaves_state() {
        let mut a = cfg(1, 1, 1000, EnvoyBucket::Continuous).atomic_bucket(0);
        assert!(a.consume(1, 0));
        let before = a.clone();
        assert!(!a.consume(1, 400 * MS));
        assert_eq!(a, before);
        assert!(a.consume(1, 1000 * MS));
    }

    #[test]
    fn per_key_and_global() {
        let c = cfg(1, 1, 1000, EnvoyBucket::Continuous);
        let mut p = c.per_key();
        assert!(p.admit(0, 1, 0).unwrap().allowed);
        assert!(p.admit(1, 1, 0).unwrap().allowed);
        assert!(!p.admit(0, 1, 0).unwrap().allowed);
        assert_eq!(p.memory_bytes(2), 112);
        let mut g = c.global();
        assert!(g.admit(0, 1, 0).unwrap().allowed);
        assert!(!g.admit(1, 1, 0).unwrap().allowed);
        assert_eq!(g.memory_bytes(2), 56);
        let mut p = cfg(1, 1, 1000, EnvoyBucket::TimerRefill).per_key();
        // A key first seen at 1.5 s shares the phase of time 0.
        assert!(p.admit(3, 1, 1500 * MS).unwrap().allowed);
        assert!(!p.admit(3, 1, 1999 * MS).unwrap().allowed);
        assert!(p.admit(3, 1, 2000 * MS).unwrap().allowed);
        assert_eq!(p.memory_bytes(1), 80);
    }

    /// Rounding depends on the monotonic clock's absolute value: with an
    /// uptime of about 3000 s, `init_fill` leaves a 1-token bucket holding
    /// 0.99999999999909 tokens, so the very first request is refused; at
    /// about 1000 s the first passes but the refill 200 ms later falls
    /// short by 3.4e-13 and the next request must wait a little longer.
    #[test]
    fn float_rounding_depends_on_the_monotonic_origin() {
        let c = cfg(1, 1, 200, EnvoyBucket::Continuous);
        let mut a = c.monotonic_origin(3_000_123_456_810).atomic_bucket(0);
        assert!(!a.consume(1, 0));
        assert!(a.consume(1, MS));
        let mut a = c.monotonic_origin(1_000_123_456_796).atomic_bucket(0);
        assert!(a.consume(1, 0));
        assert!(!a.consume(1, 200 * MS));
        assert!(a.consume(1, 201 * MS));
        // At origin 0 both are exact.
        let mut a = c.atomic_bucket(0);
        assert!(a.consume(1, 0));
        assert!(a.consume(1, 200 * MS));
    }

    #[test]
    fn fill_rate_floor() {
        let c = cfg(1, 1, u64::MAX / 1_000_000, EnvoyBucket::Continuous);
        assert_eq!(c.fill_rate(), MIN_FILL_RATE);
        assert_eq!(cfg(1, 2, 200, EnvoyBucket::Continuous).fill_rate(), 10.0);
    }
}
