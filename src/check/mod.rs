//! Accuracy guard: compare a freshly generated `report.json` with its
//! committed baseline and with the thresholds a scenario declares.
//!
//! The comparison walks any JSON shape generically:
//!
//! * objects by key (top-level `ratelab_version` and `description` are ignored);
//! * arrays of objects by a **key**: the first non-float scalar
//!   fields (strings, integers, booleans; fields that vary across elements)
//!   that together tell the baseline's elements apart, e.g. `rows[hashes=4,slots=8192]`.
//!   Arrays without such a key (scalars, or elements that do not differ) are
//!   compared by index, `values[1]`;
//! * leaves: integers, strings, booleans and null must be equal; floats may
//!   differ by a relative 1e-9 (reports are deterministic, so this only
//!   absorbs printing). A scenario may loosen this per field (`tolerance`).
//!
//! Paths in `expect` and `tolerance` use the same syntax as the printed
//! paths, plus wildcards:
//!
//! ```text
//! rows[hashes=4,slots=8192].exact_pct   element(s) whose fields equal these values
//! rows[2].mean                          element by index
//! rows[*].max   rows.*.max              any element (or, for `*`, any object key)
//! ```
//!
//! A selector needs not name every key field: `rows[hashes=4]` selects every
//! element with `hashes` 4. A tolerance pattern that matches a prefix of a path
//! applies to everything below it (`"rows[hashes=1]": "10%"`).
//!
//! Conditions (`expect` values): `">= 70"`, `"<= 250"`, `"< 1"`, `"> 0"`,
//! `"== 0"`, `"!= 0"`, `"== some text"`, `"~ 100 ± 5"` or `"~100+-5%"`
//! (absolute or relative band), or a bare JSON number/boolean/null for
//! equality. Every value the path selects must satisfy it, and it must select
//! at least one.
//!
//! Tolerances (`tolerance` values): a number is relative (`0.05` = 5%),
//! `"5%"` likewise, `"±3"` or `"+-3"` absolute, `"ignore"` skips the field. A
//! value passes if it is within any tolerance whose pattern matches it.

use crate::error::Result;
use crate::scenario::Scenario;
use serde_json::{Map, Value};
use std::fmt;

/// Relative tolerance for floats when the scenario declares none.
pub const DEFAULT_REL_TOL: f64 = 1e-9;

/// Top-level report fields never compared.
pub const IGNORED_FIELDS: [&str; 2] = ["ratelab_version", "description"];

// ---------------------------------------------------------------- paths

/// One step of a pattern.
#[derive(Debug, Clone, PartialEq)]
enum Unit {
    /// An object key.
    Key(String),
    /// `*`: any key or any element.
    Any,
    /// `[*]`: any element.
    AnyElem,
    /// `[N]`.
    Index(usize),
    /// `[k=v,...]`: elements whose fields equal these.
    Select(Vec<(String, String)>),
}

/// A parsed path pattern.
#[derive(Debug, Clone, PartialEq)]
pub struct Pattern {
    units: Vec<Unit>,
    text: String,
}

impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl Pattern {
    /// Parses `a.b[k=v,k2=v2].c[3].*` (see the module docs).
    pub fn parse(text: &str) -> std::result::Result<Self, String> {
        let mut units = Vec::new();
        let mut chars = text.char_indices();
        let mut name = String::new();
        let flush = |name: &mut String, units: &mut Vec<Unit>| {
            if !name.is_empty() {
                let n = std::mem::take(name);
                units.push(if n == "*" { Unit::Any } else { Unit::Key(n) });
            }
        };
        let mut after_bracket = false;
        while let Some((i, c)) = chars.next() {
            match c {
                '.' => {
                    if name.is_empty() && !after_bracket {
                        return Err(format!("empty segment at character {}", i + 1));
                    }
                    flush(&mut name, &mut units);
                    after_bracket = false;
                }
                '[' => {
                    flush(&mut name, &mut units);
                    let mut inner = String::new();
                    let mut closed = false;
                    for (_, c) in chars.by_ref() {
                        if c == ']' {
                            closed = true;
                            break;
                        }
                        inner.push(c);
                    }
                    if !closed {
                        return Err(format!("'[' at character {} is never closed", i + 1));
                    }
                    units.push(parse_bracket(inner.trim())?);
                    after_bracket = true;
                }
                ']' => return Err(format!("unexpected ']' at character {}", i + 1)),
                c => {
                    if after_bracket {
                        return Err(format!(
                            "expected '.' or '[' after ']' at character {}",
                            i + 1
                        ));
                    }
                    name.push(c);
                }
            }
        }
        if text.ends_with('.') {
            return Err("ends with '.'".into());
        }
        flush(&mut name, &mut units);
        if units.is_empty() {
            return Err("empty path".into());
        }
        Ok(Self {
            units,
            text: text.to_string(),
        })
    }

    /// Whether the pattern matches `path` whole (`prefix`: or a prefix of it).
    fn matches(&self, path: &[Step], prefix: bool) -> bool {
        if self.units.len() > path.len() || (!prefix && self.units.len() != path.len()) {
            return false;
        }
        self.units.iter().zip(path).all(|(u, s)| unit_matches(u, s))
    }

    /// Every (path, value) of `root` the pattern selects.
    pub fn select<'a>(&self, root: &'a Value) -> Vec<(String, &'a Value)> {
        let mut out = Vec::new();
        let mut path = Vec::new();
        select_rec(&self.units, root, &mut path, &mut out);
        out
    }
}

fn parse_bracket(inner: &str) -> std::result::Result<Unit, String> {
    if inner == "*" {
        return Ok(Unit::AnyElem);
    }
    if let Ok(i) = inner.parse::<usize>() {
        return Ok(Unit::Index(i));
    }
    let mut pairs = Vec::new();
    for part in inner.split(',') {
        let Some((k, v)) = part.split_once('=') else {
            return Err(format!("[{inner}]: expected [N], [*] or [field=value,...]"));
        };
        let (k, v) = (k.trim(), v.trim());
        if k.is_empty() {
            return Err(format!("[{inner}]: empty field name"));
        }
        pairs.push((k.to_string(), v.to_string()));
    }
    Ok(Unit::Select(pairs))
}

/// One step of a concrete path.
#[derive(Debug, Clone)]
enum Step {
    Key(String),
    Elem {
        index: usize,
        /// The key label (`hashes=4,slots=8192`), if the array is keyed.
        label: Option<String>,
        /// The element's scalar fields, for selectors.
        scalars: Vec<(String, String)>,
    },
}

fn unit_matches(u: &Unit, s: &Step) -> bool {
    match (u, s) {
        (Unit::Any, _) => true,
        (Unit::Key(k), Step::Key(n)) => k == n,
        (Unit::AnyElem, Step::Elem { .. }) => true,
        (Unit::Index(i), Step::Elem { index, .. }) => i == index,
        (Unit::Select(pairs), Step::Elem { scalars, .. }) => pairs
            .iter()
            .all(|(k, v)| scalars.iter().any(|(sk, sv)| sk == k && sv == v)),
        _ => false,
    }
}

fn select_rec<'a>(
    units: &[Unit],
    v: &'a Value,
    path: &mut Vec<Step>,
    out: &mut Vec<(String, &'a Value)>,
) {
    let Some((u, rest)) = units.split_first() else {
        out.push((path_text(path), v));
        return;
    };
    match v {
        Value::Object(m) => {
            for (k, child) in m {
                let step = Step::Key(k.clone());
                if unit_matches(u, &step) {
                    path.push(step);
                    select_rec(rest, child, path, out);
                    path.pop();
                }
            }
        }
        Value::Array(a) => {
            let keys = array_key(a);
            for (i, child) in a.iter().enumerate() {
                let step = elem_step(i, child, keys.as_deref());
                if unit_matches(u, &step) {
                    path.push(step);
                    select_rec(rest, child, path, out);
                    path.pop();
                }
            }
        }
        _ => {}
    }
}

