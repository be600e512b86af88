//! The fixed-window rate limiter of the Redis documentation's `INCR` page,
//! "Pattern: Rate limiter" (`commands/incr.md` in redis/redis-doc, read at
//! commit `029232c9`), with Redis's expiry rule from `db.c`
//! (`keyIsExpired`).
//!
//! # What the page says
//! The page limits an API to ten calls per second per IP with two
//! patterns:
//! * **Rate limiter 1**: one key per IP *and second*, `keyname =
//!   ip:CURRENT_UNIX_TIME()`; `MULTI; INCR(keyname); EXPIRE(keyname, 10);
//!   EXEC`; then `IF current > 10 THEN ERROR` with `current` the reply of
//!   the `INCR`. Windows are aligned to whole seconds, and since `INCR`
//!   comes before the comparison every call is counted, denied ones too.
//!   The 10 s `EXPIRE` only removes old keys (they are never read again
//!   once the second has passed). An older revision of the page (still
//!   circulating in translations) read the key with `GET` first and
//!   incremented only when admitted.
//! * **Rate limiter 2**: one key per IP, "created in a way that it only
//!   will survive one second, starting from the first request performed in
//!   the current second":
//!   `current = GET(ip); IF current != NULL AND current > 10 THEN ERROR
//!   ELSE value = INCR(ip); IF value == 1 THEN EXPIRE(ip, 1)`.
//!   The page then notes the race (a client that performs the `INCR` but not
//!   the `EXPIRE` leaks the key, which then never expires) and fixes it by
//!   moving `INCR` + optional `EXPIRE` into one Lua script: `current =
//!   incr(key); if current == 1 then expire(key, 1) end`.
//!
//! Two facts of that page matter for decisions, and are the model's
//! switches:
//! * [`FixedWindowAlign`]: a window starts at the key's first request and
//!   lasts the interval (rate limiter 2, the `EXPIRE` on the first `INCR`),
//!   or windows are aligned, `⌊t / interval⌋` (rate limiter 1's key per
//!   second).
//! * [`CountOrder`]: `INCR` then compare the reply (rate limiter 1; and the
//!   `INCR`-then-`EXPIRE` script as it is deployed, returning the count to
//!   compare), which **counts every request including denied ones** and
//!   admits exactly `limit` per window; or, as rate limiter 2 is printed,
//!   `GET`, deny if the count is already `> limit`, else `INCR`: denied
//!   requests are **not** counted and, because the count compared is the
//!   one *before* this request, `limit + 1` requests pass per window (the
//!   eleventh call sees 10, which is not `> 10`).
//!
//! # Redis time and expiry
//! * `EXPIRE key s` sets the key's expiry to `now_ms + s × 1000` (the
//!   model uses the millisecond form, `PEXPIRE key interval_ms`, so the
//!   interval must be a whole number of milliseconds for
//!   [`FixedWindowAlign::FirstRequest`]). `INCR` keeps an existing TTL.
//! * A key is expired when `now_ms > expiry` (`keyIsExpired` returns
//!   `now > when`): at exactly `first + interval` ms the old key still counts,
//!   so a first-request window spans `interval + 1` millisecond ticks.
//!   Redis's clock is milliseconds: the model reads virtual time as `⌊t /
//!   1 ms⌋` (virtual time 0 taken as a whole Unix millisecond).
//! * Aligned windows are aligned to Unix time as the page's
//!   `CURRENT_UNIX_TIME()` key is: [`FixedWindowCounter::origin`] gives the
//!   Unix time of virtual time 0 (without it, virtual time is Unix time).
//!
//! # Weights
//! A request of weight `w` is `INCRBY key w` (`INCR` for `w = 1`),
//! compared as above; with [`CountOrder::GetThenIncr`] the weight is not in
//! the comparison (the page compares the stored count only).
//!
//! # Only the happy path
//! The model runs every command as written, with no lost `EXPIRE`, no
//! failover and no clock skew. Known ways the real pattern differs: if the
//! `EXPIRE` is lost (the non-atomic rate limiter 2 the page warns about)
//! the key never expires and its count only grows, so the key is limited
//! forever; a script that checks `== 1` after an `INCRBY` of more than 1
//! never sets the expiry either (the model sets it on the key's creation);
//! Redis may also evict keys under memory pressure.
//!
//! # Memory
//! [`FIXED_WINDOW_COUNTER_STATE_BYTES`] = 16 per key: the 64-bit count and
//! the key's 64-bit expiry in milliseconds (first-request windows) or the
//! window number its name carries (aligned). Redis's own per-key overhead
//! (key string, value object, dictionary entries) is not counted, nor, for
//! aligned windows, the earlier windows' keys Redis keeps until their
//! `EXPIRE` (the page's 10 s: up to 10 keys per IP).

