//! Where the decision lab's requests come from: a seeded timed workload or
//! a trace file streamed from disk, as (virtual time, dense key id, weight).

use super::{Params, PER_KEY_BYTES};
use crate::clock::Nanos;
use crate::error::Result;
use crate::lab::shard::part::Shard;
use crate::lab::RunContext;
use crate::rng::{derive_seed, stream};
use crate::scenario::Scenario;
use crate::workload::timed::TimedWorkload;
use crate::workload::trace::parts::PartPlan;
use crate::workload::trace::{KeyCap, TraceOptions, TraceReader};

/// How a shard reads the source: which keys are its own, and whether the
/// other shards' keys get ids too (a shard that replays a shared-state
/// candidate over every key needs them).
#[derive(Debug, Clone, Copy)]
pub(super) struct Split {
    pub(super) shard: Shard,
    pub(super) all_keys: bool,
}

/// A shard of a directory trace ([`crate::workload::trace::parts`]): it
/// reads its own partitions' files (every file when it replays a
/// shared-state candidate), and its keys are those of its own files.
pub(super) struct PartSource {
    pub(super) plan: PartPlan,
    /// Per file of the plan: one of this shard's own.
    pub(super) own_file: Vec<bool>,
    /// Every file was read (a shard that replays a shared-state candidate).
    pub(super) all: bool,
    /// The earliest time of the files not read (u64::MAX: none).
    floor: Nanos,
    /// Per key id: its first event's (time since the whole trace's first,
    /// file, place among that file's events): its place in the stream of
    /// the whole directory.
    pub(super) first_at: Vec<(Nanos, u32, u64)>,
    /// Per key id: the file it first appeared in.
    key_file: Vec<u32>,
}

/// The event source: a seeded workload or a trace, as dense key ids.
///
/// With a key split (`run --shard i/n`), a request whose key belongs to
/// another shard comes out as `None` instead of a key id unless
/// `Split::all_keys`: it still counts in the traffic totals, but its key
/// is never interned, so a shard's memory is its own keys'. Either way an
/// access log's line of another shard's key is read only as far as its
/// time, key and weight.
pub(super) enum Source {
    Workload {
        events: crate::workload::timed::TimedEvents,
        /// The shard kept, if any.
        split: Option<Split>,
        /// Per workload key id: 0 not yet hashed, 1 this shard's, 2 another's.
        owner: Vec<u8>,
    },
    Trace {
        /// Hands out keys as ids in order of first appearance, interned
        /// from the reader's borrowed line (a `String` per line was a
        /// quarter of a replay) or while an access log is parsed; capped
        /// at the most distinct keys before the per-key state passes
        /// --max-memory.
        reader: Box<TraceReader>,
        t0: Option<Nanos>,
        /// Requests read so far (an empty trace is refused at its end).
        seen: u64,
        /// Per key id: the index of the request it first appeared in.
        first_seen: Vec<u64>,
        /// The shard kept with every key's id, if any; per key id, whether
        /// it is the shard's own.
        split: Option<Shard>,
        own: Vec<bool>,
        /// A directory trace split by partition: what the shard read.
        parts: Option<Box<PartSource>>,
    },
    /// A trace read whole to be validated against the deployed limiter's
    /// answers ([`super::validation`]), handed out in arrival order.
    Loaded {
        trace: Box<super::validation::Loaded>,
        /// The next event.
        pos: usize,
    },
    /// The keys of merged shards (`ratelab merge`), by dense id: names
    /// only, nothing is read.
    Merged {
        names: Vec<String>,
        note: Option<String>,
    },
}

