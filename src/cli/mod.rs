//! The command line: argument definitions (clap derive) and one function per
//! command. `main.rs` only calls [`main_with_args`] and exits with its code.

/// `println!` that never panics: a closed stdout (`ratelab check | head
/// -c 10`) loses the rest of the output, not the exit code.
macro_rules! outln {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout().lock(), $($t)*);
    }};
}

/// `print!` that never panics (see `outln!`).
macro_rules! out {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let mut o = std::io::stdout().lock();
        let _ = write!(o, $($t)*);
        let _ = o.flush();
    }};
}

/// `eprintln!` that never panics: a closed stderr loses the message, not
/// the exit code.
macro_rules! errln {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr().lock(), $($t)*);
    }};
}

pub mod check;
pub mod run;
pub mod run_trace;

pub mod size;

use crate::error::{Error, Result};
use clap::{Parser, Subcommand};
use std::path::PathBuf;

const ABOUT: &str = "Replay workloads through faithful models of rate limiters and count-min sketches on a virtual clock, and measure how wrong they are.";

const LONG_ABOUT: &str = "\
ratelab replays a workload (harmonic or Zipf counts, bursty traffic, an explicit schedule, or your own trace) through faithful models of real rate-limiting code - pingora-limits' Estimator, Rate and Inflight, tower's RateLimit, uber-go/ratelimit, golang.org/x/time/rate, governor, nginx limit_req, Envoy's local rate limit, Guava's RateLimiter, Cloudflare's sliding-window counter, Redis fixed windows, a GCRA, and your own limiter or sketch in any language (exec) - on a deterministic virtual clock, compares every answer with an exact oracle, and writes tables, charts and a machine-readable report.

Same scenario + seed gives byte-identical reports on any machine and any thread count.";

const EXAMPLES: &str = "\
Examples:
  ratelab run                                    the tour: which limiter for a flash crowd (built in)
  ratelab run --trace access.log --format combined --limit 100 --interval-ms 1000
                                                 your own log through every limiter model
  ratelab list                                   what scenarios and kinds exist
  ratelab list --models                          every limiter model, its parameters and defaults
  ratelab reproduce                              run every scenario in scenarios/ into reports/
  ratelab run scenarios/estimator-zipf.json      one scenario; tables print, files go to reports/estimator-zipf/
  ratelab run scenarios/estimator-zipf.json --runs 20 --seed 7 --out /tmp/r
  ratelab check                                  rerun every scenario, compare with reports/ and `expect`
  ratelab report                                 reports/index.html for design reviews

Exit codes: 0 ok, 1 a check failed, 2 bad input or usage, 3 internal error (a bug).";

