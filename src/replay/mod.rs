//! `ratelab replay`: one call per CSV row through one model, results as CSV.
//! This is the interface conformance tests use to compare ratelab with the
//! real libraries call for call, so its formats are a contract.

pub(crate) mod csvio;
pub(crate) mod estimator;
pub(crate) mod go_rate_fns;
pub(crate) mod leaky_bucket;
pub(crate) mod limiter;
pub(crate) mod rate;
pub(crate) mod token_bucket;

use crate::error::Result;
use clap::ValueEnum;
use std::path::PathBuf;

/// Which model to replay.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Algo {
    /// pingora-limits `Rate`: rows `t_ms,key,op,n`.
    Rate,
    /// golang.org/x/time/rate `Limiter`: rows `t_ns,n,op[,deadline_ns]`.
    TokenBucket,
    /// uber-go/ratelimit `Take`: rows `t_ns`.
    LeakyBucket,
    /// Any decision-lab candidate (`--limiter NAME`): rows `t_ns,key[,weight]`.
    Limiter,
    /// pingora-limits `Estimator`: rows `op,key,value` (incr, decr, get, reset).
    Estimator,
    /// pingora-limits `Inflight`: rows `op,key,value` (incr, guard_incr, get, drop).
    Inflight,
    /// golang.org/x/time/rate `Every(interval)`: rows `interval_ns`.
    Every,
    /// golang.org/x/time/rate `Sometimes{First, Every, Interval}.Do`: rows `t_ns`.
    Sometimes,
}

/// Arguments of `ratelab replay` (each algorithm checks the ones it needs).
#[derive(Debug, Clone, clap::Args)]
pub struct ReplayArgs {
    /// The model.
    #[arg(long, value_enum)]
    pub algo: Algo,
    /// Input CSV (see the algorithm's format above).
    #[arg(long)]
    pub trace: PathBuf,
    /// Output CSV: the input rows plus the result columns (written atomically).
    #[arg(long, value_parser = crate::report::atomic::parse_out_path)]
    pub out: PathBuf,
    /// limiter: a decision-lab candidate: its name in the lab's table (e.g. 'governor GCRA per key', 'pingora Rate docs 4x1024') or a limiters entry as JSON ('{"model": "nginx_limit_req", "burst": 20}').
    #[arg(long)]
    pub limiter: Option<String>,
    /// limiter: allow a `--limiter` entry that runs a command (`exec`); also RATELAB_ALLOW_EXEC=1.
    #[arg(long)]
    pub allow_exec: bool,
    /// rate, limiter: the window length in milliseconds.
    #[arg(long)]
    pub interval_ms: Option<u64>,
    /// rate, limiter: sketch rows (default 4).
    #[arg(long)]
    pub hashes: Option<u64>,
    /// rate, limiter: sketch slots per row (default 1024).
    #[arg(long)]
    pub slots: Option<u64>,
    /// rate: `exact` (one counter per key: no collisions), `xxh3` (portable, default) or `ahash`.
    #[arg(long)]
    pub hasher: Option<String>,
    /// rate: `faithful` (default, bugs included) or `fixed`.
    #[arg(long)]
    pub flavor: Option<String>,
    /// rate: which build's panics to reproduce, `release` (default) or `debug`.
    #[arg(long)]
    pub build: Option<String>,
    /// rate, estimator, inflight, limiter: seed for the sketch's hash rows (and a
    /// limiter's spread of whole-second times; default 1).
    #[arg(long)]
    pub seed: Option<u64>,
    /// token-bucket: events per second, or `inf`; limiter: requests per key per --interval-ms.
    #[arg(long, allow_negative_numbers = true)]
    pub limit: Option<String>,
    /// token-bucket: bucket depth.
    #[arg(long, allow_negative_numbers = true)]
    pub burst: Option<i64>,
    /// leaky-bucket: calls per `--per-ns`.
    #[arg(long, allow_negative_numbers = true)]
    pub rate: Option<i64>,
    /// leaky-bucket: the period in ns (default 1 s).
    #[arg(long, allow_negative_numbers = true)]
    pub per_ns: Option<i64>,
    /// leaky-bucket, limiter (the uber-go candidate): slack in calls (default 10; 0 = WithoutSlack).
    #[arg(long, allow_negative_numbers = true)]
    pub slack: Option<i64>,
    /// leaky-bucket: `atomic`, `atomic-int64` (what New picks today, default) or `mutex`.
    #[arg(long)]
    pub variant: Option<String>,
    /// token-bucket: golang.org/x/time behaviour, a tag v0.3.0 ... v0.13.0 (default: latest = v0.13.0).
    #[arg(long)]
    pub go_version: Option<String>,
    /// leaky-bucket: Unix nanoseconds of t_ns = 0 (default 0: a clock.NewMock() clock, where the atomic-int64 "never called" sentinel bites).
    #[arg(long, allow_negative_numbers = true)]
    pub unix_origin_ns: Option<i64>,
    /// token-bucket: --limit and set_limit args are float64 bit patterns (16 hex digits), any value.
    #[arg(long)]
    pub float_bits: bool,
    /// token-bucket / leaky-bucket: add the golden-file columns (tokens_bits,err,state / sleep_ns).
    #[arg(long)]
    pub internals: bool,
    /// token-bucket: add `act_ns` (a reservation's timeToAct; when a wait returns).
    #[arg(long)]
    pub act: bool,
    /// leaky-bucket: `ratelimit.NewUnlimited()` (Take never blocks).
    #[arg(long)]
    pub unlimited: bool,
    /// sometimes: `First` (the first N calls run).
    #[arg(long, allow_negative_numbers = true)]
    pub first: Option<i64>,
    /// sometimes: `Every` (every Nth call runs).
    #[arg(long, allow_negative_numbers = true)]
    pub every: Option<i64>,
    /// sometimes: `Interval` in ns (runs when it elapsed since the last run).
    #[arg(long, allow_negative_numbers = true)]
    pub interval_ns: Option<i64>,
    /// token-bucket / leaky-bucket: accept t_ns going backwards (a clock stepped back; Go accepts it). Default: an error.
    #[arg(long)]
    pub unsorted: bool,
    /// limiter: how --trace is read, as `size` and the decision lab read a trace: any
    /// --format (the formats table's), --columns, --time-unit, --sort-window-ms,
    /// --skip-late, ... (output t_ns since the first request,key,weight,allowed,delay_ns).
    #[command(flatten)]
    pub read: crate::workload::trace::TraceSpec,
}

