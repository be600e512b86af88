//! Spreading requests logged with whole-second times within their second.
//!
//! nginx's `$time_local` (and CloudFront, and `$time_iso8601`) write whole
//! seconds, so a second's requests would all arrive at one instant and
//! every pacing limiter would see a burst the clients never sent. The
//! rules, applied after reordering, to each group of requests that share a
//! logged second `s` (`n` of them, in line order):
//!
//! * `even` — request `i` at `s + floor(i * 10^9 / n)` ns.
//! * `uniform` — `n` offsets `xxh3_64(s ‖ j, seed) mod 10^9` ns
//!   (`j = 0..n`, `s` and `j` as little-endian u64), sorted ascending and
//!   handed to the requests in line order: the order statistics of `n`
//!   uniform draws, so a second's requests keep their logged order and
//!   the same log and seed give the same times on every machine.
//! * `none` — every request at `s`.
//!
//! The default is `uniform` for whole-second logs; logs with sub-second
//! times are never spread (asking for it is an error).

use super::format::Spread;
use super::reader::{KeyAt, TraceReader};
use crate::clock::Nanos;
use crate::error::Result;
use std::collections::VecDeque;
use xxhash_rust::xxh3::xxh3_64_with_seed;

const SECOND: u64 = 1_000_000_000;

/// The offsets (ns, ascending) of a group of `n` requests logged at
/// second `s` (ns since the epoch).
///
/// # Examples
/// ```
/// use ratelab::workload::trace::{spread::offsets, Spread};
/// assert_eq!(offsets(Spread::Even, 0, 0, 4), [0, 250_000_000, 500_000_000, 750_000_000]);
/// let u = offsets(Spread::Uniform, 7, 3_000_000_000, 3);
/// assert!(u.windows(2).all(|w| w[0] <= w[1]) && u.iter().all(|&o| o < 1_000_000_000));
/// ```
pub fn offsets(rule: Spread, seed: u64, s: Nanos, n: usize) -> Vec<u64> {
    match rule {
        Spread::None => vec![0; n],
        Spread::Even => (0..n as u64)
            .map(|i| (u128::from(i) * u128::from(SECOND) / n as u128) as u64)
            .collect(),
        Spread::Uniform => {
            let mut v: Vec<u64> = (0..n as u64)
                .map(|j| {
                    let mut b = [0u8; 16];
                    b[..8].copy_from_slice(&s.to_le_bytes());
                    b[8..].copy_from_slice(&j.to_le_bytes());
                    xxh3_64_with_seed(&b, seed) % SECOND
                })
                .collect();
            v.sort_unstable();
            v
        }
    }
}

/// The spread stage's state.
#[derive(Debug, Default)]
pub(super) struct Spreader {
    /// The rule in force (decided at the first event).
    pub(super) rule: Option<Spread>,
    /// The current second's requests, times already spread (a key None:
    /// one the reader's filter does not want).
    out: VecDeque<(Nanos, Option<String>, u64)>,
    /// The first request of the next second, read ahead.
    pending: Option<(Nanos, Option<String>, u64)>,
    /// Spent key strings, reused.
    pool: Vec<String>,
}

impl TraceReader {
    /// The rule for this trace: the asked one, checked against the time
    /// field's resolution, or the default.
    fn spread_rule(&self) -> Result<Spread> {
        let whole = self
            .log
            .as_ref()
            .and_then(|l| l.time_field())
            .filter(|(_, whole)| *whole);
        match (self.opts.spread, whole) {
            (None, Some(_)) => Ok(Spread::Uniform),
            (None, None) | (Some(Spread::None), _) => Ok(Spread::None),
            (Some(s), Some(_)) => Ok(s),
            (Some(s), None) => Err(self.err(format!(
                "spread {}: this trace's times are not whole seconds (only whole-second logs such as $time_local are spread; use spread none)",
                s.name()
            ))),
        }
    }

    /// The next event after reordering and spreading.
    pub(super) fn next_event(&mut self) -> Option<Result<(Nanos, KeyAt, u64)>> {
        if self.spread.rule.is_none() {
            // Decided at the first event (a W3C log's fields are known only
            // after its header).
            let first = self.next_ordered()?;
            let rule = match self.spread_rule() {
                Ok(r) => r,
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
            };
            self.spread.rule = Some(rule);
            if rule == Spread::None {
                return Some(first);
            }
            match first {
                Ok((t, at, w)) => {
                    let k = self.key_of(&at).map(str::to_string);
                    self.spread.pending = Some((t, k, w));
                }
                Err(e) => return Some(Err(e)),
            }
        }
        let rule = self.spread.rule.unwrap_or(Spread::None);
        if rule == Spread::None {
            return self.next_ordered();
        }
        if let Some((t, k, w)) = self.spread.out.pop_front() {
            let Some(k) = k else {
                return Some(Ok((t, KeyAt::Elsewhere, w)));
            };
            let old = std::mem::replace(&mut self.held_key, k);
            self.spread.pool.push(old);
            return Some(Ok((t, KeyAt::Held, w)));
        }
        // Gather the next second.
        let (s, k, w) = self.spread.pending.take()?;
        let mut group = vec![(s, k, w)];
        let cap = self.opts.max_buffered.unwrap_or(1_000_000);
        loop {
            match self.next_ordered() {
                None => break,
                Some(Err(e)) => return Some(Err(e)),
                Some(Ok((t, at, w))) => {
                    let mut key = self.spread.pool.pop().unwrap_or_default();
                    let wanted = match self.key_of(&at) {
                        Some(k) => {
                            key.clear();
                            key.push_str(k);
                            true
                        }
                        None => false,
                    };
                    let key = if wanted {
                        Some(key)
                    } else {
                        self.spread.pool.push(key);
                        None
                    };
                    if t != s {
                        self.spread.pending = Some((t, key, w));
                        break;
                    }
                    if group.len() >= cap {
                        self.done = true;
                        return Some(Err(self.err(format!(
                            "more than {cap} requests logged in one second: too many to spread within it"
                        ))));
                    }
                    group.push((t, key, w));
                }
            }
        }
        // A time with a fraction (a W3C time written with one) is kept.
        let rule = if s % SECOND == 0 { rule } else { Spread::None };
        let offs = offsets(rule, self.opts.spread_seed, s, group.len());
        self.spread.out.extend(
            group
                .into_iter()
                .zip(offs)
                .map(|((t, k, w), o)| (t.saturating_add(o), k, w)),
        );
        self.next_event()
    }
}
