//! pingora-limits' `Rate` as a limiter: its setting is the estimate
//! pattern and the count-min sketch's shape, found by `size`'s sizing
//! search, and its Rust lines.
//!
//! `Rate::new_with_estimator_config(interval, hashes, slots)`
//! (pingora-limits 0.9.1, `src/rate.rs:87-101`) keeps two count-min
//! sketches (the current and the previous interval). The user's code
//! compares with the limit in one of two patterns, the decision lab's
//! `pingora_rate` row: `docs` (`rate.observe(&key, 1) > limit` denies;
//! every request counted) or `proportional` (the previous interval's
//! count weighted by the time left plus the current one, through
//! `rate_with`, `src/rate.rs:191`; only admitted requests observed).
//!
//! The limit and the interval are the intent's (the user's comparison);
//! what is searched is the sketch. A larger sketch collides less, so it
//! denies fewer compliant requests and lets more excess through: the
//! monotone parameter is its size, and the search is `size`'s
//! ([`crate::sizing::limit::search_mode`]): bisection over slots for each
//! row count, the pick verified on fresh hash seeds, the frontier
//! confirmed through the decision lab's model. Each mode's pick and
//! confirmed shapes, and exact per-key counters (no collisions at all),
//! are then measured here as the decision lab measures a `limiters` entry.
//!
//! The snippet is Rust; ratelab's tests compile it against the real crate.

use super::search::{Family, FamilyCtx, Line, Part};
use crate::error::Result;
use crate::model::rate_limiter::RateMode;
use crate::sizing::guarantee::{Plan, DEFAULT_CONFIDENCE_PCT, DEFAULT_COVERAGE_PCT};
use crate::sizing::limit::{search_mode, Ctx, LimitTarget, Windows};
use serde_json::{json, Value};

/// pingora-limits' `Rate`, in either pattern.
///
/// # Examples
///
/// ```
/// use ratelab::recommend::pingora::Pingora;
/// use ratelab::recommend::search::{Family, FamilyCtx};
/// use ratelab::sizing::limit::LimitPolicy;
/// let ctx = FamilyCtx { policy: LimitPolicy { limit: 10, interval_ms: 1000 }, keys: 100,
///                       key_expr: None, deploy: None };
/// let pick = serde_json::json!({"model": "pingora_rate", "estimate": "docs", "hashes": 3, "slots": 21});
/// let s = Pingora.snippet(&pick, &ctx, &[]);
/// assert!(s.contains("Rate::new_with_estimator_config(Duration::from_millis(1000), 3, 21)"));
/// assert!(s.contains("let allowed = rate.observe(&key, 1) <= LIMIT;"));
/// ```
pub struct Pingora;

/// Most memory the sizing search may give a sketch (both windows).
pub const MAX_SKETCH_BYTES: u64 = 1 << 30;

impl Family for Pingora {
    fn name(&self) -> &'static str {
        "pingora"
    }

    /// None: the sketch is searched by `size`'s search ([`Family::searched`]).
    fn lines(&self, _ctx: &FamilyCtx) -> Vec<Line> {
        Vec::new()
    }

    fn searched(
        &self,
        part: &Part,
        ctx: &FamilyCtx,
        targets: &[LimitTarget],
        seed: u64,
    ) -> Option<Result<Vec<Value>>> {
        Some(sketches(part, ctx, targets, seed))
    }

    /// `docs` before `proportional`, exact counters last; then the smaller
    /// sketch.
    fn simplicity(&self, l: &Value) -> (u64, u64) {
        let mode = u64::from(l["estimate"] == "proportional");
        let exact = u64::from(l["counters"] == "exact");
        let cells = l["hashes"].as_u64().unwrap_or(0) * l["slots"].as_u64().unwrap_or(0);
        (exact * 2 + mode, cells)
    }

    fn snippet_file(&self) -> &'static str {
        "pingora_rate.rs"
    }

    fn snippet(&self, pick: &Value, ctx: &FamilyCtx, header: &[String]) -> String {
        let p = ctx.policy;
        let mut s = super::search::comments(header, "//");
        let exact = pick["counters"] == "exact";
        if exact {
            s.push_str("// Exact counters: no sketch has fewer false denials; in pingora-limits,\n// the largest sketch your memory allows comes closest.\n");
        }
        let (hashes, slots) = (
            pick["hashes"].as_u64().unwrap_or(4),
            pick["slots"].as_u64().unwrap_or(1024),
        );
        s.push_str(
            "use pingora_limits::rate::{Rate, RateComponents};\nuse std::time::Duration;\n\n",
        );
        s.push_str(&format!("const LIMIT: isize = {};\n\n", p.limit));
        s.push_str(&format!(
            "let rate = Rate::new_with_estimator_config(Duration::from_millis({}), {hashes}, {slots});\n",
            p.interval_ms
        ));
        if pick["estimate"] == "proportional" {
            s.push_str("// per request: the previous interval weighted by the time left, plus this one\nlet estimate = rate.rate_with(&key, |c: RateComponents| {\n    c.prev_samples as f64 * (1.0 - c.current_interval_fraction) + c.curr_samples as f64\n});\nlet allowed = estimate < LIMIT as f64;\nif allowed {\n    rate.observe(&key, 1);\n}\n");
        } else {
            s.push_str("// per request (the crate's documented pattern): every request counted\nlet allowed = rate.observe(&key, 1) <= LIMIT;\n");
        }
        s
    }

    /// The intent's own rate (the limit is the user's comparison): not
    /// known from the setting alone, so not stated.
    fn rate_per_s(&self, _l: &Value) -> f64 {
        f64::NAN
    }

    fn checked_by(&self) -> &'static str {
        "compiled against pingora-limits 0.9.1 and run, in ratelab's tests"
    }
}

/// Each mode's sized pick and confirmed frontier shapes, and exact
/// counters, as `pingora_rate` limiter objects.
fn sketches(
    part: &Part,
    ctx: &FamilyCtx,
    targets: &[LimitTarget],
    seed: u64,
) -> Result<Vec<Value>> {
    let policy = ctx.policy;
    let windows = Windows::of_trace(&part.trace, policy.interval_ns());
    let plan = Plan::new(DEFAULT_COVERAGE_PCT, DEFAULT_CONFIDENCE_PCT, 1)?;
    let quiet = || {};
    let sctx = Ctx {
        trace: Some(&part.trace),
        classes: Some(&part.classes),
        windows: &windows,
        policy,
        near: (policy.limit, policy.limit),
        targets,
        seed,
        plan,
        max_memory: MAX_SKETCH_BYTES,
        on_eval: &quiet,
    };
    let mut out = Vec::new();
    for (mode, name) in [
        (RateMode::Docs, "docs"),
        (RateMode::Proportional, "proportional"),
    ] {
        let r = search_mode(&sctx, mode)?;
        let shapes = r
            .pick
            .map(|i| r.evaluated[i].shape)
            .into_iter()
            .chain(r.confirmed.iter().map(|c| c.shape));
        for sh in shapes {
            let v = json!({"model": "pingora_rate", "estimate": name,
                "hashes": sh.hashes, "slots": sh.slots});
            if !out.contains(&v) {
                out.push(v);
            }
        }
        out.push(json!({"model": "pingora_rate", "estimate": name, "counters": "exact"}));
    }
    Ok(out)
}
