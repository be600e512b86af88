//! `ratelab merge` of `size --limit --shard` parts: every part checked,
//! then the walk run with each verification assembled from the shards'
//! seeds and the bisection and first-seed replays read from the parts
//! (see [`super::split`] and [`super::first_seed`]).

use super::bound::LimitBound;
use super::first_seed::Stored;
use super::replay::{mode_name, RateShape};
use super::search::{finish_mode, Ctx, ModeResult, SeedEval, ShapeEval};
use super::split::{owner, ShapeSeeds, SizePart};
use crate::error::{Error, Result};
use crate::lab::shard::part::Shard;
use crate::model::rate_limiter::RateMode;
use crate::sizing::error::SizingError;
use crate::sizing::guarantee::verify_chunked;
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex;

/// Per mode, per shape, per shard: the shard's seeds (index order).
type Held = Vec<BTreeMap<RateShape, Vec<Option<Vec<SeedEval>>>>>;

/// Seeds no shard held, replayed by a merge: (mode index, shape, the
/// shard that owns them, their indexes).
type Replayed = (usize, RateShape, u32, Vec<u64>);

/// Every shard's seeds, per mode and shape, checked: what a merge's walk
/// assembles its verifications from.
pub struct Lookup {
    held: Held,
    /// The bisections and the first-seed replays of the parts.
    first: Stored,
    /// Shards.
    n: u32,
    /// The pieces no shard held, replayed here: (mode, shape, shard, seed
    /// indexes).
    replayed: Mutex<Vec<Replayed>>,
}

impl Lookup {
    /// Checks `parts` (shards `0..n`, in order) against this merge's trace
    /// (`lines`) and modes: every mode on every shard, once; no shape
    /// twice; each seed on the shard its index names, in order, within the
    /// plan, with finite figures and the targets' verdict; the bisection
    /// the same on every shard and step by step the bisection's; the
    /// first-seed replays as [`Stored::add`] checks them. An error names
    /// the shard file.
    pub fn of(
        parts: &[(PathBuf, Shard, SizePart)],
        lines: u64,
        ctx: &Ctx<'_>,
        modes: &[RateMode],
    ) -> Result<Lookup> {
        let n = parts.first().map_or(1, |(_, s, _)| s.count);
        let mut held: Held = vec![BTreeMap::new(); modes.len()];
        let mut first = Stored::new(modes);
        for (pi, (path, shard, part)) in parts.iter().enumerate() {
            let bad = |what: String| Error::input_at(path, "field size", what);
            if part.lines != lines {
                return Err(bad(format!(
                    "{} request lines; the trace has {lines}: a shard of another trace",
                    part.lines
                )));
            }
            let mut seen = vec![false; modes.len()];
            for mp in &part.modes {
                let Some(mi) = modes.iter().position(|&m| mode_name(m) == mp.mode) else {
                    return Err(bad(format!("mode {:?}: not one the job sizes", mp.mode)));
                };
                if std::mem::replace(&mut seen[mi], true) {
                    return Err(bad(format!("mode {}: given twice", mp.mode)));
                }
                first
                    .add(ctx, pi, mi, mp, &parts[0].0)
                    .map_err(|e| bad(format!("{} {}", mp.mode, e.message())))?;
                for ss in &mp.shapes {
                    let label = format!("{} {}", mp.mode, ss.shape.label());
                    check_seeds(ss, *shard, ctx).map_err(|w| bad(format!("{label}: {w}")))?;
                    let per = held[mi]
                        .entry(ss.shape)
                        .or_insert_with(|| vec![None; n as usize]);
                    if per[shard.index as usize]
                        .replace(ss.seeds.clone())
                        .is_some()
                    {
                        return Err(bad(format!("{label}: given twice")));
                    }
                }
            }
            if let Some(mi) = seen.iter().position(|s| !s) {
                return Err(bad(format!(
                    "holds no {} walk: a shard of another job",
                    mode_name(modes[mi])
                )));
            }
        }
        first.finish().map_err(|(pf, pm, what)| {
            Error::input_at(
                &parts[pf].0,
                "field size",
                format!("{what} in {}", parts[pm].0.display()),
            )
        })?;
        Ok(Lookup {
            held,
            first,
            n,
            replayed: Mutex::new(Vec::new()),
        })
    }

