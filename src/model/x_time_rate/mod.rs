//! A faithful model of `golang.org/x/time/rate`'s `Limiter` (a token bucket).
//!
//! Source read: Debian's `golang-golang-x-time-dev` **0.3.0-1**
//! (`golang.org/x/time` v0.3.0), file `rate/rate.go`, built with Go 1.19 on
//! amd64. Every method below names the Go function it models.
//!
//! Why this is not a textbook token bucket: ratelab is judged against the
//! real library call for call, so the model keeps the library's exact
//! arithmetic and its quirks:
//!
//! * Tokens are an `f64`, converted to and from time with the *same* float
//!   expressions as Go (`Limit.durationFromTokens`,
//!   `Limit.tokensFromDuration`, `Duration.Seconds`), so rounding matches.
//! * A float-to-`Duration` conversion that does not fit an `int64` (or is
//!   NaN) yields `i64::MIN`, which is what Go's conversion compiles to on
//!   amd64 (`CVTTSD2SQ`). A tiny limit therefore makes a reservation's wait
//!   *negative*, so it is granted at once, even by `AllowN`.
//! * `last` and `lastEvent` start as Go's zero `time.Time` (1 January of
//!   year 1), so the first `advance` sees an elapsed time that saturates at
//!   the maximum `Duration`. [`GoTime`] keeps that zero time explicitly.
//! * `Limit == Inf` (`math.MaxFloat64`, not IEEE infinity) skips the bucket
//!   entirely and leaves its state untouched.
//! * `Limit == 0` ignores tokens and instead *decrements `burst`* on every
//!   granted reservation (`AllowN` included); such a reservation records the
//!   remaining burst as its token count.
//! * `CancelAt` restores tokens using the limit recorded in the reservation
//!   and the current `lastEvent`, exactly as the source does.
//!
//! # Versions ([`XTimeVersion`])
//! `rate/rate.go` changed behaviour twice after v0.3.0 (diffed against the
//! newest tag, **v0.13.0**, commit `c0b0320`; v0.4.0-v0.6.0 only touched
//! comments):
//! * **v0.7.0** (`772484e`, "correctly handle 0 limits", golang/go#68541):
//!   `NewLimiter` pre-fills `tokens = float64(b)`, and the `limit == 0`
//!   special case (which *decremented `burst`*) is gone: a zero limit now
//!   goes through the ordinary bucket path, spends the initial `b` tokens,
//!   never refills, and a reservation that must wait gets a delay of
//!   `InfDuration` (so `ReserveN` is OK with delay `MaxInt64`, `WaitN` without
//!   a deadline sleeps `MaxInt64` ns, `AllowN` is false). The pre-fill also
//!   changes tiny and negative limits: the first `advance` no longer starts
//!   from 0 tokens.
//! * **v0.10.0** (`2c6c5a2`, "prevent overflows when calculating
//!   durationFromTokens"): `durationFromTokens` returns `InfDuration` when
//!   `tokens / limit * 1e9 > float64(MaxInt64)` instead of converting an
//!   out-of-range float (which gave `MinInt64`, i.e. an immediate grant). A
//!   value of exactly 2^63, NaN or below -2^63 still converts to `MinInt64`.
//! * v0.11.0 (`66520f6`) only refactored `advance` to return the tokens (the
//!   returned `t` was always the argument): no behaviour change. Unreleased
//!   `2b4e439` (after v0.13.0) compares times with `Equal` instead of `==`:
//!   no change for the times modelled here.
//!
//! `Limiter.wait`, `Every`, `Inf` handling, `advance`, `CancelAt`,
//! `SetLimitAt`/`SetBurstAt` are otherwise identical across v0.3.0-v0.13.0.
//! [`TokenBucket::new`] models the newest ([`XTimeVersion::LATEST`]); all
//! three were checked against the real sources (v0.3.0, v0.9.0, v0.13.0) with
//! the traces in `tests/golden/pacers`.
//!
//! Time: callers pass `t` as integer nanoseconds, read as Go's
//! `time.Unix(0, t)` (so the model's time 0 is the Unix epoch, where
//! `github.com/benbjohnson/clock.NewMock()` starts). Internally a time is a
//! [`GoTime`] with enough range for every value Go can produce here.

use std::fmt;

pub(crate) mod sometimes;

/// Which behaviour of `golang.org/x/time/rate` to model (see the module
/// documentation for what changed and where).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum XTimeVersion {
    /// v0.3.0 up to v0.6.0 (Debian's 0.3.0-1): empty initial bucket, the
    /// burst-decrementing zero-limit path, unchecked `durationFromTokens`.
    V0_3,
    /// v0.7.0 up to v0.9.0: pre-filled bucket, zero limit on the ordinary
    /// path.
    V0_7,
    /// v0.10.0 up to v0.13.0 (the newest tag): plus the `InfDuration` cap in
    /// `durationFromTokens`.
    V0_10,
}

