//! Sizing a count-min sketch for a workload: the search behind `ratelab size`.
//!
//! Input: a count workload, one or more [`Target`]s (`exact_pct>=99`,
//! `p99<=5`, `max<=100`, `mean<=0.01*avg`, `over_bound_pct<=1`), a memory cap,
//! the update rule and the number of seeds. Output: the cheapest `hashes ×
//! slots` that meets every target, the memory-vs-error Pareto frontier of the
//! shapes tried, and what the count-min bound would have recommended.
//!
//! ## Evaluating one shape
//!
//! A shape is evaluated on seeds `r = 0..seeds` exactly as
//! `estimator_accuracy`'s sweep does (run seed `derive_seed(seed, [r])`, its
//! workload and hash streams), so a row printed here equals the row of an
//! `estimator_accuracy` scenario with the same seed (a test checks this
//! against [`replay_cell`](crate::lab::estimator_accuracy::replay_cell)).
//! Two shortcuts make it cheap, with identical results:
//!
//! * standard count-min update commutes: after the whole stream a cell holds
//!   the sum of the true counts of the keys hashed to it, whatever the event
//!   order, so the estimate of a key is the minimum over rows of its cell's
//!   sum — O(keys × hashes) per shape instead of O(events × hashes);
//! * only cells some key hashes to matter, so cells are renumbered compactly
//!   (memory O(keys × hashes), whatever `slots`); conservative update, whose
//!   result depends on the order, replays the seed's event stream on them.
//!
//! ## "Meets" (the robustness rule)
//!
//! A shape meets a target when the target holds for the **mean over seeds and
//! for every single seed**. The recommendation must in addition pass the same
//! rule on a **hold-out** set of as many fresh seeds (run indices
//! `seeds..2·seeds`); a shape that fails the hold-out is dropped and the next
//! cheapest passing shape is tried. So its claim holds when rerun with other
//! seeds, not only on the seeds it was picked with.
//!
//! ## Search
//!
//! 1. Powers of two: `hashes` 1..=8 × `slots` 2^4..=2^24 (within the cap), in
//!    batches of increasing memory (`[2^b, 2^(b+1))` bytes); each batch runs
//!    in parallel (shapes × seeds). Pruning: for a given `hashes`, once a
//!    slots value passes, larger ones are skipped; a shape costing more than
//!    the cheapest passing one found so far is skipped; the search stops when
//!    a batch starts above that cost.
//! 2. Refinement: for every `hashes` whose largest failing power of two costs
//!    less than the cheapest passing shape, slots are bisected between that
//!    power and the smaller of (its first passing power, the most slots that
//!    still cost less than the cheapest passing shape), to a resolution of
//!    1/32 of the slots. The `hashes` values are refined in parallel.
//!
//! Monotonicity assumed by the pruning and the bisection: more slots (same
//! hashes) never make the error larger. For count-min with power-of-two slots
//! this is exact — `hash % 2w` refines `hash % w`, so every cell sum can only
//! shrink — and more rows (same slots, same seed) can only lower a minimum.
//! Between powers of two, and for conservative update, it holds statistically
//! only; the every-seed rule and the hold-out catch a lucky bisection point.
//!
//! Results are identical at any thread count: every evaluation is a pure
//! function of (shape, seed), batches are fixed by memory, and results are
//! collected in a fixed order.

use crate::error::{Error, Result};
use crate::hash::{HasherKind, RowHasher};
use crate::metrics::{count_min_bound, error_stats, summarize, ErrorStats, RunSummary};
use crate::model::estimator::Variant;
use crate::report::fmt::{bytes_human, kib};
use crate::rng::{derive_seed, stream};
use crate::workload::Workload;
use rayon::prelude::*;
use serde::Serialize;
use std::sync::Arc;

/// Smallest and largest power-of-two exponent of slots tried.
pub const MIN_SLOTS_LOG2: u32 = 4;
/// See [`MIN_SLOTS_LOG2`].
pub const MAX_SLOTS_LOG2: u32 = 24;
/// Rows tried.
pub const MAX_SEARCH_HASHES: usize = 8;
/// Bisection stops when the slot interval is at most `lo / REFINE_RESOLUTION`.
pub const REFINE_RESOLUTION: u64 = 32;

/// An error statistic a target constrains.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// Share of keys estimated exactly (%), higher is better.
    ExactPct,
    /// Mean overcount.
    Mean,
    /// 99th percentile of the overcount (nearest rank).
    P99,
    /// Largest overcount.
    Max,
    /// Share of keys whose overcount exceeds e·N/w (%).
    OverBoundPct,
}

