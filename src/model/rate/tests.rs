//! Unit tests of the model, pinned to the upstream source and its own tests.

use super::*;
use crate::clock::SECOND;
use crate::model::estimator::{ExactCounter, Overflow};

const MS: Nanos = MILLI;

fn exact(interval: Duration, start: Nanos) -> Rate<ExactCounter> {
    Rate::from_slots(interval, start, ExactCounter::new(), ExactCounter::new())
}

/// The rate timeline: interval 1 s, 10 events in the first 450 ms (at 0, 50, …, 450 ms),
/// then at each read time `rate()` and then `rate_with(proportional)`.
#[test]
fn the_rate_timeline_is_exact() {
    let mut r = Rate::new(Duration::from_secs(1), 0, 7);
    for i in 0..10u64 {
        assert_eq!(r.observe(b"k", 1, i * 50 * MS), Ok(i as i64 + 1));
    }
    let reads = [456u64, 902, 1108, 1510, 2104, 3208];
    let mut rates = Vec::new();
    let mut props = Vec::new();
    for t in reads {
        rates.push(r.rate(b"k", t * MS).unwrap());
        props.push(
            r.rate_with(b"k", t * MS, proportional_rate_estimate)
                .unwrap(),
        );
        if t == 1108 {
            // This read flipped: the new window starts at 1108 ms.
            assert_eq!(r.last_reset_ms(), 1108);
            assert_eq!(r.window_start(), 1108 * MS);
        }
    }
    assert_eq!(rates, vec![0.0, 0.0, 10.0, 10.0, 10.0, 0.0]);
    // Fractions 0.456, 0.902, 0 (flipped by the rate() just before),
    // 402/1000, 996/1000, 0 (both slots cleared).
    let expected = [
        10.0,
        10.0,
        10.0,
        10.0 * (1.0 - 402.0 / 1000.0),
        10.0 * (1.0 - 996.0 / 1000.0),
        0.0,
    ];
    assert_eq!(props, expected.to_vec());
    assert!((props[3] - 5.98).abs() < 1e-12);
    assert!((props[4] - 0.04).abs() < 1e-12);
    // The table prints {:.1}: 6.0 and 0.0.
    assert_eq!(format!("{:.1}", props[3]), "6.0");
    assert_eq!(format!("{:.1}", props[4]), "0.0");
    assert_eq!(r.last_reset_ms(), 3208);
}

#[test]
fn order_matters_rate_with_first_at_the_flip() {
    // If rate_with is the call that flips at 1108, it sees the pre-flip
    // past_ms = 1108: prev = 10, curr = 0, fraction = 108/1000.
    let mut r = exact(Duration::from_secs(1), 0);
    for i in 0..10u64 {
        r.observe(b"k", 1, i * 50 * MS).unwrap();
    }
    let c = r.components(b"k", 1108 * MS).unwrap();
    assert_eq!((c.prev_samples, c.curr_samples), (10, 0));
    assert_eq!(c.current_interval_fraction, 108.0 / 1000.0);
    assert_eq!(proportional_rate_estimate(c), 10.0 * (1.0 - 0.108));
}

#[test]
fn time_is_whole_ms_since_a_virtual_start() {
    let start = 5 * SECOND + 123_456;
    let mut r = exact(Duration::from_millis(100), start);
    r.observe(b"a", 1, start).unwrap();
    // 99.999999 ms after start truncates to 99 ms: no flip.
    assert_eq!(r.maybe_reset(start + 100 * MS - 1), Ok(99));
    assert_eq!(r.observe(b"a", 1, start + 100 * MS - 1), Ok(2));
    // exactly 100 ms: flips, returns the pre-flip past_ms.
    assert_eq!(r.maybe_reset(start + 100 * MS), Ok(100));
    assert_eq!(r.last_reset_ms(), 100);
    assert_eq!(r.observe(b"a", 1, start + 100 * MS), Ok(1));
    // before start: duration_since saturates to 0 ms.
    let mut r = exact(Duration::from_millis(100), start);
    assert_eq!(r.elapsed_ms(start - 1), 0);
    assert_eq!(r.maybe_reset(0), Ok(0));
}

