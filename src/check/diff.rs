//! The baseline diff: a new report compared with its committed baseline
//! value by value, within the default or the scenario's tolerances.

use super::criteria::Spec;
use super::error::RuleError;
use super::findings::{show, Finding, Verdict};
use super::path::{array_key, elem_label, elem_step, path_text, Step};
use super::rules::{direction, round_to_noise, welch, Direction, Dist, ALPHA};
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

pub(super) fn parse_tol(v: &Value) -> std::result::Result<Tol, RuleError> {
    let bad = || RuleError::Tolerance {
        value: v.to_string(),
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

/// Compares `now` with `baseline` value by value, both made with the same
/// seed: every single-run value is compared.
pub fn compare(baseline: &Value, now: &Value, spec: &Spec) -> Vec<Finding> {
    compare_reseeded(baseline, now, spec, false)
}

/// [`compare`], where `reseeded` says `now` was made with a seed other than
/// the baseline's (`--seed`, or the scenario file's `seed` edited since the
/// baseline was written): single-run values are then not comparable, values
/// with a run-to-run distribution are compared with Welch's test. Decided
/// by the caller ([`mod@crate::check::run`] refuses a baseline whose `seed` is
/// not an integer rather than guess).
pub fn compare_reseeded(
    baseline: &Value,
    now: &Value,
    spec: &Spec,
    reseeded: bool,
) -> Vec<Finding> {
    let runs = |v: &Value| v.get("runs").and_then(Value::as_f64);
    // A sizing's numbers are where its search went, and the search's path
    // (the shapes tried, their seeds) follows the seed: under another seed
    // none of them is a repeat of the baseline's measurement. Its claim
    // (the pick meets the targets on a share of fresh seeds) is checked by
    // its own hold-out, and its expectations still hold or fail.
    let search = reseeded && baseline.get("kind").and_then(Value::as_str) == Some("size");
    let ctx = Ctx {
        spec,
        reshuffled: reseeded,
        runs: if search {
            (None, None)
        } else {
            (runs(baseline), runs(now))
        },
        search,
    };
    let mut out = Vec::new();
    let mut path = Vec::new();
    walk(
        Some(baseline),
        Some(now),
        &mut path,
        &ctx,
        false,
        None,
        &mut out,
    );
    out
}

/// What every comparison of one report needs.
struct Ctx<'a> {
    spec: &'a Spec,
    /// `now` was made with another seed than the baseline: single-run
    /// values are not comparable.
    reshuffled: bool,
    /// The report's `runs` (baseline, now): the n of `std` siblings.
    runs: (Option<f64>, Option<f64>),
    /// A `size` report under another seed: per-seed arrays are not
    /// distributions of one measurement either.
    search: bool,
}

fn tolerances_for(path: &[Step], spec: &Spec) -> Vec<Tol> {
    spec.tolerances
        .iter()
        .filter(|(p, _)| p.matches(path, true))
        .map(|(_, t)| *t)
        .collect()
}

/// The object keys along a path (for the direction table).
fn keys_of(path: &[Step]) -> Vec<&str> {
    path.iter()
        .filter_map(|s| match s {
            Step::Key(k) => Some(k.as_str()),
            Step::Elem { .. } => None,
        })
        .collect()
}

/// Whether the configuration fields directly in two objects differ.
fn config_differs(
    b: &serde_json::Map<String, Value>,
    n: &serde_json::Map<String, Value>,
    path: &[Step],
) -> bool {
    let mut keys: Vec<&str> = keys_of(path);
    b.iter().any(|(k, bv)| {
        keys.push(k);
        let cfg = direction(&keys) == Direction::Config || k == "config";
        keys.pop();
        cfg && n.get(k).is_some_and(|nv| nv != bv)
    })
}

/// The run-to-run distributions of two `std`-carrying objects' field `k`.
fn std_dists(
    b: &serde_json::Map<String, Value>,
    n: &serde_json::Map<String, Value>,
    k: &str,
    ctx: &Ctx<'_>,
) -> Option<(Dist, Dist)> {
    let (rb, rn) = ctx.runs;
    let d = |m: &serde_json::Map<String, Value>, runs: Option<f64>| {
        Some(Dist {
            mean: m.get(k)?.as_f64()?,
            std: m.get("std")?.get(k)?.as_f64()?,
            n: runs.filter(|r| *r >= 2.0)?,
        })
    };
    Some((d(b, rb)?, d(n, rn)?))
}

/// Numeric leaves of a per-run element, as (relative path, value).
fn numeric_leaves(v: &Value, prefix: &str, out: &mut Vec<(String, f64)>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let p = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                numeric_leaves(x, &p, out);
            }
        }
        Value::Number(n) => {
            if let Some(x) = n.as_f64() {
                out.push((prefix.to_string(), x));
            }
        }
        _ => {}
    }
}

