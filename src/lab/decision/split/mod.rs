//! A decision scenario split by key (`run --shard i/n`), and its shards
//! merged back into the unsharded report (`ratelab merge`).
//!
//! Every shard reads the whole trace or workload (so it knows the totals,
//! the first request's time and each key's place in the stream), but only
//! the requests of its own keys ([`Shard::owns_key`]: a seeded xxh3 of the
//! key's string) go through the exact limiters, the tallies and every
//! candidate whose keys are independent
//! ([`crate::model::Admit::keys_independent`]). Each key's requests are
//! then all on one shard and in time order, so what they decide is what the
//! unsharded run decides; every figure of the report is a sum or a maximum
//! over requests or keys, or the watched key's (on its shard only).
//!
//! A candidate whose keys share state (a count-min sketch, pingora's
//! windows that flip for all keys, nginx's LRU zone, one tower instance, a
//! child process) cannot be split by key: the c-th of them (in table
//! order) is replayed over every request by shard `c mod n` ([`holder`]),
//! in the same pass as that shard's own keys, and every request is then
//! judged by its exact limiters (the truth the candidate is compared
//! with). Its cost is not divided, only spread: a shard holding one reads
//! every key; a scenario listing only per-key candidates splits evenly. A
//! scenario with a `deployment` (a fleet of replicas) is not split at all:
//! it runs whole on shard 0.
//!
//! A shard carries, per key of its own, the key's string, its place in the
//! stream (the request it first appeared in; a workload key's id) and its
//! requests, and per tally the key's denied and wrong counts: `merge` puts
//! the keys back in stream order, which is the unsharded run's key ids, so
//! the tie-breaks (the worst key is the first of the most wrong) come out
//! the same.

mod merge;
pub(crate) use merge::merge;

use super::candidates::Scope;
use super::param_grid::Args;
use super::pass::Lab;
use super::tally::{Tally, TallyPart};
use super::{
    find_flash, prepare, render, unseen_watch, Candidate, Params, Prepared, Source, Split,
};
use super::{BINS, ONSET_BINS};
use crate::clock::Nanos;
use crate::error::{Error, Result};
use crate::lab::shard::part::Shard;
use crate::lab::RunContext;
use crate::model::{Admit, Decision};
use crate::report::Output;
use crate::scenario::Scenario;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// A decision scenario's shard, as its shard file carries it.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct DecisionPart {
    /// Requests read, whatever their key (the same on every shard).
    requests: u64,
    /// Their weight.
    weight: u64,
    /// The last request's time since the first.
    duration_ns: Nanos,
    /// Unix time of the first request (a trace) or the workload's epoch.
    #[serde(default)]
    origin_ns: Nanos,
    /// How the trace was read (access-log format, key, spread...).
    note: Option<String>,
    /// Every candidate, in table order.
    candidates: Vec<CandidateRecord>,
    /// This shard's keys.
    keys: KeyList,
    /// The exact sliding log's tally, the aligned window's, then each
    /// per-key candidate's (table order), over this shard's keys.
    tallies: Vec<TallyPart>,
    /// What the watched key offered per timeline and onset bin (zero but on
    /// its shard).
    offered: Vec<u64>,
    offered_onset: Vec<u64>,
    /// The watched key, on the shard that owns it.
    watched: Option<String>,
    /// The candidates whose keys share state that this shard holds
    /// ([`holder`]), over every key (None: it holds none).
    shared: Option<SharedPart>,
    /// A directory trace split by partition: its files and which this
    /// shard read (None: the trace or workload split by key hash). The
    /// totals above are then this shard's files' (every file's when it
    /// read them all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    parts: Option<PartsRecord>,
}

/// A directory trace's files as a shard saw them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct PartsRecord {
    /// Every file, below the directory, in the plan's order.
    files: Vec<String>,
    /// The shard each file's partition goes to.
    shard_of: Vec<u32>,
    /// This shard read every file (it replays a shared-state candidate),
    /// not only its own.
    all: bool,
}

/// A candidate's label and what its shard says about it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct CandidateRecord {
    name: String,
    family: String,
    /// What it is: its model row, resolved arguments and scope (the
    /// charts read these).
    model: String,
    args: Args,
    scope: Scope,
    /// Its keys share state: it ran over every request on the shard that
    /// holds it ([`holder`]).
    shared: bool,
    /// Memory the model reports for what this shard gave it (a per-key
    /// candidate's memory is its keys' state: the shards' sum).
    memory_bytes: u64,
}

