//! One shape's decisions on the trace: every request through pingora
//! `Rate` as the decision lab runs it ([`RateLimiter`], docs pattern or
//! proportional estimate, created at the first request's time), tallied as
//! the lab's harm columns.
//!
//! Two ways to run it, with identical decisions:
//!
//! * [`replay_fast`]: `Rate`'s single-threaded window logic and the two
//!   estimate rules written out on count-min cells precomputed per key id
//!   (the same rows, seeds and `hash % slots` as
//!   [`Estimator`](crate::model::estimator::Estimator), hashed once per key
//!   instead of per request), cleared sparsely on window flips, and
//!   optionally stopped as soon as a target can no longer hold: about 4x
//!   faster than the model. The search uses it.
//! * [`replay_model`]: `RateLimiter::sketch` itself, the decision lab's
//!   builder and hash seed. The pick and the frontier are confirmed with it
//!   (and a test checks both against the decision lab's own report).

use super::super::input::TimedTrace;
use super::classes::{Classes, LimitPolicy};
use crate::clock::Nanos;
use crate::error::{Error, Result};
use crate::hash::{HasherKind, RowHasher};
use crate::model::estimator::EstimatorConfig;
use crate::model::rate_limiter::{RateLimiter, RateMode};
use crate::rng::{derive_seed, stream};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// A sketch shape: rows × counters per row (each of the two windows).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct RateShape {
    /// Rows.
    pub hashes: usize,
    /// Counters per row.
    pub slots: u64,
}

impl RateShape {
    /// Bytes of both windows' sketches (`2 × hashes × slots × 8`), as the
    /// decision lab reports a pingora `Rate`'s memory.
    pub fn memory(self) -> u64 {
        (self.hashes as u64)
            .saturating_mul(self.slots)
            .saturating_mul(16)
    }

    /// `HxW`.
    pub fn label(self) -> String {
        format!("{}x{}", self.hashes, self.slots)
    }
}

/// The estimate mode of the `Rate` limiter, by name.
pub fn mode_name(m: RateMode) -> &'static str {
    match m {
        RateMode::Docs => "docs",
        RateMode::Proportional => "proportional",
    }
}

/// The hash seed the decision lab gives a `pingora_rate` candidate of
/// `shape` in a scenario with seed `lab_seed` whose `shapes` list does not
/// hold it (rows.rs: `derive_seed(seed, [HASH, hashes << 32 | slots])`).
pub fn lab_hash_seed(lab_seed: u64, shape: RateShape) -> u64 {
    let salt = ((shape.hashes as u64) << 32) | shape.slots;
    derive_seed(lab_seed, &[stream::HASH, salt])
}

/// Per key id, the flat cell index (`row * slots + hash % slots`) of each
/// row, for a sketch seeded like [`Estimator::new`](crate::model::estimator::Estimator::new) with `seed`.
pub fn cell_table(keys: usize, shape: RateShape, seed: u64) -> Vec<u32> {
    let h = shape.hashes;
    let mut out = vec![0u32; keys * h];
    for row in 0..h {
        let hasher = RowHasher::new(HasherKind::Xxh3, derive_seed(seed, &[row as u64]));
        let base = row as u64 * shape.slots;
        for k in 0..keys {
            let col = hasher.hash(&(k as u32).to_le_bytes()) % shape.slots;
            out[k * h + row] = (base + col) as u32;
        }
    }
    out
}

/// When a fast replay may stop: a count that only grows has passed what a
/// target allows.
#[derive(Debug, Clone, Copy, Default)]
pub struct Stop {
    /// Most compliant requests denied.
    pub compliant_denied: Option<u64>,
    /// Most compliant keys denied.
    pub compliant_keys: Option<u64>,
}

/// The aligned window (multiples of the interval since the first request)
/// with the most compliant requests denied.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct WorstWindow {
    /// Its index.
    pub index: u64,
    /// Its start, seconds after the first request.
    pub start_s: f64,
    /// Compliant requests denied in it.
    pub compliant_denied: u64,
}

