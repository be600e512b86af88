//! The search behind `ratelab recommend`: the log split by time into the
//! part the setting is chosen on and the later slices it is confirmed on,
//! every setting measured as the decision lab measures a `limiters` entry,
//! and the monotone parameter of each family bisected.
//!
//! A setting is a decision-lab limiter object (`{"model":
//! "nginx_limit_req", "rate_r_s": 10, "burst": 9, ...}`): it is built by the
//! lab's own model table ([`crate::lab::decision::MODELS`]) and replayed
//! over the part with the lab's harm tally
//! ([`crate::sizing::limit::replay_admit`], the exact sliding log's
//! classes): the figures are the `harm` columns a `decision_accuracy`
//! scenario with that `limiters` entry reports on the same requests.
//!
//! A family offers *lines*: settings that differ only in one monotone
//! parameter (nginx: one rate, any burst). Along a line, a larger value
//! denies fewer compliant requests and lets more excess through, so the
//! smallest value meeting the ceiling targets on compliant keys is the
//! line's least-excess setting, found by bisection. The pick is the
//! least-excess setting over every line that meets every target (ties:
//! memory, then the simpler setting).

use crate::error::{Error, Result};
use crate::lab::decision::{self, param_grid, Policy, Setup};
use crate::sizing::guarantee::upper_bound;
use crate::sizing::limit::{replay_admit, Figures, LimitMetric, LimitPolicy, LimitTarget};
use rayon::prelude::*;
use serde_json::{Map, Value};

pub use super::deploy::*;
pub use super::slices::*;

/// One setting measured on one part.
#[derive(Debug, Clone)]
pub struct Eval {
    /// The setting, as a decision-lab `limiters` entry.
    pub limiter: Value,
    /// The lab's harm figures.
    pub figures: Figures,
    /// The lab's memory figure for the part's keys.
    pub memory_bytes: u64,
    /// Every target holds.
    pub meets: bool,
    /// The decision lab's `deployment` the setting ran as, when it ran as
    /// a fleet (`--replicas`, or a family whose counter is shared).
    pub deployment: Option<Value>,
    /// The policy the fleet's store-backed strategy counts with, when it is
    /// the setting's own (Kong's `minute: 600`), not the intent's: the
    /// decision lab runs that deployment with it as the scenario's policy.
    pub enforced: Option<LimitPolicy>,
    /// Requests the fleet admitted (fleets only: the figure the decision
    /// lab's `allowed` column shows whatever policy its scenario states).
    pub admitted: Option<u64>,
}

/// A target's value in `f`.
pub fn value(t: &LimitTarget, f: &Figures) -> f64 {
    match t.metric {
        LimitMetric::CompliantDeniedPct => f.compliant_denied_pct,
        LimitMetric::CompliantKeysDenied => f.compliant_keys_hit as f64,
        LimitMetric::ExcessPct => f.limited_excess_pct,
        LimitMetric::Error(_) => f64::NAN,
    }
}

/// Whether every target on compliant keys (the ones a larger monotone
/// parameter can only help) holds.
fn meets_ceilings(targets: &[LimitTarget], f: &Figures) -> bool {
    targets
        .iter()
        .filter(|t| t.metric != LimitMetric::ExcessPct)
        .all(|t| t.holds(value(t, f)))
}

/// What every measurement of one search shares: the family, the user's
/// setup, the targets and the seed.
#[derive(Clone, Copy)]
pub struct Probe<'a> {
    /// The family whose settings are measured.
    pub fam: &'a dyn Family,
    /// The user's setup.
    pub ctx: &'a FamilyCtx,
    /// The targets a setting must meet.
    pub targets: &'a [LimitTarget],
    /// The lab's seed.
    pub seed: u64,
}

