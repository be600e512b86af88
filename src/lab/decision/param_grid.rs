//! Candidates as data: a scenario's `limiters` list, each entry a model
//! name and its parameters, where a list in a field expands to one
//! candidate per value (the cartesian product when several fields are
//! lists).
//!
//! ```json
//! "limiters": [
//!   {"model": "pingora_rate", "estimate": "proportional", "hashes": 4, "slots": [1024, 8192]},
//!   {"model": "token_bucket", "rate_per_s": 100, "burst": [50, 100, 200]}
//! ]
//! ```
//!
//! Every field is checked against the model's parameter table before
//! anything is built: an unknown model or field, an empty list, a value out
//! of range (NaN included) or a grid over [`MAX_CANDIDATES`] is one line
//! naming `limiters[i].field` and the value.

use crate::error::FieldError;
use serde_json::{Map, Value};

/// Most candidates a scenario may expand to.
pub const MAX_CANDIDATES: usize = 512;

/// The type and range of one parameter.
#[derive(Debug, Clone, Copy)]
pub enum ParamType {
    /// A whole number in `min..=max`.
    Int {
        /// Smallest value.
        min: i64,
        /// Largest value.
        max: i64,
    },
    /// A finite number greater than `above` (and at most `max`).
    Float {
        /// Values must be greater than this.
        above: f64,
        /// Largest value.
        max: f64,
    },
    /// `true` or `false`.
    Bool,
    /// One of these words.
    Choice(&'static [&'static str]),
    /// A command line: a non-empty list of strings, taken as one value (it
    /// does not expand to a grid).
    Argv,
    /// A free, non-empty string without line breaks (a label).
    Text,
    /// An object of named scalars (`{"burst": 5, "mode": "strict"}`), taken
    /// as one value (it does not expand to a grid): the `exec` model sends
    /// them to the child as `key=value` words of its hello. Names are
    /// `[A-Za-z_][A-Za-z0-9_]*` and none of `reserved`; values are numbers,
    /// `true`/`false` or strings on one line.
    Fields {
        /// Names the object may not use (the hello's own fields).
        reserved: &'static [&'static str],
    },
}

/// One parameter of a model.
#[derive(Debug, Clone, Copy)]
pub struct Param {
    /// Field name in the scenario.
    pub name: &'static str,
    /// Type and range.
    pub kind: ParamType,
    /// What it is and its default, for `--help`, the README and errors.
    pub doc: &'static str,
    /// Its default when it does not follow the policy (a sketch's 4 rows,
    /// nginx's 10 MiB zone): the one place the value is written; the
    /// builders read it from the resolved [`Args`]. `None`: the default
    /// follows the policy (or there is none), and the builder says how.
    pub default: Option<Fixed>,
}

/// A parameter's fixed default ([`Param::default`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Fixed {
    /// A whole number.
    Int(i64),
    /// A switch.
    Bool(bool),
    /// A word of a [`ParamType::Choice`].
    Word(&'static str),
}

impl Fixed {
    fn value(self) -> Value {
        match self {
            Fixed::Int(v) => Value::from(v),
            Fixed::Bool(b) => Value::from(b),
            Fixed::Word(w) => Value::from(w),
        }
    }
}

