//! Accuracy targets (`exact_pct>=99`, `p99<=5`, ...) and the rule by which
//! per-seed statistics meet them, on the search seeds and on each hold-out
//! seed.

use crate::error::{Error, Result};
use crate::metrics::{summarize, ErrorStats, MeanStd, RunSummary};
use crate::sizing::error::SizingError;
use serde::Serialize;

/// An error statistic a target constrains.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
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

/// What a target may constrain: the count sizing's error statistics
/// ([`Metric`]) or the rate-limit sizing's harms and errors
/// ([`crate::sizing::limit::LimitMetric`]). One grammar and one judge
/// ([`Target`]) serve both; a metric says only what is particular to it.
pub trait TargetMetric: Copy + PartialEq + std::fmt::Debug + Serialize + 'static {
    /// Every metric a target may name, in the order an error lists them.
    const NAMED: &'static [Self];
    /// A line of examples, shown when a target is not `METRIC OP VALUE`.
    const EXAMPLES: &'static str;
    /// The name used in targets and reports.
    fn name(self) -> &'static str;
    /// True when larger values are better (a floor, not a ceiling).
    fn higher_is_better(self) -> bool;
    /// Why the other direction is wrong, for the error message.
    fn direction_hint(self) -> &'static str;
    /// A share in percent, so at most 100.
    fn is_pct(self) -> bool;
    /// Below 0 means something (an excess under the exact limiter).
    fn signed(self) -> bool {
        false
    }
    /// Measured only against a rate limit (`--limit`, `--interval-ms`).
    fn needs_limit(self) -> bool {
        false
    }
    /// Its value may be written relative to the limit (`0.05*limit`);
    /// harms are plain numbers.
    fn relative(self) -> bool {
        true
    }
}

impl TargetMetric for Metric {
    const NAMED: &'static [Metric] = &Metric::ALL;
    const EXAMPLES: &'static str = "exact_pct>=99, p99<=5, max<=100, mean<=0.01*avg";
    fn name(self) -> &'static str {
        Metric::name(self)
    }
    fn higher_is_better(self) -> bool {
        Metric::higher_is_better(self)
    }
    fn direction_hint(self) -> &'static str {
        if self.higher_is_better() {
            "'>=' or '>' (exact_pct is a floor: higher is better)"
        } else {
            "'<=' or '<' (errors are ceilings: lower is better)"
        }
    }
    fn is_pct(self) -> bool {
        matches!(self, Metric::ExactPct | Metric::OverBoundPct)
    }
}

/// What a relative threshold resolves against: `avg` (events per key) in a
/// count sizing, `limit` in a rate-limit sizing.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scale {
    /// A count workload: `avg` = events / keys.
    Avg(f64),
    /// A rate limit, when one is given.
    Limit(Option<u64>),
}

impl From<f64> for Scale {
    fn from(avg: f64) -> Scale {
        Scale::Avg(avg)
    }
}

impl From<Option<u64>> for Scale {
    fn from(limit: Option<u64>) -> Scale {
        Scale::Limit(limit)
    }
}

/// Refuses two `--target`s on one metric: each metric has one direction,
/// so the looser of the two is ignored (and two that disagree are a typo).
/// A target's metric is its text before the operator.
///
/// # Examples
/// ```
/// use ratelab::sizing::refuse_repeated_targets;
/// assert!(refuse_repeated_targets(&["p99<=5".into(), "max<=9".into()]).is_ok());
/// let e = refuse_repeated_targets(&["p99<=5".into(), " p99 <= 7".into()]).unwrap_err();
/// assert!(e.to_string().contains("p99 <= 7"), "{e}");
/// ```
pub fn refuse_repeated_targets(texts: &[String]) -> Result<()> {
    let metric = |t: &str| {
        t.split(['<', '>', '='])
            .next()
            .unwrap_or_default()
            .trim()
            .to_string()
    };
    for (i, t) in texts.iter().enumerate() {
        if let Some(first) = texts[..i]
            .iter()
            .find(|u| !metric(t).is_empty() && metric(u) == metric(t))
        {
            return Err(Error::input(format!(
                "--target {:?}: a second target on {} (the first: {:?}): expected one target a metric",
                t.trim(),
                metric(t),
                first.trim()
            )));
        }
    }
    Ok(())
}

/// One target, e.g. `p99<=5` or `compliant_denied_pct<=0.1`, over the
/// metrics `M` (the count sizing's [`Metric`] by default).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Target<M = Metric> {
    /// As the user wrote it.
    pub text: String,
    /// What it constrains.
    pub metric: M,
    /// How.
    pub cmp: Cmp,
    /// The threshold, `avg` or `limit` resolved.
    pub threshold: f64,
}

impl Target<Metric> {
    /// Parses a count sizing's `metric OP value`, where value is a number,
    /// `avg`, `K*avg` or `avg*K` (`avg` = events / keys of the workload);
    /// [`Target::parse_in`] with an average.
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
        Target::parse_in(text, Scale::Avg(avg))
    }
}

