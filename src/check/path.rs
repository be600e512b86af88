//! Paths into a report: the patterns `expect` and `tolerance` are written in
//! (`rows[hashes=4,slots=8192].exact_pct`, `rows[*].max`), the concrete paths
//! printed in the diff table, and the key by which an array's elements are
//! told apart.

use super::error::PathError;
use serde_json::{Map, Value};
use std::fmt;

/// One step of a pattern.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Unit {
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
    pub fn parse(text: &str) -> std::result::Result<Self, PathError> {
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
                        return Err(PathError::EmptySegment(i + 1));
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
                        return Err(PathError::Unclosed(i + 1));
                    }
                    units.push(parse_bracket(inner.trim())?);
                    after_bracket = true;
                }
                ']' => return Err(PathError::UnexpectedClose(i + 1)),
                c => {
                    if after_bracket {
                        return Err(PathError::AfterBracket(i + 1));
                    }
                    name.push(c);
                }
            }
        }
        if text.ends_with('.') {
            return Err(PathError::TrailingDot);
        }
        flush(&mut name, &mut units);
        if units.is_empty() {
            return Err(PathError::Empty);
        }
        Ok(Self {
            units,
            text: text.to_string(),
        })
    }

    /// Whether the pattern matches `path` whole (`prefix`: or a prefix of it).
    pub(super) fn matches(&self, path: &[Step], prefix: bool) -> bool {
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

fn parse_bracket(inner: &str) -> std::result::Result<Unit, PathError> {
    if inner == "*" {
        return Ok(Unit::AnyElem);
    }
    if let Ok(i) = inner.parse::<usize>() {
        return Ok(Unit::Index(i));
    }
    let mut pairs = Vec::new();
    for part in inner.split(',') {
        let Some((k, v)) = part.split_once('=') else {
            return Err(PathError::Bracket {
                inner: inner.to_string(),
                problem: "expected [N], [*] or [field=value,...]",
            });
        };
        let (k, v) = (k.trim(), v.trim());
        if k.is_empty() {
            return Err(PathError::Bracket {
                inner: inner.to_string(),
                problem: "empty field name",
            });
        }
        pairs.push((k.to_string(), v.to_string()));
    }
    Ok(Unit::Select(pairs))
}

/// One step of a concrete path.
#[derive(Debug, Clone)]
pub(super) enum Step {
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

pub(super) fn path_text(path: &[Step]) -> String {
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
pub(super) fn array_key(a: &[Value]) -> Option<Vec<String>> {
    if a.len() == 1 {
        // A single element is named by its integer configuration fields
        // (`rows[hashes=4,slots=131072]`), when it has any.
        let o = a[0].as_object()?;
        let keys: Vec<String> = o
            .iter()
            .filter(|(k, v)| {
                (v.is_i64() || v.is_u64())
                    && super::rules::direction(&[k.as_str()]) == super::rules::Direction::Config
            })
            .map(|(k, _)| k.clone())
            .collect();
        return (!keys.is_empty()).then_some(keys);
    }
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

pub(super) fn elem_label(v: &Value, keys: &[String]) -> Option<String> {
    let o = v.as_object()?;
    let parts: Option<Vec<String>> = keys
        .iter()
        .map(|k| o.get(k).and_then(key_scalar).map(|s| format!("{k}={s}")))
        .collect();
    parts.map(|p| p.join(","))
}

pub(super) fn elem_step(index: usize, v: &Value, keys: Option<&[String]>) -> Step {
    Step::Elem {
        index,
        label: keys.and_then(|k| elem_label(v, k)),
        scalars: scalars_of(v),
    }
}
