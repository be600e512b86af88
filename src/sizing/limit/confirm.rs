//! Phase 3 of the search: the pick and the frontier shapes replayed on
//! the first seed through `RateLimiter::sketch` (the decision lab's own
//! builder), each checked against the fast replay where the search has
//! one to the end.
//!
//! The shapes come in two kinds, kept apart because `size --shard` splits
//! them differently ([`super::first_seed`]):
//!
//! * [`fixed_shapes`]: the cheapest first-seed pass of every `hashes` and
//!   `Rate::new`'s default 4 × 1024, known once the bisection is (every
//!   shard runs it);
//! * [`anchor_shapes`]: the pick's rows at 1/8, 1/4, 1/2, 1 and 2 × its
//!   slots (the largest shape evaluated when nothing verified), known only
//!   at the end of the walk.
//!
//! Where a replay comes from is a [`FirstSeed`]: replayed here ([`Ctx`]),
//! or looked up in the shards' parts at a merge.

use super::replay::{mode_name, replay_fast, Figures, RateShape, Stop};
use super::search::{Ctx, SeedEval, ShapeEval, HASHES_ORDER, SLOTS_RANGE};
use crate::error::{Error, Result};
use crate::model::rate_limiter::RateMode;
use rayon::prelude::*;

/// The first-seed replays the confirmation and the bound's measure read:
/// replayed on the spot ([`Ctx`]) or taken from the shards' parts.
pub trait FirstSeed: Sync {
    /// `shape` on the first seed (the search seed) through the model.
    fn model(&self, mode: RateMode, shape: RateShape) -> Result<SeedEval>;
    /// `shape`'s fast replay on the first seed, to the end (None without
    /// a trace).
    fn fast(&self, mode: RateMode, shape: RateShape) -> Result<Option<Figures>>;
}

impl FirstSeed for Ctx<'_> {
    fn model(&self, mode: RateMode, shape: RateShape) -> Result<SeedEval> {
        self.eval_seed(mode, shape, 0, true, 1.0)
    }

    fn fast(&self, mode: RateMode, shape: RateShape) -> Result<Option<Figures>> {
        let (Some(tr), Some(c)) = (self.trace, self.classes) else {
            return Ok(None);
        };
        let f = replay_fast(tr, c, self.policy, mode, shape, self.seed, Stop::default())?;
        (self.on_eval)();
        Ok(Some(f))
    }
}

/// The confirmation's shapes known from the bisection alone: the cheapest
/// first-seed pass of every `hashes` (in [`HASHES_ORDER`]) and `Rate::new`'s
/// default 4 × 1024 when it fits the memory cap.
pub fn fixed_shapes(ctx: &Ctx<'_>, evaluated: &[ShapeEval]) -> Vec<RateShape> {
    let mut shapes = Vec::new();
    for h in HASHES_ORDER {
        let cheapest = evaluated
            .iter()
            .filter(|e| e.meets && e.shape.hashes == h && e.phase == "bisect")
            .min_by_key(|e| e.memory_bytes);
        if let Some(e) = cheapest {
            shapes.push(e.shape);
        }
    }
    // `Rate::new`'s own 4 x 1024, for comparison.
    let default = RateShape {
        hashes: crate::model::rate::RATE_HASHES,
        slots: crate::model::rate::RATE_SLOTS as u64,
    };
    if default.memory() <= ctx.max_memory {
        shapes.push(default);
    }
    shapes
}

/// The confirmation's shapes that depend on the walk's end: the anchor's
/// (the pick, else the largest shape evaluated) rows at 1/8, 1/4, 1/2, 1
/// and 2 × its slots, within the slot range and the memory cap.
pub fn anchor_shapes(
    ctx: &Ctx<'_>,
    evaluated: &[ShapeEval],
    pick: Option<usize>,
) -> Vec<RateShape> {
    let mut shapes = Vec::new();
    let anchor = pick.map(|p| evaluated[p].shape).or_else(|| {
        evaluated
            .iter()
            .max_by_key(|e| e.memory_bytes)
            .map(|e| e.shape)
    });
    if let Some(a) = anchor {
        for div in [8u64, 4, 2, 1] {
            let s = a.slots / div;
            if s >= SLOTS_RANGE.0 {
                shapes.push(RateShape {
                    hashes: a.hashes,
                    slots: s,
                });
            }
        }
        let twice = RateShape {
            hashes: a.hashes,
            slots: a.slots * 2,
        };
        if twice.memory() <= ctx.max_memory && twice.slots <= SLOTS_RANGE.1 {
            shapes.push(twice);
        }
    }
    shapes
}

/// The fast replay's figures of `s` on the first seed where the search
/// ran one to the end (a bisection's pass, or a failure a target other
/// than a growing count lost).
pub fn fast_of(ctx: &Ctx<'_>, evaluated: &[ShapeEval], s: RateShape) -> Option<Figures> {
    evaluated
        .iter()
        .filter(|e| e.shape == s)
        .flat_map(|e| e.seeds.iter())
        .find(|x| x.lab_seed == ctx.seed)
        .and_then(|x| x.figures.clone())
        .filter(|f| f.complete)
}

/// The bug check: the fast replay of `s` must give the model's figures
/// exactly (exit 3 otherwise).
pub fn check_fast(mode: RateMode, s: RateShape, fast: &Figures, model: &Figures) -> Result<()> {
    if fast == model {
        return Ok(());
    }
    Err(Error::internal(format!(
        "{} {}: the fast replay ({} compliant denied) differs from the model ({})",
        mode_name(mode),
        s.label(),
        fast.compliant_denied,
        model.compliant_denied
    )))
}

/// The pick and the frontier shapes through the model on the first seed
/// (from `first`), memory ascending, each checked against the fast replay
/// where the search has one to the end; the pick always is, its fast
/// replay asked of `first` if need be.
pub fn confirm(
    ctx: &Ctx<'_>,
    mode: RateMode,
    evaluated: &[ShapeEval],
    pick: Option<usize>,
    first: &dyn FirstSeed,
) -> Result<Vec<ShapeEval>> {
    let mut shapes = anchor_shapes(ctx, evaluated, pick);
    shapes.extend(fixed_shapes(ctx, evaluated));
    shapes.sort_by_key(|s| (s.memory(), s.hashes));
    shapes.dedup();
    let pick_shape = pick.map(|p| evaluated[p].shape);
    shapes
        .par_iter()
        .map(|&s| {
            let seed = first.model(mode, s)?;
            let fast = match fast_of(ctx, evaluated, s) {
                Some(f) => Some(f),
                // The pick is always compared, replayed fast if need be.
                None if pick_shape == Some(s) => first.fast(mode, s)?,
                None => None,
            };
            if let (Some(fast), Some(m)) = (fast, &seed.figures) {
                check_fast(mode, s, &fast, m)?;
            }
            Ok(ShapeEval {
                shape: s,
                memory_bytes: s.memory(),
                phase: "frontier",
                meets: seed.meets,
                seeds: vec![seed],
                exceedance: None,
            })
        })
        .collect()
}
