//! Traefik's `rateLimit` middleware with its in-memory limiter: one
//! golang.org/x/time/rate `Limiter` per source, used through `Reserve`
//! with a maximum delay rather than `Allow`, and dropped after a TTL of
//! inactivity.
//!
//! Follows traefik/traefik at fd5a576 (x/time v0.15.0 in its go.mod; the
//! token bucket model follows v0.13.0, and `rate/rate.go` has changed
//! since only in golang/time 2b4e439, `CancelAt` comparing
//! `timeToAct.Equal(lastEvent)` rather than `==`, which the model's time
//! comparison already is):
//!
//! * `pkg/middlewares/ratelimiter/rate_limiter.go:64`: `burst :=
//!   max(config.Burst, 1)`; `:70-72` a zero period is one second; `:75-90`
//!   the rate is `Average * 1 s / period` (`rate.Inf`, no limiting, when
//!   `Average` is 0) and `maxDelay` is `1 s / (int(rate) * 2)` for a rate
//!   of at least 1/s (integer nanoseconds; the rate truncated to a whole
//!   number), 500 ms below; `:96-101` the TTL is 2 s for a rate of at least
//!   1/s, else `1 + int(1 / rate)` s; `:164-167` a delay over `maxDelay`
//!   is a 429, any other request is served after sleeping the delay.
//! * `pkg/middlewares/ratelimiter/in_memory_limiter.go:45-69`: a source
//!   without a live bucket gets `rate.NewLimiter(rate, burst)` (full); the
//!   TTL is renewed on every request; `res := bucket.Reserve()`, and a
//!   delay over `maxDelay` cancels the reservation (its token returned).
//! * `pkg/middlewares/ratelimiter/ttlmap/ttlmap.go:65,95`: the expiry is
//!   `now.Add(ttl).Unix()` (whole Unix seconds) and an entry is gone once
//!   `expiry <= now.Unix()`, so the TTL is counted in Unix seconds.
//!
//! How this differs from `rate.NewLimiter(r, b).Allow()` (the `token_bucket`
//! model) in decisions: a request is admitted while the bucket holds at
//! least `1 - maxDelay * r` tokens (about half a token at rates ≥ 1/s)
//! rather than one, admitted requests may drive the tokens negative, and a
//! bucket idle for its TTL comes back full even when the real refill would
//! not have filled it (a burst above `2 × rate`).
//!
//! Not modelled: the map's 65 536-source cap (`rate_limiter.go:22`; a new
//! source then evicts the one closest to expiry), the two `time.Now()`
//! readings of `Reserve` and `Delay` (one instant here), and the delay
//! itself (an admitted request reaches the backend up to `maxDelay` later;
//! the lab counts it at its arrival).

use crate::clock::Nanos;
use crate::error::{Error, Result};
use crate::model::x_time_rate::TokenBucket;
use crate::model::{Decision, KeyState};

const SECOND: i64 = 1_000_000_000;

/// Traefik's derived settings for one `rateLimit` middleware.
///
/// # Examples
///
/// ```
/// use ratelab::model::traefik_rate_limit::TraefikConfig;
/// // average 100 per 1 s, burst 0: rate 100/s, burst 1, maxDelay 5 ms.
/// let c = TraefikConfig::new(100, 1_000, 0).unwrap();
/// assert_eq!((c.rate, c.burst, c.max_delay_ns, c.ttl_s), (100.0, 1, 5_000_000, 2));
/// // 3 per 10 s: 0.3/s, maxDelay 500 ms, TTL 1 + int(1 / 0.3) = 4 s.
/// let slow = TraefikConfig::new(3, 10_000, 5).unwrap();
/// assert_eq!((slow.max_delay_ns, slow.ttl_s), (500_000_000, 4));
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TraefikConfig {
    /// Tokens per second (`rtl`).
    pub rate: f64,
    /// `max(config.Burst, 1)`.
    pub burst: i64,
    /// The longest delay a request may be served after, ns.
    pub max_delay_ns: i64,
    /// Seconds of inactivity after which a source's bucket is dropped.
    pub ttl_s: i64,
}

impl TraefikConfig {
    /// The middleware's settings from `average`, `period` (ms; 0 is one
    /// second) and `burst`, as `rate_limiter.go:64-101` derives them.
    pub fn new(average: u64, period_ms: u64, burst: u64) -> Result<Self> {
        if average == 0 {
            return Err(Error::input(
                "traefik rateLimit: average 0 disables limiting (rate.Inf): expected at least 1",
            ));
        }
        let period_ns = if period_ms == 0 {
            SECOND
        } else {
            i64::try_from(period_ms)
                .ok()
                .and_then(|p| p.checked_mul(1_000_000))
                .ok_or_else(|| {
                    Error::input(format!(
                        "traefik rateLimit: period {period_ms} ms: too long"
                    ))
                })?
        };
        let avg = i64::try_from(average)
            .ok()
            .and_then(|a| a.checked_mul(SECOND))
            .ok_or_else(|| {
                Error::input(format!("traefik rateLimit: average {average}: too large"))
            })?;
        // float64(config.Average*int64(time.Second)) / float64(period)
        let rate = avg as f64 / period_ns as f64;
        let max_delay_ns = if rate < 1.0 {
            500_000_000
        } else {
            // time.Second / (time.Duration(rtl) * 2): integer ns.
            SECOND / ((rate as i64).saturating_mul(2))
        };
        let ttl_s = if rate >= 1.0 {
            2
        } else {
            1 + (1.0 / rate) as i64
        };
        Ok(Self {
            rate,
            burst: i64::try_from(burst.max(1)).unwrap_or(i64::MAX),
            max_delay_ns,
            ttl_s,
        })
    }
}