impl Probe<'_> {
    /// Measures the setting `limiter` of `fam` on `part` as the decision lab
    /// would: as a `limiters` entry, or as the fleet its [`Family::lab_form`]
    /// says.
    pub fn evaluate(&self, part: &Part, limiter: &Value) -> Result<Eval> {
        let Probe {
            fam,
            ctx,
            targets,
            seed,
        } = *self;
        let policy = ctx.policy;
        let (figures, memory_bytes, fleet) = match fam.lab_form(limiter, ctx)? {
            LabForm::Limiter(obj) => {
                let (f, m) = evaluate_limiter(part, policy, &obj, seed)?;
                (f, m, None)
            }
            LabForm::Fleet { strategy, enforced } => {
                let deploy = ctx.deploy.clone().unwrap_or(Deploy {
                    replicas: 1,
                    balancer: Value::from("round_robin"),
                });
                let (decided, memory) =
                    run_fleet(part, policy, &deploy, &strategy, enforced, seed)?;
                let admitted = decided.iter().filter(|&&a| a).count() as u64;
                let mut d = Decided(decided.into_iter());
                let f = replay_admit(&part.trace, &part.classes, policy, &mut d)?;
                (
                    f,
                    memory,
                    Some((deployment_json(&deploy, &strategy), enforced, admitted)),
                )
            }
        };
        let meets = targets.iter().all(|t| t.holds(value(t, &figures)));
        let (deployment, enforced, admitted) = match fleet {
            Some((d, e, a)) => (Some(d), e, Some(a)),
            None => (None, None, None),
        };
        Ok(Eval {
            limiter: limiter.clone(),
            figures,
            memory_bytes,
            meets,
            deployment,
            enforced,
            admitted,
        })
    }
}

/// The lab's setup for building one candidate under `policy` (recommend
/// builds its candidates one at a time, outside a scenario).
pub fn setup(policy: LimitPolicy, seed: u64) -> Setup {
    let (limit, interval_ms) = (policy.limit, policy.interval_ms);
    Setup::plain(Policy { limit, interval_ms }, seed)
}

/// Measures the decision-lab `limiters` entry `limiter` on `part`: its
/// harm figures and memory.
pub fn evaluate_limiter(
    part: &Part,
    policy: LimitPolicy,
    limiter: &Value,
    seed: u64,
) -> Result<(Figures, u64)> {
    let obj = limiter
        .as_object()
        .ok_or_else(|| Error::internal("a setting that is not an object"))?;
    let model = obj.get("model").and_then(Value::as_str).unwrap_or_default();
    let row =
        decision::row(model).ok_or_else(|| Error::internal(format!("no model row {model}")))?;
    let args = param_grid::expand(obj, row.params, "limiter")
        .map_err(|e| Error::internal(format!("{}: {}", e.field, e.message)))?;
    let [args] = args.as_slice() else {
        return Err(Error::internal("a setting with a list"));
    };
    let setup = setup(policy, seed);
    setup.origin.set(part.trace.t0);
    let mut cand = decision::build(&setup, row, args)?;
    let figures = replay_admit(&part.trace, &part.classes, policy, cand.limiter.as_mut())?;
    Ok((figures, cand.limiter.memory_bytes(part.keys)))
}

/// Settings that differ in one monotone parameter: `base` with `axis` set
/// to a value in `lo..=hi`; a larger value denies fewer compliant requests.
#[derive(Debug, Clone)]
pub struct Line {
    /// The fixed parameters (and `model`).
    pub base: Map<String, Value>,
    /// The monotone parameter.
    pub axis: &'static str,
    /// Its smallest value tried.
    pub lo: u64,
    /// Its largest value tried.
    pub hi: u64,
}

impl Line {
    /// The setting at `v`.
    pub fn at(&self, v: u64) -> Value {
        let mut m = self.base.clone();
        m.insert(self.axis.to_string(), v.into());
        Value::Object(m)
    }
}

