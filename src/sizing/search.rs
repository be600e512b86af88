//! The search for the cheapest shape: powers of two in memory batches, then
//! a bisection of slots per `hashes`, then the hold-out check of the pick
//! (the steps are described in the module docs of [`crate::sizing`]).

use super::bound::{bound_pick, BoundPick};
use super::evaluation::{evaluate_batch, Candidate, Evaluator};
use super::guarantee::{verify_chunked, Exceedance, Plan};
use super::targets::{seed_meets, Target};
use super::{MAX_SEARCH_HASHES, MAX_SLOTS_LOG2, MIN_SLOTS_LOG2, REFINE_RESOLUTION};
use crate::metrics::ErrorStats;
use rayon::prelude::*;

/// The search's answer.
#[derive(Debug, Clone)]
pub struct SizeResult {
    /// Targets, as parsed.
    pub targets: Vec<Target>,
    /// Every shape evaluated, in evaluation order.
    pub evaluated: Vec<Candidate>,
    /// Index into `evaluated` of the recommendation.
    pub recommended: Option<usize>,
    /// Index of the cheapest passing power-of-two shape.
    pub recommended_pow2: Option<usize>,
    /// Hold-out statistics of the recommendation (fresh seeds).
    pub holdout: Option<Vec<ErrorStats>>,
    /// The recommendation's hold-out tally: seeds on which a target was
    /// missed, and the bound on the exceedance.
    pub holdout_exceedance: Option<Exceedance>,
    /// The claim the hold-out verifies.
    pub plan: Plan,
    /// Shapes that met the targets on the search seeds but failed the hold-out.
    pub holdout_rejected: Vec<usize>,
    /// Indexes into `evaluated` of the Pareto frontier (memory ascending).
    pub frontier: Vec<usize>,
    /// The bound's recommendation.
    pub bound: BoundPick,
    /// The bound's shape evaluated on the search seeds (if w is constrained).
    pub bound_eval: Option<Candidate>,
    /// The memory cap.
    pub max_memory: u64,
}

/// Search options.
#[derive(Debug, Clone)]
pub struct SearchOptions {
    /// Largest memory a shape may use.
    pub max_memory: u64,
    /// The claim the hold-out verifies (fresh seeds, failures allowed).
    pub plan: Plan,
}

impl Default for SearchOptions {
    /// The command line's defaults: a 1 GiB cap, 99% of seeds at 95%
    /// confidence.
    fn default() -> Self {
        Self {
            max_memory: 1 << 30,
            plan: Plan::new(
                super::guarantee::DEFAULT_COVERAGE_PCT,
                super::guarantee::DEFAULT_CONFIDENCE_PCT,
                0,
            )
            .expect("the default plan is valid"),
        }
    }
}

/// The progress callbacks of a search: `on_eval(n)` reports n more (shape,
/// seed) evaluations, `on_total(d)` changes the expected total by d.
#[derive(Clone, Copy)]
struct Hooks<'a> {
    on_eval: &'a (dyn Fn(u64) + Sync),
    on_total: &'a (dyn Fn(i64) + Sync),
}

/// Whether `a` is a better pick than `b`: cheaper; then the first target's
/// metric better; then fewer hashes.
fn better(targets: &[Target], a: &Candidate, b: &Candidate) -> bool {
    if a.memory_bytes != b.memory_bytes {
        return a.memory_bytes < b.memory_bytes;
    }
    if let Some(t) = targets.first() {
        let (x, y) = (
            t.metric.of_summary(&a.summary),
            t.metric.of_summary(&b.summary),
        );
        if x != y {
            return if t.metric.higher_is_better() {
                x > y
            } else {
                x < y
            };
        }
    }
    a.hashes < b.hashes
}

