//! `first_second_panic`: the compare-exchange loser's `assert!(new >= now -
//! 1000)` in pingora's `Rate::maybe_reset`, explored with
//! `crate::sim::race`: N virtual threads observing one `Rate` from its
//! creation, for each thread count, interval, build and flavour, under the
//! lockstep scheduler (all loads before any compare-exchange: the worst
//! case), seeded random schedulers, and (for small N) every interleaving.

use super::experiment::Experiment;
use super::RunContext;
use crate::clock::MILLI;
use crate::error::{Error, Result};
use crate::model::rate::{Build, RateFlavor};
use crate::report::chart::{ChartSpec, Legend, Series, SeriesStyle};
use crate::report::{Output, ReportBuilder, Table};
use crate::rng::derive_seed;
use crate::scenario::Scenario;
use crate::sim::race::{
    explore_exhaustive, run_lockstep, run_random, RaceConfig, RaceError, DEFAULT_MAX_STATES,
};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::time::Duration;

/// Scenario parameters.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Thread counts.
    pub threads: Vec<usize>,
    /// Rate intervals, ms.
    pub intervals_ms: Vec<u64>,
    /// How long the threads observe, ms (one call per thread per ms).
    pub duration_ms: u64,
    /// Builds.
    pub builds: Vec<Build>,
    /// Flavours.
    pub flavors: Vec<RateFlavor>,
    /// Random scheduler runs per cell (0: none, lockstep and exhaustive
    /// only).
    pub random_runs: u32,
    /// Exhaustive exploration for thread counts up to this (0: none).
    pub exhaustive_max_threads: usize,
}

/// One cell.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// Threads.
    pub threads: usize,
    /// Interval, ms.
    pub interval_ms: u64,
    /// Build.
    pub build: Build,
    /// Flavour.
    pub flavor: RateFlavor,
    /// Panicked threads under lockstep.
    pub lockstep_panicked: usize,
    /// Lockstep panic messages with thread counts.
    pub lockstep_messages: Vec<(String, usize)>,
    /// Panic location (file:line:col) under lockstep, if any.
    pub lockstep_location: Option<String>,
    /// Panicked threads per random run.
    pub random_panicked: Vec<usize>,
    /// Exhaustive: probability that at least one thread panics, and the
    /// expected number of panicked threads (per-round uniform interleaving).
    pub exhaustive: Option<(f64, f64)>,
}

fn race_err(e: RaceError) -> Error {
    Error::internal(format!("race explorer: {e:?}"))
}

fn cell(
    p: &Params,
    seed: u64,
    threads: usize,
    interval_ms: u64,
    build: Build,
    flavor: RateFlavor,
) -> Result<Row> {
    let cfg = RaceConfig {
        build,
        fixes: flavor.fixes(),
        duration: p.duration_ms * MILLI,
        ..RaceConfig::first_second_panic(threads, Duration::from_millis(interval_ms))
    };
    let lock = run_lockstep(&cfg).map_err(race_err)?;
    let lockstep_location = lock
        .threads
        .iter()
        .find_map(|t| t.panic.as_ref().map(|p| p.fault.location.clone()));
    let random_panicked = (0..p.random_runs as u64)
        .map(|r| {
            run_random(&cfg, derive_seed(seed, &[threads as u64, interval_ms, r]))
                .map(|x| x.panicked)
        })
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(race_err)?;
    let exhaustive = if threads <= p.exhaustive_max_threads {
        let x = explore_exhaustive(&cfg, DEFAULT_MAX_STATES).map_err(race_err)?;
        let expected: f64 = x
            .outcomes
            .iter()
            .map(|o| o.probability * o.panicked.len() as f64)
            .sum();
        Some((x.probability_any_panic(), expected))
    } else {
        None
    };
    Ok(Row {
        threads,
        interval_ms,
        build,
        flavor,
        lockstep_panicked: lock.panicked,
        lockstep_messages: lock.panic_messages(),
        lockstep_location,
        random_panicked,
        exhaustive,
    })
}