impl Probe<'_> {
    /// Bisects one line on the choosing part: every setting evaluated, in the
    /// order evaluated.
    pub fn bisect(&self, line: &Line, part: &Part) -> Result<Vec<Eval>> {
        let targets = self.targets;
        let ev = |v: u64| self.evaluate(part, &line.at(v));
        let mut out = Vec::new();
        let top = ev(line.hi)?;
        let top_ok = meets_ceilings(targets, &top.figures);
        out.push(top);
        if !top_ok || line.lo >= line.hi {
            // Nothing on this line meets the ceilings (or it is one point):
            // its cheapest end still shows on the frontier.
            if line.lo < line.hi {
                out.push(ev(line.lo)?);
            }
            return Ok(out);
        }
        let bottom = ev(line.lo)?;
        let bottom_ok = meets_ceilings(targets, &bottom.figures);
        out.push(bottom);
        if bottom_ok {
            return Ok(out);
        }
        // Invariant: lo fails, hi meets.
        let (mut lo, mut hi) = (line.lo, line.hi);
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            let e = ev(mid)?;
            if meets_ceilings(targets, &e.figures) {
                hi = mid;
            } else {
                lo = mid;
            }
            out.push(e);
        }
        Ok(out)
    }
}

/// The held-out confirmation of a pick.
#[derive(Debug, Clone)]
pub struct HeldOut {
    /// Each slice's measurement.
    pub slices: Vec<(f64, f64, Eval)>,
    /// Slices on which every target holds.
    pub holds_on: u32,
    /// The one-sided Clopper–Pearson upper bound on the share of such
    /// slices on which the pick misses a target, at `confidence_pct`.
    pub miss_bound: f64,
    /// The bound's confidence, %.
    pub confidence_pct: f64,
}

impl Probe<'_> {
    /// Measures `pick` on every held-out slice.
    pub fn confirm(&self, split: &Split, pick: &Value, confidence_pct: f64) -> Result<HeldOut> {
        let slices: Vec<(f64, f64, Eval)> = split
            .held_out
            .par_iter()
            .map(|p| self.evaluate(p, pick).map(|e| (p.start_s, p.end_s, e)))
            .collect::<Result<_>>()?;
        let n = slices.len() as u32;
        let holds_on = slices.iter().filter(|s| s.2.meets).count() as u32;
        Ok(HeldOut {
            miss_bound: upper_bound(n - holds_on, n, confidence_pct),
            slices,
            holds_on,
            confidence_pct,
        })
    }

    /// Every line bisected (in parallel; results in line order), duplicates
    /// dropped.
    pub fn search_lines(&self, lines: &[Line], part: &Part) -> Result<Vec<Eval>> {
        let per_line: Vec<Vec<Eval>> = lines
            .par_iter()
            .map(|l| self.bisect(l, part))
            .collect::<Result<_>>()?;
        let mut seen = std::collections::HashSet::new();
        Ok(per_line
            .into_iter()
            .flatten()
            .filter(|e| seen.insert(e.limiter.to_string()))
            .collect())
    }

    /// Every setting of `settings` measured on `part` (in parallel; results
    /// in order), duplicates dropped.
    pub fn search_settings(&self, settings: &[Value], part: &Part) -> Result<Vec<Eval>> {
        let mut seen = std::collections::HashSet::new();
        let unique: Vec<&Value> = settings
            .iter()
            .filter(|s| seen.insert(s.to_string()))
            .collect();
        unique.par_iter().map(|s| self.evaluate(part, s)).collect()
    }
}

/// The settings meeting every target, best first: the least limited
/// excess, then the least memory, then the least `simpler` key, then the
/// setting's text (a total order: the same at any thread count).
pub fn ranked<K: Ord>(evals: &[Eval], simpler: impl Fn(&Value) -> K) -> Vec<usize> {
    let mut out: Vec<usize> = (0..evals.len()).filter(|&i| evals[i].meets).collect();
    out.sort_by(|&a, &b| {
        let (x, y) = (&evals[a], &evals[b]);
        x.figures
            .limited_excess_pct
            .total_cmp(&y.figures.limited_excess_pct)
            .then(x.memory_bytes.cmp(&y.memory_bytes))
            .then_with(|| simpler(&x.limiter).cmp(&simpler(&y.limiter)))
            .then_with(|| x.limiter.to_string().cmp(&y.limiter.to_string()))
    });
    out
}

/// What [`choose`] returns: the pick (its index and confirmation), and
/// the settings rejected on the way (index, slices held on).
pub type Chosen = (Option<(usize, HeldOut)>, Vec<(usize, u32)>);

/// Most settings confirmed on the held-out slices before the best tried
/// is taken.
pub const MAX_CONFIRMATIONS: usize = 16;