#[test]
fn real_crate_unit_test_observe_rate() {
    // pingora's own test_observe_rate, on the virtual clock.
    let mut r = Rate::new(Duration::from_secs(1), 0, 1);
    assert_eq!(r.observe(b"1", 3, 0), Ok(3));
    assert_eq!(r.observe(b"1", 2, 0), Ok(5));
    assert_eq!(r.rate(b"1", 0), Ok(0.0));
    assert_eq!(r.observe(b"1", 4, SECOND), Ok(4));
    assert_eq!(r.rate(b"1", SECOND), Ok(5.0));
    assert_eq!(r.rate(b"1", 2 * SECOND), Ok(4.0));
    assert_eq!(r.rate(b"1", 3 * SECOND), Ok(0.0));
}

#[test]
fn real_crate_unit_test_custom_90_10() {
    let f = |c: RateComponents| {
        (c.prev_samples as f64 * 0.1 + c.curr_samples as f64 * 0.9) / c.interval.as_secs_f64()
    };
    let mut r = Rate::new(Duration::from_secs(1), 0, 1);
    r.observe(b"1", 3, 0).unwrap();
    r.observe(b"1", 2, 0).unwrap();
    assert_eq!(r.rate_with(b"1", 0, f), Ok(5. * 0.9));
    assert_eq!(r.observe(b"1", 4, SECOND), Ok(4));
    assert_eq!(r.rate_with(b"1", SECOND, f), Ok(5. * 0.1 + 4. * 0.9));
    assert_eq!(r.rate_with(b"1", 2 * SECOND, f), Ok(4. * 0.1));
    assert_eq!(r.rate_with(b"1", 3 * SECOND, f), Ok(0.0));
}

#[test]
fn two_intervals_clear_both_slots() {
    let mut r = exact(Duration::from_millis(10), 0);
    r.observe(b"a", 5, 0).unwrap();
    r.observe(b"a", 7, 12 * MS).unwrap(); // flip at 12: prev = 5
    assert_eq!(r.previous_slot().get(b"a"), 5);
    // 31 - 12 = 19 < 20: ordinary flip, prev = 7.
    assert_eq!(r.maybe_reset(31 * MS), Ok(19));
    assert_eq!(r.previous_slot().get(b"a"), 7);
    // 51 - 31 = 20 >= 20: both cleared, rate 0 even though prev existed.
    r.observe(b"a", 3, 35 * MS).unwrap();
    assert_eq!(r.rate(b"a", 51 * MS), Ok(0.0));
    assert_eq!(r.previous_slot().get(b"a"), 0);
    assert_eq!(r.current_slot().get(b"a"), 0);
    assert_eq!(r.last_reset_ms(), 51);
}

#[test]
fn rate_uses_truncated_ms_but_proportional_uses_the_duration() {
    // 1.5 ms: reset_interval_ms = 1, as_secs_f64 = 0.0015.
    let mut r = exact(Duration::from_micros(1500), 0);
    assert_eq!(r.reset_interval_ms(), 1);
    r.observe(b"a", 3, 0).unwrap();
    assert_eq!(r.rate(b"a", MS), Ok(3.0 * 1000.0 / 1.0));
    let p = r.rate_with(b"a", MS, proportional_rate_estimate).unwrap();
    assert_eq!(p, 3.0 / 0.0015);
    assert_ne!(p, 3000.0);
}

