//! Decision-lab rows for the nginx, Envoy and Guava models, kept apart from
//! [`super::MODELS`] so the default candidate set (and the committed
//! decision reports) stay as they are. Each builder maps the lab's policy
//! ("at most `limit` per key per `interval_ms`") to the library's own
//! parameters; the choices are stated on each builder.

use super::candidates::{Candidate, ModelRow, Setup};
use crate::error::Result;
use crate::model::envoy_local_rate_limit::{EnvoyBucket, EnvoyLocalRateLimit};
use crate::model::guava_smooth_bursty::GuavaSmoothBursty;
use crate::model::nginx_limit_req::{
    nginx_zone_nodes, NginxDelay, NginxLimitReq, NginxRate, NginxZone,
};
use crate::model::PerKey;
use std::time::Duration;

/// The rows for the models outside the default set, in report order.
pub const EXTRA_MODELS: &[ModelRow] = &[
    ModelRow {
        model: "nginx_limit_req",
        summary: "nginx limit_req per key, rate = limit/interval (r/s, else r/m), burst = limit - 1, nodelay, 10m zone",
        build: nginx_limit_req,
    },
    ModelRow {
        model: "envoy_timer",
        summary: "Envoy local rate limit, timer-refilled bucket (default before 1.31), max = per fill = limit, fill_interval = interval",
        build: envoy_timer,
    },
    ModelRow {
        model: "envoy_continuous",
        summary: "Envoy local rate limit, continuous AtomicTokenBucket (default since 1.31), max = per fill = limit, fill_interval = interval",
        build: envoy_continuous,
    },
    ModelRow {
        model: "guava_smooth_bursty",
        summary: "Guava RateLimiter.create(limit/interval) per key, tryAcquire(w)",
        build: guava,
    },
];

/// nginx's rate for the policy: `limit / interval` as whole requests per
/// second if that is exact, else as whole requests per minute (rounded
/// down, at least 1): nginx can express nothing finer.
pub fn nginx_rate(limit: u64, interval_ms: u64) -> NginxRate {
    let per_s = limit.saturating_mul(1000);
    if per_s % interval_ms == 0 {
        return NginxRate::PerSecond(per_s / interval_ms);
    }
    NginxRate::PerMinute((limit.saturating_mul(60_000) / interval_ms).max(1))
}

/// `limit_req_zone $binary_remote_addr zone=z:10m rate=<limit/interval>;
/// limit_req zone=z burst=<limit - 1> nodelay;`. The burst is `limit - 1`
/// because nginx's first request of a key is free: a fresh key then gets
/// exactly `limit` requests at once, like the token buckets with a burst
/// of `limit`. `nodelay` keeps it an admit-or-reject limiter like the other
/// candidates (with delays the lab would count held requests as allowed).
/// The 10 MiB zone is the docs' example size, about 81,000 nodes.
pub fn nginx_limit_req(s: &Setup) -> Result<Vec<Candidate>> {
    let cfg = NginxLimitReq::new(
        nginx_rate(s.policy.limit, s.policy.interval_ms),
        s.policy.limit - 1,
        NginxDelay::NoDelay,
    )?;
    let zone = NginxZone::new(cfg, Some(nginx_zone_nodes(10 << 20)))?;
    Ok(vec![Candidate::new(
        "nginx limit_req per key (10m zone, nodelay)",
        Box::new(zone),
    )])
}

fn envoy(s: &Setup, bucket: EnvoyBucket) -> Result<EnvoyLocalRateLimit> {
    let limit = u32::try_from(s.policy.limit).map_err(|_| {
        crate::error::Error::input(format!(
            "envoy: policy.limit {}: max_tokens is a uint32",
            s.policy.limit
        ))
    })?;
    EnvoyLocalRateLimit::new(
        limit,
        limit,
        Duration::from_millis(s.policy.interval_ms),
        bucket,
    )
}

/// Envoy's timer-refilled bucket per key: `max_tokens = tokens_per_fill =
/// limit`, `fill_interval = interval` (Envoy refuses intervals under
/// 50 ms; so does this row).
pub fn envoy_timer(s: &Setup) -> Result<Vec<Candidate>> {
    Ok(vec![Candidate::new(
        "envoy local_ratelimit per key, timer bucket",
        envoy(s, EnvoyBucket::TimerRefill)?.per_key(),
    )])
}

/// Envoy's continuous `AtomicTokenBucket` per key, same parameters.
pub fn envoy_continuous(s: &Setup) -> Result<Vec<Candidate>> {
    Ok(vec![Candidate::new(
        "envoy local_ratelimit per key, atomic bucket",
        envoy(s, EnvoyBucket::Continuous)?.per_key(),
    )])
}

/// Guava's `RateLimiter.create(limit / interval_s)` per key, created at the
/// key's first request, deciding with `tryAcquire(w)`.
pub fn guava(s: &Setup) -> Result<Vec<Candidate>> {
    let pps = s.policy.limit as f64 / (s.policy.interval_ms as f64 / 1000.0);
    // Checked once here so a bad rate is a build error, not a run error.
    GuavaSmoothBursty::create(pps, 0)?;
    Ok(vec![Candidate::new(
        "guava RateLimiter per key",
        Box::new(PerKey::new(move |now| GuavaSmoothBursty::create(pps, now))),
    )])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::decision::Policy;

    fn setup(limit: u64, interval_ms: u64) -> Setup {
        Setup {
            policy: Policy { limit, interval_ms },
            shapes: vec![],
            uber_slack: 10,
            seed: 1,
        }
    }

    #[test]
    fn rows_build_and_decide() {
        let s = setup(10, 1000);
        for row in EXTRA_MODELS {
            let cands = (row.build)(&s).unwrap();
            assert_eq!(cands.len(), 1, "{}", row.model);
            let mut l = cands.into_iter().next().unwrap().limiter;
            // Every model passes a fresh key's first `limit` requests at
            // t = 0 except Guava, whose fresh limiter has no stored permits.
            let passed = (0..20)
                .filter(|_| l.admit(0, 1, 0).unwrap().allowed)
                .count();
            let want = if row.model == "guava_smooth_bursty" {
                1
            } else {
                10
            };
            assert_eq!(passed, want, "{}", row.model);
        }
    }

    #[test]
    fn nginx_rate_choice() {
        assert_eq!(nginx_rate(10, 1000), NginxRate::PerSecond(10));
        assert_eq!(nginx_rate(1, 100), NginxRate::PerSecond(10));
        assert_eq!(nginx_rate(100, 60_000), NginxRate::PerMinute(100));
        assert_eq!(nginx_rate(7, 3000), NginxRate::PerMinute(140));
        assert_eq!(nginx_rate(1, 86_400_000), NginxRate::PerMinute(1));
    }

    #[test]
    fn envoy_refuses_short_intervals() {
        let e = envoy_timer(&setup(10, 10)).err().unwrap();
        assert!(e.message().contains(">= 50ms"), "{e:?}");
    }

    #[test]
    fn extra_models_are_not_in_the_default_set() {
        for row in EXTRA_MODELS {
            assert!(super::super::MODELS.iter().all(|m| m.model != row.model));
        }
    }
}
