//! What each candidate did to every request, tallied against the two exact
//! limiters as the requests stream by.

use crate::clock::Nanos;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// What one candidate did.
#[derive(Debug, Clone, Default)]
pub(super) struct Tally {
    pub(super) allowed: u64,
    /// Per key id: everything the tally keeps about one key, in one record
    /// (one cache line touched per request, not one per counter).
    keys: Vec<KeyTally>,
    /// Most weight admitted for one key in one aligned window.
    pub(super) worst_window: u64,
    /// The watched key's admitted requests in the last interval.
    watch_log: VecDeque<(Nanos, u64)>,
    watch_in_window: u64,
    /// The last time the watched key had more than the limit admitted in
    /// the interval before it.
    pub(super) last_leak: Option<Nanos>,
    pub(super) false_allow: u64,
    pub(super) false_deny: u64,
    pub(super) fixed_false_allow: u64,
    pub(super) fixed_false_deny: u64,
    pub(super) first_deny: Option<Nanos>,
    pub(super) bins: Vec<u64>,
    /// The watched key's admitted weight around its abuse start, in fine
    /// bins (the onset chart).
    pub(super) onset: Vec<u64>,
}

/// One key's share of a [`Tally`].
#[derive(Debug, Clone, Copy, Default)]
struct KeyTally {
    /// Aligned window index + 1 of `weight` (0: nothing admitted yet).
    window: u32,
    /// Requests denied: with the oracle's, this tells compliant keys'
    /// denied requests and limited keys' excess.
    denied: u32,
    /// Decisions that differ from the exact sliding log's.
    wrong: u32,
    /// Weight admitted in aligned window `window`.
    weight: u64,
}

/// One request as the tallies see it: who, when, what the exact limiters
/// said, and where it falls on the watched key's timeline.
#[derive(Debug, Clone, Copy)]
pub(super) struct Request {
    /// Dense key id.
    pub(super) key: u32,
    /// Virtual time.
    pub(super) t: Nanos,
    /// Weight.
    pub(super) w: u64,
    /// The exact sliding log's decision.
    pub(super) truth: bool,
    /// The exact aligned window's decision.
    pub(super) fixed_truth: bool,
    /// The watched key, after its abuse started.
    pub(super) watched: bool,
    /// The watched key's timeline bin, if the request falls in one (bins
    /// fit a byte: the request is 32 bytes, and every candidate's tally
    /// streams through every request).
    pub(super) bin: Option<u8>,
    /// The watched key's onset bin, if the request falls in one.
    pub(super) onset_bin: Option<u8>,
    /// The watched key (at any time).
    pub(super) is_watch: bool,
    /// Index of the aligned window (multiples of the interval since the
    /// first request) the request falls in.
    pub(super) window: u32,
}

/// The policy as the harm trackers need it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Limits {
    /// Requests per interval.
    pub(super) limit: u64,
    /// Interval, ns.
    pub(super) interval: Nanos,
}

impl Tally {
    /// A tally with `bins` timeline bins.
    pub(super) fn with_bins(bins: usize, onset: usize) -> Self {
        Tally {
            bins: vec![0; bins],
            onset: vec![0; onset],
            ..Tally::default()
        }
    }

    /// Counts a decision `allow` on request `r`.
    ///
    /// Every counter is a sum (or a maximum) over requests, and what is kept
    /// per key sees only that key's requests: the tally is the same whatever
    /// order different keys' requests come in, as long as each key's own
    /// requests come in time order. The lab feeds it requests grouped by key.
    #[inline(always)]
    pub(super) fn record(&mut self, r: &Request, allow: bool, lim: Limits) {
        let ki = r.key as usize;
        if ki >= self.keys.len() {
            self.keys.resize(ki + 1, KeyTally::default());
        }
        if allow {
            self.admitted(r, lim);
        } else {
            let slot = &mut self.keys[ki];
            slot.denied = slot.denied.saturating_add(1);
        }
        self.agreement(r, allow);
    }

    /// Requests of key `k` this tally denied.
    pub(super) fn denied(&self, k: usize) -> u32 {
        self.keys.get(k).map_or(0, |s| s.denied)
    }

    /// Worst window and the watched key's leaks, for an admitted request.
    #[inline]
    fn admitted(&mut self, r: &Request, lim: Limits) {
        let slot = &mut self.keys[r.key as usize];
        if slot.window != r.window + 1 {
            slot.window = r.window + 1;
            slot.weight = 0;
        }
        slot.weight = slot.weight.saturating_add(r.w);
        self.worst_window = self.worst_window.max(slot.weight);
        if r.is_watch {
            self.watch_log.push_back((r.t, r.w));
            self.watch_in_window += r.w;
            while let Some(&(t0, w0)) = self.watch_log.front() {
                if t0 + lim.interval > r.t {
                    break;
                }
                self.watch_log.pop_front();
                self.watch_in_window -= w0;
            }
            if self.watch_in_window > lim.limit {
                self.last_leak = Some(r.t);
            }
        }
    }

