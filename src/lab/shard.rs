//! Splitting a sweep across processes or machines: `--shard i/n` and
//! `ratelab merge`.
//!
//! A sweep's cells are (shape, run) pairs numbered `k = shape * runs + run`.
//! Shard `i` of `n` replays the cells with `k mod n == i` (round-robin, so every
//! shard gets a share of every shape, and cheap and costly shapes spread out)
//! and writes `<out>/<name>.shard-i-of-n.json`: the raw outcome of each cell
//! (floats as IEEE-754 bit patterns, so nothing is rounded on the way), the
//! scenario itself, the seed and runs, and an identity hash of all three plus
//! the ratelab version, and a content hash of the identity, the shard index
//! and every cell (so an edited cell is refused). `ratelab merge` checks that every shard 0..n of one
//! identity is there exactly once, puts the cells back in order and renders
//! the report with the same code as an unsharded run: the folder is byte for
//! byte the one `ratelab run` writes.
//!
//! A `decision_accuracy` scenario splits by key instead: shard `i` replays
//! the requests of the keys with [`key_shard`]` == i` and carries per-key
//! tallies (see the decision module's `split`); the same file format
//! carries them, with the same identity and content hashes.
//!
//! Any other kind (and a decision scenario with a `deployment`) runs whole
//! on shard 0 and is skipped on the other shards, so `reproduce --shard i/n`
//! covers every scenario.

mod cells;
pub mod part;

use super::decision::split::DecisionPart;
use super::estimator_accuracy;
use super::RunContext;
use crate::error::{Error, Result};
use crate::report::Output;
use crate::scenario::Scenario;
use crate::sizing::limit::SizePart;
use crate::workload::counts::WorkloadSummary;
use cells::{collect_cells, CellRecord};
pub use part::{key_shard, parse_shard, Shard, KEY_SPLIT_SEED};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// The `format` field of shard files.
pub const FORMAT: &str = "ratelab-shard/4";
/// Largest shard file read (a sweep cell takes a few KB).
pub const MAX_SHARD_BYTES: u64 = 512 << 20;

/// The kind whose sweep cells this module replays and merges (its registry
/// row is marked [`KindRow::as_sweep`](super::KindRow::as_sweep); a test
/// in [`crate::kinds`] keeps the two in step).
const SWEEP: &str = "estimator_accuracy";

/// Whether a kind's cells can be split across shards.
pub fn is_sweep(kind: &str) -> bool {
    kind == SWEEP
}

/// The kind whose requests split by key.
const BY_KEY: &str = "decision_accuracy";

/// Whether `--shard` splits a scenario (a sweep by cell, a decision
/// scenario without a fleet by key); the others run whole on shard 0.
pub fn splits(scenario: &Scenario) -> bool {
    is_sweep(&scenario.common.kind)
        || (scenario.common.kind == BY_KEY && super::decision::split::splits(scenario))
}

/// The scenario as one JSON object (common fields, then the kind's params).
fn scenario_value(scenario: &Scenario) -> Value {
    let c = &scenario.common;
    let mut m = serde_json::Map::new();
    m.insert("name".into(), c.name.clone().into());
    m.insert("kind".into(), c.kind.clone().into());
    m.insert("description".into(), c.description.clone().into());
    m.insert("seed".into(), c.seed.into());
    if let Some(r) = c.runs {
        m.insert("runs".into(), r.into());
    }
    if let Some(e) = &c.expect {
        m.insert("expect".into(), e.clone());
    }
    if let Some(t) = &c.tolerance {
        m.insert("tolerance".into(), t.clone());
    }
    if let Some(l) = &c.look_at {
        m.insert("look_at".into(), l.clone().into());
    }
    for (k, v) in &scenario.params {
        m.insert(k.clone(), v.clone());
    }
    Value::Object(m)
}

/// Hash of everything that decides a sweep's cells: the scenario, the
/// effective seed and runs, and the ratelab version.
fn identity(scenario: &Value, seed: u64, runs: u32, shards: u32) -> String {
    let v = json!({
        "format": FORMAT,
        "scenario": scenario,
        "seed": seed,
        "runs": runs,
        "shards": shards,
        "ratelab_version": env!("CARGO_PKG_VERSION"),
    });
    format!(
        "xxh3:{:016x}",
        xxhash_rust::xxh3::xxh3_64(v.to_string().as_bytes())
    )
}

