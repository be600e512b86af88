//! Where the decision lab's requests come from: a seeded timed workload or
//! a trace file streamed from disk, as (virtual time, dense key id, weight).

use super::{Params, PER_KEY_BYTES};
use crate::clock::{Nanos, MILLI};
use crate::error::Result;
use crate::lab::RunContext;
use crate::rng::{derive_seed, stream};
use crate::scenario::Scenario;
use crate::workload::timed::TimedWorkload;
use crate::workload::trace::{Disorder, TimeUnit, TraceOptions, TraceReader};
use std::collections::HashMap;

/// The event source: a seeded workload or a trace, as dense key ids.
pub(super) enum Source {
    Workload(crate::workload::timed::TimedEvents),
    Trace {
        reader: Box<TraceReader>,
        /// Key → id, with a fixed-seed ahash (SipHash was 5% of a replay;
        /// the map's order is never observed, ids follow first appearance).
        ids: HashMap<String, u32, ahash::RandomState>,
        names: Vec<String>,
        t0: Option<Nanos>,
        /// Most distinct keys before the per-key state passes --max-memory.
        max_keys: usize,
    },
}

impl Source {
    /// The scenario's source: its `workload`, or its `trace` opened.
    pub(super) fn open(scenario: &Scenario, p: &Params, ctx: &RunContext) -> Result<Self> {
        Ok(match (&p.workload, &p.trace) {
            (Some(w), _) => Source::Workload(w.events(derive_seed(ctx.seed, &[stream::WORKLOAD]))),
            (None, Some(t)) => {
                let unit = match &t.unit {
                    Some(u) => u
                        .parse::<TimeUnit>()
                        .map_err(|m| scenario.field_error("trace.unit", m))?,
                    None => TimeUnit::Ns,
                };
                let opts = TraceOptions {
                    unit,
                    disorder: match t.sort_window_ms {
                        Some(ms) => Disorder::SortWithin(ms.saturating_mul(MILLI)),
                        None => Disorder::Reject,
                    },
                    max_buffered: None,
                };
                Source::Trace {
                    reader: Box::new(TraceReader::open(&scenario.resolve(&t.path), opts)?),
                    ids: HashMap::with_hasher(ahash::RandomState::with_seeds(1, 2, 3, 4)),
                    names: Vec::new(),
                    t0: None,
                    // Ids are u32 whatever the cap.
                    max_keys: usize::try_from(ctx.max_memory / PER_KEY_BYTES)
                        .unwrap_or(usize::MAX)
                        .min(u32::MAX as usize),
                }
            }
            (None, None) => return Err(scenario.field_error("workload", "missing")),
        })
    }

    pub(super) fn next(&mut self) -> Option<Result<(Nanos, u32, u64)>> {
        match self {
            Source::Workload(ev) => ev.next().map(|(t, k)| Ok((t, k as u32, 1))),
            Source::Trace {
                reader,
                ids,
                names,
                t0,
                max_keys,
            } => {
                let e = match reader.next()? {
                    Ok(e) => e,
                    Err(e) => return Some(Err(e)),
                };
                let start = *t0.get_or_insert(e.t_ns);
                let id = match ids.get(&e.key) {
                    Some(&id) => id,
                    None => {
                        if names.len() >= *max_keys {
                            return Some(Err(reader.line_error(format!(
                                "key {:?} is distinct key number {}: the per-key state of more keys would pass the memory cap ({} bytes a key; raise it with --max-memory)",
                                e.key,
                                names.len() + 1,
                                PER_KEY_BYTES
                            ))));
                        }
                        let id = names.len() as u32;
                        names.push(e.key.clone());
                        ids.insert(e.key, id);
                        id
                    }
                };
                Some(Ok((e.t_ns - start, id, e.weight)))
            }
        }
    }

    pub(super) fn name(&self, id: u32) -> String {
        match self {
            Source::Workload(_) => id.to_string(),
            Source::Trace { names, .. } => names.get(id as usize).cloned().unwrap_or_default(),
        }
    }

    pub(super) fn id_of(&self, key: &str) -> Option<u32> {
        match self {
            Source::Workload(_) => key.parse().ok(),
            Source::Trace { ids, .. } => ids.get(key).copied(),
        }
    }

    /// Offset making aligned windows multiples of the interval since the epoch.
    pub(super) fn align(&self, interval: Nanos) -> Nanos {
        match self {
            Source::Workload(_) => 0,
            Source::Trace { t0, .. } => t0.unwrap_or(0) % interval,
        }
    }
}

/// The first flash crowd in `w`: (key id, start s, duration s).
pub(super) fn find_flash(w: &TimedWorkload, offset: u64) -> Option<(u64, f64, f64)> {
    match w {
        TimedWorkload::FlashCrowd {
            flash_start_s,
            flash_duration_s,
            ..
        } => Some((
            offset + w.key_space() - 1,
            *flash_start_s,
            *flash_duration_s,
        )),
        TimedWorkload::Mix { parts } => {
            let mut off = offset;
            for p in parts {
                if let Some(f) = find_flash(p, off) {
                    return Some(f);
                }
                off += p.key_space();
            }
            None
        }
        _ => None,
    }
}
