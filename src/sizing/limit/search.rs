//! The search for the cheapest `Rate` shape meeting limit targets, per
//! estimate mode:
//!
//! 1. **Bisection on the first seed.** For each `hashes` (4, 2, 3, 1, 5, 6,
//!    7, 8), slots double from 16 until a shape passes (or the memory of the
//!    cheapest pass so far is reached), then are bisected geometrically
//!    between the last failure and the first pass to a ratio of 1/16. Each evaluation is a fast replay that stops as soon as
//!    a growing count (compliant requests or keys denied) passes what the
//!    targets allow, so failing shapes cost a fraction of a pass. A pass
//!    here must meet half of each ceiling ([`BISECT_MARGIN`]).
//! 2. **Verification** against the [`Plan`] of the claim (by default
//!    "meets the targets on >= 99% of hash seeds, 95% confidence": 299
//!    fresh seeds, no failure allowed; see [`crate::sizing::guarantee`]).
//!    Each rows' cheapest first-seed pass is a candidate, cheapest first.
//!    A candidate is replayed on the fresh seeds (the decision lab's seeds
//!    `seed + 1 ..= seed + n`, never the search seed), each replay stopping
//!    as soon as a target is lost, the candidate rejected at the first
//!    failure beyond what the plan allows, so a failure is cheap. A failure
//!    queues the same rows with twice the slots (or halfway to a verified
//!    pass of those rows); a pass becomes the pick and queues the point
//!    halfway down to the largest failure of its rows, to a ratio of 1/8.
//!    Candidates costing at least the pick are dropped; at most
//!    [`MAX_VERIFICATIONS`] verifications.
//! 3. **Confirmation.** The pick and the frontier shapes (the pick's rows at
//!    1/8 .. 2× its slots, the cheapest pass of every other `hashes` and
//!    `Rate::new`'s default 4 × 1024) are
//!    replayed on the first seed through `RateLimiter::sketch`, the decision
//!    lab's own builder; a difference from the fast replay (the pick's, and
//!    every other shape's the search replayed to the end) is a bug and
//!    stops the command (exit 3). See [`super::confirm`].
//!
//! `size --shard` splits the verifications by fresh seed ([`super::split`]):
//! each shard replays its slice of the seeds of every shape the walk may
//! ask for, and its share of the confirmation's model replays
//! ([`super::first_seed`]); `merge` assembles each verification from the
//! slices and reads the bisection and the model replays from the parts.
//!
//! Monotone in slots only statistically (every shape has its own hash
//! seed, as in the lab); the verification catches a lucky bisection point.

use super::classes::{Classes, LimitPolicy};
use super::confirm::{confirm, FirstSeed};
use super::replay::{replay_fast, replay_model, Figures, RateShape, Stop};
use super::targets::{LimitMetric, LimitTarget};
use super::windows::{window_errors, Windows, WorstError};
use crate::error::Result;
use crate::model::rate_limiter::RateMode;
use crate::sizing::guarantee::{verify_chunked, Exceedance, Plan};
use crate::sizing::input::TimedTrace;
use serde::{Deserialize, Serialize};

/// Rows tried, in order (pingora's default first).
pub const HASHES_ORDER: [usize; 8] = [4, 2, 3, 1, 5, 6, 7, 8];
/// Fewest and most slots tried.
pub const SLOTS_RANGE: (u64, u64) = (16, 1 << 22);
/// Bisection stops when hi / lo is at most 1 + 1 / this.
pub const BISECT_RESOLUTION: f64 = 16.0;
/// The bisection on the first seed asks for this share of each ceiling
/// (and of each floor's complement), so that its pass usually verifies on
/// the other seeds at once: compliant denials fall steeply with slots, so
/// the margin costs a few percent of memory and saves verifications.
pub const BISECT_MARGIN: f64 = 0.5;

/// Everything a limit sizing evaluates shapes on.
pub struct Ctx<'a> {
    /// The trace (None for a `key,count` file).
    pub trace: Option<&'a TimedTrace>,
    /// The exact policy's classes (with a trace).
    pub classes: Option<&'a Classes>,
    /// Per-window counts.
    pub windows: &'a Windows,
    /// The policy.
    pub policy: LimitPolicy,
    /// Near-limit counts, inclusive.
    pub near: (u64, u64),
    /// Targets; all must hold.
    pub targets: &'a [LimitTarget],
    /// The decision lab seed of the first hash seed.
    pub seed: u64,
    /// The claim's verification plan: fresh seeds and failures allowed.
    pub plan: Plan,
    /// Most memory (both windows).
    pub max_memory: u64,
    /// Called once per replay or window pass (progress).
    pub on_eval: &'a (dyn Fn() + Sync),
}

