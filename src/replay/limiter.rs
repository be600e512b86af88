//! `ratelab replay --algo limiter`: one decision per row through any
//! candidate of the decision lab (the rows of
//! [`crate::lab::decision::MODELS`]), so a trace can be checked call for
//! call against the upstream implementation of every lab model.
//!
//! ```text
//! ratelab replay --algo limiter --limiter 'governor GCRA per key' --limit 100 --interval-ms 1000
//!                [--hashes 4 --slots 1024] [--slack 10] [--seed 1] --trace in.csv --out out.csv
//! ```
//!
//! Input: header `t_ns,key` or `t_ns,key,weight` (weight default 1); times
//! in virtual nanoseconds, non-decreasing; keys any text (ids follow first
//! appearance, as in the lab). Output: the input rows plus `allowed`
//! (`true`/`false`) and `delay_ns` (how long an admitted request is held; 0
//! for limiters that admit or reject at once).
//!
//! `--limiter` is a `limiters` entry as JSON (`'{"model": "gcra", "burst": 5}'`:
//! any model of the lab with any parameters) or a candidate's name as the
//! lab's table prints it (the default set, and every other model with its
//! default parameters, e.g. `GCRA per key (ours)`); the
//! pingora `Rate` candidates take their sketch shape from `--hashes` and
//! `--slots` (without them: the lab's default shapes 4x1024, 4x8192,
//! 4x65536), plus an `exact` one. An unknown name lists the names there are.

use super::csvio::{OutputCsv, TraceReader};
use super::ReplayArgs;
use crate::clock::Nanos;
use crate::error::{Error, Result};
use crate::lab::decision::param_grid::{self, Args, ParamType};
use crate::lab::decision::{
    build, candidates, default_entries, row, Candidate, ModelRow, Policy, Setup, MODELS,
};
use crate::lab::Shape;
use std::collections::HashMap;

/// The options `--algo limiter` takes.
const TAKES: &[&str] = &[
    "--limiter",
    "--seed",
    "--allow-exec",
    "--limit",
    "--interval-ms",
    "--hashes",
    "--slots",
    "--slack",
    "--format",
    "--log-format",
    "--key",
    "--weight",
    "--xff",
    "--spread",
    "--skip-late",
    "--columns",
    "--time-unit",
    "--sort-window-ms",
    "--time-field",
    "--outcome",
    "--denied-values",
    "--time-is",
    "--duration",
];

/// The policy and candidates the options ask for.
fn setup(args: &ReplayArgs) -> Result<Setup> {
    let limit = match args.limit.as_deref().map(str::trim) {
        None => return Err(Error::input("--limit is required for --algo limiter")),
        Some(s) => s
            .parse::<u64>()
            .ok()
            .filter(|&l| (1..=u64::from(u32::MAX)).contains(&l))
            .ok_or_else(|| {
                Error::input(format!(
                    "--limit {s}: expected a whole number of requests per interval in 1..=4294967295"
                ))
            })?,
    };
    let interval_ms = match args.interval_ms {
        Some(i) if (1..=86_400_000).contains(&i) => i,
        Some(i) => {
            return Err(Error::input(format!(
                "--interval-ms {i}: expected 1..=86400000"
            )))
        }
        None => return Err(Error::input("--interval-ms is required for --algo limiter")),
    };
    if interval_ms * crate::clock::MILLI / limit == 0 {
        return Err(Error::input(format!(
            "--limit {limit} per --interval-ms {interval_ms} is more than one per nanosecond"
        )));
    }
    let shapes = match (args.hashes, args.slots) {
        (None, None) => [1024, 8192, 65536]
            .map(|slots| Shape { hashes: 4, slots })
            .to_vec(),
        (h, s) => {
            let hashes = h.unwrap_or(4);
            let slots = s.unwrap_or(1024);
            if !(1..=64).contains(&hashes) || !(1..=1 << 26).contains(&slots) {
                return Err(Error::input(format!(
                    "--hashes {hashes} --slots {slots}: expected 1..=64 hashes and 1..=67108864 slots"
                )));
            }
            vec![Shape {
                hashes: hashes as usize,
                slots: slots as usize,
            }]
        }
    };
    let plain = Setup::plain(Policy { limit, interval_ms }, args.seed());
    Ok(Setup {
        shapes,
        uber_slack: args.slack.unwrap_or(plain.uber_slack),
        max_memory: 1 << 32,
        ..plain
    })
}