/// A shard file.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ShardFile {
    format: String,
    scenario: String,
    kind: String,
    identity: String,
    shard: u32,
    shards: u32,
    scheme: String,
    seed: u64,
    runs: u32,
    ratelab_version: String,
    scenario_path: String,
    scenario_json: Value,
    first: Option<WorkloadSummary>,
    cells: Vec<CellRecord>,
    /// A decision scenario's shard (split by key; no cells).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    decision: Option<DecisionPart>,
    /// A `size --limit` shard: its replays of the walk's shapes on its seeds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    size: Option<SizePart>,
    /// Hash of the identity, the shard index, `first`, the cells and the
    /// decision part.
    content: String,
}

/// The content hash of a shard: its identity, index, workload facts and cells.
fn content_hash(
    identity: &str,
    shard: u32,
    first: &Option<WorkloadSummary>,
    cells: &[CellRecord],
    decision: &Option<DecisionPart>,
    size: &Option<SizePart>,
) -> Result<String> {
    let mut v = json!({"identity": identity, "shard": shard, "first": first, "cells": cells});
    // Hashed from their bytes: a big part is not built as a JSON tree.
    let hash = |bytes: serde_json::Result<Vec<u8>>| {
        bytes
            .map(|b| format!("xxh3:{:016x}", xxhash_rust::xxh3::xxh3_64(&b)))
            .map_err(|e| Error::internal(format!("cannot serialise a shard: {e}")))
    };
    if let Some(d) = decision {
        v["decision"] = hash(serde_json::to_vec(d))?.into();
    }
    if let Some(c) = size {
        v["size"] = hash(serde_json::to_vec(c))?.into();
    }
    Ok(format!(
        "xxh3:{:016x}",
        xxhash_rust::xxh3::xxh3_64(v.to_string().as_bytes())
    ))
}

const SCHEME: &str = "cell k = shape_index * runs + run goes to shard k mod shards";

const KEY_SCHEME: &str = "key k goes to shard xxh3_64_with_seed(k, 0x72617465_6c616200) mod shards; the c-th candidate whose keys share state runs on shard c mod shards over every key";

const SIZE_SCHEME: &str = "every shard runs the first-seed bisection, then explores each mode's verification walk on the fresh seeds with index r where (r - 1) mod shards = shard, on the whole trace, then its share of the first-seed replays through the model; merge reads the bisection, assembles each verification from the seeds, picks and confirms with the parts' model replays";

/// Runs `shard`'s part of a scenario that splits ([`splits`]): a sweep's
/// cells, or a decision scenario's keys. Returns the shard file's bytes
/// and what it holds, in a few words ("8 sweep cells").
pub fn run_shard(scenario: &Scenario, ctx: &RunContext, shard: Shard) -> Result<(Vec<u8>, String)> {
    if !splits(scenario) {
        return Err(Error::input_at(
            &scenario.path,
            "field kind",
            format!(
                "value {:?}: only estimator_accuracy sweeps and decision_accuracy scenarios without a deployment can be split with --shard",
                scenario.common.kind
            ),
        ));
    }
    let (runs, first, cells, decision, what, scheme) = if is_sweep(&scenario.common.kind) {
        let (runs, first, cells) =
            estimator_accuracy::run_cells(scenario, ctx, |k| shard.owns(k), shard.index == 0)?;
        let cells: Vec<CellRecord> = cells.iter().map(|(k, o)| CellRecord::new(*k, o)).collect();
        let what = format!("{} sweep cells", cells.len());
        (runs, first, cells, None, what, SCHEME)
    } else {
        let (part, what) = super::decision::split::run_shard(scenario, ctx, shard)?;
        (1, None, Vec::new(), Some(part), what, KEY_SCHEME)
    };
    let sv = scenario_value(scenario);
    let id = identity(&sv, ctx.seed, runs, shard.count);
    let content = content_hash(&id, shard.index, &first, &cells, &decision, &None)?;
    let file = ShardFile {
        format: FORMAT.into(),
        scenario: scenario.common.name.clone(),
        kind: scenario.common.kind.clone(),
        identity: id,
        shard: shard.index,
        shards: shard.count,
        scheme: scheme.into(),
        seed: ctx.seed,
        runs,
        ratelab_version: env!("CARGO_PKG_VERSION").into(),
        scenario_path: scenario.path.display().to_string(),
        scenario_json: sv,
        first,
        cells,
        decision,
        size: None,
        content,
    };
    let mut bytes = serde_json::to_vec(&file)
        .map_err(|e| Error::internal(format!("cannot serialise a shard: {e}")))?;
    bytes.push(b'\n');
    Ok((bytes, what))
}

