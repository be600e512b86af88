//! The baseline diff: a new report compared with its committed baseline
//! value by value, within the default or the scenario's tolerances.

use super::findings::{show, Finding, Verdict};
use super::path::{array_key, elem_label, elem_step, path_text, Step};
use super::spec::Spec;
use super::values::{int_of, num_pair, values_equal};
use super::{DEFAULT_REL_TOL, IGNORED_FIELDS};
use serde_json::Value;
use std::fmt;

/// How far a value may move from its baseline.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Tol {
    /// Relative to the larger magnitude.
    Rel(f64),
    /// Absolute.
    Abs(f64),
    /// Not compared.
    Ignore,
}

impl fmt::Display for Tol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Tol::Rel(r) if *r != 0.0 && r.abs() < 1e-4 => write!(f, "rel {r:e}"),
            Tol::Rel(r) => write!(f, "rel {r}"),
            Tol::Abs(a) => write!(f, "±{a}"),
            Tol::Ignore => f.write_str("ignored"),
        }
    }
}

pub(super) fn parse_tol(v: &Value) -> std::result::Result<Tol, String> {
    let bad = || {
        format!(
            "value {v}: expected a relative tolerance (0.05 or \"5%\"), an absolute one (\"±3\" or \"+-3\") or \"ignore\""
        )
    };
    let nonneg = |x: f64| {
        if x.is_finite() && x >= 0.0 {
            Ok(x)
        } else {
            Err(bad())
        }
    };
    match v {
        Value::Number(n) => Ok(Tol::Rel(nonneg(n.as_f64().ok_or_else(bad)?)?)),
        Value::String(s) => {
            let s = s.trim();
            if s == "ignore" {
                Ok(Tol::Ignore)
            } else if let Some(p) = s.strip_suffix('%') {
                let x: f64 = p.trim().parse().map_err(|_| bad())?;
                Ok(Tol::Rel(nonneg(x / 100.0)?))
            } else if let Some(a) = s.strip_prefix('±').or_else(|| s.strip_prefix("+-")) {
                let x: f64 = a.trim().parse().map_err(|_| bad())?;
                Ok(Tol::Abs(nonneg(x)?))
            } else {
                let x: f64 = s.parse().map_err(|_| bad())?;
                Ok(Tol::Rel(nonneg(x)?))
            }
        }
        _ => Err(bad()),
    }
}

/// Compares `now` with `baseline` value by value.
pub fn compare(baseline: &Value, now: &Value, spec: &Spec) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut path = Vec::new();
    walk(Some(baseline), Some(now), &mut path, spec, &mut out);
    out
}

fn tolerances_for(path: &[Step], spec: &Spec) -> Vec<Tol> {
    spec.tolerances
        .iter()
        .filter(|(p, _)| p.matches(path, true))
        .map(|(_, t)| *t)
        .collect()
}

fn walk(
    base: Option<&Value>,
    now: Option<&Value>,
    path: &mut Vec<Step>,
    spec: &Spec,
    out: &mut Vec<Finding>,
) {
    let tols = tolerances_for(path, spec);
    if tols.contains(&Tol::Ignore) {
        out.push(Finding {
            path: path_text(path),
            baseline: base.map(show).unwrap_or_default(),
            now: now.map(show).unwrap_or_default(),
            rule: "ignore".into(),
            verdict: Verdict::Ignored,
        });
        return;
    }
    match (base, now) {
        (Some(Value::Object(b)), Some(Value::Object(n))) => {
            let top = path.is_empty();
            let keys = b.keys().chain(n.keys().filter(|k| !b.contains_key(*k)));
            for k in keys {
                if top && IGNORED_FIELDS.contains(&k.as_str()) {
                    continue;
                }
                path.push(Step::Key(k.clone()));
                walk(b.get(k), n.get(k), path, spec, out);
                path.pop();
            }
        }
        (Some(Value::Array(b)), Some(Value::Array(n))) => {
            let keys = array_key(b).filter(|k| {
                // The new array must be keyed the same way, else use indexes.
                let labels: Option<Vec<String>> = n.iter().map(|v| elem_label(v, k)).collect();
                labels.is_some_and(|l| {
                    let set: std::collections::BTreeSet<&String> = l.iter().collect();
                    set.len() == l.len()
                })
            });
            match keys {
                Some(keys) => {
                    let label = |v: &Value| elem_label(v, &keys);
                    for (i, bv) in b.iter().enumerate() {
                        let l = label(bv);
                        let nv = n.iter().find(|v| label(v) == l);
                        path.push(elem_step(i, bv, Some(&keys)));
                        walk(Some(bv), nv, path, spec, out);
                        path.pop();
                    }
                    for (i, nv) in n.iter().enumerate() {
                        let l = label(nv);
                        if !b.iter().any(|v| label(v) == l) {
                            path.push(elem_step(i, nv, Some(&keys)));
                            walk(None, Some(nv), path, spec, out);
                            path.pop();
                        }
                    }
                }
                None => {
                    for i in 0..b.len().max(n.len()) {
                        let (bv, nv) = (b.get(i), n.get(i));
                        let step_src = bv.or(nv).unwrap_or(&Value::Null);
                        path.push(elem_step(i, step_src, None));
                        walk(bv, nv, path, spec, out);
                        path.pop();
                    }
                }
            }
        }
        (b, n) => out.push(leaf(b, n, path, &tols)),
    }
}

fn leaf(base: Option<&Value>, now: Option<&Value>, path: &[Step], tols: &[Tol]) -> Finding {
    let rule_default = |b: &Value, n: &Value| {
        if int_of(b).is_some() && int_of(n).is_some() || !b.is_number() || !n.is_number() {
            "exact".to_string()
        } else {
            Tol::Rel(DEFAULT_REL_TOL).to_string()
        }
    };
    let mut f = Finding {
        path: path_text(path),
        baseline: base.map(show).unwrap_or_default(),
        now: now.map(show).unwrap_or_default(),
        rule: String::new(),
        verdict: Verdict::Equal,
    };
    let (Some(b), Some(n)) = (base, now) else {
        f.verdict = if base.is_some() {
            Verdict::Missing
        } else {
            Verdict::New
        };
        return f;
    };
    f.rule = if tols.is_empty() {
        rule_default(b, n)
    } else {
        tols.iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(" | ")
    };
    if values_equal(b, n) && b.is_number() == n.is_number() {
        return f;
    }
    let Some((x, y)) = num_pair(b, n) else {
        f.verdict = Verdict::Fail;
        return f;
    };
    let diff = (x - y).abs();
    let within = |t: &Tol| match t {
        Tol::Rel(r) => diff <= r * x.abs().max(y.abs()),
        Tol::Abs(a) => diff <= *a,
        Tol::Ignore => true,
    };
    let ok = if tols.is_empty() {
        // Integers must be equal; floats get the default relative tolerance.
        !(int_of(b).is_some() && int_of(n).is_some()) && within(&Tol::Rel(DEFAULT_REL_TOL))
    } else {
        tols.iter().any(within)
    };
    f.verdict = if ok { Verdict::Within } else { Verdict::Fail };
    f
}