use crate::clock::{Nanos, MILLI};
use crate::error::{Error, Result};
use crate::model::{Decision, KeyState};
use std::time::Duration;

/// Bytes of one key's state: the count and the expiry (or window number),
/// a `u64` each.
pub const FIXED_WINDOW_COUNTER_STATE_BYTES: u64 = 16;

/// Where a key's windows start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FixedWindowAlign {
    /// At the key's first request; the key expires `interval` later
    /// (rate limiter 2: `EXPIRE` when `INCR` returned 1).
    #[default]
    FirstRequest,
    /// At multiples of the interval since virtual time 0 (rate limiter 1:
    /// a key per `⌊t / interval⌋`).
    Aligned,
}

/// Whether the count is incremented before or after the comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CountOrder {
    /// `INCRBY key w`, deny if the reply `> limit`: every request counts.
    #[default]
    IncrThenCompare,
    /// `GET key`, deny if it `> limit`, else `INCRBY key w`: only admitted
    /// requests count, and `limit + 1` (unit) requests pass per window.
    GetThenIncr,
}

/// One key of the Redis `INCR` + `EXPIRE` limiter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FixedWindowCounter {
    limit: u64,
    /// Interval, ns (a whole number of ms for first-request windows).
    interval: Nanos,
    align: FixedWindowAlign,
    order: CountOrder,
    /// The key exists (for aligned windows: the current window's key).
    exists: bool,
    /// The key's value.
    count: u64,
    /// First-request windows: the expiry, Redis ms. Aligned: the window
    /// number.
    mark: u64,
    /// Unix time of virtual time 0, modulo the interval (a whole number of
    /// ms for first-request windows, so Redis's ms grid stays right too).
    shift: Nanos,
}

impl FixedWindowCounter {
    /// At most `limit` per `interval` per key, windows as `align` says,
    /// `INCR` before the comparison (see [`FixedWindowCounter::order`]).
    ///
    /// Errors: a zero `limit` (it denies everything), a zero `interval`,
    /// and for [`FixedWindowAlign::FirstRequest`] an interval that is not
    /// a whole number of milliseconds (`PEXPIRE` takes milliseconds).
    ///
    /// # Examples
    /// ```
    /// use ratelab::clock::MILLI;
    /// use ratelab::model::redis_fixed_window::{CountOrder, FixedWindowAlign, FixedWindowCounter};
    /// use ratelab::model::KeyState;
    /// use std::time::Duration;
    /// let mut k = FixedWindowCounter::new(2, Duration::from_secs(1), FixedWindowAlign::FirstRequest)?;
    /// assert!(k.admit(1, 300 * MILLI)?.allowed); // INCR -> 1, EXPIRE: the key lives to 1300 ms
    /// assert!(k.admit(1, 400 * MILLI)?.allowed);
    /// assert!(!k.admit(1, 1300 * MILLI)?.allowed); // 3 > 2; expired only after 1300 ms
    /// assert!(k.admit(1, 1301 * MILLI)?.allowed); // a new key
    /// // As rate limiter 2 is printed, one more passes per window.
    /// let mut g = k.order(CountOrder::GetThenIncr);
    /// let passed = (0..5).filter(|_| g.admit(1, 5000 * MILLI).unwrap().allowed).count();
    /// assert_eq!(passed, 3);
    /// assert!(FixedWindowCounter::new(2, Duration::from_micros(1500), FixedWindowAlign::FirstRequest).is_err());
    /// # Ok::<(), ratelab::error::Error>(())
    /// ```
    pub fn new(limit: u64, interval: Duration, align: FixedWindowAlign) -> Result<Self> {
        let bad = |m: String| Error::input(format!("redis fixed window: {m}"));
        if limit == 0 {
            return Err(bad(
                "limit 0: expected at least 1 request per interval".into()
            ));
        }
        if interval.is_zero() {
            return Err(bad("interval 0s: expected more than 0".into()));
        }
        let ns = u64::try_from(interval.as_nanos())
            .map_err(|_| bad(format!("interval {interval:?}: longer than 584 years")))?;
        if align == FixedWindowAlign::FirstRequest && ns % MILLI != 0 {
            return Err(bad(format!(
                "interval {interval:?}: expected a whole number of milliseconds (PEXPIRE)"
            )));
        }
        Ok(Self {
            limit,
            interval: ns,
            align,
            order: CountOrder::default(),
            exists: false,
            count: 0,
            mark: 0,
            shift: 0,
        })
    }

