//! One pass over a decision run's requests: batches read from the source,
//! judged by the exact limiters (sliding log and aligned window) while every
//! candidate decides the previous batch, each tally kept for the report.

use super::*;
use crate::model::Decision;
use crate::oracle::limiters::{AlignedWindowLimiter, SlidingLogLimiter};
use crate::progress::Progress;
use group::{group_by_key, Grouped};
use rayon::prelude::*;
use std::sync::Arc;
use tally::{Limits, Request, Tally};

/// The state of one pass over the requests: the exact limiters, every
/// candidate's tally, and what the report needs about the traffic. It owns
/// what it reads (the parameters are shared with the plan), so a finished
/// pass is the run's outcome, rendered later
/// ([`Experiment::render`](crate::lab::Experiment::render)).
pub(super) struct Lab {
    pub(super) p: Arc<Params>,
    pub(super) source: Source,
    pub(super) tallies: Vec<Tally>,
    /// The exact sliding log's own tally.
    pub(super) oracle: Tally,
    /// The exact aligned window's tally (compared with the sliding log).
    pub(super) fixed_oracle: Tally,
    /// What the watched key offered, per timeline bin.
    pub(super) offered: Vec<u64>,
    /// What the watched key offered, per onset bin.
    pub(super) offered_onset: Vec<u64>,
    pub(super) requests: u64,
    pub(super) weight_total: u64,
    pub(super) per_key_requests: Vec<u32>,
    pub(super) duration_ns: Nanos,
    pub(super) watch_id: Option<u32>,
    pub(super) watch_from: Option<Nanos>,
    /// The workload's flash crowd: (key id, start s, duration s).
    pub(super) flash: Option<(u64, f64, f64)>,
    /// Start of the timeline and width of a bin.
    pub(super) t_lo: Nanos,
    pub(super) bin_w: Nanos,
    /// Some candidate wants each new key's string
    /// ([`crate::model::Admit::wants_key_names`]).
    pub(super) names_wanted: bool,
    /// Per candidate: it decides only this shard's own keys' requests
    /// (a shard that also replays a shared-state candidate over every
    /// key; empty: every candidate sees every request read).
    pub(super) own_only: Vec<bool>,
    /// Unix time of virtual time zero: the trace's first request, or the
    /// workload's epoch; set at the first request read, before any
    /// candidate decides (the candidates' models hold the same handle).
    pub(super) origin: Origin,
    /// Per candidate: agreement with the deployed limiter's answers (empty
    /// unless the trace is validated).
    pub(super) validation: Vec<validation::Agreement>,
}

impl Lab {
    pub(super) fn new(p: Arc<Params>, source: Source, candidates: usize) -> Self {
        let interval_ns = p.policy.interval_ms * MILLI;
        // The watched key: explicit, else the workload's flash crowd.
        let flash = p.workload.as_ref().and_then(|w| find_flash(w, 0));
        let watch_from: Option<Nanos> = match (&p.watch, flash) {
            (Some(w), _) => Some((w.from_s * SECOND as f64).round() as Nanos),
            (None, Some((_, s, _))) => Some((s * SECOND as f64).round() as Nanos),
            _ => None,
        };
        let watch_id: Option<u32> = match (&p.watch, flash) {
            (Some(w), _) => source.id_of(&w.key),
            (None, Some((k, _, _))) => Some(k as u32),
            _ => None,
        };
        // The flash crowd the report names beside the watched key: the
        // watched key's own (by key, else by its start), not the
        // workload's first when another key is watched.
        let flash = match &p.watch {
            Some(w) => {
                let all = p
                    .workload
                    .as_ref()
                    .map(|wl| find_flashes(wl, 0))
                    .unwrap_or_default();
                all.iter()
                    .find(|f| Some(f.0 as u32) == watch_id)
                    .or_else(|| all.iter().find(|f| f.1 == w.from_s))
                    .copied()
            }
            None => flash,
        };
        Lab {
            p,
            source,
            tallies: (0..candidates)
                .map(|_| Tally::with_bins(BINS as usize, ONSET_BINS as usize))
                .collect(),
            oracle: Tally::with_bins(BINS as usize, ONSET_BINS as usize),
            fixed_oracle: Tally::default(),
            offered: vec![0; BINS as usize],
            offered_onset: vec![0; ONSET_BINS as usize],
            requests: 0,
            weight_total: 0,
            per_key_requests: Vec::new(),
            duration_ns: 0,
            watch_id,
            watch_from,
            flash,
            t_lo: watch_from
                .map(|f| f.saturating_sub(2 * interval_ns))
                .unwrap_or(0),
            bin_w: (interval_ns / 4).max(1),
            names_wanted: false,
            own_only: Vec::new(),
            origin: Origin::default(),
            validation: Vec::new(),
        }
    }