impl Source {
    /// The scenario's source: its `workload`, or its `trace` opened; with
    /// `split`, only that shard's keys get ids (or every key, telling its
    /// own: [`Source::owns`]).
    pub(super) fn open(
        scenario: &Scenario,
        p: &Params,
        ctx: &RunContext,
        split: Option<Split>,
        shared: Option<&crate::workload::trace::input::SharedInput>,
    ) -> Result<Self> {
        // A shard of a directory trace: its partitions' files.
        if let (None, Some(t), Some(sp), None) = (&p.workload, &p.trace, split, shared)
            && !super::validation::wanted(t)
            && let Some(plan) = PartPlan::of(&trace_path(scenario, t))?
        {
            return open_part(scenario, t, ctx, sp, plan);
        }
        Ok(match (&p.workload, &p.trace) {
            (Some(w), _) => Source::Workload {
                events: w.events(derive_seed(ctx.seed, &[stream::WORKLOAD])),
                split,
                owner: Vec::new(),
            },
            (None, Some(t)) if super::validation::wanted(t) => {
                let (_, spec) = trace_reading(scenario, t, ctx.seed)?;
                let keys = usize::try_from(ctx.max_memory / PER_KEY_BYTES)
                    .unwrap_or(usize::MAX)
                    .min(u32::MAX as usize);
                Source::Loaded {
                    trace: Box::new(super::validation::load(scenario, t, spec.as_ref(), keys)?),
                    pos: 0,
                }
            }
            (None, Some(t)) => {
                // The trace is read once: when a fleet's balancer reads its
                // replicas from it too, both read the one opened input.
                let input = shared.map(|s| s.input());
                let mut reader = open_trace(scenario, t, ctx.seed, None, input)?;
                if let Some(Split { shard, all_keys }) = split {
                    // Another shard's lines are read only as far as their
                    // time, key and weight.
                    let owns = std::sync::Arc::new(move |k: &str| shard.owns_key(k));
                    reader.set_key_filter(owns, all_keys);
                }
                reader.intern_keys(KeyCap {
                    // Ids are u32 whatever the cap.
                    keys: usize::try_from(ctx.max_memory / PER_KEY_BYTES)
                        .unwrap_or(usize::MAX)
                        .min(u32::MAX as usize),
                    bytes_per_key: PER_KEY_BYTES,
                });
                Source::Trace {
                    reader: Box::new(reader),
                    t0: None,
                    seen: 0,
                    first_seen: Vec::new(),
                    split: split.filter(|s| s.all_keys).map(|s| s.shard),
                    own: Vec::new(),
                    parts: None,
                }
            }
            (None, None) => return Err(scenario.field_error("workload", "missing")),
        })
    }

    /// Charges every distinct key of a trace `extra` bytes more (the state
    /// a fleet grid keeps for it): the key cap shrinks so that a trace with
    /// too many keys for the fleets stops at the first key over
    /// `--max-memory`, not once the memory is in use. Before any read.
    pub(super) fn charge_keys(&mut self, ctx: &RunContext, extra: u64) {
        if let Source::Trace { reader, .. } = self {
            let per = PER_KEY_BYTES.saturating_add(extra);
            reader.intern_keys(KeyCap {
                keys: usize::try_from(ctx.max_memory / per)
                    .unwrap_or(usize::MAX)
                    .min(u32::MAX as usize),
                bytes_per_key: per,
            });
        }
    }

    /// The next request: (time since the first, key id, weight); the key
    /// id is None for a key another shard owns.
    pub(super) fn next(&mut self) -> Option<Result<(Nanos, Option<u32>, u64)>> {
        match self {
            Source::Workload {
                events,
                split,
                owner,
            } => events.next().map(|(t, k)| {
                let id = k as u32;
                let Some(s) = split else {
                    return Ok((t, Some(id), 1));
                };
                let i = id as usize;
                if i >= owner.len() {
                    owner.resize(i + 1, 0);
                }
                if owner[i] == 0 {
                    owner[i] = if s.shard.owns_key(&id.to_string()) {
                        1
                    } else {
                        2
                    };
                }
                Ok((t, (s.all_keys || owner[i] == 1).then_some(id), 1))
            }),
            Source::Merged { .. } => None,
            Source::Loaded { trace, pos } => {
                let &(t, k, w) = trace.events.get(*pos)?;
                *pos += 1;
                Some(Ok((t - trace.events[0].0, Some(k), w)))
            }
            Source::Trace {
                reader,
                t0,
                seen,
                first_seen,
                split,
                own,
                parts,
            } => {
                let (t, id, w) = match reader.next_id() {
                    Some(Ok(e)) => e,
                    Some(Err(e)) => return Some(Err(e)),
                    None if *seen == 0 => {
                        *seen = 1;
                        return Some(Err(reader.file_error(
                            "no requests: an empty trace (or only a header) has nothing to decide",
                        )));
                    }
                    None => return None,
                };
                *seen += 1;
                let floor = parts.as_ref().map_or(Nanos::MAX, |p| p.floor);
                let start = *t0.get_or_insert(t.min(floor));
                let Some(id) = id else {
                    // Another shard's key (the reader's filter).
                    return Some(Ok((t - start, None, w)));
                };
                if let Some(ps) = parts {
                    let (file, place) = reader.last_part().unwrap_or((0, 0));
                    if id as usize == ps.first_at.len() {
                        ps.first_at.push((t - start, file, place));
                        ps.key_file.push(file);
                        own.push(ps.own_file[file as usize]);
                    } else {
                        let was = ps.key_file[id as usize];
                        if ps.plan.part_of[was as usize] != ps.plan.part_of[file as usize] {
                            return Some(Err(two_parts(
                                &ps.plan,
                                reader.key_name(id).unwrap_or_default(),
                                was,
                                file,
                            )));
                        }
                    }
                }
                if id as usize == first_seen.len() {
                    first_seen.push(*seen - 1);
                    if let Some(s) = split {
                        own.push(s.owns_key(reader.key_name(id).unwrap_or_default()));
                    }
                }
                Some(Ok((t - start, Some(id), w)))
            }
        }
    }

