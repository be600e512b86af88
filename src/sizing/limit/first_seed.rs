//! The first-seed replays of a `size --limit --shard` split: the
//! bisection, the confirmation's model replays and the bound's, done by
//! the shards and written in their parts, so that `merge` replays
//! nothing when the parts hold what its walk reads.
//!
//! * The bisection is the same on every shard (one seed, every shard runs
//!   it before its walks): each part carries it whole; the merge checks
//!   each part's against the bisection's own steps ([`bisect_by`], each
//!   shape the one the bisection asks for, each verdict its figures') and
//!   against the first part's.
//! * The confirmation's model replays ([`super::confirm`]) are split. The
//!   shapes known from the bisection ([`fixed_shapes`], and the bound's
//!   shape: [`super::bound::shape`]) are listed for every mode, memory
//!   ascending, and shard `i` of `n` replays those at positions `≡ i (mod
//!   n)` of that list: every shard lists them alike. The anchor's shapes
//!   ([`anchor_shapes`]: the pick's rows at 1/8 .. 2×) are known only to
//!   a shard that explored the walk's path ([`super::split`]); a shard
//!   replays those of every path it explored that are dealt to it by the
//!   shape alone ([`deals`]), so is the pick's fast replay to the end,
//!   when the bisection holds none (the bug check's other side). The
//!   shards explore the walk's path on their own slices of its seeds
//!   (each replays its slice of every shape on it), so every shard has
//!   explored it and each holds its share of its anchor; when one has not
//!   (its seeds are missing too), the merge replays its share, a few
//!   first-seed replays beside those seeds. Replaying every path's anchor
//!   on every shard that explored it cost each shard about 0.7 s of 9 s
//!   (500,000 requests, two modes, four or five paths each).
//! * A merge takes every model replay from the parts ([`Stored`]), each
//!   checked (the first seed, figures that add up, the targets' verdict,
//!   equal to the bisection's fast figures of the shape when it has them,
//!   equal wherever two parts hold one), and replays only what no part
//!   holds (the walk ended where the owner of a shape explored no path),
//!   one line each in its note ([`Stored::note`]): only when no shard
//!   explored a path that ends where the walk does.

use super::bound;
use super::confirm::{anchor_shapes, check_fast, fast_of, fixed_shapes, FirstSeed};
use super::replay::{mode_name, Figures, RateShape};
use super::search::{bisect_by, Ctx, SeedEval, ShapeEval, BISECT_MARGIN};
use super::split::ModePart;
use crate::error::{Error, Result};
use crate::lab::shard::part::Shard;
use crate::model::rate_limiter::RateMode;
use crate::sizing::error::SizingError;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

/// One shape on the first seed (the search seed), as a shard wrote it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FirstEval {
    /// The shape.
    pub shape: RateShape,
    /// Its evaluation on the first seed.
    pub seed: SeedEval,
}

/// A shape's fast replay on the first seed, to the end.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FastEval {
    /// The shape.
    pub shape: RateShape,
    /// Its figures.
    pub figures: Figures,
}

/// What a shard's paths of one mode ask of the confirmation beyond the
/// fixed shapes: their anchors' shapes and their picks.
#[derive(Debug, Default)]
pub struct Needs {
    /// Every path's [`anchor_shapes`].
    pub shapes: BTreeSet<RateShape>,
    /// Every path's pick.
    pub picks: BTreeSet<RateShape>,
}

impl Needs {
    /// Adds one explored path's end: its evaluations and pick.
    pub fn add(&mut self, ctx: &Ctx<'_>, evaluated: &[ShapeEval], pick: Option<usize>) {
        self.shapes.extend(anchor_shapes(ctx, evaluated, pick));
        self.picks.extend(pick.map(|p| evaluated[p].shape));
    }
}

/// One shard's first-seed replays of one mode.
#[derive(Debug, Default)]
pub struct ShardFirst {
    /// Through the model, memory ascending.
    pub model: Vec<FirstEval>,
    /// Fast, to the end (picks the bisection did not replay), memory
    /// ascending.
    pub fast: Vec<FastEval>,
}

