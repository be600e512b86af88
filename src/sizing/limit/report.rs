//! The report of a limit sizing: console text, `size.md`, `size.json`
//! (schema `ratelab.size.limit.v1`) and the frontier chart (compliant
//! requests denied against memory, one line per estimate mode).

use super::bound::LimitBound;
use super::replay::Figures;
use super::search::{frontier, Ctx, ModeResult, ShapeEval, MAX_VERIFICATIONS};
use super::targets::LimitMetric;
use super::LimitJob;
use crate::report::chart::{ChartSpec, Legend, Series, SeriesStyle};
use crate::report::fmt::{bytes_human, noun, pct_scaled};
use crate::report::{Chart, Table};
use crate::sizing::guarantee::Exceedance;
use crate::sizing::report::SizeReport;
use serde_json::{json, Value};

/// The schema name of `size.json` ([`crate::report::LIMIT_SIZE_SCHEMA`]).
pub use crate::report::LIMIT_SIZE_SCHEMA;

/// What the report is made of.
pub struct Inputs<'a> {
    /// The job.
    pub job: &'a LimitJob,
    /// The data the shapes were evaluated on.
    pub ctx: &'a Ctx<'a>,
    /// One result per mode.
    pub results: &'a [ModeResult],
    /// The bound's pick.
    pub bound: &'a LimitBound,
    /// The bound's shape measured, per mode.
    pub bound_eval: &'a [Option<ShapeEval>],
}

fn mode_title(mode: &str) -> &'static str {
    match mode {
        "docs" => "docs pattern (deny when observe(key) > limit; every request counted)",
        _ => "proportional estimate (deny when prev·(1−f) + curr + w − 1 ≥ limit; admitted requests counted)",
    }
}

fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn signed(n: i64) -> String {
    let s = thousands(n.unsigned_abs());
    if n < 0 {
        format!("-{s}")
    } else {
        format!("+{s}")
    }
}

fn mem(bytes: u64) -> String {
    bytes_human(bytes)
}

/// "compliant denied 12 (0.0012%) on 3 keys; limited excess +45 (+0.10%)".
fn figures_text(f: &Figures) -> String {
    format!(
        "compliant denied {} ({}) on {} keys; limited excess {} ({:+.2}%)",
        thousands(f.compliant_denied),
        pct_scaled(f.compliant_denied_pct),
        thousands(f.compliant_keys_hit),
        signed(f.limited_excess),
        f.limited_excess_pct
    )
}

fn shape_of(e: &ShapeEval) -> String {
    format!("{} ({})", e.shape.label(), mem(e.memory_bytes))
}

/// Every line of the report is built twice: console and markdown.
struct Text {
    console: String,
    md: String,
}

impl Text {
    fn both(&mut self, line: &str) {
        self.console.push_str(line);
        self.console.push('\n');
        self.md.push_str(line);
        self.md.push_str("\n\n");
    }
}

/// The frontier table of one mode, with the pick and `Rate::new`'s default
/// shape marked (listed even when not on the frontier of the first seed).
fn frontier_table(r: &ModeResult) -> Table {
    let mut t = Table::new([
        "shape",
        "memory",
        "compliant denied",
        "compliant denied %",
        "keys hit",
        "limited excess %",
        "meets (seed)",
        "",
    ]);
    let on = frontier(&r.confirmed);
    let pick = r.pick.map(|i| r.evaluated[i].shape);
    for (i, e) in r.confirmed.iter().enumerate() {
        let is_pick = Some(e.shape) == pick;
        let is_default = e.shape.hashes == crate::model::rate::RATE_HASHES
            && e.shape.slots == crate::model::rate::RATE_SLOTS as u64;
        if !on.contains(&i) && !is_pick && !is_default {
            continue;
        }
        let s = &e.seeds[0];
        let Some(f) = &s.figures else { continue };
        t.push([
            e.shape.label(),
            mem(e.memory_bytes),
            thousands(f.compliant_denied),
            pct_scaled(f.compliant_denied_pct),
            thousands(f.compliant_keys_hit),
            format!("{:+.2}%", f.limited_excess_pct),
            if s.meets { "yes" } else { "no" }.to_string(),
            match (is_pick, is_default) {
                (true, _) => "pick",
                (false, true) => "Rate::new default",
                _ => "",
            }
            .to_string(),
        ]);
    }
    t
}