/// The pick and its confirmation: the best-ranked setting that meets every
/// target on every held-out slice, trying at most [`MAX_CONFIRMATIONS`] in
/// rank order (as `size` drops a shape that fails on fresh seeds and tries
/// the next); when none holds everywhere, the one holding on the most
/// slices (the earlier on a tie). Also the settings rejected on the way.
pub fn choose(
    evals: &[Eval],
    ranked: &[usize],
    confirm_one: impl Fn(&Value) -> Result<HeldOut>,
) -> Result<Chosen> {
    let mut tried: Vec<(usize, HeldOut)> = Vec::new();
    for &i in ranked.iter().take(MAX_CONFIRMATIONS) {
        let h = confirm_one(&evals[i].limiter)?;
        let all = h.holds_on as usize == h.slices.len();
        tried.push((i, h));
        if all {
            break;
        }
    }
    let best = tried
        .iter()
        .enumerate()
        .max_by(|(a, x), (b, y)| x.1.holds_on.cmp(&y.1.holds_on).then(b.cmp(a)))
        .map(|(k, _)| k);
    let rejected = tried
        .iter()
        .enumerate()
        .filter(|(k, _)| Some(*k) != best)
        .map(|(_, (i, h))| (*i, h.holds_on))
        .collect();
    Ok((best.map(|k| tried.swap_remove(k)), rejected))
}

/// The settings no other one beats on compliant requests denied, limited
/// excess and memory at once (ties kept once), by increasing excess.
///
/// # Examples
///
/// ```
/// use ratelab::recommend::search::{frontier, Eval};
/// use ratelab::sizing::limit::Figures;
/// let e = |cd: f64, ex: f64| Eval {
///     limiter: serde_json::json!({"cd": cd, "ex": ex}),
///     figures: Figures { compliant_denied: 0, compliant_keys_hit: 0, compliant_denied_pct: cd,
///         limited_excess: 0, limited_excess_pct: ex, worst_window: None, complete: true },
///     memory_bytes: 10, meets: true, deployment: None, enforced: None, admitted: None };
/// let all = [e(1.0, 0.0), e(0.0, 5.0), e(2.0, 1.0)]; // the last is beaten by the first
/// assert_eq!(frontier(&all), vec![0, 1]);
/// ```
pub fn frontier(evals: &[Eval]) -> Vec<usize> {
    let key = |e: &Eval| {
        (
            e.figures.compliant_denied_pct,
            e.figures.limited_excess_pct,
            e.memory_bytes as f64,
        )
    };
    let mut out: Vec<usize> = (0..evals.len())
        .filter(|&i| {
            let a = key(&evals[i]);
            !evals.iter().enumerate().any(|(j, e)| {
                let b = key(e);
                let le = b.0 <= a.0 && b.1 <= a.1 && b.2 <= a.2;
                let lt = b.0 < a.0 || b.1 < a.1 || b.2 < a.2;
                // An equal one earlier in the list stands for both.
                le && (lt || j < i)
            })
        })
        .collect();
    out.sort_by(|&a, &b| {
        evals[a]
            .figures
            .limited_excess_pct
            .total_cmp(&evals[b].figures.limited_excess_pct)
            .then(a.cmp(&b))
    });
    out
}

/// What the search and the snippet writer know about the user's setup.
#[derive(Debug, Clone)]
pub struct FamilyCtx {
    /// The intent: at most `limit` per key per interval.
    pub policy: LimitPolicy,
    /// Distinct keys in the whole log (sizes a zone or a map).
    pub keys: u64,
    /// The log's key expression (`--key`), when it has one.
    pub key_expr: Option<String>,
    /// `--replicas N --balancer B`, when given.
    pub deploy: Option<Deploy>,
}

#[cfg(test)]
impl FamilyCtx {
    /// The families' unit tests' context: at most `limit` per key per
    /// `interval_ms`, ten keys, the key expression `key`, no fleet.
    pub(crate) fn for_test(limit: u64, interval_ms: u64, key: Option<&str>) -> Self {
        FamilyCtx {
            policy: LimitPolicy { limit, interval_ms },
            keys: 10,
            key_expr: key.map(str::to_string),
            deploy: None,
        }
    }
}

