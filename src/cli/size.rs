//! `ratelab size`: the cheapest count-min shape for a workload and targets
//! (the search is in [`crate::sizing`]).
//!
//! Exit codes: 0 a shape meets every target; 1 none does within the memory
//! cap (the best shape found is printed and `size.json` is still written,
//! with `"recommendation": null`); 2 bad input (unparsable target, empty
//! trace, zero keys, ...).

use super::{init_threads, parse_size};
use crate::error::{Error, Result};
use crate::hash::HasherKind;
use crate::model::estimator::Variant;
use crate::progress::Progress;
use crate::report::chart::{render, ChartSpec, Legend, Series, SeriesStyle};
use crate::report::{json_bytes, Table};
use crate::sizing::{
    a1_cells, human_bytes, mem_label, search, Candidate, Evaluator, SearchOptions, SizeResult,
    Target, A1_HEAD, HOLDOUT_GROUPS,
};
use crate::workload::counts::{read_counts_csv, CountWorkload, WorkloadSummary, MAX_KEYS};
use crate::workload::Workload;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, Ordering};

/// The schema of `size.json`.
pub const SIZE_SCHEMA: &str = "ratelab.size.v1";

/// Arguments of `ratelab size`.
#[derive(Debug, clap::Args)]
pub struct SizeArgs {
    /// Distinct keys per window (with --dist).
    #[arg(long)]
    pub keys: Option<u64>,
    /// Events per window (zipf, uniform; for harmonic it picks the smallest --top reaching it).
    #[arg(long)]
    pub events: Option<u64>,
    /// Distribution of events over keys: harmonic | zipf:S | uniform.
    #[arg(long, default_value = "harmonic")]
    pub dist: String,
    /// Harmonic: events of the top key (key i gets max(floor(top/(i+1)), min)).
    #[arg(long)]
    pub top: Option<u64>,
    /// Harmonic: no key gets fewer events than this.
    #[arg(long)]
    pub min: Option<u64>,
    /// A JSON file: a workload object ({"type": "harmonic", ...}) or a scenario with a `workload` field.
    #[arg(long, conflicts_with_all = ["keys", "trace"])]
    pub workload: Option<PathBuf>,
    /// A `key,count` CSV file (header required).
    #[arg(long, conflicts_with_all = ["keys", "workload"])]
    pub trace: Option<PathBuf>,
    /// Accuracy target, repeatable (all must hold): exact_pct>=99, p99<=5, max<=100, mean<=0.01*avg, over_bound_pct<=1.
    #[arg(long = "target", required = true)]
    pub targets: Vec<String>,
    /// Largest sketch memory considered, e.g. 1GiB, 512MiB.
    #[arg(long, default_value = "1GiB", value_parser = parse_size)]
    pub max_memory: u64,
    /// Update rule: count_min (pingora) or conservative.
    #[arg(long, default_value = "count_min")]
    pub variant: String,
    /// Seeds per shape (fresh hash seeds and event order each); the pick is re-checked on 20 reruns of as many fresh ones.
    #[arg(long, default_value_t = 5)]
    pub seeds: u32,
    /// Base seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Hash family: xxh3 (portable) or ahash.
    #[arg(long, default_value = "xxh3")]
    pub hasher: String,
    /// Folder for size.json, size.md and the frontier chart.
    #[arg(long, default_value = "reports/size", value_parser = crate::report::atomic::parse_out_path)]
    pub out: PathBuf,
    /// Worker threads (results do not depend on it).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Largest work the search may take, in units of about 10 ns of CPU (3e10 is about
    /// five CPU-minutes); checked before the search starts.
    #[arg(long, default_value = "3e10", value_parser = super::parse_work)]
    pub max_work: f64,
    /// Never draw the progress bar.
    #[arg(long)]
    pub no_progress: bool,
}

fn cli_path() -> &'static Path {
    Path::new("command line")
}

