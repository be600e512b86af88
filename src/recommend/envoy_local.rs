//! Envoy's local rate limit filter (`envoy.filters.http.local_ratelimit`):
//! its parameter space and its filter YAML.
//!
//! The token bucket of `LocalRateLimit` (api/envoy/extensions/filters/http/
//! local_ratelimit/v3/local_rate_limit.proto): `max_tokens`,
//! `tokens_per_fill`, `fill_interval` (at least 50 ms). The search:
//!
//! * **refill**: `fill_interval` the intent's interval (at least 50 ms) and
//!   `tokens_per_fill` a ladder around the intent's tokens per fill
//!   (× 0.5 … 2, whole tokens, at least 1);
//! * **max_tokens**: monotone (a bigger bucket denies fewer compliant
//!   requests, lets more excess through), bisected over `1..=4 × limit`;
//! * the continuous `AtomicTokenBucket` (Envoy's default since 1.31), one
//!   bucket per key, as the decision lab's `envoy_local_rate_limit` row.
//!
//! The YAML is checked only for its shape in ratelab's tests (no Envoy
//! binary is installable here): the field names and types of the proto.

use super::search::{burst_top, factor_lines, Family, FamilyCtx, Line};
use serde_json::{json, Map, Value};

/// Envoy's local rate limit filter.
pub struct EnvoyLocal;

/// A proto `Duration` in YAML: whole seconds as `1s`, else `0.250s`.
///
/// # Examples
///
/// ```
/// use ratelab::recommend::envoy_local::duration;
/// assert_eq!(duration(1000), "1s");
/// assert_eq!(duration(250), "0.250s");
/// ```
pub fn duration(ms: u64) -> String {
    if ms.is_multiple_of(1000) {
        format!("{}s", ms / 1000)
    } else {
        format!("{}.{:03}s", ms / 1000, ms % 1000)
    }
}

impl Family for EnvoyLocal {
    fn name(&self) -> &'static str {
        "envoy-local"
    }

    fn lines(&self, ctx: &FamilyCtx) -> Vec<Line> {
        let p = ctx.policy;
        let fill = p.interval_ms.max(50);
        let per_fill = p.limit as f64 * fill as f64 / p.interval_ms as f64;
        factor_lines(ctx, "max_tokens", (1, burst_top(p)), |f| {
            let tokens = (libm::round(per_fill * f) as u64).clamp(1, u64::from(u32::MAX));
            let mut base = Map::new();
            base.insert("model".into(), json!("envoy_local_rate_limit"));
            base.insert("tokens_per_fill".into(), json!(tokens));
            base.insert("fill_interval_ms".into(), json!(fill));
            Some(base)
        })
    }

    /// The smaller bucket.
    fn simplicity(&self, l: &Value) -> (u64, u64) {
        (0, l["max_tokens"].as_u64().unwrap_or(0))
    }

    fn snippet_file(&self) -> &'static str {
        "envoy-local-ratelimit.yaml"
    }

    fn snippet(&self, pick: &Value, ctx: &FamilyCtx, header: &[String]) -> String {
        let max = pick["max_tokens"].as_u64().unwrap_or(1);
        let per_fill = pick["tokens_per_fill"].as_u64().unwrap_or(1);
        let fill = pick["fill_interval_ms"].as_u64().unwrap_or(1000);
        let key = ctx.key_expr.as_deref().unwrap_or("the client address");
        let mut s = super::search::comments(header, "#");
        s.push_str(&format!(
            "# One bucket per key ({key}): the token bucket below applies per descriptor;\n# attach descriptors for the key through the route's rate_limits actions.\n"
        ));
        s.push_str(&format!(
            "name: envoy.filters.http.local_ratelimit
typed_config:
  \"@type\": type.googleapis.com/envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit
  stat_prefix: http_local_rate_limiter
  token_bucket:
    max_tokens: {max}
    tokens_per_fill: {per_fill}
    fill_interval: {}
  filter_enabled:
    runtime_key: local_rate_limit_enabled
    default_value:
      numerator: 100
      denominator: HUNDRED
  filter_enforced:
    runtime_key: local_rate_limit_enforced
    default_value:
      numerator: 100
      denominator: HUNDRED
  status:
    code: TooManyRequests
",
            duration(fill)
        ));
        s
    }

    fn rate_per_s(&self, l: &Value) -> f64 {
        let per_fill = l["tokens_per_fill"].as_f64().unwrap_or(f64::NAN);
        let fill_ms = l["fill_interval_ms"].as_f64().unwrap_or(f64::NAN);
        per_fill * 1000.0 / fill_ms
    }

    fn checked_by(&self) -> &'static str {
        "the local_rate_limit proto's field names and types, in ratelab's tests (no Envoy binary here)"
    }
}