impl Param {
    /// The same parameter with the fixed default `d`.
    ///
    /// # Examples
    /// ```
    /// use ratelab::lab::decision::param_grid::{Args, Fixed, Param};
    /// let hashes = Param::int("hashes", 1, 64, "sketch rows (default 4)").or(Fixed::Int(4));
    /// let a = Args::default().resolved(&[hashes]);
    /// assert_eq!(a.u64("hashes"), Some(4));
    /// ```
    pub const fn or(mut self, d: Fixed) -> Self {
        self.default = Some(d);
        self
    }
    /// A whole-number parameter.
    pub const fn int(name: &'static str, min: i64, max: i64, doc: &'static str) -> Self {
        Self {
            name,
            kind: ParamType::Int { min, max },
            doc,
            default: None,
        }
    }
    /// A positive finite number.
    pub const fn positive(name: &'static str, doc: &'static str) -> Self {
        Self {
            name,
            kind: ParamType::Float {
                above: 0.0,
                max: 1e12,
            },
            doc,
            default: None,
        }
    }
    /// A switch.
    pub const fn flag(name: &'static str, doc: &'static str) -> Self {
        Self {
            name,
            kind: ParamType::Bool,
            doc,
            default: None,
        }
    }
    /// A word from a list.
    pub const fn choice(
        name: &'static str,
        words: &'static [&'static str],
        doc: &'static str,
    ) -> Self {
        Self {
            name,
            kind: ParamType::Choice(words),
            doc,
            default: None,
        }
    }

    /// A command line (`["python3", "ours.py"]`).
    pub const fn argv(name: &'static str, doc: &'static str) -> Self {
        Self {
            name,
            kind: ParamType::Argv,
            doc,
            default: None,
        }
    }

    /// An object of named scalars passed through to a child process.
    pub const fn fields(
        name: &'static str,
        reserved: &'static [&'static str],
        doc: &'static str,
    ) -> Self {
        Self {
            name,
            kind: ParamType::Fields { reserved },
            doc,
            default: None,
        }
    }

    /// A free string (a label).
    pub const fn text(name: &'static str, doc: &'static str) -> Self {
        Self {
            name,
            kind: ParamType::Text,
            doc,
            default: None,
        }
    }

    /// Checks one scalar value; the message says what was expected.
    fn check(&self, v: &Value) -> Result<(), ValueError> {
        match self.kind {
            ParamType::Argv => match v.as_array() {
                Some(a)
                    if !a.is_empty()
                        && a.iter().all(|x| x.as_str().is_some_and(|s| !s.is_empty())) =>
                {
                    Ok(())
                }
                _ => Err(ValueError::expected(
                    v,
                    "a command line, a non-empty list of non-empty strings",
                )),
            },
            ParamType::Fields { reserved } => check_fields(v, reserved),
            ParamType::Text => match v.as_str() {
                Some(s) if !s.trim().is_empty() && !s.contains(['\n', '\r']) => Ok(()),
                _ => Err(ValueError::expected(v, "a non-empty string on one line")),
            },
            ParamType::Int { min, max } => match v.as_i64() {
                Some(i) if (min..=max).contains(&i) => Ok(()),
                _ => Err(ValueError::expected(
                    v,
                    format!("a whole number in {min}..={max}"),
                )),
            },
            ParamType::Float { above, max } => match v.as_f64() {
                Some(f) if f.is_finite() && f > above && f <= max => Ok(()),
                _ => Err(ValueError::expected(
                    v,
                    format!("a finite number > {above} and <= {max:e}"),
                )),
            },
            ParamType::Bool => match v {
                Value::Bool(_) => Ok(()),
                _ => Err(ValueError::expected(v, "true or false")),
            },
            ParamType::Choice(words) => match v.as_str() {
                Some(s) if words.contains(&s) => Ok(()),
                _ => Err(ValueError::expected(
                    v,
                    format!("one of {}", words.join(", ")),
                )),
            },
        }
    }
}

/// A parameter value that does not fit its [`ParamType`]: the value and
/// what was expected. `expand` puts the field in front
/// ([`FieldError`]); bad input (exit 2).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValueError {
    /// The value is not of the parameter's type or range.
    #[error("value {value}: expected {expected}")]
    Expected {
        /// The value (JSON).
        value: String,
        /// What the parameter takes.
        expected: String,
    },
    /// A name in a `Fields` object that may not be used.
    #[error("name {name:?}: {problem}")]
    Name {
        /// The name.
        name: String,
        /// Why not.
        problem: String,
    },
    /// A value inside a `Fields` object.
    #[error("{name}: {source}")]
    Entry {
        /// Its name.
        name: String,
        /// What is wrong with it.
        source: Box<ValueError>,
    },
}

impl ValueError {
    fn expected(value: impl std::fmt::Display, expected: impl Into<String>) -> Self {
        ValueError::Expected {
            value: value.to_string(),
            expected: expected.into(),
        }
    }
}

