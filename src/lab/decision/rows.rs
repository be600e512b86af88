//! How each model of the decision lab maps the policy ("at most `limit`
//! per key per `interval_ms`") and a `limiters` entry's parameters to the
//! library's own settings. Each builder states its defaults.

use super::candidates::{built, Built, Setup};
use super::param_grid::Args;
use crate::clock::SECOND;
use crate::error::{Error, Result};
use crate::model::cloudflare_sliding_window::SlidingWindowCounter;
use crate::model::envoy_local_rate_limit::{EnvoyBucket, EnvoyLocalRateLimit};
use crate::model::estimator::EstimatorConfig;
use crate::model::gcra::Gcra;
use crate::model::governor::GovernorKeyed;
use crate::model::guava_smooth_bursty::{GuavaAcquire, GuavaSmoothBursty};
use crate::model::nginx_limit_req::{
    nginx_zone_nodes, NginxDelay, NginxLimitReq, NginxRate, NginxZone,
};
use crate::model::rate_limiter::{RateLimiter, RateMode};
use crate::model::redis_fixed_window::{CountOrder, FixedWindowAlign, FixedWindowCounter};
use crate::model::tower_rate_limit::{FixedWindow, TowerRate};
use crate::model::traefik_rate_limit::{TraefikBucket, TraefikConfig};
use crate::model::uber_ratelimit::{DenyIfWait, LeakyBucket, LeakyBucketConfig};
use crate::model::x_time_rate::TokenBucket;
use crate::model::{Global, PerKey};
use crate::report::fmt::bytes_human;
use crate::rng::{derive_seed, stream};
use std::time::Duration;

/// `rate_per_s`, else the policy's rate.
fn rate_per_s(s: &Setup, args: &Args) -> f64 {
    args.f64("rate_per_s")
        .unwrap_or(s.policy.limit as f64 / s.interval().as_secs_f64())
}

pub(super) fn pingora_rate(s: &Setup, a: &Args) -> Result<Built> {
    let mode = match a.str("estimate") {
        Some("proportional") => RateMode::Proportional,
        _ => RateMode::Docs,
    };
    let fam = match mode {
        RateMode::Docs => "pingora Rate docs",
        RateMode::Proportional => "pingora Rate proportional",
    };
    if a.str("counters") == Some("exact") {
        return Ok(Built {
            family: fam.into(),
            name: Some(format!("{fam} exact")),
            limiter: Box::new(RateLimiter::exact(mode, s.policy.limit, s.interval())),
        });
    }
    let hashes = a.need_u64("hashes")? as usize;
    let slots = a.need_u64("slots")? as usize;
    let cfg = EstimatorConfig::new(hashes, slots);
    if cfg.memory_bytes().saturating_mul(2) > s.max_memory {
        return Err(Error::input(format!(
            "{hashes}x{slots}: both windows' sketches need {}, over the memory cap of {} (fewer slots, or raise it with --max-memory)",
            bytes_human(cfg.memory_bytes().saturating_mul(2)),
            bytes_human(s.max_memory)
        )));
    }
    // Hash rows are seeded per shape, by the shape's place among the
    // scenario's shapes when it is one of them (the default set), else by
    // the shape itself.
    let salt = s
        .shapes
        .iter()
        .position(|sh| sh.hashes == hashes && sh.slots == slots)
        .map_or_else(|| ((hashes as u64) << 32) | slots as u64, |i| i as u64);
    Ok(Built {
        family: fam.into(),
        name: Some(format!("{fam} {hashes}x{slots}")),
        limiter: Box::new(RateLimiter::sketch(
            mode,
            s.policy.limit,
            s.interval(),
            cfg,
            derive_seed(s.seed, &[stream::HASH, salt]),
        )),
    })
}

pub(super) fn token_bucket(s: &Setup, a: &Args) -> Result<Built> {
    let r = rate_per_s(s, a);
    let b = a.i64("burst").unwrap_or(s.policy.limit as i64);
    built(
        "x/time/rate per key",
        Box::new(PerKey::new(move |_| Ok(TokenBucket::new(r, b)))),
    )
}

