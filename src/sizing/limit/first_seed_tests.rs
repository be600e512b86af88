//! Tests of [`super::first_seed`]: a merge of parts that hold every
//! first-seed replay replays nothing; what no part holds is replayed and
//! named; an edited bisection or model replay is refused naming the file.

use super::confirm::fast_of;
use super::first_seed::{check_bisect, fixed_list};
use super::lookup::Lookup;
use super::replay::{mode_name, Figures, RateShape};
use super::search::{Ctx, ModeResult, ShapeEval};
use super::split::tests::{bound_of, parts_of, whole_of, with_ctx_of};
use super::split::SizePart;
use crate::lab::shard::part::Shard;
use crate::model::rate_limiter::RateMode;
use crate::sizing::guarantee::Plan;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

const MODES: [RateMode; 2] = [RateMode::Docs, RateMode::Proportional];

type Parts = Vec<(PathBuf, Shard, SizePart)>;

/// A limit of 15, `compliant_denied_pct<=5` and the default claim (299
/// seeds): a job whose walks some shard explores whole, for 2 to 4
/// shards.
fn with_covered<T>(f: impl FnOnce(&Ctx<'_>, &AtomicUsize) -> T) -> T {
    with_ctx_of(15, "5", Plan::new(99.0, 95.0, 0).unwrap(), f)
}

/// The merge of `ps`: its results and bound, its note, and the
/// replays it made (counted by `replays`).
fn merge(
    ctx: &Ctx<'_>,
    ps: &Parts,
    replays: &AtomicUsize,
) -> (Vec<ModeResult>, Vec<Option<ShapeEval>>, String, usize) {
    replays.store(0, Ordering::Relaxed);
    let l = Lookup::of(ps, 5, ctx, &MODES).unwrap();
    let (r, b) = l.merge(ctx, &MODES, &bound_of(ctx)).unwrap();
    (r, b, l.note(&MODES), replays.load(Ordering::Relaxed))
}

/// What `Lookup::of` says of `ps` (it must refuse them).
fn refusal(ctx: &Ctx<'_>, ps: &Parts) -> String {
    match Lookup::of(ps, 5, ctx, &MODES) {
        Ok(_) => panic!("accepted"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn a_merge_of_parts_holding_everything_replays_nothing_and_is_the_whole_run() {
    with_covered(|ctx, replays| {
        let (wr, wb) = whole_of(ctx, &MODES);
        for n in [2, 3, 4] {
            let ps = parts_of(ctx, &MODES, n);
            let (r, b, note, done) = merge(ctx, &ps, replays);
            assert_eq!((done, note.as_str()), (0, ""), "{n} shards");
            for (m, w) in r.iter().zip(&wr) {
                assert_eq!(m.evaluated, w.evaluated, "{n} shards");
                assert_eq!((m.pick, &m.rejected), (w.pick, &w.rejected));
                assert_eq!(m.confirmed, w.confirmed, "{n} shards");
                assert!(m.confirmed.len() >= 4, "{:?}", m.confirmed);
            }
            assert!(b.iter().all(Option::is_some), "the bound fits");
            assert_eq!(b, wb, "{n} shards");
            // The fixed shapes are split: each on one shard, none
            // holding all of them.
            let fixed = {
                let bisects: Vec<Vec<ShapeEval>> =
                    wr.iter().map(|r| bisect_of(&r.evaluated)).collect();
                fixed_list(ctx, &bisects)
            };
            for (i, (mi, s)) in fixed.iter().enumerate() {
                let on: Vec<usize> = (0..n as usize)
                    .filter(|&k| ps[k].2.modes[*mi].model.iter().any(|e| e.shape == *s))
                    .collect();
                assert!(
                    on.contains(&(i % n as usize)),
                    "{n} shards: {s:?} on {on:?}"
                );
            }
            let held = fixed
                .iter()
                .filter(|(mi, s)| ps[0].2.modes[*mi].model.iter().any(|e| e.shape == *s))
                .count();
            assert!(held < fixed.len(), "{n} shards: shard 0 holds {held}");
        }
    })
}

fn bisect_of(evaluated: &[ShapeEval]) -> Vec<ShapeEval> {
    evaluated
        .iter()
        .filter(|e| e.phase == "bisect")
        .cloned()
        .collect()
}

#[test]
fn a_missing_first_seed_replay_is_replayed_and_named() {
    with_covered(|ctx, replays| {
        let (wr, wb) = whole_of(ctx, &MODES);
        let good = parts_of(ctx, &MODES, 3);
        // The pick's half, an anchor shape: on every shard whose path
        // ended at the pick; dropped from all of them.
        let pick = wr[1].evaluated[wr[1].pick.unwrap()].shape;
        let half = RateShape {
            hashes: pick.hashes,
            slots: pick.slots / 2,
        };
        let mut ps = good.clone();
        let mut dropped = 0;
        for p in &mut ps {
            let before = p.2.modes[1].model.len();
            p.2.modes[1].model.retain(|e| e.shape != half);
            dropped += before - p.2.modes[1].model.len();
        }
        assert!(dropped >= 1, "{half:?} held");
        let (r, b, note, done) = merge(ctx, &ps, replays);
        assert_eq!(
            note,
            format!(
                "merge replayed proportional {} on the first seed through the model: no shard explored a path that ends there\n",
                half.label()
            )
        );
        assert_eq!(done, 1);
        assert_eq!(
            (r[1].confirmed.clone(), b.clone()),
            (wr[1].confirmed.clone(), wb.clone())
        );
        // The default 4x1024, a fixed shape, on its one shard.
        let default = RateShape {
            hashes: 4,
            slots: 1024,
        };
        let mut ps = good;
        for p in &mut ps {
            p.2.modes[0].model.retain(|e| e.shape != default);
        }
        let (r, _, note, done) = merge(ctx, &ps, replays);
        assert!(
            note.contains("merge replayed docs 4x1024 on the first seed through the model"),
            "{note}"
        );
        assert_eq!(done, 1);
        assert_eq!(r[0].confirmed, wr[0].confirmed);
    })
}

#[test]
fn an_edited_bisection_or_model_replay_is_refused_naming_the_file() {
    with_covered(|ctx, _| {
        let good = parts_of(ctx, &MODES, 3);
        let c = ctx.classes.unwrap();
        // Counts that no longer add up to their percentage.
        let mut ps = good.clone();
        let f = ps[1].2.modes[0].bisect[0].seed.figures.as_mut().unwrap();
        f.compliant_denied += 1;
        let e = refusal(ctx, &ps);
        assert!(
            e.contains("s1.json")
                && e.contains("docs bisection 4x16")
                && e.contains("not this job's"),
            "{e}"
        );
        // A verdict the figures do not give.
        let mut ps = good.clone();
        let s = &mut ps[2].2.modes[1].bisect[1].seed;
        s.meets = !s.meets;
        let e = refusal(ctx, &ps);
        assert!(
            e.contains("s2.json") && e.contains("proportional bisection"),
            "{e}"
        );
        // A step the bisection does not take.
        let mut ps = good.clone();
        ps[1].2.modes[0].bisect.pop();
        let e = refusal(ctx, &ps);
        assert!(
            e.contains("s1.json") && e.contains("bisection: ends before"),
            "{e}"
        );
        // Figures that add up but are another bisection's.
        let mut ps = good.clone();
        let w = ps[2].2.modes[0]
            .bisect
            .iter_mut()
            .find_map(|b| b.seed.figures.as_mut()?.worst_window.as_mut())
            .unwrap();
        w.start_s += 1.0;
        let e = refusal(ctx, &ps);
        assert!(
            e.contains("s2.json") && e.contains("differs from s0.json's"),
            "{e}"
        );
        // A model replay whose excess adds up but is not the model's:
        // the bisection's fast replay of the shape says otherwise, or
        // another shard's replay of it does.
        let edit = |f: &mut Figures| {
            f.limited_excess += 1;
            f.limited_excess_pct =
                100.0 * f.limited_excess as f64 / c.limited_oracle_admitted as f64;
        };
        let bisected = |k: usize, mi: usize| {
            let b = check_bisect(ctx, &good[k].2.modes[mi].bisect).unwrap();
            good[k].2.modes[mi]
                .model
                .iter()
                .position(|e| fast_of(ctx, &b, e.shape).is_some())
        };
        let (k, mi, at) = (0..3)
            .flat_map(|k| (0..2).map(move |mi| (k, mi)))
            .find_map(|(k, mi)| bisected(k, mi).map(|at| (k, mi, at)))
            .unwrap();
        let mut ps = good.clone();
        edit(ps[k].2.modes[mi].model[at].seed.figures.as_mut().unwrap());
        let e = refusal(ctx, &ps);
        assert!(
            e.contains(&format!("s{k}.json"))
                && e.contains("other than the bisection's fast replay"),
            "{e}"
        );
        // Each shape is dealt to one shard; a part holding another's
        // replay (a copy, edited) is checked against it.
        let (mi, e) = (0..2)
            .find_map(|mi| {
                let b = check_bisect(ctx, &good[0].2.modes[mi].bisect).unwrap();
                good[0].2.modes[mi]
                    .model
                    .iter()
                    .find(|e| fast_of(ctx, &b, e.shape).is_none())
                    .map(|e| (mi, e.clone()))
            })
            .expect("a model replay on shard 0 the bisection did not replay");
        let mut copy = e;
        edit(copy.seed.figures.as_mut().unwrap());
        let mut ps = good.clone();
        ps[2].2.modes[mi].model.push(copy);
        let e = refusal(ctx, &ps);
        assert!(
            e.contains("s2.json") && e.contains("other than another shard's replay"),
            "{e}"
        );
        // Not the first seed.
        let mut ps = good;
        ps[0].2.modes[1].model[0].seed.lab_seed += 1;
        let e = refusal(ctx, &ps);
        assert!(
            e.contains("s0.json") && e.contains("not the first seed"),
            "{e}"
        );
    })
}

#[test]
fn the_picks_fast_replay_comes_from_a_part_or_is_replayed_and_named() {
    with_covered(|ctx, replays| {
        let (wr, _) = whole_of(ctx, &MODES);
        // A mode whose pick the bisection never replayed to the end.
        let (mi, pick) = (0..2)
            .map(|mi| (mi, wr[mi].evaluated[wr[mi].pick.unwrap()].shape))
            .find(|&(mi, p)| fast_of(ctx, &bisect_of(&wr[mi].evaluated), p).is_none())
            .expect("a pick off the bisection");
        let good = parts_of(ctx, &MODES, 3);
        let holds = |ps: &Parts| {
            ps.iter()
                .any(|p| p.2.modes[mi].fast.iter().any(|f| f.shape == pick))
        };
        assert!(holds(&good));
        let mut ps = good.clone();
        for p in &mut ps {
            p.2.modes[mi].fast.retain(|f| f.shape != pick);
        }
        let (r, _, note, done) = merge(ctx, &ps, replays);
        assert_eq!(
            note,
            format!(
                "merge replayed {} {} on the first seed fast, to the end: no shard explored a path that ends there\n",
                mode_name(MODES[mi]),
                pick.label()
            )
        );
        assert_eq!(done, 1);
        assert_eq!(r[mi].confirmed, wr[mi].confirmed);
        // Its figures edited so that they still add up: another
        // shard's replay of it, or the model's of the pick, says
        // otherwise.
        let c = ctx.classes.unwrap();
        let edit = |p: &mut (PathBuf, Shard, SizePart)| {
            let at = p.2.modes[mi].fast.iter_mut().find(|f| f.shape == pick);
            let Some(f) = at else { return false };
            f.figures.limited_excess -= 1;
            f.figures.limited_excess_pct =
                100.0 * f.figures.limited_excess as f64 / c.limited_oracle_admitted as f64;
            true
        };
        let mut ps = good.clone();
        let edited: Vec<usize> = (0..3).filter(|&k| edit(&mut ps[k])).collect();
        let e = refusal(ctx, &ps);
        let last = edited.last().unwrap();
        assert!(
            e.contains(&format!("s{last}.json"))
                && e.contains("the fast replay differs from the model replay"),
            "{e}"
        );
        if edited.len() > 1 {
            let mut ps = good;
            edit(&mut ps[edited[1]]);
            let e = refusal(ctx, &ps);
            assert!(
                e.contains(&format!("s{}.json", edited[1]))
                    && e.contains("another shard's replay of it differs"),
                "{e}"
            );
        }
    })
}