impl XTimeVersion {
    /// The newest behaviour (v0.13.0).
    pub const LATEST: XTimeVersion = XTimeVersion::V0_10;

    /// Parses a version name: any tag `v0.3.0` ... `v0.13.0` (with or
    /// without the `v`), or `latest`.
    pub fn parse(s: &str) -> Option<Self> {
        let t = s.trim();
        if t == "latest" {
            return Some(Self::LATEST);
        }
        let t = t.strip_prefix('v').unwrap_or(t);
        let mut parts = t.split('.');
        let (Some("0"), Some(minor), patch, None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return None;
        };
        if let Some(p) = patch {
            p.parse::<u32>().ok()?;
        }
        match minor.parse::<u32>().ok()? {
            3..=6 => Some(Self::V0_3),
            7..=9 => Some(Self::V0_7),
            10..=13 => Some(Self::V0_10),
            _ => None,
        }
    }

    /// The tag range this behaviour covers.
    pub fn name(self) -> &'static str {
        match self {
            Self::V0_3 => "v0.3.0-v0.6.0",
            Self::V0_7 => "v0.7.0-v0.9.0",
            Self::V0_10 => "v0.10.0-v0.13.0",
        }
    }

    /// `Limit.durationFromTokens` as this version computes it.
    pub fn duration_from_tokens(self, limit: Limit, tokens: f64) -> i64 {
        match self {
            Self::V0_3 | Self::V0_7 => duration_from_tokens(limit, tokens),
            Self::V0_10 => duration_from_tokens_capped(limit, tokens),
        }
    }
}

/// Go's `rate.Limit`: events per second, a `float64`.
pub type Limit = f64;

/// Go's `rate.Inf` = `Limit(math.MaxFloat64)`. IEEE `+inf` is *not* `Inf`
/// for the library: it is compared with `==`.
pub const INF: Limit = f64::MAX;

/// Go's `rate.InfDuration` = `time.Duration(math.MaxInt64)`: the delay of a
/// reservation that is not OK.
pub const INF_DURATION: i64 = i64::MAX;

const NANOS_PER_SEC: i64 = 1_000_000_000;

/// A Go `time.Time` as nanoseconds since the Unix epoch, in an `i128` so that
/// the zero time (year 1) and sums such as `t.Add(InfDuration)` are exact.
///
/// Go's `Time` holds seconds since year 1 in an `int64` plus nanoseconds, so
/// every value reachable from `time.Unix(0, t)` plus a few `Duration`s fits
/// here without the saturation `Time.addSec` would apply.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GoTime(i128);

/// A time as the golden files print it: Unix `seconds.nanoseconds`, or
/// `zero` for Go's zero time.
pub fn fmt_time(t: GoTime) -> String {
    if t.is_zero() {
        return "zero".to_string();
    }
    let v = t.as_i128();
    format!(
        "{}.{:09}",
        v.div_euclid(1_000_000_000),
        v.rem_euclid(1_000_000_000)
    )
}

impl GoTime {
    /// Go's zero `time.Time{}`: 0001-01-01 00:00:00 UTC, which is
    /// 62,135,596,800 seconds before the Unix epoch.
    pub const ZERO: GoTime = GoTime(-62_135_596_800 * NANOS_PER_SEC as i128);

    /// `time.Unix(0, ns)`.
    pub fn from_unix_nanos(ns: i64) -> Self {
        GoTime(i128::from(ns))
    }

    /// A time `ns` nanoseconds after the Unix epoch (any `i128`).
    pub fn from_i128(ns: i128) -> Self {
        GoTime(ns)
    }

    /// `Time.IsZero`.
    pub fn is_zero(self) -> bool {
        self == Self::ZERO
    }

    /// `Time.UnixNano`: wraps modulo 2^64 outside the `int64` range, as Go's
    /// `sec*1e9 + nsec` does.
    pub fn unix_nanos(self) -> i64 {
        self.0 as i64
    }

    /// Nanoseconds since the Unix epoch, unbounded.
    pub fn as_i128(self) -> i128 {
        self.0
    }

    /// `Time.Add(d)`; exact in the range the models use.
    pub fn add_dur(self, d: i64) -> Self {
        GoTime(self.0 + i128::from(d))
    }

    /// `Time.Sub(u)`: saturates at the minimum/maximum `Duration` when the
    /// difference does not fit an `int64`, as Go documents and does.
    pub fn sub_time(self, u: GoTime) -> i64 {
        let d = self.0 - u.0;
        if d > i128::from(i64::MAX) {
            i64::MAX
        } else if d < i128::from(i64::MIN) {
            i64::MIN
        } else {
            d as i64
        }
    }

    /// `Time.Before(u)`.
    pub fn before(self, u: GoTime) -> bool {
        self.0 < u.0
    }
}

