//! Expectations: the thresholds a scenario declares in `expect`
//! (`">= 70"`, `"~ 100 ± 5"`, a bare value for equality), checked on the
//! new report.

use super::criteria::Spec;
use super::error::RuleError;
use super::findings::{show, Finding, Verdict};
use super::path::Pattern;
use super::rules::round_to_noise;
use super::values::{num_pair, values_equal};
use serde_json::Value;

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Op {
    Ge,
    Le,
    Gt,
    Lt,
    Eq,
    Ne,
}

/// A threshold condition.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Cond {
    Cmp(Op, Value),
    Approx { target: f64, tol: f64, rel: bool },
}

pub(super) fn parse_cond(v: &Value) -> std::result::Result<Cond, RuleError> {
    let bad = |s: &str| RuleError::Condition {
        text: s.to_string(),
    };
    let s = match v {
        Value::String(s) => s.trim(),
        Value::Number(_) | Value::Bool(_) | Value::Null => return Ok(Cond::Cmp(Op::Eq, v.clone())),
        _ => return Err(bad(&v.to_string())),
    };
    if let Some(rest) = s.strip_prefix('~') {
        let (t, tol) = rest
            .split_once('±')
            .or_else(|| rest.split_once("+-"))
            .ok_or_else(|| bad(s))?;
        let target: f64 = t.trim().parse().map_err(|_| bad(s))?;
        let tol = tol.trim();
        let (tol, rel) = match tol.strip_suffix('%') {
            Some(p) => (p.trim().parse::<f64>().map_err(|_| bad(s))? / 100.0, true),
            None => (tol.parse::<f64>().map_err(|_| bad(s))?, false),
        };
        if !(target.is_finite() && tol.is_finite() && tol >= 0.0) {
            return Err(bad(s));
        }
        return Ok(Cond::Approx { target, tol, rel });
    }
    let ops = [
        (">=", Op::Ge),
        ("<=", Op::Le),
        ("==", Op::Eq),
        ("!=", Op::Ne),
        (">", Op::Gt),
        ("<", Op::Lt),
    ];
    for (txt, op) in ops {
        if let Some(rest) = s.strip_prefix(txt) {
            let rest = rest.trim();
            let operand = match serde_json::from_str::<Value>(rest) {
                Ok(n @ Value::Number(_)) => n,
                Ok(other @ (Value::Bool(_) | Value::Null | Value::String(_)))
                    if matches!(op, Op::Eq | Op::Ne) =>
                {
                    other
                }
                _ if matches!(op, Op::Eq | Op::Ne) && !rest.is_empty() => {
                    Value::String(rest.to_string())
                }
                _ => return Err(bad(s)),
            };
            return Ok(Cond::Cmp(op, operand));
        }
    }
    Err(bad(s))
}

impl Cond {
    pub(super) fn holds(&self, v: &Value) -> bool {
        match self {
            Cond::Approx { target, tol, rel } => match v.as_f64() {
                Some(x) => {
                    let allowed = if *rel { tol * target.abs() } else { *tol };
                    (x - target).abs() <= allowed
                }
                None => false,
            },
            Cond::Cmp(op, operand) => match op {
                Op::Eq => values_equal(v, operand),
                Op::Ne => !values_equal(v, operand),
                _ => match num_pair(v, operand) {
                    Some((x, y)) => match op {
                        Op::Ge => x >= y,
                        Op::Le => x <= y,
                        Op::Gt => x > y,
                        Op::Lt => x < y,
                        _ => false,
                    },
                    None => false,
                },
            },
        }
    }
}

/// One `expect` entry.
#[derive(Debug, Clone)]
pub struct Expectation {
    pub(super) pattern: Pattern,
    pub(super) cond: Cond,
    /// The condition as written.
    pub text: String,
}

/// Evaluates the expectations on `now` (showing the baseline value beside).
pub fn evaluate(now: &Value, baseline: Option<&Value>, spec: &Spec) -> Vec<Finding> {
    let mut out = Vec::new();
    for e in &spec.expectations {
        let hits = e.pattern.select(now);
        if hits.is_empty() {
            out.push(Finding {
                path: e.pattern.to_string(),
                baseline: String::new(),
                now: "(no such value)".into(),
                rule: format!("expect {}", e.text),
                verdict: Verdict::Fail,
            });
        }
        for (path, v) in hits {
            let base = baseline
                .and_then(|b| Pattern::parse(&path).ok().map(|p| p.select(b)))
                .and_then(|h| (h.len() == 1).then(|| shown(h[0].1)))
                .unwrap_or_default();
            out.push(Finding {
                path,
                baseline: base,
                now: shown(v),
                rule: format!("expect {}", e.text),
                verdict: if e.cond.holds(v) {
                    Verdict::Holds
                } else {
                    Verdict::Fail
                },
            });
        }
    }
    out
}

/// A value as shown: floats to 6 significant digits, others as they are.
fn shown(v: &Value) -> String {
    match v.as_f64() {
        Some(x) if !(v.is_i64() || v.is_u64()) => round_to_noise(x, None),
        _ => show(v),
    }
}