    /// Sets the Unix time of virtual time 0 (ns): aligned windows are
    /// `⌊Unix time / interval⌋`, and Redis's millisecond clock is Unix ms,
    /// as upstream's are.
    ///
    /// # Examples
    /// ```
    /// use ratelab::clock::MILLI;
    /// use ratelab::model::redis_fixed_window::{FixedWindowAlign, FixedWindowCounter};
    /// use ratelab::model::KeyState;
    /// use std::time::Duration;
    /// // Virtual 0 is 0.5 s into a Unix second: a new second at virtual 0.5 s.
    /// let mut k = FixedWindowCounter::new(1, Duration::from_secs(1), FixedWindowAlign::Aligned)?
    ///     .origin(1_767_225_600_500 * MILLI);
    /// assert!(k.admit(1, 0)?.allowed);
    /// assert!(!k.admit(1, 400 * MILLI)?.allowed);
    /// assert!(k.admit(1, 500 * MILLI)?.allowed);
    /// # Ok::<(), ratelab::error::Error>(())
    /// ```
    pub fn origin(mut self, unix_ns: Nanos) -> Self {
        self.shift = unix_ns % self.interval;
        self
    }

    /// Sets whether `INCR` comes before the comparison (the default) or
    /// after a `GET`.
    pub fn order(mut self, order: CountOrder) -> Self {
        self.order = order;
        self
    }

    /// The key's count as Redis would return it at `now` (0 if the key
    /// does not exist).
    pub fn count_at(&self, now: Nanos) -> u64 {
        let mut s = *self;
        s.expire(now);
        s.count
    }

    /// Drops the key if it no longer exists at `now`.
    fn expire(&mut self, now: Nanos) {
        let now = now + self.shift;
        let gone = match self.align {
            FixedWindowAlign::FirstRequest => now / MILLI > self.mark,
            FixedWindowAlign::Aligned => now / self.interval != self.mark,
        };
        if self.exists && gone {
            self.exists = false;
            self.count = 0;
        }
    }

    /// `INCRBY key w`, creating the key (and its expiry) if it is absent.
    fn incr(&mut self, w: u64, now: Nanos) {
        let now = now + self.shift;
        if !self.exists {
            self.exists = true;
            self.count = 0;
            self.mark = match self.align {
                FixedWindowAlign::FirstRequest => now / MILLI + self.interval / MILLI,
                FixedWindowAlign::Aligned => now / self.interval,
            };
        }
        self.count = self.count.saturating_add(w);
    }
}

impl KeyState for FixedWindowCounter {
    const STATE_BYTES: u64 = FIXED_WINDOW_COUNTER_STATE_BYTES;