/// One shape on one hash seed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SeedEval {
    /// The decision lab's scenario seed that reproduces it.
    pub lab_seed: u64,
    /// The decision figures (decision targets only).
    pub figures: Option<Figures>,
    /// The worst windows of the error metrics (error targets only).
    pub errors: Vec<WorstError>,
    /// Meets every target.
    pub meets: bool,
}

/// One shape evaluated.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ShapeEval {
    /// The shape.
    pub shape: RateShape,
    /// Both windows' memory.
    pub memory_bytes: u64,
    /// `bisect`, `verify`, `grow`, `refine`, `frontier`, `bound`.
    pub phase: &'static str,
    /// Per seed, first the search seed.
    pub seeds: Vec<SeedEval>,
    /// Meets every target on every seed evaluated (a verification: its
    /// plan holds).
    pub meets: bool,
    /// A verification's tally (None: first seed only).
    pub exceedance: Option<Exceedance>,
}

impl ShapeEval {
    /// A verification's evaluation: `seeds` in order and their tally,
    /// which says whether the shape meets the plan.
    pub(crate) fn verified(
        shape: RateShape,
        phase: &'static str,
        seeds: Vec<SeedEval>,
        ex: Exceedance,
    ) -> ShapeEval {
        ShapeEval {
            shape,
            memory_bytes: shape.memory(),
            phase,
            seeds,
            meets: ex.holds,
            exceedance: Some(ex),
        }
    }
}

/// One estimate mode's answer.
#[derive(Debug, Clone, Serialize)]
pub struct ModeResult {
    /// `docs` or `proportional`.
    pub mode: &'static str,
    /// Every evaluation in order.
    pub evaluated: Vec<ShapeEval>,
    /// The verified pick (index into `evaluated`, phase `verify`/`grow`/`refine`).
    pub pick: Option<usize>,
    /// Verified and rejected (a target lost on more seeds than the plan allows).
    pub rejected: Vec<RateShape>,
    /// The pick and the frontier shapes replayed through the model on the
    /// first seed, memory ascending.
    pub confirmed: Vec<ShapeEval>,
}