/// Runs the search. `on_eval(n)` reports n more (shape, seed) evaluations;
/// `on_total(d)` changes the expected total by d (for a progress bar).
///
/// # Examples
///
/// ```
/// use ratelab::hash::HasherKind;
/// use ratelab::model::estimator::Variant;
/// use ratelab::sizing::{search, Evaluator, SearchOptions, Target};
/// use ratelab::workload::CountWorkload;
/// use std::path::Path;
///
/// let workload = CountWorkload::Uniform { keys: 200, events: 2000 }
///     .build(Path::new("example"), "workload")
///     .unwrap();
/// let ev = Evaluator::new(workload, Variant::CountMin, HasherKind::Xxh3, 1, 2);
/// let targets = [Target::parse("exact_pct>=90", 10.0).unwrap()];
/// let result = search(&ev, &targets, &SearchOptions::default(), &|_| {}, &|_| {});
/// let pick = &result.evaluated[result.recommended.unwrap()];
/// assert!(pick.meets);
/// assert_eq!(pick.memory_bytes, pick.hashes as u64 * pick.slots * 8);
/// ```
pub fn search(
    ev: &Evaluator,
    targets: &[Target],
    opts: &SearchOptions,
    on_eval: &(dyn Fn(u64) + Sync),
    on_total: &(dyn Fn(i64) + Sync),
) -> SizeResult {
    let hooks = Hooks { on_eval, on_total };
    let seeds = i64::from(ev.seeds());
    let pow2 = power_of_two_grid(opts.max_memory);
    on_total(pow2.len() as i64 * seeds);
    let (mut evaluated, best_mem, reached) = search_powers_of_two(ev, targets, &pow2, hooks);
    // Shapes never reached (above the cheapest passing one) leave the total.
    on_total(-((pow2.len() - reached) as i64 * seeds));
    let recommended_pow2 = pick_best(targets, &evaluated, &[]);
    if recommended_pow2.is_some() {
        let refined = refine_all(ev, targets, &evaluated, best_mem, hooks);
        evaluated.extend(refined);
    }
    let (recommended, holdout, holdout_rejected) =
        pick_with_holdout(ev, targets, &opts.plan, &pow2, &mut evaluated, hooks);
    let (holdout, holdout_exceedance) = match holdout {
        Some((h, x)) => (Some(h), Some(x)),
        None => (None, None),
    };
    let frontier = pareto(targets, &evaluated);
    let events: u64 = ev.truth0().iter().sum();
    let keys = ev.truth0().iter().filter(|&&c| c > 0).count() as u64;
    let bound = bound_pick(targets, events, keys);
    let bound_eval = bound.slots.map(|w| {
        on_total(seeds);
        let mut c = evaluate_batch(ev, targets, &[(bound.hashes, w)], "bound", on_eval);
        c.remove(0)
    });
    SizeResult {
        targets: targets.to_vec(),
        evaluated,
        recommended,
        recommended_pow2,
        holdout,
        holdout_exceedance,
        plan: opts.plan,
        holdout_rejected,
        frontier,
        bound,
        bound_eval,
        max_memory: opts.max_memory,
    }
}

/// [`search`] without progress callbacks.
pub fn search_silent(ev: &Evaluator, targets: &[Target], opts: &SearchOptions) -> SizeResult {
    search(ev, targets, opts, &|_| {}, &|_| {})
}

/// The power of two at or below `memory`: the memory batch a shape is in.
fn band_of(memory: u64) -> u64 {
    1u64 << (63 - memory.leading_zeros())
}

/// Every power-of-two shape within `max_memory`, by memory, then hashes.
fn power_of_two_grid(max_memory: u64) -> Vec<(usize, u64)> {
    let mut pow2: Vec<(usize, u64)> = Vec::new();
    for h in 1..=MAX_SEARCH_HASHES {
        for k in MIN_SLOTS_LOG2..=MAX_SLOTS_LOG2 {
            let w = 1u64 << k;
            if Candidate::memory(h, w) <= max_memory {
                pow2.push((h, w));
            }
        }
    }
    pow2.sort_by_key(|&(h, w)| (Candidate::memory(h, w), h));
    pow2
}