/// `time.Duration.Seconds()`: whole seconds and the remainder are converted
/// separately, which rounds differently from `d as f64 / 1e9`.
pub fn duration_seconds(d: i64) -> f64 {
    let sec = d / NANOS_PER_SEC;
    let nsec = d % NANOS_PER_SEC;
    sec as f64 + nsec as f64 / 1e9
}

/// Go's `int64(f)` for a `float64` on amd64 (`CVTTSD2SQ`): truncation toward
/// zero, and the "integer indefinite" value `i64::MIN` for NaN or anything
/// outside the `int64` range. (Rust's `as` saturates instead.)
pub fn go_f64_to_i64(f: f64) -> i64 {
    // 2^63 is exactly representable; anything >= it, or < -2^63, is out.
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    if f.is_nan() || !(-TWO_63..TWO_63).contains(&f) {
        i64::MIN
    } else {
        f as i64
    }
}

/// `rate.Every(interval)`: `Inf` for a non-positive interval, else
/// `1 / interval.Seconds()`.
pub fn every(interval_ns: i64) -> Limit {
    if interval_ns <= 0 {
        return INF;
    }
    1.0 / duration_seconds(interval_ns)
}

/// The book's helper `Per(eventCount, duration) = rate.Every(duration /
/// time.Duration(eventCount))`: an *integer* `Duration` division, so
/// `Per(3, time.Second)` is `Every(333333333ns)`, not exactly 3.
///
/// Go panics (integer divide by zero) for `event_count == 0`; the model
/// returns [`TokenBucketError::DivideByZero`].
pub fn per(event_count: i64, duration_ns: i64) -> Result<Limit, TokenBucketError> {
    if event_count == 0 {
        return Err(TokenBucketError::DivideByZero);
    }
    Ok(every(duration_ns.wrapping_div(event_count)))
}

/// `Limit.durationFromTokens`: `InfDuration` for a non-positive limit, else
/// `Duration(float64(time.Second) * (tokens / limit))`.
pub fn duration_from_tokens(limit: Limit, tokens: f64) -> i64 {
    if limit <= 0.0 {
        return INF_DURATION;
    }
    let seconds = tokens / limit;
    go_f64_to_i64(1e9 * seconds)
}

/// `Limit.durationFromTokens` since v0.10.0: `InfDuration` for a
/// non-positive limit or when `(tokens / limit) * 1e9 > float64(MaxInt64)`
/// (= 2^63), else the amd64 conversion.
pub fn duration_from_tokens_capped(limit: Limit, tokens: f64) -> i64 {
    if limit <= 0.0 {
        return INF_DURATION;
    }
    let duration = (tokens / limit) * 1e9;
    if duration > i64::MAX as f64 {
        return INF_DURATION;
    }
    go_f64_to_i64(duration)
}

/// `Limit.tokensFromDuration`: 0 for a non-positive limit, else
/// `d.Seconds() * limit`.
pub fn tokens_from_duration(limit: Limit, d: i64) -> f64 {
    if limit <= 0.0 {
        return 0.0;
    }
    duration_seconds(d) * limit
}

/// Errors of this module. `Display` prints Go's exact messages where Go has
/// one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TokenBucketError {
    /// `WaitN` with `n > burst` and a finite limit:
    /// `rate: Wait(n=%d) exceeds limiter's burst %d`.
    ExceedsBurst {
        /// Tokens requested.
        n: i64,
        /// The limiter's burst at the call.
        burst: i64,
    },
    /// The reservation's delay is longer than the time left before the
    /// context deadline: `rate: Wait(n=%d) would exceed context deadline`.
    WouldExceedDeadline {
        /// Tokens requested.
        n: i64,
    },
    /// The context's deadline had already passed when `WaitN` was called
    /// (`ctx.Err()` = `context.DeadlineExceeded`).
    DeadlineExceeded,
    /// `Per(0, d)`: Go panics with an integer division by zero.
    DivideByZero,
    /// The context was cancelled (`context.Canceled`): before the call, or
    /// while `Wait` slept (the reservation is then cancelled).
    Canceled,
    /// A replay row cancels a row that holds no reservation.
    NoReservation {
        /// The row that was referenced.
        row: usize,
    },
}

impl fmt::Display for TokenBucketError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ExceedsBurst { n, burst } => {
                write!(f, "rate: Wait(n={n}) exceeds limiter's burst {burst}")
            }
            Self::WouldExceedDeadline { n } => {
                write!(f, "rate: Wait(n={n}) would exceed context deadline")
            }
            Self::DeadlineExceeded => write!(f, "context deadline exceeded"),
            Self::DivideByZero => write!(f, "runtime error: integer divide by zero"),
            Self::Canceled => write!(f, "context canceled"),
            Self::NoReservation { row } => write!(f, "row {row} holds no reservation"),
        }
    }
}

