//! What the review page is organised by: the job a reader comes with
//! (choose a limiter, size a sketch, ...), which report kinds answer it, and
//! each kind's one-line finding for the summary at the top of the page.
//!
//! Adding a kind is one row of `KINDS`: its job and the function that
//! reads its key number from `report.json`. A kind without a row lands in
//! "Other reports" with its `look_at` as the finding.

use crate::report::fmt::{bytes_human, pct_scaled};
use serde_json::Value;

/// A group of sections on the page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Job {
    /// Anchor of the group (`#g-<id>`).
    pub id: &'static str,
    /// Its heading.
    pub title: &'static str,
    /// One sentence: the question the group answers.
    pub question: &'static str,
}

/// The jobs, in page order.
pub const JOBS: &[Job] = &[
    Job {
        id: "choose",
        title: "Choose a limiter",
        question: "Which limiter denies well-behaved clients least and lets abusers through least, at what memory? Every candidate replays the same traffic against an exact sliding log.",
    },
    Job {
        id: "config",
        title: "What do I put in my config?",
        question: "The settings to paste for one's own proxy (nginx, Envoy, ...): chosen on the first part of a log, confirmed on the slices after it, with the lines checked by the proxy itself.",
    },
    Job {
        id: "fleet",
        title: "The fleet",
        question: "Many replicas behind a balancer: how much do local, synchronised and central limiters let through or deny, and what do they cost in store operations, messages and added latency?",
    },
    Job {
        id: "size",
        title: "Size a sketch",
        question: "How big must the count-min sketch be: for counting accuracy (`ratelab size`) and for a rate limit on an access log (`ratelab size --trace ... --limit`)?",
    },
    Job {
        id: "estimate",
        title: "Guard accuracy",
        question: "How far off are pingora-limits' count-min counts (Estimator, Rate, Inflight) from the exact ones, and where does that come from?",
    },
    Job {
        id: "docs",
        title: "The documents' experiments",
        question: "The source documents' pictures replayed: when each call passes through token buckets, pacers and multi-limiters, what pingora's Rate answers between window flips, what the documented proxy example does, and what racing threads see.",
    },
    Job {
        id: "other",
        title: "Other reports",
        question: "Reports of kinds this page has no group for.",
    },
];

/// The key number of a report, from its `report.json` (`None`: nothing to
/// add to its verdict).
type KeyNumber = fn(&Value) -> Option<String>;

/// A verdict computed from `report.json` (`None`: use the `look_at`).
type Verdict = fn(&Value) -> Option<String>;

/// Kinds whose verdict is computed rather than read from `look_at`.
const VERDICTS: &[(&str, Verdict)] = &[
    ("decision_accuracy", decision_verdict),
    ("size", size_count_verdict),
    ("size_limit", size_limit_verdict),
    ("recommend", recommend_verdict),
];

/// Kind, job id, key number.
const KINDS: &[(&str, &str, KeyNumber)] = &[
    ("decision_accuracy", "choose", decision),
    ("recommend", "config", recommend),
    ("size", "size", size_count),
    ("size_limit", "size", size_limit),
    ("estimator_accuracy", "estimate", estimator_accuracy),
    ("estimator_characterization", "estimate", characterization),
    ("estimator_overflow", "estimate", overflow),
    ("inflight_accuracy", "estimate", inflight_accuracy),
    ("inflight_guard_leak", "estimate", guard_leak),
    ("rate_vs_oracle", "estimate", rate_vs_oracle),
    ("pacer_timeline", "docs", pacer_timeline),
    ("rate_timeline", "docs", rate_timeline),
    ("proxy_example", "docs", proxy_example),
    ("first_second_panic", "docs", first_second_panic),
];