    /// Whether key `id` is this shard's own (every key without a split).
    pub(super) fn owns(&self, id: u32) -> bool {
        match self {
            Source::Workload {
                split: Some(_),
                owner,
                ..
            } => owner.get(id as usize) == Some(&1),
            Source::Trace {
                split: Some(_),
                own,
                ..
            }
            | Source::Trace {
                parts: Some(_),
                own,
                ..
            } => own.get(id as usize) == Some(&true),
            _ => true,
        }
    }

    /// How the trace was read, when it was more than a plain CSV or JSON
    /// Lines file (format, key, spread, late lines skipped).
    pub(super) fn note(&self) -> Option<String> {
        match self {
            Source::Workload { .. } => None,
            Source::Trace { reader, .. } => {
                let d = reader.describe();
                (d != "csv" && d != "jsonl").then_some(d)
            }
            Source::Merged { note, .. } => note.clone(),
            Source::Loaded { trace, .. } => Some(trace.read.clone()),
        }
    }

    pub(super) fn name(&self, id: u32) -> String {
        match self {
            Source::Workload { .. } => id.to_string(),
            Source::Trace { reader, .. } => reader.key_name(id).unwrap_or_default().to_string(),
            Source::Merged { names, .. } => names.get(id as usize).cloned().unwrap_or_default(),
            Source::Loaded { trace, .. } => trace.keys.name(id).unwrap_or_default().to_string(),
        }
    }

    pub(super) fn id_of(&self, key: &str) -> Option<u32> {
        match self {
            Source::Workload { .. } => key.parse().ok(),
            Source::Trace { reader, .. } => reader.key_id(key),
            Source::Merged { names, .. } => names.iter().position(|n| n == key).map(|i| i as u32),
            Source::Loaded { trace, .. } => trace.keys.get(key),
        }
    }

    /// Where key `id` comes in the whole stream's key order: the index of
    /// the request it first appeared in (a trace), or its own id (a
    /// workload, whose ids are the workload's). Merged shards put their
    /// keys back in this order, which is the unsharded run's id order.
    pub(super) fn order(&self, id: u32) -> u64 {
        match self {
            Source::Trace { first_seen, .. } => {
                first_seen.get(id as usize).copied().unwrap_or(u64::MAX)
            }
            Source::Loaded { trace, .. } => trace
                .first_seen
                .get(id as usize)
                .copied()
                .unwrap_or(u64::MAX),
            _ => u64::from(id),
        }
    }

    /// A directory trace's shard: what it read.
    pub(super) fn parts(&self) -> Option<&PartSource> {
        match self {
            Source::Trace { parts, .. } => parts.as_deref(),
            _ => None,
        }
    }

    /// Unix time (ns) of virtual time zero once a request has been read: a
    /// trace's times are absolute, so its first request's; a workload
    /// starts at `epoch`.
    pub(super) fn origin(&self, epoch: Nanos) -> Nanos {
        match self {
            Source::Workload { .. } | Source::Merged { .. } => epoch,
            Source::Trace { t0, .. } => t0.unwrap_or(0),
            Source::Loaded { trace, .. } => trace.events.first().map_or(0, |e| e.0),
        }
    }

    /// The trace being validated, if any.
    pub(super) fn validated(&self) -> Option<&super::validation::Loaded> {
        match self {
            Source::Loaded { trace, .. } => Some(trace),
            _ => None,
        }
    }
}

/// Opens the scenario's trace as the lab reads it (unit, reordering,
/// spread seeded from `seed`, access-log format). `key`: read this column
/// or field as the key instead (a fleet's `from_trace` balancer reads the
/// replica that served each request from the same lines, in the same
/// order). `input`: the trace already opened (shared with another
/// reader of the same pass), else it is opened here.
pub(super) fn open_trace(
    scenario: &Scenario,
    t: &crate::workload::trace::TraceSpec,
    seed: u64,
    key: Option<&str>,
    input: Option<crate::workload::trace::input::Input>,
) -> Result<TraceReader> {
    let (opts, spec) = trace_reading(scenario, t, seed)?;
    let path = trace_path(scenario, t);
    let mut spec = spec;
    if let (Some(k), Some(s)) = (key, spec.as_mut()) {
        s.key = Some(k.to_string());
    }
    if input.is_none()
        && key.is_none()
        && let Some(plan) = PartPlan::of(&path)?
    {
        // A directory: every file, read as one trace.
        let all: Vec<usize> = (0..plan.files.len()).collect();
        return TraceReader::open_parts(&plan, &all, opts, spec.as_ref());
    }
    let input = match input {
        Some(i) => i,
        None => crate::workload::trace::input::open_input(&path)?,
    };
    let mut reader = TraceReader::from_input_with(&path, input, opts, spec.as_ref())?;
    if let (Some(k), None) = (key, &spec) {
        reader.set_key_column(k);
    }
    Ok(reader)
}

