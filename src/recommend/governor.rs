//! The governor crate's keyed GCRA: its parameter space and its Rust line.
//!
//! `Quota::with_period(period).allow_burst(burst)` (governor's `quota.rs`;
//! `Quota::per_second(n)` is `with_period(1 s / n)`), one state per key
//! (`RateLimiter::keyed`), decided with `check_key`. The search: the rate
//! (`1 / period`) on a ladder around the intent's (× 0.5 … 2), the burst
//! (monotone: a larger burst denies fewer compliant requests and lets more
//! excess through) bisected over `1..=4 × limit` — the decision lab's
//! `gcra_governor` row, which runs the real crate.
//!
//! The snippet is Rust: ratelab's tests compile it against the governor
//! crate ratelab builds with and run it (a burst at one instant admits the
//! pick's burst).

use super::search::{num, rate_lines, Family, FamilyCtx, Line};
use serde_json::Value;

/// governor's keyed rate limiter.
pub struct Governor;

impl Family for Governor {
    fn name(&self) -> &'static str {
        "governor"
    }

    fn lines(&self, ctx: &FamilyCtx) -> Vec<Line> {
        rate_lines(ctx, "gcra_governor", "rate_per_s", "burst", 1)
    }

    fn simplicity(&self, l: &Value) -> (u64, u64) {
        super::search::whole_rate_then_burst(l)
    }

    fn snippet_file(&self) -> &'static str {
        "governor.rs"
    }

    fn snippet(&self, pick: &Value, _ctx: &FamilyCtx, header: &[String]) -> String {
        let rate = pick["rate_per_s"].as_f64().unwrap_or(1.0);
        let burst = pick["burst"].as_u64().unwrap_or(1);
        let mut s = super::search::comments(header, "//");
        let quota = if rate.fract() == 0.0 && rate >= 1.0 {
            format!(
                "Quota::per_second(NonZeroU32::new({}).unwrap())",
                num(&pick["rate_per_s"])
            )
        } else {
            format!(
                "Quota::with_period(Duration::from_nanos({})).unwrap()",
                libm::round(1e9 / rate) as u64
            )
        };
        s.push_str("use governor::{Quota, RateLimiter};\nuse std::num::NonZeroU32;\nuse std::time::Duration;\n\n");
        s.push_str(&format!(
            "let limiter = RateLimiter::keyed(\n    {quota}\n        .allow_burst(NonZeroU32::new({burst}).unwrap()),\n);\n// per request\nlet allowed = limiter.check_key(&key).is_ok();\n"
        ));
        s
    }

    fn rate_per_s(&self, l: &Value) -> f64 {
        l["rate_per_s"].as_f64().unwrap_or(f64::NAN)
    }

    fn checked_by(&self) -> &'static str {
        "compiled against governor 0.10.4 and run (a burst admits the pick's burst), in ratelab's tests"
    }
}