impl Ctx<'_> {
    fn decision_targets(&self) -> bool {
        self.targets.iter().any(|t| t.metric.is_decision())
    }

    fn error_targets(&self) -> bool {
        self.targets.iter().any(|t| !t.metric.is_decision())
    }

    /// The largest counts the targets allow (with `margin`), for stopping
    /// a replay early.
    fn stop(&self, margin: f64) -> Stop {
        let Some(c) = self.classes else {
            return Stop::default();
        };
        let mut stop = Stop::default();
        for t in self.targets {
            let (limit, denom) = match t.metric {
                LimitMetric::CompliantDeniedPct => {
                    (&mut stop.compliant_denied, c.compliant_requests)
                }
                LimitMetric::CompliantKeysDenied => (&mut stop.compliant_keys, 0),
                _ => continue,
            };
            let value = |n: u64| {
                if denom == 0 {
                    n as f64
                } else {
                    100.0 * n as f64 / denom as f64
                }
            };
            // The largest n that still holds (the figure grows with n).
            let guess = if denom == 0 {
                t.threshold.max(0.0).floor() as u64
            } else {
                (t.threshold.max(0.0) / 100.0 * denom as f64).floor() as u64
            };
            let mut n = guess.saturating_add(1);
            while n > 0 && !holds_with(t, value(n), margin) {
                n -= 1;
            }
            if n == 0 && !holds_with(t, value(0), margin) {
                continue;
            }
            *limit = Some(limit.map_or(n, |m: u64| m.min(n)));
        }
        stop
    }

    /// The value of a target on one seed (None: not measured).
    fn value(t: &LimitTarget, s: &SeedEval) -> Option<f64> {
        match t.metric {
            LimitMetric::CompliantDeniedPct => s.figures.as_ref().map(|f| f.compliant_denied_pct),
            LimitMetric::CompliantKeysDenied => {
                s.figures.as_ref().map(|f| f.compliant_keys_hit as f64)
            }
            LimitMetric::ExcessPct => s.figures.as_ref().map(|f| f.limited_excess_pct),
            LimitMetric::Error(m) => Some(
                s.errors
                    .iter()
                    .find(|e| e.metric == m)
                    .map_or(if m.higher_is_better() { 100.0 } else { 0.0 }, |e| e.value),
            ),
        }
    }

    /// Whether seed `s` meets every target, each ceiling scaled by `margin`.
    pub(super) fn seed_meets(&self, s: &SeedEval, margin: f64) -> bool {
        if s.figures.as_ref().is_some_and(|f| !f.complete) {
            return false;
        }
        self.targets
            .iter()
            .all(|t| Self::value(t, s).is_some_and(|v| holds_with(t, v, margin)))
    }

    /// `shape` on seed index `r` (the lab seed `seed + r`), fast or through the model.
    pub(super) fn eval_seed(
        &self,
        mode: RateMode,
        shape: RateShape,
        r: u32,
        model: bool,
        margin: f64,
    ) -> Result<SeedEval> {
        let lab_seed = self.seed.wrapping_add(u64::from(r));
        let figures = match (self.trace, self.classes, self.decision_targets() || model) {
            (Some(tr), Some(c), true) => Some(if model {
                replay_model(tr, c, self.policy, mode, shape, lab_seed)?
            } else {
                replay_fast(tr, c, self.policy, mode, shape, lab_seed, self.stop(margin))?
            }),
            _ => None,
        };
        let errors = if self.error_targets() {
            window_errors(self.windows, shape, lab_seed, self.near)
        } else {
            Vec::new()
        };
        (self.on_eval)();
        let mut s = SeedEval {
            lab_seed,
            figures,
            errors,
            meets: false,
        };
        s.meets = self.seed_meets(&s, margin);
        Ok(s)
    }

    /// `shape` on the first seed (the search seed), fast or through the model.
    pub(super) fn eval(
        &self,
        mode: RateMode,
        shape: RateShape,
        phase: &'static str,
        model: bool,
    ) -> Result<ShapeEval> {
        let margin = if phase == "bisect" {
            BISECT_MARGIN
        } else {
            1.0
        };
        let s = self.eval_seed(mode, shape, 0, model, margin)?;
        Ok(ShapeEval {
            shape,
            memory_bytes: shape.memory(),
            phase,
            meets: s.meets,
            seeds: vec![s],
            exceedance: None,
        })
    }

    /// `shape` on the plan's fresh seeds (seed indexes `1..=plan.seeds`,
    /// never the search seed), each replay stopping once a target is lost,
    /// the whole verification stopping at the first failure beyond what
    /// the plan allows.
    pub fn verify(
        &self,
        mode: RateMode,
        shape: RateShape,
        phase: &'static str,
    ) -> Result<ShapeEval> {
        let (per, ex) = verify_chunked(&self.plan, 1..=u64::from(self.plan.seeds), |r| {
            let s = self.eval_seed(mode, shape, r as u32, false, 1.0)?;
            let met = s.meets;
            Ok((s, met))
        })?;
        Ok(ShapeEval::verified(shape, phase, per, ex))
    }

    /// The most slots of `h` rows within the cap (and under `below` bytes).
    fn max_slots(&self, h: usize, below: Option<u64>) -> u64 {
        let cap = match below {
            Some(b) => self.max_memory.min(b.saturating_sub(1)),
            None => self.max_memory,
        };
        (cap / (16 * h as u64)).min(SLOTS_RANGE.1)
    }
}

/// Whether `v` meets `t` with its ceiling scaled by `margin` (a floor P
/// becomes 100 − margin·(100 − P)); `excess_pct` and zero thresholds are
/// taken as they are.
fn holds_with(t: &LimitTarget, v: f64, margin: f64) -> bool {
    use crate::sizing::targets::Cmp;
    if margin == 1.0 || t.metric == LimitMetric::ExcessPct || t.threshold <= 0.0 {
        return t.holds(v);
    }
    match t.cmp {
        Cmp::Le | Cmp::Lt => t.cmp.holds(v, t.threshold * margin),
        Cmp::Ge | Cmp::Gt => t.cmp.holds(v, 100.0 - margin * (100.0 - t.threshold)),
    }
}

/// Most verifications (each on up to every plan seed) before the search
/// gives up; failing ones stop at their first failure.
pub const MAX_VERIFICATIONS: usize = 48;
/// Verification refines slots between a failing and a passing shape of the
/// same rows until hi / lo is at most 1 + 1 / this.
pub const VERIFY_RESOLUTION: f64 = 8.0;

/// Runs the search of one mode (see the module docs): the bisection, the
/// verification walk and the confirmation.
pub fn search_mode(ctx: &Ctx<'_>, mode: RateMode) -> Result<ModeResult> {
    let bisect = bisect_mode(ctx, mode)?;
    let verify = |s: RateShape, phase: &'static str| ctx.verify(mode, s, phase);
    finish_mode(ctx, mode, bisect, &verify, ctx)
}