/// Per-run samples of every numeric leaf of a `runs` array of objects.
fn run_samples(a: &[Value]) -> Option<Vec<(String, Vec<f64>)>> {
    if a.len() < 2 || !a.iter().all(Value::is_object) {
        return None;
    }
    let mut first = Vec::new();
    numeric_leaves(&a[0], "", &mut first);
    let mut out: Vec<(String, Vec<f64>)> = first.into_iter().map(|(p, x)| (p, vec![x])).collect();
    for e in &a[1..] {
        let mut l = Vec::new();
        numeric_leaves(e, "", &mut l);
        for (p, xs) in &mut out {
            xs.push(l.iter().find(|(q, _)| q == p)?.1);
        }
    }
    Some(out)
}

#[allow(clippy::too_many_arguments)]
fn walk(
    base: Option<&Value>,
    now: Option<&Value>,
    path: &mut Vec<Step>,
    ctx: &Ctx<'_>,
    cfg_changed: bool,
    dists: Option<(Dist, Dist)>,
    out: &mut Vec<Finding>,
) {
    let tols = tolerances_for(path, ctx.spec);
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
            let cfg_changed = cfg_changed || config_differs(b, n, path);
            let has_std = b.get("std").is_some_and(Value::is_object)
                && n.get("std").is_some_and(Value::is_object);
            let keys = b.keys().chain(n.keys().filter(|k| !b.contains_key(*k)));
            for k in keys {
                if top && IGNORED_FIELDS.contains(&k.as_str()) {
                    continue;
                }
                if k == "std" && has_std {
                    path.push(Step::Key(k.clone()));
                    spread(b.get(k), n.get(k), path, out);
                    path.pop();
                    continue;
                }
                if k == "runs"
                    && let (Some(Value::Array(rb)), Some(Value::Array(rn))) = (b.get(k), n.get(k))
                    && let (Some(sb), Some(sn)) = (run_samples(rb), run_samples(rn))
                {
                    path.push(Step::Key(k.clone()));
                    per_run(&sb, &sn, path, ctx, out);
                    path.pop();
                    continue;
                }
                let d = if has_std {
                    std_dists(b, n, k, ctx)
                } else {
                    None
                };
                path.push(Step::Key(k.clone()));
                walk(b.get(k), n.get(k), path, ctx, cfg_changed, d, out);
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
                    let mut unmatched_b = Vec::new();
                    for (i, bv) in b.iter().enumerate() {
                        let l = label(bv);
                        match n.iter().find(|v| label(v) == l) {
                            Some(nv) => {
                                path.push(elem_step(i, bv, Some(&keys)));
                                walk(Some(bv), Some(nv), path, ctx, cfg_changed, None, out);
                                path.pop();
                            }
                            None => unmatched_b.push(i),
                        }
                    }
                    let unmatched_n: Vec<usize> = (0..n.len())
                        .filter(|i| {
                            let l = label(&n[*i]);
                            !b.iter().any(|v| label(v) == l)
                        })
                        .collect();
                    if unmatched_b.len() == unmatched_n.len() {
                        // Elements whose key changed (a shape change): paired
                        // in order and compared as a configuration change.
                        for (&i, &j) in unmatched_b.iter().zip(&unmatched_n) {
                            path.push(elem_step(i, &b[i], Some(&keys)));
                            walk(Some(&b[i]), Some(&n[j]), path, ctx, true, None, out);
                            path.pop();
                        }
                    } else {
                        for &i in &unmatched_b {
                            path.push(elem_step(i, &b[i], Some(&keys)));
                            walk(Some(&b[i]), None, path, ctx, cfg_changed, None, out);
                            path.pop();
                        }
                        for &j in &unmatched_n {
                            path.push(elem_step(j, &n[j], Some(&keys)));
                            walk(None, Some(&n[j]), path, ctx, cfg_changed, None, out);
                            path.pop();
                        }
                    }
                }
                None => {
                    for i in 0..b.len().max(n.len()) {
                        let (bv, nv) = (b.get(i), n.get(i));
                        let step_src = bv.or(nv).unwrap_or(&Value::Null);
                        path.push(elem_step(i, step_src, None));
                        walk(bv, nv, path, ctx, cfg_changed, None, out);
                        path.pop();
                    }
                }
            }
        }
        (b, n) => out.push(leaf(b, n, path, &tols, ctx, cfg_changed, dists)),
    }
}