/// Keys, one column per field.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct KeyList {
    /// The index of the request the key first appeared in (a trace), or
    /// the workload's key id.
    order: Vec<u64>,
    /// The key's string.
    name: Vec<String>,
    /// Its requests.
    requests: Vec<u32>,
    /// A directory trace's shard: the key's first time (since the whole
    /// trace's first request) and file (an index into the files); `order`
    /// is then its place among that file's events.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    first_ns: Vec<u64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    file: Vec<u32>,
}

impl KeyList {
    /// Key `i`'s place in the whole stream, as merged shards sort keys:
    /// (request index, 0, 0), or a directory trace's (first time, file,
    /// place in the file).
    fn place(&self, i: usize) -> (u64, u32, u64) {
        match (self.first_ns.get(i), self.file.get(i)) {
            (Some(&t), Some(&f)) => (t, f, self.order[i]),
            _ => (self.order[i], 0, 0),
        }
    }

    /// Whether the per-key columns are all as long as `order`.
    fn consistent(&self) -> bool {
        let n = self.order.len();
        let dir = self.first_ns.is_empty() && self.file.is_empty()
            || self.first_ns.len() == n && self.file.len() == n;
        self.name.len() == n && self.requests.len() == n && dir
    }
}

/// The candidates whose keys share state, run over every key.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct SharedPart {
    keys: KeyList,
    /// Each shared candidate's tally (table order).
    tallies: Vec<TallyPart>,
}

/// The shard that replays shared-state candidate `c` (numbered in table
/// order among the shared-state ones) when the run is split `n` ways:
/// `c mod n`, so that no shard carries all of them.
pub(crate) fn holder(c: usize, n: u32) -> u32 {
    (c % n.max(1) as usize) as u32
}

/// The keys a pass saw (in id order) and their ids: this shard's own, or
/// (`all`) every key read.
fn key_list(lab: &Lab, all: bool) -> (KeyList, Vec<u32>) {
    let ids: Vec<u32> = (0..lab.per_key_requests.len() as u32)
        .filter(|&k| lab.per_key_requests[k as usize] > 0 && (all || lab.source.owns(k)))
        .collect();
    let mut list = KeyList {
        order: ids.iter().map(|&k| lab.source.order(k)).collect(),
        name: ids.iter().map(|&k| lab.source.name(k)).collect(),
        requests: ids
            .iter()
            .map(|&k| lab.per_key_requests[k as usize])
            .collect(),
        first_ns: Vec::new(),
        file: Vec::new(),
    };
    if let Some(p) = lab.source.parts() {
        let at = |k: u32| p.first_at[k as usize];
        list.order = ids.iter().map(|&k| at(k).2).collect();
        list.first_ns = ids.iter().map(|&k| at(k).0).collect();
        list.file = ids.iter().map(|&k| at(k).1).collect();
    }
    (list, ids)
}

/// Whether a decision scenario splits by key: not with a `deployment`, nor
/// with a trace validated against the deployed limiter (read whole).
pub(crate) fn splits(scenario: &Scenario) -> bool {
    let validated = scenario
        .params
        .get("trace")
        .and_then(|t| t.as_object())
        .is_some_and(|t| {
            ["outcome", "time_is", "duration"]
                .iter()
                .any(|f| t.contains_key(*f))
        });
    !scenario.params.contains_key("deployment") && !validated
}