impl ReplayArgs {
    /// `--seed`, 1 when not given.
    pub fn seed(&self) -> u64 {
        self.seed.unwrap_or(1)
    }
}

/// Runs a replay.
pub fn run(args: &ReplayArgs) -> Result<()> {
    crate::report::atomic::refuse_output_over_input(&args.out, "--out", &args.trace, "--trace")?;
    match args.algo {
        Algo::Rate => rate::run(args),
        Algo::TokenBucket => token_bucket::run(args),
        Algo::LeakyBucket => leaky_bucket::run(args),
        Algo::Limiter => limiter::run(args),
        Algo::Estimator => estimator::run_estimator(args),
        Algo::Inflight => estimator::run_inflight(args),
        Algo::Every => go_rate_fns::run_every(args),
        Algo::Sometimes => go_rate_fns::run_sometimes(args),
    }
}

/// Fails on the first option given that `--algo {algo}` does not take
/// (`takes`), so that a setting is never silently ignored.
fn reject_unused(args: &ReplayArgs, algo: &str, takes: &[&str]) -> Result<()> {
    let given = [
        ("--limit", args.limit.is_some()),
        ("--burst", args.burst.is_some()),
        ("--go-version", args.go_version.is_some()),
        ("--float-bits", args.float_bits),
        ("--rate", args.rate.is_some()),
        ("--per-ns", args.per_ns.is_some()),
        ("--slack", args.slack.is_some()),
        ("--variant", args.variant.is_some()),
        ("--unix-origin-ns", args.unix_origin_ns.is_some()),
        ("--interval-ms", args.interval_ms.is_some()),
        ("--hashes", args.hashes.is_some()),
        ("--slots", args.slots.is_some()),
        ("--hasher", args.hasher.is_some()),
        ("--flavor", args.flavor.is_some()),
        ("--build", args.build.is_some()),
        ("--limiter", args.limiter.is_some()),
        ("--allow-exec", args.allow_exec),
        ("--act", args.act),
        ("--unlimited", args.unlimited),
        ("--first", args.first.is_some()),
        ("--every", args.every.is_some()),
        ("--interval-ns", args.interval_ns.is_some()),
        ("--internals", args.internals),
        ("--unsorted", args.unsorted),
        ("--seed", args.seed.is_some()),
    ];
    let read = args.read.given();
    match given
        .iter()
        .copied()
        .chain(read.iter().map(|f| (*f, true)))
        .find(|(name, set)| *set && !takes.contains(name))
    {
        Some((name, _)) => Err(crate::error::Error::input(format!(
            "{name} does not apply to --algo {algo} (it takes {})",
            takes.join(", ")
        ))),
        None => Ok(()),
    }
}
