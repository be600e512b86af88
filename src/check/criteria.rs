//! A scenario's `expect` and `tolerance`, parsed.

use super::diff::{parse_tol, Tol};
use super::expect::{parse_cond, Expectation};
use super::path::Pattern;
use crate::error::Result;
use crate::scenario::Scenario;
use serde_json::{Map, Value};

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
