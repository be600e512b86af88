use super::*;
use crate::clock::{Nanos, SECOND};
use std::path::Path;

fn poisson(rate: f64, secs: f64) -> TimedWorkload {
    TimedWorkload::Poisson {
        keys: KeyChoice::Uniform { keys: 10 },
        rate,
        duration_s: secs,
    }
}

#[test]
fn poisson_has_the_right_volume_and_is_sorted_and_seeded() {
    let w = poisson(1000.0, 20.0);
    let ev: Vec<(Nanos, u64)> = w.events(1).collect();
    assert!(
        (ev.len() as f64 - 20_000.0).abs() < 4.0 * 20_000f64.sqrt(),
        "{}",
        ev.len()
    );
    assert!(ev.windows(2).all(|p| p[0].0 <= p[1].0));
    assert!(ev.iter().all(|e| e.0 < 20 * SECOND && e.1 < 10));
    assert_eq!(ev, w.events(1).collect::<Vec<_>>());
    assert_ne!(ev, w.events(2).collect::<Vec<_>>());
}

#[test]
fn on_off_is_burstier_than_poisson() {
    // Same mean volume; on/off concentrates arrivals: more empty 100 ms bins.
    let on_off = TimedWorkload::OnOff {
        keys: KeyChoice::Uniform { keys: 1 },
        rate: 200.0,
        mean_on_s: 0.5,
        mean_off_s: 0.5,
        duration_s: 60.0,
    };
    let empty_bins = |ev: Vec<(Nanos, u64)>| {
        let mut bins = vec![0u32; 600];
        for (t, _) in ev {
            bins[(t / (SECOND / 10)) as usize] += 1;
        }
        bins.iter().filter(|&&b| b == 0).count()
    };
    let a = empty_bins(on_off.events(3).collect());
    let b = empty_bins(poisson(100.0, 60.0).events(3).collect());
    assert!(a > 150 && b < 5, "on/off empty bins {a}, poisson {b}");
}

#[test]
fn flash_crowd_key_spikes_only_in_its_window() {
    let w = TimedWorkload::FlashCrowd {
        keys: KeyChoice::Zipf { keys: 100, s: 1.0 },
        rate: 100.0,
        flash_rate: 1000.0,
        flash_start_s: 2.0,
        flash_duration_s: 1.0,
        duration_s: 5.0,
    };
    let flash: Vec<Nanos> = w.events(5).filter(|e| e.1 == 100).map(|e| e.0).collect();
    assert!(flash.len() > 800 && flash.len() < 1200, "{}", flash.len());
    assert!(flash.iter().all(|&t| (2 * SECOND..3 * SECOND).contains(&t)));
    assert_eq!(w.key_space(), 101);
}

#[test]
fn cardinality_attack_sends_per_key_requests_to_many_new_keys() {
    let w = TimedWorkload::CardinalityAttack {
        keys: KeyChoice::Uniform { keys: 10 },
        rate: 10.0,
        attack_keys: 5000,
        per_key: 3,
        attack_rate: 100_000.0,
        attack_start_s: 1.0,
        duration_s: 2.0,
    };
    let mut per = std::collections::HashMap::new();
    for (_, k) in w.events(9).filter(|e| e.1 >= 10) {
        *per.entry(k).or_insert(0) += 1;
    }
    assert_eq!(per.len(), 5000);
    assert!(per.values().all(|&c| c == 3));
}

#[test]
fn mix_offsets_keys_and_merges_in_time_order() {
    let diurnal = TimedWorkload::Diurnal {
        keys: KeyChoice::Uniform { keys: 5 },
        base_rate: 50.0,
        peak_rate: 100.0,
        period_s: 1.0,
        duration_s: 1.0,
    };
    let w = TimedWorkload::Mix {
        parts: vec![poisson(100.0, 1.0), diurnal],
    };
    let ev: Vec<(Nanos, u64)> = w.events(1).collect();
    assert!(ev.windows(2).all(|p| p[0].0 <= p[1].0));
    assert!(ev.iter().any(|e| e.1 >= 10) && ev.iter().any(|e| e.1 < 10));
    assert!(ev.iter().all(|e| e.1 < 15));
    assert_eq!(w.key_space(), 15);
}

#[test]
fn diurnal_follows_its_curve() {
    let w = TimedWorkload::Diurnal {
        keys: KeyChoice::Uniform { keys: 1 },
        base_rate: 10.0,
        peak_rate: 1000.0,
        period_s: 100.0,
        duration_s: 100.0,
    };
    let ev: Vec<Nanos> = w.events(2).map(|e| e.0).collect();
    let first = ev.iter().filter(|&&t| t < 10 * SECOND).count();
    let middle = ev
        .iter()
        .filter(|&&t| (45 * SECOND..55 * SECOND).contains(&t))
        .count();
    assert!(middle > 5 * first, "peak {middle} vs trough {first}");
}

#[test]
fn validation_names_fields() {
    let e = poisson(f64::NAN, 1.0)
        .validate(Path::new("s.json"), "workload")
        .unwrap_err();
    assert_eq!(
        e.message(),
        "s.json: field workload.rate: value NaN: expected a finite number > 0"
    );
    let e = poisson(1e12, 1000.0)
        .validate(Path::new("s.json"), "workload")
        .unwrap_err();
    assert!(e.message().contains("field workload.rate"), "{e}");
    let e = TimedWorkload::Mix { parts: vec![] }
        .validate(Path::new("s.json"), "w")
        .unwrap_err();
    assert!(e.message().contains("field w.parts: empty"), "{e}");
}
