//! Running the cases of a `pacer_timeline` scenario on the virtual clock.

use super::params::{limit_of, Case, Params};
use crate::error::{Error, Result};
use crate::lab::RunContext;
use crate::model::multi::Node;
use crate::model::uber_ratelimit::{LeakyBucket, LeakyBucketConfig, LeakyVariant};
use crate::model::x_time_rate::{TokenBucket, XTimeVersion};
use crate::scenario::Scenario;
use crate::sim::des::{self, AgentScript, Step, World};
use std::collections::BTreeMap;

/// One admission (or refusal) of one caller's limiter step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Admission {
    /// Caller number (file order).
    pub caller: usize,
    /// Its group label.
    pub label: String,
    /// Limiter step number within the caller (sleeps not counted).
    pub step: usize,
    /// When the step started.
    pub started_ns: i64,
    /// When it let the caller go (`None`: refused / error).
    pub admitted_ns: Option<i64>,
    /// `finished - started`.
    pub waited_ns: i64,
    /// Take: when the limiter read the clock.
    pub clock_read_ns: Option<i64>,
    /// Error text.
    pub error: Option<String>,
}

/// A case's outcome.
#[derive(Debug, Clone)]
pub struct CaseResult {
    /// The case label.
    pub label: String,
    /// x/time behaviour used.
    pub go_version: XTimeVersion,
    /// Every limiter step, in caller then step order.
    pub steps: Vec<Admission>,
    /// Ideal rate for charts.
    pub ideal_per_s: Option<f64>,
    /// Ideal line intercept.
    pub ideal_burst: f64,
    /// The buckets every waited-on MultiLimiter of the case goes through,
    /// as (burst, events/s): its ideal is the least of their lines (empty:
    /// no MultiLimiter).
    pub ideal_bounds: Vec<(f64, f64)>,
}

impl CaseResult {
    /// Admitted times in admission order (ties by caller, step).
    pub fn admitted_sorted(&self) -> Vec<&Admission> {
        let mut v: Vec<&Admission> = self
            .steps
            .iter()
            .filter(|a| a.admitted_ns.is_some())
            .collect();
        v.sort_by_key(|a| (a.admitted_ns, a.caller, a.step));
        v
    }
}

/// Every step of every caller is simulated and kept as a row of the
/// report, so the step count is charged both as work and as memory (about
/// [`STEP_BYTES`] a row) before any caller is created.
pub(super) fn check_volume(sc: &Scenario, p: &Params, ctx: &RunContext) -> Result<()> {
    for (ci, c) in p.cases.iter().enumerate() {
        let mut steps = 0f64;
        for g in &c.callers {
            steps += g.count as f64 * g.repeat as f64 * g.steps.len().max(1) as f64;
        }
        let field = format!("cases[{ci}].callers");
        ctx.check_work(
            sc,
            &field,
            steps,
            50.0,
            &format!("{steps:.0} caller steps (count x repeat x steps)"),
        )?;
        ctx.check_memory(
            sc,
            &field,
            steps * STEP_BYTES,
            &format!("the rows of {steps:.0} caller steps"),
            "fewer callers or repeats",
        )?;
    }
    Ok(())
}

/// Rough size of one simulated step's row (its record, label and output).
const STEP_BYTES: f64 = 256.0;

/// Runs every case (no rendering).
pub fn compute(sc: &Scenario, p: &Params) -> Result<Vec<CaseResult>> {
    if p.cases.is_empty() {
        return Err(sc.field_error("cases", "empty: expected at least one case"));
    }
    p.cases
        .iter()
        .enumerate()
        .map(|(ci, c)| run_case(sc, ci, c))
        .collect()
}

/// Field paths of case `ci` (`cases[ci].rest`).
fn field_of(ci: usize, rest: &str) -> String {
    format!("cases[{ci}].{rest}")
}