fn name_build(b: Build) -> &'static str {
    match b {
        Build::Release => "release",
        Build::Debug => "debug",
    }
}

fn name_flavor(f: RateFlavor) -> &'static str {
    match f {
        RateFlavor::Faithful => "faithful",
        RateFlavor::Fixed => "fixed",
    }
}

/// All cells in a fixed order: build, flavour, interval, threads.
pub fn table(p: &Params, seed: u64) -> Result<Vec<Row>> {
    let mut coords = Vec::new();
    for &b in &p.builds {
        for &f in &p.flavors {
            for &i in &p.intervals_ms {
                for &t in &p.threads {
                    coords.push((t, i, b, f));
                }
            }
        }
    }
    coords
        .par_iter()
        .map(|&(t, i, b, f)| cell(p, seed, t, i, b, f))
        .collect()
}

/// The `first_second_panic` kind: the first-second panic of pingora's
/// `Rate` under racing threads.
pub struct FirstSecondPanic;

impl Experiment for FirstSecondPanic {
    type Params = Params;
    type Plan = Params;
    type Outcome = Vec<Row>;

    fn validate(scenario: &Scenario, p: Params, _: &RunContext) -> Result<Params> {
        for (i, &t) in p.threads.iter().enumerate() {
            if t == 0 || t > 64 {
                return Err(scenario.field_error(
                    format!("threads[{i}]"),
                    format!("value {t}: expected 1 to 64"),
                ));
            }
        }
        if p.exhaustive_max_threads > 3 {
            return Err(scenario.field_error(
                "exhaustive_max_threads",
                format!(
                    "value {}: expected at most 3 (the state space explodes beyond)",
                    p.exhaustive_max_threads
                ),
            ));
        }
        if p.duration_ms == 0 || p.duration_ms > 10_000 {
            return Err(scenario.field_error(
                "duration_ms",
                format!("value {}: expected 1 to 10000", p.duration_ms),
            ));
        }
        if p.random_runs > 100 {
            return Err(scenario.field_error(
                "random_runs",
                format!("value {}: expected at most 100", p.random_runs),
            ));
        }
        if p.builds.is_empty()
            || p.flavors.is_empty()
            || p.intervals_ms.is_empty()
            || p.threads.is_empty()
        {
            return Err(scenario.field_error(
                "threads",
                "threads, intervals_ms, builds and flavors must not be empty",
            ));
        }
        for (i, &ms) in p.intervals_ms.iter().enumerate() {
            if ms == 0 || ms > 86_400_000 {
                return Err(scenario.field_error(
                    format!("intervals_ms[{i}]"),
                    format!("value {ms}: expected 1 to 86400000"),
                ));
            }
        }
        Ok(p)
    }

    fn estimate_work(scenario: &Scenario, p: &Params, ctx: &RunContext) -> Result<()> {
        // Each (build, flavour, interval, threads) cell runs the lockstep and
        // the random schedules for every round (1 ms) of every thread; the
        // exhaustive explorer is charged a generous 1000 states a round.
        let rounds = p.duration_ms as f64;
        let mut work = 0f64;
        for &t in &p.threads {
            let exhaustive = if t <= p.exhaustive_max_threads {
                rounds * 1000.0
            } else {
                0.0
            };
            work += (1.0 + f64::from(p.random_runs)) * t as f64 * rounds + exhaustive;
        }
        let per_thread_list = (p.builds.len() * p.flavors.len() * p.intervals_ms.len()) as f64;
        ctx.check_work(
            scenario,
            "threads",
            work * per_thread_list,
            2.0,
            &format!(
                "{} builds x {} flavours x {} intervals x {} thread counts (up to {}) x {} rounds x (1 + {} random runs)",
                p.builds.len(),
                p.flavors.len(),
                p.intervals_ms.len(),
                p.threads.len(),
                p.threads.iter().max().copied().unwrap_or(0),
                p.duration_ms,
                p.random_runs
            ),
        )
    }

