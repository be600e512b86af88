//! `size --limit --shard i/n`: the search split across processes by hash
//! seed, over the shapes the walk can ask for.
//!
//! Every shape's replay needs every key (one sketch is shared by all of
//! them), so a shard cannot take a share of the keys. What is independent
//! is one replay: a shape on one hash seed. Nearly all of a search's time
//! is verification ([`super::search`]): each shape the walk asks for is
//! replayed on the claim's fresh seeds (299 by default), the one to four
//! that pass on every seed. So a shard takes a fixed slice of the work
//! matrix, shapes × seeds: the fresh seeds with index `r ≡ i + 1 (mod
//! n)` (seed index `r` is the lab seed `seed + r`), of every shape the walk
//! may ask for.
//!
//! Which shapes is the hard part: the walk is adaptive (each verification
//! decides the next shape), and a shard sees only its own seeds. A failure
//! on its seeds is a failure of the whole verification; a pass on its
//! seeds may still fail on another shard's. So each shard runs the walk
//! with its own verdicts and, where one of its passes is *unsure* (a seed
//! past [`UNSURE_MARGIN`] of a ceiling, or a failure the plan still
//! allows), the walk again with that shape failed ("flipped"), up to
//! [`MAX_FLIPS`] flips on one path and [`MAX_PATHS`] paths, fewest flips
//! first. Each shape is replayed once whatever the paths, and each replay
//! on a shard stops like the unsharded verification (chunk by chunk,
//! after the chunk holding a failure beyond what the plan allows): a
//! shard's own failures are never more than the whole verification's, so
//! it stops no earlier and holds every seed of its slice that
//! verification reads. Early stopping is kept where the shard sees the
//! failure; where the failing seed is another shard's, this shard
//! verifies its whole slice (the cost measured in the book's sharding
//! chapter).
//!
//! Which passes are unsure is a bet: a shape near the edge fails on a
//! rare seed, a jump, and a shard that holds none of its failing seeds
//! sees values inside the ceiling. On the first 500,000 requests of
//! `decision-cdn-edge`'s export (limit 100/s, `compliant_denied_pct<=0.1`,
//! 299 seeds, 4 shards) the docs walk rejected 4x87 and 2x310 on one seed
//! each, both shard 0's; shards 1-3 passed 2x310 with their worst seeds at
//! 0.73, 0.51 and 0.77 of the ceiling. Within 0.8 (the former margin) no
//! shard but 0 explored the walk behind it (4x174 down to the pick 4x95)
//! and the merge replayed 894 seeds; at 0.7 shards 1 and 3 explore it and
//! the merge replays shard 2's 300; at 0.5 every shard would, but the
//! same rule on the whole 2 M-request export doubled every shard's cost.
//! No margin can promise coverage: the failing seed is another shard's,
//! and failing every pass on every path grows exponentially with the
//! walk (on the test trace, every pass and three flips still left a case
//! to the merge, at 3x the unsharded work a shard). What the parts miss,
//! the merge replays and names.
//!
//! 1. shard `i` of `n` runs the first-seed bisection (the same on every
//!    shard), then the paths above for every estimate mode, then its share
//!    of the first-seed replays through the model that the confirmation
//!    and the bound's measure read ([`super::first_seed`]: the shapes the
//!    bisection fixes round-robin, the anchor shapes of the paths it
//!    explored that are dealt to it by shape), and writes the bisection, every shape it verified with its
//!    slice's seeds and its model replays ([`SizePart`]; floats as the
//!    shortest decimal that reads back to the same bits, serde_json's
//!    `float_roundtrip`);
//! 2. `ratelab merge` re-reads the trace for the report's facts (the
//!    classes and windows; no sketch replay), checks the parts (the
//!    trace's line count, every mode on every shard, each seed on the
//!    shard its index names, in order, its verdict the targets'; the
//!    bisection the same on every part and step by step a bisection; the
//!    model replays' figures adding up, equal to the bisection's fast
//!    replay of the shape where it has one and to another part's replay
//!    of it) and runs the walk on the parts' bisection with each
//!    verification *assembled* from the parts, seed by seed in order and
//!    chunk by chunk with the same stopping rule
//!    ([`super::lookup::Lookup::verify`]): it picks, then confirms the pick
//!    with the parts' model replays, the fast replay's check included. The
//!    walk is the unsharded run's, so the folder is byte for byte the
//!    same. What no shard holds (the walk took a path no shard explored to
//!    its end) is replayed by the merge, and the merge says which shape,
//!    seeds and shard, or which first-seed replay
//!    ([`super::lookup::Lookup::note`]); when the parts hold it all, the
//!    merge replays nothing.
//!
//! With one shard (`0/1`) a shard's verdicts are the whole ones: one path.