/// Phase 1 of one mode: the bisection on the first seed, for every rows
/// in [`HASHES_ORDER`], each capped below the cheapest first-seed pass so
/// far. Cheap (one seed, replays that stop once a target is lost) and the
/// same on every shard: each `size --shard` runs it whole and writes it in
/// its part, and `merge` reads it from there ([`bisect_by`]).
pub fn bisect_mode(ctx: &Ctx<'_>, mode: RateMode) -> Result<Vec<ShapeEval>> {
    bisect_by(ctx, &mut |s| ctx.eval(mode, s, "bisect", false))
}

/// The bisection of [`bisect_mode`] with each shape's first-seed
/// evaluation asked of `eval` in the bisection's order: a replay, or at a
/// merge the next evaluation a shard wrote, checked to be the shape the
/// bisection asks for.
pub fn bisect_by(
    ctx: &Ctx<'_>,
    eval: &mut dyn FnMut(RateShape) -> Result<ShapeEval>,
) -> Result<Vec<ShapeEval>> {
    let mut evaluated: Vec<ShapeEval> = Vec::new();
    let mut best: Option<usize> = None;
    for h in HASHES_ORDER {
        let below = best.map(|b| evaluated[b].memory_bytes);
        let cap = ctx.max_slots(h, below);
        if cap < SLOTS_RANGE.0 {
            continue;
        }
        let mut first = |s: u64| -> Result<bool> {
            let e = eval(RateShape {
                hashes: h,
                slots: s,
            })?;
            let ok = e.meets;
            evaluated.push(e);
            Ok(ok)
        };
        // Doubling from the fewest slots: failing shapes stop early.
        let (mut lo, mut hi) = (SLOTS_RANGE.0 / 2, None);
        let mut s = SLOTS_RANGE.0;
        loop {
            if first(s)? {
                hi = Some(s);
                break;
            }
            lo = s;
            if s >= cap {
                break;
            }
            s = (s * 2).min(cap);
        }
        let Some(mut hi) = hi else { continue };
        while hi > lo + 1 && (hi as f64) > (lo as f64) * (1.0 + 1.0 / BISECT_RESOLUTION) {
            let mid = (libm::sqrt(lo as f64 * hi as f64).round() as u64).clamp(lo + 1, hi - 1);
            if first(mid)? {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        let idx = evaluated
            .iter()
            .rposition(|e| {
                e.shape
                    == RateShape {
                        hashes: h,
                        slots: hi,
                    }
            })
            .unwrap_or(0);
        if best.is_none_or(|b| evaluated[idx].memory_bytes < evaluated[b].memory_bytes) {
            best = Some(idx);
        }
    }
    Ok(evaluated)
}

/// The verification units of a mode after its bisection: each rows'
/// cheapest first-seed pass, in [`HASHES_ORDER`], each verified on its
/// own.
pub fn units_of(bisect: &[ShapeEval]) -> Vec<RateShape> {
    HASHES_ORDER
        .iter()
        .filter_map(|&h| {
            bisect
                .iter()
                .filter(|e| e.meets && e.shape.hashes == h)
                .min_by_key(|e| e.shape.slots)
                .map(|e| e.shape)
        })
        .collect()
}

/// The next shape of `shape`'s rows after it failed with no verified pass
/// above: twice the slots, within the cap (None: at the cap).
fn grown(ctx: &Ctx<'_>, shape: RateShape) -> Option<RateShape> {
    let next = RateShape {
        hashes: shape.hashes,
        slots: shape
            .slots
            .saturating_mul(2)
            .min(ctx.max_slots(shape.hashes, None)),
    };
    (next.slots > shape.slots).then_some(next)
}

/// The geometric midpoint of `lo` and `hi` slots while they are more than
/// 1/[`VERIFY_RESOLUTION`] apart.
fn between(lo: u64, hi: u64) -> Option<u64> {
    let wide = hi > lo + 1 && (hi as f64) > (lo as f64) * (1.0 + 1.0 / VERIFY_RESOLUTION);
    wide.then(|| (libm::sqrt(lo as f64 * hi as f64).round() as u64).clamp(lo + 1, hi - 1))
}

/// The order verification pops candidates in: memory, then rows, then slots.
fn key(s: &RateShape) -> (u64, usize, u64) {
    (s.memory(), s.hashes, s.slots)
}

/// Phases 2 and 3 of one mode: the verification walk on the plan's fresh
/// seeds, each shape's verification asked of `verify` (a replay here, or
/// a look-up in the shards' evaluations at a merge), then the
/// confirmation. Each rows' cheapest first-seed pass is a candidate; the
/// cheapest candidate is verified first. A failure queues the same rows
/// with twice the slots (or halfway, geometrically, to a verified pass of
/// those rows); a pass becomes the pick and queues the point halfway down
/// to the largest failure of its rows. Candidates costing at least the
/// pick, or with fewer slots than a verified failure of their rows, are
/// dropped; at most [`MAX_VERIFICATIONS`].
///
/// The confirmation's first-seed replays are asked of `first` (replayed
/// here, or read from the shards' parts at a merge).
pub fn finish_mode(
    ctx: &Ctx<'_>,
    mode: RateMode,
    bisect: Vec<ShapeEval>,
    verify: &dyn Fn(RateShape, &'static str) -> Result<ShapeEval>,
    first: &dyn FirstSeed,
) -> Result<ModeResult> {
    let (evaluated, pick, rejected) = walk(ctx, bisect, verify)?;
    let confirmed = confirm(ctx, mode, &evaluated, pick, first)?;
    Ok(ModeResult {
        mode: super::replay::mode_name(mode),
        evaluated,
        pick,
        rejected,
        confirmed,
    })
}

/// What the verification walk found: every evaluation (the bisection's
/// first), the pick's index and the rejected shapes.
pub type Walk = (Vec<ShapeEval>, Option<usize>, Vec<RateShape>);

/// The verification walk of [`finish_mode`], without the confirmation.
pub fn walk(
    ctx: &Ctx<'_>,
    bisect: Vec<ShapeEval>,
    verify: &dyn Fn(RateShape, &'static str) -> Result<ShapeEval>,
) -> Result<Walk> {
    let mut queue: Vec<(RateShape, &'static str)> = units_of(&bisect)
        .into_iter()
        .map(|s| (s, "verify"))
        .collect();
    let mut evaluated = bisect;
    let mut rejected: Vec<RateShape> = Vec::new();
    let mut passed: Vec<RateShape> = Vec::new();
    let mut pick: Option<usize> = None;
    let mut tried: Vec<RateShape> = Vec::new();
    while tried.len() < MAX_VERIFICATIONS {
        let pick_mem = pick.map(|p| evaluated[p].memory_bytes);
        queue.retain(|(s, _)| {
            !tried.contains(s)
                && pick_mem.is_none_or(|m| s.memory() < m)
                && !rejected
                    .iter()
                    .any(|f| f.hashes == s.hashes && f.slots >= s.slots)
        });
        queue.sort_by_key(|(s, _)| std::cmp::Reverse(key(s)));
        let Some((shape, phase)) = queue.pop() else {
            break;
        };
        tried.push(shape);
        let e = verify(shape, phase)?;
        let ok = e.meets;
        evaluated.push(e);
        let h = shape.hashes;
        let with = |s: u64| RateShape {
            hashes: h,
            slots: s,
        };
        if ok {
            pick = Some(evaluated.len() - 1);
            passed.push(shape);
            let lo = rejected
                .iter()
                .filter(|f| f.hashes == h && f.slots < shape.slots)
                .map(|f| f.slots)
                .max();
            if let Some(mid) = lo.and_then(|lo| between(lo, shape.slots)) {
                queue.push((with(mid), "refine"));
            }
            continue;
        }
        rejected.push(shape);
        let hi = passed
            .iter()
            .filter(|p| p.hashes == h && p.slots > shape.slots)
            .map(|p| p.slots)
            .min();
        let next = match hi {
            Some(hi) => between(shape.slots, hi).map(|m| (with(m), "refine")),
            None => grown(ctx, shape).map(|n| (n, "grow")),
        };
        if let Some(n) = next {
            queue.push(n);
        }
    }
    Ok((evaluated, pick, rejected))
}

/// The Pareto frontier of confirmed shapes (memory vs compliant denied %):
/// indexes of shapes no cheaper shape beats, memory ascending.
pub fn frontier(confirmed: &[ShapeEval]) -> Vec<usize> {
    let mut out = Vec::new();
    let mut best = f64::INFINITY;
    for (i, e) in confirmed.iter().enumerate() {
        let v = e.seeds[0]
            .figures
            .as_ref()
            .map_or(f64::INFINITY, |f| f.compliant_denied_pct);
        if v < best {
            best = v;
            out.push(i);
        }
    }
    out
}