/// Builds the workload from the arguments; also returns a short description.
pub fn build_workload(a: &SizeArgs) -> Result<(Workload, serde_json::Value)> {
    if let Some(trace) = &a.trace {
        let w = read_counts_csv(trace)?;
        return Ok((
            w,
            json!({"type": "csv", "path": trace.display().to_string()}),
        ));
    }
    if let Some(file) = &a.workload {
        let text = std::fs::read_to_string(file).map_err(|e| Error::io(file, e))?;
        let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
            Error::input_at(
                file,
                format!("line {} column {}", e.line(), e.column()),
                format!("malformed JSON: {e}"),
            )
        })?;
        let (field, v) = match v.get("workload") {
            Some(w) => ("workload", w.clone()),
            None => ("top level", v),
        };
        let cw: CountWorkload = serde_json::from_value(v).map_err(|e| {
            Error::input_at(file, format!("field {field}"), format!("{e}: expected a workload such as {{\"type\": \"harmonic\", \"keys\": 10000, \"top\": 100000, \"min\": 10}}"))
        })?;
        let w = cw.build(file, "workload")?;
        return Ok((w, serde_json::to_value(&cw).unwrap_or_default()));
    }
    let Some(keys) = a.keys else {
        return Err(Error::input(
            "no workload: give --keys N with --dist (and --events or --top), or --workload FILE, or --trace FILE",
        ));
    };
    if keys == 0 || keys > MAX_KEYS {
        return Err(Error::input(format!(
            "--keys {keys}: expected 1..={MAX_KEYS}"
        )));
    }
    if a.events == Some(0) {
        return Err(Error::input("--events 0: expected at least 1 event"));
    }
    let dist = a.dist.trim();
    let cw = if dist == "harmonic" {
        let min = a.min.unwrap_or(10);
        let top = match (a.top, a.events) {
            (Some(t), _) => t,
            (None, Some(events)) => harmonic_top(keys, min, events)?,
            (None, None) => {
                return Err(Error::input(
                    "--dist harmonic: give --top N (events of the busiest key) or --events N",
                ))
            }
        };
        CountWorkload::Harmonic { keys, top, min }
    } else {
        if a.top.is_some() || a.min.is_some() {
            return Err(Error::input(format!(
                "--dist {dist}: --top and --min apply to --dist harmonic only"
            )));
        }
        let Some(events) = a.events else {
            return Err(Error::input(format!(
                "--dist {dist}: --events N is required"
            )));
        };
        if dist == "uniform" {
            CountWorkload::Uniform { keys, events }
        } else if let Some(s) = dist.strip_prefix("zipf:") {
            let s: f64 = s
                .parse()
                .ok()
                .filter(|v: &f64| v.is_finite() && *v >= 0.0)
                .ok_or_else(|| {
                    Error::input(format!(
                        "--dist {dist}: at {s:?}: expected a finite exponent >= 0, e.g. zipf:1.1"
                    ))
                })?;
            CountWorkload::Zipf { keys, events, s }
        } else {
            return Err(Error::input(format!(
                "--dist {dist:?}: expected harmonic, zipf:S (e.g. zipf:1.1) or uniform"
            )));
        }
    };
    let w = cw.build(cli_path(), "workload")?;
    Ok((w, serde_json::to_value(&cw).unwrap_or_default()))
}