/// The verification summary of a pick: per target, mean and worst over seeds.
fn verification_text(ctx: &Ctx<'_>, e: &ShapeEval) -> String {
    let mut parts = Vec::new();
    for t in ctx.targets {
        let v: Vec<f64> = e
            .seeds
            .iter()
            .filter_map(|s| target_value(t.metric, s))
            .collect();
        if v.is_empty() {
            continue;
        }
        let ms = crate::metrics::mean_std(&v);
        let worst = if matches!(t.metric, LimitMetric::Error(m) if m.higher_is_better()) {
            v.iter().cloned().fold(f64::INFINITY, f64::min)
        } else {
            v.iter().cloned().fold(f64::NEG_INFINITY, f64::max)
        };
        parts.push(format!(
            "{} mean {:.4}, sd {:.4}, worst {:.4} (target {})",
            t.metric.name(),
            ms.mean,
            ms.std,
            worst,
            t.resolved()
        ));
    }
    let first = e.seeds.first().map_or(0, |s| s.lab_seed);
    let last = e.seeds.last().map_or(0, |s| s.lab_seed);
    let ex = e.exceedance.map(|x| x.text(&ctx.plan)).unwrap_or_default();
    format!(
        "guarantee: {}; {ex}, verified on the decision lab's seeds {first}..={last}: {}",
        ctx.plan.claim(&claim_targets(ctx)),
        parts.join("; ")
    )
}

/// The targets joined for a claim.
fn claim_targets(ctx: &Ctx<'_>) -> String {
    ctx.targets
        .iter()
        .map(|t| t.resolved())
        .collect::<Vec<_>>()
        .join(" and ")
}

fn target_value(m: LimitMetric, s: &super::search::SeedEval) -> Option<f64> {
    match m {
        LimitMetric::CompliantDeniedPct => s.figures.as_ref().map(|f| f.compliant_denied_pct),
        LimitMetric::CompliantKeysDenied => s.figures.as_ref().map(|f| f.compliant_keys_hit as f64),
        LimitMetric::ExcessPct => s.figures.as_ref().map(|f| f.limited_excess_pct),
        LimitMetric::Error(m) => s.errors.iter().find(|e| e.metric == m).map(|e| e.value),
    }
}