/// The job a report kind belongs to ("other" for kinds without a row).
///
/// # Examples
///
/// ```
/// use ratelab::report::jobs::job_of;
/// assert_eq!(job_of("decision_accuracy").title, "Choose a limiter");
/// assert_eq!(job_of("a_kind_from_the_future").id, "other");
/// ```
pub fn job_of(kind: &str) -> &'static Job {
    let id = KINDS
        .iter()
        .find(|(k, _, _)| *k == kind)
        .map_or("other", |(_, j, _)| j);
    JOBS.iter()
        .find(|j| j.id == id)
        .unwrap_or(&JOBS[JOBS.len() - 1])
}

/// The job a report belongs to: its kind's, except that a decision-lab
/// report of a fleet (a `fleet` array) belongs to "The fleet".
///
/// # Examples
///
/// ```
/// use ratelab::report::jobs::job_of_report;
/// let fleet = serde_json::json!({"fleet": []});
/// assert_eq!(job_of_report("decision_accuracy", &fleet).id, "fleet");
/// assert_eq!(job_of_report("decision_accuracy", &serde_json::json!({})).id, "choose");
/// ```
pub fn job_of_report(kind: &str, json: &Value) -> &'static Job {
    if kind == "decision_accuracy"
        && json.get("fleet").is_some_and(Value::is_array)
        && let Some(j) = JOBS.iter().find(|j| j.id == "fleet")
    {
        return j;
    }
    job_of(kind)
}

/// A scenario's line in the findings summary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// What the report concludes (plain text).
    pub verdict: String,
    /// The number that carries it (plain text; may be empty).
    pub key: String,
}

/// The finding of a report: the decision lab's is computed (the candidate
/// with the least harm); the others' verdict is the first sentence of the
/// report's `look_at` (else of its description), with the kind's key number.
pub fn finding(kind: &str, json: &Value) -> Finding {
    let key = KINDS
        .iter()
        .find(|(k, _, _)| *k == kind)
        .and_then(|(_, _, f)| f(json))
        .unwrap_or_default();
    if let Some(v) = VERDICTS
        .iter()
        .find(|(k, _)| *k == kind)
        .and_then(|(_, f)| f(json))
    {
        return Finding { verdict: v, key };
    }
    let text = ["look_at", "description"]
        .iter()
        .filter_map(|f| json.get(*f).and_then(Value::as_str))
        .find(|s| !s.trim().is_empty())
        .unwrap_or("");
    Finding {
        verdict: first_sentence(text, 180),
        key,
    }
}

/// The first sentence of `text` (up to ". " or the end), at most `max`
/// characters (cut at a word, with an ellipsis); a leading `chart_name:`
/// label is dropped.
///
/// # Examples
///
/// ```
/// use ratelab::report::jobs::first_sentence;
/// assert_eq!(first_sentence("harm: One. Two.", 80), "One.");
/// assert_eq!(first_sentence("a b c d e f", 6), "a b c…");
/// ```
pub fn first_sentence(text: &str, max: usize) -> String {
    let t = text.trim();
    // "watched_timeline: from t = 60 s ..." names a chart first.
    let t = match t.split_once(": ") {
        Some((label, rest))
            if !label.is_empty()
                && label
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "_-".contains(c)) =>
        {
            rest
        }
        _ => t,
    };
    let end = t.find(". ").map_or(t.len(), |i| i + 1);
    let s = &t[..end];
    if s.chars().count() <= max {
        return s.to_string();
    }
    let cut: String = s.chars().take(max).collect();
    let cut = cut.rsplit_once(' ').map_or(cut.as_str(), |(a, _)| a);
    format!("{}…", cut.trim_end_matches([',', ';', ':']))
}

fn num(v: &Value, path: &[&str]) -> Option<f64> {
    path.iter().try_fold(v, |v, k| v.get(k))?.as_f64()
}

