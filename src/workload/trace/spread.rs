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
    let mut v = Vec::new();
    offsets_into(rule, seed, s, n, &mut v);
    v
}

/// [`offsets`] into `v` (cleared first).
fn offsets_into(rule: Spread, seed: u64, s: Nanos, n: usize, v: &mut Vec<u64>) {
    v.clear();
    match rule {
        Spread::None => v.resize(n, 0),
        Spread::Even => {
            v.extend((0..n as u64).map(|i| (u128::from(i) * u128::from(SECOND) / n as u128) as u64))
        }
        Spread::Uniform => {
            v.extend((0..n as u64).map(|j| {
                let mut b = [0u8; 16];
                b[..8].copy_from_slice(&s.to_le_bytes());
                b[8..].copy_from_slice(&j.to_le_bytes());
                xxh3_64_with_seed(&b, seed) % SECOND
            }));
            sort_offsets(v);
        }
    }
}

/// Sorts offsets below 2^30 (a second in ns): a radix sort, three passes
/// of 10 bits, for a busy second's thousands (a comparison sort of every
/// second's offsets was a twentieth of a shard's time); small ones by
/// comparison. Either gives the same ascending list. Written here rather
/// than taken from a radix-sort crate: those sort a u64 in eight byte
/// passes, and these keys fit in 30 bits (three passes).
fn sort_offsets(v: &mut [u64]) {
    const BITS: u32 = 10;
    const RADIX: usize = 1 << BITS;
    if v.len() < 256 || v.iter().any(|&o| o >= 1 << (3 * BITS)) {
        v.sort_unstable();
        return;
    }
    let mut a: Vec<u32> = v.iter().map(|&o| o as u32).collect();
    let mut b = vec![0u32; a.len()];
    for pass in 0..3 {
        let shift = pass * BITS;
        let mut count = [0usize; RADIX];
        for &x in &a {
            count[(x >> shift) as usize & (RADIX - 1)] += 1;
        }
        let mut at = 0;
        for c in count.iter_mut() {
            let n = *c;
            *c = at;
            at += n;
        }
        for &x in &a {
            let d = (x >> shift) as usize & (RADIX - 1);
            b[count[d]] = x;
            count[d] += 1;
        }
        std::mem::swap(&mut a, &mut b);
    }
    for (o, x) in v.iter_mut().zip(a) {
        *o = u64::from(x);
    }
}

/// A key held while its second is gathered.
#[derive(Debug)]
enum Key {
    /// One the reader's filter does not want.
    Elsewhere,
    /// Interned while reading.
    Id(u32),
    /// Its own string.
    Text(String),
}

/// The spread stage's state.
#[derive(Debug, Default)]
pub(super) struct Spreader {
    /// The rule in force (decided at the first event).
    pub(super) rule: Option<Spread>,
    /// The current second's requests, times already spread.
    out: VecDeque<(Nanos, Key, u64)>,
    /// The first request of the next second, read ahead.
    pending: Option<(Nanos, Key, u64)>,
    /// Spent key strings, reused.
    pool: Vec<String>,
    /// Offsets scratch.
    offsets: Vec<u64>,
    /// The second being gathered (kept: a new vector a second, grown by
    /// doubling, was a copy of each request several times over).
    group: Vec<(Nanos, Key, u64)>,
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
        if self.parts.is_some() {
            // A directory trace: each file is spread by its own reader.
            return self.next_merged();
        }
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
                    let k = self.hold(&at);
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
            let at = match k {
                Key::Elsewhere => KeyAt::Elsewhere,
                Key::Id(id) => KeyAt::Id(id),
                Key::Text(k) => {
                    let old = std::mem::replace(&mut self.held_key, k);
                    self.spread.pool.push(old);
                    KeyAt::Held
                }
            };
            return Some(Ok((t, at, w)));
        }
        // Gather the next second.
        let (s, k, w) = self.spread.pending.take()?;
        let mut group = std::mem::take(&mut self.spread.group);
        group.clear();
        group.push((s, k, w));
        let cap = self.opts.max_buffered.unwrap_or(1_000_000);
        loop {
            match self.next_ordered() {
                None => break,
                Some(Err(e)) => return Some(Err(e)),
                Some(Ok((t, at, w))) => {
                    let key = self.hold(&at);
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
        let mut offs = std::mem::take(&mut self.spread.offsets);
        offsets_into(rule, self.opts.spread_seed, s, group.len(), &mut offs);
        self.spread.out.extend(
            group
                .drain(..)
                .zip(&offs)
                .map(|((t, k, w), o)| (t.saturating_add(*o), k, w)),
        );
        self.spread.offsets = offs;
        self.spread.group = group;
        self.next_event()
    }

    /// The key of `at`, held while its second is gathered (a string from
    /// the pool).
    fn hold(&mut self, at: &KeyAt) -> Key {
        match at {
            KeyAt::Elsewhere => Key::Elsewhere,
            KeyAt::Id(id) => Key::Id(*id),
            _ => {
                let mut key = self.spread.pool.pop().unwrap_or_default();
                key.clear();
                key.push_str(self.key_at(at));
                Key::Text(key)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_radix_sort_sorts_as_sort_does() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for n in [0, 1, 255, 256, 257, 1000, 40_000] {
            let mut v: Vec<u64> = (0..n)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x % SECOND
                })
                .collect();
            // Ties too.
            if n > 10 {
                v[3] = v[7];
            }
            let mut want = v.clone();
            want.sort_unstable();
            sort_offsets(&mut v);
            assert_eq!(v, want, "{n}");
        }
    }
}