/// Top-level arguments.
#[derive(Debug, Parser)]
#[command(name = "ratelab", version, about = ABOUT, long_about = LONG_ABOUT, after_help = EXAMPLES)]
pub struct Cli {
    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

/// Options shared by commands that run scenarios.
#[derive(Debug, Clone, clap::Args)]
pub struct RunOpts {
    /// Folder the reports go to (one sub-folder per scenario).
    #[arg(long, default_value = "reports", value_parser = crate::report::atomic::parse_out_path)]
    pub out: PathBuf,
    /// Override the scenario's seed (everything random derives from it).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Override the number of runs (repetitions with fresh hash seeds).
    #[arg(long)]
    pub runs: Option<u32>,
    /// Worker threads for sweeps (default: all cores). Results do not depend on it.
    #[arg(long)]
    pub threads: Option<usize>,
    /// Largest memory one sketch or oracle may take, e.g. 1GiB, 512MiB, 4096.
    #[arg(long, default_value = "1GiB", value_parser = parse_size)]
    pub max_memory: u64,
    /// Largest work a scenario may ask for, in units of about 10 ns of CPU (3e10 is about
    /// five CPU-minutes; 1e12 suits a long sweep). Checked before anything runs, so a typo
    /// such as "events": 1e12 fails at once with the field to fix.
    #[arg(long, default_value = "3e10", value_parser = parse_work)]
    pub max_work: f64,
    /// Never draw progress bars (they are drawn only when stdout is a terminal anyway).
    #[arg(long)]
    pub no_progress: bool,
    /// Print every column of a table the terminal shows in part (a decision
    /// scenario's per-request agreement; table.md always has them).
    #[arg(long)]
    pub wide: bool,
    /// Run each scenario twice, once on a single thread, and fail (exit 3) at the
    /// first field that differs, instead of trusting the determinism guarantee.
    #[arg(long)]
    pub check_determinism: bool,
    /// Run only shard I of N and write <OUT>/<name>.shard-I-of-N.json for `ratelab
    /// merge`: a sweep's cells (cell k goes to shard k mod N), or a decision_accuracy
    /// scenario's keys (a seeded xxh3 of the key; the c-th candidate whose keys share
    /// state, such as a sketch or one tower, runs on shard c mod N over every key). Other
    /// kinds, and fleets (a deployment), run whole on shard 0 and are skipped on the others.
    // The doc comment is the --help text, placeholders and all.
    #[allow(rustdoc::invalid_html_tags)]
    #[arg(long, value_name = "I/N", value_parser = crate::lab::shard::parse_shard)]
    pub shard: Option<crate::lab::shard::Shard>,
    /// `run` of a decision_accuracy scenario only: also write every request's decision
    /// per candidate to this CSV (t_ns,key,candidate,allowed,delay_ns), to see which
    /// requests a limiter got wrong. One line per request and candidate: large.
    #[arg(long, value_name = "FILE", value_parser = crate::report::atomic::parse_out_path)]
    pub decisions: Option<PathBuf>,
    /// Allow scenarios whose `exec` entries run a program (a scenario that names a
    /// program is code); also RATELAB_ALLOW_EXEC=1. Without it such a scenario is
    /// refused (exit 2) before anything runs.
    #[arg(long)]
    pub allow_exec: bool,
    /// How estimator sketches are evaluated: `auto` from per-key counts wherever the
    /// event order cannot matter (pingora's standard update), replaying events for the
    /// rest; `events` replays every event through every sketch (same reports, slower:
    /// to check the fast path).
    #[arg(long, value_enum, default_value = "auto")]
    pub replay: crate::lab::ReplayMode,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run one scenario file and write its report.
    #[command(
        after_help = "The report goes to <OUT>/<scenario name>/: table.md, table.csv, report.json and charts (SVG + PNG).\nThe folder is replaced whole, only after the run succeeded."
    )]
    Run {
        /// The scenario JSON file (without one: the tour, a flash crowd over 2,000 Zipf
        /// keys through every limiter model, built in: scenarios/decision-flash-crowd.json).
        scenario: Option<PathBuf>,
        /// Your own log through the decision lab, no scenario file.
        #[command(flatten)]
        trace: Box<run_trace::RunTrace>,
        /// Where the reports go and how the scenario runs.
        #[command(flatten)]
        opts: RunOpts,
    },
    /// Run every scenario in a folder (default scenarios/) and print each table.
    Reproduce {
        /// Folder of scenario files.
        #[arg(long, default_value = "scenarios")]
        scenarios: PathBuf,
        /// Where the reports go and how the scenario runs.
        #[command(flatten)]
        opts: RunOpts,
    },
    /// Replay a CSV trace through one model, one call per row (conformance interface).
    #[command(
        after_help = "Formats (header row required; times non-decreasing):\n  --algo rate          in: t_ms,key,op,n   op = observe | rate | rate_proportional   out: + value\n  --algo token-bucket  in: t_ns,n,op[,deadline_ns]   op = allow | reserve | wait      out: + ok,delay_ns\n  --algo leaky-bucket  in: t_ns                                                      out: t_ns,return_ns\n  --algo limiter       in: t_ns,key[,weight]   any decision-lab candidate (--limiter NAME)   out: + allowed,delay_ns\n                       or any trace `size` reads, with the same options (--format alb --sort-window-ms 60000, --columns, --time-unit, --skip-late, --xff ...)   out: t_ns since the first,key,weight,allowed,delay_ns\n  --algo estimator     in: op,key,value   op = incr | decr | get | reset                out: + result\n  --algo inflight      in: op,key,value   op = incr | guard_incr | get | drop (key = guard g0, g1, ...)   out: + guard,result\n  --algo every         in: interval_ns   rate.Every                                     out: + limit,limit_bits,is_inf\n  --algo sometimes     in: t_ns   rate.Sometimes (--first, --every, --interval-ns)      out: + ran\nAdditions: rate --internals adds prev,curr,fraction (rate_with's inputs); token-bucket takes optional columns max_wait_ns (reserve), cancel_ns (wait: context cancelled), id (cancel's arg may name it), op cancel_at, and --act adds act_ns; leaky-bucket --unlimited (NewUnlimited), and header t_ns,caller,after_ns for closed loops (a row calls after_ns after its caller's previous Take returned).\n\nExamples:\n  ratelab replay --algo rate --interval-ms 1000 --hasher exact --trace in.csv --out out.csv\n  ratelab replay --algo token-bucket --limit 2 --burst 1 --trace in.csv --out out.csv\n  ratelab replay --algo leaky-bucket --rate 100 --slack 10 --variant atomic-int64 --trace in.csv --out out.csv"
    )]
    Replay {
        /// The model, its parameters and the trace.
        #[command(flatten)]
        args: Box<crate::replay::ReplayArgs>,
    },
    /// Combine the shard files of sharded runs into the reports an unsharded run writes.
    #[command(
        after_help = "Every shard 0..N of a scenario must be given once; files of several scenarios may be mixed.\nThe report is byte-identical to `ratelab run` without --shard: a sweep split by cell, a decision_accuracy\nscenario split by key. The shards of a `size --limit --shard` job are merged on their own: merge re-reads\nthe trace (paths as the shards were given them), runs the search and writes the size folder at --out.\n\nExamples:\n  parallel ratelab run scenarios/estimator-zipf.json --out parts --shard {}/4 ::: 0 1 2 3\n  ratelab merge parts/estimator-zipf.shard-*-of-4.json --out reports\n  ratelab merge parts/size.shard-*-of-4.json --out reports/size"
    )]
    Merge {
        /// Shard files written by `run --shard` or `reproduce --shard`.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Folder the reports go to (one sub-folder per scenario).
        #[arg(long, default_value = "reports", value_parser = crate::report::atomic::parse_out_path)]
        out: PathBuf,
        /// Largest memory the merged per-key tallies of a decision scenario may take
        /// (estimated from the shards before anything is built), e.g. 1GiB, 4GiB.
        #[arg(long, default_value = "1GiB", value_parser = parse_size)]
        max_memory: u64,
    },
    /// Rerun scenarios and compare them with the committed baselines and their `expect` thresholds.
    #[command(
        after_help = "Compares each scenario's fresh report.json with <REPORTS>/<name>/report.json value by value (integers and strings exactly, floats to a relative 1e-9 unless the scenario's `tolerance` loosens a field) and checks the scenario's `expect` thresholds.\n\nExamples:\n  ratelab check                              every scenario in scenarios/\n  ratelab check estimator-zipf               one scenario (a name or a file)\n  ratelab check --update                     accept the new numbers: rewrite the baselines\n  ratelab check --from /tmp/r                compare reports already made by `ratelab reproduce --out /tmp/r`\n\nExit codes: 0 all hold, 1 a value regressed or an expectation failed, 2 bad input (e.g. a missing baseline)."
    )]
    Check {
        /// Which scenarios, against which baselines.
        #[command(flatten)]
        args: check::CheckArgs,
    },
    /// Write <OUT>/index.html: every report's tables and charts on one page for design reviews.
    // The doc comment is the --help text, placeholders and all.
    #[allow(rustdoc::invalid_html_tags)]
    #[command(
        after_help = "Reads every <OUT>/*/report.json folder (any kind). No external assets: CSS is inline; images are referenced relative to the page, or embedded as data: URIs with --embed (one self-contained file)."
    )]
    Report {
        /// Folder of report folders; index.html is written there.
        #[arg(long, default_value = "reports", value_parser = crate::report::atomic::parse_out_path)]
        out: PathBuf,
        /// Embed the charts as data: URIs (a single self-contained file).
        #[arg(long)]
        embed: bool,
    },
    /// Find the cheapest count-min shape (hashes x slots) meeting accuracy targets on a workload.
    #[command(
        after_help = "Examples:\n  ratelab size --keys 10000 --dist harmonic --top 100000 --min 10 --target 'exact_pct>=70'\n  ratelab size --keys 50000 --events 2000000 --dist zipf:1.1 --target 'p99<=5' --target 'mean<=0.01*avg'\n  ratelab size --trace counts.csv --target 'max<=100' --max-memory 64MiB\n  ratelab size --trace access.csv --limit 100 --interval-ms 1000 --target 'compliant_denied_pct<=0.1'\n  ratelab size --trace hits.csv --columns key=ip,count=hits --limit 100 --target 'p99<=0.05*limit'\n  ratelab size --trace access.log.gz --format combined --key ip/24 --limit 100 --interval-ms 1000 --target 'compliant_denied_pct<=0.1'\n  ratelab size --trace logs.parquet --format parquet --columns time=ts,key=client_ip --limit 100 --target 'compliant_denied_pct<=0.1'\n\nWith --limit and a time-stamped --trace, each shape is replayed through pingora Rate (docs pattern and proportional estimate) as the decision lab runs it; size.json has schema ratelab.size.limit.v1.\nA shape meets a target when it holds on the mean over --seeds seeds and on every seed; the pick is then verified on fresh hash seeds: it must meet the targets on at least --coverage of them (default 99%) with --confidence (default 95%; 299 seeds, none failing).\nWrites size.json (schema ratelab.size.v1), size.md and frontier.svg/png to --out (default reports/size).\nExit codes: 0 found, 1 no shape within --max-memory meets the targets (best found printed), 2 bad input."
    )]
    Size {
        /// The workload, the targets and the search.
        #[command(flatten)]
        args: Box<size::SizeArgs>,
    },
    /// Recommend a setting of your own limiter (nginx, envoy-local, envoy-ratelimit, kong, traefik, governor, x-time-rate, guava, pingora) from an access log and an intent.
    #[command(
        after_help = "Examples:\n  ratelab recommend --trace access.csv --columns time=ts,key=ip --time-unit ms --limit 100 --interval-ms 1000 --for nginx --out target/rec\n  ratelab recommend --trace access.csv --limit 100 --interval-ms 1000 --for kong --replicas 8 --balancer round_robin --out target/rec-kong\n\nChooses on the first --choose-pct % of the log, confirms on --slices later slices; writes recommend.json, table.md, frontier.svg/png and the product's snippet (nginx.conf, envoy-local-ratelimit.yaml, envoy-ratelimit-config.yaml, kong.yml, traefik-ratelimit.yaml, governor.rs, x_time_rate.go, RateLimiterConfig.java, pingora_rate.rs).\nWith --replicas N (and --balancer B) every setting is measured as a fleet, the decision lab's deployment: per-instance limiters (nginx, envoy-local, traefik, the libraries) one per replica, envoy-ratelimit and kong's redis policy sharing one counter; the targets hold for the fleet as a whole. kong always runs as a fleet (one node without --replicas).\nExit codes: 0 a setting meets every target, 1 none does (the report is still written), 2 bad input or a log too short / without limited keys."
    )]
    Recommend {
        /// The log, the intent, the family and the targets.
        #[command(flatten)]
        args: Box<crate::recommend::RecommendArgs>,
    },
    /// List the experiment kinds and the scenarios in a folder (or, with --models, every
    /// limiter model with its parameters).
    List {
        /// Folder of scenario files (not with --models, which lists no scenario).
        #[arg(long, default_value = "scenarios", conflicts_with = "models")]
        scenarios: PathBuf,
        /// Print every limiter model of the decision lab (the `model` of a `limiters`
        /// entry) with its parameters, their ranges and defaults, and the upstream it
        /// follows.
        #[arg(long)]
        models: bool,
    },
    /// Write a scenario's timed `workload` as a trace (CSV `t_ns,key,weight`,
    /// or JSON Lines for .jsonl), streamed: memory does not grow with it.
    Export {
        /// A scenario file with a timed `workload` field (e.g. a decision_accuracy one).
        scenario: PathBuf,
        /// The trace to write.
        #[arg(long, value_parser = crate::report::atomic::parse_out_path)]
        out: PathBuf,
        /// Override the scenario's seed.
        #[arg(long)]
        seed: Option<u64>,
    },
}