fn path_text(path: &[Step]) -> String {
    let mut s = String::new();
    for step in path {
        match step {
            Step::Key(k) => {
                if !s.is_empty() {
                    s.push('.');
                }
                s.push_str(k);
            }
            Step::Elem { index, label, .. } => match label {
                Some(l) => s.push_str(&format!("[{l}]")),
                None => s.push_str(&format!("[{index}]")),
            },
        }
    }
    s
}

/// A selector-friendly text of a scalar; None for floats, arrays and objects.
fn key_scalar(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) if n.is_i64() || n.is_u64() => Some(n.to_string()),
        _ => None,
    }
}

/// Every scalar field of an element, as text, for selectors.
fn scalars_of(v: &Value) -> Vec<(String, String)> {
    match v {
        Value::Object(m) => m
            .iter()
            .filter_map(|(k, v)| match v {
                Value::Object(_) | Value::Array(_) => None,
                Value::String(s) => Some((k.clone(), s.clone())),
                other => Some((k.clone(), other.to_string())),
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// The key fields of an array of objects: the first varying non-float scalar
/// fields (in field order) that together tell every element apart. None:
/// compare by index.
fn array_key(a: &[Value]) -> Option<Vec<String>> {
    if a.len() < 2 {
        return None;
    }
    let objs: Vec<&Map<String, Value>> = a.iter().map(Value::as_object).collect::<Option<_>>()?;
    let first = objs.first()?;
    let candidates: Vec<&String> = first
        .keys()
        .filter(|k| {
            let vals: Option<Vec<String>> = objs
                .iter()
                .map(|o| o.get(*k).and_then(key_scalar))
                .collect();
            vals.is_some_and(|v| v.iter().any(|x| x != &v[0]))
        })
        .collect();
    let unique = |fields: &[&String]| {
        let mut seen = std::collections::BTreeSet::new();
        objs.iter().all(|o| {
            let t: Vec<Option<String>> = fields
                .iter()
                .map(|f| o.get(*f).and_then(key_scalar))
                .collect();
            seen.insert(t)
        })
    };
    let mut chosen: Vec<&String> = Vec::new();
    for c in candidates {
        chosen.push(c);
        if unique(&chosen) {
            return Some(chosen.into_iter().cloned().collect());
        }
    }
    None
}

fn elem_label(v: &Value, keys: &[String]) -> Option<String> {
    let o = v.as_object()?;
    let parts: Option<Vec<String>> = keys
        .iter()
        .map(|k| o.get(k).and_then(key_scalar).map(|s| format!("{k}={s}")))
        .collect();
    parts.map(|p| p.join(","))
}

fn elem_step(index: usize, v: &Value, keys: Option<&[String]>) -> Step {
    Step::Elem {
        index,
        label: keys.and_then(|k| elem_label(v, k)),
        scalars: scalars_of(v),
    }
}

// ---------------------------------------------------------------- spec

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

fn parse_tol(v: &Value) -> std::result::Result<Tol, String> {
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

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Ge,
    Le,
    Gt,
    Lt,
    Eq,
    Ne,
}

/// A threshold condition.
#[derive(Debug, Clone, PartialEq)]
enum Cond {
    Cmp(Op, Value),
    Approx { target: f64, tol: f64, rel: bool },
}

fn parse_cond(v: &Value) -> std::result::Result<Cond, String> {
    let bad = |s: &str| {
        format!(
            "condition {s:?}: expected \">= N\", \"<= N\", \"> N\", \"< N\", \"== X\", \"!= X\", \"~ N ± T\" (T may end in %) or a bare number"
        )
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

fn num_pair(a: &Value, b: &Value) -> Option<(f64, f64)> {
    Some((a.as_f64()?, b.as_f64()?))
}

fn int_of(v: &Value) -> Option<i128> {
    v.as_i64()
        .map(i128::from)
        .or_else(|| v.as_u64().map(i128::from))
}

/// Exact equality of JSON scalars (integers compared exactly, other numbers as f64).
fn values_equal(a: &Value, b: &Value) -> bool {
    match (int_of(a), int_of(b)) {
        (Some(x), Some(y)) => x == y,
        _ => match num_pair(a, b) {
            Some((x, y)) => x == y,
            None => a == b,
        },
    }
}

impl Cond {
    fn holds(&self, v: &Value) -> bool {
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
    pattern: Pattern,
    cond: Cond,
    /// The condition as written.
    pub text: String,
}

/// A scenario's `expect` and `tolerance`.
#[derive(Debug, Clone, Default)]
pub struct Spec {
    /// Thresholds.
    pub expectations: Vec<Expectation>,
    /// Baseline tolerances (pattern, tolerance).
    pub tolerances: Vec<(Pattern, Tol)>,
}

impl Spec {
    /// Reads `expect` and `tolerance` of a scenario; errors name the field.
    pub fn from_scenario(s: &Scenario) -> Result<Self> {
        Self::parse(s.common.expect.as_ref(), s.common.tolerance.as_ref())
            .map_err(|(field, msg)| s.field_error(field, msg))
    }

    /// Parses raw `expect`/`tolerance` values; errors are (field, message).
    pub fn parse(
        expect: Option<&Value>,
        tolerance: Option<&Value>,
    ) -> std::result::Result<Self, (String, String)> {
        let mut spec = Spec::default();
        let obj = |v: Option<&Value>,
                   name: &str|
         -> std::result::Result<Map<String, Value>, (String, String)> {
            match v {
                None | Some(Value::Null) => Ok(Map::new()),
                Some(Value::Object(m)) => Ok(m.clone()),
                Some(other) => Err((
                    name.to_string(),
                    format!("value {other}: expected an object of \"path\": condition"),
                )),
            }
        };
        for (path, cond) in obj(expect, "expect")? {
            let field = format!("expect.{path:?}");
            let pattern =
                Pattern::parse(&path).map_err(|m| (field.clone(), format!("path: {m}")))?;
            let c = parse_cond(&cond).map_err(|m| (field.clone(), m))?;
            let text = match &cond {
                Value::String(s) => s.trim().to_string(),
                other => format!("== {other}"),
            };
            spec.expectations.push(Expectation {
                pattern,
                cond: c,
                text,
            });
        }
        for (path, tol) in obj(tolerance, "tolerance")? {
            let field = format!("tolerance.{path:?}");
            let pattern =
                Pattern::parse(&path).map_err(|m| (field.clone(), format!("path: {m}")))?;
            let t = parse_tol(&tol).map_err(|m| (field, m))?;
            spec.tolerances.push((pattern, t));
        }
        Ok(spec)
    }
}

// ---------------------------------------------------------------- compare

/// The outcome of one compared value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Identical to the baseline.
    Equal,
    /// Differs, within tolerance.
    Within,
    /// Not compared (tolerance "ignore").
    Ignored,
    /// An expectation that holds.
    Holds,
    /// Differs beyond tolerance, or an expectation that fails.
    Fail,
    /// In the baseline, not in the new report.
    Missing,
    /// In the new report, not in the baseline.
    New,
}

impl Verdict {
    /// Whether this counts as a regression.
    pub fn failed(self) -> bool {
        matches!(self, Verdict::Fail | Verdict::Missing | Verdict::New)
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Verdict::Equal => "ok",
            Verdict::Within => "ok (within)",
            Verdict::Ignored => "ignored",
            Verdict::Holds => "ok",
            Verdict::Fail => "FAIL",
            Verdict::Missing => "FAIL (missing now)",
            Verdict::New => "FAIL (not in baseline)",
        })
    }
}

/// One line of the diff table.
#[derive(Debug, Clone)]
pub struct Finding {
    /// Field path.
    pub path: String,
    /// Baseline value (empty when none).
    pub baseline: String,
    /// New value (empty when none).
    pub now: String,
    /// The tolerance or condition applied.
    pub rule: String,
    /// The outcome.
    pub verdict: Verdict,
}

/// Compares `now` with `baseline` value by value.
pub fn compare(baseline: &Value, now: &Value, spec: &Spec) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut path = Vec::new();
    walk(Some(baseline), Some(now), &mut path, spec, &mut out);
    out
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
                .and_then(|h| (h.len() == 1).then(|| show(h[0].1)))
                .unwrap_or_default();
            out.push(Finding {
                path,
                baseline: base,
                now: show(v),
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

/// A value as shown in the table (long values cut).
pub fn show(v: &Value) -> String {
    let s = match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    if s.chars().count() > 48 {
        let cut: String = s.chars().take(45).collect();
        format!("{cut}...")
    } else {
        s
    }
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

/// Fails with a clear message when `v` is not a ratelab report.
pub fn validate_report(v: &Value) -> std::result::Result<(), String> {
    match v.get("schema").and_then(Value::as_str) {
        Some(s) if s == crate::report::SCHEMA => Ok(()),
        Some(s) => Err(format!(
            "schema {s:?}: expected {:?}",
            crate::report::SCHEMA
        )),
        None => Err(format!(
            "no \"schema\" field: expected a ratelab report ({})",
            crate::report::SCHEMA
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn report() -> Value {
        json!({
            "schema": "ratelab.report.v1",
            "ratelab_version": "0.1.0",
            "description": "d",
            "rows": [
                {"variant": "count_min", "hashes": 4, "slots": 1024, "faults": 0, "mean": 210.3, "std": {"mean": 1.4}},
                {"variant": "count_min", "hashes": 4, "slots": 8192, "faults": 0, "mean": 4.7, "std": {"mean": 0.12}},
                {"variant": "count_min", "hashes": 8, "slots": 1024, "faults": 0, "mean": 152.9, "std": {"mean": 0.58}}
            ],
            "values": [9223372036854775807_i64, -9223372036854775808_i64]
        })
    }

    fn spec(expect: Value, tol: Value) -> Spec {
        Spec::parse(Some(&expect), Some(&tol)).unwrap()
    }

    fn failed(f: &[Finding]) -> Vec<String> {
        f.iter()
            .filter(|x| x.verdict.failed())
            .map(|x| x.path.clone())
            .collect()
    }

    #[test]
    fn arrays_are_keyed_by_the_fewest_varying_fields() {
        let r = report();
        let a = r["rows"].as_array().unwrap();
        assert_eq!(
            array_key(a),
            Some(vec!["hashes".to_string(), "slots".to_string()])
        );
        let sel = Pattern::parse("rows[hashes=4,slots=8192].mean")
            .unwrap()
            .select(&r);
        assert_eq!(sel.len(), 1);
        assert_eq!(sel[0].0, "rows[hashes=4,slots=8192].mean");
        assert_eq!(sel[0].1, &json!(4.7));
        assert_eq!(
            Pattern::parse("rows[hashes=4].mean")
                .unwrap()
                .select(&r)
                .len(),
            2
        );
        assert_eq!(
            Pattern::parse("rows.*.std.mean").unwrap().select(&r).len(),
            3
        );
        assert_eq!(Pattern::parse("rows[*].mean").unwrap().select(&r).len(), 3);
        assert_eq!(
            Pattern::parse("values[1]").unwrap().select(&r)[0].1,
            &json!(i64::MIN)
        );
    }

    #[test]
    fn bad_paths_and_conditions_are_rejected() {
        for bad in [
            "", "rows[", "rows]", "a..b", "rows[x]", "rows[=3]", "a.", "rows[1]x",
        ] {
            assert!(Pattern::parse(bad).is_err(), "{bad:?}");
        }
        for bad in [
            ">= lots",
            "about 3",
            "~3",
            "<",
            json!([1]).to_string().as_str(),
        ] {
            assert!(parse_cond(&json!(bad)).is_err(), "{bad:?}");
        }
        assert!(parse_tol(&json!("-5%")).is_err());
        assert!(parse_tol(&json!("wide")).is_err());
        assert_eq!(parse_tol(&json!("5%")), Ok(Tol::Rel(0.05)));
        assert_eq!(parse_tol(&json!("±3")), Ok(Tol::Abs(3.0)));
        assert_eq!(parse_tol(&json!(0.1)), Ok(Tol::Rel(0.1)));
    }

    #[test]
    fn conditions() {
        let holds = |c: &str, v: Value| parse_cond(&json!(c)).unwrap().holds(&v);
        assert!(holds(">= 70", json!(75.2)));
        assert!(!holds(">=70", json!(69.9)));
        assert!(holds("<= 250", json!(210)));
        assert!(!holds("< 250", json!(250)));
        assert!(holds("== -9223372036854775808", json!(i64::MIN)));
        assert!(!holds("== -9223372036854775807", json!(i64::MIN)));
        assert!(holds(
            "== attempt to add with overflow",
            json!("attempt to add with overflow")
        ));
        assert!(holds("~100±5", json!(104.9)));
        assert!(!holds("~ 100 +- 5%", json!(106)));
        assert!(holds("!= 0", json!(1)));
        assert!(parse_cond(&json!(0)).unwrap().holds(&json!(0)));
        assert!(!holds(">= 1", json!("text")));
    }

    #[test]
    fn identical_reports_pass_and_ignored_fields_may_differ() {
        let a = report();
        let mut b = report();
        b["ratelab_version"] = json!("9.9.9");
        b["description"] = json!("other");
        let f = compare(&a, &b, &Spec::default());
        assert!(failed(&f).is_empty(), "{f:?}");
        assert!(f.iter().all(|x| x.verdict == Verdict::Equal));
    }

    #[test]
    fn a_float_beyond_tolerance_fails_and_a_tolerance_loosens_it() {
        let a = report();
        let mut b = report();
        b["rows"][1]["mean"] = json!(4.8);
        let f = compare(&a, &b, &Spec::default());
        assert_eq!(failed(&f), ["rows[hashes=4,slots=8192].mean"]);
        let f = compare(&a, &b, &spec(json!({}), json!({"rows.*.mean": "5%"})));
        assert!(failed(&f).is_empty());
        let f = compare(
            &a,
            &b,
            &spec(json!({}), json!({"rows[hashes=4,slots=8192]": "±0.2"})),
        );
        assert!(failed(&f).is_empty());
        let f = compare(
            &a,
            &b,
            &spec(json!({}), json!({"rows[hashes=8].mean": "50%"})),
        );
        assert_eq!(failed(&f).len(), 1);
        // Last-bit float noise passes by default; integers must be exact.
        let mut c = report();
        c["rows"][0]["mean"] = json!(210.3 * (1.0 + 1e-12));
        c["rows"][0]["faults"] = json!(1);
        let f = compare(&a, &c, &Spec::default());
        assert_eq!(failed(&f), ["rows[hashes=4,slots=1024].faults"]);
    }

    #[test]
    fn changed_key_shows_missing_and_new_rows() {
        let a = report();
        let mut b = report();
        b["rows"][1]["slots"] = json!(4096);
        let f = compare(&a, &b, &Spec::default());
        let fails: Vec<(String, Verdict)> = f
            .iter()
            .filter(|x| x.verdict.failed())
            .map(|x| (x.path.clone(), x.verdict))
            .collect();
        assert!(fails.contains(&("rows[hashes=4,slots=8192]".to_string(), Verdict::Missing)));
        assert!(fails.contains(&("rows[hashes=4,slots=4096]".to_string(), Verdict::New)));
        // A type change fails too.
        let mut c = report();
        c["values"] = json!("none");
        assert_eq!(failed(&compare(&a, &c, &Spec::default())), ["values"]);
    }

    #[test]
    fn expectations_select_and_fail() {
        let r = report();
        let s = spec(
            json!({"rows[hashes=4,slots=8192].mean": "<= 5", "rows[*].faults": 0, "rows[hashes=99].mean": "< 1"}),
            json!({}),
        );
        let f = evaluate(&r, Some(&r), &s);
        assert_eq!(f.len(), 5);
        assert_eq!(failed(&f), ["rows[hashes=99].mean"]);
        assert_eq!(f[0].baseline, "4.7");
        let s = spec(json!({"rows[hashes=4].mean": "<= 5"}), json!({}));
        assert_eq!(
            failed(&evaluate(&r, None, &s)),
            ["rows[hashes=4,slots=1024].mean"]
        );
    }
}