fn rows(v: &Value) -> &[Value] {
    v.get("rows")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// A decision-lab candidate (not one of its two oracles) as its
/// `report.json` row gives it: its harms, memory and, when it is a fleet,
/// the fleet's cost. Read once here for the job's key figures and the
/// findings ([`crate::report::findings`]).
#[derive(Debug, Clone)]
pub(super) struct Cand {
    pub(super) name: String,
    pub(super) denied: f64,
    pub(super) denied_pct: f64,
    pub(super) excess_pct: f64,
    pub(super) worst_window: Option<f64>,
    pub(super) memory: Option<u64>,
    /// The fleet's cost, when the candidate is a fleet.
    pub(super) store_ops_s: Option<f64>,
    pub(super) msgs_s: Option<f64>,
    pub(super) latency_ms: Option<f64>,
}

/// The decision lab's candidates in table order (rows missing a harm
/// figure are left out).
pub(super) fn candidates(v: &Value) -> Vec<Cand> {
    let fleet: Vec<&Value> = v
        .get("fleet")
        .and_then(Value::as_array)
        .map(|a| a.iter().collect())
        .unwrap_or_default();
    rows(v)
        .iter()
        .filter(|r| {
            !r.get("family")
                .and_then(Value::as_str)
                .is_some_and(|f| f.starts_with("oracle"))
        })
        .filter_map(|r| {
            let name = r.get("algorithm")?.as_str()?.to_string();
            let f = fleet
                .iter()
                .find(|f| f.get("algorithm").and_then(Value::as_str) == Some(name.as_str()));
            Some(Cand {
                denied: num(r, &["harm", "compliant_denied"])?,
                denied_pct: num(r, &["harm", "compliant_denied_pct"])?,
                excess_pct: num(r, &["harm", "limited_excess_pct"])?,
                worst_window: num(r, &["harm", "worst_window_ratio"]),
                memory: r.get("memory_bytes").and_then(Value::as_u64),
                store_ops_s: f.and_then(|f| num(f, &["store_ops_per_s"])),
                msgs_s: f.and_then(|f| num(f, &["messages_per_s"])),
                latency_ms: f.and_then(|f| num(f, &["added_latency_ms_per_request"])),
                name,
            })
        })
        .collect()
}

/// Least harm: fewest compliant requests denied, then the limited excess
/// nearest zero (letting abusers through and locking them out are both
/// harm), then the least memory.
fn least_harm(c: &[Cand]) -> Option<&Cand> {
    c.iter().min_by(|a, b| {
        a.denied
            .total_cmp(&b.denied)
            .then(a.excess_pct.abs().total_cmp(&b.excess_pct.abs()))
            .then(
                a.memory
                    .unwrap_or(u64::MAX)
                    .cmp(&b.memory.unwrap_or(u64::MAX)),
            )
    })
}

/// The decision lab's verdict: its first finding (a swept parameter's
/// effect, or the two harms against each other), never one end of a
/// trade-off named the winner.
fn decision_verdict(v: &Value) -> Option<String> {
    crate::report::findings::decision(v).into_iter().next()
}

fn decision(v: &Value) -> Option<String> {
    let c = candidates(v);
    let best = least_harm(&c)?;
    let mut s = format!(
        "{} compliant requests denied, limited excess {:+.2}%",
        best.denied, best.excess_pct
    );
    if let Some(m) = best.memory {
        s.push_str(&format!(", {}", bytes_human(m)));
    }
    // The candidate that hurt well-behaved clients most, if any did.
    if let Some(w) = c
        .iter()
        .filter(|r| r.denied > 0.0)
        .max_by(|a, b| a.denied_pct.total_cmp(&b.denied_pct))
    {
        s.push_str(&format!(
            "; most compliant denied: {} ({})",
            w.name,
            pct_scaled(w.denied_pct)
        ));
    }
    Some(s)
}

fn shape(v: &Value) -> Option<String> {
    Some(format!(
        "{}x{}",
        v.get("hashes")?.as_u64()?,
        v.get("slots")?.as_u64()?
    ))
}

fn targets(v: &Value) -> String {
    v.get("targets")
        .and_then(Value::as_array)
        .map(|t| {
            t.iter()
                .filter_map(|x| {
                    x.as_str()
                        .map(String::from)
                        .or_else(|| x.get("text").and_then(Value::as_str).map(String::from))
                })
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default()
}

fn size_count_verdict(v: &Value) -> Option<String> {
    let s = v.get("size")?;
    let t = targets(s);
    let Some(rec) = s.get("recommendation").filter(|r| !r.is_null()) else {
        return Some(format!(
            "No count-min shape within the memory cap meets {t}"
        ));
    };
    Some(format!(
        "Count sizing: {} ({}) is the cheapest shape meeting {t}",
        shape(rec)?,
        bytes_human(rec.get("memory_bytes")?.as_u64()?)
    ))
}

fn size_count(v: &Value) -> Option<String> {
    let s = v.get("size")?;
    let ratio = num(s, &["bound", "memory_ratio_to_recommendation"])?;
    let w = s.get("workload")?;
    Some(format!(
        "the count-min bound asks {ratio:.1}x that memory; {} keys, {} events",
        w.get("keys")?,
        w.get("events")?
    ))
}

fn size_limit_verdict(v: &Value) -> Option<String> {
    let s = v.get("size")?;
    let policy = match (
        num(s, &["policy", "limit"]),
        num(s, &["policy", "interval_ms"]),
    ) {
        (Some(l), Some(i)) => format!(" at {l} per {i} ms"),
        _ => String::new(),
    };
    Some(format!(
        "Rate-limit sizing{policy} ({}): {}",
        targets(s),
        size_limit_picks(s)?
    ))
}

fn size_limit_picks(s: &Value) -> Option<String> {
    let modes = s.get("modes")?.as_array()?;
    let picks: Vec<String> = modes
        .iter()
        .map(|m| {
            let name = m.get("mode").and_then(Value::as_str).unwrap_or("?");
            match m.get("recommendation").filter(|r| !r.is_null()) {
                Some(r) => format!(
                    "{name}: {} ({})",
                    shape(r).unwrap_or_default(),
                    r.get("memory_bytes")
                        .and_then(Value::as_u64)
                        .map(bytes_human)
                        .unwrap_or_default()
                ),
                None => format!("{name}: none within the cap"),
            }
        })
        .collect();
    (!picks.is_empty()).then(|| picks.join("; "))
}

/// What to paste, and how it was chosen.
fn recommend_verdict(v: &Value) -> Option<String> {
    let r = v.get("recommend")?;
    r.get("pick").filter(|p| !p.is_null())?;
    let targets: Vec<&str> = r
        .get("targets")?
        .as_array()?
        .iter()
        .filter_map(Value::as_str)
        .collect();
    Some(format!(
        "Paste {} into {}: chosen on the first {:.0} s of the log ({}), confirmed on the {} slices after it",
        r.get("snippet")?.as_str()?,
        r.get("family")?.as_str()?,
        num(r, &["choose", "to_s"])?,
        targets.join(", "),
        r.get("held_out_slices")?.as_array()?.len()
    ))
}

/// The pick's settings and what it did on the log it was chosen on.
fn recommend(v: &Value) -> Option<String> {
    let r = v.get("recommend")?;
    let pick = r.get("pick").filter(|p| !p.is_null())?;
    let lim = pick.get("limiter")?.as_object()?;
    let settings: Vec<String> = lim
        .iter()
        .filter(|(k, _)| *k != "model")
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    Some(format!(
        "the pick, {}: {} compliant requests denied ({}%), limited excess {:+.2}%",
        settings.join(" "),
        pick.get("compliant_denied")?,
        pct_scaled(pick.get("compliant_denied_pct")?.as_f64()?),
        pick.get("limited_excess_pct")?.as_f64()?
    ))
}

fn size_limit(v: &Value) -> Option<String> {
    let s = v.get("size")?;
    let bound = s.get("bound")?;
    let bound_mem = bound.get("memory_bytes")?.as_u64()?;
    let w = s.get("workload")?;
    Some(format!(
        "the count-min bound asks {} ({}); {} requests from {} keys",
        shape(bound)?,
        bytes_human(bound_mem),
        w.get("requests")?,
        w.get("keys")?
    ))
}

fn estimator_accuracy(v: &Value) -> Option<String> {
    let pts: Vec<(String, f64)> = rows(v)
        .iter()
        .filter_map(|r| Some((shape(r)?, r.get("exact_pct")?.as_f64()?)))
        .collect();
    let lo = pts.iter().min_by(|a, b| a.1.total_cmp(&b.1))?;
    let hi = pts.iter().max_by(|a, b| a.1.total_cmp(&b.1))?;
    Some(format!(
        "exact keys from {:.1}% ({}) to {:.1}% ({}) over {} rows",
        lo.1,
        lo.0,
        hi.1,
        hi.0,
        pts.len()
    ))
}

fn characterization(v: &Value) -> Option<String> {
    let parts: Vec<String> = v
        .get("shapes")?
        .as_array()?
        .iter()
        .filter_map(|s| {
            Some(format!(
                "{}: {} of keys over e·N/w (bound allows {})",
                shape(s)?,
                pct_scaled(s.get("over_bound_pct")?.as_f64()?),
                pct_scaled(s.get("bound_theory_pct")?.as_f64()?)
            ))
        })
        .collect();
    (!parts.is_empty()).then(|| parts.join("; "))
}

fn overflow(v: &Value) -> Option<String> {
    let parts: Vec<String> = rows(v)
        .iter()
        .filter_map(|r| {
            let b = r.get("behaviour")?.as_str()?;
            let fault = if r.get("fault").is_some_and(|f| !f.is_null()) {
                " (panics)"
            } else {
                ""
            };
            Some(format!("{b}{fault}: cell ends at {}", r.get("cell_after")?))
        })
        .collect();
    (!parts.is_empty()).then(|| parts.join("; "))
}

fn inflight_accuracy(v: &Value) -> Option<String> {
    // `avg` = [exact %, mean, p99, max] over the runs.
    let pts: Vec<f64> = rows(v)
        .iter()
        .filter_map(|r| r.get("avg")?.get(0)?.as_f64())
        .collect();
    let lo = pts.iter().copied().reduce(f64::min)?;
    let hi = pts.iter().copied().reduce(f64::max)?;
    Some(format!(
        "exact in-flight counts from {lo:.1}% to {hi:.1}% of keys over {} rows",
        pts.len()
    ))
}

fn guard_leak(v: &Value) -> Option<String> {
    let last = v.get("drift")?.as_array()?.last()?;
    Some(format!(
        "{} counts leaked for good when {:.0}% of guards incr",
        last.get("leaked_end")?,
        100.0 * last.get("share")?.as_f64()?
    ))
}

fn rate_vs_oracle(v: &Value) -> Option<String> {
    let r = rows(v).first()?;
    let run = r.get("runs")?.get(0)?;
    Some(format!(
        "{}: exact keys {:.1}% against the same flips, {:.1}% against a sliding window",
        shape(r.get("config")?)?,
        num(run, &["vs_flip", "exact_pct"])?,
        num(run, &["vs_sliding", "exact_pct"])?
    ))
}

fn pacer_timeline(v: &Value) -> Option<String> {
    let cases = v.get("cases")?.as_array()?;
    let parts: Vec<String> = cases
        .iter()
        .filter_map(|c| {
            let t: Vec<u64> = c
                .get("admitted_ns_in_order")?
                .as_array()?
                .iter()
                .filter_map(Value::as_u64)
                .collect();
            let span = match (t.iter().min(), t.iter().max()) {
                (Some(a), Some(b)) => (b - a) as f64 / 1e9,
                _ => 0.0,
            };
            let calls = if t.len() == 1 { "call" } else { "calls" };
            Some(format!("{} {calls} admitted over {span:.1} s", t.len()))
        })
        .collect();
    match parts.len() {
        0 => None,
        1 => parts.into_iter().next(),
        2..=4 => Some(format!("{} cases: {}", parts.len(), parts.join("; "))),
        n => Some(format!("{n} cases: {}; ...", parts[..3].join("; "))),
    }
}

fn rate_timeline(v: &Value) -> Option<String> {
    let r = rows(v);
    let flips = r
        .iter()
        .filter(|x| x.get("flipped").and_then(Value::as_bool) == Some(true))
        .count();
    Some(format!(
        "{} reads, {flips} window flip{}",
        r.len(),
        if flips == 1 { "" } else { "s" }
    ))
}

fn proxy_example(v: &Value) -> Option<String> {
    let r = rows(v);
    let limited = r
        .iter()
        .filter(|x| x.get("status").and_then(Value::as_u64) == Some(429))
        .count();
    Some(format!("{limited} of {} requests answered 429", r.len()))
}

fn first_second_panic(v: &Value) -> Option<String> {
    let worst = rows(v)
        .iter()
        .filter_map(|r| {
            Some((
                r.get("lockstep_panicked")?.as_u64()?,
                r.get("threads")?.as_u64()?,
                r.get("interval_ms")?.as_u64()?,
            ))
        })
        .max()?;
    Some(format!(
        "up to {} of {} threads panic in lockstep ({} ms interval)",
        worst.0, worst.1, worst.2
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_kind_row_names_a_job() {
        for (kind, job, _) in KINDS {
            assert!(JOBS.iter().any(|j| j.id == *job), "{kind} -> {job}");
        }
        assert_eq!(JOBS.last().map(|j| j.id), Some("other"));
    }

    #[test]
    fn least_harm_counts_locking_abusers_out_as_harm() {
        let v = json!({"rows": [
            {"algorithm": "exact", "family": "oracle sliding log", "memory_bytes": null,
             "harm": {"compliant_denied": 0, "compliant_denied_pct": 0.0, "limited_excess_pct": 0.0}},
            {"algorithm": "lockout", "family": "a", "memory_bytes": 10,
             "harm": {"compliant_denied": 0, "compliant_denied_pct": 0.0, "limited_excess_pct": -70.0}},
            {"algorithm": "leaky", "family": "b", "memory_bytes": 100,
             "harm": {"compliant_denied": 0, "compliant_denied_pct": 0.0, "limited_excess_pct": 1.5}},
            {"algorithm": "harsh", "family": "c", "memory_bytes": 1,
             "harm": {"compliant_denied": 9, "compliant_denied_pct": 0.25, "limited_excess_pct": 0.0}}
        ]});
        let f = finding("decision_accuracy", &v);
        assert!(
            f.verdict
                .starts_with("Only 1 of 3 candidates deny compliant requests: harsh (0.25%)"),
            "{}",
            f.verdict
        );
        assert!(
            f.key
                .starts_with("0 compliant requests denied, limited excess +1.50%, 100 B"),
            "{}",
            f.key
        );
        assert!(
            f.key.ends_with("most compliant denied: harsh (0.25%)"),
            "{}",
            f.key
        );
    }

    /// A recommendation has its own place ("What do I put in my
    /// config?") and says what to paste, from the committed report.
    #[test]
    fn recommend_reports_say_what_to_paste() {
        assert_eq!(job_of("recommend").id, "config");
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/reports/recommend-nginx/report.json"
        ))
        .unwrap();
        let v: Value = serde_json::from_str(&text).unwrap();
        let f = finding("recommend", &v);
        assert!(
            f.verdict
                .starts_with("Paste nginx.conf into nginx: chosen on the first 60 s"),
            "{}",
            f.verdict
        );
        assert!(
            f.key.contains("burst=5") && f.key.contains("compliant requests denied"),
            "{}",
            f.key
        );
    }

    #[test]
    fn other_kinds_use_look_at_and_their_key_number() {
        let v = json!({"look_at": "admitted: Two per second. Then more.", "rows": [
            {"status": 200}, {"status": 429}]});
        let f = finding("proxy_example", &v);
        assert_eq!(f.verdict, "Two per second.");
        assert_eq!(f.key, "1 of 2 requests answered 429");
        let f = finding("unknown", &json!({"description": "Only this"}));
        assert_eq!((f.verdict.as_str(), f.key.as_str()), ("Only this", ""));
    }
}
