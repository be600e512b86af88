//! Replay throughput: the model against the real `pingora_limits` Estimator
//! on the same event stream, in one run, so the ratio is measured side by side.
//!
//! `cargo bench -p ratelab-bench --bench replay` (add `-- --quick` for a fast pass).
//!
//! * `model`: what ratelab's sweeps do — hash every key once into its cells,
//!   then one plain add per row per event (no atomics: a replay is
//!   single-threaded).
//! * `model_hash_per_event`: the model hashing every event like the real crate.
//! * `pingora_limits`: the real crate, `incr(key, 1)` per event.
//!
//! `conservative_replay` (the order-dependent path, per event):
//! * `model_conservative`: conservative update on the same stream.
//! * `model_stream_and_conservative`: drawing the stream too (the counts
//!   shuffled in bounded chunks, `Workload::for_each_chunk`) — what a sweep
//!   of a conservative sketch does per event.
//! * `pingora_limits`: the real crate's `incr(key, 1)` on the drawn stream.
//!
//! `cell` (one whole sweep cell: events or counts in, error statistics out):
//! * `model_per_key`: the fast path, from the run's per-key counts.
//! * `model_events`: `--replay events`, the stream drawn and replayed.
//! * `pingora_limits`: the real crate on the same stream, then `get` per key.
//!
//! Each group runs the document's workload (10,000 keys, 973,855 events)
//! and a 50,000-key Zipf(1.1) workload of 2,000,000 events.

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use pingora_limits::estimator::Estimator as RealEstimator;
use ratelab::lab::estimator_accuracy::{replay_run, replay_run_crate};
use ratelab::lab::ReplayMode;
use ratelab::model::estimator::{Estimator, EstimatorConfig, FrequencyEstimator, Variant};
use ratelab::workload::{CountWorkload, Workload};

/// The two workloads of the conservative and cell groups.
fn workloads() -> Vec<(&'static str, Workload)> {
    let doc = Workload::from_counts(
        (0..10_000u64)
            .map(|i| (100_000 / (i + 1)).max(10))
            .collect(),
    );
    let zipf = CountWorkload::Zipf {
        keys: 50_000,
        events: 2_000_000,
        s: 1.1,
    }
    .build(std::path::Path::new("bench"), "workload")
    .expect("valid workload");
    vec![("doc", doc), ("zipf50k", zipf)]
}

fn conservative(c: &mut Criterion) {
    let mut group = c.benchmark_group("conservative_replay");
    group.sample_size(10);
    for (name, w) in workloads() {
        let keys = w.key_space();
        let mut events = Vec::with_capacity(w.events() as usize);
        w.for_each_event(1, |k| events.push(k));
        group.throughput(Throughput::Elements(events.len() as u64));
        for (h, s) in [(4usize, 1024usize), (4, 8192)] {
            let shape = format!("{name}/{h}x{s}");
            let mut cfg = EstimatorConfig::new(h, s);
            cfg.variant = Variant::Conservative;
            let table_of = |e: &Estimator| {
                let mut table = Vec::with_capacity(keys * h);
                for k in 0..keys {
                    e.cells_into(&(k as u64).to_le_bytes(), &mut table);
                }
                table
            };
            group.bench_function(BenchmarkId::new("model_conservative", &shape), |b| {
                b.iter(|| {
                    let mut e = Estimator::new(cfg, 7);
                    let table = table_of(&e);
                    e.incr_keys(&table, &events).expect("no overflow");
                    black_box(e.raw_cells()[0])
                })
            });
            group.bench_function(
                BenchmarkId::new("model_stream_and_conservative", &shape),
                |b| {
                    b.iter(|| {
                        let mut e = Estimator::new(cfg, 7);
                        let table = table_of(&e);
                        w.for_each_chunk(1, |chunk| {
                            e.incr_keys(&table, chunk).expect("no overflow");
                        });
                        black_box(e.raw_cells()[0])
                    })
                },
            );
            group.bench_function(BenchmarkId::new("pingora_limits", &shape), |b| {
                b.iter(|| {
                    let e = RealEstimator::new(h, s);
                    let mut acc = 0isize;
                    for &k in &events {
                        acc = acc.wrapping_add(e.incr(u64::from(k), 1));
                    }
                    black_box(acc)
                })
            });
        }
    }
    group.finish();
}

fn cell(c: &mut Criterion) {
    let mut group = c.benchmark_group("cell");
    group.sample_size(10);
    for (name, w) in workloads() {
        group.throughput(Throughput::Elements(w.events()));
        for (h, s) in [(4usize, 1024usize), (4, 8192)] {
            let shape = format!("{name}/{h}x{s}");
            let cfg = [EstimatorConfig::new(h, s)];
            for (label, mode) in [
                ("model_per_key", ReplayMode::Auto),
                ("model_events", ReplayMode::Events),
            ] {
                group.bench_function(BenchmarkId::new(label, &shape), |b| {
                    b.iter(|| black_box(replay_run(&w, &cfg, 1, 7, mode)[0].stats))
                });
            }
            group.bench_function(BenchmarkId::new("pingora_limits", &shape), |b| {
                b.iter(|| black_box(replay_run_crate(&w, &cfg, 1)[0].stats))
            });
        }
    }
    group.finish();
}

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

criterion_group!(benches, estimator, conservative, cell);
criterion_main!(benches);
