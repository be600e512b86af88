//! Where the decision lab's requests come from: a seeded timed workload or
//! a trace file streamed from disk, as (virtual time, dense key id, weight).

use super::{Params, PER_KEY_BYTES};
use crate::clock::{Nanos, MILLI};
use crate::error::Result;
use crate::lab::RunContext;
use crate::rng::{derive_seed, stream};
use crate::scenario::Scenario;
use crate::workload::timed::TimedWorkload;
use crate::workload::trace::{Disorder, KeyInterner, Spread, TimeUnit, TraceOptions, TraceReader};

/// The event source: a seeded workload or a trace, as dense key ids.
pub(super) enum Source {
    Workload(crate::workload::timed::TimedEvents),
    Trace {
        reader: Box<TraceReader>,
        /// Key → id in order of first appearance, interned from the
        /// reader's borrowed line (a `String` per line was a quarter of a
        /// replay); capped at the most distinct keys before the per-key
        /// state passes --max-memory.
        ids: KeyInterner,
        t0: Option<Nanos>,
        /// Requests read so far (an empty trace is refused at its end).
        seen: u64,
    },
}

impl Source {
    /// The scenario's source: its `workload`, or its `trace` opened.
    pub(super) fn open(scenario: &Scenario, p: &Params, ctx: &RunContext) -> Result<Self> {
        Ok(match (&p.workload, &p.trace) {
            (Some(w), _) => Source::Workload(w.events(derive_seed(ctx.seed, &[stream::WORKLOAD]))),
            (None, Some(t)) => {
                let reader = open_trace(scenario, t, ctx.seed, None)?;
                Source::Trace {
                    reader: Box::new(reader),
                    // Ids are u32 whatever the cap.
                    ids: KeyInterner::with_cap(
                        usize::try_from(ctx.max_memory / PER_KEY_BYTES)
                            .unwrap_or(usize::MAX)
                            .min(u32::MAX as usize),
                    ),
                    t0: None,
                    seen: 0,
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
                t0,
                seen,
            } => {
                let (t, key, w) = match reader.next_ref() {
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
                let start = *t0.get_or_insert(t);
                let Some(id) = ids.intern(key) else {
                    let msg = format!(
                        "key {key:?} is distinct key number {}: the per-key state of more keys would pass the memory cap ({} bytes a key; raise it with --max-memory)",
                        ids.len() + 1,
                        PER_KEY_BYTES
                    );
                    return Some(Err(reader.line_error(msg)));
                };
                Some(Ok((t - start, id, w)))
            }
        }
    }

    /// How the trace was read, when it was more than a plain CSV or JSON
    /// Lines file (format, key, spread, late lines skipped).
    pub(super) fn note(&self) -> Option<String> {
        match self {
            Source::Workload(_) => None,
            Source::Trace { reader, .. } => {
                let d = reader.describe();
                (d != "csv" && d != "jsonl").then_some(d)
            }
        }
    }

    pub(super) fn name(&self, id: u32) -> String {
        match self {
            Source::Workload(_) => id.to_string(),
            Source::Trace { ids, .. } => ids.name(id).unwrap_or_default().to_string(),
        }
    }

    pub(super) fn id_of(&self, key: &str) -> Option<u32> {
        match self {
            Source::Workload(_) => key.parse().ok(),
            Source::Trace { ids, .. } => ids.get(key),
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

/// Opens the scenario's trace as the lab reads it (unit, reordering,
/// spread seeded from `seed`, access-log format). `key`: read this column
/// or field as the key instead (a fleet's `from_trace` balancer reads the
/// replica that served each request from the same lines, in the same
/// order).
pub(super) fn open_trace(
    scenario: &Scenario,
    t: &super::TraceSpec,
    seed: u64,
    key: Option<&str>,
) -> Result<TraceReader> {
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
        skip_late: t.skip_late,
        spread: match &t.spread {
            Some(s) => Some(
                s.parse::<Spread>()
                    .map_err(|m| scenario.field_error("trace.spread", m))?,
            ),
            None => None,
        },
        spread_seed: derive_seed(seed, &[stream::WORKLOAD]),
    };
    let spec = t.log_spec().map_err(|(f, m)| scenario.field_error(f, m))?;
    let path = if crate::workload::trace::input::is_stdin(std::path::Path::new(&t.path)) {
        std::path::PathBuf::from("-")
    } else {
        scenario.resolve(&t.path)
    };
    if spec.is_none() && t.spread.is_some() {
        return Err(scenario.field_error(
            "trace.spread",
            "applies to access logs with whole-second times (trace.format combined, common, nginx, cloudfront)",
        ));
    }
    let mut spec = spec;
    if let (Some(k), Some(s)) = (key, spec.as_mut()) {
        s.key = Some(k.to_string());
    }
    let mut reader = TraceReader::open_with(&path, opts, spec.as_ref())?;
    if let (Some(k), None) = (key, &spec) {
        reader.set_key_column(k);
    }
    Ok(reader)
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