/// Traefik's in-memory `rateLimit` (`src/model/traefik_rate_limit.rs`):
/// `average` per `period_ms` (defaults: the policy), `burst` (default
/// limit); the TTL is counted in Unix seconds from the run's origin.
pub(super) fn traefik_rate_limit(s: &Setup, a: &Args) -> Result<Built> {
    let cfg = TraefikConfig::new(
        a.u64("average").unwrap_or(s.policy.limit),
        a.u64("period_ms").unwrap_or(s.policy.interval_ms),
        a.u64("burst").unwrap_or(s.policy.limit),
    )?;
    let origin = s.origin.clone();
    built(
        "Traefik rateLimit per source",
        Box::new(PerKey::new(move |_| {
            Ok(TraefikBucket::new(cfg, origin.get()))
        })),
    )
}

pub(super) fn gcra_governor(s: &Setup, a: &Args) -> Result<Built> {
    let period = match a.f64("rate_per_s") {
        Some(r) => Duration::from_nanos((SECOND as f64 / r).round() as u64),
        None => Duration::from_nanos(s.interval_ns() / s.policy.limit),
    };
    let burst = a.u64("burst").unwrap_or(s.policy.limit);
    built(
        "governor GCRA per key",
        Box::new(GovernorKeyed::new(period, burst)?),
    )
}

pub(super) fn tower(s: &Setup, a: &Args) -> Result<Built> {
    let tr = TowerRate::new(s.policy.limit, s.interval())
        .map_err(|f| Error::input(format!("tower: {}", f.message)))?;
    if a.str("scope") == Some("global") {
        return built(
            "tower RateLimit global",
            Box::new(Global(FixedWindow::new(tr, 0))),
        );
    }
    built(
        "tower RateLimit per key",
        Box::new(PerKey::new(move |now| Ok(FixedWindow::new(tr, now)))),
    )
}

pub(super) fn uber_go(s: &Setup, a: &Args) -> Result<Built> {
    let slack = a.i64("slack").unwrap_or(s.uber_slack);
    // A mock clock well after the Unix epoch (the int64 variant's sentinel
    // is Unix time 0).
    let cfg = LeakyBucketConfig::new(s.policy.limit as i64)
        .per(s.interval_ns() as i64)
        .with_slack(slack)
        .unix_origin(1_700_000_000 * SECOND as i64);
    Ok(Built {
        family: "uber-go per key (deny if wait > 0)".into(),
        name: Some(format!("uber-go per key, slack {slack}")),
        limiter: Box::new(PerKey::new(move |_| {
            LeakyBucket::new(cfg)
                .map(DenyIfWait)
                .map_err(|e| Error::internal(format!("uber-go model: {e}")))
        })),
    })
}

/// nginx's rate for the policy: `limit / interval` as whole requests per
/// second if that is exact, else as whole requests per minute (rounded
/// down, at least 1): nginx can express nothing finer.
pub fn nginx_rate(limit: u64, interval_ms: u64) -> NginxRate {
    let per_s = limit.saturating_mul(1000);
    if per_s.is_multiple_of(interval_ms) {
        return NginxRate::PerSecond(per_s / interval_ms);
    }
    NginxRate::PerMinute((limit.saturating_mul(60_000) / interval_ms).max(1))
}