impl Metric {
    /// The name used in targets and reports.
    pub fn name(self) -> &'static str {
        match self {
            Metric::ExactPct => "exact_pct",
            Metric::Mean => "mean",
            Metric::P99 => "p99",
            Metric::Max => "max",
            Metric::OverBoundPct => "over_bound_pct",
        }
    }

    /// True when larger values are better.
    pub fn higher_is_better(self) -> bool {
        self == Metric::ExactPct
    }

    /// The statistic of one run.
    pub fn of(self, s: &ErrorStats) -> f64 {
        match self {
            Metric::ExactPct => s.exact_pct,
            Metric::Mean => s.mean,
            Metric::P99 => s.p99,
            Metric::Max => s.max,
            Metric::OverBoundPct => s.over_bound_pct,
        }
    }

    /// The mean over runs.
    pub fn of_summary(self, s: &RunSummary) -> f64 {
        match self {
            Metric::ExactPct => s.exact_pct.mean,
            Metric::Mean => s.mean.mean,
            Metric::P99 => s.p99.mean,
            Metric::Max => s.max.mean,
            Metric::OverBoundPct => s.over_bound_pct.mean,
        }
    }

    const ALL: [Metric; 5] = [
        Metric::ExactPct,
        Metric::Mean,
        Metric::P99,
        Metric::Max,
        Metric::OverBoundPct,
    ];
}

/// A comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Cmp {
    /// `>=`
    #[serde(rename = ">=")]
    Ge,
    /// `>`
    #[serde(rename = ">")]
    Gt,
    /// `<=`
    #[serde(rename = "<=")]
    Le,
    /// `<`
    #[serde(rename = "<")]
    Lt,
}

impl Cmp {
    fn symbol(self) -> &'static str {
        match self {
            Cmp::Ge => ">=",
            Cmp::Gt => ">",
            Cmp::Le => "<=",
            Cmp::Lt => "<",
        }
    }
}

/// One accuracy target, e.g. `p99<=5`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Target {
    /// As the user wrote it.
    pub text: String,
    /// What it constrains.
    pub metric: Metric,
    /// How.
    pub cmp: Cmp,
    /// The threshold, with `avg` resolved.
    pub threshold: f64,
}

impl Target {
    /// Parses `metric OP value`, where value is a number, `avg`, `K*avg` or
    /// `avg*K` (`avg` = events / keys of the workload).
    pub fn parse(text: &str, avg: f64) -> Result<Target> {
        let bad = |place: &str, expected: &str| {
            Error::input(format!(
                "--target {text:?}: at {place:?}: expected {expected}"
            ))
        };
        let t: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        let Some(op_at) = t.find(['<', '>', '=', '!']) else {
            return Err(bad(
                &t,
                "METRIC OP VALUE, e.g. exact_pct>=99, p99<=5, max<=100, mean<=0.01*avg",
            ));
        };
        let (name, rest) = t.split_at(op_at);
        let metric = Metric::ALL
            .into_iter()
            .find(|m| m.name() == name)
            .ok_or_else(|| {
                bad(
                    name,
                    "a metric: exact_pct, mean, p99, max or over_bound_pct",
                )
            })?;
        let (cmp, value) = if let Some(v) = rest.strip_prefix(">=") {
            (Cmp::Ge, v)
        } else if let Some(v) = rest.strip_prefix("<=") {
            (Cmp::Le, v)
        } else if let Some(v) = rest.strip_prefix('>') {
            (Cmp::Gt, v)
        } else if let Some(v) = rest.strip_prefix('<') {
            (Cmp::Lt, v)
        } else {
            return Err(bad(rest, "an operator: >=, >, <= or <"));
        };
        let wants_high = metric.higher_is_better();
        if wants_high != matches!(cmp, Cmp::Ge | Cmp::Gt) {
            return Err(bad(
                cmp.symbol(),
                if wants_high {
                    "'>=' or '>' (exact_pct is a floor: higher is better)"
                } else {
                    "'<=' or '<' (errors are ceilings: lower is better)"
                },
            ));
        }
        let num = |s: &str| -> Option<f64> { s.parse::<f64>().ok().filter(|v| v.is_finite()) };
        let threshold = if value == "avg" {
            Some(avg)
        } else if let Some(k) = value.strip_suffix("*avg") {
            num(k).map(|k| k * avg)
        } else if let Some(k) = value.strip_prefix("avg*") {
            num(k).map(|k| k * avg)
        } else {
            num(value)
        }
        .ok_or_else(|| {
            bad(
                value,
                "a number, `avg`, `K*avg` or `avg*K` (avg = events/keys)",
            )
        })?;
        if threshold < 0.0 {
            return Err(bad(value, "a value >= 0"));
        }
        if metric == Metric::ExactPct || metric == Metric::OverBoundPct {
            let impossible = match cmp {
                Cmp::Gt => threshold >= 100.0,
                Cmp::Ge => threshold > 100.0,
                _ => false,
            };
            if impossible || threshold > 100.0 {
                return Err(bad(value, "a percentage in 0..=100"));
            }
        }
        if cmp == Cmp::Lt && threshold == 0.0 {
            return Err(bad(value, "a value > 0 (errors are never below 0)"));
        }
        Ok(Target {
            text: text.to_string(),
            metric,
            cmp,
            threshold,
        })
    }