use super::first_seed::{self, FastEval, FirstEval, Needs};
use super::replay::{mode_name, RateShape};
use super::search::{bisect_mode, walk, Ctx, SeedEval, ShapeEval};
use crate::error::Result;
use crate::lab::shard::part::Shard;
use crate::model::rate_limiter::RateMode;
use crate::sizing::guarantee::VERIFY_CHUNK;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::collections::BTreeMap;

/// A shard re-walks a path with one of its passes failed when a seed of
/// that pass misses a target with each ceiling scaled by this (a floor P
/// read as 100 − this·(100 − P)). A shape near the edge fails on a few
/// seeds in hundreds, each a jump (a heavy key's collision), so a shard
/// that holds none of them sees values inside the ceiling; the question
/// is how far inside. Measured on `decision-cdn-edge`'s export (its first
/// 500,000 requests and all 2 M, limit 100/s, `compliant_denied_pct<=0.1`,
/// 299 seeds, 4 shards, both modes), of the passes a shard saw of shapes
/// the whole walk verified: worst seed at 0.7 to 1 of the ceiling, 13 of
/// 22 failed on another shard's seeds; at 0.5 to 0.7, 1 of 17. Exploring
/// a failed pass pays when it fails more often than not; 0.8 (the former
/// margin) left out 0.7 to 0.8, where 3 of 4 failed (docs 2x310 on the
/// 500,000, passed at 0.73 and 0.77 by two shards, failed on shard 0's
/// seed: the merge replayed 894 seeds), and 0.5 explored so much of the
/// second trace's walk that its shards took 0.65x to 0.86x of the
/// unsharded CPU instead of 0.33x to 0.45x.
pub const UNSURE_MARGIN: f64 = 0.7;
/// Most passes failed on one explored path: each flip can bring the
/// shapes of a new path, a slice replayed to its end, and a pass past
/// the margin fails elsewhere about 6 times in 10, so a path of three
/// flips is the walk's about 1 time in 5 (with unsure at 0.5, a third
/// flip cost the measured shards a tenth more and covered nothing more).
pub const MAX_FLIPS: usize = 2;
/// Most paths a shard explores per mode.
pub const MAX_PATHS: usize = 32;

/// How far a shard explores the walk beyond its own verdicts: which
/// passes are unsure, how many are failed on one path, how many paths.
#[derive(Debug, Clone, Copy)]
pub(super) struct Reach {
    /// A pass with a seed missing a target at this share of its ceiling
    /// is unsure ([`UNSURE_MARGIN`]).
    pub margin: f64,
    /// Most flips on one path ([`MAX_FLIPS`]).
    pub flips: usize,
    /// Most paths per mode ([`MAX_PATHS`]).
    pub paths: usize,
}

/// The reach `size --shard` explores with.
pub(super) const REACH: Reach = Reach {
    margin: UNSURE_MARGIN,
    flips: MAX_FLIPS,
    paths: MAX_PATHS,
};

/// One shape replayed on a shard's slice of the fresh seeds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShapeSeeds {
    /// The shape.
    pub shape: RateShape,
    /// The shard's seeds, in order, up to where the verification stops on
    /// them (all of them when none fails beyond what the plan allows).
    pub seeds: Vec<SeedEval>,
}

/// One mode in a shard: the bisection, every shape the shard verified
/// on its seeds, and its share of the first-seed replays through the
/// model ([`super::first_seed`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModePart {
    /// `docs` or `proportional`.
    pub mode: String,
    /// Paths of the walk explored.
    pub paths: u32,
    /// The first-seed bisection, in its order (the same on every shard).
    pub bisect: Vec<FirstEval>,
    /// The shapes, memory then rows ascending.
    pub shapes: Vec<ShapeSeeds>,
    /// The shard's share of the confirmation's and the bound's replays
    /// through the model on the first seed, memory ascending.
    pub model: Vec<FirstEval>,
    /// Fast replays to the end on the first seed of picks the bisection
    /// did not replay (the bug check's other side), memory ascending.
    pub fast: Vec<FastEval>,
}

