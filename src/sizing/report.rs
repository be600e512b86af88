//! The sizing report: the console text, `size.md`, `size.json` and the
//! memory-vs-error frontier chart of a [`SizeResult`].

use super::evaluation::{Candidate, Evaluator};
use super::search::SizeResult;
use super::targets::Metric;
use crate::error::Result;
use crate::metrics::summarize;
use crate::report::chart::{render, ChartSpec, Legend, Series, SeriesStyle};
use crate::report::fmt::{bytes_human, kib};
use crate::report::{json_bytes, Chart, Table};
use crate::workload::counts::WorkloadSummary;
use serde_json::json;
use std::path::Path;

/// The schema of `size.json`.
pub const SIZE_SCHEMA: &str = "ratelab.size.v1";

/// Everything `ratelab size` prints and writes.
pub struct SizeReport {
    /// Console text.
    pub console: String,
    /// size.json.
    pub json: serde_json::Value,
    /// size.md.
    pub md: String,
    /// The frontier chart.
    pub chart: Option<Chart>,
    /// Whether a shape met every target.
    pub met: bool,
    /// The one-line failure message when none did.
    pub failure: Option<String>,
}

impl SizeReport {
    /// The files of the output folder, by name: `size.json`, `size.md` and,
    /// with a chart, `frontier.svg` and `frontier.png`.
    pub fn files(&self) -> Vec<(String, Vec<u8>)> {
        let mut files: Vec<(String, Vec<u8>)> = vec![
            ("size.json".into(), json_bytes(&self.json)),
            ("size.md".into(), self.md.clone().into_bytes()),
        ];
        if let Some(c) = &self.chart {
            files.push(("frontier.svg".into(), c.svg.clone().into_bytes()));
            files.push(("frontier.png".into(), c.png.clone()));
        }
        files
    }

    /// Writes [`files`](Self::files) into the folder `dir`, created if needed.
    ///
    /// When `dir` is a plain folder with a report-folder name (see
    /// [`validate_name`](crate::scenario::validate_name)) holding nothing but
    /// files of this set, it is replaced whole through the crash-safe folder
    /// writer, so an interrupted run leaves the previous report or the new
    /// one, never a mix. Otherwise (any other file in it, another name, a
    /// link) each file is replaced atomically on its own and everything else
    /// in the folder is left as it is.
    pub fn write(&self, dir: &Path) -> Result<()> {
        // A folder that is not there yet is made by `write_files`, which
        // removes it again if a file fails: no empty folder is left.
        let files = self.files();
        if let Some((parent, name)) = whole_folder_target(dir, &files) {
            // A folder that cannot be swapped by rename (a mount point
            // answers EBUSY) falls back to file by file; a failed swap has
            // removed its staging folder and left the previous one whole.
            if crate::report::atomic::write_folder(parent, name, &files).is_ok() {
                return Ok(());
            }
        }
        // All or nothing: a failed write leaves every previous file.
        crate::report::atomic::write_files(dir, &files)
    }
}

/// The (parent, name) under which `dir` may be replaced whole by `files`:
/// a real folder (not a link) with a valid report name, holding only
/// regular files named in `files`.
fn whole_folder_target<'a>(
    dir: &'a Path,
    files: &[(String, Vec<u8>)],
) -> Option<(&'a Path, &'a str)> {
    let name = dir.file_name()?.to_str()?;
    crate::scenario::validate_name(name).ok()?;
    if !std::fs::symlink_metadata(dir).ok()?.is_dir() {
        return None;
    }
    for entry in std::fs::read_dir(dir).ok()? {
        let entry = entry.ok()?;
        let known = entry
            .file_name()
            .to_str()
            .is_some_and(|n| files.iter().any(|(f, _)| f == n));
        if !known || !entry.file_type().ok()?.is_file() {
            return None;
        }
    }
    Some((dir.parent().unwrap_or(Path::new("")), name))
}

/// Memory as the shape tables print it ("256KiB"), with one decimal when it
/// is not a whole number of KiB; from 10 MiB on in MiB with one decimal
/// ("40.4MiB", not "41362.7KiB": a reader compares magnitudes at a glance).
///
/// ```
/// use ratelab::sizing::mem_label;
/// assert_eq!(mem_label(512), "512B");
/// assert_eq!(mem_label(4000), "3.9KiB");
/// assert_eq!(mem_label(256 * 1024), "256KiB");
/// assert_eq!(mem_label(42_355_408), "40.4MiB");
/// ```
pub fn mem_label(bytes: u64) -> String {
    if bytes >= 10 << 20 {
        format!("{:.1}MiB", bytes as f64 / f64::from(1u32 << 20))
    } else if bytes.is_multiple_of(1024) {
        kib(bytes)
    } else if bytes < 1024 {
        format!("{bytes}B")
    } else {
        format!("{:.1}KiB", bytes as f64 / 1024.0)
    }
}

