//! `size --limit --shard i/n`: the search split by candidate shape.
//!
//! Every shape's replay needs every key (one sketch is shared by all of
//! them), so a shard cannot take a share of the keys; but shapes are
//! independent of one another. The search ([`super::search`]) is adaptive,
//! so the split follows its structure:
//!
//! 1. every shard runs the bisection on the first seed ([`bisect_mode`]):
//!    it is cheap (one seed, replays that stop once a target is lost) and
//!    it fixes each mode's *ladder* ([`ladder`]): every rows' cheapest
//!    first-seed pass and its doublings, in the order the verification
//!    walk pops them. Before its first pass the walk verifies exactly the
//!    ladder's steps, all failures; after it only that pass's refinement;
//! 2. shard `i` of `n` verifies the steps at positions ≡ i (mod n) on the
//!    whole trace, in order, until its first pass, then that pass's
//!    refinement ([`shard_walk`]), and writes every evaluation, every
//!    seed's figures included ([`SizePart`]; floats as the shortest
//!    decimal that reads back to the same bits, serde_json's
//!    `float_roundtrip`). Steps below the walk's first pass are on their
//!    owners; the first pass and its refinement on the pass's owner;
//! 3. `ratelab merge` re-reads the trace for the report's facts and the
//!    bisection, checks that the parts are this job's (lines, ladders,
//!    each step on its owner, no shape twice), then runs the walk with
//!    each verification *looked up* in the parts instead of replayed
//!    ([`finish_mode`] with [`Lookup::get`]): it only picks. The walk is
//!    the unsharded run's, so the folder is byte for byte the same.
//!
//! [`bisect_mode`]: super::search::bisect_mode
//! [`ladder`]: super::search::ladder
//! [`shard_walk`]: super::search::shard_walk
//! [`finish_mode`]: super::search::finish_mode

use super::replay::{mode_name, RateShape};
use super::search::{ladder, shard_walk, Ctx, ShapeEval};
use crate::error::{Error, Result};
use crate::lab::shard::Shard;
use crate::model::rate_limiter::RateMode;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// One mode's share of a shard: its ladder (so a part of another trace,
/// job or build is refused) and this shard's evaluations, in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModePart {
    /// `docs` or `proportional`.
    pub mode: String,
    /// The mode's ladder, in the walk's order.
    pub ladder: Vec<RateShape>,
    /// This shard's verifications.
    pub evals: Vec<ShapeEval>,
}

/// A `size --limit --shard` shard's payload.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SizePart {
    /// Request lines of the trace.
    pub lines: u64,
    /// Per estimate mode, in the job's order.
    pub modes: Vec<ModePart>,
}

impl SizePart {
    /// "3 of 9 ladder steps verified (docs 1 of 4, proportional 2 of 5), 2 passes".
    pub fn summary(&self) -> String {
        let per: Vec<String> = self
            .modes
            .iter()
            .map(|m| format!("{} {}", m.mode, m.evals.len()))
            .collect();
        let evals: usize = self.modes.iter().map(|m| m.evals.len()).sum();
        let steps: usize = self.modes.iter().map(|m| m.ladder.len()).sum();
        let seeds: usize = self
            .modes
            .iter()
            .flat_map(|m| &m.evals)
            .map(|e| e.seeds.len())
            .sum();
        format!(
            "{evals} verifications ({}) of the {steps} ladder steps' search, {seeds} seed replays",
            per.join(", ")
        )
    }
}

/// Shard `sh`'s part: each mode's [`shard_walk`](super::search::shard_walk).
pub fn shard_part(
    ctx: &Ctx<'_>,
    modes: &[RateMode],
    bisects: &[Vec<ShapeEval>],
    lines: u64,
    sh: Shard,
) -> Result<SizePart> {
    let modes = modes
        .par_iter()
        .zip(bisects)
        .map(|(&m, b)| {
            Ok(ModePart {
                mode: mode_name(m).to_string(),
                ladder: ladder(ctx, b).into_iter().map(|(s, _)| s).collect(),
                evals: shard_walk(ctx, m, b, sh.index, sh.count)?,
            })
        })
        .collect::<Result<_>>()?;
    Ok(SizePart { lines, modes })
}

/// Every shard's verifications, per mode, checked: what a merge's walk
/// looks its verifications up in.
pub struct Lookup {
    /// Per mode: (shape, evaluation, the file it came from).
    modes: Vec<Vec<(ShapeEval, PathBuf)>>,
}