impl std::error::Error for TokenBucketError {}

/// Go's `rate.Reservation`, without the back pointer to its limiter: pass
/// the limiter that made it to [`TokenBucket::cancel_at`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Reservation {
    ok: bool,
    tokens: i64,
    time_to_act: GoTime,
    /// The limit at reservation time (0 for the `Inf` and zero-limit paths,
    /// which leave the field unset in Go).
    limit: Limit,
}

impl Reservation {
    /// `Reservation.OK`.
    pub fn ok(&self) -> bool {
        self.ok
    }

    /// The reservation's token count (for the zero-limit path: the burst
    /// left after it, as in Go).
    pub fn tokens(&self) -> i64 {
        self.tokens
    }

    /// When the holder may act (Go's zero time for a reservation that is not
    /// OK).
    pub fn time_to_act(&self) -> GoTime {
        self.time_to_act
    }

    /// The limit recorded at reservation time.
    pub fn limit(&self) -> Limit {
        self.limit
    }

    /// `Reservation.DelayFrom(t)`: `InfDuration` if not OK, else
    /// `timeToAct - t` clamped at 0.
    pub fn delay_from(&self, t_ns: i64) -> i64 {
        if !self.ok {
            return INF_DURATION;
        }
        let delay = self.time_to_act.sub_time(GoTime::from_unix_nanos(t_ns));
        delay.max(0)
    }
}

/// Go's `rate.Limiter` (`rate.go`, v0.3.0 to v0.13.0 per
/// [`XTimeVersion`]). `Clone` gives an independent copy, handy to fork a
/// replay.
///
/// # Examples
///
/// `rate.NewLimiter(1, 1)`: one token per second, a bucket of one.
///
/// ```
/// use ratelab::model::x_time_rate::TokenBucket;
///
/// let s = 1_000_000_000i64; // x/time/rate takes time.Time; here Unix ns
/// let mut b = TokenBucket::new(1.0, 1);
/// assert!(b.allow_n(0, 1)); // a new bucket is full
/// assert!(!b.allow_n(s / 2, 1)); // half a token
/// assert!(b.allow_n(s, 1));
/// let r = b.reserve_n(s, 1); // a reservation always succeeds within burst...
/// assert!(r.ok());
/// assert_eq!(r.delay_from(s), s); // ...and says how long to wait
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct TokenBucket {
    version: XTimeVersion,
    limit: Limit,
    burst: i64,
    tokens: f64,
    /// When `tokens` was last updated.
    last: GoTime,
    /// The latest time of a rate-limited event (past or future).
    last_event: GoTime,
}

impl TokenBucket {
    /// `NewLimiter(r, b)` of the newest version ([`XTimeVersion::LATEST`]).
    pub fn new(limit: Limit, burst: i64) -> Self {
        Self::new_version(limit, burst, XTimeVersion::LATEST)
    }

    /// `NewLimiter(r, b)` of `version`. v0.3: tokens 0 and zero times; the
    /// bucket is "full" only because the first `advance` sees an elapsed
    /// time of ~292 years. Since v0.7: tokens `float64(b)`.
    pub fn new_version(limit: Limit, burst: i64, version: XTimeVersion) -> Self {
        Self {
            version,
            limit,
            burst,
            tokens: if version >= XTimeVersion::V0_7 {
                burst as f64
            } else {
                0.0
            },
            last: GoTime::ZERO,
            last_event: GoTime::ZERO,
        }
    }

    /// The behaviour modelled.
    pub fn version(&self) -> XTimeVersion {
        self.version
    }

    /// `Limiter.Limit`.
    pub fn limit(&self) -> Limit {
        self.limit
    }

    /// `Limiter.Burst`.
    pub fn burst(&self) -> i64 {
        self.burst
    }

    /// The raw `tokens` field (not advanced to any time).
    pub fn raw_tokens(&self) -> f64 {
        self.tokens
    }

    /// The raw `last` field.
    pub fn last(&self) -> GoTime {
        self.last
    }

    /// The raw `lastEvent` field.
    pub fn last_event(&self) -> GoTime {
        self.last_event
    }

    /// `Limiter.TokensAt(t)`: the tokens `advance` would give, without
    /// changing the limiter.
    pub fn tokens_at(&self, t_ns: i64) -> f64 {
        self.advance(GoTime::from_unix_nanos(t_ns)).1
    }

    /// `Limiter.AllowN(t, n)` = `reserveN(t, n, 0).ok`. Note the zero-limit
    /// path: an allowed call permanently lowers `burst`.
    pub fn allow_n(&mut self, t_ns: i64, n: i64) -> bool {
        self.reserve_n_max(t_ns, n, 0).ok
    }

