//! One pass over a decision run's requests: batches read from the source,
//! judged by the exact limiters (sliding log and aligned window) while every
//! candidate decides the previous batch, each tally kept for the report.

use super::*;

/// The state of one pass over the requests: the exact limiters, every
/// candidate's tally, and what the report needs about the traffic.
pub(super) struct Lab<'a> {
    pub(super) scenario: &'a Scenario,
    pub(super) ctx: &'a RunContext,
    pub(super) p: &'a Params,
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
}

impl<'a> Lab<'a> {
    pub(super) fn new(
        scenario: &'a Scenario,
        p: &'a Params,
        ctx: &'a RunContext,
        source: Source,
        candidates: usize,
    ) -> Self {
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
        Lab {
            scenario,
            ctx,
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
        }
    }

    /// The policy as the trackers need it.
    pub(super) fn limits(&self) -> Limits {
        Limits {
            limit: self.p.policy.limit,
            interval: self.p.policy.interval_ms * MILLI,
        }
    }

    /// Streams every request through the exact limiters (in order, one
    /// batch at a time) and each batch through the candidates (in parallel:
    /// each candidate's state is its own, so the result does not depend on
    /// the thread count). The next batch is read and judged by the exact
    /// limiters while the candidates work on the current one, so the serial
    /// part (the source, the trace's parsing, the oracles) overlaps the
    /// parallel one instead of leaving a core idle.
    pub(super) fn replay(
        &mut self,
        cands: &mut [Candidate],
        mut decisions: Option<&mut StreamingFile>,
    ) -> Result<()> {
        let keep = decisions.is_some();
        let lim = self.limits();
        let mut oracles = Oracles {
            sliding: SlidingLogLimiter::new(lim.limit, lim.interval),
            aligned: AlignedWindowLimiter::new(lim.limit, lim.interval),
            align: None,
            progress: self.ctx.progress(0, &self.scenario.common.name),
        };
        let mut tallies = std::mem::take(&mut self.tallies);
        let mut batch: Vec<Request> = Vec::with_capacity(BATCH);
        let mut next: Vec<Request> = Vec::with_capacity(BATCH);
        let mut read = self.fill(&mut batch, &mut oracles);
        while read.is_ok() && !batch.is_empty() {
            let (filled, done) = rayon::join(
                || self.fill(&mut next, &mut oracles),
                || evaluate(cands, &mut tallies, &batch, lim, keep),
            );
            // The batch's own failure first: the one a serial pass meets
            // first.
            let done = done?;
            if let Some(f) = decisions.as_deref_mut() {
                self.write_decisions(f, &batch, cands, &done)?;
            }
            read = filled;
            std::mem::swap(&mut batch, &mut next);
        }
        read?;
        self.tallies = tallies;
        oracles.progress.finish();
        Ok(())
    }

    /// Reads the next batch of requests (empty at the end) and counts each
    /// in the traffic totals and the exact limiters' tallies.
    pub(super) fn fill(&mut self, batch: &mut Vec<Request>, o: &mut Oracles) -> Result<()> {
        let lim = self.limits();
        batch.clear();
        while batch.len() < BATCH {
            let Some(ev) = self.source.next() else {
                break;
            };
            let (t, k, w) = ev?;
            let align = *o
                .align
                .get_or_insert_with(|| self.source.align(lim.interval));
            if self.watch_id.is_none() {
                if let Some(wk) = &self.p.watch {
                    self.watch_id = self.source.id_of(&wk.key);
                }
            }
            self.count(t, k, w);
            if self.requests % (1 << 20) == 0 {
                o.progress.inc(1 << 20);
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
                window: u32::try_from(t / lim.interval).unwrap_or(u32::MAX),
            };
            if let Some(b) = r.bin {
                self.offered[b] += w;
            }
            if let Some(b) = r.onset_bin {
                self.offered_onset[b] += w;
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
            batch.push(r);
        }
        Ok(())
    }

    /// One CSV line per request and candidate, in request order.
    pub(super) fn write_decisions(
        &self,
        f: &mut StreamingFile,
        batch: &[Request],
        cands: &[Candidate],
        done: &[Vec<Decision>],
    ) -> Result<()> {
        let names: Vec<String> = cands.iter().map(|c| csv_field(&c.name)).collect();
        for (i, r) in batch.iter().enumerate() {
            let key = csv_field(&self.source.name(r.key));
            for (name, ds) in names.iter().zip(done) {
                let d = ds[i];
                writeln!(f, "{},{key},{name},{},{}", r.t, d.allowed, d.delay)
                    .map_err(|e| Error::io(f.path(), e))?;
            }
        }
        Ok(())
    }

    /// Counts a request in the traffic totals.
    pub(super) fn count(&mut self, t: Nanos, k: u32, w: u64) {
        self.requests += 1;
        self.weight_total += w;
        self.duration_ns = t;
        let ki = k as usize;
        if ki >= self.per_key_requests.len() {
            self.per_key_requests.resize(ki + 1, 0);
        }
        self.per_key_requests[ki] = self.per_key_requests[ki].saturating_add(1);
    }

    /// The watched key's timeline bin of a request, if any.
    pub(super) fn bin(&self, k: u32, t: Nanos) -> Option<usize> {
        if self.watch_id == Some(k) && t >= self.t_lo {
            let b = (t - self.t_lo) / self.bin_w;
            (b < BINS).then_some(b as usize)
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
    pub(super) fn onset_bin(&self, k: u32, t: Nanos) -> Option<usize> {
        let (w, start) = self.onset()?;
        if self.watch_id != Some(k) || t < start {
            return None;
        }
        let b = (t - start) / w;
        (b < ONSET_BINS).then_some(b as usize)
    }

    /// Distinct keys seen.
    pub(super) fn keys_seen(&self) -> u64 {
        self.per_key_requests.iter().filter(|&&c| c > 0).count() as u64
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

/// Every candidate's decisions on `batch`, tallied (in parallel, one task a
/// candidate); the decisions themselves are kept only when `keep`.
pub(super) fn evaluate(
    cands: &mut [Candidate],
    tallies: &mut [Tally],
    batch: &[Request],
    lim: Limits,
    keep: bool,
) -> Result<Vec<Vec<Decision>>> {
    let reqs: Vec<(u32, u64, Nanos)> = batch.iter().map(|r| (r.key, r.w, r.t)).collect();
    let done: Vec<Result<Vec<Decision>>> = cands
        .par_iter_mut()
        .zip(tallies.par_iter_mut())
        .map(|(c, tally)| {
            let mut out = Vec::with_capacity(reqs.len());
            c.limiter.admit_batch(&reqs, &mut out)?;
            if out.len() != reqs.len() {
                return Err(crate::error::Error::internal(format!(
                    "{}: {} decisions for a batch of {} requests",
                    c.name,
                    out.len(),
                    reqs.len()
                )));
            }
            for (r, d) in batch.iter().zip(&out) {
                tally.record(r, d.allowed, lim);
            }
            if !keep {
                out.clear();
            }
            Ok(out)
        })
        .collect();
    // The first failing candidate in table order, whatever thread failed
    // first.
    done.into_iter().collect()
}
