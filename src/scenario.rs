//! Scenario files: `scenarios/*.json`.
//!
//! A scenario is one JSON object. The fields every kind shares are read here
//! ([`Common`]); the rest are the kind's parameters, deserialized by the kind's
//! own struct with `deny_unknown_fields`, so a typo is an error naming the file
//! and the field path rather than a silently ignored setting.
//!
//! ```json
//! { "name": "estimator-zipf", "kind": "estimator_accuracy",
//!   "description": "...", "seed": 1, "runs": 5, ...kind parameters... }
//! ```

use crate::error::{Error, Result};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

/// Scenario names follow the report-folder naming rule.
pub use crate::report::atomic::validate_name;

/// Largest scenario file read (a scenario is a few KB; this stops a 10 GB file
/// given by mistake from being read into memory).
pub const MAX_SCENARIO_BYTES: u64 = 16 << 20;

/// Most runs a scenario (or `--runs`) may ask for: every run is a full
/// replay, so a typo such as 5000000 must fail fast rather than run for days.
pub const MAX_RUNS: u32 = 10_000;

/// The fields shared by every scenario kind.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Common {
    /// Report folder name: lowercase letters, digits, `-` and `_`.
    pub name: String,
    /// Which experiment this is (see `ratelab list`).
    pub kind: String,
    /// What the scenario reproduces, shown in reports.
    #[serde(default)]
    pub description: String,
    /// The one seed everything random derives from.
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// Repetitions with fresh hash seeds (kinds that use runs).
    #[serde(default)]
    pub runs: Option<u32>,
    /// Thresholds the CI check enforces (`ratelab check`).
    #[serde(default)]
    pub expect: Option<Value>,
    /// Per-field tolerances of the baseline comparison (`ratelab check`).
    #[serde(default)]
    pub tolerance: Option<Value>,
    /// What a reader should look at in this scenario's tables and charts
    /// (copied into report.json; the design-review page shows it).
    #[serde(default)]
    pub look_at: Option<String>,
}

fn default_seed() -> u64 {
    1
}

/// A parsed scenario: the shared fields plus the kind's raw parameters.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// Where it was read from (for error messages and relative paths).
    pub path: PathBuf,
    /// Shared fields.
    pub common: Common,
    /// The remaining fields, for the kind to deserialize.
    pub params: Map<String, Value>,
}

const COMMON_FIELDS: [&str; 8] = [
    "name",
    "kind",
    "description",
    "seed",
    "runs",
    "expect",
    "tolerance",
    "look_at",
];

impl Scenario {
    /// Reads and validates a scenario file.
    pub fn load(path: &Path) -> Result<Self> {
        let meta = std::fs::metadata(path).map_err(|e| Error::io(path, e))?;
        if meta.len() > MAX_SCENARIO_BYTES {
            return Err(Error::input_at(
                path,
                "file",
                format!(
                    "{} bytes is too large for a scenario (at most {MAX_SCENARIO_BYTES})",
                    meta.len()
                ),
            ));
        }
        // Bounded again while reading: a FIFO or a device (`/dev/zero`)
        // has no size to check first.
        let bytes = crate::report::pending::read_bounded(path, MAX_SCENARIO_BYTES, "a scenario")?;
        let text = std::str::from_utf8(&bytes).map_err(|e| {
            Error::input_at(path, format!("byte {}", e.valid_up_to()), "not valid UTF-8")
        })?;
        Self::parse(path, text)
    }

    /// Parses scenario text; `path` is used in messages and for relative paths.
    pub fn parse(path: &Path, text: &str) -> Result<Self> {
        let value: Value = crate::strict_json::from_str(text).map_err(|e| {
            Error::input_at(
                path,
                format!("line {} column {}", e.line(), e.column()),
                format!("malformed JSON: {}", strip_position(&e.to_string())),
            )
        })?;
        let Value::Object(mut all) = value else {
            return Err(Error::input_at(
                path,
                "top level",
                format!("expected a JSON object, found {}", kind_of(&value)),
            ));
        };
        let mut common_map = Map::new();
        for field in COMMON_FIELDS {
            if let Some(v) = all.remove(field) {
                common_map.insert(field.to_string(), v);
            }
        }
        let common: Common = from_value(path, Value::Object(common_map))?;
        validate_name(&common.name).map_err(|m| Error::input_at(path, "field name", m))?;
        if let Some(runs) = common.runs
            && (runs == 0 || runs > MAX_RUNS)
        {
            return Err(Error::input_at(
                path,
                "field runs",
                format!("value {runs}: expected 1..={MAX_RUNS} runs"),
            ));
        }
        Ok(Self {
            path: path.to_path_buf(),
            common,
            params: all,
        })
    }

    /// Deserializes the kind's parameters (`deny_unknown_fields` on `T`).
    pub fn params<T: DeserializeOwned>(&self) -> Result<T> {
        from_value(&self.path, Value::Object(self.params.clone()))
    }