/// Every mode's shapes known from the bisection (the confirmation's fixed
/// shapes and the bound's), each mode's memory ascending: the list the
/// shards split by position.
pub fn fixed_list(ctx: &Ctx<'_>, bisects: &[Vec<ShapeEval>]) -> Vec<(usize, RateShape)> {
    let b = bound::limit_bound(ctx.targets, ctx.policy, ctx.near, ctx.windows, ctx.classes);
    let bs = bound::shape(ctx, &b);
    let mut out = Vec::new();
    for (mi, bisect) in bisects.iter().enumerate() {
        let mut v = fixed_shapes(ctx, bisect);
        v.extend(bs);
        v.sort_by_key(|s| (s.memory(), s.hashes, s.slots));
        v.dedup();
        out.extend(v.into_iter().map(|s| (mi, s)));
    }
    out
}

/// Whether shape `s` of mode `mi`, outside the fixed list, is shard
/// `sh`'s to replay on the first seed: a mix of the mode and the shape
/// modulo the shard count, the same on every shard whatever path named
/// the shape.
pub(super) fn deals(mi: usize, s: RateShape, sh: Shard) -> bool {
    let key = ((mi as u64) << 56) ^ ((s.hashes as u64) << 48) ^ s.slots;
    crate::rng::mix64(key) % u64::from(sh.count) == u64::from(sh.index)
}

/// Shard `sh`'s first-seed replays, per mode (see the module docs):
/// its positions of the fixed list, the anchor shapes of its paths, and
/// the fast replays of its paths' picks that the bisection did not
/// replay to the end, each of the last two where dealt to it
/// ([`deals`]). Each model replay with fast
/// figures beside it is checked against them (exit 3).
pub fn shard_replays(
    ctx: &Ctx<'_>,
    modes: &[RateMode],
    bisects: &[Vec<ShapeEval>],
    needs: &[Needs],
    sh: Shard,
) -> Result<Vec<ShardFirst>> {
    let fixed = fixed_list(ctx, bisects);
    // (mode, shape, through the model); fast replays after the model's.
    let mut jobs: Vec<(usize, RateShape, bool)> = fixed
        .iter()
        .enumerate()
        .filter(|(i, _)| *i % sh.count as usize == sh.index as usize)
        .map(|(_, &(mi, s))| (mi, s, true))
        .collect();
    for (mi, need) in needs.iter().enumerate() {
        jobs.extend(
            need.shapes
                .iter()
                .filter(|s| !fixed.contains(&(mi, **s)) && deals(mi, **s, sh))
                .map(|&s| (mi, s, true)),
        );
        jobs.extend(
            need.picks
                .iter()
                .filter(|s| fast_of(ctx, &bisects[mi], **s).is_none() && deals(mi, **s, sh))
                .map(|&s| (mi, s, false)),
        );
    }
    let done: Vec<(usize, RateShape, Option<SeedEval>, Option<Figures>)> = jobs
        .par_iter()
        .map(|&(mi, s, model)| {
            Ok(if model {
                (mi, s, Some(ctx.model(modes[mi], s)?), None)
            } else {
                (mi, s, None, ctx.fast(modes[mi], s)?)
            })
        })
        .collect::<Result<_>>()?;
    let mut out: Vec<ShardFirst> = modes.iter().map(|_| ShardFirst::default()).collect();
    for (mi, s, model, fast) in done {
        if let Some(seed) = model {
            let fast = fast_of(ctx, &bisects[mi], s);
            if let (Some(f), Some(m)) = (fast, &seed.figures) {
                check_fast(modes[mi], s, &f, m)?;
            }
            out[mi].model.push(FirstEval { shape: s, seed });
        } else if let Some(figures) = fast {
            out[mi].fast.push(FastEval { shape: s, figures });
        }
    }
    for o in &mut out {
        o.model.sort_by_key(|e| (e.shape.memory(), e.shape.hashes));
        o.fast.sort_by_key(|e| (e.shape.memory(), e.shape.hashes));
    }
    Ok(out)
}

fn refused(what: String) -> Error {
    SizingError::ShardSeeds(what).into()
}

/// Refuses a first-seed evaluation the shard cannot have made: another
/// seed, a non-finite figure or figures that do not add up to this
/// trace's classes, an incomplete model replay, or a verdict the targets
/// (with `margin`) do not give.
fn check_first(ctx: &Ctx<'_>, s: &SeedEval, margin: f64, model: bool) -> Result<()> {
    if s.lab_seed != ctx.seed {
        return Err(refused(format!(
            "lab seed {}: not the first seed ({})",
            s.lab_seed, ctx.seed
        )));
    }
    let fits = s
        .figures
        .as_ref()
        .is_none_or(|f| ctx.classes.is_some_and(|c| f.adds_up(c)) && (f.complete || !model))
        && s.errors.iter().all(|w| w.value.is_finite());
    if !fits || s.meets != ctx.seed_meets(s, margin) {
        return Err(refused(format!(
            "lab seed {}: figures that are not this job's (its verdict, a non-finite value or counts that do not add up)",
            s.lab_seed
        )));
    }
    Ok(())
}

