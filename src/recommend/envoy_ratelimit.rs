//! envoyproxy/ratelimit (the global rate limit service) with its Redis
//! fixed window: its parameter space and its service config YAML.
//!
//! The service keys a counter by the descriptor and the window start,
//! `(now / divider) * divider` in Unix seconds (`src/limiter/cache_key.go:81-82`,
//! dividers in `src/utils/utilities.go:20-36`), runs `INCRBY key hits` then
//! `EXPIRE` (`src/redis/fixed_cache_impl.go:35-38`; the default
//! `STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT=false` counts every request,
//! over the limit or not, `src/settings/settings.go:112`) and calls a
//! request over the limit when the count after the increment exceeds
//! `requests_per_unit` (`src/limiter/base_limiter.go:104`). That is the
//! decision lab's `fixed_window_counter` with `"align": "aligned"` and the
//! default `incr_then_compare`, its window the unit and its limit
//! `requests_per_unit`.
//!
//! The search: the unit is not free — SECOND, MINUTE, HOUR or DAY, each
//! whose length is at least the intent's interval (WEEK, MONTH and YEAR
//! exist upstream but no log here confirms them) — and `requests_per_unit`
//! (monotone) is bisected over `1..=4 × limit × unit / interval`.
//!
//! Not modelled: the optional local over-limit cache
//! (`LOCAL_CACHE_SIZE_IN_BYTES`, default 0: off), near-limit statistics,
//! `shadow_mode` (a shadow rule denies nothing).
//!
//! The YAML is checked only for its shape in ratelab's tests (no ratelimit
//! binary is installable here).

use super::search::{Family, FamilyCtx, LabForm, Line};
use crate::error::Result;
use crate::sizing::limit::LimitPolicy;
use serde_json::{json, Map, Value};

/// envoyproxy/ratelimit's Redis fixed window.
pub struct EnvoyRatelimit;

/// The service's units and their lengths, ms.
pub const UNITS: [(&str, u64); 4] = [
    ("second", 1_000),
    ("minute", 60_000),
    ("hour", 3_600_000),
    ("day", 86_400_000),
];

/// The unit of a window length, if it is one.
///
/// # Examples
///
/// ```
/// use ratelab::recommend::envoy_ratelimit::unit_of;
/// assert_eq!(unit_of(60_000), Some("minute"));
/// assert_eq!(unit_of(90_000), None);
/// ```
pub fn unit_of(window_ms: u64) -> Option<&'static str> {
    UNITS.iter().find(|u| u.1 == window_ms).map(|u| u.0)
}