/// One source's bucket in Traefik's in-memory limiter.
#[derive(Debug, Clone)]
pub struct TraefikBucket {
    cfg: TraefikConfig,
    bucket: TokenBucket,
    /// Unix ns of virtual time zero.
    origin: Nanos,
    /// The ttlmap entry's expiry, whole Unix seconds.
    expiry_s: i64,
}

impl TraefikBucket {
    /// A source first seen (no entry yet); `origin` is the Unix ns of
    /// virtual time zero (the TTL is counted in Unix seconds).
    pub fn new(cfg: TraefikConfig, origin: Nanos) -> Self {
        Self {
            cfg,
            bucket: TokenBucket::new(cfg.rate, cfg.burst),
            origin,
            expiry_s: i64::MIN,
        }
    }

    /// `inMemoryRateLimiter.Allow` then the middleware's check: whether the
    /// request is served, and after how long (ns).
    pub fn serve(&mut self, now: Nanos) -> (bool, i64) {
        let unix_ns = (self.origin as i128 + now as i128).min(i64::MAX as i128) as i64;
        let unix_s = unix_ns.div_euclid(SECOND);
        if self.expiry_s <= unix_s {
            // Expired (or never set): a fresh, full limiter.
            self.bucket = TokenBucket::new(self.cfg.rate, self.cfg.burst);
        }
        self.expiry_s = unix_s.saturating_add(self.cfg.ttl_s);
        let res = self.bucket.reserve_n(unix_ns, 1);
        if !res.ok() {
            return (false, 0);
        }
        let delay = res.delay_from(unix_ns);
        if delay > self.cfg.max_delay_ns {
            self.bucket.cancel_at(&res, unix_ns);
            return (false, delay);
        }
        (true, delay)
    }
}

impl KeyState for TraefikBucket {
    /// The `rate.Limiter` (80 bytes, as `token_bucket`) plus the ttlmap
    /// item (key string header 16, value pointer 8, expiry 8, heap index 8).
    const STATE_BYTES: u64 = 120;

    /// Weights other than 1 are served as 1, as Traefik logs and does
    /// (`rate_limiter.go:141-143`).
    fn admit(&mut self, _w: u64, now: Nanos) -> Result<Decision> {
        let (ok, delay) = self.serve(now);
        Ok(if ok && delay > 0 {
            Decision {
                allowed: true,
                delay: delay as Nanos,
            }
        } else {
            Decision::from_allowed(ok)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn served(b: &mut TraefikBucket, t: Nanos) -> bool {
        b.serve(t).0
    }

    #[test]
    fn half_a_token_is_enough_where_allow_would_deny() {
        // 10/s, burst 1: maxDelay = 1 s / 20 = 50 ms.
        let c = TraefikConfig::new(10, 1_000, 1).unwrap();
        assert_eq!(c.max_delay_ns, 50_000_000);
        let mut b = TraefikBucket::new(c, 0);
        assert!(served(&mut b, 0));
        // 60 ms later: 0.6 token, a delay of 40 ms <= 50 ms: served
        // (x/time/rate's Allow would deny).
        let mut plain = TokenBucket::new(10.0, 1);
        assert!(plain.allow_n(0, 1));
        assert!(!plain.allow_n(60_000_000, 1));
        let (ok, delay) = b.serve(60_000_000);
        assert!(ok && (delay - 40_000_000).abs() <= 1, "{delay}");
        // Tokens are now -0.4: at 100 ms, 0.0 tokens, a delay of 100 ms >
        // 50 ms: denied, and the cancel gives the token back.
        assert!(!served(&mut b, 100_000_000));
        assert!(served(&mut b, 150_000_000));
    }

    #[test]
    fn an_idle_bucket_comes_back_full_after_its_ttl_in_unix_seconds() {
        // 1/s, burst 10: TTL 2 s.
        let c = TraefikConfig::new(1, 1_000, 10).unwrap();
        let origin = 5 * SECOND as u64 + 900_000_000; // Unix 5.9 s
        let mut b = TraefikBucket::new(c, origin);
        let mut n = 0;
        while served(&mut b, 0) {
            n += 1;
        }
        assert_eq!(n, 10);
        // Expiry = 5 + 2 = Unix 7 s: at Unix 7.0 s (virtual 1.1 s) the entry
        // is gone and the bucket is full again, though 1.1 s refilled ~1.
        let mut again = 0;
        while served(&mut b, 1_100_000_000) {
            again += 1;
        }
        assert_eq!(again, 10);
        // At virtual 1.0 s (Unix 6.9 s) it would still have been live.
        let mut live = TraefikBucket::new(c, origin);
        while served(&mut live, 0) {}
        assert!(served(&mut live, 1_000_000_000));
        assert!(!served(&mut live, 1_000_000_000));
    }

    #[test]
    fn zero_burst_is_one_and_zero_average_is_refused() {
        assert_eq!(TraefikConfig::new(5, 0, 0).unwrap().burst, 1);
        assert_eq!(TraefikConfig::new(5, 0, 0).unwrap().rate, 5.0);
        assert!(TraefikConfig::new(0, 1_000, 1).is_err());
    }
}