    /// `Limiter.ReserveN(t, n)` = `reserveN(t, n, InfDuration)`.
    pub fn reserve_n(&mut self, t_ns: i64, n: i64) -> Reservation {
        self.reserve_n_max(t_ns, n, INF_DURATION)
    }

    /// `Limiter.wait` (what `WaitN` runs with `time.Now()`), at time `t` and
    /// an optional absolute context deadline. Returns the delay the caller
    /// sleeps (0 = returns at once).
    ///
    /// Order of checks as in Go: `n > burst` with a finite limit, then a
    /// context already done (deadline at or before `t`), then the
    /// reservation with `maxFutureReserve = deadline - t`. The sleep itself
    /// cannot be cut short by the deadline because the reservation already
    /// fits before it (when both fire at the same instant Go picks at
    /// random; the model lets the timer win).
    pub fn wait_n(
        &mut self,
        t_ns: i64,
        n: i64,
        deadline_ns: Option<i64>,
    ) -> Result<i64, TokenBucketError> {
        self.wait_n_until(t_ns, n, deadline_ns.map(GoTime::from_unix_nanos))
    }

    /// [`TokenBucket::wait_n`] with the deadline as a [`GoTime`], so that
    /// `t.Add(d)` beyond the `int64` nanosecond range stays exact as in Go.
    pub fn wait_n_until(
        &mut self,
        t_ns: i64,
        n: i64,
        deadline: Option<GoTime>,
    ) -> Result<i64, TokenBucketError> {
        let burst = self.burst;
        let limit = self.limit;
        if n > burst && limit != INF {
            return Err(TokenBucketError::ExceedsBurst { n, burst });
        }
        let t = GoTime::from_unix_nanos(t_ns);
        let mut wait_limit = INF_DURATION;
        if let Some(deadline) = deadline {
            // context.WithDeadline is done once now >= deadline.
            if !t.before(deadline) {
                return Err(TokenBucketError::DeadlineExceeded);
            }
            wait_limit = deadline.sub_time(t);
        }
        let r = self.reserve_n_max(t_ns, n, wait_limit);
        if !r.ok {
            return Err(TokenBucketError::WouldExceedDeadline { n });
        }
        Ok(r.delay_from(t_ns))
    }

    /// `Limiter.SetLimitAt(t, newLimit)`: advance with the *old* limit, then
    /// switch.
    pub fn set_limit_at(&mut self, t_ns: i64, new_limit: Limit) {
        let (t, tokens) = self.advance(GoTime::from_unix_nanos(t_ns));
        self.last = t;
        self.tokens = tokens;
        self.limit = new_limit;
    }

    /// `Limiter.SetBurstAt(t, newBurst)`: advance with the *old* burst, then
    /// switch.
    pub fn set_burst_at(&mut self, t_ns: i64, new_burst: i64) {
        let (t, tokens) = self.advance(GoTime::from_unix_nanos(t_ns));
        self.last = t;
        self.tokens = tokens;
        self.burst = new_burst;
    }

    /// `Reservation.CancelAt(t)` for a reservation `r` made by *this*
    /// limiter. Restores `r.tokens` minus the tokens reserved after `r`
    /// (computed from `lastEvent - timeToAct` at `r`'s limit), capped at
    /// burst, and rolls `lastEvent` back when `r` was the latest event.
    pub fn cancel_at(&mut self, r: &Reservation, t_ns: i64) {
        if !r.ok {
            return;
        }
        let t = GoTime::from_unix_nanos(t_ns);
        if self.limit == INF || r.tokens == 0 || r.time_to_act.before(t) {
            return;
        }
        let restore_tokens = r.tokens as f64
            - tokens_from_duration(r.limit, self.last_event.sub_time(r.time_to_act));
        // As in Go, a NaN does not return here.
        if restore_tokens <= 0.0 {
            return;
        }
        let (t, mut tokens) = self.advance(t);
        tokens += restore_tokens;
        let burst = self.burst as f64;
        if tokens > burst {
            tokens = burst;
        }
        self.last = t;
        self.tokens = tokens;
        if r.time_to_act == self.last_event {
            let prev_event = r.time_to_act.add_dur(
                self.version
                    .duration_from_tokens(r.limit, r.tokens.wrapping_neg() as f64),
            );
            if !prev_event.before(t) {
                self.last_event = prev_event;
            }
        }
    }

