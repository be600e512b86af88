//! A scenario that names a program is code: `exec` entries run only when
//! the user says so (`--allow-exec`, or `RATELAB_ALLOW_EXEC=1` for CI).
//!
//! [`require`] is called by `run`, `reproduce`, `check` (when it reruns)
//! and `replay` before any work: a scenario with an `exec` entry and no
//! permission is one line, exit 2, naming the scenario and the command.
//! `report` and `check --from` read reports only and never execute
//! anything.

use crate::error::{Error, Result};
use crate::scenario::Scenario;
use serde_json::{Map, Value};

/// The environment variable that allows `exec` entries (value `1`).
pub const ENV: &str = "RATELAB_ALLOW_EXEC";

/// Whether exec entries may run: the flag, or `RATELAB_ALLOW_EXEC=1`.
pub fn allowed(flag: bool) -> bool {
    flag || std::env::var(ENV).is_ok_and(|v| v == "1")
}

/// Every `{"model": "exec", "command": [...]}` object in a scenario's
/// fields: (its place, e.g. `limiters[2]`, and the command line).
///
/// # Examples
/// ```
/// use ratelab::lab::trust::commands;
/// let v = serde_json::json!({"limiters": [{"model": "gcra"},
///     {"model": "exec", "command": ["python3", "ours.py"]}]});
/// let found = commands(v.as_object().unwrap());
/// assert_eq!(found, vec![("limiters[1]".to_string(), "python3 ours.py".to_string())]);
/// ```
pub fn commands(params: &Map<String, Value>) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (k, v) in params {
        walk(v, k.clone(), &mut out);
    }
    out
}

fn walk(v: &Value, place: String, out: &mut Vec<(String, String)>) {
    match v {
        Value::Object(o) => {
            if o.get("model").and_then(Value::as_str) == Some("exec") {
                let cmd = match o.get("command") {
                    Some(Value::Array(a)) => a
                        .iter()
                        .map(|x| x.as_str().map_or_else(|| x.to_string(), str::to_string))
                        .collect::<Vec<_>>()
                        .join(" "),
                    Some(other) => other.to_string(),
                    None => "(no command)".to_string(),
                };
                out.push((place.clone(), cmd));
            }
            for (k, x) in o {
                walk(x, format!("{place}.{k}"), out);
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                walk(x, format!("{place}[{i}]"), out);
            }
        }
        _ => {}
    }
}

/// Refuses, before any work, when a scenario runs a command and exec is
/// not allowed (see [`allowed`]).
pub fn require<'a>(scenarios: impl IntoIterator<Item = &'a Scenario>, flag: bool) -> Result<()> {
    if allowed(flag) {
        return Ok(());
    }
    for s in scenarios {
        if let Some((place, cmd)) = commands(&s.params).into_iter().next() {
            return Err(Error::input(format!(
                "{}: {place} runs a command ({cmd:?}); a scenario that names a program is code: run it only if you trust it, with --allow-exec (or {ENV}=1)",
                s.path.display()
            )));
        }
    }
    Ok(())
}

/// Refuses a command-line `limiters` entry (replay's `--limiter`) that
/// runs a command when exec is not allowed.
pub fn require_entry(entry: &Value, what: &str, flag: bool) -> Result<()> {
    if allowed(flag) {
        return Ok(());
    }
    let mut found = Vec::new();
    walk(entry, what.to_string(), &mut found);
    match found.into_iter().next() {
        Some((place, cmd)) => Err(Error::input(format!(
            "{place} runs a command ({cmd:?}): run it only if you trust it, with --allow-exec (or {ENV}=1)"
        ))),
        None => Ok(()),
    }
}
