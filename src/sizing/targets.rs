//! Accuracy targets (`exact_pct>=99`, `p99<=5`, ...) and the rule by which
//! per-seed statistics meet them, on the search seeds and on each hold-out
//! seed.

use crate::error::{Error, Result};
use crate::metrics::{summarize, ErrorStats, MeanStd, RunSummary};
use serde::Serialize;

/// An error statistic a target constrains.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// Share of keys estimated exactly (%), higher is better.
    ExactPct,
    /// Mean overcount.
    Mean,
    /// 99th percentile of the overcount (nearest rank).
    P99,
    /// Largest overcount.
    Max,
    /// Share of keys whose overcount exceeds e·N/w (%).
    OverBoundPct,
}

impl Metric {
    /// The name used in targets and reports.
    pub fn name(self) -> &'static str {
        match self {
            Metric::ExactPct => "exact_pct",
            Metric::Mean => "mean",
            Metric::P99 => "p99",
            Metric::Max => "max",
            Metric::OverBoundPct => "over_bound_pct",
        }
    }

    /// True when larger values are better.
    pub fn higher_is_better(self) -> bool {
        self == Metric::ExactPct
    }

    /// The statistic of one run.
    pub fn of(self, s: &ErrorStats) -> f64 {
        self.pick([s.exact_pct, s.mean, s.p99, s.max, s.over_bound_pct])
    }

    /// The mean over runs.
    pub fn of_summary(self, s: &RunSummary) -> f64 {
        self.spread(s).mean
    }

    /// The mean and standard deviation over runs.
    pub fn spread(self, s: &RunSummary) -> MeanStd {
        self.pick([s.exact_pct, s.mean, s.p99, s.max, s.over_bound_pct])
    }

    /// The one of five values given in the order of [`Metric::ALL`] that
    /// this metric names.
    fn pick<T>(self, [exact_pct, mean, p99, max, over_bound_pct]: [T; 5]) -> T {
        match self {
            Metric::ExactPct => exact_pct,
            Metric::Mean => mean,
            Metric::P99 => p99,
            Metric::Max => max,
            Metric::OverBoundPct => over_bound_pct,
        }
    }

    /// Every metric, in the order of the report columns.
    pub const ALL: [Metric; 5] = [
        Metric::ExactPct,
        Metric::Mean,
        Metric::P99,
        Metric::Max,
        Metric::OverBoundPct,
    ];
}

/// A comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Cmp {
    /// `>=`
    #[serde(rename = ">=")]
    Ge,
    /// `>`
    #[serde(rename = ">")]
    Gt,
    /// `<=`
    #[serde(rename = "<=")]
    Le,
    /// `<`
    #[serde(rename = "<")]
    Lt,
}

impl Cmp {
    /// `>=`, `>`, `<=` or `<`.
    pub fn symbol(self) -> &'static str {
        match self {
            Cmp::Ge => ">=",
            Cmp::Gt => ">",
            Cmp::Le => "<=",
            Cmp::Lt => "<",
        }
    }
}

impl Cmp {
    /// Whether `value` compares to `threshold` as this operator says.
    pub fn holds(self, value: f64, threshold: f64) -> bool {
        match self {
            Cmp::Ge => value >= threshold,
            Cmp::Gt => value > threshold,
            Cmp::Le => value <= threshold,
            Cmp::Lt => value < threshold,
        }
    }
}

/// One accuracy target, e.g. `p99<=5`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Target {
    /// As the user wrote it.
    pub text: String,
    /// What it constrains.
    pub metric: Metric,
    /// How.
    pub cmp: Cmp,
    /// The threshold, with `avg` resolved.
    pub threshold: f64,
}