/// Phase 1: the power-of-two shapes in batches of increasing memory, pruned
/// (see the module docs). Returns the shapes evaluated, the cheapest passing
/// memory (`u64::MAX` when none passed) and how many of `pow2` were reached.
fn search_powers_of_two(
    ev: &Evaluator,
    targets: &[Target],
    pow2: &[(usize, u64)],
    hooks: Hooks<'_>,
) -> (Vec<Candidate>, u64, usize) {
    let mut evaluated: Vec<Candidate> = Vec::new();
    let mut passed_h = [false; MAX_SEARCH_HASHES + 1];
    let mut best_mem = u64::MAX;
    let mut i = 0;
    while i < pow2.len() {
        let band = band_of(Candidate::memory(pow2[i].0, pow2[i].1));
        if band > best_mem {
            break;
        }
        let mut batch = Vec::new();
        while i < pow2.len() && Candidate::memory(pow2[i].0, pow2[i].1) < band.saturating_mul(2) {
            let (h, w) = pow2[i];
            if !passed_h[h] && Candidate::memory(h, w) <= best_mem {
                batch.push((h, w));
            } else {
                (hooks.on_total)(-(i64::from(ev.seeds())));
            }
            i += 1;
        }
        for c in evaluate_batch(ev, targets, &batch, "pow2", hooks.on_eval) {
            if c.meets {
                passed_h[c.hashes] = true;
                best_mem = best_mem.min(c.memory_bytes);
            }
            evaluated.push(c);
        }
    }
    (evaluated, best_mem, i)
}

/// Phase 2: refines slots per hashes, in parallel across hashes, below the
/// cheapest passing memory `best_mem`.
fn refine_all(
    ev: &Evaluator,
    targets: &[Target],
    evaluated: &[Candidate],
    best_mem: u64,
    hooks: Hooks<'_>,
) -> Vec<Candidate> {
    let plans: Vec<(usize, u64, Option<u64>)> = (1..=MAX_SEARCH_HASHES)
        .filter_map(|h| {
            let mine: Vec<&Candidate> = evaluated.iter().filter(|c| c.hashes == h).collect();
            let lo = mine
                .iter()
                .filter(|c| !c.meets)
                .map(|c| c.slots)
                .max()
                .unwrap_or(0);
            let hi_pass = mine.iter().filter(|c| c.meets).map(|c| c.slots).min();
            if Candidate::memory(h, lo) >= best_mem {
                return None;
            }
            Some((h, lo, hi_pass))
        })
        .collect();
    let refined: Vec<Vec<Candidate>> = plans
        .par_iter()
        .map(|&(h, lo, hi_pass)| refine(ev, targets, h, lo, hi_pass, best_mem, hooks))
        .collect();
    refined.into_iter().flatten().collect()
}

/// A hold-out's runs and its tally.
type Holdout = (Vec<ErrorStats>, Exceedance);

/// The pick, checked on the plan's hold-out seeds; if every passing shape fails the
/// hold-out, the powers of two skipped by the pruning are tried next, in
/// order of memory, until one passes both or the cap is reached. Returns the
/// index of the recommendation, its hold-out runs and the indexes rejected.
fn pick_with_holdout(
    ev: &Evaluator,
    targets: &[Target],
    plan: &Plan,
    pow2: &[(usize, u64)],
    evaluated: &mut Vec<Candidate>,
    hooks: Hooks<'_>,
) -> (Option<usize>, Option<Holdout>, Vec<usize>) {
    let mut rejected = Vec::new();
    let mut rest: Vec<(usize, u64)> = pow2
        .iter()
        .copied()
        .filter(|&(h, w)| !evaluated.iter().any(|c| c.hashes == h && c.slots == w))
        .collect();
    loop {
        while let Some(idx) = pick_best(targets, evaluated, &rejected) {
            let c = &evaluated[idx];
            let (hold, ex) = holdout_runs(ev, targets, plan, c.hashes, c.slots, hooks);
            if ex.holds {
                return (Some(idx), Some((hold, ex)), rejected);
            }
            rejected.push(idx);
        }
        if rest.is_empty() {
            return (None, None, rejected);
        }
        // The next memory band of skipped powers of two.
        let band = band_of(Candidate::memory(rest[0].0, rest[0].1));
        let split = rest
            .iter()
            .position(|&(h, w)| Candidate::memory(h, w) >= band.saturating_mul(2))
            .unwrap_or(rest.len());
        let batch: Vec<(usize, u64)> = rest.drain(..split).collect();
        (hooks.on_total)(batch.len() as i64 * i64::from(ev.seeds()));
        evaluated.extend(evaluate_batch(ev, targets, &batch, "pow2", hooks.on_eval));
    }
}

