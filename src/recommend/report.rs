//! A recommendation's report: `recommend.json` (schema
//! `ratelab.recommend.v1`), `table.md`, the frontier chart, the terminal
//! summary and the snippet in the product's syntax.

use super::search::{frontier, Eval, Family, FamilyCtx, HeldOut, Split};
use super::Recommendation;
use crate::report::chart::{render as render_chart, ChartSpec, Legend, Series, SeriesStyle};
use crate::report::fmt::{bytes_human, pct_scaled};
use crate::sizing::limit::{Figures, LimitMetric, LimitTarget};
use serde_json::{json, Value};

/// The schema of `recommend.json`.
pub const SCHEMA: &str = "ratelab.recommend.v1";

/// What the report is made of.
pub struct Inputs<'a> {
    /// The family.
    pub family: &'a dyn Family,
    /// The intent and the log's keys.
    pub ctx: &'a FamilyCtx,
    /// The log, as named.
    pub source: &'a str,
    /// Requests in the log.
    pub requests: u64,
    /// The targets.
    pub targets: &'a [LimitTarget],
    /// The log's parts.
    pub split: &'a Split,
    /// Every setting evaluated on the choosing part.
    pub evals: &'a [Eval],
    /// The pick's index in `evals`.
    pub pick: Option<usize>,
    /// The pick on the held-out slices.
    pub held_out: Option<&'a HeldOut>,
    /// Settings ranked above the pick that missed a target on a held-out
    /// slice: (index in `evals`, slices held on).
    pub rejected: &'a [(usize, u32)],
    /// The seed.
    pub seed: u64,
}

fn figures_json(f: &Figures) -> Value {
    json!({
        "compliant_denied": f.compliant_denied,
        "compliant_denied_pct": f.compliant_denied_pct,
        "compliant_keys_denied": f.compliant_keys_hit,
        "limited_excess": f.limited_excess,
        "limited_excess_pct": f.limited_excess_pct,
    })
}

fn eval_json(e: &Eval) -> Value {
    let mut v = figures_json(&e.figures);
    v["limiter"] = e.limiter.clone();
    if let Some(d) = &e.deployment {
        // The decision lab's deployment it ran as (and the policy a
        // scenario running it must state, when the setting's own).
        v["deployment"] = d.clone();
        if let Some(p) = e.enforced {
            v["deployment_policy"] = json!({"limit": p.limit, "interval_ms": p.interval_ms});
        }
        if let Some(a) = e.admitted {
            v["admitted"] = a.into();
        }
    }
    v["memory_bytes"] = e.memory_bytes.into();
    v["meets"] = e.meets.into();
    v
}

/// The fleet the settings were measured on, in words (none for a single
/// instance).
fn fleet_text(inp: &Inputs) -> Option<String> {
    let d = inp.evals.iter().find_map(|e| e.deployment.as_ref())?;
    let b = match &d["balancer"] {
        Value::String(s) => s.clone(),
        v => v.to_string(),
    };
    Some(format!(
        "measured as a fleet of {} replica(s) behind {b} (the decision lab's deployment, 1 ms round trips to a shared store); the targets are for the fleet as a whole",
        d["replicas"]
    ))
}