/// Renders everything.
pub fn render(inp: &Inputs<'_>) -> SizeReport {
    let ctx = inp.ctx;
    let targets: Vec<String> = ctx.targets.iter().map(|t| t.resolved()).collect();
    let head = headline(inp);
    let mut text = Text {
        console: format!("{head}\ntargets: {}\n", targets.join(", ")),
        md: format!(
            "# ratelab size: pingora Rate for a rate limit\n\n{head}\n\nTargets: `{}`. A shape is replayed through pingora `Rate` (both windows' sketches of that shape) exactly as the decision lab runs it. The pick's claim is a share of hash seeds: it {}, verified on {} fresh hash seeds of which at most {} may miss a target (one-sided Clopper-Pearson bound); the exceedance measured is printed beside it.\n\n",
            targets.join("`, `"),
            ctx.plan.claim(&claim_targets(ctx)),
            ctx.plan.seeds,
            ctx.plan.allowed_failures
        ),
    };
    for w in small_data(inp) {
        text.console.push_str(&format!("warning: {w}\n"));
        text.md.push_str(&format!("**Warning:** {w}\n\n"));
    }
    let mut failures = Vec::new();
    let mut modes_json = Vec::new();
    for (r, be) in inp.results.iter().zip(inp.bound_eval) {
        let title = mode_title(r.mode);
        text.console.push_str(&format!("\n== {title}\n"));
        text.md.push_str(&format!("## {}\n\n", title));
        let pick = r.pick.map(|i| &r.evaluated[i]);
        match pick {
            Some(p) => {
                text.both(&format!(
                    "recommended: {} for both windows, i.e. Rate::new_with_estimator_config(interval, {}, {})",
                    shape_of(p),
                    p.shape.hashes,
                    p.shape.slots
                ));
                text.both(&verification_text(ctx, p));
                if let Some(c) = r.confirmed.iter().find(|c| c.shape == p.shape) {
                    let s = &c.seeds[0];
                    if let Some(f) = &s.figures {
                        let ww = f
                            .worst_window
                            .map(|w| {
                                format!(
                                    "; worst window #{} (from {:.0} s): {} compliant denied",
                                    w.index,
                                    w.start_s,
                                    thousands(w.compliant_denied)
                                )
                            })
                            .unwrap_or_default();
                        text.both(&format!(
                            "decision lab, seed {} (replayed through RateLimiter::sketch, equal to the fast replay): {}{ww}",
                            s.lab_seed,
                            figures_text(f)
                        ));
                    }
                    for e in &s.errors {
                        if ctx
                            .targets
                            .iter()
                            .any(|t| t.metric == LimitMetric::Error(e.metric))
                        {
                            text.both(&format!(
                                "{} of the keys near the limit, worst window #{} ({} keys): {}",
                                e.metric.name(),
                                e.window,
                                e.keys,
                                crate::sizing::targets::trim_float(e.value)
                            ));
                        }
                    }
                }
                if !r.rejected.is_empty() {
                    let names: Vec<String> = r.rejected.iter().map(|s| s.label()).collect();
                    text.both(&format!(
                        "rejected (a target missed on more fresh seeds than the claim allows): {}",
                        names.join(", ")
                    ));
                }
            }
            None => {
                let msg = format!(
                    "{}: no shape within the memory cap of {} (and {MAX_VERIFICATIONS} verifications) {}; raise --max-memory or relax the target or the claim (--coverage, --confidence)",
                    r.mode,
                    mem(ctx.max_memory),
                    ctx.plan.claim(&targets.join(" and "))
                );
                text.both(&format!("NO SHAPE MEETS THE TARGETS. {msg}"));
                failures.push(msg);
            }
        }
        if let (Some(w), Some(m)) = (inp.bound.slots, inp.bound.memory_bytes) {
            let ratio = pick
                .map(|p| {
                    format!(
                        ", {:.1}x the memory of the recommendation",
                        m as f64 / p.memory_bytes as f64
                    )
                })
                .unwrap_or_default();
            let measured = be
                .as_ref()
                .and_then(|e| e.seeds[0].figures.as_ref())
                .map(|f| format!("; measured: {}", figures_text(f)))
                .unwrap_or_else(|| "; not measured (over the memory cap)".into());
            text.both(&format!(
                "count-min bound would recommend: {}x{w} ({}){ratio}{measured}",
                inp.bound.hashes,
                mem(m)
            ));
        }
        let ft = frontier_table(r);
        text.console.push_str(&format!(
            "frontier (decision lab seed {}, confirmed through the model), of {} evaluations:\n{}",
            ctx.seed,
            r.evaluated.len(),
            ft.text()
        ));
        text.md.push_str(&format!(
            "Frontier (decision lab seed {}, replayed through the model; {} evaluations in all):\n\n{}\n",
            ctx.seed,
            r.evaluated.len(),
            ft.markdown()
        ));
        modes_json.push(mode_json(ctx, r, be.as_ref()));
    }
    text.md.push_str("## What the count-min bound reads\n\n");
    for rule in &inp.bound.rules {
        text.md.push_str(&format!("- {rule}\n"));
    }
    text.md.push_str(&format!(
        "\n## How to re-measure\n\nA `decision_accuracy` scenario with `\"seed\": {}`, `\"policy\": {{\"limit\": {}, \"interval_ms\": {}}}`, `\"shapes\": []`, the same trace and `\"limiters\": [{{\"model\": \"pingora_rate\", \"estimate\": \"docs\" or \"proportional\", \"hashes\": H, \"slots\": W}}]` reports the figures above for seed {}; seeds {}..={} are the verification seeds (a claim's seeds are fresh: any other seed re-measures it).\n\n## Search\n\nPer estimate mode: for hashes 4, 2, 3, 1, 5, 6, 7, 8, the most slots cheaper than the best pass so far, then a geometric bisection of slots to 1/16, each on the first hash seed with a replay that stops once a growing count passes what the targets allow; each rows' cheapest pass is then verified on the claim's fresh seeds, cheapest first, stopping at the first failure beyond what the claim allows (doubling the slots on failure, then bisecting between the verified failure and pass to 1/8), and the pick and the frontier shapes (its rows at 1/8..2x its slots, the cheapest pass of each hashes) are replayed through `RateLimiter::sketch` and must equal the fast replay. See `src/sizing/limit/`.\n",
        ctx.seed,
        ctx.policy.limit,
        ctx.policy.interval_ms,
        ctx.seed,
        ctx.seed + 1,
        ctx.seed + u64::from(ctx.plan.seeds)
    ));
    let met = failures.is_empty();
    SizeReport {
        console: text.console,
        json: size_json(inp, modes_json),
        md: text.md,
        chart: chart(inp),
        met,
        failure: (!met).then(|| failures.join("; ")),
    }
}