fn run_case(sc: &Scenario, ci: usize, c: &Case) -> Result<CaseResult> {
    let f = |rest: &str| field_of(ci, rest);
    let version = match &c.go_version {
        None => XTimeVersion::LATEST,
        Some(v) => XTimeVersion::parse(v).ok_or_else(|| {
            sc.field_error(
                f("go_version"),
                format!("value {v:?}: expected v0.3.0 ... v0.13.0 or latest"),
            )
        })?,
    };
    let (mut world, limiters) = build_limiters(sc, ci, c, version)?;
    let callers = build_callers(sc, ci, c, &limiters)?;
    let steps = if !callers.allows.is_empty() {
        if callers.has_other {
            return Err(sc.field_error(
                f("callers"),
                "a case uses either allow steps only or wait/take/sleep steps",
            ));
        }
        run_allows(&mut world, callers)
    } else {
        run_agents(&mut world, &callers, &c.label)?
    };
    Ok(CaseResult {
        label: c.label.clone(),
        go_version: version,
        steps,
        ideal_per_s: c.ideal_per_s,
        ideal_burst: c.ideal_burst.unwrap_or(1.0),
        ideal_bounds: multi_bounds(sc, ci, c)?,
    })
}

/// The buckets every MultiLimiter a caller waits on goes through (nested
/// ones followed), as (burst, events/s): a MultiLimiter admits no more
/// than the least of their lines, so all of them bound the case's ideal.
/// Empty when the case waits on no MultiLimiter.
fn multi_bounds(sc: &Scenario, ci: usize, c: &Case) -> Result<Vec<(f64, f64)>> {
    fn buckets_of(c: &Case, name: &str, depth: usize, out: &mut Vec<String>) {
        match c.multis.iter().find(|m| m.name == name) {
            Some(m) if depth < 16 => {
                for n in &m.of {
                    buckets_of(c, n, depth + 1, out);
                }
            }
            Some(_) => {}
            None => {
                if c.buckets.iter().any(|b| b.name == name) && !out.iter().any(|o| o == name) {
                    out.push(name.to_string());
                }
            }
        }
    }
    let waited: Vec<&String> = c
        .callers
        .iter()
        .flat_map(|k| k.steps.iter().filter_map(|s| s.wait.as_ref()))
        .collect();
    if waited.is_empty()
        || !waited
            .iter()
            .any(|w| c.multis.iter().any(|m| &m.name == *w))
    {
        return Ok(Vec::new());
    }
    let sets: Vec<Vec<String>> = waited
        .iter()
        .map(|w| {
            let mut out = Vec::new();
            buckets_of(c, w, 0, &mut out);
            out
        })
        .collect();
    let mut out = Vec::new();
    for (bi, b) in c.buckets.iter().enumerate() {
        if sets.iter().all(|s| s.contains(&b.name)) {
            let rate = limit_of(sc, &field_of(ci, &format!("buckets[{bi}].limit")), &b.limit)?;
            out.push((b.burst as f64, rate));
        }
    }
    Ok(out)
}

/// The limiters of a case, by name: buckets and multis (`names`), pacers
/// (index into the world's pacers).
#[derive(Default)]
struct Limiters {
    names: BTreeMap<String, Node>,
    pacers: BTreeMap<String, usize>,
}