#[test]
fn zero_ms_interval_faults_in_rate_with_only() {
    for build in [Build::Release, Build::Debug] {
        let mut r = exact(Duration::from_micros(500), 0).with_build(build);
        assert_eq!(r.reset_interval_ms(), 0);
        // every call flips and clears both slots
        assert_eq!(r.observe(b"a", 2, 0), Ok(2));
        assert_eq!(r.observe(b"a", 2, 0), Ok(2));
        assert_eq!(r.rate(b"a", 0), Ok(0.0));
        let err = r.rate_with(b"a", 0, proportional_rate_estimate);
        assert_eq!(err, Err(remainder_by_zero_fault()));
        let mut fixed = exact(Duration::from_micros(500), 0).with_fixes(RateFixes {
            zero_interval_fraction: true,
            ..RateFixes::NONE
        });
        let c = fixed.components(b"a", 0).unwrap();
        assert_eq!(c.current_interval_fraction, 0.0);
    }
    assert_eq!(
        remainder_by_zero_fault().location,
        "pingora-limits-0.9.0/src/rate.rs:217:40"
    );
}

#[test]
fn doubling_overflows_only_in_debug() {
    let huge = Duration::from_millis(u64::MAX);
    let mut dbg = exact(huge, 0).with_build(Build::Debug);
    assert_eq!(dbg.observe(b"a", 1, 0), Ok(1));
    assert_eq!(
        dbg.rate(b"a", 0),
        Err(multiply_overflow_fault(DoubleSite::Rate))
    );
    assert_eq!(
        dbg.components(b"a", 0).map(|_| ()),
        Err(multiply_overflow_fault(DoubleSite::RateWith))
    );
    let mut rel = exact(huge, 0);
    assert_eq!(rel.rate(b"a", 0), Ok(0.0));
    let mut fixed = exact(huge, 0)
        .with_build(Build::Debug)
        .with_fixes(RateFlavor::Fixed.fixes());
    assert_eq!(fixed.rate(b"a", 0), Ok(0.0));
    assert_eq!(
        multiply_overflow_fault(DoubleSite::MaybeReset).location,
        "pingora-limits-0.9.0/src/rate.rs:167:40"
    );
}

#[test]
fn step_machine_single_thread_sequence() {
    let mut r = exact(Duration::from_millis(10), 0);
    r.observe(b"a", 1, 0).unwrap();
    // Not due: ReadClock, LoadLastReset, done.
    let mut op = MaybeReset::new();
    let mut seen = Vec::new();
    while let Some(s) = op.next_step() {
        seen.push(s);
        op.step(&mut r, 5 * MS).unwrap();
    }
    assert_eq!(seen, vec![ResetStep::ReadClock, ResetStep::LoadLastReset]);
    assert_eq!(op.result(), Some(&Ok(5)));
    // Due after 2 intervals: all seven steps.
    let mut op = MaybeReset::new();
    let mut seen = Vec::new();
    while let Some(s) = op.next_step() {
        seen.push(s);
        op.step(&mut r, 25 * MS).unwrap();
    }
    use ResetStep::*;
    assert_eq!(
        seen,
        vec![
            ReadClock,
            LoadLastReset,
            LoadFlag,
            CompareExchange,
            ClearPrevious,
            Flip,
            ClearStale
        ]
    );
    assert_eq!(op.cas_outcome(), Some(CasOutcome::Won));
    assert!(!r.red_is_current());
    // stepping a finished call is a no-op returning the same value
    assert_eq!(op.step(&mut r, 99 * MS), Ok(StepResult::Done(25)));
    assert_eq!(r.last_reset_ms(), 25);
}

/// Two callers race one flip inside the first second (interval < 1 s):
/// the loser faults, with the build's message.
fn race_two(build: Build, fixes: RateFixes, t: Nanos) -> Result<u64, Fault> {
    let mut r = exact(Duration::from_millis(10), 0)
        .with_build(build)
        .with_fixes(fixes);
    let (mut a, mut b) = (MaybeReset::new(), MaybeReset::new());
    for _ in 0..3 {
        a.step(&mut r, t).unwrap(); // ReadClock, LoadLastReset, LoadFlag
        b.step(&mut r, t).unwrap();
    }
    assert_eq!(a.step(&mut r, t), Ok(StepResult::Continue)); // a wins
    let lost = b.step(&mut r, t);
    assert_eq!(b.cas_outcome(), Some(CasOutcome::Lost { new: t / MS }));
    lost.map(|s| match s {
        StepResult::Done(p) => p,
        StepResult::Continue => u64::MAX,
    })
}