/// A setting in words: `rate_r_s=10 burst=9 nodelay=true`.
pub fn label(l: &Value) -> String {
    l.as_object()
        .map(|m| {
            m.iter()
                .filter(|(k, _)| k.as_str() != "model")
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default()
}

/// A rate as typed: `5`, `7.5`.
fn trim(x: f64) -> String {
    if x.fract() == 0.0 {
        return crate::recommend::search::num(&Value::from(x));
    }
    // Three decimals at most (175 a minute is 2.917 a second).
    let s = format!("{x:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// A share as `pct_scaled` writes it, with its `%` also when it is 0.
fn pct(v: f64) -> String {
    let s = pct_scaled(v);
    if s.ends_with('%') {
        s
    } else {
        format!("{s}%")
    }
}

fn held_out_json(h: &HeldOut) -> Value {
    json!({
        "slices": h.slices.len(),
        "holds_on": h.holds_on,
        "miss_bound": h.miss_bound,
        "confidence_pct": h.confidence_pct,
        "per_slice": h.slices.iter().map(|(a, b, e)| {
            let mut v = figures_json(&e.figures);
            v["from_s"] = (*a).into();
            v["to_s"] = (*b).into();
            v["meets"] = e.meets.into();
            v
        }).collect::<Vec<_>>(),
    })
}

/// The pick's figures, as table.md and the console both state them.
fn pick_text(p: &Eval) -> String {
    format!(
        "compliant denied {}, limited excess {:+.2}%, memory {}",
        pct(p.figures.compliant_denied_pct),
        p.figures.limited_excess_pct,
        bytes_human(p.memory_bytes)
    )
}

fn held_out_text(h: &HeldOut) -> String {
    format!(
        "holds on {} of {} later slices; miss probability <= {:.1}% at {}% confidence (slices taken as independent draws of the traffic)",
        h.holds_on,
        h.slices.len(),
        100.0 * h.miss_bound,
        h.confidence_pct
    )
}

/// Renders every part of the report.
pub fn render(inp: &Inputs) -> Recommendation {
    let fam = inp.family;
    let policy = inp.ctx.policy;
    let front = frontier(inp.evals);
    let mut front_ix = front.clone();
    if let Some(p) = inp.pick
        && !front_ix.contains(&p)
    {
        front_ix.push(p);
    }
    let targets_text: Vec<String> = inp.targets.iter().map(|t| t.resolved()).collect();
    let choose = &inp.split.choose;
    let slices = &inp.split.held_out;
    let pick = inp.pick.map(|i| &inp.evals[i]);
    // A rate below the intent's refuses a client that uses its whole
    // allowance: say so, the log never showed one.
    let intent = policy.limit as f64 * 1000.0 / policy.interval_ms as f64;
    let below = pick.and_then(|p| {
        let r = fam.rate_per_s(&p.limiter);
        (r < intent * (1.0 - 1e-9)).then(|| {
            format!(
                "the pick's rate ({} per second) is below your intent's ({}): no compliant client in this log needed more, but one that uses its whole allowance of {} per {} ms would be refused",
                trim(r),
                trim(intent),
                policy.limit,
                policy.interval_ms
            )
        })
    });
    let fleet = fleet_text(inp);
    let snippet = pick.map(|p| {
        let mut header = vec![
            format!(
                "ratelab recommend --for {}: at most {} requests per key per {} ms",
                fam.name(),
                policy.limit,
                policy.interval_ms
            ),
            format!(
                "chosen on the first {:.1} s of {}: compliant requests denied {}, limited keys' excess {:+.2}% (targets: {})",
                choose.end_s,
                inp.source,
                pct(p.figures.compliant_denied_pct),
                p.figures.limited_excess_pct,
                targets_text.join(", ")
            ),
        ];
        if let Some(h) = inp.held_out {
            header.push(held_out_text(h));
        }
        if let Some(f) = &fleet {
            header.push(f.clone());
        }
        if let Some(b) = &below {
            header.push(format!("note: {b}"));
        }
        (
            fam.snippet_file().to_string(),
            fam.snippet(&p.limiter, inp.ctx, &header),
        )
    });
    let failure = match pick {
        Some(_) => None,
        None => Some(format!(
            "no {} setting tried meets {} on the first {:.1} s of the log ({} settings; see table.md)",
            fam.name(),
            targets_text.join(" and "),
            choose.end_s,
            inp.evals.len()
        )),
    };
    let json = json!({
        "schema": SCHEMA,
        "family": fam.name(),
        "source": inp.source,
        "policy": {"limit": policy.limit, "interval_ms": policy.interval_ms},
        "targets": targets_text,
        "seed": inp.seed,
        "requests": inp.requests,
        "keys": inp.ctx.keys,
        "choose": {
            "from_s": choose.start_s, "to_s": choose.end_s, "to_ns": choose.end_ns,
            "requests": choose.trace.len(),
            "compliant_keys": choose.classes.compliant_keys,
            "limited_keys": choose.classes.limited_keys,
        },
        "held_out_slices": slices.iter().map(|s| json!({
            "from_s": s.start_s, "to_s": s.end_s, "requests": s.trace.len(),
            "limited_keys": s.classes.limited_keys,
        })).collect::<Vec<_>>(),
        "evaluated": inp.evals.len(),
        "pick": pick.map(|p| {
            let mut v = eval_json(p);
            v["held_out"] = inp.held_out.map_or(Value::Null, held_out_json);
            v["rate_per_s"] = fam.rate_per_s(&p.limiter).into();
            v["below_intent"] = below.is_some().into();
            v
        }),
        "snippet": snippet.as_ref().map(|s| s.0.clone()),
        "snippet_checked_by": fam.checked_by(),
        "rejected_on_held_out": inp.rejected.iter().map(|&(i, k)| {
            let mut v = eval_json(&inp.evals[i]);
            v["held_out_holds_on"] = k.into();
            v
        }).collect::<Vec<_>>(),
        "frontier": front_ix.iter().map(|&i| {
            let mut v = eval_json(&inp.evals[i]);
            if let Some((_, k)) = inp.rejected.iter().find(|r| r.0 == i) {
                v["rejected_on_held_out"] = json!({"holds_on": k, "slices": slices.len()});
            }
            v
        }).collect::<Vec<_>>(),
    });
    let mut json = json;
    if let (Some(f), Some(m)) = (&fleet, json.as_object_mut()) {
        m.insert("fleet".into(), Value::from(f.clone()));
    }
    // table.md
    let mut md = format!(
        "# recommend: {} for at most {} per key per {} ms\n\nLog: {} ({} requests, {} keys). Chosen on {:.1}..{:.1} s ({} requests, {} limited keys); confirmed on {} later slices. Targets: {}.\n\n",
        fam.name(),
        policy.limit,
        policy.interval_ms,
        inp.source,
        inp.requests,
        inp.ctx.keys,
        choose.start_s,
        choose.end_s,
        choose.trace.len(),
        choose.classes.limited_keys,
        slices.len(),
        targets_text.join(", ")
    );
    if let Some(f) = &fleet {
        md.push_str(&format!("Every setting {f}.\n\n"));
    }
    match (pick, inp.held_out) {
        (Some(p), Some(h)) => {
            md.push_str(&format!(
                "**Pick**: `{}` — {}. Held out: {}.\n\n",
                label(&p.limiter),
                pick_text(p),
                held_out_text(h)
            ));
            if let Some(b) = &below {
                md.push_str(&format!("Note: {b}.\n\n"));
            }
            md.push_str("| slice (s) | compliant denied % | limited excess % | meets |\n|---|---|---|---|\n");
            for (a, b, e) in &h.slices {
                md.push_str(&format!(
                    "| {a:.1}..{b:.1} | {} | {:+.2} | {} |\n",
                    pct_scaled(e.figures.compliant_denied_pct),
                    e.figures.limited_excess_pct,
                    if e.meets { "yes" } else { "no" }
                ));
            }
            md.push('\n');
            if !inp.rejected.is_empty() {
                md.push_str("Ranked above the pick but rejected on the later slices (they meet the targets on the choosing part only):\n\n");
                for &(i, k) in inp.rejected {
                    md.push_str(&format!(
                        "- `{}`: limited excess {:+.2}%, held on {k} of {} slices\n",
                        label(&inp.evals[i].limiter),
                        inp.evals[i].figures.limited_excess_pct,
                        slices.len()
                    ));
                }
                md.push('\n');
            }
        }
        _ => md.push_str(&format!(
            "**No pick**: {}.\n\n",
            failure.clone().unwrap_or_default()
        )),
    }
    md.push_str("Frontier (no other setting denies fewer compliant requests, lets less excess through and takes less memory at once), by limited excess:\n\n| setting | compliant denied % | compliant keys denied | limited excess % | memory | meets |\n|---|---|---|---|---|---|\n");
    for &i in &front_ix {
        let e = &inp.evals[i];
        let mark = if Some(i) == inp.pick {
            " **(pick)**"
        } else {
            ""
        };
        md.push_str(&format!(
            "| `{}`{mark} | {} | {} | {:+.2} | {} | {} |\n",
            label(&e.limiter),
            pct_scaled(e.figures.compliant_denied_pct),
            e.figures.compliant_keys_hit,
            e.figures.limited_excess_pct,
            bytes_human(e.memory_bytes),
            if e.meets { "yes" } else { "no" }
        ));
    }
    if let Some((name, text)) = &snippet {
        md.push_str(&format!(
            "\n`{name}` (checked by {}):\n\n```\n{text}```\n",
            fam.checked_by()
        ));
    }
    // console
    let mut console = format!(
        "== recommend --for {}: at most {} per key per {} ms on {} ({} requests, {} keys)\n",
        fam.name(),
        policy.limit,
        policy.interval_ms,
        inp.source,
        inp.requests,
        inp.ctx.keys
    );
    console.push_str(&format!(
        "   {} settings evaluated on the first {:.1} s, {} on the frontier\n",
        inp.evals.len(),
        choose.end_s,
        front_ix.len()
    ));
    if let Some(f) = &fleet {
        console.push_str(&format!("   {f}\n"));
    }
    match (pick, inp.held_out) {
        (Some(p), Some(h)) => {
            console.push_str(&format!(
                "   pick: {} ({})\n   held out: {}\n",
                label(&p.limiter),
                pick_text(p),
                held_out_text(h)
            ));
            if let Some(b) = &below {
                console.push_str(&format!("   note: {b}\n"));
            }
            if !inp.rejected.is_empty() {
                console.push_str(&format!(
                    "   {} better-ranked setting(s) rejected on the later slices (table.md)\n",
                    inp.rejected.len()
                ));
            }
            if let Some((name, text)) = &snippet {
                console.push_str(&format!("   {name}:\n"));
                for l in text.lines().filter(|l| !l.starts_with('#')) {
                    console.push_str(&format!("     {l}\n"));
                }
            }
        }
        _ => console.push_str(&format!(
            "   no pick: {}\n",
            failure.clone().unwrap_or_default()
        )),
    }
    let chart = chart(inp, &front_ix);
    Recommendation {
        json,
        md,
        console,
        chart,
        snippet,
        failure,
    }
}

fn chart(inp: &Inputs, front: &[usize]) -> Option<crate::report::Chart> {
    let p = inp.ctx.policy;
    let mut spec = ChartSpec::new(
        "frontier",
        format!(
            "{}: compliant requests denied vs limited keys' excess (limit {} per {} ms)",
            inp.family.name(),
            p.limit,
            p.interval_ms
        ),
        "limited keys' excess over the exact limiter (%)",
        "compliant requests denied (%)",
    );
    spec.legend = Legend::UpperRight;
    let pts = |ix: &mut dyn Iterator<Item = usize>| -> Vec<(f64, f64)> {
        ix.map(|i| {
            let f = &inp.evals[i].figures;
            (f.limited_excess_pct, f.compliant_denied_pct)
        })
        .collect()
    };
    if inp.evals.is_empty() {
        return None;
    }
    // Each point drawn once, in the series that says most about it: the
    // pick, else the frontier, else the other settings tried (settings
    // with equal figures share a point).
    let at = |i: usize| {
        let f = &inp.evals[i].figures;
        (
            f.limited_excess_pct.to_bits(),
            f.compliant_denied_pct.to_bits(),
        )
    };
    let pick_at = inp.pick.map(at);
    let front_at: Vec<_> = front.iter().map(|&i| at(i)).collect();
    // A setting drawn within a hundredth of the axes of the pick sits
    // under its marker: the pick stands for it.
    let xy = |i: usize| {
        let f = &inp.evals[i].figures;
        (f.limited_excess_pct, f.compliant_denied_pct)
    };
    let span = |v: &dyn Fn(usize) -> f64| {
        let (lo, hi) = (0..inp.evals.len())
            .map(v)
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
                (a.min(x), b.max(x))
            });
        (hi - lo).max(1e-9)
    };
    let (sx, sy) = (span(&|i| xy(i).0), span(&|i| xy(i).1));
    let under_pick = |i: usize| {
        inp.pick.is_some_and(|p| {
            let ((x, y), (px, py)) = (xy(i), xy(p));
            (x - px).abs() <= sx / 100.0 && (y - py).abs() <= sy / 100.0
        })
    };
    let mut seen = std::collections::BTreeSet::new();
    let others: Vec<usize> = (0..inp.evals.len())
        .filter(|&i| {
            Some(at(i)) != pick_at
                && !front_at.contains(&at(i))
                && !under_pick(i)
                && seen.insert(at(i))
        })
        .collect();
    // The frontier as a line through its settings, the pick's included
    // (no markers of its own: the pick's marker is the one that matters).
    let frontier: Vec<usize> = front.to_vec();
    if !others.is_empty() {
        spec.series.push(
            Series::new(
                "other settings tried",
                pts(&mut others.into_iter()),
                SeriesStyle::Points,
            )
            .color(7),
        );
    }
    if !frontier.is_empty() {
        spec.series.push(
            Series::new(
                "frontier",
                pts(&mut frontier.into_iter()),
                SeriesStyle::Line,
            )
            .color(0),
        );
    }
    if let Some(t) = inp
        .targets
        .iter()
        .find(|t| t.metric == LimitMetric::CompliantDeniedPct)
    {
        let xs = inp.evals.iter().map(|e| e.figures.limited_excess_pct);
        let (lo, hi) = xs.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
            (a.min(x), b.max(x))
        });
        spec.series.push(
            Series::new(
                format!("target {}", t.resolved()),
                vec![(lo, t.threshold), (hi, t.threshold)],
                SeriesStyle::Dashed,
            )
            .color(6),
        );
    }
    // The pick last, on top of the line and the target.
    if let Some(i) = inp.pick {
        spec.series.push(
            Series::new(
                format!("pick {}", label(&inp.evals[i].limiter)),
                pts(&mut std::iter::once(i)),
                SeriesStyle::Points,
            )
            .color(3),
        );
    }
    spec.caption = format!(
        "Every {} setting the search measured on the first {:.1} s of the log (the decision lab's harm figures, seed {}): compliant requests denied against the excess of limited keys over the exact sliding log; the frontier as a line through its settings, the pick as a point drawn last (settings with equal figures, or under the pick, drawn once){}.",
        inp.family.name(),
        inp.split.choose.end_s,
        inp.seed,
        if inp.targets.iter().any(|t| t.metric == LimitMetric::CompliantDeniedPct) {
            ", the target dashed"
        } else {
            ""
        }
    );
    render_chart(&spec).ok()
}