/// The decision lab's harm figures of one shape on one hash seed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Figures {
    /// Requests of compliant keys denied.
    pub compliant_denied: u64,
    /// Compliant keys with a request denied.
    pub compliant_keys_hit: u64,
    /// `compliant_denied` as % of compliant requests.
    pub compliant_denied_pct: f64,
    /// Requests of limited keys admitted beyond the exact limiter.
    pub limited_excess: i64,
    /// `limited_excess` as % of what the exact limiter admitted for them.
    pub limited_excess_pct: f64,
    /// The worst aligned window for compliant keys (none denied: None).
    pub worst_window: Option<WorstWindow>,
    /// False when the replay stopped early (a target could no longer hold):
    /// the counts are then lower bounds, reached part-way.
    pub complete: bool,
}

impl Figures {
    /// Whether these figures can be a replay's over `classes`: the
    /// percentages those of the counts, the counts within the classes'.
    /// How a merge checks figures a shard wrote without replaying them.
    pub fn adds_up(&self, classes: &Classes) -> bool {
        self.compliant_denied <= classes.compliant_requests
            && self.compliant_keys_hit <= classes.compliant_keys.min(self.compliant_denied)
            && self.compliant_denied_pct.to_bits()
                == pct(self.compliant_denied, classes.compliant_requests).to_bits()
            && self.limited_excess_pct.to_bits()
                == excess_pct(self.limited_excess, classes).to_bits()
            && self.worst_window.is_none_or(|w| {
                w.compliant_denied <= self.compliant_denied && w.start_s.is_finite()
            })
            && self.worst_window.is_some() == (self.compliant_denied > 0)
    }
}

/// `limited_excess` as % of what the exact limiter admitted for them.
fn excess_pct(excess: i64, classes: &Classes) -> f64 {
    if classes.limited_oracle_admitted == 0 {
        0.0
    } else {
        100.0 * excess as f64 / classes.limited_oracle_admitted as f64
    }
}

fn pct(n: u64, d: u64) -> f64 {
    if d == 0 {
        0.0
    } else {
        100.0 * n as f64 / d as f64
    }
}

/// How many requests ahead [`tally`] names the key a replay will need, so
/// that its cells can be prefetched: far enough to cover a memory
/// latency, near enough to stay in cache.
const AHEAD: usize = 16;

/// Tallies `allow` over every request like the decision lab's harm;
/// `allow` is also told the key [`AHEAD`] requests later.
fn tally(
    trace: &TimedTrace,
    classes: &Classes,
    policy: LimitPolicy,
    stop: Stop,
    mut allow: impl FnMut(u32, u64, Nanos, Option<u32>) -> Result<bool>,
) -> Result<Figures> {
    let interval = policy.interval_ns().max(1);
    let mut denied = vec![0u32; classes.requests.len()];
    let (mut cd, mut hit) = (0u64, 0u64);
    let mut win = (0u64, 0u64);
    let mut worst: Option<WorstWindow> = None;
    let mut complete = true;
    for i in 0..trace.len() {
        let (k, t) = (trace.key[i], trace.t[i]);
        if allow(k, trace.w(i), t, trace.key.get(i + AHEAD).copied())? {
            continue;
        }
        let d = &mut denied[k as usize];
        *d = d.saturating_add(1);
        if !classes.is_compliant(k) {
            continue;
        }
        cd += 1;
        hit += u64::from(*d == 1);
        let w = t / interval;
        if win.0 != w {
            win = (w, 0);
        }
        win.1 += 1;
        if worst.is_none_or(|x| win.1 > x.compliant_denied) {
            worst = Some(WorstWindow {
                index: w,
                start_s: (w * interval) as f64 / 1e9,
                compliant_denied: win.1,
            });
        }
        if stop.compliant_denied.is_some_and(|m| cd > m)
            || stop.compliant_keys.is_some_and(|m| hit > m)
        {
            complete = false;
            break;
        }
    }
    let mut excess = 0i64;
    for (k, &n) in classes.requests.iter().enumerate() {
        let od = classes.oracle_denied[k];
        if n > 0 && od > 0 {
            excess += i64::from(od) - i64::from(denied[k]);
        }
    }
    let excess_pct = excess_pct(excess, classes);
    Ok(Figures {
        compliant_denied: cd,
        compliant_keys_hit: hit,
        compliant_denied_pct: pct(cd, classes.compliant_requests),
        limited_excess: excess,
        limited_excess_pct: excess_pct,
        worst_window: worst,
        complete,
    })
}

