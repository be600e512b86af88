//! A scenario's `expect` and `tolerance`, parsed.

use super::diff::{parse_tol, Tol};
use super::error::{RuleError, SpecError};
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
            .map_err(|e| s.field_error(e.field, e.rule))
    }

    /// Parses raw `expect`/`tolerance` values; an error names the field.
    pub fn parse(
        expect: Option<&Value>,
        tolerance: Option<&Value>,
    ) -> std::result::Result<Self, SpecError> {
        let mut spec = Spec::default();
        let obj =
            |v: Option<&Value>, name: &str| -> std::result::Result<Map<String, Value>, SpecError> {
                match v {
                    None | Some(Value::Null) => Ok(Map::new()),
                    Some(Value::Object(m)) => Ok(m.clone()),
                    Some(other) => Err(SpecError {
                        field: name.to_string(),
                        rule: RuleError::NotAnObject {
                            value: other.to_string(),
                        },
                    }),
                }
            };
        for (path, cond) in obj(expect, "expect")? {
            let field = format!("expect.{path:?}");
            let at = |rule: RuleError| SpecError {
                field: field.clone(),
                rule,
            };
            let pattern = Pattern::parse(&path).map_err(|m| at(m.into()))?;
            let c = parse_cond(&cond).map_err(at)?;
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
            let at = |rule: RuleError| SpecError {
                field: field.clone(),
                rule,
            };
            let pattern = Pattern::parse(&path).map_err(|m| at(m.into()))?;
            let t = parse_tol(&tol).map_err(at)?;
            spec.tolerances.push((pattern, t));
        }
        Ok(spec)
    }
}