/// The candidate `--limiter` names: a `limiters` entry as JSON (any model,
/// any parameters, no lists), or a candidate's name among the default set
/// and every other model with its default parameters.
fn pick(args: &ReplayArgs, setup: &Setup) -> Result<Candidate> {
    let Some(name) = args.limiter.as_deref().map(str::trim) else {
        return Err(Error::input("--limiter is required for --algo limiter"));
    };
    if name.starts_with('{') {
        return from_entry(name, setup, args.allow_exec);
    }
    let mut all = candidates(setup)?;
    let defaults: Vec<&str> = default_entries(setup).iter().map(|(m, _)| *m).collect();
    // A model that runs a command (`exec`) has no default: only as JSON.
    let runs_a_command = |r: &&ModelRow| r.params.iter().any(|p| matches!(p.kind, ParamType::Argv));
    for r in MODELS
        .iter()
        .filter(|r| !defaults.contains(&r.model) && !runs_a_command(r))
    {
        all.push(build(setup, r, &Args::default())?);
    }
    match all.iter().position(|c| c.name == name) {
        Some(i) => Ok(all.swap_remove(i)),
        None => Err(Error::input(format!(
            "--limiter {name:?}: expected a limiters entry as JSON ({{\"model\": ...}}) or one of {}",
            all.iter()
                .map(|c| format!("{:?}", c.name))
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

/// One candidate from a `limiters` entry given as JSON.
fn from_entry(text: &str, setup: &Setup, allow_exec: bool) -> Result<Candidate> {
    let bad = |m: String| Error::input(format!("--limiter: {m}"));
    let v: serde_json::Value =
        crate::strict_json::from_str(text).map_err(|e| bad(format!("malformed JSON: {e}")))?;
    let obj = v
        .as_object()
        .ok_or_else(|| bad("expected a JSON object".into()))?;
    let known = crate::lab::decision::known_models;
    let model = obj
        .get("model")
        .and_then(|m| m.as_str())
        .ok_or_else(|| bad(format!("missing \"model\": expected one of {}", known())))?;
    crate::lab::trust::require_entry(&v, "--limiter", allow_exec)?;
    let r =
        row(model).ok_or_else(|| bad(format!("model {model:?}: expected one of {}", known())))?;
    let mut grid = param_grid::expand(obj, r.params, "limiter")
        .map_err(|e| bad(format!("{}: {}", e.field, e.message)))?;
    if grid.len() != 1 {
        return Err(bad(format!(
            "the lists expand to {} candidates: replay takes one (no lists)",
            grid.len()
        )));
    }
    build(setup, r, &grid.remove(0))
}

/// Where the columns are.
struct Columns {
    t: usize,
    key: usize,
    weight: Option<usize>,
}

fn columns(input: &TraceReader) -> Result<Columns> {
    let h = input.header();
    let at = |name: &str| h.iter().position(|c| c == name);
    let weight = at("weight");
    match (at("t_ns"), at("key")) {
        (Some(t), Some(key)) if h.len() == 2 + usize::from(weight.is_some()) => {
            Ok(Columns { t, key, weight })
        }
        _ => Err(bad_header(input)),
    }
}

fn bad_header(input: &TraceReader) -> Error {
    input.error_at(
        1,
        format!(
            "header {:?}: expected t_ns,key or t_ns,key,weight",
            input.header().join(",")
        ),
    )
}

fn parse_u64(input: &TraceReader, line: u64, column: &str, value: &str) -> Result<u64> {
    // Digits only, as the decision lab reads the same column (Rust's own
    // parse would also take a leading `+`).
    let digits = !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit());
    digits
        .then(|| value.parse::<u64>().ok())
        .flatten()
        .ok_or_else(|| {
            input.error_at(
                line,
                format!(
                    "{column} value {value:?}: expected a whole number in 0..=18446744073709551615"
                ),
            )
        })
}

/// Replays `args.trace` into `args.out`.
pub fn run(args: &ReplayArgs) -> Result<()> {
    super::reject_unused(args, "limiter", TAKES)?;
    let setup = setup(args)?;
    let mut cand = pick(args, &setup)?;
    // The sketch shape and uber-go's slack shape one model each: refused
    // beside any other, which would ignore them.
    for (flag, given, model) in [
        ("--hashes", args.hashes.is_some(), "pingora_rate"),
        ("--slots", args.slots.is_some(), "pingora_rate"),
        ("--slack", args.slack.is_some(), "uber_go"),
    ] {
        if given && cand.model != model {
            return Err(Error::input(format!(
                "{flag} applies to a {model} candidate, and --limiter is {:?} ({})",
                cand.name, cand.model
            )));
        }
    }
    if args.read.validates() {
        return run_validation(args, &mut cand);
    }
    // A plain `t_ns,key[,weight]` CSV keeps its rows in the output (the
    // conformance contract); any option of how to read a trace reads it
    // as `size` and the decision lab do.
    let read = args.read.given();
    if read.iter().any(|f| *f != "--format") || args.read.format.is_some_and(|f| f.row().is_some())
    {
        return run_read(args, &mut cand);
    }
    let mut input = TraceReader::open(&args.trace)?;
    let cols = columns(&input)?;
    let mut out = OutputCsv::create(&args.out)?;
    let mut header = input.header().to_vec();
    header.extend(["allowed".to_string(), "delay_ns".to_string()]);
    out.row(&header)?;
    let mut ids: HashMap<String, u32> = HashMap::new();
    let mut prev: Option<Nanos> = None;
    let mut fields: Vec<String> = Vec::with_capacity(header.len());
    while let Some((line, rec)) = input.next_row()? {
        fields.clear();
        fields.extend(rec.iter().map(str::to_string));
        let t = parse_u64(&input, line, "t_ns", &fields[cols.t])?;
        if let Some(p) = prev.filter(|&p| t < p) {
            return Err(input.error_at(
                line,
                format!("t_ns value {t}: times must be non-decreasing (previous t_ns {p})"),
            ));
        }
        prev = Some(t);
        let w = match cols.weight {
            Some(i) => parse_u64(&input, line, "weight", &fields[i])?,
            None => 1,
        };
        if w == 0 {
            return Err(input.error_at(line, "weight value \"0\": expected at least 1"));
        }
        if fields[cols.key].is_empty() {
            return Err(input.error_at(line, "key \"\": an empty key, expected the request's key"));
        }
        let next_id = ids.len() as u32;
        let key = *ids.entry(fields[cols.key].clone()).or_insert(next_id);
        if key == next_id && cand.limiter.wants_key_names() {
            cand.limiter.name_keys(&[(key, fields[cols.key].clone())])?;
        }
        // A model's refusal (a weight it cannot take) names the line.
        let d = cand.limiter.admit(key, w, t).map_err(|e| match e.kind() {
            crate::error::ErrorKind::BadInput => input.error_at(line, e.message()),
            _ => e,
        })?;
        fields.push(d.allowed.to_string());
        fields.push(d.delay.to_string());
        out.row(&fields)?;
    }
    cand.limiter.finish()?;
    out.commit()
}

/// Replays a trace read with the trace options (`--format`, `--columns`,
/// `--sort-window-ms`, ...: one definition with `size`): one output row per
/// request, with times since the first request (as the decision lab
/// replays a trace).
fn run_read(args: &ReplayArgs, cand: &mut Candidate) -> Result<()> {
    let opts = args.read.arrival_options("replay", args.seed())?;
    let mut input = crate::sizing::input::open_timed(&args.trace, &opts)?;
    let mut out = OutputCsv::create(&args.out)?;
    out.row(["t_ns", "key", "weight", "allowed", "delay_ns"])?;
    let mut ids: HashMap<String, u32> = HashMap::new();
    let mut t0 = None;
    while let Some(ev) = input.next_ref() {
        let (t, key, w) = ev?;
        let t = t - *t0.get_or_insert(t);
        let next_id = ids.len() as u32;
        let id = match ids.get(key) {
            Some(&id) => id,
            None => {
                ids.insert(key.to_string(), next_id);
                next_id
            }
        };
        let d = cand.limiter.admit(id, w, t)?;
        out.row(&[
            t.to_string(),
            key.to_string(),
            w.to_string(),
            d.allowed.to_string(),
            d.delay.to_string(),
        ])?;
    }
    if t0.is_none() {
        return Err(input.file_error("no requests: the trace has no data lines"));
    }
    out.commit()
}

/// Replays an access log with the deployed limiter's answers (`--outcome`,
/// `--time-is end --duration`): read whole, sorted by arrival, one output
/// row per request in that order with what the deployed limiter did and
/// whether the model's decision sat at its clock granularity; the
/// agreement is printed (see [`crate::lab::decision::validation`]).
fn run_validation(args: &ReplayArgs, cand: &mut Candidate) -> Result<()> {
    use crate::lab::decision::validation::{self as v, Agreement};
    use crate::workload::trace::TraceSpec;
    let mut t = args.read.clone();
    t.path = args.trace.display().to_string();
    let (_, spec) = crate::lab::decision::checks::trace_reading(&t, args.seed())
        .map_err(TraceSpec::flag_error)?;
    let flag = |f: &str, m: String| TraceSpec::flag_error(crate::error::FieldError::new(f, m));
    let loaded = v::load_from(&args.trace, &t, spec.as_ref(), u32::MAX as usize, &flag)?;
    let mut out = OutputCsv::create(&args.out)?;
    out.row([
        "t_ns",
        "key",
        "weight",
        "allowed",
        "delay_ns",
        "deployed_allowed",
        "clock_step",
        "line",
    ])?;
    let probe = cand.limiter.checks_clock_step();
    let mut agreement = Agreement::new(probe);
    let t0 = loaded.events.first().map_or(0, |e| e.0);
    if cand.limiter.wants_key_names() {
        let names: Vec<(u32, String)> = (0..loaded.keys.len() as u32)
            .map(|k| (k, loaded.keys.name(k).unwrap_or_default().to_string()))
            .collect();
        cand.limiter.name_keys(&names)?;
    }
    for (i, &(at, key, w)) in loaded.events.iter().enumerate() {
        let t = at - t0;
        let step = probe && cand.limiter.clock_step(key, w, t) == Some(true);
        let d = cand.limiter.admit(key, w, t)?;
        agreement.record(&loaded, i, d.allowed, step);
        out.row(&[
            t.to_string(),
            loaded.keys.name(key).unwrap_or_default().to_string(),
            w.to_string(),
            d.allowed.to_string(),
            d.delay.to_string(),
            loaded.admitted[i].to_string(),
            if probe { step.to_string() } else { "-".into() },
            loaded.lines[i].to_string(),
        ])?;
    }
    cand.limiter.finish()?;
    out.commit()?;
    // What `run` prints for a validated trace; a closed stdout loses the
    // line, not the exit code.
    let line = v::console_line(
        &loaded,
        std::slice::from_ref(cand),
        &[agreement],
        "; per request: --out",
    );
    use std::io::Write as _;
    let _ = std::io::stdout().lock().write_all(line.as_bytes());
    Ok(())
}