    /// The policy as the trackers need it.
    pub(super) fn limits(&self) -> Limits {
        Limits {
            limit: self.p.policy.limit,
            interval: self.p.policy.interval_ms * MILLI,
        }
    }

    /// Streams every request through the exact limiters (one batch at a
    /// time) and each batch through the candidates (in parallel: each
    /// candidate's state is its own, so the result does not depend on the
    /// thread count). The next batch is read and judged by the exact
    /// limiters while the candidates work on the current one, so the serial
    /// part (the source, the trace's parsing, the oracles) overlaps the
    /// parallel one instead of leaving a core idle.
    pub(super) fn replay(
        &mut self,
        cands: &mut [Candidate],
        mut decisions: Option<&mut StreamingFile>,
        progress: Progress,
    ) -> Result<()> {
        let probe = self.source.validated().is_some();
        if probe {
            self.validation = cands
                .iter()
                .map(|c| validation::Agreement::new(c.limiter.checks_clock_step()))
                .collect();
        }
        // Validation compares decisions in time order.
        let keep = decisions.is_some() || probe;
        let mut steps: Vec<Vec<bool>> = cands.iter().map(|_| Vec::new()).collect();
        let mut start = 0usize;
        let lim = self.limits();
        let mut oracles = Oracles {
            sliding: SlidingLogLimiter::new(lim.limit, lim.interval),
            aligned: AlignedWindowLimiter::new(lim.limit, lim.interval),
            align: None,
            progress,
        };
        let mut tallies = std::mem::take(&mut self.tallies);
        let mut batch = Batch::default();
        let mut next = Batch::default();
        let mut outs: Vec<Vec<Decision>> = cands.iter().map(|_| Vec::new()).collect();
        let own_only: Vec<bool> = (0..cands.len())
            .map(|i| self.own_only.get(i) == Some(&true))
            .collect();
        let mut read = self.fill(&mut batch, &mut oracles);
        while read.is_ok() && !batch.is_empty() {
            let (filled, done) = rayon::join(
                || self.fill(&mut next, &mut oracles),
                || {
                    evaluate(
                        cands,
                        &mut tallies,
                        (&mut outs, &mut steps),
                        &batch,
                        lim,
                        (keep, probe),
                        &own_only,
                    )
                },
            );
            // The batch's own failure first: the one a serial pass meets
            // first.
            done?;
            if let Some(l) = self.source.validated() {
                for ((a, out), st) in self.validation.iter_mut().zip(&outs).zip(&steps) {
                    for (i, d) in out.iter().enumerate() {
                        a.record(l, start + i, d.allowed, st.get(i) == Some(&true));
                    }
                }
            }
            start += batch.by_time.len();
            if let Some(f) = decisions.as_deref_mut() {
                self.write_decisions(f, &batch, cands, &outs)?;
            }
            read = filled;
            std::mem::swap(&mut batch, &mut next);
        }
        read?;
        self.tallies = tallies;
        oracles.progress.finish();
        Ok(())
    }

