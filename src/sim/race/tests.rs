use super::*;
use crate::clock::{Nanos, MILLI};
use crate::model::rate::RateFlavor;
use crate::model::rate::{Build, RateFixes};
use std::time::Duration;

const MS: Nanos = MILLI;

/// The faults list of a run that saw one distinct fault.
fn only_fault(message: &str, location: &str) -> Vec<(String, String)> {
    vec![(message.to_string(), location.to_string())]
}

#[test]
fn lockstep_8_threads_10ms_7_panic_release_and_debug() {
    let cfg = RaceConfig::first_second_panic(8, Duration::from_millis(10));
    let rel = run_lockstep(&cfg).unwrap();
    assert_eq!(rel.panicked, 7);
    assert_eq!(
        rel.panic_messages(),
        vec![("assertion failed: new >= now - 1000".to_string(), 7)]
    );
    assert_eq!(rel.rounds, 900);
    // Thread 0 wins the first flip (round 10) and runs to the end alone.
    assert_eq!(rel.threads[0].observes, 900);
    assert!(rel.threads[0].panic.is_none());
    for t in &rel.threads[1..] {
        let p = t.panic.as_ref().unwrap();
        assert_eq!((p.round, p.clock), (10, 10 * MS));
        assert_eq!(p.fault.location, "pingora-limits-0.9.0/src/rate.rs:174:17");
        assert_eq!(t.observes, 10);
    }
    assert_eq!(rel.flips, 89); // rounds 10, 20, ..., 890
    let dbg = run_lockstep(&RaceConfig {
        build: Build::Debug,
        ..cfg
    })
    .unwrap();
    assert_eq!(dbg.panicked, 7);
    assert_eq!(
        dbg.panic_messages(),
        vec![("attempt to subtract with overflow".to_string(), 7)]
    );
    let loc = &dbg.threads[7].panic.as_ref().unwrap().fault.location;
    assert_eq!(loc, "pingora-limits-0.9.0/src/rate.rs:174:32");
}

#[test]
fn interval_1s_and_fixed_never_panic() {
    for build in [Build::Release, Build::Debug] {
        for threads in [1, 2, 4, 8] {
            let cfg = RaceConfig {
                build,
                ..RaceConfig::first_second_panic(threads, Duration::from_secs(1))
            };
            assert_eq!(run_lockstep(&cfg).unwrap().panicked, 0);
            assert_eq!(run_random(&cfg, 1).unwrap().panicked, 0);
            let fixed = RaceConfig {
                build,
                fixes: RateFlavor::Fixed.fixes(),
                ..RaceConfig::first_second_panic(threads, Duration::from_millis(10))
            };
            let r = run_lockstep(&fixed).unwrap();
            assert_eq!(r.panicked, 0);
            assert_eq!(r.flips, 89);
            assert_eq!(run_random(&fixed, 1).unwrap().panicked, 0);
        }
    }
}

#[test]
fn panic_table_lockstep() {
    let rows = panic_table(Build::Release, RateFixes::NONE, None).unwrap();
    let got: Vec<(usize, u64, usize)> = rows
        .iter()
        .map(|r| (r.threads, r.interval_ms, r.panicked))
        .collect();
    assert_eq!(
        got,
        vec![
            (1, 10, 0),
            (2, 10, 1),
            (4, 10, 3),
            (8, 10, 7),
            (1, 1000, 0),
            (2, 1000, 0),
            (4, 1000, 0),
            (8, 1000, 0)
        ]
    );
}