    fn admit(&mut self, w: u64, now: Nanos) -> Result<Decision> {
        self.expire(now);
        let allowed = match self.order {
            CountOrder::IncrThenCompare => {
                self.incr(w, now);
                self.count <= self.limit
            }
            CountOrder::GetThenIncr => {
                let ok = !(self.exists && self.count > self.limit);
                if ok {
                    self.incr(w, now);
                }
                ok
            }
        };
        Ok(Decision::from_allowed(allowed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::SECOND;

    fn key(limit: u64, align: FixedWindowAlign, order: CountOrder) -> FixedWindowCounter {
        FixedWindowCounter::new(limit, Duration::from_secs(1), align)
            .unwrap()
            .order(order)
    }

    fn passed(k: &mut FixedWindowCounter, n: usize, t: Nanos) -> usize {
        (0..n).filter(|_| k.admit(1, t).unwrap().allowed).count()
    }

    #[test]
    fn rate_limiter_1_counts_every_call_in_aligned_seconds() {
        let mut k = key(10, FixedWindowAlign::Aligned, CountOrder::IncrThenCompare);
        assert_eq!(passed(&mut k, 15, 500 * MILLI), 10);
        assert_eq!(k.count_at(999 * MILLI), 15); // the denied five were counted
                                                 // A new second is a new key, whenever the first one was made.
        assert_eq!(k.count_at(SECOND), 0);
        assert_eq!(passed(&mut k, 15, SECOND), 10);
    }

    #[test]
    fn rate_limiter_2_as_printed_admits_one_more_and_counts_admitted_only() {
        let mut k = key(10, FixedWindowAlign::FirstRequest, CountOrder::GetThenIncr);
        assert_eq!(passed(&mut k, 15, 0), 11); // GET 10 is not > 10
        assert_eq!(k.count_at(0), 11);
        // The same on aligned windows (the page's older rate limiter 1).
        let mut a = key(10, FixedWindowAlign::Aligned, CountOrder::GetThenIncr);
        assert_eq!(passed(&mut a, 15, 0), 11);
    }

    #[test]
    fn a_first_request_window_lives_interval_plus_the_expiry_millisecond() {
        let mut k = key(
            1,
            FixedWindowAlign::FirstRequest,
            CountOrder::IncrThenCompare,
        );
        let t0 = 7 * SECOND + 250 * MILLI + 123; // Redis sees 7250 ms
        assert_eq!(passed(&mut k, 1, t0), 1);
        // EXPIRE at 8250 ms; expired only when now_ms > 8250.
        assert_eq!(passed(&mut k, 1, 8 * SECOND + 250 * MILLI + 999_999), 0);
        assert_eq!(k.count_at(8 * SECOND + 251 * MILLI), 0);
        assert_eq!(passed(&mut k, 1, 8 * SECOND + 251 * MILLI), 1);
    }

    #[test]
    fn incr_keeps_the_ttl_so_a_busy_key_still_expires() {
        let mut k = key(
            3,
            FixedWindowAlign::FirstRequest,
            CountOrder::IncrThenCompare,
        );
        for ms in (0..1000).step_by(10) {
            k.admit(1, ms * MILLI).unwrap();
        }
        assert_eq!(k.count_at(1000 * MILLI), 100);
        assert_eq!(passed(&mut k, 3, 1001 * MILLI), 3);
    }

    #[test]
    fn a_weight_is_incrby_and_compared_by_the_order() {
        let mut k = key(5, FixedWindowAlign::Aligned, CountOrder::IncrThenCompare);
        assert!(!k.admit(6, 0).unwrap().allowed);
        assert!(!k.admit(1, 0).unwrap().allowed); // 7 > 5: the 6 counted
        let mut g = key(5, FixedWindowAlign::Aligned, CountOrder::GetThenIncr);
        assert!(g.admit(6, 0).unwrap().allowed); // GET: no key yet
        assert!(!g.admit(1, 0).unwrap().allowed); // 6 > 5
    }

    #[test]
    fn bad_parameters_name_themselves() {
        let e = |r: Result<FixedWindowCounter>| r.unwrap_err().to_string();
        let s = Duration::from_secs(1);
        assert!(e(FixedWindowCounter::new(0, s, FixedWindowAlign::Aligned)).contains("limit 0"));
        assert!(e(FixedWindowCounter::new(
            1,
            Duration::ZERO,
            FixedWindowAlign::Aligned
        ))
        .contains("interval 0s"));
        let ns = Duration::from_nanos(1_500_000);
        assert!(e(FixedWindowCounter::new(
            1,
            ns,
            FixedWindowAlign::FirstRequest
        ))
        .contains("1.5ms"));
        assert!(FixedWindowCounter::new(1, ns, FixedWindowAlign::Aligned).is_ok());
    }
}
