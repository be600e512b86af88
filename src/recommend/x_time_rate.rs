//! golang.org/x/time/rate: its parameter space and its Go line.
//!
//! `rate.NewLimiter(rate.Limit(r), b)` per key, decided with `Allow()`
//! (rate.go) — the decision lab's `token_bucket` row. The search: `r` on a
//! ladder around the intent's rate (× 0.5 … 2), `b` (monotone) bisected over
//! `0..=4 × limit` (`b = 0` admits nothing at a finite rate, as upstream).
//!
//! The snippet is Go source; ratelab's CI compiles and runs it against
//! Debian's golang.org/x/time (`golang-golang-x-time-dev`, 0.3.0): the
//! limiter's `Limit()` and `Burst()` are the pick's, and a burst at one
//! instant admits `b`.

use super::search::{num, rate_lines, Family, FamilyCtx, Line};
use serde_json::Value;

/// x/time/rate's `Limiter`, one per key.
pub struct XTimeRate;

impl Family for XTimeRate {
    fn name(&self) -> &'static str {
        "x-time-rate"
    }

    fn lines(&self, ctx: &FamilyCtx) -> Vec<Line> {
        rate_lines(ctx, "token_bucket", "rate_per_s", "burst", 0)
    }

    fn simplicity(&self, l: &Value) -> (u64, u64) {
        super::search::whole_rate_then_burst(l)
    }

    fn snippet_file(&self) -> &'static str {
        "x_time_rate.go"
    }

    fn snippet(&self, pick: &Value, _ctx: &FamilyCtx, header: &[String]) -> String {
        let burst = pick["burst"].as_u64().unwrap_or(0);
        let mut s = super::search::comments(header, "//");
        s.push_str(&format!(
            "import \"golang.org/x/time/rate\"\n\n// one per key, e.g. in a map guarded by a mutex\nfunc newLimiter() *rate.Limiter {{\n\treturn rate.NewLimiter(rate.Limit({}), {burst})\n}}\n\n// per request: limiterFor(key).Allow()\n",
            num(&pick["rate_per_s"])
        ));
        s
    }

    fn rate_per_s(&self, l: &Value) -> f64 {
        l["rate_per_s"].as_f64().unwrap_or(f64::NAN)
    }

    fn checked_by(&self) -> &'static str {
        "compiled and run against Debian's golang.org/x/time 0.3.0 (golang-golang-x-time-dev) in ratelab's CI; elsewhere its numbers only"
    }
}