#[test]
fn cas_loser_in_first_second_faults_per_build() {
    let rel = race_two(Build::Release, RateFixes::NONE, 10 * MS).unwrap_err();
    assert_eq!(rel.message, "assertion failed: new >= now - 1000");
    assert_eq!(rel.location, "pingora-limits-0.9.0/src/rate.rs:174:17");
    let dbg = race_two(Build::Debug, RateFixes::NONE, 10 * MS).unwrap_err();
    assert_eq!(dbg.message, "attempt to subtract with overflow");
    assert_eq!(dbg.location, "pingora-limits-0.9.0/src/rate.rs:174:32");
    // After the first second the loser is fine in both builds.
    assert_eq!(
        race_two(Build::Release, RateFixes::NONE, 1000 * MS),
        Ok(1000)
    );
    assert_eq!(race_two(Build::Debug, RateFixes::NONE, 1000 * MS), Ok(1000));
    // Fixed: no fault in the first second either.
    let fix = RateFixes {
        loser_assert_saturating: true,
        ..RateFixes::NONE
    };
    assert_eq!(race_two(Build::Release, fix, 10 * MS), Ok(10));
    assert_eq!(race_two(Build::Debug, fix, 10 * MS), Ok(10));
}

#[test]
fn stale_clock_reading_moves_the_window_backwards_in_release() {
    // Thread A reads the clock at 19 ms, thread B at 20 ms; B flips first
    // (last_reset 0 -> 20), then A loads last_reset = 20 > 19.
    let setup = |build: Build, fixes: RateFixes| {
        let mut r = exact(Duration::from_millis(10), 0)
            .with_build(build)
            .with_fixes(fixes);
        r.observe(b"k", 4, 0).unwrap();
        r.observe(b"k", 3, 12 * MS).unwrap(); // flip at 12, prev = 4
        r.observe(b"k", 6, 19 * MS).unwrap();
        let mut a = MaybeReset::new();
        a.step(&mut r, 21 * MS).unwrap(); // ReadClock: 21
        assert_eq!(r.maybe_reset(22 * MS), Ok(10)); // B flips at 22
        r.observe(b"k", 2, 22 * MS).unwrap();
        (r, a)
    };
    // Release: past = 21 - 22 wraps, A wins the CAS 22 -> 21 and clears
    // both slots.
    let (mut r, mut a) = setup(Build::Release, RateFixes::NONE);
    let mut last = Ok(StepResult::Continue);
    while a.next_step().is_some() {
        last = a.step(&mut r, 0);
    }
    assert_eq!(last, Ok(StepResult::Done(u64::MAX)));
    assert_eq!(r.last_reset_ms(), 21);
    assert_eq!(r.current_slot().get(b"k"), 0);
    assert_eq!(r.previous_slot().get(b"k"), 0);
    // Debug: the subtraction panics.
    let (mut r, mut a) = setup(Build::Debug, RateFixes::NONE);
    assert_eq!(a.step(&mut r, 0), Err(past_ms_subtract_fault()));
    assert_eq!(r.last_reset_ms(), 22);
    // Fixed: past 0, nothing happens.
    let (mut r, mut a) = setup(Build::Debug, RateFlavor::Fixed.fixes());
    assert_eq!(a.step(&mut r, 0), Ok(StepResult::Done(0)));
    assert_eq!(r.current_slot().get(b"k"), 2);
    assert_eq!(r.previous_slot().get(b"k"), 6 + 3);
}

