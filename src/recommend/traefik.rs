//! Traefik's `rateLimit` middleware: its parameter space and its dynamic
//! configuration YAML.
//!
//! In memory (no `redis` block), Traefik runs one golang.org/x/time/rate
//! `Limiter` per source, `rate.NewLimiter(average / period, max(burst, 1))`
//! (traefik `pkg/middlewares/ratelimiter/rate_limiter.go:64-90`,
//! `in_memory_limiter.go:49`), but through `Reserve` with a maximum delay
//! of `1 / (2 × ⌊rate⌋)` instead of `Allow`, and drops a source's bucket
//! after a TTL of inactivity (`in_memory_limiter.go:55-67`). Both change
//! decisions, so the search measures the decision lab's
//! `traefik_rate_limit` model (the x/time/rate model wrapped as Traefik
//! calls it, [`crate::model::traefik_rate_limit`]), not `token_bucket`.
//!
//! The search: `period` the intent's interval and `average` a ladder of
//! whole requests around the intent's limit (× 0.5 … 2, at least 1);
//! `burst` (monotone) bisected over `1..=4 × limit` (Traefik reads 0 as 1).
//!
//! The YAML is checked only for its shape in ratelab's tests (no Traefik
//! binary is installable here): the field names of `dynamic.RateLimit`
//! (`pkg/config/dynamic/middlewares.go:611-634`).

use super::envoy_local::duration;
#[cfg(test)]
use super::search::RATE_FACTORS;
use super::search::{burst_top, factor_lines, Family, FamilyCtx, Line};
use serde_json::{json, Map, Value};

/// Traefik's in-memory `rateLimit` middleware.
pub struct Traefik;

/// The `sourceCriterion` block for a log keyed by `key` (`--key`), and a
/// note when Traefik has no criterion for it.
fn source_criterion(key: Option<&str>) -> (String, Option<String>) {
    match key {
        None | Some("ip") => (
            "        sourceCriterion:\n          ipStrategy:\n            depth: 0\n".into(),
            None,
        ),
        Some(k) if k.starts_with("header:") => (
            format!(
                "        sourceCriterion:\n          requestHeaderName: {}\n",
                &k["header:".len()..]
            ),
            None,
        ),
        Some(k) => (
            "        sourceCriterion:\n          ipStrategy:\n            depth: 0\n".into(),
            Some(format!(
                "the log was keyed by {k}: Traefik groups by ipStrategy, requestHeaderName or requestHost; pick the one that yields it"
            )),
        ),
    }
}

impl Family for Traefik {
    fn name(&self) -> &'static str {
        "traefik"
    }

    fn lines(&self, ctx: &FamilyCtx) -> Vec<Line> {
        let p = ctx.policy;
        factor_lines(ctx, "burst", (1, burst_top(p)), |f| {
            let average = (libm::round(p.limit as f64 * f) as u64).clamp(1, u64::from(u32::MAX));
            let mut base = Map::new();
            base.insert("model".into(), json!("traefik_rate_limit"));
            base.insert("average".into(), json!(average));
            base.insert("period_ms".into(), json!(p.interval_ms));
            Some(base)
        })
    }

    /// A period of whole seconds, then the smaller burst.
    fn simplicity(&self, l: &Value) -> (u64, u64) {
        let whole = l["period_ms"].as_u64().is_some_and(|p| p % 1000 == 0);
        (u64::from(!whole), l["burst"].as_u64().unwrap_or(0))
    }

    fn snippet_file(&self) -> &'static str {
        "traefik-ratelimit.yaml"
    }

    fn snippet(&self, pick: &Value, ctx: &FamilyCtx, header: &[String]) -> String {
        let average = pick["average"].as_u64().unwrap_or(1);
        let period = pick["period_ms"].as_u64().unwrap_or(1000);
        let burst = pick["burst"].as_u64().unwrap_or(1);
        let (criterion, note) = source_criterion(ctx.key_expr.as_deref());
        let mut s = super::search::comments(header, "#");
        if let Some(n) = note {
            s.push_str(&format!("# {n}\n"));
        }
        s.push_str(
            "# Traefik dynamic configuration (file provider); in memory, one bucket per source.\n# Attach with `middlewares: [ratelab-limit]` on the router.\n",
        );
        s.push_str(&format!(
            "http:\n  middlewares:\n    ratelab-limit:\n      rateLimit:\n        average: {average}\n        period: {}\n        burst: {burst}\n{criterion}",
            duration(period)
        ));
        s
    }

    fn rate_per_s(&self, l: &Value) -> f64 {
        let average = l["average"].as_f64().unwrap_or(f64::NAN);
        let period = l["period_ms"].as_f64().unwrap_or(f64::NAN);
        average * 1000.0 / period
    }

    fn checked_by(&self) -> &'static str {
        "the field names of Traefik's dynamic.RateLimit, in ratelab's tests (no Traefik binary here)"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_ladder_the_average_over_the_intents_period() {
        let lines = Traefik.lines(&FamilyCtx::for_test(10, 1000, None));
        assert_eq!(lines.len(), RATE_FACTORS.len());
        assert!(lines.iter().any(|l| l.base["average"] == json!(10)));
        assert!(lines.iter().all(|l| l.base["period_ms"] == json!(1000)));
        assert!(lines.iter().all(|l| l.lo == 1 && l.hi == 40));
        // A small limit rounds several factors onto one average.
        assert!(Traefik.lines(&FamilyCtx::for_test(2, 1000, None)).len() < RATE_FACTORS.len());
    }

    #[test]
    fn the_snippet_carries_the_pick_and_the_key() {
        let pick =
            json!({"model": "traefik_rate_limit", "average": 450, "period_ms": 60000, "burst": 7});
        let s = Traefik.snippet(
            &pick,
            &FamilyCtx::for_test(450, 60000, Some("header:X-Api-Key")),
            &["hi".into()],
        );
        assert!(s.starts_with("# hi\n"), "{s}");
        assert!(
            s.contains(
                "      rateLimit:\n        average: 450\n        period: 60s\n        burst: 7\n"
            ),
            "{s}"
        );
        assert!(s.contains("requestHeaderName: X-Api-Key"), "{s}");
        assert_eq!(Traefik.rate_per_s(&pick), 7.5);
    }
}