fn interval(policy: LimitPolicy) -> Duration {
    Duration::from_millis(policy.interval_ms)
}

/// Both windows of a `Rate` on precomputed cells: per key id, `2h` flat
/// indexes (red rows, then blue rows), so one cache line holds a key's
/// cells in both sketches for up to 8 rows.
struct Windows2 {
    table: Vec<u32>,
    h: usize,
    /// Red's cells, then blue's (`h × slots` each): 32 bits, half the
    /// cache footprint of the model's 64, exact while the trace's total
    /// weight fits (checked by [`replay_fast`]).
    cells: Vec<i32>,
    /// Cells touched since each sketch's last reset.
    touched: [Vec<u32>; 2],
    per_sketch: usize,
}

impl Windows2 {
    fn new(keys: usize, shape: RateShape, seed: u64) -> Self {
        let h = shape.hashes;
        let per_sketch = h * shape.slots as usize;
        let red = cell_table(keys, shape, derive_seed(seed, &[0]));
        let blue = cell_table(keys, shape, derive_seed(seed, &[1]));
        let mut table = vec![0u32; keys * 2 * h];
        for k in 0..keys {
            table[k * 2 * h..k * 2 * h + h].copy_from_slice(&red[k * h..(k + 1) * h]);
            for r in 0..h {
                table[k * 2 * h + h + r] = blue[k * h + r] + per_sketch as u32;
            }
        }
        Self {
            table,
            h,
            cells: vec![0; 2 * per_sketch],
            touched: [Vec::new(), Vec::new()],
            per_sketch,
        }
    }

    /// Asks the CPU to bring key `k`'s cell indexes into cache: the table
    /// (32 bytes per key) outgrows the caches at a few hundred thousand
    /// keys, and a miss per request was 70% of a replay's time. A hint
    /// only: no effect on any result.
    #[inline]
    fn prefetch(&self, k: u32) {
        let at = k as usize * 2 * self.h;
        if let Some(p) = self.table.get(at) {
            crate::prefetch::read(p);
        }
    }

    /// The cells of key `k` in sketch `s` (0 red, 1 blue).
    #[inline]
    fn of(&self, k: u32, s: usize) -> &[u32] {
        let at = k as usize * 2 * self.h + s * self.h;
        &self.table[at..at + self.h]
    }

    #[inline]
    fn get(&self, k: u32, s: usize) -> i64 {
        i64::from(
            self.of(k, s)
                .iter()
                .fold(i32::MAX, |m, &c| m.min(self.cells[c as usize])),
        )
    }

    /// pingora's `incr`: every row `fetch_add`s, the minimum of the new
    /// values is returned.
    #[inline]
    fn incr(&mut self, k: u32, s: usize, v: i32) -> i64 {
        let at = k as usize * 2 * self.h + s * self.h;
        let mut min = i32::MAX;
        for &c in &self.table[at..at + self.h] {
            let cell = &mut self.cells[c as usize];
            if *cell == 0 {
                self.touched[s].push(c);
            }
            *cell = cell.wrapping_add(v);
            min = min.min(*cell);
        }
        i64::from(min)
    }

    fn reset(&mut self, s: usize) {
        let range = s * self.per_sketch..(s + 1) * self.per_sketch;
        if self.touched[s].len() < self.per_sketch / 4 {
            for &c in &self.touched[s] {
                self.cells[c as usize] = 0;
            }
        } else {
            self.cells[range].iter_mut().for_each(|c| *c = 0);
        }
        self.touched[s].clear();
    }
}