    /// Agreement with the two exact limiters, request by request.
    #[inline]
    fn agreement(&mut self, r: &Request, allow: bool) {
        if allow {
            self.allowed += 1;
            if let Some(b) = r.bin {
                self.bins[usize::from(b)] += r.w;
            }
            if let Some(b) = r.onset_bin {
                self.onset[usize::from(b)] += r.w;
            }
        } else if r.watched && self.first_deny.is_none() {
            self.first_deny = Some(r.t);
        }
        if allow != r.fixed_truth {
            if allow {
                self.fixed_false_allow += 1;
            } else {
                self.fixed_false_deny += 1;
            }
        }
        if allow != r.truth {
            if allow {
                self.false_allow += 1;
            } else {
                self.false_deny += 1;
            }
            let slot = &mut self.keys[r.key as usize];
            slot.wrong = slot.wrong.saturating_add(1);
        }
    }
}

/// A tally as a shard file carries it (`run --shard`): every sum and
/// maximum, the watched key's figures (on its own shard only), and per key
/// of the shard's key list, in that order, the requests denied and the
/// decisions wrong. Merging the parts of every shard gives the tally of
/// the unsharded run: each key's requests were all on one shard.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TallyPart {
    allowed: u64,
    worst_window: u64,
    last_leak: Option<Nanos>,
    false_allow: u64,
    false_deny: u64,
    fixed_false_allow: u64,
    fixed_false_deny: u64,
    first_deny: Option<Nanos>,
    bins: Vec<u64>,
    onset: Vec<u64>,
    denied: Vec<u32>,
    wrong: Vec<u32>,
}

impl Tally {
    /// This tally as a shard carries it, per key of `ids` (in that order).
    pub(super) fn part(&self, ids: &[u32]) -> TallyPart {
        let slot = |k: u32| self.keys.get(k as usize).copied().unwrap_or_default();
        TallyPart {
            allowed: self.allowed,
            worst_window: self.worst_window,
            last_leak: self.last_leak,
            false_allow: self.false_allow,
            false_deny: self.false_deny,
            fixed_false_allow: self.fixed_false_allow,
            fixed_false_deny: self.fixed_false_deny,
            first_deny: self.first_deny,
            bins: self.bins.clone(),
            onset: self.onset.clone(),
            denied: ids.iter().map(|&k| slot(k).denied).collect(),
            wrong: ids.iter().map(|&k| slot(k).wrong).collect(),
        }
    }

    /// Adds one shard's part; its key `i` is key `ids[i]` here. Err: what
    /// is wrong with the part (lengths that do not fit, a watched key's
    /// figure given by two shards).
    pub(super) fn absorb(
        &mut self,
        part: &TallyPart,
        ids: &[u32],
    ) -> Result<(), crate::lab::error::LabError> {
        if part.denied.len() != ids.len() || part.wrong.len() != ids.len() {
            return Err(crate::lab::error::LabError::PartMismatch(format!(
                "{} denied and {} wrong counts for {} keys",
                part.denied.len(),
                part.wrong.len(),
                ids.len()
            )));
        }
        if part.bins.len() != self.bins.len() || part.onset.len() != self.onset.len() {
            return Err(crate::lab::error::LabError::PartMismatch(format!(
                "{} timeline and {} onset bins: expected {} and {}",
                part.bins.len(),
                part.onset.len(),
                self.bins.len(),
                self.onset.len()
            )));
        }
        for (mine, theirs, what) in [
            (&mut self.last_leak, part.last_leak, "last_leak"),
            (&mut self.first_deny, part.first_deny, "first_deny"),
        ] {
            if let Some(v) = theirs
                && mine.replace(v).is_some()
            {
                return Err(crate::lab::error::LabError::PartMismatch(format!(
                    "{what} given by two shards: only the watched key's shard has one"
                )));
            }
        }
        self.allowed = self.allowed.saturating_add(part.allowed);
        self.worst_window = self.worst_window.max(part.worst_window);
        for (a, b) in [
            (&mut self.false_allow, part.false_allow),
            (&mut self.false_deny, part.false_deny),
            (&mut self.fixed_false_allow, part.fixed_false_allow),
            (&mut self.fixed_false_deny, part.fixed_false_deny),
        ] {
            *a = a.saturating_add(b);
        }
        for (a, b) in self.bins.iter_mut().zip(&part.bins) {
            *a = a.saturating_add(*b);
        }
        for (a, b) in self.onset.iter_mut().zip(&part.onset) {
            *a = a.saturating_add(*b);
        }
        if let Some(&max) = ids.iter().max()
            && max as usize >= self.keys.len()
        {
            self.keys.resize(max as usize + 1, KeyTally::default());
        }
        for ((&k, &d), &w) in ids.iter().zip(&part.denied).zip(&part.wrong) {
            let slot = &mut self.keys[k as usize];
            slot.denied = d;
            slot.wrong = w;
        }
        Ok(())
    }
}

/// The key with the most wrong decisions (the first such key on a tie).
pub(super) fn worst(t: &Tally) -> Option<(u32, u32)> {
    let mut best: Option<(u32, u32)> = None;
    for (k, c) in t.keys.iter().map(|s| s.wrong).enumerate() {
        let better = match best {
            Some((_, b)) => c > b,
            None => true,
        };
        if c > 0 && better {
            best = Some((k as u32, c));
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_is_32_bytes() {
        // Every candidate's tally streams through every request.
        assert_eq!(std::mem::size_of::<Request>(), 32);
    }
}