impl Target {
    /// Parses `metric OP value`, where value is a number, `avg`, `K*avg` or
    /// `avg*K` (`avg` = events / keys of the workload).
    ///
    /// # Examples
    ///
    /// ```
    /// use ratelab::sizing::{Metric, Target};
    ///
    /// let t = Target::parse("mean <= 0.01*avg", 200.0).unwrap();
    /// assert_eq!((t.metric, t.threshold), (Metric::Mean, 2.0));
    /// assert_eq!(t.resolved(), "mean<=2");
    /// assert!(t.holds(1.5) && !t.holds(2.5));
    /// assert!(Target::parse("p99>=5", 1.0).is_err());
    /// ```
    pub fn parse(text: &str, avg: f64) -> Result<Target> {
        let bad = |place: &str, expected: &str| {
            Error::input(format!(
                "--target {text:?}: at {place:?}: expected {expected}"
            ))
        };
        let t: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        let Some(op_at) = t.find(['<', '>', '=', '!']) else {
            return Err(bad(
                &t,
                "METRIC OP VALUE, e.g. exact_pct>=99, p99<=5, max<=100, mean<=0.01*avg",
            ));
        };
        let (name, rest) = t.split_at(op_at);
        let metric = Metric::ALL
            .into_iter()
            .find(|m| m.name() == name)
            .ok_or_else(|| {
                bad(
                    name,
                    "a metric: exact_pct, mean, p99, max or over_bound_pct",
                )
            })?;
        let (cmp, value) = if let Some(v) = rest.strip_prefix(">=") {
            (Cmp::Ge, v)
        } else if let Some(v) = rest.strip_prefix("<=") {
            (Cmp::Le, v)
        } else if let Some(v) = rest.strip_prefix('>') {
            (Cmp::Gt, v)
        } else if let Some(v) = rest.strip_prefix('<') {
            (Cmp::Lt, v)
        } else {
            return Err(bad(rest, "an operator: >=, >, <= or <"));
        };
        let wants_high = metric.higher_is_better();
        if wants_high != matches!(cmp, Cmp::Ge | Cmp::Gt) {
            return Err(bad(
                cmp.symbol(),
                if wants_high {
                    "'>=' or '>' (exact_pct is a floor: higher is better)"
                } else {
                    "'<=' or '<' (errors are ceilings: lower is better)"
                },
            ));
        }
        let num = |s: &str| -> Option<f64> { s.parse::<f64>().ok().filter(|v| v.is_finite()) };
        let threshold = if value == "avg" {
            Some(avg)
        } else if let Some(k) = value.strip_suffix("*avg") {
            num(k).map(|k| k * avg)
        } else if let Some(k) = value.strip_prefix("avg*") {
            num(k).map(|k| k * avg)
        } else {
            num(value)
        }
        .ok_or_else(|| {
            bad(
                value,
                "a number, `avg`, `K*avg` or `avg*K` (avg = events/keys)",
            )
        })?;
        if threshold < 0.0 {
            return Err(bad(value, "a value >= 0"));
        }
        if metric == Metric::ExactPct || metric == Metric::OverBoundPct {
            let impossible = match cmp {
                Cmp::Gt => threshold >= 100.0,
                Cmp::Ge => threshold > 100.0,
                _ => false,
            };
            if impossible || threshold > 100.0 {
                return Err(bad(value, "a percentage in 0..=100"));
            }
        }
        if cmp == Cmp::Lt && threshold == 0.0 {
            return Err(bad(value, "a value > 0 (errors are never below 0)"));
        }
        Ok(Target {
            text: text.to_string(),
            metric,
            cmp,
            threshold,
        })
    }

    /// Whether `value` satisfies the target.
    pub fn holds(&self, value: f64) -> bool {
        self.cmp.holds(value, self.threshold)
    }

    /// The target rewritten with its resolved threshold.
    pub fn resolved(&self) -> String {
        format!(
            "{}{}{}",
            self.metric.name(),
            self.cmp.symbol(),
            trim_float(self.threshold)
        )
    }
}

pub(crate) fn trim_float(v: f64) -> String {
    let s = format!("{v:.4}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Whether per-seed statistics meet every target (mean and every seed).
pub fn meets_all(targets: &[Target], per_seed: &[ErrorStats]) -> bool {
    let summary = summarize(per_seed);
    !per_seed.is_empty()
        && targets.iter().all(|t| {
            t.holds(t.metric.of_summary(&summary))
                && per_seed.iter().all(|s| t.holds(t.metric.of(s)))
        })
}

/// Whether one seed's statistics meet every target: the hold-out's rule,
/// whose share of passing seeds is what a sizing claims
/// ([`crate::sizing::guarantee`]).
pub fn seed_meets(targets: &[Target], s: &ErrorStats) -> bool {
    targets.iter().all(|t| t.holds(t.metric.of(s)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_parse_and_reject() {
        let t = Target::parse("exact_pct>=99", 97.0).unwrap();
        assert_eq!(
            (t.metric, t.cmp, t.threshold),
            (Metric::ExactPct, Cmp::Ge, 99.0)
        );
        let t = Target::parse(" mean <= 0.01*avg ", 200.0).unwrap();
        assert_eq!((t.metric, t.threshold), (Metric::Mean, 2.0));
        assert_eq!(Target::parse("p99<avg", 5.0).unwrap().threshold, 5.0);
        for (bad, what) in [
            ("p99<=x", "\"x\""),
            ("p98<=5", "\"p98\""),
            ("p99>=5", "\">=\""),
            ("exact_pct<=5", "\"<=\""),
            ("exact_pct>=101", "percentage"),
            ("p99", "METRIC OP VALUE"),
            ("p99=5", "operator"),
            ("max<=-1", ">= 0"),
        ] {
            let e = Target::parse(bad, 1.0).unwrap_err().to_string();
            assert!(e.contains(what), "{bad}: {e}");
            assert!(e.contains(bad.trim()), "{bad}: {e}");
        }
    }
}