/// The smallest `top` whose harmonic workload has at least `events` events.
fn harmonic_top(keys: u64, min: u64, events: u64) -> Result<u64> {
    let total = |top: u64| -> u64 {
        let mut t = 0u64;
        for i in 0..keys {
            t = t.saturating_add((top / (i + 1)).max(min));
            if t > events {
                break;
            }
        }
        t
    };
    if total(1) > events {
        return Err(Error::input(format!(
            "--events {events}: {keys} keys with --min {min} already make {} events; lower --min or raise --events",
            total(1)
        )));
    }
    let (mut lo, mut hi) = (1u64, events.max(1));
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if total(mid) >= events {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    Ok(lo)
}

fn parse_variant(s: &str) -> Result<Variant> {
    match s {
        "count_min" | "count-min" => Ok(Variant::CountMin),
        "conservative" => Ok(Variant::Conservative),
        _ => Err(Error::input(format!(
            "--variant {s:?}: expected count_min or conservative"
        ))),
    }
}

fn parse_hasher(s: &str) -> Result<HasherKind> {
    match s {
        "xxh3" => Ok(HasherKind::Xxh3),
        "ahash" => Ok(HasherKind::AHash),
        _ => Err(Error::input(format!(
            "--hasher {s:?}: expected xxh3 or ahash"
        ))),
    }
}

/// Everything `ratelab size` prints and writes.
pub struct SizeReport {
    /// Console text.
    pub console: String,
    /// size.json.
    pub json: serde_json::Value,
    /// size.md.
    pub md: String,
    /// The frontier chart.
    pub chart: Option<crate::report::Chart>,
    /// Whether a shape met every target.
    pub met: bool,
    /// The one-line failure message when none did.
    pub failure: Option<String>,
}

/// Shapes one search evaluates at most, per seed: the power-of-two grid,
/// the refinement around the pick and the hold-out reruns.
const EVALS_PER_SEED: f64 = 220.0;

/// Refuses a search whose work is over `--max-work` before any seed is
/// prepared. Each seed replays the stream once (unless the counts are fixed);
/// each evaluation hashes every key into every row (count-min) or replays
/// every event (conservative).
fn check_search_work(a: &SizeArgs, workload: &Workload, variant: Variant) -> Result<()> {
    let seeds = f64::from(a.seeds);
    let keys = workload.key_space() as f64;
    let events = workload.events() as f64;
    let setup = if workload.exact_counts().is_some() {
        0.0
    } else {
        seeds * events
    };
    let per_eval = match variant {
        Variant::CountMin => keys * 4.0,
        Variant::Conservative => events * 4.0,
    };
    let work = setup + seeds * EVALS_PER_SEED * per_eval;
    if work.is_finite() && work <= a.max_work {
        return Ok(());
    }
    Err(Error::input(format!(
        "--seeds {} on {keys} keys and {events} events: the search needs about {work:.2e} work units (~10 ns of CPU each), over --max-work {:.0e} (fewer seeds or events, or raise --max-work)",
        a.seeds, a.max_work
    )))
}

/// Runs the search for parsed arguments (without writing anything).
pub fn compute(a: &SizeArgs) -> Result<SizeReport> {
    if a.seeds == 0 {
        return Err(Error::input("--seeds 0: expected at least 1 seed"));
    }
    let variant = parse_variant(&a.variant)?;
    let hasher = parse_hasher(&a.hasher)?;
    let (workload, shape) = build_workload(a)?;
    check_search_work(a, &workload, variant)?;
    let summary = match workload.exact_counts() {
        Some(c) => WorkloadSummary::of_counts(c),
        None => WorkloadSummary {
            keys: workload.key_space() as u64,
            events: workload.events(),
            top_key_events: 0,
            keys_seen_once: 0,
        },
    };
    if summary.events == 0 {
        return Err(Error::input("the workload has no events"));
    }
    let avg = summary.events as f64 / summary.keys.max(1) as f64;
    let targets = a
        .targets
        .iter()
        .map(|t| Target::parse(t, avg))
        .collect::<Result<Vec<_>>>()?;
    let progress = if a.no_progress {
        Progress::hidden()
    } else {
        Progress::new(0, "size")
    };
    progress.set_message("preparing seeds");
    let ev = Evaluator::new(workload, variant, hasher, a.seed, a.seeds);
    let total = AtomicI64::new(0);
    progress.set_message("searching");
    let result = search(
        &ev,
        &targets,
        &SearchOptions {
            max_memory: a.max_memory,
        },
        &|n| progress.inc(n),
        &|d| {
            let t = total.fetch_add(d, Ordering::Relaxed) + d;
            progress.set_length(t.max(0) as u64);
        },
    );
    progress.finish();
    let seen = WorkloadSummary::of_counts(ev.truth0());
    Ok(render_report(a, &ev, &seen, shape, &result))
}

fn candidate_json(c: &Candidate) -> serde_json::Value {
    let s = &c.summary;
    json!({
        "hashes": c.hashes,
        "slots": c.slots,
        "memory_bytes": c.memory_bytes,
        "exact_pct": s.exact_pct.mean,
        "mean": s.mean.mean,
        "p99": s.p99.mean,
        "max": s.max.mean,
        "bound_enw": c.bound_enw,
        "over_bound_pct": s.over_bound_pct.mean,
        "meets": c.meets,
        "phase": c.phase,
        "std": {
            "exact_pct": s.exact_pct.std,
            "mean": s.mean.std,
            "p99": s.p99.std,
            "max": s.max.std,
        },
    })
}

fn shape(c: &Candidate) -> String {
    format!("{}x{}", c.hashes, c.slots)
}

fn render_report(
    a: &SizeArgs,
    ev: &Evaluator,
    seen: &WorkloadSummary,
    workload_shape: serde_json::Value,
    r: &SizeResult,
) -> SizeReport {
    let targets_text: Vec<String> = r.targets.iter().map(|t| t.resolved()).collect();
    let primary = r.targets.first().map(|t| t.metric);
    let rec = r.recommended.map(|i| &r.evaluated[i]);
    let rec_pow2 = r.recommended_pow2.map(|i| &r.evaluated[i]);
    let mut console = format!(
        "{}\ntargets: {} (each on the mean and on every one of {} seeds; the pick re-checked on {} reruns of {} fresh seeds); {} update, {} hasher, memory cap {}\n",
        seen.headline(),
        targets_text.join(", "),
        ev.seeds(),
        HOLDOUT_GROUPS,
        ev.seeds(),
        ev.variant().name(),
        ev.hasher().name(),
        human_bytes(r.max_memory)
    );
    let mut md = format!(
        "# ratelab size\n\n{}. Targets: `{}`, each required on the mean over {} seeds and on every seed; the pick must also meet them on the mean of each of {} reruns with {} fresh seeds. {} update, {} hasher, seed {}, memory cap {}.\n\n",
        seen.headline(),
        targets_text.join("`, `"),
        ev.seeds(),
        HOLDOUT_GROUPS,
        ev.seeds(),
        ev.variant().name(),
        ev.hasher().name(),
        ev.seed(),
        human_bytes(r.max_memory)
    );
    let mut failure = None;
    match rec {
        Some(c) => {
            let mut t = Table::new(A1_HEAD);
            t.push(a1_cells(c));
            console.push_str(&format!(
                "\nrecommended: {} ({})\n{}",
                shape(c),
                mem_label(c.memory_bytes),
                t.text()
            ));
            md.push_str(&format!(
                "## Recommendation: {} ({})\n\n",
                shape(c),
                mem_label(c.memory_bytes)
            ));
            md.push_str(&t.markdown());
            if let Some(h) = &r.holdout {
                let s = crate::metrics::summarize(h);
                let line = format!(
                    "hold-out ({} reruns x {} fresh seeds, each meets the targets; mean clears them by 3 standard errors): exact {:.1}%, mean {:.1}, p99 {:.1}, max {:.0}\n",
                    HOLDOUT_GROUPS,
                    ev.seeds(),
                    s.exact_pct.mean,
                    s.mean.mean,
                    s.p99.mean,
                    s.max.mean
                );
                console.push_str(&line);
                md.push_str(&format!("\n{line}"));
            }
            if let Some(p) = rec_pow2 {
                if p.memory_bytes != c.memory_bytes || p.hashes != c.hashes {
                    let line = format!(
                        "cheapest power-of-two shape meeting the targets on the search seeds: {} ({}), exact {:.1}%, mean {:.1}, p99 {:.0}\n",
                        shape(p),
                        mem_label(p.memory_bytes),
                        p.summary.exact_pct.mean,
                        p.summary.mean.mean,
                        p.summary.p99.mean
                    );
                    console.push_str(&line);
                    md.push_str(&format!("\n{line}"));
                }
            }
            if !r.holdout_rejected.is_empty() {
                let names: Vec<String> = r
                    .holdout_rejected
                    .iter()
                    .map(|&i| shape(&r.evaluated[i]))
                    .collect();
                let line = format!(
                    "passed on the search seeds but failed the hold-out: {}\n",
                    names.join(", ")
                );
                console.push_str(&line);
                md.push_str(&format!("\n{line}"));
            }
        }
        None => {
            let best = primary.and_then(|m| {
                r.evaluated.iter().max_by(|x, y| {
                    let (a, b) = (m.of_summary(&x.summary), m.of_summary(&y.summary));
                    let o = a.total_cmp(&b);
                    if m.higher_is_better() {
                        o
                    } else {
                        o.reverse()
                    }
                })
            });
            let best_text = best
                .map(|c| {
                    format!(
                        "best found: {} ({}): exact {:.1}%, mean {:.1}, p99 {:.0}, max {:.0}",
                        shape(c),
                        mem_label(c.memory_bytes),
                        c.summary.exact_pct.mean,
                        c.summary.mean.mean,
                        c.summary.p99.mean,
                        c.summary.max.mean
                    )
                })
                .unwrap_or_else(|| "no shape fits the cap".into());
            let msg = format!(
                "no shape within the memory cap of {} meets {} (on the mean and every seed, and on the hold-out reruns); {best_text}; raise --max-memory or relax the target",
                human_bytes(r.max_memory),
                targets_text.join(" and ")
            );
            console.push_str(&format!("\nNO SHAPE MEETS THE TARGETS. {msg}\n"));
            md.push_str(&format!("## No recommendation\n\n{msg}\n"));
            failure = Some(msg);
        }
    }
    // The bound.
    let b = &r.bound;
    let bound_line = match (b.slots, b.memory_bytes) {
        (Some(w), Some(m)) => {
            let ratio = rec.map(|c| m as f64 / c.memory_bytes.max(1) as f64);
            let eval = r
                .bound_eval
                .as_ref()
                .map(|c| {
                    format!(
                        "; measured: exact {:.1}%, mean {:.2}, p99 {:.0}, max {:.0}",
                        c.summary.exact_pct.mean, c.summary.mean.mean, c.summary.p99.mean, c.summary.max.mean
                    )
                })
                .unwrap_or_default();
            format!(
                "count-min bound would recommend: {}x{} ({}){}{}\n",
                b.hashes,
                w,
                human_bytes(m),
                ratio
                    .map(|x| format!(", {x:.1}x the memory of the recommendation"))
                    .unwrap_or_default(),
                eval
            )
        }
        _ => format!(
            "count-min bound would recommend: {} rows, any number of slots (over_bound_pct does not constrain w)\n",
            b.hashes
        ),
    };
    console.push_str(&bound_line);
    md.push_str(&format!(
        "\n## What the count-min bound recommends\n\n{bound_line}\n"
    ));
    let mut bt = Table::new(["target", "δ", "d = ceil(ln 1/δ)", "w", "rule"]);
    for t in &b.per_target {
        bt.push([
            t.target.clone(),
            format!("{:.4}", t.delta),
            t.hashes.to_string(),
            t.slots
                .map(|w| w.to_string())
                .unwrap_or_else(|| "any".into()),
            t.rule.clone(),
        ]);
    }
    md.push_str(&bt.markdown());
    // Frontier.
    let mut ft = Table::new(
        A1_HEAD
            .iter()
            .map(|s| s.to_string())
            .chain(["meets".to_string()]),
    );
    for &i in &r.frontier {
        let c = &r.evaluated[i];
        let mut cells = a1_cells(c);
        cells.push(if c.meets { "yes" } else { "no" }.to_string());
        ft.push(cells);
    }
    console.push_str(&format!(
        "\nmemory-vs-{} Pareto frontier of the {} shapes tried:\n{}",
        primary.map(|m| m.name()).unwrap_or(""),
        r.evaluated.len(),
        ft.text()
    ));
    md.push_str(&format!(
        "\n## Pareto frontier (memory vs {}) of the {} shapes tried\n\n",
        primary.map(|m| m.name()).unwrap_or(""),
        r.evaluated.len()
    ));
    md.push_str(&ft.markdown());
    md.push_str("\n## Search\n\nPowers of two (hashes 1..=8 × slots 2^4..2^24 within the cap) in batches of increasing memory, skipping, per hashes, slots above the first passing value and any shape costing more than the cheapest passing one; then slots bisected (to 1/32) between each hashes' largest failing power of two and the cheapest passing cost. Monotone in slots for count-min on powers of two (exact); between them and for conservative update, statistically. See `src/sizing.rs`.\n");
    let json = json!({
        "schema": SIZE_SCHEMA,
        "ratelab_version": env!("CARGO_PKG_VERSION"),
        "seed": ev.seed(),
        "seeds": ev.seeds(),
        "variant": ev.variant().name(),
        "hasher": ev.hasher().name(),
        "max_memory_bytes": r.max_memory,
        "workload": {
            "keys": seen.keys,
            "events": seen.events,
            "top_key_events": seen.top_key_events,
            "keys_seen_once": seen.keys_seen_once,
            "avg_count": seen.events as f64 / seen.keys.max(1) as f64,
            "shape": workload_shape,
        },
        "targets": r.targets,
        "rule": "a shape meets a target when it holds for the mean over seeds and for every seed; the recommendation also meets it on the mean of each of 20 reruns with as many fresh seeds, and the hold-out mean clears each threshold by 3 standard errors of a rerun's mean",
        "recommendation": rec.map(|c| {
            let mut j = candidate_json(c);
            if let Some(h) = &r.holdout {
                let s = crate::metrics::summarize(h);
                j["holdout"] = json!({"reruns": HOLDOUT_GROUPS, "seeds": h.len(), "exact_pct": s.exact_pct.mean, "mean": s.mean.mean, "p99": s.p99.mean, "max": s.max.mean, "over_bound_pct": s.over_bound_pct.mean});
            }
            j
        }),
        "recommendation_pow2": rec_pow2.map(candidate_json),
        "holdout_rejected": r.holdout_rejected.iter().map(|&i| candidate_json(&r.evaluated[i])).collect::<Vec<_>>(),
        "bound": {
            "hashes": b.hashes,
            "slots": b.slots,
            "memory_bytes": b.memory_bytes,
            "per_target": b.per_target,
            "measured": r.bound_eval.as_ref().map(candidate_json),
            "memory_ratio_to_recommendation": match (b.memory_bytes, rec) {
                (Some(m), Some(c)) => Some(m as f64 / c.memory_bytes.max(1) as f64),
                _ => None,
            },
        },
        "frontier": r.frontier.iter().map(|&i| candidate_json(&r.evaluated[i])).collect::<Vec<_>>(),
        "evaluated": r.evaluated.iter().map(candidate_json).collect::<Vec<_>>(),
    });
    let chart = frontier_chart(r, rec);
    let _ = a;
    SizeReport {
        console,
        json,
        md,
        chart,
        met: rec.is_some(),
        failure,
    }
}

fn frontier_chart(r: &SizeResult, rec: Option<&Candidate>) -> Option<crate::report::Chart> {
    let t = r.targets.first()?;
    let m = t.metric;
    let exact = m.higher_is_better();
    let kib = |c: &Candidate| c.memory_bytes as f64 / 1024.0;
    let mut spec = ChartSpec::new(
        "frontier",
        format!("Sketch memory vs {} (target {})", m.name(), t.resolved()),
        "memory (KiB, log scale)",
        if exact {
            "keys estimated exactly (%, mean over seeds)".to_string()
        } else {
            format!(
                "{} overcount (events, mean over seeds; log, 0 drawn at 0.01)",
                m.name()
            )
        },
    );
    spec.caption = format!(
        "Every shape the search evaluated: memory against {} (mean over seeds), those meeting every target in green, the others in sky blue, the Pareto frontier (no cheaper shape does better) as a line and the target dashed. The pick, the cheapest shape meeting every target and the hold-out reruns, is the vermillion point marked above the plot; the count-min bound's shape for the target is the other marked memory.",
        m.name()
    );
    spec.x_log = true;
    spec.y_log = !exact;
    spec.log_floor = 0.0;
    spec.legend = if exact {
        Legend::LowerRight
    } else {
        Legend::UpperRight
    };
    if exact {
        spec.y_range = Some((0.0, 100.0));
    }
    let pts = |pass: bool| -> Vec<(f64, f64)> {
        r.evaluated
            .iter()
            .filter(|c| c.meets == pass)
            .map(|c| (kib(c), m.of_summary(&c.summary)))
            .collect()
    };
    let mut fail = Series::new("shape tried: fails", pts(false), SeriesStyle::Points);
    fail.color = Some(5);
    let mut pass = Series::new(
        "shape tried: meets every target",
        pts(true),
        SeriesStyle::Points,
    );
    pass.color = Some(2);
    let mut frontier = Series::new(
        "Pareto frontier",
        r.frontier
            .iter()
            .map(|&i| (kib(&r.evaluated[i]), m.of_summary(&r.evaluated[i].summary)))
            .collect(),
        SeriesStyle::Line,
    );
    frontier.color = Some(0);
    let xs: Vec<f64> = r.evaluated.iter().map(kib).collect();
    let (mut xmin, mut xmax) = xs
        .iter()
        .fold((f64::INFINITY, 0.0f64), |(a, b), &x| (a.min(x), b.max(x)));
    if let Some(mb) = r.bound.memory_bytes {
        xmax = xmax.max(mb as f64 / 1024.0);
    }
    if !xmin.is_finite() {
        xmin = 1.0;
    }
    let mut target = Series::new(
        format!("target {}", t.resolved()),
        vec![(xmin, t.threshold), (xmax, t.threshold)],
        SeriesStyle::Dashed,
    );
    target.color = Some(6);
    spec.series = vec![frontier, fail, pass, target];
    if let Some(c) = rec {
        let mut s = Series::new(
            format!("recommended {}", shape(c)),
            vec![(kib(c), m.of_summary(&c.summary))],
            SeriesStyle::Points,
        );
        s.color = Some(3);
        spec.series.push(s);
        spec.vlines.push((
            kib(c),
            format!("pick: {} ({})", shape(c), mem_label(c.memory_bytes)),
        ));
    }
    if let (Some(w), Some(mb)) = (r.bound.slots, r.bound.memory_bytes) {
        spec.vlines.push((
            mb as f64 / 1024.0,
            format!("bound: {}x{}", r.bound.hashes, w),
        ));
    }
    render(&spec).ok()
}

/// `ratelab size`.
pub fn run(a: &SizeArgs) -> Result<i32> {
    init_threads(a.threads)?;
    let report = compute(a)?;
    let dir = &a.out;
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let mut files: Vec<(String, Vec<u8>)> = vec![
        ("size.json".into(), json_bytes(&report.json)),
        ("size.md".into(), report.md.clone().into_bytes()),
    ];
    if let Some(c) = &report.chart {
        files.push(("frontier.svg".into(), c.svg.clone().into_bytes()));
        files.push(("frontier.png".into(), c.png.clone()));
    }
    for (name, bytes) in &files {
        crate::report::atomic::write_file(&dir.join(name), bytes)?;
    }
    print!("{}", report.console);
    println!("-> {}", dir.display());
    match report.failure {
        Some(msg) if !report.met => Err(Error::check(msg)),
        _ => Ok(0),
    }
}