    /// Reads the next batch of requests (empty at the end), counts each in
    /// the traffic totals, groups them by key and has the exact limiters
    /// (per key, so grouping does not change what they decide) judge them.
    pub(super) fn fill(&mut self, batch: &mut Batch, o: &mut Oracles) -> Result<()> {
        let lim = self.limits();
        batch.clear();
        while batch.by_time.len() < BATCH {
            let Some(ev) = self.source.next() else {
                break;
            };
            let (t, k, w) = ev?;
            if o.align.is_none() {
                self.origin.set(self.source.origin(self.p.epoch_ns()));
                o.align = Some(self.origin.offset(lim.interval));
            }
            let Some(k) = k else {
                // Another shard's key: in the totals only.
                self.count_elsewhere(t, w);
                if self.requests.is_multiple_of(1 << 20) {
                    o.progress.inc(1 << 20);
                }
                continue;
            };
            if self.names_wanted {
                if self
                    .per_key_requests
                    .get(k as usize)
                    .is_none_or(|&c| c == 0)
                {
                    batch.new_keys.push((k, self.source.name(k)));
                }
                self.count(t, k, w);
            } else {
                // Counted per key below, grouped by key: in time order,
                // the per-key counts were a cache miss a request.
                self.count_elsewhere(t, w);
            }
            if self.requests.is_multiple_of(1 << 20) {
                o.progress.inc(1 << 20);
            }
            batch.by_time.push((k, w, t));
            batch.own.push(self.source.owns(k));
        }
        if self.watch_id.is_none()
            && let Some(wk) = &self.p.watch
        {
            // A key is named once it has been read: no earlier request
            // can carry its id.
            self.watch_id = self.source.id_of(&wk.key);
        }
        batch.group_by_key();
        let align = o.align.unwrap_or(0);
        for j in 0..batch.by_key.len() {
            let (k, w, t) = batch.by_key[j];
            if !self.names_wanted {
                self.count_key(k);
            }
            let truth = o.sliding.allow(k, w, t);
            let r = Request {
                key: k,
                t,
                w,
                truth,
                fixed_truth: o.aligned.allow(k, w, t + align),
                watched: self.watch_id == Some(k) && self.watch_from.is_some_and(|f| t >= f),
                bin: self.bin(k, t),
                onset_bin: self.onset_bin(k, t),
                is_watch: self.watch_id == Some(k),
                // Aligned to Unix time, as the aligned oracle's windows.
                window: u32::try_from((t + align) / lim.interval).unwrap_or(u32::MAX),
            };
            batch.requests.push(r);
            if !batch.own[batch.time_index[j] as usize] {
                // Another shard's key (read for a shared-state candidate):
                // judged, not tallied here.
                continue;
            }
            if let Some(b) = r.bin {
                self.offered[usize::from(b)] += w;
            }
            if let Some(b) = r.onset_bin {
                self.offered_onset[usize::from(b)] += w;
            }
            self.oracle.record(
                &Request {
                    fixed_truth: truth,
                    ..r
                },
                truth,
                lim,
            );
            self.fixed_oracle.record(
                &Request {
                    bin: None,
                    onset_bin: None,
                    ..r
                },
                r.fixed_truth,
                lim,
            );
        }
        if self.own_only.contains(&true) && batch.own.contains(&false) {
            batch.keep_own();
        } else {
            batch.mine = None;
        }
        Ok(())
    }

    /// One CSV line per request and candidate, in request order.
    pub(super) fn write_decisions(
        &self,
        f: &mut StreamingFile,
        batch: &Batch,
        cands: &[Candidate],
        done: &[Vec<Decision>],
    ) -> Result<()> {
        let names: Vec<String> = cands.iter().map(|c| csv_field(&c.name)).collect();
        for (i, &(k, _, t)) in batch.by_time.iter().enumerate() {
            let key = csv_field(&self.source.name(k));
            for (name, ds) in names.iter().zip(done) {
                let d = ds[i];
                writeln!(f, "{t},{key},{name},{},{}", d.allowed, d.delay)
                    .map_err(|e| Error::io(f.path(), e))?;
            }
        }
        Ok(())
    }

    /// Counts a request in the traffic totals.
    pub(super) fn count(&mut self, t: Nanos, k: u32, w: u64) {
        self.count_elsewhere(t, w);
        self.count_key(k);
    }

    /// Counts a request of key `k` in its key's total.
    fn count_key(&mut self, k: u32) {
        let ki = k as usize;
        if ki >= self.per_key_requests.len() {
            self.per_key_requests.resize(ki + 1, 0);
        }
        self.per_key_requests[ki] = self.per_key_requests[ki].saturating_add(1);
    }

    /// Counts a request in the traffic totals but not per key (another
    /// shard's key, which has no id here; or counted per key later).
    pub(super) fn count_elsewhere(&mut self, t: Nanos, w: u64) {
        self.requests += 1;
        self.weight_total += w;
        self.duration_ns = t;
    }

    /// The watched key's timeline bin of a request, if any.
    pub(super) fn bin(&self, k: u32, t: Nanos) -> Option<u8> {
        if self.watch_id == Some(k) && t >= self.t_lo {
            let b = (t - self.t_lo) / self.bin_w;
            (b < BINS).then_some(b as u8)
        } else {
            None
        }
    }

    /// Width of an onset bin and the onset's start, when a key is watched.
    pub(super) fn onset(&self) -> Option<(Nanos, Nanos)> {
        let from = self.watch_from?;
        let interval = self.p.policy.interval_ms * MILLI;
        let w = (interval / 50).max(1);
        Some((w, from.saturating_sub(interval)))
    }