#[test]
fn observe_is_the_composition_of_steps() {
    let mut a = exact(Duration::from_millis(10), 0);
    let mut b = exact(Duration::from_millis(10), 0);
    for (i, t) in [0u64, 3, 10, 11, 25, 26, 60, 61, 69, 70].iter().enumerate() {
        let key = [i as u8 % 3];
        let via_api = a.observe(&key, 2, t * MS);
        let mut op = ObserveOp::new();
        let mut steps = 0;
        let via_steps = loop {
            steps += 1;
            match op.step(&mut b, t * MS, &key, 2) {
                Ok(StepResult::Done(v)) => break Ok(v),
                Ok(StepResult::Continue) => {}
                Err(e) => break Err(e),
            }
        };
        assert_eq!(via_api, via_steps);
        assert!(steps >= 3);
        assert_eq!(op.next_step(), None);
        assert_eq!(a.last_reset_ms(), b.last_reset_ms());
        assert_eq!(a.red_is_current(), b.red_is_current());
    }
}

#[test]
fn sketch_overflow_fault_passes_through_observe() {
    let mut cfg = EstimatorConfig::new(1, 1);
    cfg.overflow = Overflow::Checked;
    let mut r = Rate::new_with_estimator_config(Duration::from_secs(1), 0, cfg, 3);
    assert_eq!(r.observe(b"a", i64::MAX, 0), Ok(i64::MAX));
    let fault = r.observe(b"a", 1, 0).unwrap_err();
    assert_eq!(fault.message, "attempt to add with overflow");
}

#[test]
fn default_rate_uses_two_4x1024_sketches_with_different_seeds() {
    let r = Rate::new(Duration::from_secs(1), 0, 11);
    assert_eq!(r.current_slot().config().hashes, RATE_HASHES);
    assert_eq!(r.current_slot().config().slots, RATE_SLOTS);
    assert_eq!(r.current_slot().memory_bytes(), 32 * 1024);
    assert_ne!(
        r.current_slot().cells(b"key"),
        r.previous_slot().cells(b"key")
    );
}

#[test]
fn static_fn_matches_the_function() {
    let c = RateComponents {
        prev_samples: 8,
        curr_samples: 3,
        interval: Duration::from_millis(500),
        current_interval_fraction: 0.25,
    };
    assert_eq!(
        PROPORTIONAL_RATE_ESTIMATE_CALC_FN(c),
        (8.0 * 0.75 + 3.0) / 0.5
    );
}

/// The real crate, in real time, against the model fed the same ms
/// offsets. Interval 200 ms; every call is at least 50 ms away from 200 or
/// 400 ms after the last flip, so sleep jitter cannot change a flip. The
/// fraction is the only value that depends on the exact millisecond: it
/// is compared with a 25 ms tolerance, everything else exactly.
#[test]
fn conforms_to_real_pingora_rate() {
    use pingora_limits::rate::{Rate as Real, RateComponents as RealComponents};
    use std::time::Instant;

    #[derive(Debug, Clone, Copy)]
    enum Call {
        Observe(&'static str, isize),
        Rate(&'static str),
        RateWith(&'static str),
    }
    use Call::*;
    let schedule: &[(u64, Call)] = &[
        (0, Observe("a", 1)),
        (40, Observe("a", 2)),
        (40, Observe("b", 1)),
        (100, Rate("a")),
        (100, RateWith("a")),
        (250, Observe("a", 1)), // flips at 250
        (300, Rate("a")),
        (300, Rate("b")),
        (300, RateWith("b")),
        (380, Observe("c", 5)),
        (520, Observe("b", 1)), // flips at 520
        (600, Rate("c")),
        (600, Rate("a")),
        (600, RateWith("a")),
        (1000, Rate("a")), // 480 ms >= 2 intervals: clears both
        (1050, RateWith("b")),
        (1050, Observe("a", 1)),
        (1150, Observe("a", 1)),
        (1150, Rate("a")),
        (1260, Rate("a")), // flips at 1260
        (1260, RateWith("a")),
    ];
    let interval = Duration::from_millis(200);
    let real = Real::new(interval);
    let t0 = Instant::now();
    let mut model = exact(interval, 0);
    for &(at, call) in schedule {
        let target = t0 + Duration::from_millis(at);
        let now = Instant::now();
        if target > now {
            std::thread::sleep(target - now);
        }
        let v = at * MS;
        match call {
            Observe(k, n) => {
                let got = real.observe(&k, n);
                let want = model.observe(k.as_bytes(), n as i64, v).unwrap();
                assert_eq!(got as i64, want, "observe {k} at {at}");
            }
            Rate(k) => {
                let got = real.rate(&k);
                let want = model.rate(k.as_bytes(), v).unwrap();
                assert_eq!(got, want, "rate {k} at {at}");
            }
            RateWith(k) => {
                let got = real.rate_with(&k, |c: RealComponents| c);
                let want = model.components(k.as_bytes(), v).unwrap();
                assert_eq!(got.prev_samples as i64, want.prev_samples, "{k}@{at}");
                assert_eq!(got.curr_samples as i64, want.curr_samples, "{k}@{at}");
                assert_eq!(got.interval, want.interval);
                let d = (got.current_interval_fraction - want.current_interval_fraction).abs();
                assert!(d <= 0.125, "fraction {k}@{at}: {got:?} vs {want:?}");
            }
        }
    }
    assert_eq!(model.last_reset_ms(), 1260);
    assert!(t0.elapsed() < Duration::from_secs(3));
}

#[test]
fn real_crate_zero_interval_panics_like_the_model() {
    use pingora_limits::rate::{Rate as Real, PROPORTIONAL_RATE_ESTIMATE_CALC_FN as F};
    let real = Real::new(Duration::from_micros(500));
    assert_eq!(real.observe(&"a", 2), 2);
    assert_eq!(real.rate(&"a"), 0.0);
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        real.rate_with(&"a", F);
    }));
    let payload = caught.unwrap_err();
    let msg = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap();
    assert_eq!(msg, remainder_by_zero_fault().message);
}