/// Checks a [`ParamType::Fields`] value.
fn check_fields(v: &Value, reserved: &[&str]) -> Result<(), ValueError> {
    let Some(o) = v.as_object() else {
        return Err(ValueError::expected(
            v,
            "an object of named values, e.g. {\"burst\": 5}",
        ));
    };
    for (k, x) in o {
        let mut chars = k.chars();
        let ok_name = chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !ok_name {
            return Err(ValueError::Name {
                name: k.clone(),
                problem: "expected letters, digits and _ (not starting with a digit)".into(),
            });
        }
        if reserved.contains(&k.as_str()) {
            return Err(ValueError::Name {
                name: k.clone(),
                problem: format!(
                    "reserved for the hello's own fields ({})",
                    reserved.join(", ")
                ),
            });
        }
        let scalar = match x {
            Value::Number(_) | Value::Bool(_) => true,
            Value::String(s) => !s.contains(['\n', '\r']),
            _ => false,
        };
        if !scalar {
            return Err(ValueError::Entry {
                name: k.clone(),
                source: Box::new(ValueError::expected(
                    x,
                    "a number, true/false or a string on one line",
                )),
            });
        }
    }
    Ok(())
}

/// One candidate's parameters after expansion: the values given (one per
/// field), in the entry's order.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Args {
    values: Vec<(String, Value)>,
    /// Fields whose value came from a list (they name the candidate within
    /// its family).
    varying: Vec<String>,
}

impl Args {
    /// Arguments from `(name, value)` pairs, none varying.
    ///
    /// # Examples
    /// ```
    /// use ratelab::lab::decision::param_grid::Args;
    /// use serde_json::json;
    /// let a = Args::of(&[("burst", json!(50)), ("nodelay", json!(true))]);
    /// assert_eq!(a.u64("burst"), Some(50));
    /// assert_eq!(a.bool("nodelay"), Some(true));
    /// assert_eq!(a.f64("rate_per_s"), None);
    /// ```
    pub fn of(pairs: &[(&str, Value)]) -> Self {
        Self {
            values: pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect(),
            varying: Vec::new(),
        }
    }

    /// The same arguments with every absent parameter of `params` that
    /// has a fixed default set to it (not varying: the label shows only
    /// what was given).
    pub fn resolved(&self, params: &[Param]) -> Args {
        let mut out = self.clone();
        for p in params {
            if let (None, Some(d)) = (self.get(p.name), p.default) {
                out.values.push((p.name.to_string(), d.value()));
            }
        }
        out
    }

    /// Whether `name` came from a list (it names the candidate within its
    /// family).
    pub fn varies(&self, name: &str) -> bool {
        self.varying.iter().any(|v| v == name)
    }

    /// A whole-number field that resolution always sets (it has a fixed
    /// default): an internal error if it is missing.
    pub fn need_u64(&self, name: &str) -> crate::error::Result<u64> {
        self.u64(name).ok_or_else(|| {
            crate::error::Error::internal(format!("{name}: no value and no default"))
        })
    }
    /// A switch that resolution always sets ([`Args::need_u64`]).
    pub fn need_bool(&self, name: &str) -> crate::error::Result<bool> {
        self.bool(name).ok_or_else(|| {
            crate::error::Error::internal(format!("{name}: no value and no default"))
        })
    }

    /// The values given as a typed settings struct `T` (serde, its
    /// defaults for what is absent). The grid has already checked every
    /// name, type and range against the row's [`Param`]s, so a failure
    /// here is a table that disagrees with `T`: an internal error.
    ///
    /// # Examples
    /// ```
    /// use ratelab::lab::decision::param_grid::Args;
    /// use serde_json::json;
    /// #[derive(serde::Deserialize)]
    /// struct S {
    ///     burst: u64,
    ///     #[serde(default)]
    ///     nodelay: bool,
    /// }
    /// let s: S = Args::of(&[("burst", json!(50))]).settings()?;
    /// assert_eq!((s.burst, s.nodelay), (50, false));
    /// # Ok::<(), ratelab::error::Error>(())
    /// ```
    pub fn settings<T: serde::de::DeserializeOwned>(&self) -> crate::error::Result<T> {
        let map: Map<String, Value> = self.values.iter().cloned().collect();
        serde_json::from_value(Value::Object(map))
            .map_err(|e| crate::error::Error::internal(format!("settings {self:?}: {e}")))
    }