    /// The watched key's onset bin of a request, if any.
    pub(super) fn onset_bin(&self, k: u32, t: Nanos) -> Option<u8> {
        let (w, start) = self.onset()?;
        if self.watch_id != Some(k) || t < start {
            return None;
        }
        let b = (t - start) / w;
        (b < ONSET_BINS).then_some(b as u8)
    }

    /// Distinct keys seen.
    pub(super) fn keys_seen(&self) -> u64 {
        self.per_key_requests.iter().filter(|&&c| c > 0).count() as u64
    }

    /// Distinct keys of this shard's own seen.
    pub(super) fn own_keys_seen(&self) -> u64 {
        (0..self.per_key_requests.len() as u32)
            .filter(|&k| self.per_key_requests[k as usize] > 0 && self.source.owns(k))
            .count() as u64
    }

    /// The watched key and when its abuse starts.
    pub(super) fn watch(&self) -> Option<(u32, Nanos)> {
        self.watch_id.zip(self.watch_from)
    }

    /// The watched key's name.
    pub(super) fn watch_name(&self) -> Option<String> {
        self.watch_id.map(|k| self.source.name(k))
    }
}

/// The exact limiters' state between batches, and the progress bar.
pub(super) struct Oracles {
    pub(super) sliding: SlidingLogLimiter,
    pub(super) aligned: AlignedWindowLimiter,
    /// Offset of the aligned windows (known at the first request).
    pub(super) align: Option<Nanos>,
    pub(super) progress: crate::progress::Progress,
}

/// One batch of requests, in time order and grouped by key.
///
/// Grouping is what makes a pass over many keys cache-friendly: every
/// per-key array (a tally's, a per-key limiter's, the exact limiters') is
/// then walked in key order instead of jumped about in, while each key's
/// own requests keep their time order. Only what is the same in either
/// order sees the grouped requests: the tallies, the exact limiters and the
/// candidates that say their keys are independent
/// ([`crate::model::Admit::keys_independent`]).
#[derive(Debug, Default)]
pub(super) struct Batch {
    /// `(key, weight, time)` in time order: what a candidate whose keys
    /// share state decides.
    pub(super) by_time: Vec<(u32, u64, Nanos)>,
    /// The same requests grouped by key (stable: time order within a key).
    pub(super) by_key: Vec<(u32, u64, Nanos)>,
    /// For each request of `by_key`, its index in `by_time`.
    pub(super) time_index: Vec<u32>,
    /// The requests of `by_key` as the tallies see them.
    pub(super) requests: Vec<Request>,
    /// Keys first seen in this batch and their strings, in order of first
    /// appearance (filled only when a candidate wants them).
    pub(super) new_keys: Vec<(u32, String)>,
    /// Per request of `by_time`: its key is this shard's own.
    pub(super) own: Vec<bool>,
    /// The requests of this shard's own keys only, when some are not
    /// (what a per-key candidate decides on a shard that reads every key).
    pub(super) mine: Option<Box<Batch>>,
    /// Sort scratch.
    order: Vec<u64>,
    /// The radix sort's other buffers.
    scratch: Grouped,
}

impl Batch {
    fn clear(&mut self) {
        self.by_time.clear();
        self.by_key.clear();
        self.time_index.clear();
        self.requests.clear();
        self.new_keys.clear();
        self.own.clear();
    }

    /// Fills `mine` with the requests of own keys, in the same orders.
    fn keep_own(&mut self) {
        let mut m = self.mine.take().unwrap_or_default();
        m.clear();
        m.order.clear();
        // Time index here -> time index in `mine`.
        m.order.extend(self.own.iter().scan(0u64, |n, &own| {
            let at = *n;
            *n += u64::from(own);
            Some(at)
        }));
        for (i, &r) in self.by_time.iter().enumerate() {
            if self.own[i] {
                m.by_time.push(r);
                m.own.push(true);
            }
        }
        for (j, &r) in self.by_key.iter().enumerate() {
            let i = self.time_index[j] as usize;
            if self.own[i] {
                m.by_key.push(r);
                m.time_index.push(m.order[i] as u32);
                m.requests.push(self.requests[j]);
            }
        }
        m.new_keys.extend(self.new_keys.iter().cloned());
        self.mine = Some(m);
    }

    fn is_empty(&self) -> bool {
        self.by_time.is_empty()
    }

    /// Fills `by_key` and `time_index` from `by_time`.
    fn group_by_key(&mut self) {
        group_by_key(
            &self.by_time,
            (&mut self.by_key, &mut self.time_index),
            &mut self.scratch,
        );
    }
}