impl Lookup {
    /// Checks `parts` against this merge's trace (`lines`) and ladders (from
    /// its own bisection): the same modes and ladders, every ladder step's
    /// evaluation on the shard that owns it, no shape twice, evaluations
    /// the search can make. An error names the shard file.
    pub fn of(
        parts: &[(PathBuf, Shard, SizePart)],
        lines: u64,
        ctx: &Ctx<'_>,
        modes: &[RateMode],
        bisects: &[Vec<ShapeEval>],
    ) -> Result<Lookup> {
        let ladders: Vec<Vec<RateShape>> = bisects
            .iter()
            .map(|b| ladder(ctx, b).into_iter().map(|(s, _)| s).collect())
            .collect();
        let mut out: Vec<Vec<(ShapeEval, PathBuf)>> = vec![Vec::new(); modes.len()];
        for (path, shard, part) in parts {
            let bad = |what: String| Error::input_at(path, "field size", what);
            if part.lines != lines {
                return Err(bad(format!(
                    "{} request lines; the trace has {lines}: a shard of another trace",
                    part.lines
                )));
            }
            let names: Vec<&str> = part.modes.iter().map(|m| m.mode.as_str()).collect();
            let want: Vec<&str> = modes.iter().map(|&m| mode_name(m)).collect();
            if names != want {
                return Err(bad(format!("modes {names:?}: the job sizes {want:?}")));
            }
            for (mi, mp) in part.modes.iter().enumerate() {
                if mp.ladder != ladders[mi] {
                    return Err(bad(format!(
                        "{}: its ladder of {} steps differs from the {} the trace gives here (another trace, or another ratelab)",
                        mp.mode,
                        mp.ladder.len(),
                        ladders[mi].len()
                    )));
                }
                for e in &mp.evals {
                    check_eval(e, ctx).map_err(|w| bad(format!("{} {w}", mp.mode)))?;
                    if let Some(pos) = mp.ladder.iter().position(|s| *s == e.shape) {
                        let owner = (pos % shard.count as usize) as u32;
                        if owner != shard.index {
                            return Err(bad(format!(
                                "{} {}: ladder step {pos} belongs to shard {owner} of {}, not {}",
                                mp.mode,
                                e.shape.label(),
                                shard.count,
                                shard.index
                            )));
                        }
                    }
                    if let Some((_, other)) = out[mi].iter().find(|(x, _)| x.shape == e.shape) {
                        return Err(bad(format!(
                            "{} {}: given twice (also in {})",
                            mp.mode,
                            e.shape.label(),
                            other.display()
                        )));
                    }
                    out[mi].push((e.clone(), path.clone()));
                }
            }
        }
        Ok(Lookup { modes: out })
    }

    /// The verification of `shape` in mode `mi`, as the walk asks for it
    /// (in `phase`); an error when the shards do not hold it.
    pub fn get(&self, mi: usize, shape: RateShape, phase: &'static str) -> Result<ShapeEval> {
        match self.modes[mi].iter().find(|(e, _)| e.shape == shape) {
            Some((e, _)) if e.phase == phase => Ok(e.clone()),
            Some((e, path)) => Err(Error::input_at(
                path,
                "field size",
                format!(
                    "{}: verified as {:?}, the search asks for it as {phase:?}",
                    shape.label(),
                    e.phase
                ),
            )),
            None => Err(Error::input(format!(
                "size shards: none holds the verification of {} that the search needs (shards of different runs?)",
                shape.label()
            ))),
        }
    }
}

/// Refuses an evaluation the walk cannot have made: another phase, no
/// seed or more than the plan's, a tally off its seeds, a non-finite
/// figure.
fn check_eval(e: &ShapeEval, ctx: &Ctx<'_>) -> std::result::Result<(), String> {
    let fine = e.memory_bytes == e.shape.memory()
        && ["verify", "grow", "refine"].contains(&e.phase)
        && !e.seeds.is_empty()
        && e.seeds.len() <= ctx.plan.seeds as usize
        && e.exceedance.is_some_and(|x| {
            x.seeds as usize == e.seeds.len()
                && x.holds == e.meets
                && x.rate.is_finite()
                && x.upper_bound.is_finite()
        })
        && e.seeds.iter().all(|s| {
            s.figures.as_ref().is_none_or(|f| {
                f.compliant_denied_pct.is_finite() && f.limited_excess_pct.is_finite()
            }) && s.errors.iter().all(|w| w.value.is_finite())
        });
    if fine {
        Ok(())
    } else {
        Err(format!(
            "{} ({}): not a verification this search makes",
            e.shape.label(),
            e.phase
        ))
    }
}
