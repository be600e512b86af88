//! Throughput of the window and pacer models (and of whole commands), with
//! the real `pingora_limits::rate::Rate` beside the Rate model on the same
//! key stream. `cargo bench -p ratelab-bench --bench limiters` (add `-- --quick` for a pass).

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use pingora_limits::rate::Rate as RealRate;
use ratelab::clock::MILLI;
use ratelab::model::estimator::EstimatorConfig;
use ratelab::model::rate::Rate;
use ratelab::model::uber_ratelimit::{LeakyBucket, LeakyBucketConfig, LeakyVariant};
use ratelab::model::x_time_rate::TokenBucket;
use ratelab::workload::Workload;
use std::time::Duration;

const CALLS: usize = 200_000;

/// The document's harmonic key stream, first CALLS events.
fn keys() -> Vec<u64> {
    let w = Workload::from_counts(
        (0..10_000u64)
            .map(|i| (100_000 / (i + 1)).max(10))
            .collect(),
    );
    let mut out = Vec::with_capacity(CALLS);
    w.for_each_event(1, |k| {
        if out.len() < CALLS {
            out.push(u64::from(k));
        }
    });
    out
}

fn rate_observe(c: &mut Criterion) {
    let keys = keys();
    let mut g = c.benchmark_group("rate_observe");
    g.throughput(Throughput::Elements(keys.len() as u64));
    g.sample_size(10);
    g.bench_function(BenchmarkId::new("model", "4x1024"), |b| {
        b.iter(|| {
            let mut r = Rate::new_with_estimator_config(
                Duration::from_secs(1),
                0,
                EstimatorConfig::new(4, 1024),
                7,
            );
            let mut acc = 0i64;
            for (i, k) in keys.iter().enumerate() {
                // 200k calls over 2 s of virtual time: two flips.
                let now = i as u64 * 10 * MILLI / 1000;
                acc = acc.wrapping_add(r.observe(&k.to_le_bytes(), 1, now).unwrap_or(0));
            }
            black_box(acc)
        })
    });
    g.bench_function(BenchmarkId::new("pingora_limits", "4x1024"), |b| {
        b.iter(|| {
            let r = RealRate::new(Duration::from_secs(1));
            let mut acc = 0isize;
            for k in &keys {
                acc = acc.wrapping_add(r.observe(k, 1));
            }
            black_box(acc)
        })
    });
    g.finish();
}

fn pacers(c: &mut Criterion) {
    let mut g = c.benchmark_group("pacers");
    g.throughput(Throughput::Elements(CALLS as u64));
    g.sample_size(10);
    g.bench_function("token_bucket_allow_n", |b| {
        b.iter(|| {
            let mut tb = TokenBucket::new(1000.0, 50);
            let mut n = 0u32;
            for i in 0..CALLS as i64 {
                n += u32::from(tb.allow_n(1_000_000_000_000 + i * 300_000, 1));
            }
            black_box(n)
        })
    });
    g.bench_function("token_bucket_reserve_n", |b| {
        b.iter(|| {
            let mut tb = TokenBucket::new(1000.0, 50);
            let mut d = 0i64;
            for i in 0..CALLS as i64 {
                d = d.wrapping_add(
                    tb.reserve_n(1_000_000_000_000 + i * 300_000, 1)
                        .delay_from(1_000_000_000_000 + i * 300_000),
                );
            }
            black_box(d)
        })
    });
    for variant in [
        LeakyVariant::Atomic,
        LeakyVariant::AtomicInt64,
        LeakyVariant::Mutex,
    ] {
        g.bench_function(
            BenchmarkId::new("leaky_bucket_take", format!("{variant:?}")),
            |b| {
                b.iter(|| {
                    let cfg = LeakyBucketConfig::new(1000)
                        .variant(variant)
                        .unix_origin(1_700_000_000_000_000_000);
                    let Ok(mut lb) = LeakyBucket::new(cfg) else {
                        return 0;
                    };
                    let mut last = 0i64;
                    for i in 0..CALLS as i64 {
                        last = lb.take(i * 700_000).return_ns;
                    }
                    black_box(last)
                })
            },
        );
    }
    g.finish();
}

fn commands(c: &mut Criterion) {
    let root = env!("CARGO_MANIFEST_DIR");
    let out = std::env::temp_dir().join("ratelab-bench-out");
    let out = out.to_string_lossy().into_owned();
    let mut g = c.benchmark_group("commands");
    g.sample_size(10);
    g.bench_function("run_estimator_zipf", |b| {
        b.iter(|| {
            let args = [
                "ratelab",
                "run",
                &format!("{root}/scenarios/estimator-zipf.json"),
                "--out",
                &out,
                "--no-progress",
            ];
            black_box(ratelab::main_with_args(
                args.iter().map(Into::into).collect(),
            ))
        })
    });
    g.bench_function("size_document_exact_pct_70", |b| {
        b.iter(|| {
            let args = [
                "ratelab",
                "size",
                "--keys",
                "10000",
                "--dist",
                "harmonic",
                "--top",
                "100000",
                "--min",
                "10",
                "--target",
                "exact_pct>=70",
                "--out",
                &out,
            ];
            black_box(ratelab::main_with_args(
                args.iter().map(Into::into).collect(),
            ))
        })
    });
    g.finish();
}

criterion_group!(benches, rate_observe, pacers, commands);
criterion_main!(benches);
