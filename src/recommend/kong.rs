//! Kong's `rate-limiting` plugin: its parameter space, how the decision
//! lab runs it, and its declarative configuration.
//!
//! Read from Kong/kong at 22246ef (`kong/plugins/rate-limiting/`). The
//! plugin takes a limit per period — `second`, `minute`, `hour`, `day`,
//! `month`, `year` (schema.lua:84-89) — counted in windows aligned to the
//! Unix clock (`timestamp.get_timestamps`, handler.lua:127), and a
//! `policy` that says where the counter lives (schema.lua:49-71):
//!
//! * `local`: each node counts in its own shared dictionary
//!   (policies/init.lua:302-327): `usage` reads the count, the handler
//!   denies when `limit - usage <= 0` (handler.lua:96-107) and returns
//!   before counting, and an admitted request adds 1 (`shm:incr`, from a
//!   `timer_at(0)`, handler.lua:204-209). That is the decision lab's
//!   `fixed_window_counter` with `"align": "aligned"` (windows of Unix
//!   time) and `"order": "get_then_incr"` (denied requests not counted,
//!   a request passes while the count is at most `requests`), with
//!   `requests = limit - 1`: Kong passes while the count is below `limit`.
//!   So a `local` setting needs `limit >= 2` here (the lab's counter takes
//!   at least 1). The zero-delay timer is taken as immediate.
//! * `redis` with `sync_rate = -1` (the default): every request is one
//!   `INCR` in Redis that returns the count before it (init.lua:406-414),
//!   denied requests counted too — the fleet lab's `central` `kong_redis`.
//! * `redis` with `sync_rate > 0` (at least 0.02 s, schema.lua:29-33):
//!   cached counts and local deltas pushed every `sync_rate` seconds —
//!   the fleet lab's `periodic_sync` (`kong`), with its quirks.
//!
//! Not searched: `cluster` (the counter in Kong's database, read then
//! incremented from a timer; the fleet lab has no model of it),
//! `month` and `year` (calendar windows), and several periods at once
//! (the plugin denies when any is spent; one period is searched at a
//! time). Kong counts each request as 1: the redis forms do too, the
//! `local` form adds a log's weight column when it has one (logs without
//! one weigh every request 1).
//!
//! Every setting runs as a fleet (without `--replicas`, one node behind
//! `round_robin`) so that the Redis policies pay their round trips (1 ms)
//! as the fleet lab charges them.
//!
//! The search: for each period at least as long as the intent's interval
//! and each policy (`local`, `redis` realtime, and with two replicas or
//! more `redis` with `sync_rate` 0.1 s and 1 s), the period's limit
//! (monotone: a larger one denies fewer compliant requests) is bisected
//! over `lo..=4 × limit × period / interval`.
//!
//! The snippet is Kong's declarative configuration (`kong.yml`);
//! ratelab's tests parse it and check every field name and type against
//! the plugin's schema, transcribed in the test with its source lines (no
//! Kong binary is installable here).

use super::search::{Family, FamilyCtx, LabForm, Line};
use crate::error::{Error, Result};
use crate::sizing::limit::LimitPolicy;
use serde_json::{json, Map, Value};

/// Kong's rate-limiting plugin.
///
/// # Examples
///
/// ```
/// use ratelab::recommend::kong::Kong;
/// use ratelab::recommend::search::{Family, FamilyCtx, LabForm};
/// use ratelab::sizing::limit::LimitPolicy;
/// let ctx = FamilyCtx { policy: LimitPolicy { limit: 10, interval_ms: 1000 }, keys: 100,
///                       key_expr: None, deploy: None };
/// // second, minute, hour and day, each with the local and the redis policy.
/// assert_eq!(Kong.lines(&ctx).len(), 8);
/// let redis = serde_json::json!({"policy": "redis", "sync_rate": -1, "second": 12});
/// let LabForm::Fleet { strategy, enforced } = Kong.lab_form(&redis, &ctx)? else { unreachable!() };
/// assert_eq!(strategy["store"], "kong_redis");
/// assert_eq!(enforced.map(|p| p.limit), Some(12));
/// # Ok::<(), ratelab::error::Error>(())
/// ```
pub struct Kong;