/// A part's bisection, checked step by step against the bisection's own
/// walk: each shape the one it asks for next, each verdict its figures'.
pub fn check_bisect(ctx: &Ctx<'_>, stored: &[FirstEval]) -> Result<Vec<ShapeEval>> {
    let mut it = stored.iter();
    let out = bisect_by(ctx, &mut |s| {
        let Some(e) = it.next() else {
            return Err(refused(format!(
                "bisection: ends before {}, which it asks for next",
                s.label()
            )));
        };
        if e.shape != s {
            return Err(refused(format!(
                "bisection: {} where the bisection asks for {}",
                e.shape.label(),
                s.label()
            )));
        }
        check_first(ctx, &e.seed, BISECT_MARGIN, false)
            .map_err(|w| refused(format!("bisection {}: {}", s.label(), w.message())))?;
        Ok(ShapeEval {
            shape: s,
            memory_bytes: s.memory(),
            phase: "bisect",
            meets: e.seed.meets,
            seeds: vec![e.seed.clone()],
            exceedance: None,
        })
    })?;
    if let Some(e) = it.next() {
        return Err(refused(format!(
            "bisection: {} after its last step",
            e.shape.label()
        )));
    }
    Ok(out)
}

/// A merge's replay of something no part held: (mode, shape, through
/// the model).
type Missing = (usize, RateShape, bool);

/// The first-seed replays of every part, checked: the bisection of each
/// mode and every model (and fast) replay a shard wrote, with the part
/// that wrote it.
pub struct Stored {
    modes: Vec<RateMode>,
    /// Per mode: the bisection as the parts hold it, and the first part's.
    bisects: Vec<Option<(Vec<FirstEval>, Vec<ShapeEval>)>>,
    model: Vec<BTreeMap<RateShape, (SeedEval, usize)>>,
    fast: Vec<BTreeMap<RateShape, (Figures, usize)>>,
    replayed: Mutex<Vec<Missing>>,
}

impl Stored {
    /// Nothing yet, for `modes`.
    pub fn new(modes: &[RateMode]) -> Stored {
        Stored {
            modes: modes.to_vec(),
            bisects: vec![None; modes.len()],
            model: vec![BTreeMap::new(); modes.len()],
            fast: vec![BTreeMap::new(); modes.len()],
            replayed: Mutex::new(Vec::new()),
        }
    }

    /// Adds part `pi`'s first-seed replays of mode `mi`, checked (the
    /// first part's bisection is `first_file`'s). The error says what,
    /// the caller names the file.
    pub fn add(
        &mut self,
        ctx: &Ctx<'_>,
        pi: usize,
        mi: usize,
        mp: &ModePart,
        first_file: &std::path::Path,
    ) -> Result<()> {
        let (bisect, model, fast) = (&mp.bisect[..], &mp.model, &mp.fast);
        match &self.bisects[mi] {
            None => {
                let b = check_bisect(ctx, bisect)?;
                self.bisects[mi] = Some((bisect.to_vec(), b));
            }
            Some((b0, _)) if b0.as_slice() != bisect => {
                // Checked on its own too, to say what is wrong with it.
                check_bisect(ctx, bisect)?;
                return Err(refused(format!(
                    "bisection differs from {}'s (the bisection is the same on every shard)",
                    first_file.display()
                )));
            }
            Some(_) => {}
        }
        let bis = self.bisects[mi].as_ref().map_or(&[][..], |(_, b)| &b[..]);
        for e in model {
            let s = e.shape;
            check_first(ctx, &e.seed, 1.0, true)
                .map_err(|w| refused(format!("model {}: {}", s.label(), w.message())))?;
            if let (Some(f), Some(m)) = (fast_of(ctx, bis, s), &e.seed.figures)
                && &f != m
            {
                return Err(refused(format!(
                    "model {}: figures other than the bisection's fast replay of that shape ({} compliant denied, not {})",
                    s.label(),
                    m.compliant_denied,
                    f.compliant_denied
                )));
            }
            if let Some((o, _)) = self.model[mi].get(&s)
                && o != &e.seed
            {
                return Err(refused(format!(
                    "model {}: figures other than another shard's replay of it",
                    s.label()
                )));
            }
            self.model[mi].insert(s, (e.seed.clone(), pi));
        }
        for e in fast {
            let s = e.shape;
            let ok = ctx.classes.is_some_and(|c| e.figures.adds_up(c)) && e.figures.complete;
            let same = self.fast[mi].get(&s).is_none_or(|(o, _)| o == &e.figures);
            if !ok || !same {
                return Err(refused(format!(
                    "fast {}: figures that are not this job's (incomplete, counts that do not add up, or another shard's replay of it differs)",
                    s.label()
                )));
            }
            self.fast[mi].insert(s, (e.figures.clone(), pi));
        }
        Ok(())
    }