#[test]
fn random_is_seeded_and_one_thread_never_panics() {
    let cfg = RaceConfig::first_second_panic(8, Duration::from_millis(10));
    let a = run_random(&cfg, 7).unwrap();
    let b = run_random(&cfg, 7).unwrap();
    assert_eq!(a, b);
    // With 89 flip opportunities in 900 ms all but one thread panic.
    assert_eq!(a.panicked, 7);
    let survivors: Vec<usize> = (0..8).filter(|&i| a.threads[i].panic.is_none()).collect();
    assert_eq!(survivors.len(), 1);
    assert_eq!(a.threads[survivors[0]].observes, 900);
    for seed in 0..10 {
        let one = run_random(
            &RaceConfig::first_second_panic(1, Duration::from_millis(10)),
            seed,
        )
        .unwrap();
        assert_eq!(one.panicked, 0);
        assert_eq!(one.flips, 89);
    }
    let rows = panic_table(Build::Debug, RateFixes::NONE, Some(3)).unwrap();
    let panicked: Vec<usize> = rows.iter().map(|r| r.panicked).collect();
    assert_eq!(panicked, vec![0, 1, 3, 7, 0, 0, 0, 0]);
}

#[test]
fn exhaustive_two_threads_first_flip_counts() {
    // Rounds 0..=10; the flip is due in round 10. Per no-flip round the
    // two 2-step calls interleave C(4,2) = 6 ways. In round 10: 2 × 54
    // interleavings where both load before the first CAS (the loser
    // panics), 2 × 10 where the second loads after it.
    let cfg = RaceConfig {
        duration: 11 * MS,
        ..RaceConfig::first_second_panic(2, Duration::from_millis(10))
    };
    let r = explore_exhaustive(&cfg, DEFAULT_MAX_STATES).unwrap();
    let pre = 6u128.pow(10);
    assert_eq!(r.interleavings, Some(pre * 128));
    assert_eq!(r.interleavings_with_panicked(1), Some(pre * 108));
    assert_eq!(r.interleavings_with_panicked(0), Some(pre * 20));
    assert!((r.share_with_panicked(1) - 108.0 / 128.0).abs() < 1e-12);
    assert!((r.probability_with_panicked(1) - 108.0 / 128.0).abs() < 1e-12);
    assert!((r.log10_interleavings - libm::log10((pre * 128) as f64)).abs() < 1e-9);
    assert_eq!(
        r.faults,
        only_fault(
            "assertion failed: new >= now - 1000",
            "pingora-limits-0.9.0/src/rate.rs:174:17"
        )
    );
    // symmetric: either thread may be the one that panics
    let only0: f64 = r
        .outcomes
        .iter()
        .filter(|o| o.panicked == vec![0])
        .fold(0.0, |acc, o| acc + o.share);
    assert!((only0 - 54.0 / 128.0).abs() < 1e-12);
}

#[test]
fn exhaustive_agrees_with_lockstep_and_fixed() {
    for threads in 1..=3usize {
        let cfg = RaceConfig {
            duration: 25 * MS,
            ..RaceConfig::first_second_panic(threads, Duration::from_millis(10))
        };
        let r = explore_exhaustive(&cfg, DEFAULT_MAX_STATES).unwrap();
        // Lockstep's outcome is one of the interleavings.
        let l = run_lockstep(&cfg).unwrap();
        assert!(r.outcomes.iter().any(|o| o.panicked.len() == l.panicked));
        if threads == 1 {
            assert_eq!(r.share_any_panic(), 0.0);
        } else {
            assert!(r.probability_any_panic() > 0.9, "{threads}: {r:#?}");
            // The interleaving count favours survivors (see `share`).
            assert!(r.share_any_panic() < r.probability_any_panic());
        }
        let fixed = RaceConfig {
            fixes: RateFlavor::Fixed.fixes(),
            ..cfg
        };
        let f = explore_exhaustive(&fixed, DEFAULT_MAX_STATES).unwrap();
        assert_eq!(f.share_any_panic(), 0.0);
        assert_eq!(f.probability_any_panic(), 0.0);
        assert!(f.faults.is_empty());
        // Survivors of a lost race go on to Incr: more interleavings.
        let (fl, rl) = (f.log10_interleavings, r.log10_interleavings);
        if threads == 1 {
            assert_eq!(f.interleavings, Some(1));
            assert_eq!(fl, rl);
        } else {
            assert!(fl > rl + 0.1);
        }
    }
}