    /// `Limiter.reserveN(t, n, maxFutureReserve)`, the core of `AllowN`,
    /// `ReserveN` and `WaitN`.
    pub fn reserve_n_max(&mut self, t_ns: i64, n: i64, max_future_reserve: i64) -> Reservation {
        let t = GoTime::from_unix_nanos(t_ns);
        if self.limit == INF {
            return Reservation {
                ok: true,
                tokens: n,
                time_to_act: t,
                limit: 0.0,
            };
        } else if self.limit == 0.0 && self.version == XTimeVersion::V0_3 {
            let mut ok = false;
            if self.burst >= n {
                ok = true;
                self.burst = self.burst.wrapping_sub(n);
            }
            return Reservation {
                ok,
                tokens: self.burst,
                time_to_act: t,
                limit: 0.0,
            };
        }

        let (t, mut tokens) = self.advance(t);
        tokens -= n as f64;
        let mut wait_duration = 0;
        if tokens < 0.0 {
            wait_duration = self.version.duration_from_tokens(self.limit, -tokens);
        }
        let ok = n <= self.burst && wait_duration <= max_future_reserve;
        let mut r = Reservation {
            ok,
            tokens: 0,
            time_to_act: GoTime::ZERO,
            limit: self.limit,
        };
        if ok {
            r.tokens = n;
            r.time_to_act = t.add_dur(wait_duration);
            self.last = t;
            self.tokens = tokens;
            self.last_event = r.time_to_act;
        }
        r
    }

    /// `Limiter.advance(t)`: `last` is clamped to `t` if `t` is earlier, the
    /// elapsed time (saturating) is turned into tokens and capped at burst.
    fn advance(&self, t: GoTime) -> (GoTime, f64) {
        let mut last = self.last;
        if t.before(last) {
            last = t;
        }
        let elapsed = t.sub_time(last);
        let delta = tokens_from_duration(self.limit, elapsed);
        let mut tokens = self.tokens + delta;
        let burst = self.burst as f64;
        if tokens > burst {
            tokens = burst;
        }
        (t, tokens)
    }
}

/// One operation of a token-bucket replay row.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum TokenBucketOp {
    /// `AllowN(t, n)`.
    Allow,
    /// `ReserveN(t, n)`; the reservation is kept for a later `Cancel`.
    Reserve,
    /// `WaitN(ctx, n)` at `t` with the row's deadline.
    Wait,
    /// `CancelAt(t)` of the reservation made by replay row `row` (0-based).
    Cancel {
        /// Index of the `Reserve` row whose reservation is cancelled.
        row: usize,
    },
    /// `SetLimitAt(t, limit)`.
    SetLimit(Limit),
    /// `SetBurstAt(t, burst)`.
    SetBurst(i64),
    /// `TokensAt(t)`.
    Tokens,
}

impl TokenBucketOp {
    /// The name used in replay CSVs.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Allow => "allow",
            Self::Reserve => "reserve",
            Self::Wait => "wait",
            Self::Cancel { .. } => "cancel",
            Self::SetLimit(_) => "set_limit",
            Self::SetBurst(_) => "set_burst",
            Self::Tokens => "tokens",
        }
    }
}

/// One replay row: a separate caller arriving at `t_ns` (non-decreasing
/// across rows is the CLI's contract; the model itself accepts any order,
/// as Go does).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TokenBucketCall {
    /// Call time, `time.Unix(0, t_ns)`.
    pub t_ns: i64,
    /// Tokens (`n` of the `...N` methods).
    pub n: i64,
    /// What the caller does.
    pub op: TokenBucketOp,
    /// Context deadline relative to `t_ns` for `Wait`; 0 = no deadline, a
    /// negative value = already expired.
    pub deadline_ns: i64,
}

/// The outcome of one replay row.
#[derive(Clone, Debug, PartialEq)]
pub struct TokenBucketResult {
    /// Allow: the answer; Reserve: `OK()`; Wait: no error; Cancel: the row
    /// held a reservation; SetLimit/SetBurst/Tokens: true.
    pub ok: bool,
    /// Reserve: `DelayFrom(t)` (-1 when not OK); Wait: time until it
    /// returns (-1 on error); everything else 0.
    pub delay_ns: i64,
    /// `TokensAt(t)` for a `Tokens` row.
    pub tokens: Option<f64>,
    /// The error a `Wait` (or a bad `Cancel`) returned.
    pub error: Option<TokenBucketError>,
}

/// A replay in progress: one limiter plus the reservations made so far (for
/// `Cancel` rows). [`replay_token_bucket`] is the batch form.
#[derive(Clone, Debug, PartialEq)]
pub struct TokenBucketReplay {
    lim: TokenBucket,
    reservations: Vec<Option<Reservation>>,
    /// Cancels of cancelled waits, due at their time ([`TokenBucketReplay::step_with`]).
    pending: Vec<(GoTime, Reservation)>,
}

impl TokenBucketReplay {
    /// A fresh `NewLimiter(limit, burst)` (newest version).
    pub fn new(limit: Limit, burst: i64) -> Self {
        Self::new_version(limit, burst, XTimeVersion::LATEST)
    }

    /// A fresh `NewLimiter(limit, burst)` of `version`.
    pub fn new_version(limit: Limit, burst: i64, version: XTimeVersion) -> Self {
        Self {
            lim: TokenBucket::new_version(limit, burst, version),
            reservations: Vec::new(),
            pending: Vec::new(),
        }
    }

