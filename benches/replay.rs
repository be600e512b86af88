//! Replay throughput: the model against the real `pingora_limits` Estimator
//! on the same event stream, in one run, so the ratio is measured side by side.
//!
//! `cargo bench --bench replay` (add `-- --quick` for a fast pass).
//!
//! * `model`: what ratelab's sweeps do — hash every key once into its cells,
//!   then one plain add per row per event (no atomics: a replay is
//!   single-threaded).
//! * `model_hash_per_event`: the model hashing every event like the real crate.
//! * `pingora_limits`: the real crate, `incr(key, 1)` per event.

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use pingora_limits::estimator::Estimator as RealEstimator;
use ratelab::model::estimator::{Estimator, EstimatorConfig, FrequencyEstimator};
use ratelab::workload::Workload;

fn stream() -> (Workload, Vec<u32>) {
    // The document's workload: 10,000 keys, 973,855 events.
    let w = Workload::from_counts(
        (0..10_000u64)
            .map(|i| (100_000 / (i + 1)).max(10))
            .collect(),
    );
    let mut events = Vec::with_capacity(w.events() as usize);
    w.for_each_event(1, |k| events.push(k));
    (w, events)
}

fn estimator(c: &mut Criterion) {
    let (w, events) = stream();
    let keys = w.key_space();
    let mut group = c.benchmark_group("estimator_replay");
    group.throughput(Throughput::Elements(events.len() as u64));
    group.sample_size(10);
    for (h, s) in [(4usize, 1024usize), (4, 8192), (8, 65536)] {
        let shape = format!("{h}x{s}");
        group.bench_with_input(BenchmarkId::new("model", &shape), &(h, s), |b, &(h, s)| {
            b.iter(|| {
                let mut e = Estimator::new(EstimatorConfig::new(h, s), 7);
                let mut table = Vec::with_capacity(keys * h);
                for k in 0..keys {
                    e.cells_into(&(k as u64).to_le_bytes(), &mut table);
                }
                let mut acc = 0i64;
                for &k in &events {
                    let k = k as usize;
                    acc = acc.wrapping_add(e.incr_cells(&table[k * h..k * h + h], 1).unwrap_or(0));
                }
                black_box(acc)
            })
        });
        group.bench_with_input(
            BenchmarkId::new("model_hash_per_event", &shape),
            &(h, s),
            |b, &(h, s)| {
                b.iter(|| {
                    let mut e = Estimator::new(EstimatorConfig::new(h, s), 7);
                    let mut acc = 0i64;
                    for &k in &events {
                        acc = acc.wrapping_add(e.incr(&u64::from(k).to_le_bytes(), 1).unwrap_or(0));
                    }
                    black_box(acc)
                })
            },
        );
        group.bench_with_input(
            BenchmarkId::new("pingora_limits", &shape),
            &(h, s),
            |b, &(h, s)| {
                b.iter(|| {
                    let e = RealEstimator::new(h, s);
                    let mut acc = 0isize;
                    for &k in &events {
                        acc = acc.wrapping_add(e.incr(u64::from(k), 1));
                    }
                    black_box(acc)
                })
            },
        );
    }
    group.finish();
}

criterion_group!(benches, estimator);
criterion_main!(benches);