/// `maybe_reset`'s in-window shortcut and `observe` decide exactly as the
/// step machines run back to back, in every build and with every fix, on
/// calls at scattered times (going back, too: the release build's wrapping
/// `past_ms`, the debug build's panic).
#[test]
fn the_shortcuts_are_the_machines_run_back_to_back() {
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move |n: u64| {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) % n
    };
    for build in [Build::Release, Build::Debug] {
        for fixes in [RateFixes::NONE, RateFlavor::Fixed.fixes()] {
            for interval_ms in [0u64, 7, 100] {
                let make = || {
                    exact(Duration::from_millis(interval_ms), 5 * MS)
                        .with_build(build)
                        .with_fixes(fixes)
                };
                let (mut a, mut b) = (make(), make());
                let mut t = 0u64;
                for _ in 0..400 {
                    // Mostly forward, sometimes back.
                    t = if next(10) == 0 {
                        t.saturating_sub(next(300) * MS)
                    } else {
                        t + next(60) * MS + next(MS)
                    };
                    let key = [next(4) as u8];
                    if next(2) == 0 {
                        let mut op = MaybeReset::new();
                        let via_steps = loop {
                            match op.step(&mut b, t) {
                                Ok(StepResult::Done(v)) => break Ok(v),
                                Ok(StepResult::Continue) => {}
                                Err(e) => break Err(e),
                            }
                        };
                        assert_eq!(a.maybe_reset(t), via_steps, "{build:?} {interval_ms} {t}");
                    } else {
                        let mut op = ObserveOp::new();
                        let via_steps = loop {
                            match op.step(&mut b, t, &key, 1) {
                                Ok(StepResult::Done(v)) => break Ok(v),
                                Ok(StepResult::Continue) => {}
                                Err(e) => break Err(e),
                            }
                        };
                        assert_eq!(
                            a.observe(&key, 1, t),
                            via_steps,
                            "{build:?} {interval_ms} {t}"
                        );
                    }
                    assert_eq!(a.last_reset_ms(), b.last_reset_ms());
                    assert_eq!(a.red_is_current(), b.red_is_current());
                    assert_eq!(a.current_slot().get(&key), b.current_slot().get(&key));
                    assert_eq!(a.previous_slot().get(&key), b.previous_slot().get(&key));
                }
            }
        }
    }
}