    /// Whether `value` satisfies the target.
    pub fn holds(&self, value: f64) -> bool {
        match self.cmp {
            Cmp::Ge => value >= self.threshold,
            Cmp::Gt => value > self.threshold,
            Cmp::Le => value <= self.threshold,
            Cmp::Lt => value < self.threshold,
        }
    }

    /// The target rewritten with its resolved threshold.
    pub fn resolved(&self) -> String {
        format!(
            "{}{}{}",
            self.metric.name(),
            self.cmp.symbol(),
            trim_float(self.threshold)
        )
    }
}

fn trim_float(v: f64) -> String {
    let s = format!("{v:.4}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Per-seed inputs of an evaluation.
#[derive(Debug, Clone)]
struct SeedData {
    hash_seed: u64,
    workload_seed: u64,
    /// True count per key id.
    truth: Arc<Vec<u64>>,
    /// The event stream, when cached (conservative update only).
    events: Option<Arc<Vec<u32>>>,
}

/// Evaluates shapes on a workload over a fixed set of seeds.
#[derive(Debug)]
pub struct Evaluator {
    workload: Workload,
    variant: Variant,
    hasher: HasherKind,
    key_bytes: Vec<Vec<u8>>,
    seed: u64,
    seeds: u32,
    exact: Option<Arc<Vec<u64>>>,
    cache_events: bool,
    /// Inputs of the search runs `0..seeds`; hold-out runs are built on demand.
    data: Vec<SeedData>,
}

/// Cache event streams for conservative update up to this many bytes in all.
const EVENT_CACHE_BYTES: u64 = 512 << 20;

/// Hold-out: this many groups of `seeds` fresh seeds; the mean of every group
/// must meet the targets (each group is a rerun of the search's rule with
/// other seeds).
pub const HOLDOUT_GROUPS: u32 = 20;

impl Evaluator {
    /// Prepares the search runs `0..seeds` of `workload` from the base `seed`.
    pub fn new(
        workload: Workload,
        variant: Variant,
        hasher: HasherKind,
        seed: u64,
        seeds: u32,
    ) -> Self {
        let key_bytes = (0..workload.key_space())
            .map(|k| workload.key_bytes(k).into_owned())
            .collect();
        let exact = workload.exact_counts().map(|c| Arc::new(c.to_vec()));
        let cache_events = variant == Variant::Conservative
            && workload
                .events()
                .saturating_mul(4)
                .saturating_mul(u64::from(seeds))
                <= EVENT_CACHE_BYTES;
        let mut ev = Self {
            workload,
            variant,
            hasher,
            key_bytes,
            seed,
            seeds,
            exact,
            cache_events,
            data: Vec::new(),
        };
        ev.data = (0..seeds as usize)
            .into_par_iter()
            .map(|r| ev.make_seed(r, ev.cache_events))
            .collect();
        ev
    }

    /// The inputs of run `r`: its seeds, true counts and (optionally) events.
    fn make_seed(&self, r: usize, cache_events: bool) -> SeedData {
        let run_seed = derive_seed(self.seed, &[r as u64]);
        let workload_seed = derive_seed(run_seed, &[stream::WORKLOAD]);
        let mut events = cache_events.then(Vec::new);
        let truth = match (&self.exact, &mut events) {
            (Some(t), None) => t.clone(),
            _ => {
                let mut t = vec![0u64; self.workload.key_space()];
                self.workload.for_each_event(workload_seed, |k| {
                    t[k as usize] += 1;
                    if let Some(ev) = events.as_mut() {
                        ev.push(k);
                    }
                });
                match &self.exact {
                    Some(e) => e.clone(),
                    None => Arc::new(t),
                }
            }
        };
        SeedData {
            hash_seed: derive_seed(run_seed, &[stream::HASH]),
            workload_seed,
            truth,
            events: events.map(Arc::new),
        }
    }

    /// The workload.
    pub fn workload(&self) -> &Workload {
        &self.workload
    }

    /// Search seeds per shape.
    pub fn seeds(&self) -> u32 {
        self.seeds
    }

    /// The base seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The update rule.
    pub fn variant(&self) -> Variant {
        self.variant
    }

    /// The hash family.
    pub fn hasher(&self) -> HasherKind {
        self.hasher
    }

    /// True counts of run 0.
    pub fn truth0(&self) -> &[u64] {
        self.data.first().map(|d| d.truth.as_slice()).unwrap_or(&[])
    }

    /// Error statistics of run `run` of `hashes × slots` (runs `0..seeds`
    /// are the search seeds; later ones are built on demand).
    pub fn run_stats(&self, hashes: usize, slots: u64, run: usize) -> ErrorStats {
        let built;
        let d = match self.data.get(run) {
            Some(d) => d,
            None => {
                built = self.make_seed(run, false);
                &built
            }
        };
        let errors = self.errors(hashes, slots, d, None);
        let events: u64 = d.truth.iter().sum();
        let bound = count_min_bound(events, slots as usize);
        let mut errors: Vec<i64> = errors.into_iter().map(|(_, e)| e).collect();
        error_stats(&mut errors, bound)
    }

    /// Per-key errors `(key id, estimate - truth)` of keys seen, in key order.
    /// `events_override` replays that stream instead of the run's own.
    fn errors(
        &self,
        hashes: usize,
        slots: u64,
        d: &SeedData,
        events_override: Option<&[u32]>,
    ) -> Vec<(u32, i64)> {
        let truth = &d.truth;
        let seen: Vec<u32> = (0..truth.len() as u32)
            .filter(|&k| truth[k as usize] > 0)
            .collect();
        if slots == 0 || hashes == 0 {
            return seen.iter().map(|&k| (k, i64::MAX)).collect();
        }
        // Cell ids per (seen key index, row): the flat index `row * slots + col`
        // when that table is small, else renumbered compactly (only cells some
        // key hashes to), so memory stays O(keys × hashes) whatever `slots`.
        let n = seen.len();
        let mut cell_of = vec![0u32; n * hashes];
        let table = (hashes as u64).saturating_mul(slots);
        let dense = table <= (4 * n as u64 * hashes as u64).max(1 << 16);
        let mut flat: Vec<(u64, u32)> = if dense {
            Vec::new()
        } else {
            Vec::with_capacity(n * hashes)
        };
        for row in 0..hashes {
            let h = RowHasher::new(self.hasher, derive_seed(d.hash_seed, &[row as u64]));
            for (i, &k) in seen.iter().enumerate() {
                let col = h.hash(&self.key_bytes[k as usize]) % slots;
                let f = row as u64 * slots + col;
                if dense {
                    cell_of[i * hashes + row] = f as u32;
                } else {
                    flat.push((f, (i * hashes + row) as u32));
                }
            }
        }
        let cell_count = if dense {
            table as usize
        } else {
            flat.sort_unstable();
            let mut next = 0u32;
            let mut prev = None;
            for &(f, slot) in &flat {
                if prev.is_some() && prev != Some(f) {
                    next += 1;
                }
                prev = Some(f);
                cell_of[slot as usize] = next;
            }
            next as usize + 1
        };
        let mut cells = vec![0i64; cell_count];
        match self.variant {
            Variant::CountMin => {
                for i in 0..n {
                    let c = truth[seen[i] as usize] as i64;
                    for &cell in &cell_of[i * hashes..(i + 1) * hashes] {
                        cells[cell as usize] = cells[cell as usize].wrapping_add(c);
                    }
                }
            }
            Variant::Conservative => {
                let mut index_of = vec![u32::MAX; truth.len()];
                for (i, &k) in seen.iter().enumerate() {
                    index_of[k as usize] = i as u32;
                }
                let mut step = |k: u32| {
                    let i = index_of[k as usize] as usize;
                    let cs = &cell_of[i * hashes..(i + 1) * hashes];
                    let cur = cs.iter().fold(i64::MAX, |m, &c| m.min(cells[c as usize]));
                    let target = cur.wrapping_add(1);
                    for &c in cs {
                        if cells[c as usize] < target {
                            cells[c as usize] = target;
                        }
                    }
                };
                match (events_override, &d.events) {
                    (Some(ev), _) => ev.iter().for_each(|&k| step(k)),
                    (None, Some(ev)) => ev.iter().for_each(|&k| step(k)),
                    (None, None) => self.workload.for_each_event(d.workload_seed, step),
                }
            }
        }
        seen.iter()
            .enumerate()
            .map(|(i, &k)| {
                let est = cell_of[i * hashes..(i + 1) * hashes]
                    .iter()
                    .fold(i64::MAX, |m, &c| m.min(cells[c as usize]));
                (k, est.wrapping_sub(truth[k as usize] as i64))
            })
            .collect()
    }

    /// Errors by key for a given hash seed and run `run`'s stream (used by the
    /// characterization: fixed stream, fresh hash seeds).
    pub fn errors_with_hash_seed(
        &self,
        hashes: usize,
        slots: u64,
        run: usize,
        hash_seed: u64,
    ) -> Vec<(u32, i64)> {
        let mut d = match self.data.get(run) {
            Some(d) => d.clone(),
            None => self.make_seed(run, false),
        };
        d.hash_seed = hash_seed;
        self.errors(hashes, slots, &d, None)
    }
}

/// One evaluated shape.
#[derive(Debug, Clone, Serialize)]
pub struct Candidate {
    /// Rows.
    pub hashes: usize,
    /// Counters per row.
    pub slots: u64,
    /// hashes × slots × 8 bytes.
    pub memory_bytes: u64,
    /// Per-seed statistics (search seeds).
    #[serde(skip)]
    pub per_seed: Vec<ErrorStats>,
    /// Mean and std over the search seeds.
    #[serde(skip)]
    pub summary: RunSummary,
    /// e·N/w.
    pub bound_enw: f64,
    /// Meets every target on the mean and on every search seed.
    pub meets: bool,
    /// Search phase: `pow2`, `refine`, `bound`.
    pub phase: &'static str,
}

impl Candidate {
    fn memory(hashes: usize, slots: u64) -> u64 {
        (hashes as u64).saturating_mul(slots).saturating_mul(8)
    }
}

/// Whether per-seed statistics meet every target (mean and every seed).
pub fn meets_all(targets: &[Target], per_seed: &[ErrorStats]) -> bool {
    let summary = summarize(per_seed);
    !per_seed.is_empty()
        && targets.iter().all(|t| {
            t.holds(t.metric.of_summary(&summary))
                && per_seed.iter().all(|s| t.holds(t.metric.of(s)))
        })
}

/// Standard errors of a `group`-seed mean by which the hold-out mean must
/// clear each threshold.
pub const HOLDOUT_MARGIN_SE: f64 = 3.0;

/// The hold-out rule: the mean of every group of `group` consecutive runs
/// meets every target, and the mean over all runs clears each threshold by
/// [`HOLDOUT_MARGIN_SE`] standard errors of a `group`-seed mean (so a rerun
/// with `group` other seeds fails with a probability of about 0.1% or less,
/// if the run-to-run spread is roughly normal).
pub fn holdout_meets(targets: &[Target], runs: &[ErrorStats], group: usize) -> bool {
    let group = group.max(1);
    if runs.is_empty() {
        return false;
    }
    let all = summarize(runs);
    let margin_ok = targets.iter().all(|t| {
        let m = match t.metric {
            Metric::ExactPct => all.exact_pct,
            Metric::Mean => all.mean,
            Metric::P99 => all.p99,
            Metric::Max => all.max,
            Metric::OverBoundPct => all.over_bound_pct,
        };
        let se = HOLDOUT_MARGIN_SE * m.std / (group as f64).sqrt();
        t.holds(if t.metric.higher_is_better() {
            m.mean - se
        } else {
            m.mean + se
        })
    });
    margin_ok
        && runs.chunks(group).all(|g| {
            let s = summarize(g);
            targets.iter().all(|t| t.holds(t.metric.of_summary(&s)))
        })
}

/// What the count-min bound recommends for the targets.
#[derive(Debug, Clone, Serialize)]
pub struct BoundPick {
    /// d = ceil(ln(1/δ)) (largest over targets).
    pub hashes: usize,
    /// Smallest w meeting every target's error level (None: unconstrained).
    pub slots: Option<u64>,
    /// d × w × 8 (None when w is unconstrained).
    pub memory_bytes: Option<u64>,
    /// Per target: δ, d, w and how they were derived.
    pub per_target: Vec<BoundTerm>,
}

/// The bound's reading of one target.
#[derive(Debug, Clone, Serialize)]
pub struct BoundTerm {
    /// The target.
    pub target: String,
    /// Failure probability per key allowed.
    pub delta: f64,
    /// Rows.
    pub hashes: usize,
    /// Slots (None: any).
    pub slots: Option<u64>,
    /// The derivation in words.
    pub rule: String,
}

/// The count-min bound's recommendation. N events, `keys` keys seen. With
/// probability 1-δ per key, error ≤ e·N/w when d = ceil(ln(1/δ)):
/// * `p99<=X`: δ = 0.01, w = ceil(e·N/X);
/// * `max<=X`: all keys at once, δ = 1/keys (union bound), w = ceil(e·N/X);
/// * `exact_pct>=P`: error < 1 needs w > e·N; δ = max(1-P/100, 1/keys);
/// * `mean<=X`: the expectation bound E[error] ≤ N/w (any d): d = 1, w = ceil(N/X);
/// * `over_bound_pct<=X`: δ = X/100; the bound does not constrain w.
///
/// Thresholds below 1 on integer errors mean "exact" (w > e·N).
pub fn bound_pick(targets: &[Target], events: u64, keys: u64) -> BoundPick {
    let n = events as f64;
    let e = std::f64::consts::E;
    let keys = keys.max(1) as f64;
    let d_of = |delta: f64| (libm::log(1.0 / delta).ceil().max(1.0)) as usize;
    let exact_w = (e * n).floor() as u64 + 1;
    let w_for = |x: f64| -> u64 {
        if x < 1.0 {
            exact_w
        } else {
            (e * n / x).ceil().max(1.0) as u64
        }
    };
    let per_target: Vec<BoundTerm> = targets
        .iter()
        .map(|t| {
            let x = t.threshold;
            let (delta, d, w, rule) = match t.metric {
                Metric::P99 => (
                    0.01,
                    d_of(0.01),
                    Some(w_for(x)),
                    "δ=0.01 (p99), w=ceil(e·N/X)".to_string(),
                ),
                Metric::Max => (
                    1.0 / keys,
                    d_of(1.0 / keys),
                    Some(w_for(x)),
                    "every key: δ=1/keys (union bound), w=ceil(e·N/X)".to_string(),
                ),
                Metric::ExactPct => {
                    let delta = (1.0 - x / 100.0).max(1.0 / keys);
                    (
                        delta,
                        d_of(delta),
                        Some(exact_w),
                        "error<1 needs w>e·N; δ=max(1-P/100, 1/keys)".to_string(),
                    )
                }
                Metric::Mean => {
                    if x < 1.0 / keys {
                        (
                            1.0 / keys,
                            d_of(1.0 / keys),
                            Some(exact_w),
                            "mean≈0 needs every key exact: w>e·N, δ=1/keys".to_string(),
                        )
                    } else {
                        (
                            1.0,
                            1,
                            Some((n / x).ceil().max(1.0) as u64),
                            "E[error]≤N/w: d=1, w=ceil(N/X)".to_string(),
                        )
                    }
                }
                Metric::OverBoundPct => {
                    let delta = (x / 100.0).max(f64::MIN_POSITIVE);
                    (
                        delta,
                        d_of(delta),
                        None,
                        "share over e·N/w ≤ e^-d: δ=X/100, w unconstrained".to_string(),
                    )
                }
            };
            BoundTerm {
                target: t.resolved(),
                delta,
                hashes: d,
                slots: w,
                rule,
            }
        })
        .collect();
    let hashes = per_target.iter().map(|t| t.hashes).max().unwrap_or(1);
    let slots = per_target.iter().filter_map(|t| t.slots).max();
    BoundPick {
        hashes,
        slots,
        memory_bytes: slots.map(|w| Candidate::memory(hashes, w)),
        per_target,
    }
}

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
}

fn evaluate_batch(
    ev: &Evaluator,
    targets: &[Target],
    shapes: &[(usize, u64)],
    phase: &'static str,
    on_eval: &(dyn Fn(u64) + Sync),
) -> Vec<Candidate> {
    let seeds = ev.seeds as usize;
    let stats: Vec<ErrorStats> = shapes
        .par_iter()
        .flat_map_iter(|&s| (0..seeds).map(move |r| (s, r)))
        .collect::<Vec<_>>()
        .par_iter()
        .map(|&((h, w), r)| {
            let s = ev.run_stats(h, w, r);
            on_eval(1);
            s
        })
        .collect();
    shapes
        .iter()
        .enumerate()
        .map(|(i, &(h, w))| {
            let per_seed = stats[i * seeds..(i + 1) * seeds].to_vec();
            let summary = summarize(&per_seed);
            let events: u64 = ev.truth0().iter().sum();
            Candidate {
                hashes: h,
                slots: w,
                memory_bytes: Candidate::memory(h, w),
                meets: meets_all(targets, &per_seed),
                per_seed,
                summary,
                bound_enw: count_min_bound(events, w as usize),
                phase,
            }
        })
        .collect()
}

fn better(targets: &[Target], a: &Candidate, b: &Candidate) -> bool {
    // Cheaper; then the first target's metric better; then fewer hashes.
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
pub fn search(
    ev: &Evaluator,
    targets: &[Target],
    opts: &SearchOptions,
    on_eval: &(dyn Fn(u64) + Sync),
    on_total: &(dyn Fn(i64) + Sync),
) -> SizeResult {
    let mut evaluated: Vec<Candidate> = Vec::new();
    let max_h = MAX_SEARCH_HASHES;
    // Phase 1: powers of two in memory batches.
    let mut pow2: Vec<(usize, u64)> = Vec::new();
    for h in 1..=max_h {
        for k in MIN_SLOTS_LOG2..=MAX_SLOTS_LOG2 {
            let w = 1u64 << k;
            if Candidate::memory(h, w) <= opts.max_memory {
                pow2.push((h, w));
            }
        }
    }
    pow2.sort_by_key(|&(h, w)| (Candidate::memory(h, w), h));
    on_total(pow2.len() as i64 * i64::from(ev.seeds));
    let mut passed_h = [false; MAX_SEARCH_HASHES + 1];
    let mut best_mem = u64::MAX;
    let mut i = 0;
    while i < pow2.len() {
        let lo = Candidate::memory(pow2[i].0, pow2[i].1);
        let band = 1u64 << (63 - lo.leading_zeros());
        if band > best_mem {
            break;
        }
        let mut batch = Vec::new();
        while i < pow2.len() && Candidate::memory(pow2[i].0, pow2[i].1) < band.saturating_mul(2) {
            let (h, w) = pow2[i];
            if !passed_h[h] && Candidate::memory(h, w) <= best_mem {
                batch.push((h, w));
            } else {
                on_total(-(i64::from(ev.seeds)));
            }
            i += 1;
        }
        for c in evaluate_batch(ev, targets, &batch, "pow2", on_eval) {
            if c.meets {
                passed_h[c.hashes] = true;
                best_mem = best_mem.min(c.memory_bytes);
            }
            evaluated.push(c);
        }
    }
    // Shapes never reached (above the cheapest passing one) leave the total.
    on_total(-((pow2.len() - i) as i64 * i64::from(ev.seeds)));
    let best_pow2 = pick_best(targets, &evaluated, &[]);
    // Phase 2: refine per hashes, in parallel across hashes.
    if best_pow2.is_some() {
        let plans: Vec<(usize, u64, Option<u64>)> = (1..=max_h)
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
            .map(|&(h, lo, hi_pass)| {
                refine(ev, targets, h, lo, hi_pass, best_mem, on_eval, on_total)
            })
            .collect();
        evaluated.extend(refined.into_iter().flatten());
    }
    // The pick, checked on hold-out seeds; if every passing shape fails the
    // hold-out, the powers of two skipped by the pruning are tried next, in
    // order of memory, until one passes both or the cap is reached.
    let mut rejected = Vec::new();
    let mut recommended = None;
    let mut holdout = None;
    let mut rest: Vec<(usize, u64)> = pow2
        .iter()
        .copied()
        .filter(|&(h, w)| !evaluated.iter().any(|c| c.hashes == h && c.slots == w))
        .collect();
    loop {
        while let Some(idx) = pick_best(targets, &evaluated, &rejected) {
            let c = &evaluated[idx];
            let hold = holdout_runs(ev, c.hashes, c.slots, on_eval, on_total);
            if holdout_meets(targets, &hold, ev.seeds as usize) {
                recommended = Some(idx);
                holdout = Some(hold);
                break;
            }
            rejected.push(idx);
        }
        if recommended.is_some() || rest.is_empty() {
            break;
        }
        // The next memory band of skipped powers of two.
        let band = 1u64 << (63 - Candidate::memory(rest[0].0, rest[0].1).leading_zeros());
        let split = rest
            .iter()
            .position(|&(h, w)| Candidate::memory(h, w) >= band.saturating_mul(2))
            .unwrap_or(rest.len());
        let batch: Vec<(usize, u64)> = rest.drain(..split).collect();
        on_total(batch.len() as i64 * i64::from(ev.seeds));
        evaluated.extend(evaluate_batch(ev, targets, &batch, "pow2", on_eval));
    }
    let recommended_pow2 = best_pow2;
    let frontier = pareto(targets, &evaluated);
    let events: u64 = ev.truth0().iter().sum();
    let keys = ev.truth0().iter().filter(|&&c| c > 0).count() as u64;
    let bound = bound_pick(targets, events, keys);
    let bound_eval = bound.slots.map(|w| {
        on_total(i64::from(ev.seeds));
        let mut c = evaluate_batch(ev, targets, &[(bound.hashes, w)], "bound", on_eval);
        c.remove(0)
    });
    SizeResult {
        targets: targets.to_vec(),
        evaluated,
        recommended,
        recommended_pow2,
        holdout,
        holdout_rejected: rejected,
        frontier,
        bound,
        bound_eval,
        max_memory: opts.max_memory,
    }
}

/// The hold-out runs of a shape: [`HOLDOUT_GROUPS`] × seeds fresh runs.
fn holdout_runs(
    ev: &Evaluator,
    hashes: usize,
    slots: u64,
    on_eval: &(dyn Fn(u64) + Sync),
    on_total: &(dyn Fn(i64) + Sync),
) -> Vec<ErrorStats> {
    let seeds = ev.seeds as usize;
    on_total(i64::from(ev.seeds * HOLDOUT_GROUPS));
    (seeds..seeds * (1 + HOLDOUT_GROUPS as usize))
        .into_par_iter()
        .map(|r| {
            let s = ev.run_stats(hashes, slots, r);
            on_eval(1);
            s
        })
        .collect()
}

#[allow(clippy::too_many_arguments)]
fn refine(
    ev: &Evaluator,
    targets: &[Target],
    h: usize,
    mut lo: u64,
    hi_pass: Option<u64>,
    best_mem: u64,
    on_eval: &(dyn Fn(u64) + Sync),
    on_total: &(dyn Fn(i64) + Sync),
) -> Vec<Candidate> {
    let mut out = Vec::new();
    let seeds = i64::from(ev.seeds);
    // The most slots that cost less than the best passing shape.
    let cap = (best_mem.saturating_sub(1)) / (8 * h as u64);
    let mut hi = match hi_pass {
        Some(p) if p <= cap => p,
        _ => {
            if cap <= lo {
                return out;
            }
            on_total(seeds);
            let c = evaluate_batch(ev, targets, &[(h, cap)], "refine", on_eval).remove(0);
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
        on_total(seeds);
        let c = evaluate_batch(ev, targets, &[(h, mid)], "refine", on_eval).remove(0);
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
        if best.map_or(true, |b| better(targets, c, &evaluated[b])) {
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

/// Memory as the document prints it ("256KiB"), with one decimal when it is
/// not a whole number of KiB.
pub fn mem_label(bytes: u64) -> String {
    if bytes % 1024 == 0 {
        kib(bytes)
    } else if bytes < 1024 {
        format!("{bytes}B")
    } else {
        format!("{:.1}KiB", bytes as f64 / 1024.0)
    }
}

/// The A1 table columns for a candidate.
pub fn a1_cells(c: &Candidate) -> Vec<String> {
    let s = &c.summary;
    vec![
        c.hashes.to_string(),
        c.slots.to_string(),
        mem_label(c.memory_bytes),
        format!("{:.1}%", s.exact_pct.mean),
        format!("{:.1}", s.mean.mean),
        format!("{:.0}", s.p99.mean),
        format!("{:.0}", s.max.mean),
        format!("{:.0}", c.bound_enw),
    ]
}

/// The A1 table header.
pub const A1_HEAD: [&str; 8] = [
    "hashes", "slots", "memory", "exact%", "mean", "p99", "max", "e*N/w",
];

/// A human line for memory sizes in messages.
pub fn human_bytes(b: u64) -> String {
    bytes_human(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::estimator_accuracy::replay_cell;
    use crate::model::estimator::EstimatorConfig;
    use crate::workload::CountWorkload;
    use std::path::Path;

    #[test]
    fn targets_parse_and_reject() {
        let t = Target::parse("exact_pct>=99", 97.0).unwrap();
        assert_eq!(
            (t.metric, t.cmp, t.threshold),
            (Metric::ExactPct, Cmp::Ge, 99.0)
        );
        let t = Target::parse(" mean <= 0.01*avg ", 200.0).unwrap();
        assert_eq!((t.metric, t.threshold), (Metric::Mean, 2.0));
        assert_eq!(Target::parse("p99<avg", 5.0).unwrap().threshold, 5.0);
        for (bad, what) in [
            ("p99<=x", "\"x\""),
            ("p98<=5", "\"p98\""),
            ("p99>=5", "\">=\""),
            ("exact_pct<=5", "\"<=\""),
            ("exact_pct>=101", "percentage"),
            ("p99", "METRIC OP VALUE"),
            ("p99=5", "operator"),
            ("max<=-1", ">= 0"),
        ] {
            let e = Target::parse(bad, 1.0).unwrap_err().to_string();
            assert!(e.contains(what), "{bad}: {e}");
            assert!(e.contains(bad.trim()), "{bad}: {e}");
        }
    }

    fn small(counts_top: u64, keys: u64) -> Workload {
        CountWorkload::Harmonic {
            keys,
            top: counts_top,
            min: 2,
        }
        .build(Path::new("t"), "workload")
        .unwrap()
    }

    #[test]
    fn fast_evaluation_equals_replay() {
        let zipf = CountWorkload::Zipf {
            keys: 3000,
            events: 40_000,
            s: 1.1,
        }
        .build(Path::new("t"), "w")
        .unwrap();
        for w in [small(5000, 2000), zipf] {
            for variant in [Variant::CountMin, Variant::Conservative] {
                let ev = Evaluator::new(w.clone(), variant, HasherKind::Xxh3, 3, 2);
                for (h, slots) in [(1, 64u64), (3, 1000), (4, 4096), (2, 1 << 20)] {
                    for run in 0..2u64 {
                        let run_seed = derive_seed(3, &[run]);
                        let mut cfg = EstimatorConfig::new(h, slots as usize);
                        cfg.variant = variant;
                        let want = replay_cell(
                            &w,
                            cfg,
                            derive_seed(run_seed, &[stream::WORKLOAD]),
                            derive_seed(run_seed, &[stream::HASH]),
                        );
                        let got = ev.run_stats(h, slots, run as usize);
                        assert_eq!(got, want.stats, "{variant:?} {h}x{slots} run {run}");
                    }
                }
            }
        }
    }

    #[test]
    fn powers_of_two_are_monotone_for_count_min() {
        let ev = Evaluator::new(
            small(20_000, 3000),
            Variant::CountMin,
            HasherKind::Xxh3,
            1,
            1,
        );
        for h in [1, 3] {
            let mut prev = f64::INFINITY;
            for k in 4..14 {
                let s = ev.run_stats(h, 1 << k, 0);
                assert!(s.mean <= prev && s.max.is_finite());
                prev = s.mean;
            }
        }
    }

    #[test]
    fn bound_pick_for_the_document() {
        let t = [Target::parse("p99<=5", 97.0).unwrap()];
        let b = bound_pick(&t, 973_855, 10_000);
        assert_eq!(b.hashes, 5);
        assert_eq!(
            b.slots,
            Some((std::f64::consts::E * 973_855.0 / 5.0).ceil() as u64)
        );
        let t = [Target::parse("exact_pct>=70", 97.0).unwrap()];
        let b = bound_pick(&t, 973_855, 10_000);
        assert_eq!(b.hashes, 2);
        assert!(b.slots.unwrap() as f64 > std::f64::consts::E * 973_855.0);
    }

    #[test]
    fn pareto_keeps_only_improvements() {
        let ev = Evaluator::new(small(5000, 1000), Variant::CountMin, HasherKind::Xxh3, 1, 2);
        let t = vec![Target::parse("exact_pct>=90", 1.0).unwrap()];
        let r = search(
            &ev,
            &t,
            &SearchOptions {
                max_memory: 1 << 30,
            },
            &|_| {},
            &|_| {},
        );
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