fn read_shard(path: &Path) -> Result<ShardFile> {
    let bytes = crate::report::pending::read_bounded(path, MAX_SHARD_BYTES, "a shard file")?;
    let value: Value = crate::strict_json::from_slice(&bytes).map_err(|e| {
        Error::input_at(
            path,
            format!("line {} column {}", e.line(), e.column()),
            "malformed JSON: expected a ratelab shard file",
        )
    })?;
    if value.get("format").and_then(Value::as_str) != Some(FORMAT) {
        return Err(Error::input_at(
            path,
            "field format",
            format!("expected {FORMAT:?} (a file written by `ratelab run --shard i/n`)"),
        ));
    }
    let file: ShardFile = crate::scenario::from_value(path, value)?;
    if file.ratelab_version != env!("CARGO_PKG_VERSION") {
        return Err(Error::input_at(
            path,
            "field ratelab_version",
            format!(
                "value {:?}: merge with the ratelab that wrote the shards ({})",
                file.ratelab_version,
                env!("CARGO_PKG_VERSION")
            ),
        ));
    }
    if file.identity != identity(&file.scenario_json, file.seed, file.runs, file.shards) {
        return Err(Error::input_at(
            path,
            "field identity",
            "does not match the scenario, seed and runs in the file (edited by hand?)",
        ));
    }
    // `scenario`, `kind` and `scheme` are written from the scenario the
    // identity covers: a file whose copies disagree was edited, and merge
    // groups by `scenario` and picks the merger by `kind`.
    let sj = |k: &str| file.scenario_json.get(k).and_then(Value::as_str);
    for (field, value, want) in [
        ("scenario", &file.scenario, sj("name")),
        ("kind", &file.kind, sj("kind")),
    ] {
        if want != Some(value.as_str()) {
            return Err(Error::input_at(
                path,
                format!("field {field}"),
                format!(
                    "value {value:?}: the file's scenario_json says {} (edited by hand?)",
                    want.map_or("nothing".to_string(), |w| format!("{w:?}"))
                ),
            ));
        }
    }
    let scheme = if file.kind == BY_KEY {
        KEY_SCHEME
    } else if file.kind == SIZE_KIND {
        SIZE_SCHEME
    } else {
        SCHEME
    };
    if file.scheme != scheme {
        return Err(Error::input_at(
            path,
            "field scheme",
            format!(
                "value {:?}: a {} shard is split as {scheme:?} (edited by hand?)",
                file.scheme, file.kind
            ),
        ));
    }
    if file.shards == 0 || file.shard >= file.shards {
        return Err(Error::input_at(
            path,
            "field shard",
            format!(
                "value {} of {}: expected 0 <= shard < shards",
                file.shard, file.shards
            ),
        ));
    }
    let (by_key, sizing) = (file.kind == BY_KEY, file.kind == SIZE_KIND);
    let parts = (
        !file.cells.is_empty() || file.first.is_some(),
        file.decision.is_some(),
        file.size.is_some(),
    );
    let fits = match parts {
        (_, false, false) => !by_key && !sizing,
        (false, true, false) => by_key,
        (false, false, true) => sizing,
        _ => false,
    };
    if !fits {
        return Err(Error::input_at(
            path,
            "field kind",
            format!(
                "value {:?}: its shard carries {}",
                file.kind,
                if by_key {
                    "a decision part, no cells"
                } else if sizing {
                    "a size part, no cells"
                } else {
                    "cells, no decision or size part"
                }
            ),
        ));
    }
    if file.content
        != content_hash(
            &file.identity,
            file.shard,
            &file.first,
            &file.cells,
            &file.decision,
            &file.size,
        )?
    {
        return Err(Error::input_at(
            path,
            "field content",
            "does not match the cells in the file (edited by hand?)",
        ));
    }
    for c in &file.cells {
        c.validate(path)?;
    }
    Ok(file)
}

/// Merges shard files (of one or several scenarios) into reports, in the
/// order of the scenarios' first files.
pub fn merge(files: &[PathBuf]) -> Result<Vec<(Scenario, Output)>> {
    match merge_files(files, super::DEFAULT_MAX_MEMORY)? {
        Merged::Reports(r) => Ok(r),
        Merged::Size(_) => Err(Error::input(
            "size shards: merge them with `ratelab merge`, which writes the size folder",
        )),
    }
}

/// What a set of shard files merges to.
pub enum Merged {
    /// Scenario reports, in the order of the scenarios' first files.
    Reports(Vec<(Scenario, Output)>),
    /// The shards of one `size --limit` job, checked: the sizing still to run.
    Size(SizeShards),
}

/// The shards of one `size --limit --shard` job: its arguments and every
/// shard's exact verdicts, checked to be one job's shards 0..n, each once.
pub struct SizeShards {
    /// The `size` arguments (without --shard, --out, --threads, --no-progress).
    pub argv: Vec<String>,
    /// Each shard's file and part, in shard order.
    pub parts: Vec<(PathBuf, Shard, SizePart)>,
}

