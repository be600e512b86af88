//! Targets tied to a rate limit: what the limiter does to well-behaved and
//! abusive keys (`compliant_denied_pct<=0.1`, `compliant_keys_denied<=0`,
//! `excess_pct<=1`), and the count-min error targets (`p99<=0.05*limit`,
//! `max<=10`, `exact_pct>=99`, `mean<=1`, `over_bound_pct<=1`) measured per
//! window over the keys near the limit.

use crate::error::{Error, Result};
use crate::sizing::targets::{trim_float, Cmp, Metric, Target};
use serde::Serialize;

/// What a limit target constrains.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LimitMetric {
    /// Requests of compliant keys denied, % of their requests.
    CompliantDeniedPct,
    /// Compliant keys with at least one request denied.
    CompliantKeysDenied,
    /// Requests of limited keys admitted beyond the exact limiter, % of what
    /// it admitted for them.
    ExcessPct,
    /// A count-min error statistic of the keys near the limit, in the worst
    /// window.
    Error(Metric),
}

impl LimitMetric {
    /// The name used in targets and reports.
    pub fn name(self) -> &'static str {
        match self {
            LimitMetric::CompliantDeniedPct => "compliant_denied_pct",
            LimitMetric::CompliantKeysDenied => "compliant_keys_denied",
            LimitMetric::ExcessPct => "excess_pct",
            LimitMetric::Error(m) => m.name(),
        }
    }

    /// A decision figure (needs a replay), not a sketch error.
    pub fn is_decision(self) -> bool {
        !matches!(self, LimitMetric::Error(_))
    }

    const DECISION: [LimitMetric; 3] = [
        LimitMetric::CompliantDeniedPct,
        LimitMetric::CompliantKeysDenied,
        LimitMetric::ExcessPct,
    ];
}

/// One target of a limit sizing.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LimitTarget {
    /// As written.
    pub text: String,
    /// What it constrains.
    pub metric: LimitMetric,
    /// How.
    pub cmp: Cmp,
    /// The threshold, `limit` resolved.
    pub threshold: f64,
}