/// The periods searched and their lengths, ms (Kong's `EXPIRATION`
/// table, kong/plugins/rate-limiting/expiration.lua).
pub const PERIODS: [(&str, u64); 4] = [
    ("second", 1_000),
    ("minute", 60_000),
    ("hour", 3_600_000),
    ("day", 86_400_000),
];

/// The `sync_rate` values (s) searched with two replicas or more.
pub const SYNC_RATES: [f64; 2] = [0.1, 1.0];

/// The period of a setting: its name, length (ms) and limit.
///
/// # Examples
///
/// ```
/// use ratelab::recommend::kong::period;
/// let s = serde_json::json!({"policy": "local", "sync_rate": -1, "minute": 600});
/// assert_eq!(period(&s), Some(("minute", 60_000, 600)));
/// ```
pub fn period(setting: &Value) -> Option<(&'static str, u64, u64)> {
    PERIODS
        .iter()
        .find_map(|&(p, ms)| setting.get(p).and_then(Value::as_u64).map(|l| (p, ms, l)))
}

/// The `limit_by` of a log keyed by `key` (`--key`): (limit_by, its
/// header, a note when Kong has no such identifier).
fn limit_by(key: Option<&str>) -> (&'static str, Option<String>, Option<String>) {
    match key {
        None | Some("ip") => ("ip", None, None),
        Some(k) if k.starts_with("header:") => {
            ("header", Some(k["header:".len()..].to_string()), None)
        }
        Some(k) => (
            "ip",
            None,
            Some(format!(
                "the log was keyed by {k}: Kong limits by consumer, credential, ip, service, header or path; pick the one that yields it"
            )),
        ),
    }
}

