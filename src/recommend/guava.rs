//! Guava's `RateLimiter`: its parameter space and its Java line.
//!
//! `RateLimiter.create(permitsPerSecond)` (SmoothBursty, one second of
//! stored permits: the burst follows the rate) per key, decided with
//! `tryAcquire()` — the decision lab's `guava_smooth_bursty` row. The one
//! parameter is monotone (more permits per second deny fewer compliant
//! requests and let more excess through), bisected over whole permits per
//! second `1..=64 × the intent's rate` (a fresh `RateLimiter` stores no permits, so
//! a compliant client's second request close behind its first can need a
//! rate far above the intent's).
//!
//! The snippet is Java source; ratelab's CI compiles and runs it against
//! Debian's Guava (`libguava-java`, 31.1): the limiter's `getRate()` is the
//! pick's and a fresh limiter admits its first request.

use super::search::{num, Family, FamilyCtx, Line};
use serde_json::{json, Map, Value};

/// Guava's `RateLimiter`, one per key.
pub struct Guava;

impl Family for Guava {
    fn name(&self) -> &'static str {
        "guava"
    }

    fn lines(&self, ctx: &FamilyCtx) -> Vec<Line> {
        let p = ctx.policy;
        let per_s = p.limit as f64 * 1000.0 / p.interval_ms as f64;
        let mut base = Map::new();
        base.insert("model".into(), json!("guava_smooth_bursty"));
        vec![Line {
            base,
            axis: "permits_per_s",
            lo: 1,
            hi: (libm::ceil(per_s * 64.0) as u64).max(64),
        }]
    }

    fn simplicity(&self, l: &Value) -> (u64, u64) {
        (0, l["permits_per_s"].as_u64().unwrap_or(0))
    }

    fn snippet_file(&self) -> &'static str {
        "RateLimiterConfig.java"
    }

    fn snippet(&self, pick: &Value, _ctx: &FamilyCtx, header: &[String]) -> String {
        let mut s = super::search::comments(header, "//");
        s.push_str(&format!(
            "import com.google.common.util.concurrent.RateLimiter;\n\n// one per key, e.g. a LoadingCache<String, RateLimiter>\nRateLimiter limiter = RateLimiter.create({}.0);\n// per request: limiter.tryAcquire()\n",
            num(&pick["permits_per_s"])
        ));
        s
    }

    fn rate_per_s(&self, l: &Value) -> f64 {
        l["permits_per_s"].as_f64().unwrap_or(f64::NAN)
    }

    fn checked_by(&self) -> &'static str {
        "compiled and run against Debian's Guava 31.1 (libguava-java) in ratelab's CI; elsewhere its number only"
    }
}