/// `limit_req_zone $binary_remote_addr zone=z:<zone_mib>m rate=<r>;
/// limit_req zone=z burst=<burst> [nodelay | delay=<d>];`. Defaults: the
/// rate is the policy's ([`nginx_rate`], or `rate_r_s` / `rate_r_m`), the
/// burst `limit - 1` (nginx's first request of a key is free, so a fresh
/// key gets exactly `limit` at once, like the token buckets with a burst of
/// `limit`), `nodelay` (an admit-or-reject limiter like the others; with
/// `nodelay: false` requests over the `delay` threshold are admitted late
/// and their delay is reported), a 10 MiB zone (the docs' example).
pub(super) fn nginx_limit_req(s: &Setup, a: &Args) -> Result<Built> {
    let rate = match (a.u64("rate_r_s"), a.u64("rate_r_m")) {
        (Some(_), Some(_)) => return Err(Error::input("give rate_r_s or rate_r_m, not both")),
        (Some(r), None) => NginxRate::PerSecond(r),
        (None, Some(r)) => NginxRate::PerMinute(r),
        (None, None) => nginx_rate(s.policy.limit, s.policy.interval_ms),
    };
    // As nginx ships it: without `nodelay` and without `delay=`, every
    // excess request within the burst is held (ngx_http_limit_req_module.c,
    // `delay` defaults to 0 and `nodelay` sets it to NGX_MAX_INT_T_VALUE).
    let delay = match (a.need_bool("nodelay")?, a.u64("delay")) {
        (true, _) => NginxDelay::NoDelay,
        (false, Some(d)) => NginxDelay::Delay(d),
        (false, None) => NginxDelay::Default,
    };
    let burst = a.u64("burst").unwrap_or(s.policy.limit - 1);
    let cfg = NginxLimitReq::new(rate, burst, delay)?;
    let zone_mib = a.need_u64("zone_mib")?;
    let zone_bytes = zone_mib << 20;
    let zone = NginxZone::new(cfg, Some(nginx_zone_nodes(zone_bytes)))?;
    // `nodelay` is in the label (not a `nodelay=` suffix); `delay=N` and a
    // zone size other than 10m are suffixes.
    let ten_m = zone_mib == 10;
    let family = match (delay, ten_m) {
        (NginxDelay::NoDelay, true) => "nginx limit_req per key (10m zone, nodelay)",
        (NginxDelay::NoDelay, false) => "nginx limit_req per key (nodelay)",
        (NginxDelay::Default, true) => "nginx limit_req per key (10m zone, delays the burst)",
        (NginxDelay::Default, false) => "nginx limit_req per key (delays the burst)",
        (NginxDelay::Delay(_), _) => "nginx limit_req per key",
    };
    built(family.to_string(), Box::new(zone))
}

/// Envoy's local rate limit per key (or `scope: global`): `max_tokens =
/// tokens_per_fill = limit` and `fill_interval = interval` by default
/// (Envoy refuses intervals under 50 ms; so does this row). `bucket`:
/// `continuous` (the `AtomicTokenBucket`, the default since 1.31) or
/// `timer` (tokens added at whole fill_interval ticks, the default before).
pub(super) fn envoy(s: &Setup, a: &Args) -> Result<Built> {
    let as_u32 = |name: &str, v: u64| {
        u32::try_from(v).map_err(|_| {
            Error::input(format!(
                "{name} {v}: expected at most 4294967295 (a uint32 in Envoy)"
            ))
        })
    };
    let max = as_u32("max_tokens", a.u64("max_tokens").unwrap_or(s.policy.limit))?;
    let per_fill = as_u32(
        "tokens_per_fill",
        a.u64("tokens_per_fill").unwrap_or(s.policy.limit),
    )?;
    let fill = Duration::from_millis(a.u64("fill_interval_ms").unwrap_or(s.policy.interval_ms));
    let (bucket, fam) = match a.str("bucket") {
        Some("timer") => (
            EnvoyBucket::TimerRefill,
            "envoy local_ratelimit per key (timer bucket)",
        ),
        _ => (
            EnvoyBucket::Continuous,
            "envoy local_ratelimit per key (atomic bucket)",
        ),
    };
    let l = EnvoyLocalRateLimit::new(max, per_fill, fill, bucket)?
        .monotonic_origin(a.need_u64("monotonic_origin_ns")?);
    if a.str("scope") == Some("global") {
        return built(fam.replace("per key", "global"), l.global());
    }
    built(fam, l.per_key())
}

/// Guava's `RateLimiter.create(permits_per_s)` per key (default `limit /
/// interval_s`), made at the key's first request, deciding with
/// `tryAcquire(w)`.
pub(super) fn guava(s: &Setup, a: &Args) -> Result<Built> {
    let pps = a
        .f64("permits_per_s")
        .unwrap_or(s.policy.limit as f64 / (s.policy.interval_ms as f64 / 1000.0));
    // Checked once here so a bad rate is a build error, not a run error.
    GuavaSmoothBursty::create(pps, 0)?;
    if a.str("call") == Some("acquire") {
        return built(
            "guava RateLimiter per key (acquire)",
            Box::new(PerKey::new(move |now| {
                GuavaSmoothBursty::create(pps, now).map(GuavaAcquire)
            })),
        );
    }
    built(
        "guava RateLimiter per key",
        Box::new(PerKey::new(move |now| GuavaSmoothBursty::create(pps, now))),
    )
}