/// The `std` of a row: the spread the test uses, shown, never failing.
fn spread(base: Option<&Value>, now: Option<&Value>, path: &mut Vec<Step>, out: &mut Vec<Finding>) {
    let (Some(Value::Object(b)), Some(Value::Object(n))) = (base, now) else {
        return;
    };
    for (k, bv) in b {
        let nv = n.get(k);
        path.push(Step::Key(k.clone()));
        out.push(Finding {
            path: path_text(path),
            baseline: num_text(bv, None),
            now: nv.map(|v| num_text(v, None)).unwrap_or_default(),
            rule: "run-to-run spread (used by the test, not compared)".into(),
            verdict: if nv.is_some_and(|v| values_equal(bv, v)) {
                Verdict::Equal
            } else {
                Verdict::WithinNoise
            },
        });
        path.pop();
    }
}

/// Per-run samples compared as distributions, one finding per field.
fn per_run(
    sb: &[(String, Vec<f64>)],
    sn: &[(String, Vec<f64>)],
    path: &[Step],
    ctx: &Ctx<'_>,
    out: &mut Vec<Finding>,
) {
    if ctx.search {
        return;
    }
    for (field, xb) in sb {
        let Some((_, xn)) = sn.iter().find(|(f, _)| f == field) else {
            continue;
        };
        let (Some(db), Some(dn)) = (Dist::of(xb), Dist::of(xn)) else {
            continue;
        };
        let leaf_key = field.rsplit('.').next().unwrap_or(field);
        let mut keys = keys_of(path);
        keys.push(leaf_key);
        let dir = direction(&keys);
        let p = format!("{}[*].{field}", path_text(path));
        out.push(stat_finding(p, &db, &dn, dir, xb == xn, ctx));
    }
}

fn stat_finding(
    path: String,
    db: &Dist,
    dn: &Dist,
    dir: Direction,
    equal: bool,
    ctx: &Ctx<'_>,
) -> Finding {
    let _ = ctx;
    let show_d = |d: &Dist| {
        let se = d.se().max(dn.se()).max(db.se());
        format!(
            "{} ±{}",
            round_to_noise(d.mean, Some(se)),
            round_to_noise(d.std, Some(se))
        )
    };
    let mut f = Finding {
        path,
        baseline: show_d(db),
        now: show_d(dn),
        rule: String::new(),
        verdict: Verdict::Equal,
    };
    let t = welch(db, dn);
    let n = format!("n={}/{}", db.n, dn.n);
    if equal || db.mean == dn.mean {
        f.rule = format!("welch, {n}");
        return f;
    }
    let delta = if db.mean != 0.0 {
        format!(", {:+.1}%", (dn.mean - db.mean) / db.mean.abs() * 100.0)
    } else {
        String::new()
    };
    f.rule = format!(
        "welch p={} {} {ALPHA}{delta}, {n}, {}",
        if t.p < 0.01 {
            format!("{:.1e}", t.p)
        } else {
            format!("{:.2}", t.p)
        },
        if t.p < ALPHA { "<" } else { ">=" },
        dir.label()
    );
    f.verdict = if !t.significant {
        Verdict::WithinNoise
    } else {
        match dir.better(db.mean, dn.mean) {
            Some(true) => Verdict::Improved,
            Some(false) => Verdict::Regressed,
            None if matches!(dir, Direction::Config | Direction::Describe) => Verdict::Changed,
            None => Verdict::Regressed,
        }
    };
    f
}