/// Adds the case's buckets, multis and pacers to a new world.
fn build_limiters(
    sc: &Scenario,
    ci: usize,
    c: &Case,
    version: XTimeVersion,
) -> Result<(World, Limiters)> {
    let f = |rest: &str| field_of(ci, rest);
    let mut world = World::default();
    let mut lim = Limiters::default();
    let (names, pacers) = (&mut lim.names, &mut lim.pacers);
    for (i, b) in c.buckets.iter().enumerate() {
        let limit = limit_of(sc, &f(&format!("buckets[{i}].limit")), &b.limit)?;
        if b.burst < 0 {
            return Err(sc.field_error(
                f(&format!("buckets[{i}].burst")),
                format!("value {}: expected >= 0", b.burst),
            ));
        }
        let node = world
            .limiters
            .add_bucket(TokenBucket::new_version(limit, b.burst, version));
        if names.insert(b.name.clone(), node).is_some() {
            return Err(sc.field_error(
                f(&format!("buckets[{i}].name")),
                format!("value {:?}: used twice", b.name),
            ));
        }
    }
    for (i, m) in c.multis.iter().enumerate() {
        let mut of = Vec::new();
        for (j, n) in m.of.iter().enumerate() {
            let node = names.get(n).copied().ok_or_else(|| {
                sc.field_error(
                    f(&format!("multis[{i}].of[{j}]")),
                    format!("value {n:?}: not a bucket or earlier multi"),
                )
            })?;
            of.push(node);
        }
        let node = world
            .limiters
            .multi_limiter(of)
            .map_err(|e| sc.field_error(f(&format!("multis[{i}]")), format!("{e}")))?;
        if names.insert(m.name.clone(), node).is_some() {
            return Err(sc.field_error(
                f(&format!("multis[{i}].name")),
                format!("value {:?}: used twice", m.name),
            ));
        }
    }
    for (i, pc) in c.pacers.iter().enumerate() {
        let field = f(&format!("pacers[{i}]"));
        let variant = match &pc.variant {
            None => Default::default(),
            Some(v) => LeakyVariant::parse(v).ok_or_else(|| {
                sc.field_error(
                    format!("{field}.variant"),
                    format!("value {v:?}: expected atomic, atomic-int64 or mutex"),
                )
            })?,
        };
        let per_ns = pc.per_ns.unwrap_or(1_000_000_000);
        if pc.rate <= 0 || per_ns <= 0 {
            return Err(sc.field_error(
                field,
                format!("rate {} / per_ns {per_ns}: expected both > 0", pc.rate),
            ));
        }
        let cfg = LeakyBucketConfig {
            rate: pc.rate,
            per_ns,
            slack: pc.slack.unwrap_or(10),
            variant,
            unix_origin_ns: pc.unix_origin_ns.unwrap_or(0),
        };
        let lim = LeakyBucket::new(cfg).map_err(|e| sc.field_error(field, e))?;
        world.pacers.push(lim);
        pacers.insert(pc.name.clone(), world.pacers.len() - 1);
    }
    Ok((world, lim))
}

/// The case's callers, ready to run.
struct Callers {
    /// One script per caller (wait, take and sleep steps).
    agents: Vec<AgentScript>,
    /// Each caller's group label.
    labels: Vec<String>,
    /// `AllowN` calls: (time, caller, bucket).
    allows: Vec<(i64, usize, usize)>,
    /// Whether any step is not an `allow`.
    has_other: bool,
}