/// A product or library whose setting the user writes: its parameter space
/// (as [`Line`]s of decision-lab limiter objects), what "simpler" means
/// among equals, and its own config syntax.
pub trait Family: Sync {
    /// The `--for` name.
    fn name(&self) -> &'static str;
    /// The lines searched.
    fn lines(&self, ctx: &FamilyCtx) -> Vec<Line>;
    /// Orders equally good settings: smaller is simpler.
    fn simplicity(&self, limiter: &Value) -> (u64, u64);
    /// The snippet's file name (`nginx.conf`).
    fn snippet_file(&self) -> &'static str;
    /// The ready-to-paste config of `pick`, in the product's syntax;
    /// `header` is a comment block (lines without the comment mark).
    fn snippet(&self, pick: &Value, ctx: &FamilyCtx, header: &[String]) -> String;
    /// How the snippet is checked (for the report and the guide).
    fn checked_by(&self) -> &'static str;
    /// The setting's long-run rate, requests per second.
    fn rate_per_s(&self, limiter: &Value) -> f64;
    /// Settings found by the family's own search instead of bisected
    /// [`Family::lines`] (pingora: `size`'s sketch search); `None`: the
    /// lines.
    fn searched(
        &self,
        _part: &Part,
        _ctx: &FamilyCtx,
        _targets: &[LimitTarget],
        _seed: u64,
    ) -> Option<Result<Vec<Value>>> {
        None
    }
    /// How the decision lab runs `setting`. By default: the setting is a
    /// `limiters` entry; with `--replicas`, every replica runs its own
    /// copy with the full setting (`"strategy": "local"`), as nginx,
    /// Envoy's local filter and the in-process libraries do.
    fn lab_form(&self, setting: &Value, ctx: &FamilyCtx) -> Result<LabForm> {
        Ok(match &ctx.deploy {
            None => LabForm::Limiter(setting.clone()),
            Some(_) => {
                let mut m = Map::new();
                m.insert("strategy".into(), Value::from("local"));
                if let Some(o) = setting.as_object() {
                    m.extend(o.clone());
                }
                LabForm::Fleet {
                    strategy: Value::Object(m),
                    enforced: None,
                }
            }
        })
    }
}

/// Rates tried by the families whose rate is a free number, as factors of
/// the intent's rate.
pub const RATE_FACTORS: [f64; 8] = [0.5, 0.75, 0.9, 1.0, 1.1, 1.25, 1.5, 2.0];

/// The factors of the intent's rate a family's ladder tries:
/// [`RATE_FACTORS`], and with `--replicas N` (N ≥ 2) behind a balancer
/// that spreads a client's requests (not `ring_hash` or `maglev`) the same
/// divided by N first: each replica of a per-instance limiter then sees
/// only its share of a client's requests, and a stricter per-replica rate
/// may serve the fleet's intent.
///
/// # Examples
///
/// ```
/// use ratelab::recommend::search::{rate_factors, Deploy, FamilyCtx, RATE_FACTORS};
/// use ratelab::sizing::limit::LimitPolicy;
/// let mut ctx = FamilyCtx { policy: LimitPolicy { limit: 10, interval_ms: 1000 }, keys: 1,
///                           key_expr: None, deploy: None };
/// assert_eq!(rate_factors(&ctx), RATE_FACTORS.to_vec());
/// ctx.deploy = Some(Deploy { replicas: 4, balancer: "round_robin".into() });
/// let f = rate_factors(&ctx);
/// assert_eq!((f[0], f.len()), (0.125, 15)); // 0.5 / 4, ..., 2.0 / 4 (= 0.5, once), then the rest
/// ctx.deploy = Some(Deploy { replicas: 4, balancer: "maglev".into() });
/// assert_eq!(rate_factors(&ctx), RATE_FACTORS.to_vec());
/// ```
pub fn rate_factors(ctx: &FamilyCtx) -> Vec<f64> {
    // Behind a key hash each client meets one replica: nothing to divide.
    let n = ctx
        .deploy
        .as_ref()
        .filter(|d| {
            let ty = d.balancer.as_str().or(d.balancer["type"].as_str());
            !matches!(ty, Some("ring_hash" | "maglev"))
        })
        .map_or(1, |d| d.replicas);
    let mut out: Vec<f64> = Vec::new();
    if n >= 2 {
        out.extend(RATE_FACTORS.iter().map(|f| f / n as f64));
    }
    for f in RATE_FACTORS {
        if !out.contains(&f) {
            out.push(f);
        }
    }
    out
}