/// Fewest limited keys whose excess says something about abusers in
/// general rather than about these few.
const FEW_LIMITED_KEYS: u64 = 5;

/// Why the trace may be too small for its pick to mean anything: too few
/// limited keys for the excess, or too few compliant requests for a
/// `compliant_denied_pct` target to be resolved (one denial already more
/// than the target allows).
fn small_data(inp: &Inputs<'_>) -> Vec<String> {
    let Some(c) = inp.ctx.classes else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if c.limited_keys < FEW_LIMITED_KEYS {
        out.push(format!(
            "only {} {} of the trace ever {} over the limit: the excess figures describe {}, not abusers in general; a longer or busier trace says more",
            c.limited_keys,
            noun(c.limited_keys, "key", "keys"),
            if c.limited_keys == 1 { "goes" } else { "go" },
            if c.limited_keys == 1 { "that key" } else { "those keys" },
        ));
    }
    for t in inp.ctx.targets.iter() {
        if t.metric == LimitMetric::CompliantDeniedPct && c.compliant_requests == 0 {
            out.push(format!(
                "no key of the trace stays within the limit: target {} holds for any shape, since there is no compliant request to deny",
                t.resolved()
            ));
        } else if t.metric == LimitMetric::CompliantDeniedPct {
            let one = 100.0 / c.compliant_requests as f64;
            if one > t.threshold {
                out.push(format!(
                    "one denied compliant request is already {one:.3}% of the trace's {} compliant {}: target {} cannot tell a shape that denies one from one that denies none of a larger trace's",
                    thousands(c.compliant_requests),
                    noun(c.compliant_requests, "request", "requests"),
                    t.resolved()
                ));
            }
        }
    }
    out
}

fn headline(inp: &Inputs<'_>) -> String {
    let ctx = inp.ctx;
    let w = ctx.windows;
    match (ctx.trace, ctx.classes) {
        (Some(t), Some(c)) => format!(
            "{}: {} {} from {} {} over {:.1} s; limit {} per {} ms: {} {} ({} {}), {} {} ({} {}); {} {}, the busiest {} {}; {} {} near the limit ({}..={} per window)",
            inp.job.source,
            thousands(t.len() as u64),
            noun(t.len() as u64, "request", "requests"),
            thousands(t.names.len() as u64),
            noun(t.names.len() as u64, "key", "keys"),
            t.t.last().copied().unwrap_or(0) as f64 / 1e9,
            ctx.policy.limit,
            ctx.policy.interval_ms,
            thousands(c.compliant_keys),
            noun(c.compliant_keys, "compliant key", "compliant keys"),
            thousands(c.compliant_requests),
            noun(c.compliant_requests, "request", "requests"),
            thousands(c.limited_keys),
            noun(c.limited_keys, "limited key", "limited keys"),
            thousands(c.limited_requests),
            noun(c.limited_requests, "request", "requests"),
            thousands(w.len() as u64),
            noun(w.len() as u64, "window", "windows"),
            thousands(w.max_events()),
            noun(w.max_events(), "request", "requests"),
            thousands(w.near_pairs(ctx.near)),
            noun(w.near_pairs(ctx.near), "key-window", "key-windows"),
            ctx.near.0,
            ctx.near.1
        ),
        _ => format!(
            "{}: {} keys, {} events; {} keys near the limit ({}..={})",
            inp.job.source,
            thousands(w.keys.len() as u64),
            thousands(w.counts.iter().sum()),
            thousands(w.near_pairs(ctx.near)),
            ctx.near.0,
            ctx.near.1
        ),
    }
}