pub use crate::units::{parse_size, parse_work};

/// Runs the CLI with `args` (including the program name); returns the exit code.
pub fn main_with_args(mut args: Vec<std::ffi::OsString>) -> i32 {
    // Bare `ratelab`: the help, exactly as `--help` prints it (clap's
    // missing-command error would be folded onto one line below).
    if args.len() == 1 {
        args.push("--help".into());
    }
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            // --help and --version print and exit 0; usage errors exit 2,
            // folded onto one line like every other ratelab error.
            if !e.use_stderr() {
                let _ = e.print();
                return 0;
            }
            let text = e.render().to_string();
            let line: Vec<&str> = text
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty() && !l.starts_with("For more information"))
                .collect();
            errln!("{} (see --help)", line.join(" "));
            return 2;
        }
    };
    match dispatch(cli) {
        Ok(code) => code,
        Err(e) => {
            crate::report::signals::wait_if_stopping();
            errln!("error: {e}");
            e.exit_code()
        }
    }
}

fn dispatch(cli: Cli) -> Result<i32> {
    match cli.command {
        Command::Run {
            scenario: Some(scenario),
            trace,
            opts,
        } => {
            trace.refuse_without_trace()?;
            run::run(&scenario, &opts)
        }
        Command::Run {
            scenario: None,
            trace,
            opts,
        } => match trace.scenario(opts.seed)? {
            Some(s) => run::run_scenario(&s, &opts),
            None => run::run_tour(&opts),
        },
        Command::Reproduce { scenarios, opts } => run::reproduce(&scenarios, &opts),
        Command::List { models: true, .. } => run::list_models(),
        Command::List { scenarios, .. } => run::list(&scenarios),
        Command::Merge {
            files,
            out,
            max_memory,
        } => run::merge(&files, &out, max_memory),
        Command::Replay { args } => crate::replay::run(&args).map(|()| 0),
        Command::Check { args } => check::check(&args),
        Command::Report { out, embed } => {
            let path = crate::report::html::write_index(&out, embed)?;
            outln!("-> {}", path.display());
            Ok(0)
        }
        Command::Size { args } => size::run(&args),
        Command::Recommend { args } => {
            init_threads(args.threads)?;
            let r = crate::recommend::run(&args)?;
            out!("{}", r.console);
            outln!("-> {}", args.out.display());
            match r.failure {
                Some(msg) => Err(Error::check(msg)),
                None => Ok(0),
            }
        }
        Command::Export {
            scenario,
            out,
            seed,
        } => export(&scenario, &out, seed).map(|()| 0),
    }
}

