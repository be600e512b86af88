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
//! ## "Meets" and the guarantee
//!
//! A shape meets a target on the search seeds when the target holds for
//! the **mean over seeds and for every single seed**. The recommendation's
//! promise is then checked on a **hold-out** of fresh seeds (run indices
//! from `seeds` on): it claims to meet every target on at least
//! `coverage` of seeds with `confidence` (default 99% at 95%), so it must
//! meet them on each of the [`guarantee::Plan`]'s seeds (299 by default),
//! but for the few failures the plan allows; the hold-out stops at the
//! first failure beyond them, the shape is dropped and the next cheapest
//! passing shape is tried. The measured exceedance (failures / seeds) is
//! printed beside the pick.
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
//!
//! ## Modules
//!
//! * `targets`: the targets and the meet and hold-out rules;
//! * [`guarantee`]: the claim (a share of seeds, with a confidence) and
//!   how many fresh seeds back it;
//! * `evaluation`: one shape on the seeds ([`Evaluator`], [`Candidate`]);
//! * [`search`](mod@search): the powers of two, the refinement and the pick;
//! * `bound`: what the count-min bound would recommend;
//! * `workload`: the workload from a `key,count` file, a JSON file or a distribution;
//! * [`input`]: what `--trace` reads (a time-stamped log or a `key,count`
//!   table with any columns);
//! * [`limit`]: sizing pingora `Rate` for a rate limit on a time-stamped
//!   log (`--limit`), judged by the decision lab's harm figures;
//! * `job`: one sizing from its inputs to its report;
//! * `report`: the console text, `size.md`, `size.json` and the chart.
//!
//! # Examples
//!
//! Evaluating one shape, 2 rows × 256 slots, on the first of two seeds of
//! a small workload:
//!
//! ```
//! use ratelab::hash::HasherKind;
//! use ratelab::model::estimator::Variant;
//! use ratelab::sizing::{meets_all, Evaluator, Target};
//! use ratelab::workload::CountWorkload;
//! use std::path::Path;
//!
//! let workload = CountWorkload::Harmonic { keys: 100, top: 1000, min: 2 }
//!     .build(Path::new("example"), "workload")
//!     .unwrap();
//! let ev = Evaluator::new(workload, Variant::CountMin, HasherKind::Xxh3, 1, 2);
//! let stats = ev.run_stats(2, 256, 0);
//! assert!(stats.exact_pct > 0.0 && stats.mean >= 0.0);
//! let target = Target::parse("p99<=1000", 10.0).unwrap();
//! assert!(meets_all(&[target], &[stats]));
//! ```

pub(crate) mod bound;
pub(crate) mod command;
mod error;
pub(crate) mod evaluation;
pub mod guarantee;
pub mod input;
pub(crate) mod job;
pub mod limit;
pub(crate) mod report;
pub(crate) mod scenario;
pub mod search;
pub(crate) mod targets;
pub(crate) mod workload;

pub use bound::{bound_pick, BoundPick, BoundTerm};
pub use error::SizingError;
pub use evaluation::{Candidate, Evaluator};
pub use job::{run_job, SizeJob};
pub use report::{
    human_bytes, mem_label, render_report, shape_cells, SizeReport, SHAPE_TABLE_HEAD, SIZE_SCHEMA,
};
pub use search::{pareto, search, search_silent, SearchOptions, SizeResult};
pub use targets::{
    meets_all, refuse_repeated_targets, seed_meets, Cmp, Metric, Scale, Target, TargetMetric,
};
pub use workload::{Generated, WorkloadSource};

/// Smallest and largest power-of-two exponent of slots tried.
pub const MIN_SLOTS_LOG2: u32 = 4;
/// See [`MIN_SLOTS_LOG2`].
pub const MAX_SLOTS_LOG2: u32 = 24;
/// Rows tried.
pub const MAX_SEARCH_HASHES: usize = 8;
/// Bisection stops when the slot interval is at most `lo / REFINE_RESOLUTION`.
pub const REFINE_RESOLUTION: u64 = 32;