    /// The limiter as it is after the rows so far.
    pub fn limiter(&self) -> &TokenBucket {
        &self.lim
    }

    /// Runs the next row. Each row is a separate caller; a `Wait` caller's
    /// sleep does not hold anything up, so the limiter state is just
    /// advanced by its reservation.
    pub fn step(&mut self, row: &TokenBucketCall) -> TokenBucketResult {
        let lim = &mut self.lim;
        let mut kept = None;
        let result = match row.op {
            TokenBucketOp::Allow => TokenBucketResult {
                ok: lim.allow_n(row.t_ns, row.n),
                ..done()
            },
            TokenBucketOp::Reserve => {
                let r = lim.reserve_n(row.t_ns, row.n);
                kept = Some(r);
                TokenBucketResult {
                    ok: r.ok(),
                    delay_ns: if r.ok() { r.delay_from(row.t_ns) } else { -1 },
                    ..done()
                }
            }
            TokenBucketOp::Wait => {
                let deadline = match row.deadline_ns {
                    0 => None,
                    d => Some(GoTime::from_unix_nanos(row.t_ns).add_dur(d)),
                };
                match lim.wait_n_until(row.t_ns, row.n, deadline) {
                    Ok(delay) => TokenBucketResult {
                        delay_ns: delay,
                        ..done()
                    },
                    Err(e) => TokenBucketResult {
                        ok: false,
                        delay_ns: -1,
                        error: Some(e),
                        ..done()
                    },
                }
            }
            TokenBucketOp::Cancel { row: target } => {
                match self.reservations.get(target).copied().flatten() {
                    Some(r) => {
                        lim.cancel_at(&r, row.t_ns);
                        done()
                    }
                    None => TokenBucketResult {
                        ok: false,
                        error: Some(TokenBucketError::NoReservation { row: target }),
                        ..done()
                    },
                }
            }
            TokenBucketOp::SetLimit(l) => {
                lim.set_limit_at(row.t_ns, l);
                done()
            }
            TokenBucketOp::SetBurst(b) => {
                lim.set_burst_at(row.t_ns, b);
                done()
            }
            TokenBucketOp::Tokens => TokenBucketResult {
                tokens: Some(lim.tokens_at(row.t_ns)),
                ..done()
            },
        };
        self.reservations.push(kept);
        result
    }
}

/// The extensions of a replay row beyond [`TokenBucketCall`] (see
/// [`TokenBucketReplay::step_with`]).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CallExtras {
    /// `Reserve`: `reserveN(t, n, max_wait_ns)` instead of `ReserveN` (the
    /// `maxFutureReserve` of the unexported `reserveN`, which `WaitN` uses
    /// with its deadline).
    pub max_wait_ns: Option<i64>,
    /// `Wait`: the context is cancelled `cancel_ns` after `t` (0 or less:
    /// already cancelled when `WaitN` is called).
    pub cancel_ns: Option<i64>,
    /// `Cancel`: the reservation to cancel, by index of the row that made
    /// it (overrides the op's own row).
    pub cancel_row: Option<usize>,
}

/// What [`TokenBucketReplay::step_with`] adds to a [`TokenBucketResult`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StepExtras {
    /// `Allow`/`Reserve`: the reservation's `timeToAct` when OK; `Wait`:
    /// when `WaitN` returns (OK or not).
    pub act: Option<GoTime>,
}

impl TokenBucketReplay {
    /// [`TokenBucketReplay::step`] with the extensions of `ext`. A wait whose
    /// context is cancelled while it sleeps returns `context canceled` at
    /// `t + cancel_ns` and cancels its reservation *then*
    /// (`Reservation.Cancel()` runs `CancelAt(time.Now())`): the cancel is
    /// queued and applied before the first later row whose `t_ns` is at or
    /// after that time (rows are one caller each, as in
    /// [`TokenBucketReplay::step`]). When the timer and the cancel fire at
    /// the same instant the timer wins.
    pub fn step_with(
        &mut self,
        row: &TokenBucketCall,
        ext: &CallExtras,
    ) -> (TokenBucketResult, StepExtras) {
        self.apply_pending(row.t_ns);
        let t = GoTime::from_unix_nanos(row.t_ns);
        match (row.op, ext) {
            (
                TokenBucketOp::Reserve,
                CallExtras {
                    max_wait_ns: Some(max),
                    ..
                },
            ) => {
                let r = self.lim.reserve_n_max(row.t_ns, row.n, *max);
                self.reservations.push(Some(r));
                let res = TokenBucketResult {
                    ok: r.ok(),
                    delay_ns: if r.ok() { r.delay_from(row.t_ns) } else { -1 },
                    ..done()
                };
                let act = r.ok().then(|| r.time_to_act());
                (res, StepExtras { act })
            }
            (
                TokenBucketOp::Wait,
                CallExtras {
                    cancel_ns: Some(c), ..
                },
            ) => {
                let (res, act) = self.wait_cancellable(row, *c);
                self.reservations.push(None);
                (res, StepExtras { act: Some(act) })
            }
            (
                TokenBucketOp::Cancel { .. },
                CallExtras {
                    cancel_row: Some(target),
                    ..
                },
            ) => {
                let call = TokenBucketCall {
                    op: TokenBucketOp::Cancel { row: *target },
                    ..*row
                };
                (self.step(&call), StepExtras { act: None })
            }
            _ => {
                let res = self.step(row);
                let act = match row.op {
                    TokenBucketOp::Reserve => self
                        .reservations
                        .last()
                        .copied()
                        .flatten()
                        .filter(|r| r.ok())
                        .map(|r| r.time_to_act()),
                    // AllowN's reservation acts at once when OK (its wait is 0).
                    TokenBucketOp::Allow => res.ok.then_some(t),
                    TokenBucketOp::Wait => Some(if res.ok { t.add_dur(res.delay_ns) } else { t }),
                    _ => None,
                };
                (res, StepExtras { act })
            }
        }
    }