fn mode_json(ctx: &Ctx<'_>, r: &ModeResult, bound: Option<&ShapeEval>) -> Value {
    let pick = r.pick.map(|i| &r.evaluated[i]);
    let confirmed = pick.and_then(|p| r.confirmed.iter().find(|c| c.shape == p.shape));
    json!({
        "mode": r.mode,
        "recommendation": pick.map(|p| json!({
            "hashes": p.shape.hashes,
            "slots": p.shape.slots,
            "memory_bytes": p.memory_bytes,
            "decision_lab": confirmed.map(|c| json!({
                "seed": c.seeds[0].lab_seed,
                "figures": c.seeds[0].figures,
                "errors": c.seeds[0].errors,
            })),
            "guarantee": p.exceedance.map(|x| json!({
                "claim": ctx.plan.claim(&claim_targets(ctx)),
                "coverage_pct": ctx.plan.coverage_pct,
                "confidence_pct": ctx.plan.confidence_pct,
                "exceedance": x,
            })),
            "verification": p.seeds,
        })),
        "rejected": r.rejected,
        "frontier": frontier(&r.confirmed).into_iter().map(|i| &r.confirmed[i]).collect::<Vec<_>>(),
        "confirmed": r.confirmed,
        "bound_measured": bound,
        "evaluated": r.evaluated.iter().map(|e| json!({
            "hashes": e.shape.hashes,
            "slots": e.shape.slots,
            "memory_bytes": e.memory_bytes,
            "phase": e.phase,
            "meets": e.meets,
            "seeds": e.seeds.len(),
            "exceedance": e.exceedance,
            "compliant_denied_pct_first_seed": e.seeds.first().and_then(|s| s.figures.as_ref()).map(|f| f.compliant_denied_pct),
            "complete": e.seeds.first().and_then(|s| s.figures.as_ref()).map(|f| f.complete),
        })).collect::<Vec<_>>(),
    })
}

fn size_json(inp: &Inputs<'_>, modes: Vec<Value>) -> Value {
    let ctx = inp.ctx;
    let w = ctx.windows;
    json!({
        "schema": LIMIT_SIZE_SCHEMA,
        "ratelab_version": env!("CARGO_PKG_VERSION"),
        "description": "Sizing results of `ratelab size` for a rate limit: the cheapest pingora Rate sketch meeting the targets on the access log, per estimate mode, with the frontier and the count-min bound's pick.",
        "source": inp.job.source,
        "policy": {"limit": ctx.policy.limit, "interval_ms": ctx.policy.interval_ms},
        "near_limit": {"factors": [inp.job.near.0, inp.job.near.1], "counts": [ctx.near.0, ctx.near.1]},
        "seed": ctx.seed,
        "verification_seeds": ctx.plan.seeds,
        "guarantee": {
            "coverage_pct": ctx.plan.coverage_pct,
            "confidence_pct": ctx.plan.confidence_pct,
            "seeds": ctx.plan.seeds,
            "allowed_failures": ctx.plan.allowed_failures,
            "meaning": "the pick meets every target on at least coverage_pct of hash seeds, with confidence_pct confidence (one-sided Clopper-Pearson bound on its exceedance measured on fresh seeds)",
        },
        "max_memory_bytes": ctx.max_memory,
        "memory": "both windows' sketches: 2 x hashes x slots x 8 bytes",
        "workload": {
            "requests": ctx.trace.map(|t| t.len()),
            "keys": ctx.trace.map_or(w.keys.len(), |t| t.names.len()),
            "duration_s": ctx.trace.map(|t| t.t.last().copied().unwrap_or(0) as f64 / 1e9),
            "windows": w.len(),
            "busiest_window_requests": w.max_events(),
            "near_limit_key_windows": w.near_pairs(ctx.near),
            "compliant_keys": ctx.classes.map(|c| c.compliant_keys),
            "compliant_requests": ctx.classes.map(|c| c.compliant_requests),
            "limited_keys": ctx.classes.map(|c| c.limited_keys),
            "limited_requests": ctx.classes.map(|c| c.limited_requests),
        },
        "targets": ctx.targets,
        "warnings": small_data(inp),
        "modes": modes,
        "bound": inp.bound,
    })
}