/// Reads, checks and merges shard files: scenario shards into reports, or
/// the shards of one `size` job (alone: they write `--out` itself). A
/// decision scenario whose merged per-key tallies would take more than
/// `max_memory` is refused before they are built.
pub fn merge_files(files: &[PathBuf], max_memory: u64) -> Result<Merged> {
    let mut groups: Vec<(String, Vec<(PathBuf, ShardFile)>)> = Vec::new();
    for path in files {
        let f = read_shard(path)?;
        match groups.iter_mut().find(|(name, _)| *name == f.scenario) {
            Some((_, v)) => v.push((path.clone(), f)),
            None => groups.push((f.scenario.clone(), vec![(path.clone(), f)])),
        }
    }
    if let Some(i) = groups
        .iter()
        .position(|(_, g)| g.iter().any(|(_, f)| f.kind == SIZE_KIND))
    {
        if groups.len() > 1 {
            let (path, _) = &groups[if i == 0 { 1 } else { 0 }].1[0];
            return Err(Error::input_at(
                path,
                "field scenario",
                "a scenario's shard merged with size shards: merge a size job's shards on their own (they write the size folder at --out)",
            ));
        }
        let mut shards = groups.remove(0).1;
        check_set(&mut shards)?;
        let argv = shards[0]
            .1
            .scenario_json
            .get("argv")
            .and_then(|a| serde_json::from_value::<Vec<String>>(a.clone()).ok())
            .ok_or_else(|| {
                Error::input_at(
                    &shards[0].0,
                    "field scenario_json.argv",
                    "missing: expected the size arguments",
                )
            })?;
        let parts = shards
            .into_iter()
            .map(|(p, f)| {
                let sh = Shard {
                    index: f.shard,
                    count: f.shards,
                };
                (p, sh, f.size.unwrap_or_default())
            })
            .collect();
        return Ok(Merged::Size(SizeShards { argv, parts }));
    }
    groups
        .into_iter()
        .map(|(_, shards)| {
            // The merged report says what it shows as the unsharded run does.
            merge_one(shards, max_memory).map(|(sc, mut out)| {
                crate::report::findings::finish(&mut out);
                (sc, out)
            })
        })
        .collect::<Result<_>>()
        .map(Merged::Reports)
}

/// The `kind` of a `size --limit` shard.
pub const SIZE_KIND: &str = "size_limit";

/// A `size --limit --shard` shard file: the job's arguments (its
/// identity), its seed, and the exact verdicts of the shard's keys.
pub fn size_shard_bytes(
    argv: &[String],
    seed: u64,
    shard: Shard,
    part: SizePart,
) -> Result<Vec<u8>> {
    let sv = json!({"name": "size", "kind": SIZE_KIND, "argv": argv});
    let id = identity(&sv, seed, 1, shard.count);
    let size = Some(part);
    let content = content_hash(&id, shard.index, &None, &[], &None, &size)?;
    let file = ShardFile {
        format: FORMAT.into(),
        scenario: "size".into(),
        kind: SIZE_KIND.into(),
        identity: id,
        shard: shard.index,
        shards: shard.count,
        scheme: SIZE_SCHEME.into(),
        seed,
        runs: 1,
        ratelab_version: env!("CARGO_PKG_VERSION").into(),
        scenario_path: String::new(),
        scenario_json: sv,
        first: None,
        cells: Vec::new(),
        decision: None,
        size,
        content,
    };
    let mut bytes = serde_json::to_vec(&file)
        .map_err(|e| Error::internal(format!("cannot serialise a shard: {e}")))?;
    bytes.push(b'\n');
    Ok(bytes)
}