/// The cells of a shape's row in the shape tables (see [`SHAPE_TABLE_HEAD`]).
pub fn shape_cells(c: &Candidate) -> Vec<String> {
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

/// The header of the shape tables: shape, memory, mean errors over the
/// search seeds and the bound e·N/w.
pub const SHAPE_TABLE_HEAD: [&str; 8] = [
    "hashes", "slots", "memory", "exact%", "mean", "p99", "max", "e*N/w",
];

/// A human line for memory sizes in messages.
pub fn human_bytes(b: u64) -> String {
    bytes_human(b)
}

/// A shape in `size.json`.
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

/// `hashesxslots`.
fn shape(c: &Candidate) -> String {
    format!("{}x{}", c.hashes, c.slots)
}

/// The console text and `size.md` as they are built up.
struct Text {
    console: String,
    md: String,
}

impl Text {
    /// A line printed on the console and, as a paragraph of its own, in `size.md`.
    fn both(&mut self, line: &str) {
        self.console.push_str(line);
        self.md.push_str(&format!("\n{line}"));
    }
}

/// The closing section of `size.md`: how the search went.
const SEARCH_NOTE: &str = "\n## Search\n\nPowers of two (hashes 1..=8 × slots 2^4..2^24 within the cap) in batches of increasing memory, skipping, per hashes, slots above the first passing value and any shape costing more than the cheapest passing one; then slots bisected (to 1/32) between each hashes' largest failing power of two and the cheapest passing cost. Monotone in slots for count-min on powers of two (exact); between them and for conservative update, statistically. See `src/sizing/search.rs`.\n";

/// Renders the report of a search run by `ev` on a workload summarized by
/// `seen` (run 0's counts) and described by `workload_shape`.
pub fn render_report(
    ev: &Evaluator,
    seen: &WorkloadSummary,
    workload_shape: serde_json::Value,
    r: &SizeResult,
) -> SizeReport {
    let targets_text: Vec<String> = r.targets.iter().map(|t| t.resolved()).collect();
    let primary = r.targets.first().map(|t| t.metric);
    let rec = r.recommended.map(|i| &r.evaluated[i]);
    let mut text = intro(ev, seen, r, &targets_text);
    let failure = match rec {
        Some(c) => {
            recommendation(&mut text, r, c);
            None
        }
        None => Some(no_recommendation(&mut text, r, primary, &targets_text)),
    };
    bound_section(&mut text, r, rec);
    frontier_section(&mut text, r, primary);
    text.md.push_str(SEARCH_NOTE);
    SizeReport {
        console: text.console,
        json: size_json(ev, seen, workload_shape, r),
        md: text.md,
        chart: frontier_chart(r, rec),
        met: rec.is_some(),
        failure,
    }
}

/// The headline and the rule: workload, targets, seeds, update, hasher, cap.
fn intro(ev: &Evaluator, seen: &WorkloadSummary, r: &SizeResult, targets_text: &[String]) -> Text {
    let headline = seen.headline();
    let (seed, seeds) = (ev.seed(), ev.seeds());
    let claim = r.plan.claim(&targets_text.join(" and "));
    let (hold, allowed) = (r.plan.seeds, r.plan.allowed_failures);
    let (variant, hasher) = (ev.variant().name(), ev.hasher().name());
    let cap = human_bytes(r.max_memory);
    let console = format!(
        "{headline}\ntargets: {} (each on the mean and on every one of {seeds} seeds; the pick {claim}: re-checked on {hold} fresh seeds, at most {allowed} missing a target); {variant} update, {hasher} hasher, memory cap {cap}\n",
        targets_text.join(", ")
    );
    let md = format!(
        "# ratelab size\n\n{headline}. Targets: `{}`, each required on the mean over {seeds} seeds and on every seed. The pick's claim is a share of seeds: it {claim}, verified on a hold-out of {hold} fresh seeds of which at most {allowed} may miss a target (one-sided Clopper-Pearson bound). {variant} update, {hasher} hasher, seed {seed}, memory cap {cap}.\n\n",
        targets_text.join("`, `")
    );
    Text { console, md }
}

/// The recommendation `c`: its row, its hold-out, the cheapest power of two
/// and the shapes the hold-out rejected.
fn recommendation(text: &mut Text, r: &SizeResult, c: &Candidate) {
    let mut t = Table::new(SHAPE_TABLE_HEAD);
    t.push(shape_cells(c));
    text.console.push_str(&format!(
        "\nrecommended: {} ({})\n{}",
        shape(c),
        mem_label(c.memory_bytes),
        t.text()
    ));
    text.md.push_str(&format!(
        "## Recommendation: {} ({})\n\n",
        shape(c),
        mem_label(c.memory_bytes)
    ));
    text.md.push_str(&t.markdown());
    if let (Some(h), Some(x)) = (&r.holdout, &r.holdout_exceedance) {
        let s = summarize(h);
        let targets: Vec<String> = r.targets.iter().map(|t| t.resolved()).collect();
        text.both(&format!(
            "guarantee: {}; {}; hold-out means: exact {:.1}%, mean {:.1}, p99 {:.1}, max {:.0}\n",
            r.plan.claim(&targets.join(" and ")),
            x.text(&r.plan),
            s.exact_pct.mean,
            s.mean.mean,
            s.p99.mean,
            s.max.mean
        ));
    }
    if let Some(p) = r.recommended_pow2.map(|i| &r.evaluated[i])
        && (p.memory_bytes != c.memory_bytes || p.hashes != c.hashes)
    {
        text.both(&format!(
                "cheapest power-of-two shape meeting the targets on the search seeds: {} ({}), exact {:.1}%, mean {:.1}, p99 {:.0}\n",
                shape(p),
                mem_label(p.memory_bytes),
                p.summary.exact_pct.mean,
                p.summary.mean.mean,
                p.summary.p99.mean
            ));
    }
    if !r.holdout_rejected.is_empty() {
        let names: Vec<String> = r
            .holdout_rejected
            .iter()
            .map(|&i| shape(&r.evaluated[i]))
            .collect();
        text.both(&format!(
            "passed on the search seeds but failed the hold-out: {}\n",
            names.join(", ")
        ));
    }
}

/// No shape meets the targets: the best found on the first target's metric.
/// Returns the one-line failure message.
fn no_recommendation(
    text: &mut Text,
    r: &SizeResult,
    primary: Option<Metric>,
    targets_text: &[String],
) -> String {
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
    text.console
        .push_str(&format!("\nNO SHAPE MEETS THE TARGETS. {msg}\n"));
    text.md
        .push_str(&format!("## No recommendation\n\n{msg}\n"));
    msg
}

/// What the count-min bound recommends, measured, with its per-target table.
fn bound_section(text: &mut Text, r: &SizeResult, rec: Option<&Candidate>) {
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
    text.console.push_str(&bound_line);
    text.md.push_str(&format!(
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
    text.md.push_str(&bt.markdown());
}

/// The memory-vs-error Pareto frontier of the shapes tried.
fn frontier_section(text: &mut Text, r: &SizeResult, primary: Option<Metric>) {
    let mut ft = Table::new(
        SHAPE_TABLE_HEAD
            .iter()
            .map(|s| s.to_string())
            .chain(["meets".to_string()]),
    );
    for &i in &r.frontier {
        let c = &r.evaluated[i];
        let mut cells = shape_cells(c);
        cells.push(if c.meets { "yes" } else { "no" }.to_string());
        ft.push(cells);
    }
    let metric = primary.map(|m| m.name()).unwrap_or("");
    text.console.push_str(&format!(
        "\nmemory-vs-{} Pareto frontier of the {} shapes tried:\n{}",
        metric,
        r.evaluated.len(),
        ft.text()
    ));
    text.md.push_str(&format!(
        "\n## Pareto frontier (memory vs {}) of the {} shapes tried\n\n",
        metric,
        r.evaluated.len()
    ));
    text.md.push_str(&ft.markdown());
}

/// `size.json`.
fn size_json(
    ev: &Evaluator,
    seen: &WorkloadSummary,
    workload_shape: serde_json::Value,
    r: &SizeResult,
) -> serde_json::Value {
    let rec = r.recommended.map(|i| &r.evaluated[i]);
    let b = &r.bound;
    json!({
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
        "rule": "a shape meets a target when it holds for the mean over seeds and for every seed; the recommendation claims to meet every target on at least coverage_pct of hash seeds with confidence_pct confidence, verified on a hold-out of fresh seeds (one-sided Clopper-Pearson bound on the exceedance)",
        "guarantee": {
            "coverage_pct": r.plan.coverage_pct,
            "confidence_pct": r.plan.confidence_pct,
            "seeds": r.plan.seeds,
            "allowed_failures": r.plan.allowed_failures,
        },
        "recommendation": rec.map(|c| {
            let mut j = candidate_json(c);
            if let Some(h) = &r.holdout {
                let s = crate::metrics::summarize(h);
                let targets: Vec<String> = r.targets.iter().map(|t| t.resolved()).collect();
                j["guarantee"] = json!({"claim": r.plan.claim(&targets.join(" and ")), "exceedance": r.holdout_exceedance});
                j["holdout"] = json!({"seeds": h.len(), "exact_pct": s.exact_pct.mean, "mean": s.mean.mean, "p99": s.p99.mean, "max": s.max.mean, "over_bound_pct": s.over_bound_pct.mean});
            }
            j
        }),
        "recommendation_pow2": r.recommended_pow2.map(|i| candidate_json(&r.evaluated[i])),
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
    })
}

/// The frontier chart: every shape tried, the frontier, the target, the
/// recommendation and the bound's memory.
fn frontier_chart(r: &SizeResult, rec: Option<&Candidate>) -> Option<Chart> {
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
    // the pick is its own marker, not also a "meets" one under it
    let pick = rec.map(|c| (c.hashes, c.slots));
    let pts = |pass: bool| -> Vec<(f64, f64)> {
        r.evaluated
            .iter()
            .filter(|c| c.meets == pass && Some((c.hashes, c.slots)) != pick)
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
    let (mut xmin, xmax) = xs
        .iter()
        .fold((f64::INFINITY, 0.0f64), |(a, b), &x| (a.min(x), b.max(x)));
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
            format!("bound: {}x{} ({})", r.bound.hashes, w, mem_label(mb)),
        ));
    }
    render(&spec).ok()
}
