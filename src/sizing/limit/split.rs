//! `size --limit --shard i/n`: the search split across processes.
//!
//! Every shape's replay needs every key (one sketch is shared by all of
//! them), so a shard cannot take a share of the keys; shapes are
//! independent, but the search ([`super::search`]) is an adaptive walk:
//! each verification on the claim's fresh seeds decides the next shape,
//! and nearly all the time goes to the one to four shapes that pass (each
//! replayed on every one of the 299 seeds of the default claim). A finer
//! split was built and measured on a 2.7 M-request log: shards verifying
//! the walk's ladder of shapes round-robin, each up to its first pass and
//! that pass's refinement (so that whatever the walk needs is on some
//! shard), cost 1.2x to 2.7x the unsharded CPU *each*, since every shard
//! verifies a pass of its own and refines it. So the unit of the split is
//! what is independent and whole: one estimate mode's walk.
//!
//! 1. shard `i` of `n` runs the bisection and the verification walk of the
//!    modes with index ≡ i (mod n) (`--estimate both`: docs on shard 0,
//!    proportional on shard 1; shards past the modes have nothing to do)
//!    on the whole trace, and writes every verification, every seed's
//!    figures included ([`SizePart`]; floats as the shortest decimal that
//!    reads back to the same bits, serde_json's `float_roundtrip`);
//! 2. `ratelab merge` re-reads the trace for the report's facts, runs the
//!    bisection (cheap: one seed, replays that stop once a target is
//!    lost), checks the parts (the trace's line count, each mode on the
//!    shard that owns it, once) and runs the walk with each verification
//!    *looked up* in the parts instead of replayed ([`finish_mode`] with
//!    [`Lookup::get`]): it picks, then confirms the pick through the
//!    model. The walk is the unsharded run's, so the folder is byte for
//!    byte the same.
//!
//! [`finish_mode`]: super::search::finish_mode

use super::replay::{mode_name, RateShape};
use super::search::{bisect_mode, walk, Ctx, SeedEval, ShapeEval, PHASES};
use crate::error::{Error, Result};
use crate::lab::shard::part::Shard;
use crate::model::rate_limiter::RateMode;
use crate::sizing::error::SizingError;
use crate::sizing::guarantee::Exceedance;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// One mode's walk in a shard: its verifications, in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModePart {
    /// `docs` or `proportional`.
    pub mode: String,
    /// The walk's verifications.
    pub evals: Vec<ShapeEval>,
}

/// A `size --limit --shard` shard's payload.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SizePart {
    /// Request lines of the trace.
    pub lines: u64,
    /// The modes this shard owns, in the job's order.
    pub modes: Vec<ModePart>,
}

impl SizePart {
    /// "the docs walk: 3 verifications, 315 seed replays".
    pub fn summary(&self) -> String {
        if self.modes.is_empty() {
            return "no estimate mode (every mode is on a lower shard)".into();
        }
        let per: Vec<String> = self
            .modes
            .iter()
            .map(|m| {
                format!(
                    "{} walk: {} verifications, {} seed replays",
                    m.mode,
                    m.evals.len(),
                    m.evals.iter().map(|e| e.seeds.len()).sum::<usize>()
                )
            })
            .collect();
        format!("the {}", per.join("; the "))
    }
}

/// Whether shard `sh` owns mode index `mi`.
fn owns(sh: Shard, mi: usize) -> bool {
    mi % sh.count as usize == sh.index as usize
}

/// Shard `sh`'s part: the bisection and the walk of each mode it owns.
pub fn shard_part(ctx: &Ctx<'_>, modes: &[RateMode], lines: u64, sh: Shard) -> Result<SizePart> {
    let owned: Vec<RateMode> = modes
        .iter()
        .enumerate()
        .filter(|(mi, _)| owns(sh, *mi))
        .map(|(_, &m)| m)
        .collect();
    let modes = owned
        .par_iter()
        .map(|&m| {
            let bisect = bisect_mode(ctx, m)?;
            let n = bisect.len();
            let verify = |s: RateShape, phase: &'static str| ctx.verify(m, s, phase);
            let (evaluated, _, _) = walk(ctx, bisect, &verify)?;
            Ok(ModePart {
                mode: mode_name(m).to_string(),
                evals: evaluated[n..].to_vec(),
            })
        })
        .collect::<Result<_>>()?;
    Ok(SizePart { lines, modes })
}

