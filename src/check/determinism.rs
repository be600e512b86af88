//! The determinism self-check of `ratelab run --check-determinism`: a
//! scenario rerun on a single thread must give the same report, tables,
//! charts and extra files as the multi-threaded run.

use crate::error::{Error, Result};
use crate::lab::RunContext;
use crate::report::Output;
use crate::scenario::Scenario;

/// Reruns `scenario` on one thread and compares everything with `output`,
/// the multi-threaded run's; a difference is an internal error naming the
/// first field that differs. Returns the line that tells the check passed.
pub fn rerun_on_one_thread(
    scenario: &Scenario,
    ctx: &RunContext,
    output: &Output,
) -> Result<String> {
    let single = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .map_err(|e| Error::internal(format!("cannot build a 1-thread pool: {e}")))?;
    let quiet = RunContext {
        progress: false,
        decisions: None,
        ..ctx.clone()
    };
    let again = single.install(|| crate::kinds::run(scenario, &quiet))?;
    if let Some(diff) = first_difference(&output.json, &again.json, "") {
        return Err(Error::internal(format!(
            "{}: not deterministic: {diff} (multi-threaded run vs single-threaded rerun)",
            scenario.common.name
        )));
    }
    let same_files = output.table_md == again.table_md
        && output.table_csv == again.table_csv
        && output
            .charts
            .iter()
            .zip(&again.charts)
            .all(|(a, b)| a.svg == b.svg && a.png == b.png)
        && stable_files(&output.extra_files) == stable_files(&again.extra_files);
    if !same_files {
        return Err(Error::internal(format!(
            "{}: not deterministic: report.json agrees but a table, chart or extra file differs",
            scenario.common.name
        )));
    }
    Ok(format!(
        "determinism check: {} identical on 1 thread and {} threads",
        scenario.common.name,
        rayon::current_num_threads()
    ))
}

/// The first place where two JSON values differ, as `path: a != b`.
pub fn first_difference(
    a: &serde_json::Value,
    b: &serde_json::Value,
    path: &str,
) -> Option<String> {
    use serde_json::Value;
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for (k, va) in x {
                let p = format!("{path}.{k}");
                match y.get(k) {
                    Some(vb) => {
                        if let Some(d) = first_difference(va, vb, &p) {
                            return Some(d);
                        }
                    }
                    None => return Some(format!("{p}: present in the first run only")),
                }
            }
            y.keys()
                .find(|k| !x.contains_key(*k))
                .map(|k| format!("{path}.{k}: present in the second run only"))
        }
        (Value::Array(x), Value::Array(y)) => {
            for (i, (va, vb)) in x.iter().zip(y).enumerate() {
                if let Some(d) = first_difference(va, vb, &format!("{path}[{i}]")) {
                    return Some(d);
                }
            }
            (x.len() != y.len()).then(|| format!("{path}: {} vs {} elements", x.len(), y.len()))
        }
        _ => (a != b).then(|| format!("{}: {a} != {b}", if path.is_empty() { "." } else { path })),
    }
}

/// The extra files that must be byte-identical: all but `*.statistical.*`
/// ones (rows of a real crate that seeds its hashes at random).
fn stable_files(files: &[(String, Vec<u8>)]) -> Vec<&(String, Vec<u8>)> {
    files
        .iter()
        .filter(|(name, _)| !name.contains(".statistical."))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::first_difference;
    use serde_json::json;

    #[test]
    fn finds_the_first_differing_field() {
        let a = json!({"rows": [{"mean": 1.0, "p99": 2}], "seed": 1});
        let b = json!({"rows": [{"mean": 1.5, "p99": 2}], "seed": 1});
        assert_eq!(
            first_difference(&a, &b, "").as_deref(),
            Some(".rows[0].mean: 1.0 != 1.5")
        );
        assert_eq!(first_difference(&a, &a, ""), None);
        let c = json!({"rows": [], "seed": 1});
        assert_eq!(
            first_difference(&a, &c, "").as_deref(),
            Some(".rows: 1 vs 0 elements")
        );
    }
}