/// A `size --limit --shard` shard's payload.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SizePart {
    /// Request lines of the trace.
    pub lines: u64,
    /// Every mode of the job, in the job's order.
    pub modes: Vec<ModePart>,
}

impl SizePart {
    /// "docs: 9 shapes on 3 paths, 310 seed replays, 4 first-seed
    /// replays; ...".
    pub fn summary(&self) -> String {
        let per: Vec<String> = self
            .modes
            .iter()
            .map(|m| {
                format!(
                    "{}: {} shapes on {} paths, {} seed replays, {} first-seed replays",
                    m.mode,
                    m.shapes.len(),
                    m.paths,
                    m.shapes.iter().map(|s| s.seeds.len()).sum::<usize>(),
                    m.model.len() + m.fast.len()
                )
            })
            .collect();
        per.join("; ")
    }
}

/// The shard that replays fresh seed index `r` (1-based) of `n`.
pub(super) fn owner(r: u64, n: u32) -> u32 {
    ((r - 1) % u64::from(n)) as u32
}

/// The last seed index of the verification chunk holding `r`.
fn chunk_end(r: u64, seeds: u32) -> u64 {
    let c = VERIFY_CHUNK as u64;
    ((r - 1) / c * c + c).min(u64::from(seeds))
}

/// A shape on a shard's seeds: the seeds (index, evaluation), whether
/// they fail the verification, whether a pass is unsure.
struct Local {
    seeds: Vec<(u64, SeedEval)>,
    fails: bool,
    unsure: bool,
}

/// `shape` on shard `sh`'s seeds, in batches of [`VERIFY_CHUNK`] (in
/// parallel within one), up to the end of the verification chunk holding
/// the failure beyond what the plan allows; a pass is unsure as `margin`
/// says ([`Reach::margin`]).
fn local_verify(
    ctx: &Ctx<'_>,
    mode: RateMode,
    shape: RateShape,
    sh: Shard,
    margin: f64,
) -> Result<Local> {
    let plan = ctx.plan;
    let own: Vec<u64> = (1..=u64::from(plan.seeds))
        .filter(|&r| owner(r, sh.count) == sh.index)
        .collect();
    let mut out: Vec<(u64, SeedEval)> = Vec::new();
    let mut end: Option<u64> = None;
    let mut next = 0;
    while next < own.len() {
        let batch: Vec<u64> = own[next..]
            .iter()
            .take(VERIFY_CHUNK)
            .copied()
            .filter(|&r| end.is_none_or(|e| r <= e))
            .collect();
        if batch.is_empty() {
            break;
        }
        next += batch.len();
        let got: Vec<SeedEval> = batch
            .par_iter()
            .map(|&r| ctx.eval_seed(mode, shape, r as u32, false, 1.0))
            .collect::<Result<_>>()?;
        out.extend(batch.into_iter().zip(got));
        if end.is_none() {
            let mut failures = 0;
            for (r, s) in &out {
                failures += u32::from(!s.meets);
                if plan.rejects(failures) {
                    end = Some(chunk_end(*r, plan.seeds));
                    break;
                }
            }
        }
    }
    if let Some(e) = end {
        out.retain(|(r, _)| *r <= e);
    }
    let fails = end.is_some();
    let unsure = !fails
        && sh.count > 1
        && out
            .iter()
            .any(|(_, s)| !s.meets || !ctx.seed_meets(s, margin));
    Ok(Local {
        seeds: out,
        fails,
        unsure,
    })
}

/// Shard `sh`'s part: every mode's bisection, then the walk's paths
/// explored on the shard's seeds, then the shard's share of the
/// first-seed replays through the model (see the module docs).
pub fn shard_part(ctx: &Ctx<'_>, modes: &[RateMode], lines: u64, sh: Shard) -> Result<SizePart> {
    shard_part_with(ctx, modes, lines, sh, REACH)
}