/// Runs shard `shard` of a decision scenario; returns its part and a line
/// saying what it did.
///
/// One pass: the per-key candidates decide this shard's own keys'
/// requests; the shared-state candidates this shard holds ([`holder`])
/// decide every request, which then has every key interned and judged by
/// the exact limiters (tallied for the own keys only). A shard that holds
/// none reads the other shards' keys only as far as to know they are not
/// its own.
pub(crate) fn run_shard(
    scenario: &Scenario,
    ctx: &RunContext,
    shard: Shard,
) -> Result<(DecisionPart, String)> {
    if ctx.decisions.is_some() {
        return Err(Error::input(
            "--decisions with --shard: a shard decides only its own keys' requests; write the decisions from an unsharded run",
        ));
    }
    let Prepared {
        p,
        cands,
        fleets,
        origin,
    } = prepare(scenario, ctx, Vec::new())?;
    let cands = cands.into_inner();
    if fleets.is_some() {
        return Err(scenario.field_error(
            "deployment",
            "a fleet's replicas share state across keys: it runs whole, without --shard",
        ));
    }
    let mut records = Vec::new();
    // The candidates this shard runs, each with its record's index and
    // whether it sees only the own keys (a per-key one).
    let mut run: Vec<Candidate> = Vec::new();
    let mut at: Vec<(usize, bool)> = Vec::new();
    let (mut per_key, mut shared, mut held) = (0, 0, 0);
    for c in cands {
        let s = !c.limiter.keys_independent();
        records.push(CandidateRecord {
            name: c.name.clone(),
            family: c.family.clone(),
            model: c.model.clone(),
            args: c.args.clone(),
            scope: c.scope,
            shared: s,
            memory_bytes: 0,
        });
        if s {
            shared += 1;
            if holder(shared - 1, shard.count) != shard.index {
                continue;
            }
            held += 1;
        } else {
            per_key += 1;
        }
        at.push((records.len() - 1, !s));
        run.push(c);
    }
    let split = Split {
        shard,
        all_keys: held > 0,
    };
    let source = Source::open(scenario, &p, ctx, Some(split), None)?;
    let mut lab = Lab::new(std::sync::Arc::clone(&p), source, run.len());
    lab.origin = origin;
    lab.names_wanted = run.iter().any(|c| c.limiter.wants_key_names());
    lab.own_only = at.iter().map(|&(_, own)| own).collect();
    lab.replay(&mut run, None, ctx.progress(0, &scenario.common.name))?;
    for c in run.iter_mut() {
        c.limiter.finish()?;
    }
    // A directory trace's shard cannot tell another's key from one never
    // seen: merge says when no shard saw the watched key.
    if let (Some(w), None, None) = (&p.watch, lab.watch_id, lab.source.parts())
        && shard.owns_key(&w.key)
    {
        return Err(unseen_watch(scenario, w));
    }
    let (keys, ids) = key_list(&lab, false);
    let mut tallies = vec![lab.oracle.part(&ids), lab.fixed_oracle.part(&ids)];
    let (own_seen, all_seen) = (lab.own_keys_seen(), lab.keys_seen());
    for ((c, &(r, own)), t) in run.iter().zip(&at).zip(&lab.tallies) {
        records[r].memory_bytes = c
            .limiter
            .memory_bytes(if own { own_seen } else { all_seen });
        if own {
            tallies.push(t.part(&ids));
        }
    }
    let shared_part = (held > 0).then(|| {
        let (keys, ids) = key_list(&lab, true);
        SharedPart {
            keys,
            tallies: lab
                .tallies
                .iter()
                .zip(&at)
                .filter(|(_, (_, own))| !own)
                .map(|(t, _)| t.part(&ids))
                .collect(),
        }
    });
    let watched = lab
        .watch_id
        .filter(|&k| lab.source.owns(k))
        .map(|k| lab.source.name(k));
    let parts = lab.source.parts().map(|ps| PartsRecord {
        files: (0..ps.plan.files.len()).map(|f| ps.plan.name(f)).collect(),
        shard_of: ps
            .plan
            .part_of
            .iter()
            .map(|&p| ps.plan.shard_of_part(p as usize, shard.count))
            .collect(),
        all: ps.all,
    });
    let part = DecisionPart {
        requests: lab.requests,
        weight: lab.weight_total,
        duration_ns: lab.duration_ns,
        origin_ns: lab.origin.get(),
        note: lab.source.note(),
        candidates: records,
        keys,
        tallies,
        offered: lab.offered.clone(),
        offered_onset: lab.offered_onset.clone(),
        watched,
        shared: shared_part,
        parts,
    };
    let own: u64 = part.keys.requests.iter().map(|&r| u64::from(r)).sum();
    let read = match lab.source.parts() {
        None => format!("{own} of {} requests", part.requests),
        Some(ps) => {
            let mut mine: Vec<u32> = (0..ps.plan.files.len())
                .filter(|&f| ps.own_file[f])
                .map(|f| ps.plan.part_of[f])
                .collect();
            mine.dedup();
            let parts = format!("{} of {} partitions", mine.len(), ps.plan.parts.len());
            if ps.all {
                format!(
                    "{own} of {} requests (its {parts}; every partition read)",
                    part.requests
                )
            } else {
                format!("{own} requests from {parts} (only their files read)")
            }
        }
    };
    let mut line = format!(
        "{} keys, {read}, through {per_key} per-key candidates",
        part.keys.order.len(),
    );
    if shared > 0 {
        line = if held > 0 {
            format!("{line}; every request through {held} of {shared} shared-state candidates")
        } else {
            format!("{line} ({shared} shared-state candidates: on other shards)")
        };
    }
    Ok((part, line))
}

/// A merged candidate: its label and memory, nothing to decide.
struct Recorded(u64);

impl Admit for Recorded {
    fn admit(&mut self, _key: u32, _w: u64, _now: Nanos) -> Result<Decision> {
        Err(Error::internal(
            "a merged shard's candidate decides nothing",
        ))
    }
    fn memory_bytes(&self, _keys: u64) -> u64 {
        self.0
    }
}

/// One shard as `merge` sees it: its file, its index, its part.
pub(crate) type ShardRef<'a> = (&'a Path, u32, &'a DecisionPart);