/// Cloudflare's sliding-window counter per key, on the policy.
pub(super) fn sliding_window_counter(s: &Setup, a: &Args) -> Result<Built> {
    let proto = SlidingWindowCounter::new(s.policy.limit, s.interval())?
        .count_denied(a.need_bool("count_denied")?)
        .mitigation(Duration::from_millis(a.need_u64("mitigation_ms")?));
    // A key's state is made at its first request, after the lab has read
    // the first request and set the origin.
    let origin = s.origin.clone();
    built(
        "Cloudflare sliding window per key",
        Box::new(PerKey::new(move |_| Ok(proto.origin(origin.get())))),
    )
}

/// The Redis `INCR` + `EXPIRE` fixed window per key, on the policy.
pub(super) fn fixed_window_counter(s: &Setup, a: &Args) -> Result<Built> {
    let (align, fam) = match a.str("align") {
        Some("aligned") => (
            FixedWindowAlign::Aligned,
            "Redis INCR+EXPIRE per key (aligned)",
        ),
        _ => (FixedWindowAlign::FirstRequest, "Redis INCR+EXPIRE per key"),
    };
    let order = match a.str("order") {
        Some("get_then_incr") => CountOrder::GetThenIncr,
        _ => CountOrder::IncrThenCompare,
    };
    let limit = a.u64("requests").unwrap_or(s.policy.limit);
    let window = a
        .u64("window_ms")
        .map_or_else(|| s.interval(), Duration::from_millis);
    let proto = FixedWindowCounter::new(limit, window, align)?.order(order);
    let origin = s.origin.clone();
    built(
        fam,
        Box::new(PerKey::new(move |_| Ok(proto.origin(origin.get())))),
    )
}

/// Our GCRA per key: period `1 / rate_per_s` (default interval / limit,
/// truncated to whole ns as governor's quotas are), burst (default limit).
pub(super) fn gcra(s: &Setup, a: &Args) -> Result<Built> {
    let burst = a.u64("burst").unwrap_or(s.policy.limit);
    let proto = match a.f64("rate_per_s") {
        Some(r) => Gcra::with_period(
            Duration::from_nanos((SECOND as f64 / r).round() as u64),
            burst,
        )?,
        None => Gcra::new(s.policy.limit, s.interval(), burst)?,
    };
    built(
        "GCRA per key (ours)",
        Box::new(PerKey::new(move |_| Ok(proto))),
    )
}

/// The hello's own fields, which an exec entry's `params` may not reuse.
pub(super) const EXEC_HELLO_FIELDS: &[&str] =
    &["limit", "interval_ms", "interval_ns", "seed", "name"];