/// [`shard_part`] exploring with `reach`.
pub(super) fn shard_part_with(
    ctx: &Ctx<'_>,
    modes: &[RateMode],
    lines: u64,
    sh: Shard,
    reach: Reach,
) -> Result<SizePart> {
    let bisects: Vec<Vec<ShapeEval>> = modes
        .par_iter()
        .map(|&m| bisect_mode(ctx, m))
        .collect::<Result<_>>()?;
    let (mut parts, needs): (Vec<ModePart>, Vec<Needs>) = modes
        .par_iter()
        .zip(&bisects)
        .map(|(&m, b)| explore(ctx, m, b, sh, reach))
        .collect::<Result<Vec<_>>>()?
        .into_iter()
        .unzip();
    let firsts = first_seed::shard_replays(ctx, modes, &bisects, &needs, sh)?;
    for (mp, f) in parts.iter_mut().zip(firsts) {
        mp.model = f.model;
        mp.fast = f.fast;
    }
    Ok(SizePart {
        lines,
        modes: parts,
    })
}

/// The paths of one mode's walk on shard `sh`: its own verdicts, then the
/// same with up to `reach.flips` unsure passes failed, fewest flips
/// first; and what their ends ask of the confirmation.
fn explore(
    ctx: &Ctx<'_>,
    mode: RateMode,
    bisect: &[ShapeEval],
    sh: Shard,
    reach: Reach,
) -> Result<(ModePart, Needs)> {
    let mut needs = Needs::default();
    let memo: RefCell<BTreeMap<RateShape, Local>> = RefCell::new(BTreeMap::new());
    let mut paths: Vec<Vec<RateShape>> = vec![Vec::new()];
    let mut at = 0;
    while at < paths.len() && at < reach.paths {
        let flipped = paths[at].clone();
        at += 1;
        let unsure: RefCell<Vec<RateShape>> = RefCell::new(Vec::new());
        let verify = |s: RateShape, phase: &'static str| -> Result<ShapeEval> {
            if !memo.borrow().contains_key(&s) {
                let l = local_verify(ctx, mode, s, sh, reach.margin)?;
                memo.borrow_mut().insert(s, l);
            }
            let m = memo.borrow();
            let l = &m[&s];
            let meets = !l.fails && !flipped.contains(&s);
            if meets && l.unsure {
                unsure.borrow_mut().push(s);
            }
            Ok(ShapeEval {
                shape: s,
                memory_bytes: s.memory(),
                phase,
                seeds: Vec::new(),
                meets,
                exceedance: None,
            })
        };
        let (evaluated, pick, _) = walk(ctx, bisect.to_vec(), &verify)?;
        needs.add(ctx, &evaluated, pick);
        if flipped.len() < reach.flips {
            for s in unsure.into_inner() {
                let mut f = flipped.clone();
                f.push(s);
                f.sort();
                if !paths.contains(&f) {
                    paths.push(f);
                }
            }
        }
    }
    let mut shapes: Vec<ShapeSeeds> = memo
        .into_inner()
        .into_iter()
        // A shard past the plan's seeds (more shards than seeds) has none.
        .filter(|(_, l)| !l.seeds.is_empty())
        .map(|(shape, l)| ShapeSeeds {
            shape,
            seeds: l.seeds.into_iter().map(|(_, s)| s).collect(),
        })
        .collect();
    shapes.sort_by_key(|s| (s.shape.memory(), s.shape.hashes, s.shape.slots));
    let first = |e: &ShapeEval| FirstEval {
        shape: e.shape,
        seed: e.seeds[0].clone(),
    };
    let part = ModePart {
        mode: mode_name(mode).to_string(),
        paths: at as u32,
        bisect: bisect.iter().map(first).collect(),
        shapes,
        model: Vec::new(),
        fast: Vec::new(),
    };
    Ok((part, needs))
}