/// Nice log-axis ends: the 1-2-5 step at or below `lo` and at or above `hi`.
fn nice_log_range(lo: f64, hi: f64) -> (f64, f64) {
    let steps = |v: f64| {
        let e = libm::floor(libm::log10(v));
        let b = libm::pow(10.0, e);
        (b, [1.0, 2.0, 5.0, 10.0].map(|m| m * b))
    };
    let (_, down) = steps(lo);
    let a = down
        .iter()
        .rev()
        .copied()
        .find(|&s| s <= lo * (1.0 + 1e-9))
        .unwrap_or(down[0]);
    let (_, up) = steps(hi);
    let b = up
        .iter()
        .copied()
        .find(|&s| s >= hi * (1.0 - 1e-9))
        .unwrap_or(up[3]);
    (a, b)
}

/// The guarantee's picture: per estimate mode, every shape verified on
/// fresh hash seeds at its memory, y the share of those seeds on which it
/// missed a target and the one-sided upper confidence bound on that share
/// ([`crate::sizing::guarantee::upper_bound`], as the claim is checked),
/// the allowed share (100 − coverage) as a line, rejected shapes with
/// their own marker, and the pick labelled with why it is the pick.
fn chart(inp: &Inputs<'_>) -> Option<Chart> {
    let ctx = inp.ctx;
    ctx.trace?;
    let plan = &ctx.plan;
    let allowed = 100.0 - plan.coverage_pct;
    let kib = |b: u64| b as f64 / 1024.0;
    let verified = |r: &ModeResult| -> Vec<(ShapeEval, Exceedance)> {
        r.evaluated
            .iter()
            .filter_map(|e| e.exceedance.map(|x| (e.clone(), x)))
            .collect()
    };
    let all: Vec<(f64, f64, f64)> = inp
        .results
        .iter()
        .flat_map(&verified)
        .map(|(e, x)| (kib(e.memory_bytes), 100.0 * x.rate, 100.0 * x.upper_bound))
        .collect();
    if all.is_empty() {
        return None;
    }
    let fold = |f: fn(f64, f64) -> f64, init: f64, g: fn(&(f64, f64, f64)) -> f64| {
        all.iter().map(g).fold(init, f)
    };
    let x_range = nice_log_range(
        fold(f64::min, f64::INFINITY, |p| p.0),
        fold(f64::max, 0.0, |p| p.0),
    );
    let y_lo = all
        .iter()
        .flat_map(|p| [p.1, p.2])
        .filter(|v| *v > 0.0)
        .fold(allowed, f64::min);
    let y_range = nice_log_range(y_lo, fold(f64::max, allowed, |p| p.2).max(allowed));
    let targets = claim_targets(ctx);
    let conf = crate::sizing::targets::trim_float(plan.confidence_pct);
    let panels: Vec<ChartSpec> = inp
        .results
        .iter()
        .map(|r| {
            let v = verified(r);
            let mut spec = ChartSpec::new(
                format!("frontier-{}", r.mode),
                format!("{} estimate", r.mode),
                "memory of both windows' sketches (KiB, log)",
                "fresh seeds missing the target (%, log)",
            );
            spec.x_log = true;
            spec.y_log = true;
            // Below the smallest share a verification can measure: 0 of n.
            spec.log_floor = y_range.0 / 2.0;
            spec.x_range = Some(x_range);
            spec.y_range = Some(y_range);
            spec.legend = Legend::UpperRight;
            let pts = |keep: &dyn Fn(&ShapeEval) -> bool, y: &dyn Fn(&Exceedance) -> f64| {
                v.iter()
                    .filter(|(e, _)| keep(e))
                    .map(|(e, x)| (kib(e.memory_bytes), y(x)))
                    .collect::<Vec<_>>()
            };
            let ub = |x: &Exceedance| 100.0 * x.upper_bound;
            let mut rej = Series::new(
                format!("rejected: upper {conf}% bound"),
                pts(&|e| !e.meets, &ub),
                SeriesStyle::Points,
            );
            rej.color = Some(3);
            // The costliest rejected shape cheaper than the pick: why the
            // pick is not cheaper.
            let pick_mem = r.pick.map(|i| r.evaluated[i].memory_bytes);
            let near = v
                .iter()
                .filter(|(e, _)| !e.meets && pick_mem.is_some_and(|m| e.memory_bytes < m))
                .max_by_key(|(e, _)| e.memory_bytes)
                .map(|(e, _)| e.shape);
            rej.point_labels = Some(
                v.iter()
                    .filter(|(e, _)| !e.meets)
                    .map(|(e, x)| {
                        if Some(e.shape) == near {
                            format!(
                                "{}: missed on {} of {} seeds",
                                e.shape.label(),
                                x.failures,
                                x.seeds
                            )
                        } else {
                            String::new()
                        }
                    })
                    .collect(),
            );
            let picked = r.pick.map(|i| r.evaluated[i].shape);
            let mut ok = Series::new(
                format!("verified: upper {conf}% bound"),
                pts(&|e| e.meets && Some(e.shape) != picked, &ub),
                SeriesStyle::Points,
            );
            ok.color = Some(2);
            let mut share = Series::new(
                "measured share (0 of n: the 0 row)",
                pts(&|_| true, &|x| 100.0 * x.rate),
                SeriesStyle::Points,
            );
            share.color = Some(7);
            let mut line = Series::new(
                format!(
                    "allowed: {}% of seeds",
                    crate::sizing::targets::trim_float(allowed)
                ),
                vec![(x_range.0, allowed), (x_range.1, allowed)],
                SeriesStyle::Dashed,
            );
            line.color = Some(6);
            // The line first: the markers on it stay visible.
            spec.series = [line, rej, ok, share]
                .into_iter()
                .filter(|s| !s.points.is_empty())
                .collect();
            if let Some(p) = r.pick.map(|i| &r.evaluated[i])
                && let Some(x) = p.exceedance
            {
                let mut s = Series::new(
                    "pick",
                    vec![(kib(p.memory_bytes), 100.0 * x.upper_bound)],
                    SeriesStyle::Points,
                );
                s.color = Some(0);
                s.point_labels = Some(vec![format!(
                    "pick {} ({}): least memory with its bound ≤ {}% after all {} seeds ({} missed)",
                    p.shape.label(),
                    mem(p.memory_bytes),
                    crate::sizing::targets::trim_float(allowed),
                    x.seeds,
                    x.failures
                )]);
                spec.series.push(s);
            }
            spec
        })
        .collect();
    let caption = format!(
        "For each estimate mode, every shape verified on fresh hash seeds (decision lab seeds {}..={}), at the memory of both windows' sketches: the share of those seeds on which it missed {targets} (the 0 row: none missed) and the one-sided {conf}% Clopper-Pearson upper bound on that share, the quantity the claim checks. The dashed line is the share the claim allows ({}% of seeds may miss). A verification stops at its first failure beyond that, so a rejected shape has few seeds and a wide bound; the pick is the least memory whose verification ran all {} seeds with its bound under the line.",
        ctx.seed + 1,
        ctx.seed + u64::from(plan.seeds),
        crate::sizing::targets::trim_float(allowed),
        plan.seeds
    );
    crate::report::chart::render_grid(
        "frontier",
        &format!(
            "pingora Rate: which sketch keeps its word on fresh hash seeds (limit {} per {} ms)",
            ctx.policy.limit, ctx.policy.interval_ms
        ),
        &caption,
        &panels,
        1,
    )
    .ok()
}