/// Checks that `shards` are one identity's shards `0..n`, each once, and
/// sorts them by index.
fn check_set(shards: &mut [(PathBuf, ShardFile)]) -> Result<()> {
    shards.sort_by_key(|(_, f)| f.shard);

    let (first_path, head) = &shards[0];
    for (path, f) in &shards[1..] {
        if f.identity != head.identity {
            return Err(Error::input_at(
                path,
                "field identity",
                format!(
                    "{} differs from {} in {}: shards of a different scenario, seed, runs or shard count cannot be merged",
                    f.identity,
                    head.identity,
                    first_path.display()
                ),
            ));
        }
    }
    let n = head.shards;
    for w in shards.windows(2) {
        if w[0].1.shard == w[1].1.shard {
            return Err(Error::input_at(
                &w[1].0,
                "field shard",
                format!(
                    "shard {} given twice (also {})",
                    w[1].1.shard,
                    w[0].0.display()
                ),
            ));
        }
    }
    // The indexes are sorted, distinct and below n: the set is whole when
    // there are n of them. Otherwise name the first few missing, found by
    // walking the files (a file may claim billions of shards: never walk 0..n).
    let total = u64::from(n) - shards.len() as u64;
    if total > 0 {
        const SHOWN: usize = 5;
        let mut missing = Vec::new();
        let mut next = 0u64;
        for p in shards
            .iter()
            .map(|(_, f)| u64::from(f.shard))
            .chain([u64::from(n)])
        {
            while next < p && missing.len() < SHOWN {
                missing.push(format!("{next}/{n}"));
                next += 1;
            }
            if missing.len() == SHOWN {
                break;
            }
            next = p + 1;
        }
        let more = total - missing.len() as u64;
        return Err(Error::input(format!(
            "{}: missing shard(s) {}{} of {n}",
            head.scenario,
            missing.join(", "),
            if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            }
        )));
    }
    Ok(())
}

fn merge_one(mut shards: Vec<(PathBuf, ShardFile)>, max_memory: u64) -> Result<(Scenario, Output)> {
    check_set(&mut shards)?;
    let n = shards[0].1.shards;
    let (shard0_path, shard0) = &shards[0];
    let runs = shard0.runs;
    let scenario = Scenario::parse(
        Path::new(&shard0.scenario_path),
        &shard0.scenario_json.to_string(),
    )?;
    if shard0.decision.is_some() {
        let parts: Vec<super::decision::split::ShardRef> = shards
            .iter()
            .filter_map(|(p, f)| f.decision.as_ref().map(|d| (p.as_path(), f.shard, d)))
            .collect();
        let out = super::decision::split::merge(&scenario, shard0.seed, &parts, n, max_memory)?;
        return Ok((scenario, out));
    }
    let first = shard0.first.ok_or_else(|| {
        Error::input_at(
            shard0_path,
            "field first",
            "missing: shard 0 must carry the workload facts",
        )
    })?;
    let outcomes = collect_cells(&shards, n, &shard0.scenario)?;
    let ctx = RunContext {
        seed: shard0.seed,
        runs: Some(runs),
        max_memory: u64::MAX,
        max_work: f64::INFINITY,
        progress: false,
        decisions: None,
        replay: crate::lab::ReplayMode::Auto,
    };
    let mut out = estimator_accuracy::merge_output(&scenario, &ctx, runs, first, &outcomes)?;
    out.json["schema"] = crate::report::SCHEMA.into();
    Ok((scenario, out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shard_specs() {
        assert_eq!(parse_shard("0/4"), Ok(Shard { index: 0, count: 4 }));
        assert_eq!(parse_shard("3/4"), Ok(Shard { index: 3, count: 4 }));
        assert!(parse_shard("4/4").is_err());
        assert!(parse_shard("0/0").is_err());
        assert!(parse_shard("1").is_err());
        assert!(parse_shard("a/b").is_err());
        let s = Shard { index: 1, count: 3 };
        assert!(s.owns(1) && s.owns(4) && !s.owns(3));
        assert_eq!(s.file_name("x"), "x.shard-1-of-3.json");
    }

    #[test]
    fn the_key_split_is_stable_and_even() {
        // Pinned: a key's shard must not change between builds, machines
        // or versions (logs pre-split by it, shards of two machines).
        for (key, h) in [
            ("10.0.0.1", 0xabb9_250b_a3c2_6c0d_u64),
            ("alice", 0x9842_9cf9_08f3_7efe),
            ("abuser-3", 0xcbf8_f1b6_e7ba_082c),
            ("205", 0xf483_be7e_a9d7_e251),
        ] {
            for n in [1u32, 2, 3, 4, 7] {
                assert_eq!(key_shard(key, n), (h % u64::from(n)) as u32, "{key} {n}");
            }
        }
        assert_eq!(key_shard("abuser-3", 3), 2);
        // Every key on exactly one shard, and about a quarter on each.
        let mut per = [0u32; 4];
        for k in 0..10_000 {
            let key = format!("10.{}.{}.7", k / 250, k % 250);
            let owners: Vec<u32> = (0..4)
                .filter(|&i| Shard { index: i, count: 4 }.owns_key(&key))
                .collect();
            assert_eq!(owners.len(), 1, "{key}");
            per[owners[0] as usize] += 1;
        }
        assert!(per.iter().all(|&c| (2300..2700).contains(&c)), "{per:?}");
    }
}
