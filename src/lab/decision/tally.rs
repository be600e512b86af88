//! What each candidate did to every request, tallied against the two exact
//! limiters as the requests stream by.

use crate::clock::Nanos;

/// What one candidate did.
#[derive(Debug, Clone, Default)]
pub(super) struct Tally {
    pub(super) allowed: u64,
    pub(super) false_allow: u64,
    pub(super) false_deny: u64,
    pub(super) fixed_false_allow: u64,
    pub(super) fixed_false_deny: u64,
    pub(super) wrong_by_key: Vec<u32>,
    pub(super) first_deny: Option<Nanos>,
    pub(super) bins: Vec<u64>,
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
}

impl Tally {
    /// A tally with `bins` timeline bins.
    pub(super) fn with_bins(bins: usize) -> Self {
        Tally {
            bins: vec![0; bins],
            ..Tally::default()
        }
    }

    /// Counts a decision `allow` on request `r`.
    pub(super) fn record(&mut self, r: &Request, allow: bool) {
        if allow {
            self.allowed += 1;
            if let Some(b) = r.bin {
                self.bins[b] += r.w;
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