/// A value as shown: numbers rounded to what their noise allows.
fn num_text(v: &Value, se: Option<f64>) -> String {
    match v {
        Value::Number(n) if int_of(v).is_none() => match n.as_f64() {
            Some(x) => round_to_noise(x, se),
            None => show(v),
        },
        other => show(other),
    }
}

fn leaf(
    base: Option<&Value>,
    now: Option<&Value>,
    path: &[Step],
    tols: &[Tol],
    ctx: &Ctx<'_>,
    cfg_changed: bool,
    dists: Option<(Dist, Dist)>,
) -> Finding {
    let keys = keys_of(path);
    let dir = direction(&keys);
    if let (Some((db, dn)), Some(b), Some(n)) = (dists, base, now)
        && tols.is_empty()
    {
        return stat_finding(path_text(path), &db, &dn, dir, values_equal(b, n), ctx);
    }
    let mut f = Finding {
        path: path_text(path),
        baseline: base.map(|v| num_text(v, None)).unwrap_or_default(),
        now: now.map(|v| num_text(v, None)).unwrap_or_default(),
        rule: String::new(),
        verdict: Verdict::Equal,
    };
    let (Some(b), Some(n)) = (base, now) else {
        if ctx.search {
            // Another seed sends a sizing's search through other shapes.
            f.verdict = Verdict::Changed;
            f.rule = "a search under another seed: not comparable".into();
            return f;
        }
        f.verdict = if base.is_some() {
            Verdict::Missing
        } else {
            Verdict::New
        };
        f.rule = "exact".into();
        return f;
    };
    let exact_rule =
        if int_of(b).is_some() && int_of(n).is_some() || !b.is_number() || !n.is_number() {
            "exact".to_string()
        } else {
            Tol::Rel(DEFAULT_REL_TOL).to_string()
        };
    f.rule = if tols.is_empty() {
        exact_rule
    } else {
        tols.iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(" | ")
    };
    if values_equal(b, n) && b.is_number() == n.is_number() {
        return f;
    }
    let pair = num_pair(b, n);
    if let Some((x, y)) = pair {
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
        if ok {
            f.verdict = Verdict::Within;
            return f;
        }
    }
    let (rule, verdict) = if dir == Direction::Config {
        ("configuration".to_string(), Verdict::Changed)
    } else if dir == Direction::Describe {
        (
            "describes the workload (follows the seed), not accuracy".to_string(),
            Verdict::Changed,
        )
    } else if ctx.reshuffled {
        (
            "single run and --seed changed the seed: not comparable".to_string(),
            Verdict::Changed,
        )
    } else if dir == Direction::Cost && cfg_changed {
        ("follows the configuration".to_string(), Verdict::Changed)
    } else {
        match pair.and_then(|(x, y)| dir.better(x, y)) {
            Some(true) => (format!("{}, {}", f.rule, dir.label()), Verdict::Improved),
            Some(false) => (format!("{}, {}", f.rule, dir.label()), Verdict::Regressed),
            None => (f.rule.clone(), Verdict::Regressed),
        }
    };
    f.rule = rule;
    f.verdict = verdict;
    f
}