impl Family for EnvoyRatelimit {
    fn name(&self) -> &'static str {
        "envoy-ratelimit"
    }

    fn lines(&self, ctx: &FamilyCtx) -> Vec<Line> {
        let p = ctx.policy;
        UNITS
            .iter()
            .filter(|u| u.1 >= p.interval_ms)
            .map(|&(_, ms)| {
                let mut base = Map::new();
                base.insert("model".into(), json!("fixed_window_counter"));
                base.insert("align".into(), json!("aligned"));
                base.insert("window_ms".into(), json!(ms));
                let scaled = u128::from(p.limit) * 4 * u128::from(ms) / u128::from(p.interval_ms);
                Line {
                    base,
                    axis: "requests",
                    lo: 1,
                    hi: (scaled as u64).clamp(8, u64::from(u32::MAX)),
                }
            })
            .collect()
    }

    /// The shorter unit, then the smaller limit.
    fn simplicity(&self, l: &Value) -> (u64, u64) {
        (
            l["window_ms"].as_u64().unwrap_or(0),
            l["requests"].as_u64().unwrap_or(0),
        )
    }

    fn snippet_file(&self) -> &'static str {
        "envoy-ratelimit-config.yaml"
    }

    fn snippet(&self, pick: &Value, ctx: &FamilyCtx, header: &[String]) -> String {
        let n = pick["requests"].as_u64().unwrap_or(1);
        let unit = unit_of(pick["window_ms"].as_u64().unwrap_or(0)).unwrap_or("second");
        let (key, note) = match ctx.key_expr.as_deref() {
            None | Some("ip") => ("remote_address".to_string(), None),
            Some(k) if k.starts_with("header:") => (
                k["header:".len()..].to_ascii_lowercase().replace('-', "_"),
                Some(format!(
                    "Envoy's route rate_limits: a request_headers action with header_name {:?} and descriptor_key {:?}",
                    &k["header:".len()..],
                    k["header:".len()..].to_ascii_lowercase().replace('-', "_")
                )),
            ),
            Some(k) => (
                "remote_address".to_string(),
                Some(format!(
                    "the log was keyed by {k}: send a descriptor that yields it and name its key here"
                )),
            ),
        };
        let mut s = super::search::comments(header, "#");
        s.push_str("# envoyproxy/ratelimit service config (its RUNTIME_ROOT/RUNTIME_SUBDIRECTORY/config/).\n");
        match note {
            Some(n) => s.push_str(&format!("# Descriptors come from {n}.\n")),
            None => s.push_str(
                "# Descriptors come from Envoy's route rate_limits: a remote_address action (one counter per client address).\n",
            ),
        }
        s.push_str(&format!(
            "domain: ratelab\ndescriptors:\n  - key: {key}\n    rate_limit:\n      unit: {unit}\n      requests_per_unit: {n}\n"
        ));
        s
    }

    fn rate_per_s(&self, l: &Value) -> f64 {
        let n = l["requests"].as_f64().unwrap_or(f64::NAN);
        let w = l["window_ms"].as_f64().unwrap_or(f64::NAN);
        n * 1000.0 / w
    }

    /// With `--replicas`, the fleet shares the service's Redis counter:
    /// the lab's `central` `envoy_ratelimit` strategy, counting with the
    /// setting's own `requests_per_unit` and unit.
    fn lab_form(&self, setting: &Value, ctx: &FamilyCtx) -> Result<LabForm> {
        if ctx.deploy.is_none() {
            return Ok(LabForm::Limiter(setting.clone()));
        }
        let requests = setting["requests"].as_u64().unwrap_or(1);
        let window_ms = setting["window_ms"].as_u64().unwrap_or(1000);
        Ok(LabForm::Fleet {
            strategy: json!({"strategy": "central", "store": "envoy_ratelimit"}),
            enforced: Some(LimitPolicy {
                limit: requests,
                interval_ms: window_ms,
            }),
        })
    }

    fn checked_by(&self) -> &'static str {
        "the ratelimit service's config keys (domain, descriptors, rate_limit unit and requests_per_unit), in ratelab's tests (no ratelimit binary here)"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_units_at_least_the_interval_are_offered() {
        let l = EnvoyRatelimit.lines(&FamilyCtx::for_test(10, 1000, None));
        assert_eq!(l.len(), 4);
        assert_eq!(l[1].base["window_ms"], json!(60_000));
        assert_eq!((l[0].hi, l[1].hi), (40, 2400));
        let l = EnvoyRatelimit.lines(&FamilyCtx::for_test(100, 120_000, None));
        let units: Vec<_> = l.iter().map(|l| l.base["window_ms"].clone()).collect();
        assert_eq!(units, vec![json!(3_600_000), json!(86_400_000)]);
        assert!(l
            .iter()
            .all(|l| l.base["align"] == json!("aligned") && l.axis == "requests"));
    }

    /// The setting as the lab builds it, virtual zero at Unix `origin` ns.
    fn built(limiter: Value, origin: u64) -> Box<dyn crate::model::Admit + Send> {
        use crate::lab::decision::{self, param_grid, Policy, Setup};
        let row = decision::row("fixed_window_counter").unwrap();
        let args = param_grid::expand(limiter.as_object().unwrap(), row.params, "limiter").unwrap();
        let policy = Policy {
            limit: 10,
            interval_ms: 1000,
        };
        let setup = Setup::plain(policy, 1);
        setup.origin.set(origin);
        decision::build(&setup, row, &args[0]).unwrap().limiter
    }

    #[test]
    fn a_line_counts_per_clock_unit_as_the_services_cache_key_does() {
        // requests_per_unit 3 per minute; virtual zero is Unix 119.5 s, so a
        // new minute (cache key ..._120) starts half a second in.
        let l = &EnvoyRatelimit.lines(&FamilyCtx::for_test(10, 1000, None))[1];
        let mut m = built(l.at(3), 119_500_000_000);
        let s = 1_000_000_000u64;
        let got: Vec<bool> = [0, 1, 2, 3, s / 4]
            .iter()
            .map(|&t| m.admit(0, 1, t).unwrap().allowed)
            .collect();
        // INCRBY then compare: the 4th and 5th are over 3, and counted.
        assert_eq!(got, [true, true, true, false, false]);
        // The clock minute turns at virtual 0.5 s, not 60 s after the first.
        assert!(m.admit(0, 1, s / 2).unwrap().allowed);
        let more: Vec<bool> = (1..=3)
            .map(|i| m.admit(0, 1, s / 2 + i).unwrap().allowed)
            .collect();
        assert_eq!(more, [true, true, false]);
    }

    #[test]
    fn the_snippet_names_the_unit_and_the_limit() {
        let pick = json!({"model": "fixed_window_counter", "align": "aligned", "window_ms": 60000, "requests": 42});
        let s = EnvoyRatelimit.snippet(
            &pick,
            &FamilyCtx::for_test(1, 1000, Some("header:X-Api-Key")),
            &["hi".into()],
        );
        assert!(s.starts_with("# hi\n"), "{s}");
        assert!(s.contains("domain: ratelab\ndescriptors:\n  - key: x_api_key\n    rate_limit:\n      unit: minute\n      requests_per_unit: 42\n"), "{s}");
        assert_eq!(EnvoyRatelimit.rate_per_s(&pick), 0.7);
    }
}