#[cfg(test)]
pub(super) mod tests {
    use super::super::bound::{limit_bound, measure, LimitBound};
    use super::super::classes::{Classes, LimitPolicy};
    use super::super::lookup::{ranges, Lookup};
    use super::super::search::search_mode;
    use super::super::search::ModeResult;
    use super::super::targets::LimitTarget;
    use super::super::windows::Windows;
    use super::*;
    use crate::sizing::guarantee::Plan;
    use std::path::PathBuf;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// The replay tests' trace under a limit of 10 per second, a claim of
    /// 22 seeds: a walk with failing and passing verifications; `f` is
    /// also given the count of replays made on the context.
    fn with_ctx<T>(f: impl FnOnce(&Ctx<'_>, &AtomicUsize) -> T) -> T {
        with_ctx_of(10, "2", Plan::new(90.0, 90.0, 0).unwrap(), f)
    }

    /// The replay tests' trace under a limit of `limit` per second,
    /// `compliant_denied_pct<=pct` and the claim `plan`.
    pub(in super::super) fn with_ctx_of<T>(
        limit: u64,
        pct: &str,
        plan: Plan,
        f: impl FnOnce(&Ctx<'_>, &AtomicUsize) -> T,
    ) -> T {
        let tr = super::super::replay::tests::trace();
        let policy = LimitPolicy {
            limit,
            interval_ms: 1000,
        };
        let classes = Classes::of(&tr, policy);
        let windows = Windows::of_trace(&tr, policy.interval_ns());
        let t = format!("compliant_denied_pct<={pct}");
        let targets = [LimitTarget::parse_in(&t, Some(limit)).unwrap()];
        let replays = AtomicUsize::new(0);
        let count = || {
            replays.fetch_add(1, Ordering::Relaxed);
        };
        let ctx = Ctx {
            trace: Some(&tr),
            classes: Some(&classes),
            windows: &windows,
            policy,
            near: (limit / 2, limit),
            targets: &targets,
            seed: 7,
            plan,
            max_memory: 1 << 20,
            on_eval: &count,
        };
        f(&ctx, &replays)
    }

    /// The `n` shards' parts of a sizing of `modes`, as `s0.json`, ...
    pub(in super::super) fn parts_of(
        ctx: &Ctx<'_>,
        modes: &[RateMode],
        n: u32,
    ) -> Vec<(PathBuf, Shard, SizePart)> {
        parts_with(ctx, modes, n, REACH)
    }

    /// [`parts_of`] with the shards exploring with `reach`.
    fn parts_with(
        ctx: &Ctx<'_>,
        modes: &[RateMode],
        n: u32,
        reach: Reach,
    ) -> Vec<(PathBuf, Shard, SizePart)> {
        (0..n)
            .map(|index| {
                let sh = Shard { index, count: n };
                let p = shard_part_with(ctx, modes, 5, sh, reach).unwrap();
                (PathBuf::from(format!("s{index}.json")), sh, p)
            })
            .collect()
    }

    fn parts(ctx: &Ctx<'_>, n: u32) -> Vec<(PathBuf, Shard, SizePart)> {
        parts_of(ctx, &[RateMode::Docs], n)
    }

    /// The bound of the test's targets.
    pub(in super::super) fn bound_of(ctx: &Ctx<'_>) -> LimitBound {
        limit_bound(ctx.targets, ctx.policy, ctx.near, ctx.windows, ctx.classes)
    }

    /// The whole run of `modes`: each mode's search, the bound's measure.
    pub(in super::super) fn whole_of(
        ctx: &Ctx<'_>,
        modes: &[RateMode],
    ) -> (Vec<ModeResult>, Vec<Option<ShapeEval>>) {
        let r = modes
            .iter()
            .map(|&m| search_mode(ctx, m).unwrap())
            .collect();
        (r, measure(&bound_of(ctx), ctx, modes, ctx).unwrap())
    }

    fn merged(ctx: &Ctx<'_>, l: &Lookup) -> ModeResult {
        l.merge(ctx, &[RateMode::Docs], &bound_of(ctx))
            .unwrap()
            .0
            .remove(0)
    }

    #[test]
    fn shards_of_seeds_merge_to_the_whole_walk_for_1_to_4_and_25_shards() {
        with_ctx(|ctx, replays| {
            let modes = [RateMode::Docs];
            let (wr, wb) = whole_of(ctx, &modes);
            let whole = &wr[0];
            let verified: Vec<&ShapeEval> = whole
                .evaluated
                .iter()
                .filter(|e| e.exceedance.is_some())
                .collect();
            assert!(
                verified.iter().any(|e| e.meets) && verified.iter().any(|e| !e.meets),
                "a walk with a failure and a pass: {:?}",
                verified
                    .iter()
                    .map(|e| (e.shape, e.meets))
                    .collect::<Vec<_>>()
            );
            // 25 shards: more than the plan's 22 seeds, so some hold none.
            for n in [1, 2, 3, 4, 25] {
                let ps = parts(ctx, n);
                replays.store(0, Ordering::Relaxed);
                let l = Lookup::of(&ps, 5, ctx, &modes).unwrap();
                let (mut ms, mb) = l.merge(ctx, &modes, &bound_of(ctx)).unwrap();
                let m = ms.remove(0);
                assert_eq!(m.evaluated, whole.evaluated, "{n} shards");
                assert_eq!((m.pick, &m.rejected), (whole.pick, &whole.rejected));
                assert_eq!(m.confirmed, whole.confirmed, "{n} shards");
                assert_eq!(mb, wb, "{n} shards");
                // One shard's verdicts are the whole ones: its one path is
                // the walk, and the merge replays nothing (nor the
                // bisection, nor the model's confirmation and bound).
                if n == 1 {
                    let done = replays.load(Ordering::Relaxed);
                    assert_eq!((done, l.note(&modes).as_str()), (0, ""));
                    assert_eq!(ps[0].2.modes[0].paths, 1);
                }
                // The shards split the seed replays: none holds all of them.
                let total: usize = ps[0].2.modes[0].shapes.iter().map(|s| s.seeds.len()).sum();
                if n > 1 {
                    let all: usize = verified.iter().map(|e| e.seeds.len()).sum();
                    assert!(total < all, "{n} shards: shard 0 has {total} of {all}");
                }
            }
        })
    }

    /// A shape the whole walk rejects that a shard of 4 passed with each
    /// of its seeds within 0.8 of the ceiling (sure by the former rule)
    /// but one past 0.7 of it: the walk behind that failure is explored
    /// now, and the merge replays nothing; explored as before, the merge
    /// replays it (and its folder is still the whole one).
    #[test]
    fn a_pass_past_0_7_of_a_ceiling_is_explored_failed_so_merge_replays_nothing() {
        let plan = Plan::new(90.0, 90.0, 0).unwrap();
        with_ctx_of(6, "5", plan, |ctx, replays| {
            let modes = [RateMode::Docs, RateMode::Proportional];
            let (wr, wb) = whole_of(ctx, &modes);
            let former = Reach {
                margin: 0.8,
                ..REACH
            };
            let merge_with = |reach: Reach| {
                let ps = parts_with(ctx, &modes, 4, reach);
                replays.store(0, Ordering::Relaxed);
                let l = Lookup::of(&ps, 5, ctx, &modes).unwrap();
                let (ms, mb) = l.merge(ctx, &modes, &bound_of(ctx)).unwrap();
                for (m, w) in ms.iter().zip(&wr) {
                    assert_eq!(m.evaluated, w.evaluated, "{reach:?}");
                    assert_eq!((m.pick, &m.rejected), (w.pick, &w.rejected));
                    assert_eq!(m.confirmed, w.confirmed, "{reach:?}");
                }
                assert_eq!(mb, wb, "{reach:?}");
                (replays.load(Ordering::Relaxed), l.note(&modes), ps)
            };
            let (done, note, ps) = merge_with(REACH);
            assert_eq!((done, note.as_str()), (0, ""));
            // The case: a rejected shape of the whole walk that a shard
            // passed, every seed within 0.8 of the ceiling, one not within
            // 0.7 of it.
            let missed = wr.iter().enumerate().any(|(mi, w)| {
                w.evaluated
                    .iter()
                    .filter(|e| e.exceedance.is_some() && !e.meets)
                    .any(|e| {
                        ps.iter().any(|(_, _, p)| {
                            p.modes[mi]
                                .shapes
                                .iter()
                                .filter(|s| s.shape == e.shape)
                                .any(|s| {
                                    s.seeds.iter().all(|x| ctx.seed_meets(x, 0.8))
                                        && !s.seeds.iter().all(|x| ctx.seed_meets(x, UNSURE_MARGIN))
                                })
                        })
                    })
            });
            assert!(missed, "no rejected shape a shard was sure of before");
            let (done, note, _) = merge_with(former);
            assert!(
                done > 0 && note.contains("merge replayed"),
                "{done}: {note}"
            );
        })
    }

    #[test]
    fn a_seed_no_shard_holds_is_replayed_and_named() {
        with_ctx(|ctx, _| {
            let whole = search_mode(ctx, RateMode::Docs).unwrap();
            let mut ps = parts(ctx, 2);
            // Shard 1 lost the pick's seeds.
            let pick = whole.evaluated[whole.pick.unwrap()].shape;
            ps[1].2.modes[0].shapes.retain(|s| s.shape != pick);
            let l = Lookup::of(&ps, 5, ctx, &[RateMode::Docs]).unwrap();
            assert_eq!(merged(ctx, &l).evaluated, whole.evaluated);
            let note = l.note(&[RateMode::Docs]);
            assert!(
                note.contains(&format!(
                    "merge replayed docs {} on 11 seed(s) of shard 1/2",
                    pick.label()
                )),
                "{note}"
            );
        })
    }

    #[test]
    fn parts_of_another_split_are_refused_naming_the_file() {
        with_ctx(|ctx, _| {
            let modes = [RateMode::Docs];
            let err = |ps: &[(PathBuf, Shard, SizePart)]| match Lookup::of(ps, 5, ctx, &modes) {
                Ok(_) => panic!("accepted"),
                Err(e) => e.to_string(),
            };
            let good = parts(ctx, 2);
            // A seed of shard 0 in shard 1's part.
            let mut ps = good.clone();
            let s0 = ps[0].2.modes[0].shapes[0].seeds[0].clone();
            ps[1].2.modes[0].shapes[0].seeds.insert(0, s0);
            let e = err(&ps);
            assert!(
                e.contains("s1.json") && e.contains("not the next seed of shard 1"),
                "{e}"
            );
            // A shape twice.
            let mut ps = good.clone();
            let dup = ps[0].2.modes[0].shapes[0].clone();
            ps[0].2.modes[0].shapes.push(dup);
            let e = err(&ps);
            assert!(e.contains("s0.json") && e.contains("given twice"), "{e}");
            // A verdict the targets do not give.
            let mut ps = good.clone();
            let s = &mut ps[1].2.modes[0].shapes[0].seeds[0];
            s.meets = !s.meets;
            let e = err(&ps);
            assert!(e.contains("s1.json") && e.contains("not this job's"), "{e}");
            // No walk of a mode the job sizes; another trace.
            let mut ps = good.clone();
            ps[0].2.modes.clear();
            assert!(err(&ps).contains("holds no docs walk"));
            let mut ps = good;
            ps[1].2.lines = 6;
            assert!(err(&ps).contains("a shard of another trace"));
        })
    }

    #[test]
    fn seeds_go_round_robin_and_chunks_end_on_the_plan() {
        let of4: Vec<u32> = (1..=9).map(|r| owner(r, 4)).collect();
        assert_eq!(of4, [0, 1, 2, 3, 0, 1, 2, 3, 0]);
        assert!((1..=299).all(|r| owner(r, 1) == 0));
        assert_eq!(chunk_end(1, 299), 8);
        assert_eq!(chunk_end(8, 299), 8);
        assert_eq!(chunk_end(9, 299), 16);
        assert_eq!(chunk_end(298, 299), 299);
        assert_eq!(ranges(&[3]), "3");
        assert_eq!(ranges(&[3, 7, 11]), "3..=11");
        // First-seed replays off the fixed list: one owner per shape and
        // mode, spread over the shards.
        let mut per = [0usize; 4];
        for mi in 0..2 {
            for slots in 16..116 {
                let s = RateShape { hashes: 4, slots };
                let owners: Vec<u32> = (0..4)
                    .filter(|&index| first_seed::deals(mi, s, Shard { index, count: 4 }))
                    .collect();
                assert_eq!(owners.len(), 1, "{mi} {s:?}");
                per[owners[0] as usize] += 1;
            }
        }
        assert!(per.iter().all(|&k| k > 30), "{per:?}");
    }
}