    /// Applies the queued cancels of cancelled waits due at or before `t_ns`,
    /// in time order.
    pub fn apply_pending(&mut self, t_ns: i64) {
        self.pending.sort_by_key(|(at, _)| *at);
        while let Some(&(at, r)) = self.pending.first() {
            if at > GoTime::from_unix_nanos(t_ns) {
                break;
            }
            self.pending.remove(0);
            self.cancel_reservation_at(&r, at);
        }
    }

    fn cancel_reservation_at(&mut self, r: &Reservation, at: GoTime) {
        // CancelAt takes a time.Time; the model's takes int64 ns, which
        // covers every time a replay row can produce.
        self.lim.cancel_at(r, at.unix_nanos());
    }

    fn wait_cancellable(
        &mut self,
        row: &TokenBucketCall,
        cancel_ns: i64,
    ) -> (TokenBucketResult, GoTime) {
        let t = GoTime::from_unix_nanos(row.t_ns);
        let err = |e: TokenBucketError| TokenBucketResult {
            ok: false,
            delay_ns: -1,
            error: Some(e),
            ..done()
        };
        let lim = &mut self.lim;
        if row.n > lim.burst() && lim.limit() != INF {
            return (
                err(TokenBucketError::ExceedsBurst {
                    n: row.n,
                    burst: lim.burst(),
                }),
                t,
            );
        }
        if cancel_ns <= 0 {
            return (err(TokenBucketError::Canceled), t);
        }
        let wait_limit = match row.deadline_ns {
            0 => INF_DURATION,
            d if d < 0 => return (err(TokenBucketError::DeadlineExceeded), t),
            d => d,
        };
        let r = lim.reserve_n_max(row.t_ns, row.n, wait_limit);
        if !r.ok() {
            return (err(TokenBucketError::WouldExceedDeadline { n: row.n }), t);
        }
        let delay = r.delay_from(row.t_ns);
        if delay <= cancel_ns {
            return (
                TokenBucketResult {
                    delay_ns: delay,
                    ..done()
                },
                t.add_dur(delay),
            );
        }
        let at = t.add_dur(cancel_ns);
        self.pending.push((at, r));
        (err(TokenBucketError::Canceled), at)
    }
}

/// Replays `rows` through one fresh `NewLimiter(limit, burst)`; see
/// [`TokenBucketReplay::step`].
pub fn replay_token_bucket(
    limit: Limit,
    burst: i64,
    rows: &[TokenBucketCall],
) -> Vec<TokenBucketResult> {
    let mut replay = TokenBucketReplay::new(limit, burst);
    rows.iter().map(|row| replay.step(row)).collect()
}

fn done() -> TokenBucketResult {
    TokenBucketResult {
        ok: true,
        delay_ns: 0,
        tokens: None,
        error: None,
    }
}

/// One key's `Limiter` as an admission limiter: `AllowN(t, w)`. The lab's
/// virtual nanoseconds become Go's int64 `time.Time` nanoseconds here, once.
impl crate::model::KeyState for TokenBucket {
    /// Go's `Limiter` struct: mutex 8, limit 8, burst 8, tokens 8, last 24,
    /// lastEvent 24.
    const STATE_BYTES: u64 = 80;

    fn admit(
        &mut self,
        w: u64,
        now: crate::clock::Nanos,
    ) -> crate::error::Result<crate::model::Decision> {
        Ok(crate::model::Decision::from_allowed(
            self.allow_n(now as i64, w as i64),
        ))
    }
}

#[cfg(test)]
mod tests;
