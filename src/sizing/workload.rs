//! The workload a sizing runs on, from one of three sources: a `key,count`
//! trace, a JSON file holding a workload object, or a generated distribution
//! (`--keys N --dist harmonic|zipf:S|uniform` with `--events`, `--top`,
//! `--min`). Each comes with a short JSON description for `size.json`.

use crate::error::{Error, Result};
use crate::workload::counts::{read_counts_csv, CountWorkload, MAX_KEYS};
use crate::workload::Workload;
use serde_json::{json, Value};
use std::path::Path;

/// Where the workload of a sizing comes from.
#[derive(Debug, Clone, Copy)]
pub enum WorkloadSource<'a> {
    /// A `key,count` CSV file (header required).
    Trace(&'a Path),
    /// A JSON file: a workload object or a scenario with a `workload` field.
    File(&'a Path),
    /// A generated distribution.
    Generated(Generated<'a>),
}

/// A generated count workload as the command line describes it.
#[derive(Debug, Clone, Copy)]
pub struct Generated<'a> {
    /// Distinct keys (required).
    pub keys: Option<u64>,
    /// Events in all (zipf, uniform; harmonic: the smallest `top` reaching it).
    pub events: Option<u64>,
    /// `harmonic`, `zipf:S` or `uniform`.
    pub dist: &'a str,
    /// Harmonic: events of the top key.
    pub top: Option<u64>,
    /// Harmonic: no key gets fewer events than this.
    pub min: Option<u64>,
}

impl WorkloadSource<'_> {
    /// Builds the workload; also returns a short description of it.
    ///
    /// # Examples
    ///
    /// ```
    /// use ratelab::sizing::{Generated, WorkloadSource};
    ///
    /// let source = WorkloadSource::Generated(Generated {
    ///     keys: Some(100),
    ///     events: Some(1000),
    ///     dist: "uniform",
    ///     top: None,
    ///     min: None,
    /// });
    /// let (workload, shape) = source.build().unwrap();
    /// assert_eq!(workload.events(), 1000);
    /// assert_eq!(shape["type"], "uniform");
    /// ```
    pub fn build(&self) -> Result<(Workload, Value)> {
        match self {
            WorkloadSource::Trace(trace) => {
                let w = read_counts_csv(trace)?;
                Ok((
                    w,
                    json!({"type": "csv", "path": trace.display().to_string()}),
                ))
            }
            WorkloadSource::File(file) => read_workload_file(file),
            WorkloadSource::Generated(g) => g.build(),
        }
    }
}

/// Reads a workload object, or a scenario's `workload` field, from a JSON file.
fn read_workload_file(file: &Path) -> Result<(Workload, Value)> {
    let bytes = crate::report::pending::read_bounded(
        file,
        crate::scenario::MAX_SCENARIO_BYTES,
        "a workload file",
    )?;
    let text = String::from_utf8(bytes).map_err(|e| {
        Error::input_at(
            file,
            format!("byte {}", e.utf8_error().valid_up_to()),
            "not valid UTF-8",
        )
    })?;
    let v: Value = crate::strict_json::from_str(&text).map_err(|e| {
        Error::input_at(
            file,
            format!("line {} column {}", e.line(), e.column()),
            format!("malformed JSON: {e}"),
        )
    })?;
    let (field, v) = match v.get("workload") {
        Some(w) => ("workload", w.clone()),
        None => ("top level", v),
    };
    let cw: CountWorkload = serde_json::from_value(v).map_err(|e| {
        Error::input_at(file, format!("field {field}"), format!("{e}: expected a workload such as {{\"type\": \"harmonic\", \"keys\": 10000, \"top\": 100000, \"min\": 10}}"))
    })?;
    let w = cw.build(file, "workload")?;
    Ok((w, serde_json::to_value(&cw).unwrap_or_default()))
}

impl Generated<'_> {
    /// Checks the description and builds the workload.
    fn build(&self) -> Result<(Workload, Value)> {
        let Some(keys) = self.keys else {
            return Err(Error::input(
                "no workload: give --keys N with --dist (and --events or --top), or --workload FILE, or --trace FILE",
            ));
        };
        if keys == 0 || keys > MAX_KEYS {
            return Err(Error::input(format!(
                "--keys {keys}: expected 1..={MAX_KEYS}"
            )));
        }
        if self.events == Some(0) {
            return Err(Error::input("--events 0: expected at least 1 event"));
        }
        let dist = self.dist.trim();
        let cw = if dist == "harmonic" {
            self.harmonic(keys)?
        } else {
            self.of_events(keys, dist)?
        };
        let w = cw.build(Path::new("command line"), "workload")?;
        Ok((w, serde_json::to_value(&cw).unwrap_or_default()))
    }

    /// `--dist harmonic`: `--top`, or the smallest top reaching `--events`.
    fn harmonic(&self, keys: u64) -> Result<CountWorkload> {
        let min = self.min.unwrap_or(10);
        let top = match (self.top, self.events) {
            (Some(t), Some(events)) => {
                return Err(Error::input(format!(
                    "--events {events}: --dist harmonic takes --top {t} or --events, not both (--top sets the events)"
                )))
            }
            // The default floor never above the top key's count.
            (Some(t), None) => {
                let min = self.min.unwrap_or(min.min(t));
                return Ok(CountWorkload::Harmonic { keys, top: t, min });
            }
            // A top below the floor gives the same counts as the floor.
            (None, Some(events)) => harmonic_top(keys, min, events)?.max(min),
            (None, None) => {
                return Err(Error::input(
                    "--dist harmonic: give --top N (events of the busiest key) or --events N",
                ))
            }
        };
        Ok(CountWorkload::Harmonic { keys, top, min })
    }

    /// `--dist uniform` or `--dist zipf:S`, which need `--events`.
    fn of_events(&self, keys: u64, dist: &str) -> Result<CountWorkload> {
        if self.top.is_some() || self.min.is_some() {
            return Err(Error::input(format!(
                "--dist {dist}: --top and --min apply to --dist harmonic only"
            )));
        }
        let Some(events) = self.events else {
            return Err(Error::input(format!(
                "--dist {dist}: --events N is required"
            )));
        };
        if dist == "uniform" {
            Ok(CountWorkload::Uniform { keys, events })
        } else if let Some(s) = dist.strip_prefix("zipf:") {
            let s: f64 = s
                .parse()
                .ok()
                .filter(|v: &f64| (0.0..=crate::workload::counts::MAX_ZIPF_S).contains(v))
                .ok_or_else(|| {
                    Error::input(format!(
                        "--dist {dist}: at {s:?}: expected a finite exponent >= 0 and <= {}, e.g. zipf:1.1",
                        crate::workload::counts::MAX_ZIPF_S
                    ))
                })?;
            Ok(CountWorkload::Zipf { keys, events, s })
        } else {
            Err(Error::input(format!(
                "--dist {dist:?}: expected harmonic, zipf:S (e.g. zipf:1.1) or uniform"
            )))
        }
    }
}

/// The smallest `top` whose harmonic workload has at least `events` events.
fn harmonic_top(keys: u64, min: u64, events: u64) -> Result<u64> {
    let total = |top: u64| -> u64 {
        let mut t = 0u64;
        for i in 0..keys {
            t = t.saturating_add((top / (i + 1)).max(min));
            if t > events {
                break;
            }
        }
        t
    };
    if total(1) > events {
        return Err(Error::input(format!(
            "--events {events}: {keys} keys with --min {min} already make {} events; lower --min or raise --events",
            total(1)
        )));
    }
    let (mut lo, mut hi) = (1u64, events.max(1));
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if total(mid) >= events {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    Ok(lo)
}
