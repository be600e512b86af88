//! `ratelab recommend`: from an access log and an intent ("at most L per
//! key per I ms") to a setting of the user's own limiter, measured and
//! confirmed, with the lines to paste into its config.
//!
//! The log is cut by time: the setting is chosen on its first part and
//! confirmed on later slices it never saw ([`search::split`]). Settings
//! are decision-lab limiter objects measured with the lab's harm figures
//! ([`search::Probe::evaluate`]), alone or as a fleet (`--replicas`); each family
//! ([`nginx`], [`envoy_local`], [`envoy_ratelimit`], [`kong`], `traefik`, `governor`,
//! `x_time_rate`, `guava`, [`pingora`]) says
//! which settings it can express and how its config reads; the search
//! bisects the monotone parameter ([`search::Probe::bisect`]); `report` writes
//! `recommend.json`, `table.md`, the frontier chart and the snippet.
//!
//! Targets use `size`'s grammar ([`crate::sizing::limit::LimitTarget`]) on
//! the decision figures (`compliant_denied_pct`, `compliant_keys_denied`,
//! `excess_pct`); the default is `compliant_denied_pct<=0.01`.

pub mod deploy;
pub mod envoy_local;
pub mod envoy_ratelimit;
pub(crate) mod governor;
pub(crate) mod guava;
pub mod kong;
pub mod nginx;
pub mod pingora;
pub(crate) mod report;
pub(crate) mod scenario;
pub mod search;
pub(crate) mod slices;
pub(crate) mod traefik;
pub(crate) mod x_time_rate;

use crate::error::{Error, Result};
use crate::sizing::input::{read_trace_input, TraceInput};
use crate::sizing::limit::{LimitPolicy, LimitTarget};
use search::{Family, FamilyCtx};
use std::path::PathBuf;

/// The families `--for` takes.
pub const FAMILIES: &[&dyn Family] = &[
    &nginx::Nginx,
    &envoy_local::EnvoyLocal,
    &envoy_ratelimit::EnvoyRatelimit,
    &kong::Kong,
    &traefik::Traefik,
    &governor::Governor,
    &x_time_rate::XTimeRate,
    &guava::Guava,
    &pingora::Pingora,
];

/// Arguments of `ratelab recommend`.
#[derive(Debug, Clone, clap::Args)]
pub struct RecommendArgs {
    /// A time-stamped access log (as `size --trace` reads it).
    #[arg(long)]
    pub trace: PathBuf,
    /// How to read --trace (the options `size` and `run --trace` take).
    #[command(flatten)]
    pub read: crate::workload::trace::TraceSpec,
    /// The intent: at most this many requests per key per --interval-ms.
    #[arg(long)]
    pub limit: u64,
    /// The intent's interval, ms.
    #[arg(long)]
    pub interval_ms: u64,
    /// The limiter whose setting you write: nginx, envoy-local, envoy-ratelimit, kong, traefik, governor, x-time-rate, guava or pingora.
    #[arg(long = "for", value_name = "FAMILY")]
    pub family: String,
    /// Target, repeatable (all must hold): compliant_denied_pct<=X, compliant_keys_denied<=N, excess_pct<=X.
    #[arg(long = "target", default_value = "compliant_denied_pct<=0.01")]
    pub targets: Vec<String>,
    /// The share of the log's time span (its start) the setting is chosen on, %.
    #[arg(long, default_value_t = 50)]
    pub choose_pct: u32,
    /// Later slices of the log the pick is confirmed on.
    #[arg(long, default_value_t = 5)]
    pub slices: u32,
    /// Confidence of the bound on the pick's miss probability, %.
    #[arg(long, default_value_t = crate::sizing::guarantee::DEFAULT_CONFIDENCE_PCT)]
    pub confidence: f64,
    /// Seed (the spread of whole-second times; models that hash).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Folder for recommend.json, table.md, the chart and the snippet.
    #[arg(long, value_parser = crate::report::atomic::parse_out_path)]
    pub out: PathBuf,
    /// Worker threads (results do not depend on it).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Measure every setting on a fleet of this many replicas (the decision
    /// lab's deployment, 1 ms round trips to a shared store): each replica
    /// runs its own limiter (nginx, envoy-local, traefik, the libraries),
    /// or they share a counter (envoy-ratelimit, kong's redis policy). The
    /// targets hold for the fleet as a whole.
    #[arg(long)]
    pub replicas: Option<u64>,
    /// The balancer in front of --replicas: round_robin (default), random,
    /// least_request, ring_hash, maglev, sticky, or a deployment balancer
    /// object such as '{"type": "round_robin", "skew": 1}'.
    #[arg(long)]
    pub balancer: Option<String>,
}