impl<M: TargetMetric> Target<M> {
    /// Parses `metric OP value` over the metrics `M`, resolving a relative
    /// value against `scale`: a count sizing's `avg` (events / keys; a bare
    /// `f64` is one) or a rate limit (`Option<u64>`, for
    /// [`crate::sizing::limit::LimitTarget`]). Every error names the target
    /// as written, the piece that failed and what was expected there.
    ///
    /// # Examples
    ///
    /// ```
    /// use ratelab::sizing::limit::{LimitMetric, LimitTarget};
    /// use ratelab::sizing::{Metric, Target};
    ///
    /// let t = Target::<Metric>::parse_in("p99 <= 2*avg", 3.0).unwrap();
    /// assert_eq!(t.threshold, 6.0);
    /// let e = Target::<Metric>::parse_in("p99<=limit", 3.0).unwrap_err();
    /// assert!(e.to_string().contains("\"limit\""));
    /// let t = LimitTarget::parse_in("excess_pct<=-1", Some(100)).unwrap();
    /// assert_eq!(t.metric, LimitMetric::ExcessPct);
    /// ```
    pub fn parse_in(text: &str, scale: impl Into<Scale>) -> Result<Target<M>> {
        let scale = scale.into();
        let bad = |place: &str, expected: &str| {
            Error::input(format!(
                "--target {text:?}: at {place:?}: expected {expected}"
            ))
        };
        let t: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        let Some(op_at) = t.find(['<', '>', '=', '!']) else {
            return Err(bad(&t, &format!("METRIC OP VALUE, e.g. {}", M::EXAMPLES)));
        };
        let (name, rest) = t.split_at(op_at);
        let metric = M::NAMED
            .iter()
            .copied()
            .find(|m| m.name() == name)
            .ok_or_else(|| bad(name, &format!("a metric: {}", names_of::<M>())))?;
        if metric.needs_limit() && !matches!(scale, Scale::Limit(Some(_))) {
            return Err(bad(
                name,
                "a target the workload can measure: decision targets need --limit L --interval-ms I and a time-stamped trace",
            ));
        }
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
        if metric.higher_is_better() != matches!(cmp, Cmp::Ge | Cmp::Gt) {
            return Err(bad(cmp.symbol(), metric.direction_hint()));
        }
        let threshold =
            resolve(value, metric.relative(), scale).map_err(|m| bad(value, &m.to_string()))?;
        if threshold < 0.0 && !metric.signed() {
            return Err(bad(value, "a value >= 0"));
        }
        if metric.is_pct() {
            let impossible = match cmp {
                Cmp::Gt => threshold >= 100.0,
                _ => threshold > 100.0,
            };
            if impossible {
                return Err(bad(value, "a percentage in 0..=100"));
            }
        }
        if cmp == Cmp::Lt && threshold <= 0.0 && !metric.signed() {
            return Err(bad(value, "a value > 0 (this figure is never below 0)"));
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

/// `a, b or c`: the metrics an error lists.
fn names_of<M: TargetMetric>() -> String {
    let names: Vec<&str> = M::NAMED.iter().map(|m| m.name()).collect();
    match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => names.join(""),
    }
}

/// A threshold: a number, or `K*u`, `u*K`, `u` for the scale's unit `u`
/// when the metric may be relative. `Err` says what was expected.
fn resolve(value: &str, relative: bool, scale: Scale) -> std::result::Result<f64, SizingError> {
    let num = |s: &str| s.parse::<f64>().ok().filter(|v| v.is_finite());
    let factor = |unit: &str| -> Option<Option<f64>> {
        if value == unit {
            Some(Some(1.0))
        } else if let Some(k) = value.strip_suffix(&format!("*{unit}")) {
            Some(num(k))
        } else {
            value.strip_prefix(&format!("{unit}*")).map(num)
        }
    };
    let what = match (relative, scale) {
        (false, _) => "a number".to_string(),
        (true, Scale::Avg(_)) => "a number, `avg`, `K*avg` or `avg*K` (avg = events/keys)".into(),
        (true, Scale::Limit(_)) => "a number, `limit`, `K*limit` or `limit*K`".into(),
    };
    if let Some(v) = num(value) {
        return Ok(v);
    }
    let expected = |expected: String| SizingError::Threshold { expected };
    if !relative {
        return Err(expected(what));
    }
    match scale {
        Scale::Avg(avg) => match factor("avg") {
            Some(Some(k)) => Ok(k * avg),
            _ => Err(expected(what)),
        },
        Scale::Limit(limit) => {
            if value.contains("avg") {
                // A limit sizing has no per-key average: `avg` would resolve to 0.
                return Err(expected(format!(
                    "{what} (`avg` is for sizing a count workload, without --limit)"
                )));
            }
            match (factor("limit"), limit) {
                (Some(Some(k)), Some(l)) => Ok(k * l as f64),
                (Some(_), None) => Err(expected("a number (`limit` needs --limit L)".into())),
                _ => Err(expected(what)),
            }
        }
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