/// The fast replay of `shape` with the decision lab's hash seed for
/// scenario seed `lab_seed`: `Rate`'s single-threaded semantics written out
/// (`maybe_reset` on every call, windows flipping at the first call
/// `interval` whole ms after the last flip, both slots cleared after two
/// intervals, `rate_with`'s components and fraction) on precomputed cells.
/// Equal to [`replay_model`] decision for decision (a test; the search
/// checks it again on every shape it reports).
pub fn replay_fast(
    trace: &TimedTrace,
    classes: &Classes,
    policy: LimitPolicy,
    mode: RateMode,
    shape: RateShape,
    lab_seed: u64,
    stop: Stop,
) -> Result<Figures> {
    check_shape(shape)?;
    if trace.total_weight() >= i32::MAX as u64 {
        // Cells could pass 32 bits: the model itself, without stopping early.
        return replay_model(trace, classes, policy, mode, shape, lab_seed);
    }
    let mut r = FastRate {
        sk: Windows2::new(trace.names.len(), shape, lab_hash_seed(lab_seed, shape)),
        iv: interval(policy).as_millis() as u64,
        last_reset: 0,
        red: true,
    };
    let limit = policy.limit as i64;
    tally(trace, classes, policy, stop, |k, w, t, ahead| {
        if let Some(a) = ahead {
            r.sk.prefetch(a);
        }
        // w < 2^31: the total weight is.
        let (w, w32) = (w as i64, w as i32);
        Ok(match mode {
            RateMode::Docs => {
                r.maybe_reset(t);
                r.sk.incr(k, r.cur(), w32) <= limit
            }
            RateMode::Proportional => {
                let past = r.maybe_reset(t);
                let iv = r.iv;
                let (p, c) = if past >= iv.wrapping_mul(2) {
                    (0, 0)
                } else if past >= iv {
                    (r.sk.get(k, 1 - r.cur()), 0)
                } else {
                    (r.sk.get(k, 1 - r.cur()), r.sk.get(k, r.cur()))
                };
                let frac = if iv == 0 {
                    0.0
                } else {
                    (past % iv) as f64 / iv as f64
                };
                let est = p as f64 * (1. - frac) + c as f64;
                let allow = est + ((w - 1) as f64) < (limit as f64);
                if allow {
                    r.maybe_reset(t);
                    r.sk.incr(k, r.cur(), w32);
                }
                allow
            }
        })
    })
}

/// `Rate`'s window state (single-threaded, release build, times not
/// decreasing), created at time 0.
struct FastRate {
    sk: Windows2,
    /// `reset_interval_ms`.
    iv: u64,
    /// `last_reset_time`, ms.
    last_reset: u64,
    /// true: red (sketch 0) is the current window.
    red: bool,
}

impl FastRate {
    #[inline]
    fn cur(&self) -> usize {
        if self.red {
            0
        } else {
            1
        }
    }

    /// `maybe_reset` at `now_ns`: returns the pre-flip `past_ms`.
    #[inline]
    fn maybe_reset(&mut self, now_ns: Nanos) -> u64 {
        let now = now_ns / crate::clock::MILLI;
        let past = now.wrapping_sub(self.last_reset);
        if past < self.iv {
            return past;
        }
        self.last_reset = now;
        let cur = self.cur();
        self.sk.reset(1 - cur);
        self.red = !self.red;
        if past >= self.iv.wrapping_mul(2) {
            // The old current, now previous.
            self.sk.reset(cur);
        }
        past
    }
}

/// The same replay through `RateLimiter::sketch`, exactly as the decision
/// lab builds a `pingora_rate` candidate of `shape`.
pub fn replay_model(
    trace: &TimedTrace,
    classes: &Classes,
    policy: LimitPolicy,
    mode: RateMode,
    shape: RateShape,
    lab_seed: u64,
) -> Result<Figures> {
    check_shape(shape)?;
    let cfg = EstimatorConfig::new(shape.hashes, shape.slots as usize);
    let mut lim = RateLimiter::sketch(
        mode,
        policy.limit,
        interval(policy),
        cfg,
        lab_hash_seed(lab_seed, shape),
    );
    tally(trace, classes, policy, Stop::default(), |k, w, t, _| {
        crate::model::Admit::admit(&mut lim, k, w, t).map(|d| d.allowed)
    })
}