    fn run(_: &Scenario, p: &Params, ctx: &RunContext) -> Result<Vec<Row>> {
        table(p, ctx.seed)
    }

    fn render(scenario: &Scenario, p: &Params, ctx: &RunContext, rows: Vec<Row>) -> Result<Output> {
        let t = cells_table(&rows);
        let console = console(p, &rows);
        let mut report = ReportBuilder::new(scenario, ctx.seed, None);
        report.md(&t.markdown());
        report.md(&format!(
            "\nEach thread calls `observe(key, 1)` once per ms from the Rate's creation for {} ms (rounds are barriers; all threads of a round read the same millisecond). Lockstep: at every due flip all threads load `last_reset_time` before any compare-exchange, so all but the winner lose and, inside the first second, panic. Random: a seeded uniform choice of the next thread step. Exhaustive: every interleaving, each round's interleaving drawn uniformly. With interval >= 1 s the first flip is at 1000 ms or later and `now - 1000` cannot underflow. The fixed flavour uses `now.saturating_sub(1000)`.\n\n```\n{console}```\n",
            p.duration_ms
        ));
        report
            .field("rows", json!(rows))
            .csv(&t)
            .console(&console)
            .chart(&chart(p, &rows))?;
        Ok(report.finish())
    }
}

/// One table row per cell.
fn cells_table(rows: &[Row]) -> Table {
    let mut t = Table::new([
        "build",
        "flavor",
        "interval (ms)",
        "threads",
        "lockstep: panicked",
        "random runs: panicked",
        "exhaustive: P(any panic)",
        "exhaustive: E[panicked]",
        "panic message (lockstep)",
    ]);
    for r in rows {
        t.push([
            name_build(r.build).to_string(),
            name_flavor(r.flavor).to_string(),
            r.interval_ms.to_string(),
            r.threads.to_string(),
            format!("{} of {}", r.lockstep_panicked, r.threads),
            r.random_panicked
                .iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join(", "),
            r.exhaustive
                .map(|e| format!("{:.6}", e.0))
                .unwrap_or_else(|| "-".into()),
            r.exhaustive
                .map(|e| format!("{:.4}", e.1))
                .unwrap_or_else(|| "-".into()),
            r.lockstep_messages
                .iter()
                .map(|(m, n)| format!("{n} x \"{m}\""))
                .chain(r.lockstep_location.iter().map(|l| format!("at {l}")))
                .collect::<Vec<_>>()
                .join("; "),
        ]);
    }
    t
}

/// The console's runs: the largest thread count at the shortest interval,
/// faithful flavour, under lockstep.
fn console(p: &Params, rows: &[Row]) -> String {
    let mut console = String::new();
    for r in rows.iter().filter(|r| {
        r.flavor == RateFlavor::Faithful
            && Some(&r.threads) == p.threads.iter().max()
            && Some(&r.interval_ms) == p.intervals_ms.iter().min()
    }) {
        console.push_str(&format!("== {} (lockstep)\n", name_build(r.build)));
        for (m, n) in &r.lockstep_messages {
            console.push_str(&format!("{n:>4} {m}\n"));
        }
        console.push_str(&format!(
            "{:>4} thread done, N observes\n{:>4} thread panicked\n",
            r.threads - r.lockstep_panicked,
            r.lockstep_panicked
        ));
    }
    console
}