/// Balancers `--balancer` names (the fleet lab's, but `from_trace`: the
/// options that read a log for `recommend` carry no replica column).
pub const BALANCERS: &[&str] = &[
    "round_robin",
    "random",
    "least_request",
    "ring_hash",
    "maglev",
    "sticky",
];

/// `--replicas` and `--balancer`, checked: the fleet, or none.
///
/// # Examples
///
/// ```
/// use ratelab::recommend::deploy;
/// assert!(deploy(None, None).unwrap().is_none());
/// let d = deploy(Some(4), Some("maglev")).unwrap().unwrap();
/// assert_eq!((d.replicas, d.balancer.as_str()), (4, Some("maglev")));
/// assert!(deploy(None, Some("maglev")).is_err());
/// assert!(deploy(Some(2), Some("from_trace")).is_err());
/// ```
pub fn deploy(replicas: Option<u64>, balancer: Option<&str>) -> Result<Option<search::Deploy>> {
    // The fleet lab's most replicas in one fleet.
    let max = 4096;
    let Some(n) = replicas else {
        return match balancer {
            None => Ok(None),
            Some(b) => Err(Error::input(format!(
                "--balancer {b}: a balancer spreads requests over replicas: give --replicas N too"
            ))),
        };
    };
    if n == 0 || n > max {
        return Err(Error::input(format!("--replicas {n}: expected 1..={max}")));
    }
    let b = balancer.unwrap_or("round_robin").trim();
    let value = if b.starts_with('{') {
        let v: serde_json::Value = serde_json::from_str(b)
            .map_err(|e| Error::input(format!("--balancer {b}: not a JSON object ({e})")))?;
        v
    } else {
        serde_json::Value::from(b)
    };
    let ty = match &value {
        serde_json::Value::String(s) => s.clone(),
        v => v["type"].as_str().unwrap_or_default().to_string(),
    };
    if ty == "from_trace" {
        return Err(Error::input(format!(
            "--balancer {b}: from_trace reads each request's replica from a scenario's trace; recommend measures the balancer you name (one of {})",
            BALANCERS.join(", ")
        )));
    }
    if !BALANCERS.contains(&ty.as_str()) {
        return Err(Error::input(format!(
            "--balancer {b}: expected one of {} (or a deployment balancer object)",
            BALANCERS.join(", ")
        )));
    }
    Ok(Some(search::Deploy {
        replicas: n,
        balancer: value,
    }))
}

/// Everything a recommendation is: the figures, the files, the verdict.
pub struct Recommendation {
    /// recommend.json.
    pub json: serde_json::Value,
    /// table.md.
    pub md: String,
    /// The terminal summary.
    pub console: String,
    /// The frontier chart.
    pub chart: Option<crate::report::Chart>,
    /// The snippet: file name and text (none without a pick).
    pub snippet: Option<(String, String)>,
    /// Why nothing was recommended (no setting met the targets).
    pub failure: Option<String>,
}

impl Recommendation {
    /// The files of the output folder, by name.
    pub fn files(&self) -> Vec<(String, Vec<u8>)> {
        let mut bytes = serde_json::to_vec_pretty(&self.json).unwrap_or_default();
        bytes.push(b'\n');
        let mut f = vec![
            ("recommend.json".to_string(), bytes),
            ("table.md".to_string(), self.md.clone().into_bytes()),
        ];
        if let Some((n, t)) = &self.snippet {
            f.push((n.clone(), t.clone().into_bytes()));
        }
        if let Some(c) = &self.chart {
            f.push(("frontier.svg".into(), c.svg.clone().into_bytes()));
            f.push(("frontier.png".into(), c.png.clone()));
        }
        f
    }
}

/// The family named by `--for`.
pub fn family(name: &str) -> Result<&'static dyn Family> {
    FAMILIES
        .iter()
        .copied()
        .find(|f| f.name() == name)
        .ok_or_else(|| {
            let known: Vec<&str> = FAMILIES.iter().map(|f| f.name()).collect();
            Error::input(format!(
                "--for {name:?}: expected one of {}",
                known.join(", ")
            ))
        })
}