/// Any decision-lab model ([`crate::model::Admit`]) over the trace, tallied
/// as the lab's harm columns (a delayed request is admitted): how
/// `ratelab recommend` measures a limiter setting.
///
/// # Examples
///
/// ```
/// use ratelab::model::governor::GovernorKeyed;
/// use ratelab::sizing::input::TimedTrace;
/// use ratelab::sizing::limit::{replay_admit, Classes, LimitPolicy};
/// use std::time::Duration;
/// // One key sending 4 requests 10 ms apart, at most 2 per second.
/// let tr = TimedTrace::from_events(&[(0, "a", 1), (10_000_000, "a", 1), (20_000_000, "a", 1), (30_000_000, "a", 1)]);
/// let policy = LimitPolicy { limit: 2, interval_ms: 1000 };
/// let c = Classes::of(&tr, policy);
/// let mut g = GovernorKeyed::new(Duration::from_millis(500), 2)?;
/// let f = replay_admit(&tr, &c, policy, &mut g)?;
/// assert_eq!((f.compliant_denied, f.limited_excess), (0, 0));
/// # Ok::<(), ratelab::error::Error>(())
/// ```
pub fn replay_admit(
    trace: &TimedTrace,
    classes: &Classes,
    policy: LimitPolicy,
    limiter: &mut dyn crate::model::Admit,
) -> Result<Figures> {
    tally(trace, classes, policy, Stop::default(), |k, w, t, _| {
        limiter.admit(k, w, t).map(|d| d.allowed)
    })
}

/// Shapes whose flat cell index fits in 32 bits.
fn check_shape(shape: RateShape) -> Result<()> {
    if shape.hashes == 0
        || shape.slots == 0
        || (shape.hashes as u64).saturating_mul(shape.slots) > u64::from(u32::MAX)
    {
        return Err(Error::input(format!(
            "shape {}: expected 1.. hashes and slots, hashes x slots < 2^32",
            shape.label()
        )));
    }
    Ok(())
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// 60 keys over 8 s, key i every 20 + 7i ms (50/s down to 2.3/s), a
    /// silence of 2.5 s in the middle (both windows cleared), every 11th
    /// request of weight 2, times with nanosecond jitter.
    pub(crate) fn trace() -> TimedTrace {
        let mut ev = Vec::new();
        for ms in 0..8000u64 {
            if (3000..5500).contains(&ms) {
                continue;
            }
            for i in 0..60u64 {
                if (ms + 3 * i) % (20 + 7 * i) == 0 {
                    let w = 1 + u64::from(ev.len() % 11 == 0);
                    ev.push((ms * 1_000_000 + (i * 37) % 1000, format!("k{i}"), w));
                }
            }
        }
        TimedTrace::from_events(&ev)
    }

    #[test]
    fn fast_replay_equals_the_model_in_both_modes() {
        let tr = trace();
        let policy = LimitPolicy {
            limit: 10,
            interval_ms: 1000,
        };
        let c = Classes::of(&tr, policy);
        assert!(c.compliant_keys > 10 && c.limited_keys > 5, "{c:?}");
        for mode in [RateMode::Docs, RateMode::Proportional] {
            let mut some_denied = false;
            for (h, w) in [(1, 4u64), (2, 16), (4, 7), (3, 1024), (8, 3)] {
                let s = RateShape {
                    hashes: h,
                    slots: w,
                };
                let fast = replay_fast(&tr, &c, policy, mode, s, 9, Stop::default()).unwrap();
                let model = replay_model(&tr, &c, policy, mode, s, 9).unwrap();
                assert_eq!(fast, model, "{mode:?} {h}x{w}");
                some_denied |= fast.compliant_denied > 0;
            }
            assert!(some_denied, "{mode:?}: the tiny shapes deny compliant keys");
        }
    }

    #[test]
    fn stopping_early_reports_an_incomplete_lower_bound() {
        let tr = trace();
        let policy = LimitPolicy {
            limit: 5,
            interval_ms: 1000,
        };
        let c = Classes::of(&tr, policy);
        let s = RateShape {
            hashes: 1,
            slots: 4,
        };
        let full = replay_fast(&tr, &c, policy, RateMode::Docs, s, 1, Stop::default()).unwrap();
        assert!(full.compliant_denied > 3);
        let stop = Stop {
            compliant_denied: Some(2),
            compliant_keys: None,
        };
        let part = replay_fast(&tr, &c, policy, RateMode::Docs, s, 1, stop).unwrap();
        assert!(!part.complete && full.complete);
        assert_eq!(part.compliant_denied, 3);
    }
}