    /// After every part: a fast replay and a model replay of one shape
    /// held by two parts must agree. The error names the part (index)
    /// holding the fast one, and the other.
    pub fn finish(&self) -> std::result::Result<(), (usize, usize, String)> {
        for (mi, fast) in self.fast.iter().enumerate() {
            for (s, (f, pf)) in fast {
                if let Some((m, pm)) = self.model[mi].get(s)
                    && m.figures.as_ref().is_some_and(|m| m != f)
                {
                    return Err((
                        *pf,
                        *pm,
                        format!(
                            "{} {}: the fast replay differs from the model replay",
                            mode_name(self.modes[mi]),
                            s.label()
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Mode `mi`'s bisection, as every part holds it.
    pub fn bisect(&self, mi: usize) -> Result<Vec<ShapeEval>> {
        self.bisects[mi]
            .as_ref()
            .map(|(_, b)| b.clone())
            .ok_or_else(|| Error::internal("a merge without the parts' bisection"))
    }

    /// The first-seed replays as the confirmation and the bound ask for
    /// them: from the parts, else replayed on `ctx` and remembered.
    pub fn source<'a>(&'a self, ctx: &'a Ctx<'a>) -> Source<'a> {
        Source { stored: self, ctx }
    }

    /// What the merge replayed on the first seed because no part held it,
    /// one line each ("" when nothing: the usual case).
    pub fn note(&self) -> String {
        let mut rep = sorted(&self.replayed);
        rep.dedup();
        rep.iter()
            .map(|(mi, s, model)| {
                format!(
                    "merge replayed {} {} on the first seed {}: no shard explored a path that ends there\n",
                    mode_name(self.modes[*mi]),
                    s.label(),
                    if *model { "through the model" } else { "fast, to the end" }
                )
            })
            .collect()
    }

    fn missing(&self, mi: usize, s: RateShape, model: bool) {
        let mut rep = self.replayed.lock().unwrap_or_else(|e| e.into_inner());
        rep.push((mi, s, model));
    }
}

/// [`Stored`] as a [`FirstSeed`]: each replay from the parts, or done
/// here and noted.
pub struct Source<'a> {
    stored: &'a Stored,
    ctx: &'a Ctx<'a>,
}

impl Source<'_> {
    fn mi(&self, mode: RateMode) -> Result<usize> {
        self.stored
            .modes
            .iter()
            .position(|&m| m == mode)
            .ok_or_else(|| Error::internal("a merge asked for a mode it does not size"))
    }
}

impl FirstSeed for Source<'_> {
    fn model(&self, mode: RateMode, shape: RateShape) -> Result<SeedEval> {
        let mi = self.mi(mode)?;
        if let Some((s, _)) = self.stored.model[mi].get(&shape) {
            return Ok(s.clone());
        }
        self.stored.missing(mi, shape, true);
        self.ctx.model(mode, shape)
    }

    fn fast(&self, mode: RateMode, shape: RateShape) -> Result<Option<Figures>> {
        let mi = self.mi(mode)?;
        if let Some((f, _)) = self.stored.fast[mi].get(&shape) {
            return Ok(Some(f.clone()));
        }
        self.stored.missing(mi, shape, false);
        self.ctx.fast(mode, shape)
    }
}

/// What a merge noted it replayed, in order (its note is the same whatever
/// order the parallel walks replayed in).
pub(super) fn sorted<T: Ord + Clone>(replayed: &Mutex<Vec<T>>) -> Vec<T> {
    let mut v = replayed.lock().unwrap_or_else(|e| e.into_inner()).clone();
    v.sort();
    v
}