/// The hold-out runs of a shape: the plan's fresh runs (indexes `seeds..`),
/// stopping at the first failure beyond what the plan allows.
fn holdout_runs(
    ev: &Evaluator,
    targets: &[Target],
    plan: &Plan,
    hashes: usize,
    slots: u64,
    hooks: Hooks<'_>,
) -> (Vec<ErrorStats>, Exceedance) {
    let first = u64::from(ev.seeds());
    (hooks.on_total)(i64::from(plan.seeds));
    let (runs, ex) = verify_chunked(plan, first.., |r| {
        let s = ev.run_stats(hashes, slots, r as usize);
        (hooks.on_eval)(1);
        let met = seed_meets(targets, &s);
        Ok((s, met))
    })
    .expect("a hold-out run cannot fail");
    (hooks.on_total)(-(i64::from(plan.seeds) - runs.len() as i64));
    (runs, ex)
}

/// Bisects the slots of `h` rows between the failing `lo` and the passing
/// `hi_pass` (or the most slots costing less than `best_mem`).
fn refine(
    ev: &Evaluator,
    targets: &[Target],
    h: usize,
    mut lo: u64,
    hi_pass: Option<u64>,
    best_mem: u64,
    hooks: Hooks<'_>,
) -> Vec<Candidate> {
    let mut out = Vec::new();
    let seeds = i64::from(ev.seeds());
    let eval_one = |slots: u64| {
        (hooks.on_total)(seeds);
        evaluate_batch(ev, targets, &[(h, slots)], "refine", hooks.on_eval).remove(0)
    };
    // The most slots that cost less than the best passing shape.
    let cap = (best_mem.saturating_sub(1)) / (8 * h as u64);
    let mut hi = match hi_pass {
        Some(p) if p <= cap => p,
        _ => {
            if cap <= lo {
                return out;
            }
            let c = eval_one(cap);
            let ok = c.meets;
            out.push(c);
            if !ok {
                return out;
            }
            cap
        }
    };
    while hi - lo > (lo / REFINE_RESOLUTION).max(1) {
        let mid = lo + (hi - lo) / 2;
        let c = eval_one(mid);
        if c.meets {
            hi = mid;
        } else {
            lo = mid;
        }
        out.push(c);
    }
    out
}

fn pick_best(targets: &[Target], evaluated: &[Candidate], excluded: &[usize]) -> Option<usize> {
    let mut best: Option<usize> = None;
    for (i, c) in evaluated.iter().enumerate() {
        if !c.meets || excluded.contains(&i) {
            continue;
        }
        if best.is_none_or(|b| better(targets, c, &evaluated[b])) {
            best = Some(i);
        }
    }
    best
}

/// Indexes of the memory-vs-first-target-metric Pareto frontier, memory
/// ascending: a shape is on it when every cheaper (or equally cheap) shape has
/// a worse metric.
pub fn pareto(targets: &[Target], evaluated: &[Candidate]) -> Vec<usize> {
    let Some(t) = targets.first() else {
        return Vec::new();
    };
    let m = t.metric;
    let val = |c: &Candidate| {
        let v = m.of_summary(&c.summary);
        if m.higher_is_better() {
            -v
        } else {
            v
        }
    };
    let mut order: Vec<usize> = (0..evaluated.len()).collect();
    order.sort_by(|&a, &b| {
        let (ca, cb) = (&evaluated[a], &evaluated[b]);
        ca.memory_bytes
            .cmp(&cb.memory_bytes)
            .then(val(ca).total_cmp(&val(cb)))
            .then(ca.hashes.cmp(&cb.hashes))
    });
    let mut out = Vec::new();
    let mut best = f64::INFINITY;
    for i in order {
        let v = val(&evaluated[i]);
        if v < best {
            best = v;
            out.push(i);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::HasherKind;
    use crate::model::estimator::Variant;
    use crate::sizing::evaluation::tests::small;

    #[test]
    fn pareto_keeps_only_improvements() {
        let ev = Evaluator::new(small(5000, 1000), Variant::CountMin, HasherKind::Xxh3, 1, 2);
        let t = vec![Target::parse("exact_pct>=90", 1.0).unwrap()];
        let r = search_silent(&ev, &t, &SearchOptions::default());
        let f: Vec<&Candidate> = r.frontier.iter().map(|&i| &r.evaluated[i]).collect();
        assert!(!f.is_empty());
        for w in f.windows(2) {
            assert!(w[0].memory_bytes <= w[1].memory_bytes);
            assert!(w[0].summary.exact_pct.mean < w[1].summary.exact_pct.mean);
        }
        let rec = &r.evaluated[r.recommended.unwrap()];
        assert!(rec.meets);
    }
}