/// Runs the search for parsed arguments (without writing anything).
pub fn compute(a: &RecommendArgs) -> Result<Recommendation> {
    let fam = family(&a.family)?;
    let deploy_checked = deploy(a.replicas, a.balancer.as_deref())?;
    if a.limit == 0 || a.limit > u64::from(u32::MAX) {
        return Err(Error::input(format!(
            "--limit {}: expected 1..=4294967295",
            a.limit
        )));
    }
    if a.interval_ms == 0 || a.interval_ms > 86_400_000 {
        return Err(Error::input(format!(
            "--interval-ms {}: expected 1..=86400000",
            a.interval_ms
        )));
    }
    if !(a.confidence.is_finite() && a.confidence > 0.0 && a.confidence < 100.0) {
        return Err(Error::input(format!(
            "--confidence {}: expected a % strictly between 0 and 100, e.g. 95",
            a.confidence
        )));
    }
    crate::sizing::refuse_repeated_targets(&a.targets)?;
    let targets = a
        .targets
        .iter()
        .map(|t| {
            let t = LimitTarget::parse_in(t, Some(a.limit))?;
            if !t.metric.is_decision() {
                return Err(Error::input(format!(
                    "--target {:?}: expected a decision target (compliant_denied_pct, compliant_keys_denied or excess_pct): a limiter's setting is judged by its decisions",
                    t.text
                )));
            }
            Ok(t)
        })
        .collect::<Result<Vec<_>>>()?;
    let opts = a.read.arrival_options("recommend", a.seed)?;
    let TraceInput::Timed(trace) = read_trace_input(&a.trace, &opts)? else {
        return Err(Error::input(format!(
            "--trace {}: a key,count table has no times; a recommendation replays a time-stamped log",
            a.trace.display()
        )));
    };
    let policy = LimitPolicy {
        limit: a.limit,
        interval_ms: a.interval_ms,
    };
    if let Some(d) = &deploy_checked {
        search::check_deploy(d, policy)?;
    }
    let split = search::split(&trace, policy, a.choose_pct, a.slices)?;
    let ctx = FamilyCtx {
        policy,
        keys: trace.names.len() as u64,
        key_expr: a.read.key.clone(),
        deploy: deploy_checked,
    };
    let probe = search::Probe {
        fam,
        ctx: &ctx,
        targets: &targets,
        seed: a.seed,
    };
    let evals = match fam.searched(&split.choose, &ctx, &targets, a.seed) {
        Some(settings) => probe.search_settings(&settings?, &split.choose)?,
        None => probe.search_lines(&fam.lines(&ctx), &split.choose)?,
    };
    let ranked = search::ranked(&evals, |l| fam.simplicity(l));
    let (picked, rejected) =
        search::choose(&evals, &ranked, |l| probe.confirm(&split, l, a.confidence))?;
    let (pick, held_out) = match picked {
        Some((i, h)) => (Some(i), Some(h)),
        None => (None, None),
    };
    let source = if trace.note.is_empty() {
        a.trace.display().to_string()
    } else {
        format!("{} ({})", a.trace.display(), trace.note)
    };
    Ok(report::render(&report::Inputs {
        family: fam,
        ctx: &ctx,
        source: &source,
        requests: trace.len() as u64,
        targets: &targets,
        split: &split,
        evals: &evals,
        pick,
        held_out: held_out.as_ref(),
        rejected: &rejected,
        seed: a.seed,
    }))
}

/// `ratelab recommend` without the printing: computes and writes the
/// folder; the caller prints [`Recommendation::console`] and exits 0 with
/// a pick, 1 without ([`Recommendation::failure`]); bad input or a log that
/// cannot support a recommendation is an input error (exit 2).
pub fn run(a: &RecommendArgs) -> Result<Recommendation> {
    // A file in the way is found before the search, not after it.
    crate::report::atomic::check_place(&a.out, crate::report::atomic::Place::Folder)?;
    let r = compute(a)?;
    // `write_files` makes the folder, and removes it again if a file fails.
    crate::report::atomic::write_files(&a.out, &r.files())?;
    Ok(r)
}
