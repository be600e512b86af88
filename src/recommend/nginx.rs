//! nginx `limit_req`: its parameter space and its config lines.
//!
//! What nginx lets the user write (ngx_http_limit_req_module.c,
//! `ngx_http_limit_req_zone` and `ngx_http_limit_req`): `rate=Nr/s` or
//! `rate=Nr/m` (whole numbers; stored as thousandths of a request per
//! second, `N × 1000` or `N × 1000 / 60`), `burst=N`, and `nodelay` or
//! `delay=N`. The search:
//!
//! * **rate**: a ladder of rates nginx can express around the intent's
//!   (`limit / interval` × 0.5 … 2, and with `--replicas N` also those
//!   divided by N: [`super::search::rate_factors`]), each as `r/s` when
//!   whole, else `r/m`;
//! * **burst**: monotone (a deeper bucket denies fewer compliant requests and
//!   lets more excess through), bisected on each rate over `0..=4 × limit`;
//! * **nodelay**: `delay=N` and the default (every excess request held) admit
//!   and refuse exactly the requests `nodelay` does — they only hold some
//!   of the admitted ones (the model reports that delay) — so the harm
//!   figures cannot tell them apart and the simplest, `nodelay`, is written;
//! * **zone**: sized from the log's key count with room for twice as many
//!   (`nginx_zone_nodes`: a full zone evicts its least recently used key,
//!   which forgets that key's excess).

use super::search::{factor_lines, Family, FamilyCtx, Line};
use crate::model::nginx_limit_req::nginx_zone_nodes;
use serde_json::{json, Map, Value};

/// nginx `limit_req`.
pub struct Nginx;

#[cfg(test)]
use super::search::RATE_FACTORS;

/// The smallest zone in MiB holding twice `keys` states.
///
/// # Examples
///
/// ```
/// // 10m holds 81,440 states: 40,000 keys fit with room to spare.
/// assert_eq!(ratelab::recommend::nginx::zone_mib(40_000), 10);
/// assert_eq!(ratelab::recommend::nginx::zone_mib(1), 1);
/// ```
pub fn zone_mib(keys: u64) -> u64 {
    let want = keys.saturating_mul(2);
    (1..=1 << 16)
        .find(|&m| nginx_zone_nodes(m << 20) >= want)
        .unwrap_or(1 << 16)
}

/// `rate_r_s: N` when `per_s` is a whole number of at least 1, else
/// `rate_r_m: N` (rounded, at least 1).
fn rate_field(per_s: f64) -> (&'static str, u64) {
    let r = libm::round(per_s);
    if r >= 1.0 && libm::fabs(per_s - r) < 1e-9 {
        ("rate_r_s", r as u64)
    } else {
        ("rate_r_m", (libm::round(per_s * 60.0) as u64).max(1))
    }
}

/// The nginx variable for the log's key expression, and a note when
/// nginx has none that matches.
fn key_var(key: Option<&str>) -> (String, Option<String>) {
    match key {
        None | Some("ip") => ("$binary_remote_addr".into(), None),
        Some(k) if k.starts_with("header:") => {
            let h = k["header:".len()..].to_ascii_lowercase().replace('-', "_");
            (format!("$http_{h}"), None)
        }
        Some(k) => (
            "$binary_remote_addr".into(),
            Some(format!(
                "the log was keyed by {k}: replace $binary_remote_addr by the nginx variable (or map) that yields it"
            )),
        ),
    }
}