/// The intent's rate times each of [`RATE_FACTORS`], per second, rounded to
/// a millionth (so the settings read as typed).
///
/// # Examples
///
/// ```
/// use ratelab::recommend::search::rate_ladder;
/// use ratelab::sizing::limit::LimitPolicy;
/// let r = rate_ladder(LimitPolicy { limit: 10, interval_ms: 1000 });
/// assert_eq!(r[0], 5.0);
/// assert_eq!(r[4], 11.0);
/// ```
pub fn rate_ladder(p: LimitPolicy) -> Vec<f64> {
    let per_s = p.limit as f64 * 1000.0 / p.interval_ms as f64;
    RATE_FACTORS
        .iter()
        .map(|f| libm::round(per_s * f * 1e6) / 1e6)
        .collect()
}

/// A snippet's opening comment block: each line of `header` after the
/// comment mark `mark` (`#`, `//`) and a space.
pub(crate) fn comments(header: &[String], mark: &str) -> String {
    header.iter().map(|h| format!("{mark} {h}\n")).collect()
}

/// A setting of a rate per second and a burst, simpler first: a whole
/// rate, then the smaller burst.
pub(crate) fn whole_rate_then_burst(l: &Value) -> (u64, u64) {
    let whole = l["rate_per_s"].as_f64().is_some_and(|r| r.fract() == 0.0);
    (u64::from(!whole), l["burst"].as_u64().unwrap_or(0))
}

/// The largest burst (or bucket) a line tries by default: four times the
/// limit, at least 8, at most `u32::MAX`.
pub(crate) fn burst_top(p: LimitPolicy) -> u64 {
    p.limit.saturating_mul(4).clamp(8, u64::from(u32::MAX))
}

/// One line per factor of [`rate_factors`], in order: `base(f)` the line's
/// fixed parameters (`None`: no line at that factor), a base already
/// lined up skipped, `axis` bisected over `lo..=hi`.
pub(crate) fn factor_lines(
    ctx: &FamilyCtx,
    axis: &'static str,
    (lo, hi): (u64, u64),
    base: impl Fn(f64) -> Option<Map<String, Value>>,
) -> Vec<Line> {
    let mut out: Vec<Line> = Vec::new();
    for f in rate_factors(ctx) {
        let Some(base) = base(f) else { continue };
        if !out.iter().any(|l| l.base == base) {
            out.push(Line { base, axis, lo, hi });
        }
    }
    out
}

/// One line per rate of the ladder ([`rate_factors`] of the intent's rate,
/// rounded to a millionth): `model` with `rate_field` set to the rate,
/// `axis` bisected over `lo..=max(4 × limit, 8)`.
pub fn rate_lines(
    ctx: &FamilyCtx,
    model: &str,
    rate_field: &str,
    axis: &'static str,
    lo: u64,
) -> Vec<Line> {
    let p = ctx.policy;
    let per_s = p.limit as f64 * 1000.0 / p.interval_ms as f64;
    factor_lines(ctx, axis, (lo, burst_top(p)), |f| {
        let r = libm::round(per_s * f * 1e6) / 1e6;
        (r > 0.0).then(|| {
            let mut base = Map::new();
            base.insert("model".into(), Value::from(model));
            base.insert(rate_field.into(), Value::from(r));
            base
        })
    })
}

/// A number as a program literal: `10` for a whole one, else `7.5`.
pub fn num(v: &Value) -> String {
    match v.as_f64() {
        Some(x) if x.fract() == 0.0 && x.abs() < 1e15 => format!("{}", x as i64),
        Some(x) => format!("{x}"),
        None => v.to_string(),
    }
}