/// Opens shard `shard`'s part of a directory trace: its own partitions'
/// files (every file when it replays a shared-state candidate), its clock
/// started where the whole trace starts.
fn open_part(
    scenario: &Scenario,
    t: &crate::workload::trace::TraceSpec,
    ctx: &RunContext,
    Split { shard, all_keys }: Split,
    plan: PartPlan,
) -> Result<Source> {
    let own = plan.files_of_shard(shard.index, shard.count)?;
    let mut own_file = vec![false; plan.files.len()];
    for &f in &own {
        own_file[f] = true;
    }
    let (opts, spec) = trace_reading(scenario, t, ctx.seed)?;
    let which: Vec<usize> = if all_keys {
        (0..plan.files.len()).collect()
    } else {
        own
    };
    let others: Vec<usize> = (0..plan.files.len())
        .filter(|f| !which.contains(f))
        .collect();
    // Where the whole trace starts: the files not read start
    // no earlier than their first event.
    let floor = crate::workload::trace::parts::first_time(&plan, &others, opts, spec.as_ref())?
        .unwrap_or(Nanos::MAX);
    let mut reader = TraceReader::open_parts(&plan, &which, opts, spec.as_ref())?;
    reader.intern_keys(key_cap(ctx));
    Ok(Source::Trace {
        reader: Box::new(reader),
        t0: None,
        seen: 0,
        first_seen: Vec::new(),
        split: None,
        own: Vec::new(),
        parts: Some(Box::new(PartSource {
            plan,
            own_file,
            all: all_keys,
            floor,
            first_at: Vec::new(),
            key_file: Vec::new(),
        })),
    })
}

/// The key cap of a trace's reader: the most distinct keys whose per-key
/// state fits --max-memory (ids are u32 whatever the cap).
fn key_cap(ctx: &RunContext) -> KeyCap {
    KeyCap {
        keys: usize::try_from(ctx.max_memory / PER_KEY_BYTES)
            .unwrap_or(usize::MAX)
            .min(u32::MAX as usize),
        bytes_per_key: PER_KEY_BYTES,
    }
}

/// The error for a key met in two partitions of a directory trace.
fn two_parts(plan: &PartPlan, key: &str, a: u32, b: u32) -> crate::error::Error {
    crate::error::Error::input(format!(
        "{}: key {key:?} is in two partitions: {} and {}: a shard reads only its partitions, so a key must stay in one (partition by a hash of the key)",
        plan.root.display(),
        plan.name(a as usize),
        plan.name(b as usize)
    ))
}

/// How the lab reads the scenario's trace ([`super::checks::trace_reading`]),
/// an error naming the scenario's field.
fn trace_reading(
    scenario: &Scenario,
    t: &crate::workload::trace::TraceSpec,
    seed: u64,
) -> Result<(TraceOptions, Option<crate::workload::trace::LogSpec>)> {
    super::checks::trace_reading(t, seed).map_err(|e| scenario.field_error(e.field, e.message))
}

/// The file a scenario's trace names (relative to the scenario), or `-`.
pub(super) fn trace_path(
    scenario: &Scenario,
    t: &crate::workload::trace::TraceSpec,
) -> std::path::PathBuf {
    if crate::workload::trace::input::is_stdin(std::path::Path::new(&t.path)) {
        std::path::PathBuf::from("-")
    } else {
        scenario.resolve(&t.path)
    }
}

/// The first flash crowd in `w`: (key id, start s, duration s).
pub(super) fn find_flash(w: &TimedWorkload, offset: u64) -> Option<(u64, f64, f64)> {
    find_flashes(w, offset).into_iter().next()
}

/// Every flash crowd of the workload, in order: (key id, start s,
/// duration s), key ids counted from `offset` as in [`find_flash`].
pub(super) fn find_flashes(w: &TimedWorkload, offset: u64) -> Vec<(u64, f64, f64)> {
    match w {
        TimedWorkload::FlashCrowd {
            flash_start_s,
            flash_duration_s,
            ..
        } => vec![(
            offset + w.key_space() - 1,
            *flash_start_s,
            *flash_duration_s,
        )],
        TimedWorkload::Mix { parts } => {
            let mut off = offset;
            let mut all = Vec::new();
            for p in parts {
                all.extend(find_flashes(p, off));
                off += p.key_space();
            }
            all
        }
        _ => Vec::new(),
    }
}