/// A child process speaking `docs/book/src/protocol.md` (the `exec` model): its
/// hello carries the policy (`limit`, `interval_ms`, `interval_ns`), the
/// run's `seed`, the entry's `name`, then the entry's `params` in name
/// order; the label is `name` (default `exec` and the command line).
pub(super) fn exec(s: &Setup, a: &Args) -> Result<Built> {
    let command = a.argv("command").ok_or_else(|| {
        Error::input("exec: missing \"command\": expected the program and its arguments")
    })?;
    let name = a
        .str("name")
        .map_or_else(|| format!("exec {}", command.join(" ")), str::to_string);
    let timeout = a
        .u64("timeout_ms")
        .map_or(crate::model::exec::DEFAULT_TIMEOUT, Duration::from_millis);
    let cfg = crate::model::exec::ExecConfig {
        command,
        name: name.clone(),
        timeout,
        workdir: s.workdir.clone(),
        env: a.fields("env"),
    };
    let mut fields = vec![
        ("limit".to_string(), s.policy.limit.to_string()),
        ("interval_ms".to_string(), s.policy.interval_ms.to_string()),
        ("interval_ns".to_string(), s.interval_ns().to_string()),
        ("seed".to_string(), s.seed.to_string()),
        ("name".to_string(), name.clone()),
    ];
    fields.extend(a.fields("params"));
    let fields: Vec<(&str, String)> = fields
        .iter()
        .map(|(k, v)| (k.as_str(), v.clone()))
        .collect();
    // The child starts at the first request: after the whole scenario (every
    // candidate's name included) has been checked.
    let l = crate::model::exec::ExecLimiter::new(cfg, &fields);
    built(name, Box::new(l))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::decision::{build, row, Policy};

    fn setup(limit: u64, interval_ms: u64) -> Setup {
        Setup {
            max_memory: 1 << 30,
            ..Setup::plain(Policy { limit, interval_ms }, 1)
        }
    }

    #[test]
    fn a_fresh_key_gets_limit_at_once_except_guava() {
        let s = setup(10, 1000);
        for model in [
            "nginx_limit_req",
            "envoy_local_rate_limit",
            "guava_smooth_bursty",
            "token_bucket",
            "gcra_governor",
        ] {
            let mut c = build(&s, row(model).unwrap(), &Args::default()).unwrap();
            let passed = (0..20)
                .filter(|_| c.limiter.admit(0, 1, 0).unwrap().allowed)
                .count();
            // Guava's fresh limiter has no stored permits: the first
            // request passes and pre-pays the next.
            let want = if model == "guava_smooth_bursty" {
                1
            } else {
                10
            };
            assert_eq!(passed, want, "{model}");
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
    fn envoy_takes_the_monotonic_origin_as_a_lab_parameter() {
        // A 1-token bucket refilled every 200 ms: at an uptime of ~3000 s
        // the continuous bucket's f64 rounding refuses the first request
        // (the model's own test), at 0 it admits it.
        let s = setup(1, 200);
        let at = |origin: u64| {
            let a = Args::of(&[("monotonic_origin_ns", origin.into())]);
            let mut c = build(&s, row("envoy_local_rate_limit").unwrap(), &a).unwrap();
            c.limiter.admit(0, 1, 0).unwrap().allowed
        };
        assert!(at(0));
        assert!(!at(3_000_123_456_810));
    }

    #[test]
    fn envoy_refuses_short_intervals() {
        let e = envoy(&setup(10, 10), &Args::default()).err().unwrap();
        assert!(e.message().contains(">= 50ms"), "{e:?}");
    }

    #[test]
    fn nginx_delays_by_default_as_nginx_does_and_nodelay_only_when_asked() {
        let s = setup(10, 1000);
        let burst = Args::of(&[("burst", 5u64.into())]);
        let mut c = build(&s, row("nginx_limit_req").unwrap(), &burst).unwrap();
        assert_eq!(
            c.name,
            "nginx limit_req per key (10m zone, delays the burst) burst=5"
        );
        let d: Vec<_> = (0..3).map(|_| c.limiter.admit(0, 1, 0).unwrap()).collect();
        assert!(d[1].allowed && d[1].delay > 0, "{d:?}");
        let nodelay = Args::of(&[("burst", 5u64.into()), ("nodelay", true.into())]);
        let mut c = build(&s, row("nginx_limit_req").unwrap(), &nodelay).unwrap();
        assert_eq!(
            c.name,
            "nginx limit_req per key (10m zone, nodelay) burst=5"
        );
        let d: Vec<_> = (0..3).map(|_| c.limiter.admit(0, 1, 0).unwrap()).collect();
        assert!(d.iter().all(|d| d.allowed && d.delay == 0), "{d:?}");
    }

    #[test]
    fn nginx_delay_reports_a_delay() {
        let s = setup(10, 1000);
        let a = Args::of(&[("nodelay", false.into()), ("burst", 5u64.into())]);
        let mut c = build(&s, row("nginx_limit_req").unwrap(), &a).unwrap();
        let d: Vec<_> = (0..3).map(|_| c.limiter.admit(0, 1, 0).unwrap()).collect();
        assert_eq!(d[0].delay, 0);
        assert!(d[1].allowed && d[1].delay > 0, "{d:?}");
        assert!(d[2].delay > d[1].delay, "{d:?}");
    }
}