    /// The verification of `shape` in mode `mi` (`mode`), as the walk asks
    /// for it (in `phase`): the shards' seeds in index order, chunk by
    /// chunk, stopping as the unsharded verification does; a seed no shard
    /// holds is replayed here and remembered for [`Lookup::note`].
    pub fn verify(
        &self,
        ctx: &Ctx<'_>,
        mode: RateMode,
        mi: usize,
        shape: RateShape,
        phase: &'static str,
    ) -> Result<ShapeEval> {
        let per = self.held[mi].get(&shape);
        let (seeds, ex) = verify_chunked(&ctx.plan, 1..=u64::from(ctx.plan.seeds), |r| {
            let o = owner(r, self.n);
            let k = ((r - 1) / u64::from(self.n)) as usize;
            let s = match per
                .and_then(|p| p[o as usize].as_ref())
                .and_then(|v| v.get(k))
            {
                Some(s) => s.clone(),
                None => {
                    let s = ctx.eval_seed(mode, shape, r as u32, false, 1.0)?;
                    let mut rep = self.replayed.lock().unwrap_or_else(|e| e.into_inner());
                    match rep
                        .iter_mut()
                        .find(|(m, sh, on, _)| *m == mi && *sh == shape && *on == o)
                    {
                        Some(x) => x.3.push(r),
                        None => rep.push((mi, shape, o, vec![r])),
                    }
                    s
                }
            };
            let met = s.meets;
            Ok((s, met))
        })?;
        Ok(ShapeEval::verified(shape, phase, seeds, ex))
    }

    /// The merge's walks, confirmations and the bound's measure
    /// (`bound`), from the parts: the bisection and the first-seed
    /// replays read, each verification assembled ([`Lookup::verify`]);
    /// only what no part holds is replayed ([`Lookup::note`]).
    pub fn merge(
        &self,
        ctx: &Ctx<'_>,
        modes: &[RateMode],
        bound: &LimitBound,
    ) -> Result<(Vec<ModeResult>, Vec<Option<ShapeEval>>)> {
        let first = self.first.source(ctx);
        let results = modes
            .par_iter()
            .enumerate()
            .map(|(mi, &m)| {
                let verify = |s: RateShape, phase: &'static str| self.verify(ctx, m, mi, s, phase);
                finish_mode(ctx, m, self.first.bisect(mi)?, &verify, &first)
            })
            .collect::<Result<_>>()?;
        let measured = super::bound::measure(bound, ctx, modes, &first)?;
        Ok((results, measured))
    }

    /// What the merge replayed because no shard held it, one line per
    /// shape and shard, then one per first-seed replay ("" when nothing:
    /// the usual case).
    pub fn note(&self, modes: &[RateMode]) -> String {
        let rep = super::first_seed::sorted(&self.replayed);
        rep.iter()
            .map(|(mi, shape, o, rs)| {
                let mut rs = rs.clone();
                rs.sort_unstable();
                format!(
                    "merge replayed {} {} on {} seed(s) of shard {}/{} (seed indexes {}): no shard explored the path that needs them\n",
                    mode_name(modes[*mi]),
                    shape.label(),
                    rs.len(),
                    o,
                    self.n,
                    ranges(&rs)
                )
            })
            .chain(std::iter::once(self.first.note()))
            .collect()
    }
}

/// `1, 5, 9..=21` style: seed indexes of one shard step by the shard count,
/// so runs are shown as first..=last.
pub(super) fn ranges(rs: &[u64]) -> String {
    match rs {
        [] => String::new(),
        [a] => a.to_string(),
        [a, b] => format!("{a}, {b}"),
        [a, .., z] => format!("{a}..={z}"),
    }
}

/// Refuses seeds the shard cannot have replayed: on another shard, out of
/// order or of the plan, a non-finite figure, or a verdict the targets do
/// not give.
fn check_seeds(ss: &ShapeSeeds, sh: Shard, ctx: &Ctx<'_>) -> std::result::Result<(), SizingError> {
    if ss.shape.hashes == 0 || ss.shape.slots == 0 || ss.seeds.is_empty() {
        return Err(SizingError::ShardSeeds(
            "not a shape this search replays".into(),
        ));
    }
    let mut want = (1..=u64::from(ctx.plan.seeds)).filter(|&r| owner(r, sh.count) == sh.index);
    for s in &ss.seeds {
        let r = s.lab_seed.wrapping_sub(ctx.seed);
        if want.next() != Some(r) {
            return Err(SizingError::ShardSeeds(format!(
                "lab seed {}: not the next seed of shard {} of {} (seed indexes ≡ {} mod {}, from 1 to {})",
                s.lab_seed,
                sh.index,
                sh.count,
                (sh.index + 1) % sh.count,
                sh.count,
                ctx.plan.seeds
            )));
        }
        let finite =
            s.figures.as_ref().is_none_or(|f| {
                f.compliant_denied_pct.is_finite() && f.limited_excess_pct.is_finite()
            }) && s.errors.iter().all(|w| w.value.is_finite());
        if !finite || s.meets != ctx.seed_meets(s, 1.0) {
            return Err(SizingError::ShardSeeds(format!(
                "lab seed {}: figures that are not this job's (its verdict or a non-finite value)",
                s.lab_seed
            )));
        }
    }
    Ok(())
}