/// `ratelab export`: the scenario's timed workload as a trace file, with the
/// same event stream the decision lab would replay (keys `k<id>`).
fn export(scenario: &std::path::Path, out: &std::path::Path, seed: Option<u64>) -> Result<()> {
    use crate::workload::timed::TimedWorkload;
    use crate::workload::trace::{TraceEvent, TraceFormat, TraceWriter};
    use std::fmt::Write as _;
    crate::report::atomic::refuse_output_over_input(out, "--out", scenario, "the scenario")?;
    let sc = crate::scenario::Scenario::load(scenario)?;
    let Some(w) = sc.params.get("workload").cloned() else {
        return Err(sc.field_error("workload", "missing: expected a timed workload"));
    };
    let w: TimedWorkload = crate::scenario::from_value(&sc.path, w)?;
    w.validate(&sc.path, "workload")?;
    let seed = seed.unwrap_or(sc.common.seed);
    // Written to a temporary file beside `out` and renamed at the end: an
    // interrupted export never leaves a truncated trace that replays as if
    // it were whole.
    let tmp =
        crate::report::atomic::StreamingFile::create_in_existing_folder(out, ".ratelab-export-")?;
    let mut tw = TraceWriter::new(tmp, TraceFormat::from_path(out));
    let events = w.events(crate::rng::derive_seed(
        seed,
        &[crate::rng::stream::WORKLOAD],
    ));
    let mut e = TraceEvent {
        t_ns: 0,
        key: String::new(),
        weight: 1,
    };
    for (t, k) in events {
        e.t_ns = t;
        e.key.clear();
        let _ = write!(e.key, "k{k}");
        tw.write(&e).map_err(|err| Error::io(out, err))?;
    }
    tw.finish().map_err(|err| Error::io(out, err))?.commit()?;
    Ok(())
}

/// Most worker threads `--threads` may ask for (each is a real OS thread;
/// 100,000 of them took minutes just to start).
pub const MAX_THREADS: usize = 1024;

/// Sets the rayon pool size once per process (later calls keep the first).
pub fn init_threads(threads: Option<usize>) -> Result<()> {
    if let Some(n) = threads {
        if n == 0 || n > MAX_THREADS {
            return Err(Error::input(format!(
                "--threads {n}: expected 1..={MAX_THREADS}"
            )));
        }
        let _ = rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build_global();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("1GiB"), Ok(1 << 30));
        assert_eq!(parse_size("64KiB"), Ok(65536));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert!(parse_size("1.5GiB").is_err());
        assert!(parse_size("9999999999TiB").is_err());
        assert!(parse_size("12XB").is_err());
    }

    #[test]
    fn clap_definition_is_valid() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