impl LimitTarget {
    /// Parses `metric OP value`; value is a number, or for the error
    /// metrics also `limit`, `K*limit` or `limit*K`.
    ///
    /// # Examples
    ///
    /// ```
    /// use ratelab::sizing::limit::{LimitMetric, LimitTarget};
    ///
    /// let t = LimitTarget::parse("p99<=0.05*limit", Some(100)).unwrap();
    /// assert_eq!(t.threshold, 5.0);
    /// let t = LimitTarget::parse("compliant_denied_pct<=0.1", Some(100)).unwrap();
    /// assert_eq!(t.metric, LimitMetric::CompliantDeniedPct);
    /// assert!(t.holds(0.05) && !t.holds(0.2));
    /// assert!(LimitTarget::parse("compliant_denied_pct>=1", Some(100)).is_err());
    /// assert!(LimitTarget::parse("p99<=0.05*limit", None).is_err());
    /// ```
    pub fn parse(text: &str, limit: Option<u64>) -> Result<LimitTarget> {
        let t: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        let bad = |place: &str, expected: &str| {
            Error::input(format!(
                "--target {text:?}: at {place:?}: expected {expected}"
            ))
        };
        let op_at = t.find(['<', '>', '=']).ok_or_else(|| {
            bad(
                &t,
                "METRIC OP VALUE, e.g. compliant_denied_pct<=0.1, p99<=0.05*limit",
            )
        })?;
        let (name, rest) = t.split_at(op_at);
        let value = rest.trim_start_matches(['<', '>', '=']);
        let op = &rest[..rest.len() - value.len()];
        let resolve = |v: &str| -> Result<String> {
            let rel = v == "limit" || v.starts_with("limit*") || v.ends_with("*limit");
            if !rel {
                return Ok(v.to_string());
            }
            let Some(l) = limit else {
                return Err(bad(v, "a number (`limit` needs --limit L)"));
            };
            let k = v
                .strip_prefix("limit*")
                .or_else(|| v.strip_suffix("*limit"))
                .unwrap_or("1");
            let k: f64 = k
                .parse()
                .ok()
                .filter(|k: &f64| k.is_finite())
                .ok_or_else(|| bad(v, "a number, `limit`, `K*limit` or `limit*K`"))?;
            Ok(format!("{}", k * l as f64))
        };
        if let Some(metric) = LimitMetric::DECISION.into_iter().find(|m| m.name() == name) {
            if limit.is_none() {
                return Err(bad(name, "a target the workload can measure: decision targets need --limit L --interval-ms I and a time-stamped trace"));
            }
            let cmp = match op {
                "<=" => Cmp::Le,
                "<" => Cmp::Lt,
                _ => {
                    return Err(bad(
                        op,
                        "'<=' or '<' (a harm is a ceiling: lower is better)",
                    ))
                }
            };
            let threshold: f64 = value
                .parse()
                .ok()
                .filter(|v: &f64| v.is_finite())
                .ok_or_else(|| bad(value, "a number"))?;
            let pct = metric != LimitMetric::CompliantKeysDenied;
            if metric != LimitMetric::ExcessPct && threshold < 0.0 {
                return Err(bad(value, "a value >= 0"));
            }
            if pct && threshold > 100.0 {
                return Err(bad(value, "a percentage <= 100"));
            }
            if cmp == Cmp::Lt && threshold <= 0.0 && metric != LimitMetric::ExcessPct {
                return Err(bad(value, "a value > 0 (these figures are never below 0)"));
            }
            return Ok(LimitTarget {
                text: text.to_string(),
                metric,
                cmp,
                threshold,
            });
        }
        if value.contains("avg") {
            // A limit sizing has no per-key average: `avg` would resolve to 0.
            return Err(bad(
                value,
                "a number, `limit`, `K*limit` or `limit*K` (`avg` is for sizing a count workload, without --limit)",
            ));
        }
        let value = resolve(value)?;
        let inner = Target::parse(&format!("{name}{op}{value}"), 0.0).map_err(|e| {
            let msg = e.message();
            let hint = if msg.contains("a metric") {
                Error::input(format!(
                    "--target {text:?}: at {name:?}: expected a metric: compliant_denied_pct, compliant_keys_denied, excess_pct, exact_pct, mean, p99, max or over_bound_pct"
                ))
            } else {
                Error::input(msg.replace(&format!("{name}{op}{value}"), text))
            };
            hint
        })?;
        Ok(LimitTarget {
            text: text.to_string(),
            metric: LimitMetric::Error(inner.metric),
            cmp: inner.cmp,
            threshold: inner.threshold,
        })
    }

    /// Whether `value` satisfies it.
    pub fn holds(&self, value: f64) -> bool {
        self.cmp.holds(value, self.threshold)
    }

    /// The target with its resolved threshold.
    pub fn resolved(&self) -> String {
        format!(
            "{}{}{}",
            self.metric.name(),
            self.cmp.symbol(),
            trim_float(self.threshold)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limit_targets_parse_and_reject() {
        let t = LimitTarget::parse("max <= limit*0.1", Some(50)).unwrap();
        assert_eq!(
            (t.metric, t.threshold),
            (LimitMetric::Error(Metric::Max), 5.0)
        );
        assert_eq!(t.resolved(), "max<=5");
        let t = LimitTarget::parse("compliant_keys_denied<=0", Some(50)).unwrap();
        assert!(t.holds(0.0) && !t.holds(1.0));
        let t = LimitTarget::parse("excess_pct<=-1", Some(50)).unwrap();
        assert!(t.holds(-2.0));
        for (bad, what) in [
            ("compliant_denied_pct<=x", "\"x\""),
            ("compliant_denied_pct<=101", "percentage"),
            ("compliant_keys_denied<=-1", ">= 0"),
            ("p99<=two*limit", "\"two*limit\""),
            ("p98<=5", "\"p98\""),
            ("exact_pct<=5", "\"<=\""),
            ("mean<=0.5*avg", "`avg` is for"),
            ("p99<=avg", "`avg` is for"),
        ] {
            let e = LimitTarget::parse(bad, Some(10)).unwrap_err().to_string();
            assert!(e.contains(what), "{bad}: {e}");
            assert!(e.contains(bad), "{bad}: {e}");
        }
        let e = LimitTarget::parse("compliant_denied_pct<=1", None).unwrap_err();
        assert!(e.to_string().contains("--limit"), "{e}");
    }
}