    /// A path given in the scenario, resolved against the scenario's folder.
    pub fn resolve(&self, relative: &str) -> PathBuf {
        let p = Path::new(relative);
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            self.path.parent().unwrap_or(Path::new(".")).join(p)
        }
    }

    /// An input error about field `field` of this scenario.
    pub fn field_error(
        &self,
        field: impl std::fmt::Display,
        message: impl std::fmt::Display,
    ) -> Error {
        Error::input_at(&self.path, format!("field {field}"), message)
    }
}

/// Deserializes with the failing field's path in the message.
pub fn from_value<T: DeserializeOwned>(path: &Path, value: Value) -> Result<T> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let field = e.path().to_string();
        let field = if field == "." {
            "top level".to_string()
        } else {
            format!("field {field}")
        };
        Error::input_at(path, field, e.into_inner())
    })
}

fn strip_position(msg: &str) -> String {
    match msg.rfind(" at line ") {
        Some(i) => msg[..i].to_string(),
        None => msg.to_string(),
    }
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Every `*.json` file in `dir`, sorted by file name.
pub fn scenario_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let entries = std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    Ok(files)
}

/// A `size` or `recommend` scenario's `args` (the command line it runs,
/// as typed) parsed as the command `C` named `name` parses them, with
/// `tail` appended (a required flag whose value the run replaces). A flag
/// in `run_flags` is refused, `why(flag)` saying why; a parse error is
/// clap's message on one line ([`args_message`]).
///
/// # Examples
///
/// ```
/// use ratelab::scenario::{parse_args, Scenario};
///
/// #[derive(clap::Parser)]
/// struct Cmd {
///     #[arg(long)]
///     keys: u64,
/// }
/// let sc = Scenario::parse(
///     std::path::Path::new("s.json"),
///     r#"{"name": "s", "kind": "size", "args": []}"#,
/// )
/// .unwrap();
/// let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
/// let why = |_: &str| "it belongs to the run";
/// let c: Cmd = parse_args(&sc, "size", &args(&["--keys", "5"]), &[], &["--out"], why).unwrap();
/// assert_eq!(c.keys, 5);
/// let e = parse_args::<Cmd>(&sc, "size", &args(&["--out=x"]), &[], &["--out"], why);
/// assert_eq!(
///     e.err().unwrap().message(),
///     "s.json: field args: \"--out=x\": not allowed here: it belongs to the run"
/// );
/// ```
pub fn parse_args<C: clap::Parser>(
    sc: &Scenario,
    name: &str,
    args: &[String],
    tail: &[&str],
    run_flags: &[&str],
    why: impl Fn(&str) -> &'static str,
) -> Result<C> {
    for a in args {
        let flag = a.split('=').next().unwrap_or(a);
        if run_flags.contains(&flag) {
            return Err(sc.field_error("args", format!("{a:?}: not allowed here: {}", why(flag))));
        }
    }
    let argv = std::iter::once(name.to_string())
        .chain(args.iter().cloned())
        .chain(tail.iter().map(|t| t.to_string()));
    C::try_parse_from(argv).map_err(|e| sc.field_error("args", args_message(&e)))
}

/// A parse error of a scenario's `args` (the command line a `size` or
/// `recommend` scenario runs) as one line: clap's message without its
/// usage line and help hint, so it fits the one-line error of a field.
pub fn args_message(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let line: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("For more information"))
        .filter(|l| !l.starts_with("Usage:"))
        .map(|l| l.strip_prefix("error: ").unwrap_or(l))
        .collect();
    line.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct P {
        #[allow(dead_code)]
        slots: u32,
    }

    fn parse(t: &str) -> Result<Scenario> {
        Scenario::parse(Path::new("s.json"), t)
    }

    #[test]
    fn malformed_json_names_line_and_column() {
        let e = parse("{\n \"name\": \"x\",\n oops }").unwrap_err();
        assert!(
            e.message()
                .starts_with("s.json: line 3 column 2: malformed JSON"),
            "{e}"
        );
    }

    #[test]
    fn unknown_field_is_named() {
        let s = parse(r#"{"name":"x","kind":"k","slots":1,"slotz":2}"#).unwrap();
        let e = s.params::<P>().unwrap_err();
        assert!(e.message().contains("unknown field `slotz`"), "{e}");
    }

    #[test]
    fn wrong_type_names_field_path() {
        let s = parse(r#"{"name":"x","kind":"k","slots":"many"}"#).unwrap();
        let e = s.params::<P>().unwrap_err();
        assert!(
            e.message().starts_with("s.json: field slots: invalid type"),
            "{e}"
        );
    }

    #[test]
    fn names_cannot_escape_the_report_folder() {
        for bad in ["../x", "/abs", "", "A", "a b", "a/b", ".hidden"] {
            assert!(validate_name(bad).is_err(), "{bad}");
        }
        assert!(validate_name("estimator-zipf_2").is_ok());
        assert!(parse(r#"{"name":"../up","kind":"k"}"#).is_err());
    }

    #[test]
    fn zero_runs_rejected() {
        let e = parse(r#"{"name":"x","kind":"k","runs":0}"#).unwrap_err();
        assert!(e.message().contains("field runs"), "{e}");
    }
}