/// Turns the case's caller groups into callers.
fn build_callers(sc: &Scenario, ci: usize, c: &Case, lim: &Limiters) -> Result<Callers> {
    let f = |rest: &str| field_of(ci, rest);
    let (names, pacers) = (&lim.names, &lim.pacers);
    let mut agents = Vec::new();
    let mut labels = Vec::new();
    let mut allows: Vec<(i64, usize, usize)> = Vec::new();
    let mut has_other = false;
    for (gi, g) in c.callers.iter().enumerate() {
        let mut steps = Vec::new();
        let mut template: Vec<usize> = Vec::new();
        for (si, s) in g.steps.iter().enumerate() {
            let field = f(&format!("callers[{gi}].steps[{si}]"));
            let set = [
                s.wait.is_some(),
                s.take.is_some(),
                s.sleep_ns.is_some(),
                s.allow.is_some(),
            ];
            if set.iter().filter(|x| **x).count() != 1 {
                return Err(
                    sc.field_error(field, "expected exactly one of wait, take, sleep_ns, allow")
                );
            }
            let lookup = |n: &String| {
                names.get(n).copied().ok_or_else(|| {
                    sc.field_error(
                        &field,
                        format!("value {n:?}: not a bucket or multi of this case"),
                    )
                })
            };
            if let Some(n) = &s.wait {
                steps.push(Step::Wait {
                    limiter: lookup(n)?,
                    n: 1,
                    timeout_ns: s.timeout_ns,
                });
                has_other = true;
            } else if let Some(n) = &s.take {
                let pacer = *pacers.get(n).ok_or_else(|| {
                    sc.field_error(&field, format!("value {n:?}: not a pacer of this case"))
                })?;
                steps.push(Step::Take { pacer });
                has_other = true;
            } else if let Some(ns) = s.sleep_ns {
                steps.push(Step::Sleep { ns });
                has_other = true;
            } else if let Some(n) = &s.allow {
                match lookup(n)? {
                    Node::Bucket(b) => template.push(b),
                    Node::Multi(_) => {
                        return Err(sc.field_error(
                            &field,
                            format!(
                                "value {n:?}: allow needs a bucket (MultiLimiter has no Allow)"
                            ),
                        ))
                    }
                }
            }
        }
        if g.count == 0 || g.repeat == 0 {
            return Err(sc.field_error(
                f(&format!("callers[{gi}]")),
                "count and repeat must be >= 1",
            ));
        }
        for k in 0..g.count {
            let arrival = g
                .arrival_ns
                .saturating_add(g.spacing_ns.saturating_mul(k as i64));
            let caller = labels.len();
            labels.push(g.label.clone());
            let mut all = Vec::new();
            for _ in 0..g.repeat {
                all.extend(steps.iter().copied());
                for &b in &template {
                    allows.push((arrival, caller, b));
                }
            }
            agents.push(AgentScript {
                arrival_ns: arrival,
                steps: all,
            });
        }
    }
    Ok(Callers {
        agents,
        labels,
        allows,
        has_other,
    })
}

/// Runs a case of `allow` steps: `AllowN(t, 1)` at each caller's arrival,
/// in time then caller order; the admissions in caller then step order.
fn run_allows(world: &mut World, callers: Callers) -> Vec<Admission> {
    let Callers {
        labels, mut allows, ..
    } = callers;
    let mut out = Vec::new();
    allows.sort_by_key(|&(t, caller, _)| (t, caller));
    let mut step_no: BTreeMap<usize, usize> = BTreeMap::new();
    for (t, caller, b) in allows {
        let ok = world
            .limiters
            .bucket_mut(b)
            .map(|bk| bk.allow_n(t, 1))
            .unwrap_or(false);
        let step = step_no.entry(caller).or_insert(0);
        out.push(Admission {
            caller,
            label: labels.get(caller).cloned().unwrap_or_default(),
            step: *step,
            started_ns: t,
            admitted_ns: ok.then_some(t),
            waited_ns: 0,
            clock_read_ns: None,
            error: (!ok).then(|| "AllowN false".to_string()),
        });
        *step += 1;
    }
    out.sort_by_key(|a| (a.caller, a.step));
    out
}

/// Runs the callers' scripts through the discrete-event engine; the
/// admissions of every limiter step (sleeps left out), caller by caller.
fn run_agents(world: &mut World, callers: &Callers, label: &str) -> Result<Vec<Admission>> {
    let Callers { agents, labels, .. } = callers;
    let outcome =
        des::run(world, agents).map_err(|e| Error::internal(format!("case {label}: {e}")))?;
    let mut out = Vec::new();
    for a in &outcome.agents {
        let script = agents.get(a.agent);
        let mut step = 0;
        for (k, s) in a.steps.iter().enumerate() {
            let is_sleep = matches!(
                script.and_then(|sc| sc.steps.get(k)),
                Some(Step::Sleep { .. })
            );
            if is_sleep {
                continue;
            }
            out.push(Admission {
                caller: a.agent,
                label: labels.get(a.agent).cloned().unwrap_or_default(),
                step,
                started_ns: s.started_ns,
                admitted_ns: s.admitted_ns,
                waited_ns: s.waited_ns,
                clock_read_ns: s.take.map(|t| t.now_ns),
                error: s.error.clone(),
            });
            step += 1;
        }
    }
    Ok(out)
}
