//! What each candidate did to every request, tallied against the two exact
//! limiters as the requests stream by.

use crate::clock::Nanos;
use std::collections::VecDeque;

/// What one candidate did.
#[derive(Debug, Clone, Default)]
pub(super) struct Tally {
    pub(super) allowed: u64,
    /// Requests denied, per key id: with the oracle's, this tells compliant
    /// keys' denied requests and limited keys' excess.
    pub(super) denied_by_key: Vec<u32>,
    /// Per key: (aligned window index + 1, weight admitted in it).
    window: Vec<(u32, u64)>,
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
    pub(super) wrong_by_key: Vec<u32>,
    pub(super) first_deny: Option<Nanos>,
    pub(super) bins: Vec<u64>,
    /// The watched key's admitted weight around its abuse start, in fine
    /// bins (the onset chart).
    pub(super) onset: Vec<u64>,
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
    /// The watched key's timeline bin, if the request falls in one.
    pub(super) bin: Option<usize>,
    /// The watched key's onset bin, if the request falls in one.
    pub(super) onset_bin: Option<usize>,
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
    pub(super) fn record(&mut self, r: &Request, allow: bool, lim: Limits) {
        let ki = r.key as usize;
        if allow {
            self.admitted(r, lim);
        } else {
            if ki >= self.denied_by_key.len() {
                self.denied_by_key.resize(ki + 1, 0);
            }
            self.denied_by_key[ki] = self.denied_by_key[ki].saturating_add(1);
        }
        self.agreement(r, allow);
    }

    /// Worst window and the watched key's leaks, for an admitted request.
    fn admitted(&mut self, r: &Request, lim: Limits) {
        let ki = r.key as usize;
        if ki >= self.window.len() {
            self.window.resize(ki + 1, (0, 0));
        }
        let slot = &mut self.window[ki];
        if slot.0 != r.window + 1 {
            *slot = (r.window + 1, 0);
        }
        slot.1 = slot.1.saturating_add(r.w);
        self.worst_window = self.worst_window.max(slot.1);
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
    fn agreement(&mut self, r: &Request, allow: bool) {
        if allow {
            self.allowed += 1;
            if let Some(b) = r.bin {
                self.bins[b] += r.w;
            }
            if let Some(b) = r.onset_bin {
                self.onset[b] += r.w;
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
            let ki = r.key as usize;
            if ki >= self.wrong_by_key.len() {
                self.wrong_by_key.resize(ki + 1, 0);
            }
            self.wrong_by_key[ki] = self.wrong_by_key[ki].saturating_add(1);
        }
    }
}

/// The key with the most wrong decisions (the first such key on a tie).
pub(super) fn worst(t: &Tally) -> Option<(u32, u32)> {
    let mut best: Option<(u32, u32)> = None;
    for (k, &c) in t.wrong_by_key.iter().enumerate() {
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
