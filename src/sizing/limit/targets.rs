//! Targets tied to a rate limit: what the limiter does to well-behaved and
//! abusive keys (`compliant_denied_pct<=0.1`, `compliant_keys_denied<=0`,
//! `excess_pct<=1`), and the count-min error targets (`p99<=0.05*limit`,
//! `max<=10`, `exact_pct>=99`, `mean<=1`, `over_bound_pct<=1`) measured per
//! window over the keys near the limit.

use crate::sizing::targets::{Metric, Target, TargetMetric};
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
}

impl TargetMetric for LimitMetric {
    const NAMED: &'static [LimitMetric] = &[
        LimitMetric::CompliantDeniedPct,
        LimitMetric::CompliantKeysDenied,
        LimitMetric::ExcessPct,
        LimitMetric::Error(Metric::ExactPct),
        LimitMetric::Error(Metric::Mean),
        LimitMetric::Error(Metric::P99),
        LimitMetric::Error(Metric::Max),
        LimitMetric::Error(Metric::OverBoundPct),
    ];
    const EXAMPLES: &'static str = "compliant_denied_pct<=0.1, p99<=0.05*limit";
    fn name(self) -> &'static str {
        LimitMetric::name(self)
    }
    fn higher_is_better(self) -> bool {
        matches!(self, LimitMetric::Error(m) if m.higher_is_better())
    }
    fn direction_hint(self) -> &'static str {
        match self {
            LimitMetric::Error(m) => m.direction_hint(),
            _ => "'<=' or '<' (a harm is a ceiling: lower is better)",
        }
    }
    fn is_pct(self) -> bool {
        match self {
            LimitMetric::Error(m) => m.is_pct(),
            m => m != LimitMetric::CompliantKeysDenied,
        }
    }
    fn signed(self) -> bool {
        self == LimitMetric::ExcessPct
    }
    fn needs_limit(self) -> bool {
        self.is_decision()
    }
    fn relative(self) -> bool {
        !self.is_decision()
    }
}

/// One target of a limit sizing: the one [`Target`] over [`LimitMetric`];
/// a value is a number, or for the error metrics also `limit`, `K*limit`
/// or `limit*K`.
///
/// # Examples
///
/// ```
/// use ratelab::sizing::limit::{LimitMetric, LimitTarget};
///
/// let t = LimitTarget::parse_in("p99<=0.05*limit", Some(100)).unwrap();
/// assert_eq!(t.threshold, 5.0);
/// let t = LimitTarget::parse_in("compliant_denied_pct<=0.1", Some(100)).unwrap();
/// assert_eq!(t.metric, LimitMetric::CompliantDeniedPct);
/// assert!(t.holds(0.05) && !t.holds(0.2));
/// assert!(LimitTarget::parse_in("compliant_denied_pct>=1", Some(100)).is_err());
/// assert!(LimitTarget::parse_in("p99<=0.05*limit", None).is_err());
/// ```
pub type LimitTarget = Target<LimitMetric>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limit_targets_parse_and_reject() {
        let t = LimitTarget::parse_in("max <= limit*0.1", Some(50)).unwrap();
        assert_eq!(
            (t.metric, t.threshold),
            (LimitMetric::Error(Metric::Max), 5.0)
        );
        assert_eq!(t.resolved(), "max<=5");
        let t = LimitTarget::parse_in("compliant_keys_denied<=0", Some(50)).unwrap();
        assert!(t.holds(0.0) && !t.holds(1.0));
        let t = LimitTarget::parse_in("excess_pct<=-1", Some(50)).unwrap();
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
            let e = LimitTarget::parse_in(bad, Some(10))
                .unwrap_err()
                .to_string();
            assert!(e.contains(what), "{bad}: {e}");
            assert!(e.contains(bad), "{bad}: {e}");
        }
        let e = LimitTarget::parse_in("compliant_denied_pct<=1", None).unwrap_err();
        assert!(e.to_string().contains("--limit"), "{e}");
    }
}
