//! Sketches of your own in the estimator lab: a scenario's `estimators`
//! entries (`{"model": "exec", "command": [...], "name": "ours"}`), each run
//! as a child process per sweep cell (shape × variant × run) through the
//! estimator role of `docs/book/src/protocol.md`, fed the same stream as the model's
//! row of that run, and measured against the same exact counts.

use super::params::Backend;
use super::replay::{count_until_error, errors_by_rank, outcome_of, rank_order, CellOutcome};
use super::sweep::{rows, Row};
use crate::error::Result;
use crate::lab::decision::param_grid::{expand, Args, Param};
use crate::model::estimator::EstimatorConfig;
use crate::model::exec::{ExecConfig, DEFAULT_TIMEOUT};
use crate::model::exec_estimator::ExecEstimator;
use crate::rng::{derive_seed, stream};
use crate::scenario::Scenario;
use crate::workload::Workload;
use serde_json::{Map, Value};
use std::path::PathBuf;
use std::time::Duration;

/// Keys per `incr` and `get` line.
pub const BATCH: usize = 16_384;

/// The hello's own fields (an entry's `params` may not reuse them).
const HELLO_FIELDS: &[&str] = &["hashes", "slots", "variant", "keys", "seed", "run", "name"];

/// The parameters of an `estimators` entry.
pub const PARAMS: &[Param] = &[
    Param::argv(
        "command",
        "the program and its arguments (required; relative paths are from the scenario's folder)",
    ),
    Param::text("name", "the rows' label (default \"exec <command>\")"),
    Param::int(
        "timeout_ms",
        1,
        3_600_000,
        "how long the child may take to answer one line before it is killed (default 30000)",
    ),
    Param::fields("env", &[], "the child's whole environment (default empty)"),
    Param::fields(
        "params",
        HELLO_FIELDS,
        "named values sent as key=value words of the hello",
    ),
];

/// One checked `estimators` entry.
#[derive(Debug, Clone)]
pub struct Entry {
    /// Its place in the scenario (`estimators[0]`), for errors.
    pub place: String,
    /// The rows' label.
    pub name: String,
    cfg: ExecConfig,
    params: Vec<(String, String)>,
}

/// Checks every entry: the model must be `exec`, the fields as [`PARAMS`]
/// (no lists: one entry is one sketch).
pub fn entries(scenario: &Scenario, list: &[Map<String, Value>]) -> Result<Vec<Entry>> {
    let workdir = scenario
        .path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .map_or_else(|| PathBuf::from("."), |d| d.to_path_buf());
    list.iter()
        .enumerate()
        .map(|(i, e)| {
            let place = format!("estimators[{i}]");
            match e.get("model").and_then(Value::as_str) {
                Some("exec") => {}
                other => {
                    return Err(scenario.field_error(
                        format!("{place}.model"),
                        format!(
                            "value {}: expected \"exec\" (built-in sketches are `configs`, `grid` and `backends`)",
                            other.map_or_else(|| "missing".to_string(), |m| format!("{m:?}"))
                        ),
                    ))
                }
            }
            let mut grid =
                expand(e, PARAMS, &place).map_err(|e| scenario.field_error(e.field, e.message))?;
            if grid.len() != 1 {
                return Err(scenario.field_error(&place, "lists expand to several sketches: give one entry per sketch"));
            }
            let a: Args = grid.remove(0);
            let command = a.argv("command").ok_or_else(|| {
                scenario.field_error(format!("{place}.command"), "missing: expected the program and its arguments")
            })?;
            let name = a
                .str("name")
                .map_or_else(|| format!("exec {}", command.join(" ")), str::to_string);
            Ok(Entry {
                place,
                cfg: ExecConfig {
                    command,
                    name: name.clone(),
                    timeout: a.u64("timeout_ms").map_or(DEFAULT_TIMEOUT, Duration::from_millis),
                    workdir: Some(workdir.clone()),
                    env: a.fields("env"),
                },
                name,
                params: a.fields("params"),
            })
        })
        .collect()
}

/// Replays one run's stream through a fresh child told `config`'s shape,
/// the run and its hash seed: `incr` batches of every event (value 1), then
/// `get` batches of every seen key, in rank order.
pub fn replay_exec(
    workload: &Workload,
    entry: &Entry,
    config: EstimatorConfig,
    run: u32,
    workload_seed: u64,
    hash_seed: u64,
) -> Result<CellOutcome> {
    let mut fields = vec![
        ("hashes".to_string(), config.hashes.to_string()),
        ("slots".to_string(), config.slots.to_string()),
        ("variant".to_string(), config.variant.name().to_string()),
        ("keys".to_string(), workload.key_space().to_string()),
        ("seed".to_string(), hash_seed.to_string()),
        ("run".to_string(), run.to_string()),
        ("name".to_string(), entry.name.clone()),
    ];
    fields.extend(entry.params.iter().cloned());
    let fields: Vec<(&str, String)> = fields
        .iter()
        .map(|(k, v)| (k.as_str(), v.clone()))
        .collect();
    let mut est = ExecEstimator::start(entry.cfg.clone(), &fields)?;
    // A key's string, for a child that asked for them: its name from the
    // trace or counts file, else its id in decimal.
    let name = |k: u32| workload.key_text(k as usize).into_owned();
    let mut buf: Vec<(u32, i64)> = Vec::with_capacity(BATCH);
    let (truth, failed) = count_until_error(workload, workload_seed, |k| {
        buf.push((k, 1));
        if buf.len() < BATCH {
            return Ok(());
        }
        let sent = est
            .name_keys(&buf, &name)
            .and_then(|()| est.incr_batch(&buf));
        buf.clear();
        sent
    });
    if let Some(e) = failed {
        return Err(e);
    }
    if !buf.is_empty() {
        est.name_keys(&buf, &name)?;
        est.incr_batch(&buf)?;
    }
    let order = rank_order(&truth);
    let mut estimate = vec![0i64; truth.len()];
    let mut got = Vec::with_capacity(BATCH);
    for chunk in order.chunks(BATCH) {
        got.clear();
        est.get_batch(chunk, &mut got)?;
        for (&k, &v) in chunk.iter().zip(&got) {
            estimate[k as usize] = v;
        }
    }
    est.finish()?;
    let errors = errors_by_rank(&truth, &order, |k| estimate[k]);
    Ok(outcome_of(&truth, errors, config.slots, None))
}

/// Every entry's rows: one per config, each over `runs` runs on the
/// model's streams (the same workload seed per run). Cells run one after
/// another (each is a process of its own).
pub fn exec_rows(
    scenario: &Scenario,
    workload: &Workload,
    configs: &[EstimatorConfig],
    runs: u32,
    seed: u64,
    list: &[Map<String, Value>],
) -> Result<Vec<Row>> {
    let mut out = Vec::new();
    for entry in entries(scenario, list)? {
        let mut outcomes = Vec::with_capacity(configs.len() * runs as usize);
        for &config in configs {
            for r in 0..runs {
                let run_seed = derive_seed(seed, &[u64::from(r)]);
                let o = replay_exec(
                    workload,
                    &entry,
                    config,
                    r,
                    derive_seed(run_seed, &[stream::WORKLOAD]),
                    derive_seed(run_seed, &[stream::HASH]),
                )
                .map_err(|e| scenario.field_error(&entry.place, e.to_string()))?;
                outcomes.push(o);
            }
        }
        for mut row in rows(configs, runs, &outcomes) {
            row.backend = Backend::Exec;
            row.label = Some(entry.name.clone());
            out.push(row);
        }
    }
    Ok(out)
}
