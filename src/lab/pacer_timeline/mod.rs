//! `pacer_timeline`: concurrent callers on uber-go/ratelimit pacers and
//! golang.org/x/time/rate limiters (buckets and the book's MultiLimiter),
//! replayed on the virtual clock by the discrete-event engine
//! ([`crate::sim::des`]): pacer cadence and slack after idle time, token
//! buckets with no limit and one per second, the book's MultiLimiter and its
//! token-bucket pictures.
//!
//! A scenario lists *cases*, each an independent world: named `buckets`
//! (`NewLimiter(limit, burst)`), `multis` (`MultiLimiter(of...)`, sorted by
//! `Limit()` as the book does), `pacers` (`ratelimit.New(rate, ...)`) and
//! `callers` (groups of `count` goroutines arriving at `arrival_ns`,
//! `spacing_ns` apart, each running `steps` `repeat` times: `{"wait": name}`,
//! `{"take": name}`, `{"sleep_ns": d}` or `{"allow": bucket}`). A case uses
//! either `allow` steps only (`AllowN(t, 1)` at each caller's arrival, in
//! caller order) or the others.
//!
//! Order: callers are numbered in file order; simultaneous events run in
//! that order (the engine's rule), which is the fixed goroutine order the
//! report states. Limits: a number (events/s), `"inf"`, `{"per": [n, ns]}`
//! (the book's `Per` = `Every(d/n)`, integer division) or
//! `{"every_ns": d}`.

mod charts;
mod params;
mod render;
mod run;

pub use params::{Params, TimeFormat};
pub use run::{compute, CaseResult};

use super::experiment::Experiment;
use super::RunContext;
use crate::error::Result;
use crate::report::Output;
use crate::scenario::Scenario;

/// A validated `pacer_timeline` scenario.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The parameters.
    pub params: Params,
    /// t = 0 in seconds since midnight, for `clock` listings.
    pub clock_start: Option<i64>,
}

/// The `pacer_timeline` kind: concurrent callers on pacers and token
/// buckets.
pub struct PacerTimeline;

impl Experiment for PacerTimeline {
    type Params = Params;
    type Plan = Plan;
    type Outcome = Vec<CaseResult>;

    fn validate(sc: &Scenario, p: Params, _: &RunContext) -> Result<Plan> {
        let clock_start = match (&p.time_format, &p.clock_start) {
            (_, Some(s)) => Some(render::parse_clock(s).ok_or_else(|| {
                sc.field_error("clock_start", format!("value {s:?}: expected hh:mm:ss"))
            })?),
            (TimeFormat::Clock, None) => Some(0),
            _ => None,
        };
        if let Some((a, b)) = p.staircase_x_s
            && !(a.is_finite() && b.is_finite() && a >= 0.0 && a < b)
        {
            return Err(sc.field_error(
                "staircase_x_s",
                format!("value [{a}, {b}]: expected 0 <= start < end, both finite"),
            ));
        }
        for (ci, c) in p.cases.iter().enumerate() {
            // Drawn only on the staircase chart, validated all the same.
            if let Some(r) = c.ideal_per_s
                && !(r.is_finite() && r > 0.0)
            {
                return Err(sc.field_error(
                    format!("cases[{ci}].ideal_per_s"),
                    format!("value {r}: expected a finite rate > 0"),
                ));
            }
            if let Some(b) = c.ideal_burst
                && !(b.is_finite() && b >= 0.0)
            {
                return Err(sc.field_error(
                    format!("cases[{ci}].ideal_burst"),
                    format!("value {b}: expected a finite count >= 0"),
                ));
            }
            if c.callers.is_empty() {
                return Err(sc.field_error(
                    format!("cases[{ci}].callers"),
                    "empty: expected at least one caller group",
                ));
            }
            for (gi, g) in c.callers.iter().enumerate() {
                if g.steps.is_empty() {
                    return Err(sc.field_error(
                        format!("cases[{ci}].callers[{gi}].steps"),
                        "empty: expected at least one step",
                    ));
                }
            }
        }
        Ok(Plan {
            params: p,
            clock_start,
        })
    }

    fn estimate_work(sc: &Scenario, plan: &Plan, ctx: &RunContext) -> Result<()> {
        run::check_volume(sc, &plan.params, ctx)
    }

    fn run(sc: &Scenario, plan: &Plan, _: &RunContext) -> Result<Vec<CaseResult>> {
        compute(sc, &plan.params)
    }