impl Family for Kong {
    fn name(&self) -> &'static str {
        "kong"
    }

    fn lines(&self, ctx: &FamilyCtx) -> Vec<Line> {
        let p = ctx.policy;
        let fleet = ctx.deploy.as_ref().is_some_and(|d| d.replicas >= 2);
        let mut policies: Vec<(&str, f64)> = vec![("local", -1.0), ("redis", -1.0)];
        if fleet {
            policies.extend(SYNC_RATES.iter().map(|&s| ("redis", s)));
        }
        let mut out = Vec::new();
        for &(period, ms) in PERIODS.iter().filter(|x| x.1 >= p.interval_ms) {
            let scaled = u128::from(p.limit) * 4 * u128::from(ms) / u128::from(p.interval_ms);
            for &(policy, sync) in &policies {
                let mut base = Map::new();
                base.insert("policy".into(), json!(policy));
                base.insert(
                    "sync_rate".into(),
                    if sync < 0.0 { json!(-1) } else { json!(sync) },
                );
                out.push(Line {
                    base,
                    axis: period,
                    lo: if policy == "local" { 2 } else { 1 },
                    hi: (scaled as u64).clamp(8, u64::from(u32::MAX)),
                });
            }
        }
        out
    }

    /// `local` before `redis`, realtime before a sync; the shorter period;
    /// then the smaller limit.
    fn simplicity(&self, l: &Value) -> (u64, u64) {
        let policy = match (l["policy"].as_str(), l["sync_rate"].as_f64()) {
            (Some("local"), _) => 0,
            (_, Some(s)) if s < 0.0 => 1,
            _ => 2,
        };
        let (_, ms, limit) = period(l).unwrap_or(("second", 0, 0));
        (policy * 1_000_000_000_000 + ms, limit)
    }

    fn snippet_file(&self) -> &'static str {
        "kong.yml"
    }

    fn snippet(&self, pick: &Value, ctx: &FamilyCtx, header: &[String]) -> String {
        let (period, _, limit) = period(pick).unwrap_or(("second", 1000, 1));
        let policy = pick["policy"].as_str().unwrap_or("local");
        let sync = super::search::num(&pick["sync_rate"]);
        let (by, header_name, note) = limit_by(ctx.key_expr.as_deref());
        let mut s = super::search::comments(header, "#");
        if let Some(n) = note {
            s.push_str(&format!("# {n}\n"));
        }
        s.push_str("# Kong declarative configuration (kong.yml); add `service:` or `route:` to scope the plugin.\n");
        if policy == "redis" {
            s.push_str("# The redis policy: set redis.host (and port, timeout) to the Redis every node shares.\n");
        }
        s.push_str(&format!(
            "_format_version: \"3.0\"\nplugins:\n  - name: rate-limiting\n    config:\n      {period}: {limit}\n      limit_by: {by}\n"
        ));
        if let Some(h) = header_name {
            s.push_str(&format!("      header_name: {h}\n"));
        }
        s.push_str(&format!(
            "      policy: {policy}\n      sync_rate: {sync}\n      fault_tolerant: true\n      error_code: 429\n"
        ));
        if policy == "redis" {
            s.push_str(
                "      redis:\n        host: redis\n        port: 6379\n        timeout: 2000\n",
            );
        }
        s
    }

    fn rate_per_s(&self, l: &Value) -> f64 {
        period(l).map_or(f64::NAN, |(_, ms, limit)| limit as f64 * 1000.0 / ms as f64)
    }

    /// Always a fleet: `local` as each node's own counter (`local`
    /// strategy, the lab's aligned `fixed_window_counter` that counts
    /// admitted requests only), `redis` as the shared counter (`central`
    /// `kong_redis`, or `periodic_sync` with `sync_ms` = `sync_rate` ×
    /// 1000), counting with the setting's own limit and period.
    fn lab_form(&self, setting: &Value, _ctx: &FamilyCtx) -> Result<LabForm> {
        let (_, ms, limit) = period(setting).ok_or_else(|| {
            Error::internal(format!("a kong setting without a period: {setting}"))
        })?;
        let sync = setting["sync_rate"].as_f64().unwrap_or(-1.0);
        Ok(match setting["policy"].as_str() {
            Some("local") => LabForm::Fleet {
                strategy: json!({"strategy": "local", "model": "fixed_window_counter",
                    "align": "aligned", "order": "get_then_incr",
                    "requests": limit.saturating_sub(1).max(1), "window_ms": ms}),
                enforced: None,
            },
            _ if sync < 0.0 => LabForm::Fleet {
                strategy: json!({"strategy": "central", "store": "kong_redis"}),
                enforced: Some(LimitPolicy {
                    limit,
                    interval_ms: ms,
                }),
            },
            _ => LabForm::Fleet {
                strategy: json!({"strategy": "periodic_sync", "sync_ms": libm::round(sync * 1000.0) as u64}),
                enforced: Some(LimitPolicy {
                    limit,
                    interval_ms: ms,
                }),
            },
        })
    }

    fn checked_by(&self) -> &'static str {
        "the rate-limiting plugin's schema (field names, types and entity checks), in ratelab's tests (no Kong binary here)"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recommend::search::Deploy;

    fn ctx(limit: u64, interval_ms: u64, replicas: Option<u64>) -> FamilyCtx {
        FamilyCtx {
            deploy: replicas.map(|n| Deploy {
                replicas: n,
                balancer: json!("round_robin"),
            }),
            ..FamilyCtx::for_test(limit, interval_ms, None)
        }
    }

    #[test]
    fn lines_cover_the_periods_and_policies() {
        let l = Kong.lines(&ctx(10, 1000, None));
        assert_eq!(l.len(), 8); // 4 periods x (local, redis)
        assert_eq!(l[0].axis, "second");
        assert_eq!((l[0].lo, l[0].hi), (2, 40));
        assert_eq!(l[1].base["policy"], json!("redis"));
        assert_eq!(l[1].lo, 1);
        assert_eq!(l[2].hi, 2400);
        // With a fleet, two sync rates more per period.
        assert_eq!(Kong.lines(&ctx(10, 1000, Some(4))).len(), 16);
        // A minute's intent: only minute and longer.
        let l = Kong.lines(&ctx(100, 60_000, None));
        assert!(l.iter().all(|l| l.axis != "second"));
    }

    #[test]
    fn lab_forms_are_the_fleet_labs_strategies() {
        let c = ctx(10, 1000, Some(4));
        let local = json!({"policy": "local", "sync_rate": -1, "second": 10});
        let LabForm::Fleet { strategy, enforced } = Kong.lab_form(&local, &c).unwrap() else {
            panic!()
        };
        assert_eq!(strategy["requests"], 9);
        assert_eq!(strategy["order"], "get_then_incr");
        assert!(enforced.is_none());
        let redis = json!({"policy": "redis", "sync_rate": -1, "minute": 700});
        let LabForm::Fleet { strategy, enforced } = Kong.lab_form(&redis, &c).unwrap() else {
            panic!()
        };
        assert_eq!(strategy["store"], "kong_redis");
        assert_eq!(
            enforced,
            Some(LimitPolicy {
                limit: 700,
                interval_ms: 60_000
            })
        );
        let sync = json!({"policy": "redis", "sync_rate": 0.1, "second": 12});
        let LabForm::Fleet { strategy, .. } = Kong.lab_form(&sync, &c).unwrap() else {
            panic!()
        };
        assert_eq!(strategy["sync_ms"], 100);
        assert!((Kong.rate_per_s(&redis) - 700.0 / 60.0).abs() < 1e-12);
    }

    #[test]
    fn a_local_node_admits_limit_per_unix_second_and_does_not_count_denials() {
        // The lab's counter as the local form builds it, virtual zero at
        // Unix 99.5 s: a new second starts 0.5 s in.
        use crate::lab::decision::{self, param_grid, Policy, Setup};
        let c = ctx(10, 1000, None);
        let LabForm::Fleet { strategy, .. } = Kong
            .lab_form(
                &json!({"policy": "local", "sync_rate": -1, "second": 3}),
                &c,
            )
            .unwrap()
        else {
            panic!()
        };
        let mut o = strategy.as_object().unwrap().clone();
        o.remove("strategy");
        let row = decision::row("fixed_window_counter").unwrap();
        let args = param_grid::expand(&o, row.params, "limiter").unwrap();
        let policy = Policy {
            limit: 10,
            interval_ms: 1000,
        };
        let setup = Setup::plain(policy, 1);
        setup.origin.set(99_500_000_000);
        let mut m = decision::build(&setup, row, &args[0]).unwrap().limiter;
        let ms = 1_000_000u64;
        let first: Vec<bool> = (0..6)
            .map(|i| m.admit(0, 1, i * ms).unwrap().allowed)
            .collect();
        // limit - usage <= 0 denies: the 4th; denials not counted.
        assert_eq!(first, [true, true, true, false, false, false]);
        // Unix 100.0 s is virtual 0.5 s: a fresh window.
        assert!(m.admit(0, 1, 500 * ms).unwrap().allowed);
    }

    #[test]
    fn the_snippet_is_the_plugins_config() {
        let pick = json!({"policy": "redis", "sync_rate": 0.1, "minute": 42});
        let mut c = ctx(1, 1000, Some(2));
        c.key_expr = Some("header:X-Api-Key".into());
        let s = Kong.snippet(&pick, &c, &["hi".into()]);
        assert!(s.starts_with("# hi\n"), "{s}");
        assert!(
            s.contains("  - name: rate-limiting\n    config:\n      minute: 42\n      limit_by: header\n      header_name: X-Api-Key\n      policy: redis\n      sync_rate: 0.1\n"),
            "{s}"
        );
        assert!(s.contains("      redis:\n        host: redis\n"), "{s}");
        let local = Kong.snippet(
            &json!({"policy": "local", "sync_rate": -1, "second": 9}),
            &ctx(1, 1000, None),
            &[],
        );
        assert!(
            local.contains(
                "      second: 9\n      limit_by: ip\n      policy: local\n      sync_rate: -1\n"
            ),
            "{local}"
        );
        assert!(!local.contains("redis:"), "{local}");
    }
}