/// Every shard's verifications, per mode, checked: what a merge's walk
/// looks its verifications up in.
pub struct Lookup {
    /// Per mode: (evaluation, the file it came from).
    modes: Vec<Vec<(ShapeEval, PathBuf)>>,
}

impl Lookup {
    /// Checks `parts` against this merge's trace (`lines`) and modes: each
    /// mode on the shard that owns it, once; no shape twice; evaluations
    /// the walk can make. An error names the shard file.
    pub fn of(
        parts: &[(PathBuf, Shard, SizePart)],
        lines: u64,
        ctx: &Ctx<'_>,
        modes: &[RateMode],
    ) -> Result<Lookup> {
        let mut out: Vec<Option<Vec<(ShapeEval, PathBuf)>>> = vec![None; modes.len()];
        for (path, shard, part) in parts {
            let bad = |what: String| Error::input_at(path, "field size", what);
            if part.lines != lines {
                return Err(bad(format!(
                    "{} request lines; the trace has {lines}: a shard of another trace",
                    part.lines
                )));
            }
            for mp in &part.modes {
                let Some(mi) = modes.iter().position(|&m| mode_name(m) == mp.mode) else {
                    return Err(bad(format!("mode {:?}: not one the job sizes", mp.mode)));
                };
                if !owns(*shard, mi) {
                    return Err(bad(format!(
                        "mode {}: belongs to shard {} of {}, not {}",
                        mp.mode,
                        mi % shard.count as usize,
                        shard.count,
                        shard.index
                    )));
                }
                let mut evals: Vec<(ShapeEval, PathBuf)> = Vec::new();
                for e in &mp.evals {
                    check_eval(e, ctx).map_err(|w| bad(format!("{} {w}", mp.mode)))?;
                    if evals.iter().any(|(x, _)| x.shape == e.shape) {
                        return Err(bad(format!("{} {}: given twice", mp.mode, e.shape.label())));
                    }
                    evals.push((e.clone(), path.clone()));
                }
                if out[mi].replace(evals).is_some() {
                    return Err(bad(format!("mode {}: given twice", mp.mode)));
                }
            }
        }
        let modes = out
            .into_iter()
            .enumerate()
            .map(|(mi, m)| {
                m.ok_or_else(|| {
                    Error::input(format!(
                        "size shards: none holds the {} walk",
                        mode_name(modes[mi])
                    ))
                })
            })
            .collect::<Result<_>>()?;
        Ok(Lookup { modes })
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
fn check_eval(e: &ShapeEval, ctx: &Ctx<'_>) -> std::result::Result<(), SizingError> {
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
        Err(SizingError::NotAVerification {
            shape: e.shape.label(),
            phase: e.phase.to_string(),
        })
    }
}

// How a shard file's shape evaluations read back (their phase checked
// against the search's phases).

/// A [`ShapeEval`] as read back from a shard file: its phase a string.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ShapeEvalRecord {
    shape: RateShape,
    memory_bytes: u64,
    phase: String,
    seeds: Vec<SeedEval>,
    meets: bool,
    exceedance: Option<Exceedance>,
}

impl<'de> Deserialize<'de> for ShapeEval {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        ShapeEval::try_from(ShapeEvalRecord::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

impl TryFrom<ShapeEvalRecord> for ShapeEval {
    type Error = SizingError;
    fn try_from(r: ShapeEvalRecord) -> std::result::Result<Self, SizingError> {
        let phase = PHASES.into_iter().find(|p| *p == r.phase).ok_or_else(|| {
            SizingError::UnknownPhase {
                phase: r.phase.clone(),
                expected: PHASES.join(", "),
            }
        })?;
        Ok(ShapeEval {
            shape: r.shape,
            memory_bytes: r.memory_bytes,
            phase,
            seeds: r.seeds,
            meets: r.meets,
            exceedance: r.exceedance,
        })
    }
}