impl Family for Nginx {
    fn name(&self) -> &'static str {
        "nginx"
    }

    fn lines(&self, ctx: &FamilyCtx) -> Vec<Line> {
        let p = ctx.policy;
        let per_s = p.limit as f64 * 1000.0 / p.interval_ms as f64;
        let zone = zone_mib(ctx.keys);
        factor_lines(ctx, "burst", (0, p.limit.saturating_mul(4).max(8)), |f| {
            let (field, r) = rate_field(per_s * f);
            let mut base = Map::new();
            base.insert("model".into(), json!("nginx_limit_req"));
            base.insert(field.into(), json!(r));
            base.insert("nodelay".into(), json!(true));
            base.insert("zone_mib".into(), json!(zone));
            Some(base)
        })
    }

    /// `r/s` before `r/m`, then the smaller burst.
    fn simplicity(&self, l: &Value) -> (u64, u64) {
        (
            u64::from(l.get("rate_r_m").is_some()),
            l["burst"].as_u64().unwrap_or(0),
        )
    }

    fn snippet_file(&self) -> &'static str {
        "nginx.conf"
    }

    fn snippet(&self, pick: &Value, ctx: &FamilyCtx, header: &[String]) -> String {
        let rate = match (pick["rate_r_s"].as_u64(), pick["rate_r_m"].as_u64()) {
            (Some(r), _) => format!("{r}r/s"),
            (_, Some(r)) => format!("{r}r/m"),
            _ => "1r/s".into(),
        };
        let burst = pick["burst"].as_u64().unwrap_or(0);
        let zone = pick["zone_mib"].as_u64().unwrap_or(10);
        let (var, note) = key_var(ctx.key_expr.as_deref());
        let mut s = super::search::comments(header, "#");
        if let Some(n) = note {
            s.push_str(&format!("# {n}\n"));
        }
        s.push_str(&format!(
            "# In the http block (the zone holds about {} keys; the log has {}):\n",
            nginx_zone_nodes(zone << 20),
            ctx.keys
        ));
        s.push_str(&format!(
            "limit_req_zone {var} zone=ratelab:{zone}m rate={rate};\n"
        ));
        s.push_str("limit_req_status 429;\n");
        s.push_str("# In the http, server or location block to limit:\n");
        s.push_str(&format!("limit_req zone=ratelab burst={burst} nodelay;\n"));
        s
    }

    fn rate_per_s(&self, l: &Value) -> f64 {
        match (l["rate_r_s"].as_f64(), l["rate_r_m"].as_f64()) {
            (Some(r), _) => r,
            (_, Some(r)) => r / 60.0,
            _ => f64::NAN,
        }
    }

    fn checked_by(&self) -> &'static str {
        "nginx -t (Debian's nginx) in ratelab's tests"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sizing::limit::LimitPolicy;

    #[test]
    fn rates_are_what_nginx_can_write() {
        assert_eq!(rate_field(10.0), ("rate_r_s", 10));
        assert_eq!(rate_field(7.5), ("rate_r_m", 450));
        assert_eq!(rate_field(0.5), ("rate_r_m", 30));
        let ctx = FamilyCtx {
            policy: LimitPolicy {
                limit: 10,
                interval_ms: 1000,
            },
            keys: 100,
            key_expr: None,
            deploy: None,
        };
        let lines = Nginx.lines(&ctx);
        assert_eq!(lines.len(), RATE_FACTORS.len());
        assert!(lines
            .iter()
            .any(|l| l.base.get("rate_r_s") == Some(&json!(10))));
        assert!(lines.iter().all(|l| l.hi == 40 && l.lo == 0));
        // A fleet of 4 also tries each rate divided by 4 (2.5/s as 150r/m).
        let fleet = FamilyCtx {
            deploy: Some(crate::recommend::search::Deploy {
                replicas: 4,
                balancer: json!("round_robin"),
            }),
            ..ctx
        };
        let lines = Nginx.lines(&fleet);
        assert_eq!(lines.len(), 2 * RATE_FACTORS.len() - 1);
        assert!(lines
            .iter()
            .any(|l| l.base.get("rate_r_m") == Some(&json!(150))));
    }

    #[test]
    fn snippet_has_the_three_directives() {
        let ctx = FamilyCtx {
            policy: LimitPolicy {
                limit: 10,
                interval_ms: 1000,
            },
            keys: 100,
            key_expr: Some("header:X-Api-Key".into()),
            deploy: None,
        };
        let pick = json!({"model": "nginx_limit_req", "rate_r_m": 450, "burst": 7, "nodelay": true, "zone_mib": 1});
        let s = Nginx.snippet(&pick, &ctx, &["hello".into()]);
        assert!(s.starts_with("# hello\n"), "{s}");
        assert!(s.contains("limit_req_zone $http_x_api_key zone=ratelab:1m rate=450r/m;"));
        assert!(s.contains("limit_req zone=ratelab burst=7 nodelay;"));
        assert!(s.contains("limit_req_status 429;"));
    }
}