/// Panicked threads against the thread count, a series per build and
/// interval (faithful flavour, lockstep).
fn chart(p: &Params, rows: &[Row]) -> ChartSpec {
    let mut chart = ChartSpec::new(
        "first-second-panic",
        format!(
            "Rate::new(interval) observed by N threads for {} ms: threads that panic (faithful, lockstep)",
            p.duration_ms
        ),
        "threads observing at once",
        "threads panicked",
    )
    .caption("How many of N threads panic when they all call Rate::observe in lockstep during the first interval after Rate::new (faithful model), one series per interval and build; thread counts are categories (1, 2, 4, 8 threads), so points, not lines. Builds with the same counts are drawn once and named together (the release build's wrong-window assertion and the debug build's overflow panic hit the same threads).");
    let mut threads: Vec<usize> = rows.iter().map(|r| r.threads).collect();
    threads.sort_unstable();
    threads.dedup();
    chart.x_categories = threads.iter().map(|t| t.to_string()).collect();
    let at = |t: usize| threads.iter().position(|&x| x == t).unwrap_or(0) as f64;
    for &i in &p.intervals_ms {
        // builds with the same counts: one series naming them all
        type Group<'a> = (Vec<&'a str>, Vec<(f64, f64)>);
        let mut groups: Vec<Group> = Vec::new();
        for &b in &p.builds {
            let pts: Vec<(f64, f64)> = rows
                .iter()
                .filter(|r| r.build == b && r.interval_ms == i && r.flavor == RateFlavor::Faithful)
                .map(|r| (at(r.threads), r.lockstep_panicked as f64))
                .collect();
            if pts.is_empty() {
                continue;
            }
            match groups.iter_mut().find(|g| g.1 == pts) {
                Some(g) => g.0.push(name_build(b)),
                None => groups.push((vec![name_build(b)], pts)),
            }
        }
        for (builds, pts) in groups {
            let label = format!(
                "interval {i} ms, {} build{}",
                builds.join(" and "),
                if builds.len() == 1 { "" } else { "s" }
            );
            chart
                .series
                .push(Series::new(label, pts, SeriesStyle::Points));
        }
    }
    chart.legend = Legend::UpperLeft;
    chart
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eight_threads_at_10ms_lose_7_of_8_in_lockstep() {
        let p = Params {
            threads: vec![1, 2, 4, 8],
            intervals_ms: vec![10, 1000],
            duration_ms: 900,
            builds: vec![Build::Release, Build::Debug],
            flavors: vec![RateFlavor::Faithful, RateFlavor::Fixed],
            random_runs: 1,
            exhaustive_max_threads: 0,
        };
        let rows = table(&p, 1).unwrap();
        let find = |t, i, b, f| {
            rows.iter()
                .find(|r| r.threads == t && r.interval_ms == i && r.build == b && r.flavor == f)
                .unwrap()
        };
        let rel = find(8, 10, Build::Release, RateFlavor::Faithful);
        assert_eq!(rel.lockstep_panicked, 7);
        assert_eq!(
            rel.lockstep_messages,
            vec![("assertion failed: new >= now - 1000".to_string(), 7)]
        );
        let dbg = find(8, 10, Build::Debug, RateFlavor::Faithful);
        assert_eq!(dbg.lockstep_panicked, 7);
        assert_eq!(
            dbg.lockstep_messages,
            vec![("attempt to subtract with overflow".to_string(), 7)]
        );
        for t in [1, 2, 4, 8] {
            assert_eq!(
                find(t, 10, Build::Release, RateFlavor::Faithful).lockstep_panicked,
                t - 1
            );
            for b in [Build::Release, Build::Debug] {
                assert_eq!(find(t, 1000, b, RateFlavor::Faithful).lockstep_panicked, 0);
                assert_eq!(find(t, 10, b, RateFlavor::Fixed).lockstep_panicked, 0);
                assert_eq!(find(t, 10, b, RateFlavor::Fixed).random_panicked, vec![0]);
            }
        }
        assert_eq!(rel.random_panicked, vec![7]);
    }

    #[test]
    fn exhaustive_two_threads_short() {
        let p = Params {
            threads: vec![2],
            intervals_ms: vec![10],
            duration_ms: 30,
            builds: vec![Build::Release],
            flavors: vec![RateFlavor::Faithful],
            random_runs: 0,
            exhaustive_max_threads: 2,
        };
        let rows = table(&p, 1).unwrap();
        let (any, expected) = rows[0].exhaustive.unwrap();
        assert!(any > 0.9 && any < 1.0, "{any}");
        assert!(expected <= 1.0 && expected > 0.9);
    }
}