    fn get(&self, name: &str) -> Option<&Value> {
        self.values.iter().find(|(k, _)| k == name).map(|(_, v)| v)
    }
    /// A whole-number field.
    pub fn u64(&self, name: &str) -> Option<u64> {
        self.get(name).and_then(Value::as_u64)
    }
    /// A signed whole-number field.
    pub fn i64(&self, name: &str) -> Option<i64> {
        self.get(name).and_then(Value::as_i64)
    }
    /// A number field.
    pub fn f64(&self, name: &str) -> Option<f64> {
        self.get(name).and_then(Value::as_f64)
    }
    /// A switch.
    pub fn bool(&self, name: &str) -> Option<bool> {
        self.get(name).and_then(Value::as_bool)
    }
    /// A word.
    pub fn str(&self, name: &str) -> Option<&str> {
        self.get(name).and_then(Value::as_str)
    }
    /// A command line.
    pub fn argv(&self, name: &str) -> Option<Vec<String>> {
        self.get(name).and_then(Value::as_array).map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect()
        })
    }

    /// A [`ParamType::Fields`] object as `(name, value)` words, strings
    /// unquoted, sorted by name (the object keeps the file's order; the
    /// protocol promises name order).
    ///
    /// # Examples
    /// ```
    /// use ratelab::lab::decision::param_grid::Args;
    /// use serde_json::json;
    /// let a = Args::of(&[("params", json!({"zeta": 1, "alpha": "x y"}))]);
    /// assert_eq!(
    ///     a.fields("params"),
    ///     vec![("alpha".to_string(), "x y".to_string()), ("zeta".to_string(), "1".to_string())]
    /// );
    /// ```
    pub fn fields(&self, name: &str) -> Vec<(String, String)> {
        let mut f: Vec<(String, String)> = self
            .get(name)
            .and_then(Value::as_object)
            .map(|o| {
                o.iter()
                    .map(|(k, v)| {
                        let s = match v {
                            Value::String(s) => s.clone(),
                            other => other.to_string(),
                        };
                        (k.clone(), s)
                    })
                    .collect()
            })
            .unwrap_or_default();
        f.sort();
        f
    }

    /// `name=value` for the given fields that are not in `except`, split
    /// into (fixed, varying).
    pub(super) fn suffixes(&self, except: &[&str]) -> (String, String) {
        let show = |v: &Value| match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let mut fixed = Vec::new();
        let mut varying = Vec::new();
        for (k, v) in &self.values {
            if except.contains(&k.as_str()) {
                continue;
            }
            let s = format!("{k}={}", show(v));
            if self.varying.contains(k) {
                varying.push(s);
            } else {
                fixed.push(s);
            }
        }
        (fixed.join(" "), varying.join(" "))
    }
}

