//! The yardstick of the decision lab's own cost: a hand-written loop that
//! reads a CSV trace (`t_ns,key[,weight]`) line by line into the real
//! `governor` crate's keyed limiter on a fake clock, and prints how many
//! requests it allowed. `benches/one_candidate/run.sh` times it beside
//! `ratelab run --trace` with governor as the only candidate on the same
//! file: what the lab costs on top of deciding (reading, interning keys,
//! the two exact limiters, the tallies, the report) is their ratio.
//!
//! ```text
//! cargo run --release --example governor_loop -- TRACE.csv LIMIT INTERVAL_MS
//! ```
//!
//! The quota is the lab's for `gcra_governor` with its defaults: one cell
//! every `interval / limit`, bursts of `limit`
//! (`Quota::with_period(interval / limit).allow_burst(limit)`). The clock
//! is governor's `FakeRelativeClock`, advanced to each request's time (a
//! sorted trace only goes forward).

use governor::clock::FakeRelativeClock;
use governor::middleware::NoOpMiddleware;
use governor::state::keyed::HashMapStateStore;
use governor::{Quota, RateLimiter};
use std::io::BufRead;
use std::num::NonZeroU32;
use std::time::Duration;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [path, limit, interval_ms] = args.as_slice() else {
        eprintln!("usage: governor_loop TRACE.csv LIMIT INTERVAL_MS");
        std::process::exit(2);
    };
    let limit: u32 = limit.parse()?;
    let interval_ms: u64 = interval_ms.parse()?;
    let period = Duration::from_nanos(interval_ms * 1_000_000 / u64::from(limit));
    let quota = Quota::with_period(period)
        .ok_or("interval / limit must be > 0")?
        .allow_burst(NonZeroU32::new(limit).ok_or("limit must be > 0")?);
    let clock = FakeRelativeClock::default();
    let lim: RateLimiter<
        String,
        HashMapStateStore<String>,
        FakeRelativeClock,
        NoOpMiddleware<governor::nanos::Nanos>,
    > = RateLimiter::new(quota, HashMapStateStore::default(), clock.clone());

    let mut input = std::io::BufReader::with_capacity(1 << 16, std::fs::File::open(path)?);
    let mut line = String::new();
    input.read_line(&mut line)?;
    let header: Vec<String> = line.trim_end().split(',').map(str::to_string).collect();
    let col = |name: &str| header.iter().position(|h| h == name);
    let time = col("t_ns").ok_or("expected a t_ns column")?;
    let key = col("key").ok_or("expected a key column")?;
    let weight = col("weight");
    let (mut now, mut first) = (0u64, None);
    let (mut requests, mut allowed) = (0u64, 0u64);
    let mut k = String::new();
    loop {
        line.clear();
        if input.read_line(&mut line)? == 0 {
            break;
        }
        let (mut t, mut w) = (0u64, 1u32);
        k.clear();
        for (i, f) in line.trim_end().split(',').enumerate() {
            if i == time {
                t = f.parse()?;
            } else if i == key {
                k.push_str(f);
            } else if Some(i) == weight {
                w = f.parse()?;
            }
        }
        // Virtual time starts at the first request, as the lab's.
        let t = t - *first.get_or_insert(t);
        clock.advance(Duration::from_nanos(t - now));
        now = t;
        requests += 1;
        let n = NonZeroU32::new(w).ok_or("weight 0")?;
        if matches!(lim.check_key_n(&k, n), Ok(Ok(_))) {
            allowed += 1;
        }
    }
    println!("{requests} requests, {allowed} allowed, {} keys", lim.len());
    Ok(())
}