/// Every candidate's decisions on `batch`, tallied (in parallel, one task a
/// candidate), left in `outs` (one buffer per candidate, reused from batch
/// to batch: a fresh megabyte a batch is a page fault per 4 KiB). With
/// `keep`, each buffer ends in time order, for `--decisions`. With
/// `probe` (validation), a candidate that classifies clock steps
/// ([`crate::model::Admit::checks_clock_step`]) is asked before each
/// request, in time order, and `steps` gets its answers.
pub(super) fn evaluate(
    cands: &mut [Candidate],
    tallies: &mut [Tally],
    (outs, steps): (&mut [Vec<Decision>], &mut [Vec<bool>]),
    batch: &Batch,
    lim: Limits,
    (keep, probe): (bool, bool),
    own_only: &[bool],
) -> Result<()> {
    let done: Vec<Result<()>> = cands
        .par_iter_mut()
        .zip(tallies.par_iter_mut())
        .zip(outs.par_iter_mut())
        .zip(steps.par_iter_mut())
        .zip(own_only.par_iter())
        .map_init(
            Vec::new,
            |allowed: &mut Vec<bool>, ((((c, tally), out), step), &mine)| {
                let batch = match &batch.mine {
                    Some(m) if mine => m,
                    _ => batch,
                };
                let n = batch.by_time.len();
                out.clear();
                if !batch.new_keys.is_empty() && c.limiter.wants_key_names() {
                    c.limiter.name_keys(&batch.new_keys)?;
                }
                step.clear();
                let probed = probe && c.limiter.checks_clock_step();
                let grouped = !probed && c.limiter.keys_independent();
                if probed {
                    for &(k, w, t) in &batch.by_time {
                        step.push(c.limiter.clock_step(k, w, t) == Some(true));
                        out.push(c.limiter.admit(k, w, t)?);
                    }
                } else if grouped {
                    decide_grouped(c, batch, out)?;
                } else {
                    c.limiter.admit_batch(&batch.by_time, out)?;
                }
                if out.len() != n {
                    return Err(crate::error::Error::internal(format!(
                        "{}: {} decisions for a batch of {n} requests",
                        c.name,
                        out.len(),
                    )));
                }
                if grouped {
                    for (r, d) in batch.requests.iter().zip(out.iter()) {
                        tally.record(r, d.allowed, lim);
                    }
                    if keep {
                        let mut by_time = vec![Decision::DENY; n];
                        for (d, &i) in out.iter().zip(&batch.time_index) {
                            by_time[i as usize] = *d;
                        }
                        *out = by_time;
                    }
                } else {
                    // Gathered from a byte a request (64 KiB, in cache), not
                    // from the 16-byte decisions (1 MiB).
                    allowed.clear();
                    allowed.extend(out.iter().map(|d| d.allowed));
                    for (r, &i) in batch.requests.iter().zip(&batch.time_index) {
                        tally.record(r, allowed[i as usize], lim);
                    }
                }
                Ok(())
            },
        )
        .collect();
    // The first failing candidate in table order, whatever thread failed
    // first.
    done.into_iter().collect()
}

/// A key-independent candidate's decisions on `batch.by_key`, in that order.
///
/// A failing request ends its key only: the other keys go on, and the
/// failure reported is the one earliest in time, which is the one a pass in
/// time order would have met first (no key's state depends on another's).
fn decide_grouped(c: &mut Candidate, batch: &Batch, out: &mut Vec<Decision>) -> Result<()> {
    let reqs = &batch.by_key;
    let mut first_failure: Option<(u32, crate::error::Error)> = None;
    while out.len() < reqs.len() {
        let from = out.len();
        if let Err(e) = c.limiter.admit_batch(&reqs[from..], out) {
            // `out` holds the decisions before the failing request (as
            // `Admit::admit_batch` appends them); a model that appended
            // more is cut back to the key it failed on.
            let j = out.len().min(reqs.len() - 1);
            out.truncate(j);
            let failed_key = reqs[j].0;
            let at = batch.time_index[j];
            if first_failure.as_ref().is_none_or(|(t, _)| at < *t) {
                first_failure = Some((at, e));
            }
            while out.len() < reqs.len() && reqs[out.len()].0 == failed_key {
                out.push(Decision::DENY);
            }
        }
    }
    match first_failure {
        Some((_, e)) => Err(e),
        None => Ok(()),
    }
}