    fn render(
        sc: &Scenario,
        plan: &Plan,
        ctx: &RunContext,
        cases: Vec<CaseResult>,
    ) -> Result<Output> {
        render::render(sc, &plan.params, plan.clock_start, ctx, &cases)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const MS: i64 = 1_000_000;
    const SEC: i64 = 1_000_000_000;

    fn load(name: &str) -> (Scenario, Vec<CaseResult>) {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("scenarios/{name}.json"));
        let sc = Scenario::load(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(sc.common.kind, "pacer_timeline");
        let p: Params = sc.params().unwrap_or_else(|e| panic!("{name}: {e}"));
        let cases = compute(&sc, &p).unwrap_or_else(|e| panic!("{name}: {e}"));
        (sc, cases)
    }

    fn admitted(c: &CaseResult) -> Vec<i64> {
        c.steps
            .iter()
            .map(|a| a.admitted_ns.unwrap_or(-1))
            .collect()
    }

    fn case<'a>(cases: &'a [CaseResult], label: &str) -> &'a CaseResult {
        cases
            .iter()
            .find(|c| c.label == label)
            .unwrap_or_else(|| panic!("no case {label}"))
    }

    #[test]
    fn pacers_keep_a_10ms_cadence() {
        let (_, cases) = load("pacer-cadence");
        for c in &cases {
            let want: Vec<i64> = (0..10).map(|i| i * 10 * MS).collect();
            assert_eq!(admitted(c), want, "{}", c.label);
        }
        assert_eq!(cases.len(), 3);
    }

    #[test]
    fn slack_after_idle_time() {
        let (_, cases) = load("pacer-slack-after-idle");
        for v in ["atomic-int64", "atomic", "mutex"] {
            for (slack, at_once) in [("slack 10", 11), ("WithoutSlack", 1)] {
                let c = case(&cases, &format!("{v}, {slack}"));
                let mut want = vec![0];
                want.extend((0..20).map(|i| {
                    if i < at_once {
                        10 * SEC
                    } else {
                        10 * SEC + (i - at_once + 1) * 10 * MS
                    }
                }));
                assert_eq!(admitted(c), want, "{}", c.label);
            }
        }
        // Mock clock at the Unix epoch: the int64 sentinel lets all 20 through.
        let c = case(&cases, "atomic-int64 at the mock epoch, 20 calls at t=0");
        assert_eq!(admitted(c), vec![0; 20]);
        let c = case(&cases, "atomic at the mock epoch, 20 calls at t=0");
        assert_eq!(
            admitted(c),
            (0..20).map(|i| i * 10 * MS).collect::<Vec<_>>()
        );
        // Negative slack: int64 banks the idle time without bound.
        let c = case(&cases, "atomic-int64, WithSlack(-1)");
        assert!(admitted(c).iter().filter(|&&t| t == 10 * SEC).count() == 20);
        let c = case(&cases, "atomic, WithSlack(-1)");
        assert_eq!(admitted(c)[1], 10 * SEC + 10 * MS);
        // Mutex callers read the clock when they get the lock.
        let m = case(&cases, "mutex, contention: 3 callers 0/0/50ms");
        let a = case(&cases, "atomic, contention: 3 callers 0/0/50ms");
        assert_eq!(admitted(m), admitted(a));
        assert_eq!(m.steps[2].clock_read_ns, Some(100 * MS));
        assert_eq!(a.steps[2].clock_read_ns, Some(50 * MS));
    }

    #[test]
    fn no_limit_admits_everything_at_once() {
        let (_, cases) = load("token-bucket-no-limit");
        assert_eq!(admitted(&cases[0]), vec![0; 20]);
    }

    #[test]
    fn one_per_second() {
        let (_, cases) = load("token-bucket-1-per-second");
        assert_eq!(
            admitted(&cases[0]),
            (0..20).map(|i| i * SEC).collect::<Vec<_>>()
        );
    }

    #[test]
    fn multilimiter_takes_the_slowest_limit() {
        let (_, cases) = load("multilimiter-api");
        let mut want: Vec<i64> = (0..10).map(|i| i * SEC / 2).collect();
        want.extend((1..=10).map(|i| i * 6 * SEC));
        assert_eq!(admitted(&cases[0]), want);
    }

    #[test]
    fn disk_and_network_limits_span_a_minute() {
        let (_, cases) = load("multilimiter-disk-network");
        let t = admitted(&cases[0]);
        assert_eq!(t.iter().min(), Some(&0));
        assert_eq!(t.iter().max(), Some(&(60 * SEC)));
        // ReadFile paced 1/s by the disk, ResolveAddress every 6 s by the
        // api's minute bucket.
        assert_eq!(&t[..10], &(0..10).map(|i| i * SEC).collect::<Vec<_>>()[..]);
        assert_eq!(
            &t[10..],
            &(1..=10).map(|i| i * 6 * SEC).collect::<Vec<_>>()[..]
        );
    }

    #[test]
    fn token_bucket_pictures() {
        let (_, cases) = load("token-bucket-pictures");
        assert_eq!(cases.len(), 4);
        // 1: depth 5, no refill, a request every 200 ms: five pass.
        let ok: Vec<bool> = cases[0]
            .steps
            .iter()
            .map(|a| a.admitted_ns.is_some())
            .collect();
        assert_eq!(ok, [vec![true; 5], vec![false; 5]].concat());
        // 2: depth 1 at 1/s, a request every 0.5 s: every other passes.
        let ok: Vec<bool> = cases[1]
            .steps
            .iter()
            .map(|a| a.admitted_ns.is_some())
            .collect();
        assert_eq!(ok, (0..10).map(|i| i % 2 == 0).collect::<Vec<_>>());
        // 3: depth 5 at 0.5/s, ten waiting callers: five at once, then every 2 s.
        assert_eq!(
            admitted(&cases[2]),
            vec![0, 0, 0, 0, 0, 2 * SEC, 4 * SEC, 6 * SEC, 8 * SEC, 10 * SEC]
        );
        // 4: burst of 2, then 4 s later a burst of 5 passes; a sixth is refused.
        assert_eq!(
            admitted(&cases[3]),
            vec![0, 0, 4 * SEC, 4 * SEC, 4 * SEC, 4 * SEC, 4 * SEC, -1]
        );
    }

    #[test]
    fn full_run_renders_report() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("scenarios/multilimiter-api.json");
        let sc = Scenario::load(&path).unwrap_or_else(|e| panic!("{e}"));
        let out = crate::kinds::run(&sc, &RunContext::for_scenario(&sc))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(out.charts.len(), 3);
        assert!(out.table_md.contains("22:46:10 ReadFile\n"));
        assert!(out
            .table_md
            .contains("22:47:10 ResolveAddress\n22:47:10 Done."));
        assert_eq!(
            out.json["cases"][0]["admitted_ns_in_order"][10],
            json!(6 * SEC)
        );
    }

    /// Cases whose callers share numbers get a panel each, so every point
    /// sits on its own caller's tick (not shifted sideways beside the other
    /// cases'); one case with a caller label per kind of call stays one
    /// chart. A strip of a few rows, and dots at two waits, get a compact
    /// canvas.
    #[test]
    fn waits_sit_on_their_callers_ticks_and_few_values_are_compact() {
        use super::charts::{charts, Waits};
        let (_, cases) = load("token-bucket-pictures");
        let (stairs, waits, strip) = charts(&cases, None);
        let Waits::Panels(_, panels) = waits else {
            panic!("four cases numbering callers from 0: a panel each");
        };
        assert_eq!(panels.len(), 4);
        for p in &panels {
            assert!(p
                .series
                .iter()
                .all(|s| s.points.iter().all(|q| q.0.fract() == 0.0)));
            // the refused row goes with the panels
            assert_eq!(p.y_row_below, "refused");
            // a tick per caller: 0..=9
            assert_eq!(p.x_categories.len(), 10);
        }
        // four staircases in four colours, none of them orange (1) beside
        // vermillion (3)
        let mut colours: Vec<usize> = stairs
            .series
            .iter()
            .filter(|s| !s.share_color)
            .filter_map(|s| s.color)
            .collect();
        colours.dedup();
        assert_eq!(colours, vec![0, 3, 2, 4]);
        let (w, h) = strip.size.expect("five rows: a compact strip");
        assert!(w == 960 && (300..600).contains(&h), "{w}x{h}");
        let (_, cases) = load("multilimiter-api");
        let (_, waits, _) = charts(&cases, None);
        assert!(matches!(waits, Waits::One(_)), "one case: one chart");
        let (_, cases) = load("pacer-cadence");
        let (_, waits, strip) = charts(&cases, None);
        let Waits::One(waits) = waits else {
            panic!("identical cases are one series");
        };
        assert!(
            waits.size.is_some_and(|s| s.1 < 600),
            "waits of 0 and 10 ms"
        );
        assert!(strip.size.is_some_and(|s| s.1 < 300), "one row");
        let (_, cases) = load("token-bucket-1-per-second");
        let (_, waits, _) = charts(&cases, None);
        let Waits::One(waits) = waits else { panic!() };
        assert_eq!(waits.size, None, "twenty different waits: the full canvas");
    }
}
