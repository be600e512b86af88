//! `ratelab run --trace LOG --limit L --interval-ms I`: one's own log
//! through the decision lab without writing a scenario file first. The
//! flags become a `decision_accuracy` scenario (the same one a file would
//! hold), so the run, its report and its errors are the lab's own.

use crate::error::{Error, Result};
use crate::scenario::Scenario;
use crate::workload::trace::TraceSpec;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// The flags of `run --trace`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct RunTrace {
    /// Run the decision lab on this trace or access log (no scenario file): the default
    /// candidate set, or --candidates, against the exact limiters of --limit per --interval-ms.
    /// A directory is read as one trace (its files, or NAME=VALUE partition folders as DuckDB
    /// and Spark write them; with --shard each shard reads only its own partitions).
    #[arg(long, conflicts_with = "scenario", value_name = "LOG")]
    pub trace: Option<PathBuf>,
    /// How to read --trace: the scenario's `"trace"` object, as flags.
    #[command(flatten)]
    pub read: TraceSpec,
    /// With --trace: the policy, at most this many requests per key per --interval-ms.
    #[arg(long, requires = "trace")]
    pub limit: Option<u64>,
    /// With --trace: the policy's interval in ms.
    #[arg(long, requires = "trace")]
    pub interval_ms: Option<u64>,
    /// With --trace: the candidates, as model names (`gcra_governor,nginx_limit_req`; `ratelab
    /// list --models` lists them, each with its defaults) or a JSON list of `limiters`
    /// entries ('[{"model": "nginx_limit_req", "burst": [0, 10, 50]}]'; lists expand to a grid).
    #[arg(long, requires = "trace", value_name = "LIST")]
    pub candidates: Option<String>,
}

impl RunTrace {
    /// The scenario the flags describe, as if read from a file in the
    /// working directory (a relative `--trace` is read from there): the
    /// trace options are the scenario's `"trace"` object, field for field.
    pub fn scenario(&self, seed: Option<u64>) -> Result<Option<Scenario>> {
        let Some(trace) = &self.trace else {
            self.refuse_without_trace()?;
            return Ok(None);
        };
        let need = |v: Option<u64>, flag: &str| {
            v.ok_or_else(|| {
                Error::input(format!(
                    "run --trace: {flag} is missing: the policy is --limit L --interval-ms I (at most L requests per key per I ms)"
                ))
            })
        };
        let limit = need(self.limit, "--limit")?;
        let interval_ms = need(self.interval_ms, "--interval-ms")?;
        let mut read = self.read.clone();
        // The trace becomes a scenario's `trace.path`, a JSON string: a
        // path that is not UTF-8 would be read back as another (lossy) name
        // and reported missing.
        read.path = trace
            .to_str()
            .ok_or_else(|| {
                Error::input(format!(
                    "--trace {}: the path is not valid UTF-8 (rename the file or link it under a UTF-8 name)",
                    trace.display()
                ))
            })?
            .to_string();
        // Checked here so that the error names the flag, not the field.
        crate::lab::decision::checks::trace_reading(&read, 0).map_err(TraceSpec::flag_error)?;
        let t = serde_json::to_value(&read)
            .map_err(|e| Error::internal(format!("trace options as JSON: {e}")))?;
        let mut s = json!({
            "name": name_of(trace),
            "kind": "decision_accuracy",
            "description": format!("{} through the decision lab (ratelab run --trace)", trace.display()),
            "seed": seed.unwrap_or(1),
            "policy": {"limit": limit, "interval_ms": interval_ms},
            "trace": t,
        });
        if let Some(c) = &self.candidates {
            s["limiters"] = candidates(c)?;
        }
        let path = Path::new("run --trace");
        Scenario::parse(path, &s.to_string()).map(Some)
    }
}

impl RunTrace {
    /// Refuses every `run --trace` option when no `--trace` is given (a
    /// scenario file or the tour runs instead, and would ignore them).
    pub fn refuse_without_trace(&self) -> Result<()> {
        self.read.refuse_without_trace()?;
        for (given, flag) in [
            (self.limit.is_some(), "--limit"),
            (self.interval_ms.is_some(), "--interval-ms"),
            (self.candidates.is_some(), "--candidates"),
        ] {
            if given {
                return Err(Error::input(format!(
                    "{flag}: an option of run --trace, and no --trace is given (a scenario file has its own policy and limiters)"
                )));
            }
        }
        Ok(())
    }
}

/// `--candidates`: model names, or a JSON list of `limiters` entries.
fn candidates(text: &str) -> Result<Value> {
    let t = text.trim();
    if t.starts_with('[') {
        let v: Value = crate::strict_json::from_str(t)
            .map_err(|e| Error::input(format!("--candidates: malformed JSON: {e}")))?;
        return Ok(v);
    }
    let names: Vec<&str> = t.split(',').map(str::trim).collect();
    if names.iter().any(|n| n.is_empty()) {
        return Err(Error::input(format!(
            "--candidates {text:?}: an empty name: expected model names (gcra_governor,nginx_limit_req) or a JSON list"
        )));
    }
    let names: Vec<Value> = names.iter().map(|n| json!({ "model": n })).collect();
    Ok(Value::Array(names))
}

/// The report folder's name: the trace's file name, its extensions and
/// characters outside `[A-Za-z0-9_-]` dropped (`access.log.gz` ->
/// `access`; standard input -> `stdin`).
fn name_of(trace: &Path) -> String {
    let file = trace
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = file.split('.').next().unwrap_or_default();
    let clean: String = stem
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect();
    match clean.trim_matches('-') {
        "" => "stdin".into(),
        s => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_come_from_the_file_name() {
        assert_eq!(name_of(Path::new("logs/access.log.gz")), "access");
        assert_eq!(name_of(Path::new("-")), "stdin");
        assert_eq!(name_of(Path::new("/dev/fd/63")), "63");
        assert_eq!(name_of(Path::new("my log.csv")), "my-log");
    }

    #[test]
    fn candidates_are_names_or_json() {
        assert_eq!(
            candidates("gcra_governor, gcra").unwrap(),
            json!([{"model": "gcra_governor"}, {"model": "gcra"}])
        );
        assert_eq!(
            candidates(r#"[{"model": "gcra", "burst": [1, 2]}]"#).unwrap()[0]["burst"],
            json!([1, 2])
        );
        assert!(candidates(" , ").is_err());
        assert!(
            candidates("gcra,").is_err(),
            "an empty name is refused, not dropped"
        );
        assert!(candidates("[{").is_err());
    }
}