#[test]
fn exhaustive_interval_1s_no_panic() {
    let cfg = RaceConfig {
        duration: 15 * MS,
        ..RaceConfig::first_second_panic(3, Duration::from_secs(1))
    };
    let r = explore_exhaustive(&cfg, DEFAULT_MAX_STATES).unwrap();
    assert_eq!(r.share_any_panic(), 0.0);
    // 3 two-step calls per round: 6!/(2!^3) = 90 interleavings.
    assert_eq!(r.interleavings, Some(90u128.pow(15)));
    assert_eq!(r.probability_any_panic(), 0.0);
}

#[test]
fn skewed_clock_reaches_the_past_ms_underflow() {
    // Thread 1 reads the clock 1 ms after thread 0: in round 9 it reads
    // 10 ms and flips; thread 0 read 9 ms. If thread 0 loads
    // last_reset_time after thread 1's CAS, 9 - 10 underflows.
    let cfg = RaceConfig {
        duration: 10 * MS,
        thread_skew: MS,
        build: Build::Debug,
        ..RaceConfig::first_second_panic(2, Duration::from_millis(10))
    };
    let r = explore_exhaustive(&cfg, DEFAULT_MAX_STATES).unwrap();
    let pre = 6u128.pow(9);
    // round 9: 4 interleavings put thread 0's load after the CAS (it
    // panics at once), 18 before it.
    assert_eq!(r.interleavings_with_panicked(1), Some(pre * 4));
    assert_eq!(r.interleavings, Some(pre * 22));
    assert_eq!(
        r.faults,
        only_fault(
            "attempt to subtract with overflow",
            "pingora-limits-0.9.0/src/rate.rs:147:23"
        )
    );
    // Release: no panic, but the window moves back to 9 ms.
    let rel = explore_exhaustive(
        &RaceConfig {
            build: Build::Release,
            ..cfg
        },
        DEFAULT_MAX_STATES,
    )
    .unwrap();
    assert_eq!(rel.share_any_panic(), 0.0);
    assert!(rel.outcomes.iter().any(|o| o.last_reset_ms == 9));
    assert!(rel.outcomes.iter().any(|o| o.last_reset_ms == 10));
    // And the random scheduler sees backward flips over a longer run.
    let long = RaceConfig {
        build: Build::Release,
        duration: 900 * MS,
        ..cfg
    };
    let total: u64 = (0..20)
        .map(|s| run_random(&long, s).unwrap().backward_flips)
        .sum();
    assert!(total > 0);
    // Fixed: saturating, never backwards.
    let fixed = RaceConfig {
        fixes: RateFlavor::Fixed.fixes(),
        ..long
    };
    let total: u64 = (0..20)
        .map(|s| run_random(&fixed, s).unwrap().backward_flips)
        .sum();
    assert_eq!(total, 0);
}

#[test]
fn budget_and_validation_errors() {
    let cfg = RaceConfig {
        duration: 11 * MS,
        ..RaceConfig::first_second_panic(3, Duration::from_millis(10))
    };
    assert_eq!(
        explore_exhaustive(&cfg, 5),
        Err(RaceError::StateBudget {
            round: 0,
            max_states: 5
        })
    );
    assert_eq!(
        run_lockstep(&RaceConfig::first_second_panic(
            0,
            Duration::from_millis(10)
        )),
        Err(RaceError::NoThreads)
    );
    let zero = RaceConfig {
        round: 0,
        ..RaceConfig::first_second_panic(2, Duration::from_millis(10))
    };
    assert_eq!(run_lockstep(&zero), Err(RaceError::ZeroRound));
    assert_eq!(
        explore_exhaustive(
            &RaceConfig::first_second_panic(65, Duration::from_millis(10)),
            10
        ),
        Err(RaceError::TooManyThreads(65))
    );
    match run(
        &cfg,
        Scheduler::Exhaustive {
            max_states: DEFAULT_MAX_STATES,
        },
    )
    .unwrap()
    {
        RaceResult::Exhaustive(r) => assert_eq!(r.threads, 3),
        RaceResult::Run(_) => panic!("wrong kind"),
    }
    assert_eq!(Scheduler::Random { seed: 1 }.name(), "random");
}