/// Expands one `limiters[i]` entry against its model's parameters into one
/// [`Args`] per grid point. `field` is the entry's place (`limiters[2]`).
pub fn expand(
    entry: &Map<String, Value>,
    params: &[Param],
    field: &str,
) -> Result<Vec<Args>, FieldError> {
    let mut axes: Vec<(String, Vec<Value>, bool)> = Vec::new();
    let mut points: usize = 1;
    for (k, v) in entry {
        if k == "model" {
            continue;
        }
        let Some(p) = params.iter().find(|p| p.name == k) else {
            let known: Vec<&str> = params.iter().map(|p| p.name).collect();
            return Err(FieldError::new(
                format!("{field}.{k}"),
                format!(
                    "unknown parameter: expected one of {}",
                    if known.is_empty() {
                        "none (this model takes no parameters)".to_string()
                    } else {
                        known.join(", ")
                    }
                ),
            ));
        };
        let (values, is_list) = match v {
            _ if matches!(p.kind, ParamType::Argv | ParamType::Fields { .. }) => {
                (vec![v.clone()], false)
            }
            Value::Array(a) if a.is_empty() => {
                return Err(FieldError::new(
                    format!("{field}.{k}"),
                    "empty list: expected at least one value",
                ))
            }
            Value::Array(a) => (a.clone(), true),
            other => (vec![other.clone()], false),
        };
        for (i, x) in values.iter().enumerate() {
            let place = if is_list {
                format!("{field}.{k}[{i}]")
            } else {
                format!("{field}.{k}")
            };
            p.check(x).map_err(|m| FieldError::new(place, m))?;
        }
        points = points.saturating_mul(values.len());
        if points > MAX_CANDIDATES {
            return Err(FieldError::new(
                field,
                format!("the lists expand to more than {MAX_CANDIDATES} candidates: expected at most {MAX_CANDIDATES}"),
            ));
        }
        axes.push((k.clone(), values, is_list));
    }
    let mut out = vec![Args::default()];
    for (k, values, is_list) in &axes {
        let mut next = Vec::with_capacity(out.len() * values.len());
        for a in &out {
            for v in values {
                let mut b = a.clone();
                b.values.push((k.clone(), v.clone()));
                if *is_list {
                    b.varying.push(k.clone());
                }
                next.push(b);
            }
        }
        out = next;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const PARAMS: &[Param] = &[
        Param::int("burst", 0, 100, "bucket depth"),
        Param::positive("rate_per_s", "tokens per second"),
        Param::flag("nodelay", "no delay"),
        Param::choice("estimate", &["docs", "proportional"], "how"),
        Param::argv("command", "a program"),
    ];

    fn entry(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn lists_expand_to_the_cartesian_product_in_entry_order() {
        let e = entry(
            json!({"model": "m", "burst": [1, 2, 3], "nodelay": true, "rate_per_s": [5, 6.5]}),
        );
        let a = expand(&e, PARAMS, "limiters[0]").unwrap();
        assert_eq!(a.len(), 6);
        assert_eq!(a[0].u64("burst"), Some(1));
        assert_eq!(a[1].f64("rate_per_s"), Some(6.5));
        assert_eq!(a[5].u64("burst"), Some(3));
        assert_eq!(
            a[3].suffixes(&[]),
            ("nodelay=true".into(), "burst=2 rate_per_s=6.5".into())
        );
    }

    #[test]
    fn bad_entries_name_the_field_and_value() {
        let cases = [
            (json!({"burst": []}), "limiters[1].burst", "empty list"),
            (
                json!({"burst": [1, 101]}),
                "limiters[1].burst[1]",
                "value 101",
            ),
            (
                json!({"rate_per_s": 0}),
                "limiters[1].rate_per_s",
                "value 0",
            ),
            (
                json!({"rate_per_s": "NaN"}),
                "limiters[1].rate_per_s",
                "\"NaN\"",
            ),
            (
                json!({"estimate": "exact"}),
                "limiters[1].estimate",
                "docs, proportional",
            ),
            (
                json!({"bursts": 3}),
                "limiters[1].bursts",
                "unknown parameter",
            ),
            (
                json!({"nodelay": 1}),
                "limiters[1].nodelay",
                "true or false",
            ),
        ];
        for (v, field, msg) in cases {
            let FieldError {
                field: f,
                message: m,
            } = expand(&entry(v.clone()), PARAMS, "limiters[1]").unwrap_err();
            assert_eq!(f, field, "{v}");
            assert!(m.contains(msg), "{v}: {m}");
        }
    }

    #[test]
    fn a_command_line_is_one_value() {
        let e = entry(json!({"command": ["python3", "x.py"], "burst": [1, 2]}));
        let a = expand(&e, PARAMS, "limiters[0]").unwrap();
        assert_eq!(a.len(), 2);
        assert_eq!(a[1].argv("command").unwrap(), ["python3", "x.py"]);
    }

    #[test]
    fn a_huge_grid_is_refused_before_it_is_built() {
        let big: Vec<i64> = (0..=100).collect();
        let e = entry(
            json!({"burst": big, "rate_per_s": (1..=1000).map(f64::from).collect::<Vec<_>>()}),
        );
        let FieldError {
            field: f,
            message: m,
        } = expand(&e, PARAMS, "limiters[0]").unwrap_err();
        assert_eq!(f, "limiters[0]");
        assert!(m.contains("more than 512"), "{m}");
    }
}
