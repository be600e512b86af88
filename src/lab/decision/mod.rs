//! `decision_accuracy` (issue 6): how often does each limiter decide
//! differently from an exact one, on the same traffic?
//!
//! Policy: at most `limit` requests per key per `interval_ms`. Every
//! candidate sees the SAME event stream (a seeded timed workload, or a trace
//! file streamed from disk) in one pass, and every decision is compared with
//! two exact limiters ([`crate::oracle::limiters`]) that count **admitted**
//! requests: the sliding log (primary) and aligned fixed windows.
//!
//! Candidates (each runs its own state; a denied request is not retried):
//! * `pingora Rate docs` — `observe(key, w) > limit → deny` (the pingora
//!   docs' pattern; counts every request, windows flip on calls and are
//!   shared by all keys), per sketch shape and with exact counters;
//! * `pingora Rate proportional` — `prev·(1 − fraction) + curr` of
//!   `rate_with`'s components (= `PROPORTIONAL_RATE_ESTIMATE_CALC_FN ×
//!   interval_s`, computed without the round trip through a float division),
//!   `+ w − 1 ≥ limit → deny`; only admitted requests are observed (a
//!   sliding-window limiter; counting denied ones too would keep an abusive
//!   key locked out forever). Per shape and with exact counters;
//! * `x/time/rate per key` — one token bucket per key, r = limit/interval,
//!   b = limit, `AllowN(t, w)`;
//! * `governor GCRA per key` — the real `governor` crate: a keyed
//!   `RateLimiter` (hash map) with `Quota::with_period(interval /
//!   limit).allow_burst(limit)` on its `FakeRelativeClock`, advanced to each
//!   event's virtual time (no real time is involved);
//! * `tower RateLimit global` — one `RateLimit(limit, interval)` for all
//!   keys, as tower is used (`LoadShed` decision: reject instead of wait);
//!   `tower RateLimit per key` — one instance per key;
//! * `uber-go ratelimit per key, deny if wait > 0` — uber-go paces (Take
//!   blocks); as an admission limiter: a request that would have had to wait
//!   is denied and does not take a slot (`per = interval/limit`, slack 10 by
//!   default).
//!
//! Memory: sketches are `2 × hashes × slots × 8` bytes (two windows);
//! keyed limiters are keys × the real library's per-key state (constants
//! below; map overhead not counted); exact counters are 16 bytes per key
//! alive in the two windows (peak).
//!
//! Wrong decisions are counted per request line (a weighted line is one
//! decision). There is no parallelism: the report is the same at any thread
//! count.

use super::{report_head, RunContext};
use crate::clock::{Nanos, MILLI, SECOND};
use crate::error::{Error, Result};
use crate::model::estimator::{Estimator, EstimatorConfig, Fault, FrequencyEstimator};
use crate::model::fixed_window::{FixedWindow, TowerRate};
use crate::model::leaky_bucket::{LeakyBucket, LeakyBucketConfig};
use crate::model::rate::Rate;
use crate::model::token_bucket::TokenBucket;
use crate::oracle::limiters::{AlignedWindowLimiter, SlidingLogLimiter};
use crate::report::chart::{render, ChartSpec, Legend, Series, SeriesStyle};
use crate::report::fmt::bytes_human;
use crate::report::{Output, Table};
use crate::rng::{derive_seed, stream};
use crate::scenario::Scenario;
use crate::workload::timed::TimedWorkload;
use crate::workload::trace::{Disorder, TimeUnit, TraceOptions, TraceReader};
use governor::clock::FakeRelativeClock;
use governor::state::keyed::HashMapStateStore;
use governor::{Quota, RateLimiter};
use serde::Deserialize;
use serde_json::json;
use std::collections::HashMap;
use std::num::NonZeroU32;
use std::time::Duration;

/// Bytes of state per key of Go's `x/time/rate.Limiter` (mutex 8, limit 8,
/// burst 8, tokens 8, last 24, lastEvent 24).
pub const XTIME_STATE_BYTES: u64 = 80;
/// Bytes per key of governor's keyed state: the `u32` key (padded) and the
/// `AtomicU64` GCRA timestamp (hash-map overhead not counted).
pub const GOVERNOR_STATE_BYTES: u64 = 16;
/// Bytes of uber-go's `atomicInt64Limiter` (64 + 8 + 56 bytes of padding
/// and state, perRequest 8, maxSlack 8, clock interface 16).
pub const UBER_STATE_BYTES: u64 = 160;
/// Bytes per key of an exact counter (8-byte key id + 8-byte count).
pub const EXACT_COUNTER_BYTES: u64 = 16;

/// The policy: at most `limit` per key per `interval_ms`.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Policy {
    /// Requests per key per interval.
    pub limit: u64,
    /// Interval, ms.
    pub interval_ms: u64,
}

/// A trace file as the event source.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceSpec {
    /// Path (relative to the scenario file).
    pub path: String,
    /// Unit of a `time`/`timestamp` column: ns, ms, s, rfc3339.
    #[serde(default)]
    pub unit: Option<String>,
    /// Sort out-of-order lines within this many ms (default: reject them).
    #[serde(default)]
    pub sort_window_ms: Option<u64>,
}

pub use super::Shape;

/// The key whose first deny and timeline are reported.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Watch {
    /// Key (a trace key, or a workload key id in decimal).
    pub key: String,
    /// When its abuse starts (s since the first event).
    pub from_s: f64,
}

/// Scenario parameters.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// The policy.
    pub policy: Policy,
    /// A timed workload (or `trace`).
    #[serde(default)]
    pub workload: Option<TimedWorkload>,
    /// A trace file (or `workload`).
    #[serde(default)]
    pub trace: Option<TraceSpec>,
    /// Sketch shapes of the pingora candidates (exact counters are added).
    #[serde(default = "default_shapes")]
    pub shapes: Vec<Shape>,
    /// The abusive key (default: a flash crowd's key, if the workload has one).
    #[serde(default)]
    pub watch: Option<Watch>,
    /// uber-go slack (default 10, the library's default).
    #[serde(default = "default_slack")]
    pub uber_slack: i64,
    /// Add the comparison with Cloudflare's published figure.
    #[serde(default)]
    pub compare_cloudflare: bool,
}

fn default_shapes() -> Vec<Shape> {
    [1024, 8192, 65536]
        .iter()
        .map(|&slots| Shape { hashes: 4, slots })
        .collect()
}

fn default_slack() -> i64 {
    10
}

/// Exact per-key counts indexed by dense key id (the key bytes are the id's
/// 4 little-endian bytes): `Rate`'s `--hasher exact` backend, fast.
#[derive(Debug, Clone, Default)]
pub struct DenseExact {
    counts: Vec<i64>,
    touched: Vec<u32>,
}

fn key_id(key: &[u8]) -> usize {
    <[u8; 4]>::try_from(key)
        .map(u32::from_le_bytes)
        .unwrap_or(0) as usize
}

impl DenseExact {
    /// Keys with a count in this window.
    pub fn live_keys(&self) -> u64 {
        self.touched.len() as u64
    }
}

impl FrequencyEstimator for DenseExact {
    fn incr(&mut self, key: &[u8], value: i64) -> std::result::Result<i64, Fault> {
        let k = key_id(key);
        if k >= self.counts.len() {
            self.counts.resize(k + 1, 0);
        }
        if self.counts[k] == 0 {
            self.touched.push(k as u32);
        }
        self.counts[k] = self.counts[k].wrapping_add(value);
        Ok(self.counts[k])
    }
    fn decr(&mut self, key: &[u8], value: i64) {
        let k = key_id(key);
        if let Some(c) = self.counts.get_mut(k) {
            *c = c.wrapping_sub(value);
        }
    }
    fn get(&self, key: &[u8]) -> i64 {
        self.counts.get(key_id(key)).copied().unwrap_or(0)
    }
    fn reset(&mut self) {
        for &k in &self.touched {
            if let Some(c) = self.counts.get_mut(k as usize) {
                *c = 0;
            }
        }
        self.touched.clear();
    }
    fn memory_bytes(&self) -> u64 {
        self.live_keys() * EXACT_COUNTER_BYTES
    }
}

/// A limiter deciding requests.
trait Decider {
    /// Allow (true) or deny a request of `w` for `key` at `now`.
    fn decide(&mut self, key: u32, w: u64, now: Nanos) -> Result<bool>;
    /// Memory in bytes after the run (`keys` = distinct keys seen).
    fn memory(&self, keys: u64) -> u64;
}

fn fault(f: Fault) -> Error {
    Error::internal(format!("pingora Rate model fault: {f}"))
}

/// How a `Rate` candidate decides.
#[derive(Debug, Clone, Copy, PartialEq)]
enum RateMode {
    Docs,
    Proportional,
}

struct RateCand<E: FrequencyEstimator> {
    rate: Rate<E>,
    mode: RateMode,
    limit: i64,
    sketch_bytes: Option<u64>,
    peak_live: u64,
    live: fn(&Rate<E>) -> u64,
}

impl<E: FrequencyEstimator> Decider for RateCand<E> {
    fn decide(&mut self, key: u32, w: u64, now: Nanos) -> Result<bool> {
        let kb = key.to_le_bytes();
        let w = w as i64;
        let allow = match self.mode {
            RateMode::Docs => self.rate.observe(&kb, w, now).map_err(fault)? <= self.limit,
            RateMode::Proportional => {
                let c = self.rate.components(&kb, now).map_err(fault)?;
                let est = c.prev_samples as f64 * (1. - c.current_interval_fraction)
                    + c.curr_samples as f64;
                let allow = est + ((w - 1) as f64) < (self.limit as f64);
                if allow {
                    self.rate.observe(&kb, w, now).map_err(fault)?;
                }
                allow
            }
        };
        if self.sketch_bytes.is_none() {
            self.peak_live = self.peak_live.max((self.live)(&self.rate));
        }
        Ok(allow)
    }
    fn memory(&self, _keys: u64) -> u64 {
        self.sketch_bytes
            .unwrap_or(self.peak_live * EXACT_COUNTER_BYTES)
    }
}

struct TokenBucketCand {
    buckets: Vec<Option<TokenBucket>>,
    limit: f64,
    burst: i64,
}

impl Decider for TokenBucketCand {
    fn decide(&mut self, key: u32, w: u64, now: Nanos) -> Result<bool> {
        let k = key as usize;
        if k >= self.buckets.len() {
            self.buckets.resize(k + 1, None);
        }
        let b = self.buckets[k].get_or_insert_with(|| TokenBucket::new(self.limit, self.burst));
        Ok(b.allow_n(now as i64, w as i64))
    }
    fn memory(&self, keys: u64) -> u64 {
        keys * XTIME_STATE_BYTES
    }
}

type GovLimiter = RateLimiter<
    u32,
    HashMapStateStore<u32>,
    FakeRelativeClock,
    governor::middleware::NoOpMiddleware<governor::nanos::Nanos>,
>;

struct GovernorCand {
    limiter: GovLimiter,
    clock: FakeRelativeClock,
    last: Nanos,
}

impl Decider for GovernorCand {
    fn decide(&mut self, key: u32, w: u64, now: Nanos) -> Result<bool> {
        if now > self.last {
            self.clock.advance(Duration::from_nanos(now - self.last));
            self.last = now;
        }
        let Some(n) = u32::try_from(w).ok().and_then(NonZeroU32::new) else {
            return Ok(false);
        };
        Ok(matches!(self.limiter.check_key_n(&key, n), Ok(Ok(_))))
    }
    fn memory(&self, _keys: u64) -> u64 {
        self.limiter.len() as u64 * GOVERNOR_STATE_BYTES
    }
}

struct TowerGlobal {
    fw: FixedWindow,
}

impl Decider for TowerGlobal {
    fn decide(&mut self, _key: u32, w: u64, now: Nanos) -> Result<bool> {
        let mut ok = true;
        for _ in 0..w {
            ok &= self.fw.allow(now);
        }
        Ok(ok)
    }
    fn memory(&self, _keys: u64) -> u64 {
        std::mem::size_of::<FixedWindow>() as u64
    }
}

struct TowerPerKey {
    rate: TowerRate,
    fws: Vec<Option<FixedWindow>>,
}

impl Decider for TowerPerKey {
    fn decide(&mut self, key: u32, w: u64, now: Nanos) -> Result<bool> {
        let k = key as usize;
        if k >= self.fws.len() {
            self.fws.resize(k + 1, None);
        }
        let rate = self.rate;
        let fw = self.fws[k].get_or_insert_with(|| FixedWindow::new(rate, now));
        let mut ok = true;
        for _ in 0..w {
            ok &= fw.allow(now);
        }
        Ok(ok)
    }
    fn memory(&self, keys: u64) -> u64 {
        keys * std::mem::size_of::<FixedWindow>() as u64
    }
}

struct UberCand {
    cfg: LeakyBucketConfig,
    buckets: Vec<Option<LeakyBucket>>,
}

impl Decider for UberCand {
    fn decide(&mut self, key: u32, w: u64, now: Nanos) -> Result<bool> {
        let k = key as usize;
        if k >= self.buckets.len() {
            self.buckets.resize(k + 1, None);
        }
        if self.buckets[k].is_none() {
            let b = LeakyBucket::new(self.cfg)
                .map_err(|e| Error::internal(format!("uber-go model: {e}")))?;
            self.buckets[k] = Some(b);
        }
        let Some(b) = self.buckets[k].as_mut() else {
            return Ok(false);
        };
        let mut trial = b.clone();
        let mut wait = 0;
        for _ in 0..w {
            wait = trial.take(now as i64).sleep_ns;
        }
        if wait > 0 {
            return Ok(false);
        }
        *b = trial;
        Ok(true)
    }
    fn memory(&self, keys: u64) -> u64 {
        keys * UBER_STATE_BYTES
    }
}

/// One candidate: its label, family (for charts) and decider.
struct Candidate {
    name: String,
    family: &'static str,
    decider: Box<dyn Decider>,
}

fn candidates(p: &Params, seed: u64) -> Result<Vec<Candidate>> {
    let interval = Duration::from_millis(p.policy.interval_ms);
    let interval_ns = p.policy.interval_ms * MILLI;
    let limit = p.policy.limit;
    let mut out: Vec<Candidate> = Vec::new();
    for (mode, fam) in [
        (RateMode::Docs, "pingora Rate docs"),
        (RateMode::Proportional, "pingora Rate proportional"),
    ] {
        for (i, s) in p.shapes.iter().enumerate() {
            let cfg = EstimatorConfig::new(s.hashes, s.slots);
            let rate = Rate::new_with_estimator_config(
                interval,
                0,
                cfg,
                derive_seed(seed, &[stream::HASH, i as u64]),
            );
            out.push(Candidate {
                name: format!("{fam} {}x{}", s.hashes, s.slots),
                family: fam,
                decider: Box::new(RateCand::<Estimator> {
                    rate,
                    mode,
                    limit: limit as i64,
                    sketch_bytes: Some(2 * cfg.memory_bytes()),
                    peak_live: 0,
                    live: |_| 0,
                }),
            });
        }
        let rate = Rate::from_slots(interval, 0, DenseExact::default(), DenseExact::default());
        out.push(Candidate {
            name: format!("{fam} exact"),
            family: fam,
            decider: Box::new(RateCand::<DenseExact> {
                rate,
                mode,
                limit: limit as i64,
                sketch_bytes: None,
                peak_live: 0,
                live: |r| r.current_slot().live_keys() + r.previous_slot().live_keys(),
            }),
        });
    }
    out.push(Candidate {
        name: "x/time/rate per key".into(),
        family: "x/time/rate per key",
        decider: Box::new(TokenBucketCand {
            buckets: Vec::new(),
            limit: limit as f64 / interval.as_secs_f64(),
            burst: limit as i64,
        }),
    });
    let bad = |m: String| Error::input(format!("governor quota: {m}"));
    let period = Duration::from_nanos(interval_ns / limit);
    let burst = u32::try_from(limit)
        .ok()
        .and_then(NonZeroU32::new)
        .ok_or_else(|| bad(format!("limit {limit}: expected 1..=4294967295")))?;
    let quota = Quota::with_period(period)
        .ok_or_else(|| bad(format!("interval/limit = {period:?}: expected > 0")))?
        .allow_burst(burst);
    let clock = FakeRelativeClock::default();
    out.push(Candidate {
        name: "governor GCRA per key".into(),
        family: "governor GCRA per key",
        decider: Box::new(GovernorCand {
            limiter: RateLimiter::hashmap_with_clock(quota, clock.clone()),
            clock,
            last: 0,
        }),
    });
    let tr = TowerRate::new(limit, interval)
        .map_err(|f| Error::input(format!("tower: {}", f.message)))?;
    out.push(Candidate {
        name: "tower RateLimit global".into(),
        family: "tower RateLimit global",
        decider: Box::new(TowerGlobal {
            fw: FixedWindow::new(tr, 0),
        }),
    });
    out.push(Candidate {
        name: "tower RateLimit per key".into(),
        family: "tower RateLimit per key",
        decider: Box::new(TowerPerKey {
            rate: tr,
            fws: Vec::new(),
        }),
    });
    out.push(Candidate {
        name: format!("uber-go per key, slack {}", p.uber_slack),
        family: "uber-go per key (deny if wait > 0)",
        decider: Box::new(UberCand {
            // A mock clock well after the Unix epoch (the int64 variant's
            // sentinel is Unix time 0).
            cfg: LeakyBucketConfig::new(limit as i64)
                .per(interval_ns as i64)
                .with_slack(p.uber_slack)
                .unix_origin(1_700_000_000 * SECOND as i64),
            buckets: Vec::new(),
        }),
    });
    Ok(out)
}

/// What one candidate did.
#[derive(Debug, Clone, Default)]
struct Tally {
    allowed: u64,
    false_allow: u64,
    false_deny: u64,
    fixed_false_allow: u64,
    fixed_false_deny: u64,
    wrong_by_key: Vec<u32>,
    first_deny: Option<Nanos>,
    bins: Vec<u64>,
}

/// The event source: a seeded workload or a trace, as dense key ids.
enum Source {
    Workload(crate::workload::timed::TimedEvents),
    Trace {
        reader: Box<TraceReader>,
        /// Key → id, with a fixed-seed ahash (SipHash was 5% of a replay;
        /// the map's order is never observed, ids follow first appearance).
        ids: HashMap<String, u32, ahash::RandomState>,
        names: Vec<String>,
        t0: Option<Nanos>,
        /// Most distinct keys before the per-key state passes --max-memory.
        max_keys: usize,
    },
}

impl Source {
    fn next(&mut self) -> Option<Result<(Nanos, u32, u64)>> {
        match self {
            Source::Workload(ev) => ev.next().map(|(t, k)| Ok((t, k as u32, 1))),
            Source::Trace {
                reader,
                ids,
                names,
                t0,
                max_keys,
            } => {
                let e = match reader.next()? {
                    Ok(e) => e,
                    Err(e) => return Some(Err(e)),
                };
                let start = *t0.get_or_insert(e.t_ns);
                let id = match ids.get(&e.key) {
                    Some(&id) => id,
                    None => {
                        if names.len() >= *max_keys {
                            return Some(Err(reader.line_error(format!(
                                "key {:?} is distinct key number {}: the per-key state of more keys would pass the memory cap ({} bytes a key; raise it with --max-memory)",
                                e.key,
                                names.len() + 1,
                                PER_KEY_BYTES
                            ))));
                        }
                        let id = names.len() as u32;
                        names.push(e.key.clone());
                        ids.insert(e.key, id);
                        id
                    }
                };
                Some(Ok((e.t_ns - start, id, e.weight)))
            }
        }
    }

    fn name(&self, id: u32) -> String {
        match self {
            Source::Workload(_) => id.to_string(),
            Source::Trace { names, .. } => names.get(id as usize).cloned().unwrap_or_default(),
        }
    }

    fn id_of(&self, key: &str) -> Option<u32> {
        match self {
            Source::Workload(_) => key.parse().ok(),
            Source::Trace { ids, .. } => ids.get(key).copied(),
        }
    }

    /// Offset making aligned windows multiples of the interval since the epoch.
    fn align(&self, interval: Nanos) -> Nanos {
        match self {
            Source::Workload(_) => 0,
            Source::Trace { t0, .. } => t0.unwrap_or(0) % interval,
        }
    }
}

/// The first flash crowd in `w`: (key id, start s, duration s).
fn find_flash(w: &TimedWorkload, offset: u64) -> Option<(u64, f64, f64)> {
    match w {
        TimedWorkload::FlashCrowd {
            flash_start_s,
            flash_duration_s,
            ..
        } => Some((
            offset + w.key_space() - 1,
            *flash_start_s,
            *flash_duration_s,
        )),
        TimedWorkload::Mix { parts } => {
            let mut off = offset;
            for p in parts {
                if let Some(f) = find_flash(p, off) {
                    return Some(f);
                }
                off += p.key_space();
            }
            None
        }
        _ => None,
    }
}

fn validate(scenario: &Scenario, p: &Params, ctx: &RunContext) -> Result<()> {
    if p.policy.limit == 0 || p.policy.limit > u64::from(u32::MAX) {
        return Err(scenario.field_error(
            "policy.limit",
            format!("value {}: expected 1..=4294967295", p.policy.limit),
        ));
    }
    if p.policy.interval_ms == 0 || p.policy.interval_ms > 86_400_000 {
        return Err(scenario.field_error(
            "policy.interval_ms",
            format!("value {}: expected 1..=86400000", p.policy.interval_ms),
        ));
    }
    if p.policy.interval_ms * MILLI / p.policy.limit == 0 {
        return Err(scenario.field_error(
            "policy",
            format!(
                "{} per {} ms is more than one per nanosecond",
                p.policy.limit, p.policy.interval_ms
            ),
        ));
    }
    match (&p.workload, &p.trace) {
        (Some(w), None) => w.validate(&scenario.path, "workload")?,
        (None, Some(t)) => {
            if let Some(u) = &t.unit {
                u.parse::<TimeUnit>()
                    .map_err(|m| scenario.field_error("trace.unit", m))?;
            }
        }
        _ => {
            return Err(
                scenario.field_error("workload", "expected exactly one of `workload` and `trace`")
            )
        }
    }
    for (i, s) in p.shapes.iter().enumerate() {
        let mem = EstimatorConfig::new(s.hashes, s.slots)
            .memory_bytes()
            .saturating_mul(2);
        if s.hashes == 0 || s.slots == 0 || s.hashes > 64 || mem > ctx.max_memory {
            return Err(scenario.field_error(
                format!("shapes[{i}]"),
                format!(
                    "{}x{}: expected 1..=64 hashes, >= 1 slot, at most {} for both windows",
                    s.hashes,
                    s.slots,
                    bytes_human(ctx.max_memory)
                ),
            ));
        }
    }
    if let Some(w) = &p.workload {
        // Every request goes through each candidate and the two exact
        // limiters; per-key state lives in dense vectors indexed by key id.
        let events = w.max_events();
        let deciders = 2 * (p.shapes.len() + 1) + EXTRA_DECIDERS;
        ctx.check_work(
            scenario,
            "workload",
            events * deciders as f64,
            6.0,
            &format!("up to {events:.0} requests x {deciders} limiters"),
        )?;
        let keys = (w.key_space() as f64).min(events.max(1.0));
        ctx.check_memory(
            scenario,
            "workload",
            keys * PER_KEY_BYTES as f64,
            &format!("{keys:.0} keys of per-key limiter state"),
            "fewer keys",
        )?;
    }
    if let Some(w) = &p.watch {
        if !w.from_s.is_finite() || w.from_s < 0.0 {
            return Err(scenario.field_error(
                "watch.from_s",
                format!("value {}: expected a finite number >= 0", w.from_s),
            ));
        }
    }
    Ok(())
}

/// Candidates besides the Rate ones (x/time, governor, tower, uber-go) plus
/// the two exact limiters.
const EXTRA_DECIDERS: usize = 6;

/// Upper estimate of the state one key id costs across every keyed limiter,
/// the exact oracles and the per-key tallies.
const PER_KEY_BYTES: u64 = 512;

/// Bins of the flash timeline.
const BINS: u64 = 88;

/// Runs a `decision_accuracy` scenario.
pub fn run(scenario: &Scenario, ctx: &RunContext) -> Result<Output> {
    let p: Params = scenario.params()?;
    validate(scenario, &p, ctx)?;
    let interval_ns = p.policy.interval_ms * MILLI;
    let mut source = match (&p.workload, &p.trace) {
        (Some(w), _) => Source::Workload(w.events(derive_seed(ctx.seed, &[stream::WORKLOAD]))),
        (None, Some(t)) => {
            let unit = match &t.unit {
                Some(u) => u
                    .parse::<TimeUnit>()
                    .map_err(|m| scenario.field_error("trace.unit", m))?,
                None => TimeUnit::Ns,
            };
            let opts = TraceOptions {
                unit,
                disorder: match t.sort_window_ms {
                    Some(ms) => Disorder::SortWithin(ms.saturating_mul(MILLI)),
                    None => Disorder::Reject,
                },
                max_buffered: None,
            };
            Source::Trace {
                reader: Box::new(TraceReader::open(&scenario.resolve(&t.path), opts)?),
                ids: HashMap::with_hasher(ahash::RandomState::with_seeds(1, 2, 3, 4)),
                names: Vec::new(),
                t0: None,
                // Ids are u32 whatever the cap.
                max_keys: usize::try_from(ctx.max_memory / PER_KEY_BYTES)
                    .unwrap_or(usize::MAX)
                    .min(u32::MAX as usize),
            }
        }
        (None, None) => return Err(scenario.field_error("workload", "missing")),
    };
    // The watched key: explicit, else the workload's flash crowd.
    let flash = p.workload.as_ref().and_then(|w| find_flash(w, 0));
    let watch_from: Option<Nanos> = match (&p.watch, flash) {
        (Some(w), _) => Some((w.from_s * SECOND as f64).round() as Nanos),
        (None, Some((_, s, _))) => Some((s * SECOND as f64).round() as Nanos),
        _ => None,
    };
    let mut watch_id: Option<u32> = match (&p.watch, flash) {
        (Some(w), _) => source.id_of(&w.key),
        (None, Some((k, _, _))) => Some(k as u32),
        _ => None,
    };
    let bin_w = (interval_ns / 4).max(1);
    let t_lo = watch_from
        .map(|f| f.saturating_sub(2 * interval_ns))
        .unwrap_or(0);

    let mut cands = candidates(&p, ctx.seed)?;
    let mut tallies: Vec<Tally> = (0..cands.len())
        .map(|_| Tally {
            bins: vec![0; BINS as usize],
            ..Tally::default()
        })
        .collect();
    let mut sliding = SlidingLogLimiter::new(p.policy.limit, interval_ns);
    let mut aligned = AlignedWindowLimiter::new(p.policy.limit, interval_ns);
    let mut oracle = Tally {
        bins: vec![0; BINS as usize],
        ..Tally::default()
    };
    let mut fixed_oracle = Tally::default();
    let mut offered = vec![0u64; BINS as usize];
    let mut requests: u64 = 0;
    let mut weight_total: u64 = 0;
    let mut per_key_requests: Vec<u32> = Vec::new();
    let mut last_t: Nanos = 0;
    let progress = ctx.progress(0, &scenario.common.name);
    let mut align: Option<Nanos> = None;
    while let Some(ev) = source.next() {
        let (t, k, w) = ev?;
        let align = *align.get_or_insert_with(|| source.align(interval_ns));
        if watch_id.is_none() {
            if let Some(wk) = &p.watch {
                watch_id = source.id_of(&wk.key);
            }
        }
        requests += 1;
        weight_total += w;
        last_t = t;
        if requests % (1 << 20) == 0 {
            progress.inc(1 << 20);
        }
        let ki = k as usize;
        if ki >= per_key_requests.len() {
            per_key_requests.resize(ki + 1, 0);
        }
        per_key_requests[ki] = per_key_requests[ki].saturating_add(1);
        let truth = sliding.allow(k, w, t);
        let fixed_truth = aligned.allow(k, w, t + align);
        let watched = watch_id == Some(k) && watch_from.is_some_and(|f| t >= f);
        let bin = if watch_id == Some(k) && t >= t_lo {
            let b = (t - t_lo) / bin_w;
            (b < BINS).then_some(b as usize)
        } else {
            None
        };
        if let Some(b) = bin {
            offered[b] += w;
        }
        record(&mut oracle, k, truth, truth, truth, watched, bin, t, w);
        record(
            &mut fixed_oracle,
            k,
            fixed_truth,
            truth,
            fixed_truth,
            watched,
            None,
            t,
            w,
        );
        for (c, tally) in cands.iter_mut().zip(tallies.iter_mut()) {
            let a = c.decider.decide(k, w, t)?;
            record(tally, k, a, truth, fixed_truth, watched, bin, t, w);
        }
    }
    progress.finish();
    let keys_seen = per_key_requests.iter().filter(|&&c| c > 0).count() as u64;
    let ctxt = Ctxt {
        scenario,
        ctx,
        p: &p,
        requests,
        weight_total,
        keys_seen,
        duration_ns: last_t,
        watch: watch_id.zip(watch_from),
        watch_name: watch_id.map(|k| source.name(k)),
        flash,
        t_lo,
        bin_w,
    };
    Ok(render_output(
        &ctxt,
        &cands,
        &tallies,
        &oracle,
        &fixed_oracle,
        &offered,
        &per_key_requests,
        &source,
    ))
}

#[allow(clippy::too_many_arguments)]
fn record(
    tally: &mut Tally,
    k: u32,
    allow: bool,
    truth: bool,
    fixed_truth: bool,
    watched: bool,
    bin: Option<usize>,
    t: Nanos,
    w: u64,
) {
    if allow {
        tally.allowed += 1;
        if let Some(b) = bin {
            tally.bins[b] += w;
        }
    } else if watched && tally.first_deny.is_none() {
        tally.first_deny = Some(t);
    }
    if allow != fixed_truth {
        if allow {
            tally.fixed_false_allow += 1;
        } else {
            tally.fixed_false_deny += 1;
        }
    }
    if allow != truth {
        if allow {
            tally.false_allow += 1;
        } else {
            tally.false_deny += 1;
        }
        let ki = k as usize;
        if ki >= tally.wrong_by_key.len() {
            tally.wrong_by_key.resize(ki + 1, 0);
        }
        tally.wrong_by_key[ki] = tally.wrong_by_key[ki].saturating_add(1);
    }
}

struct Ctxt<'a> {
    scenario: &'a Scenario,
    ctx: &'a RunContext,
    p: &'a Params,
    requests: u64,
    weight_total: u64,
    keys_seen: u64,
    duration_ns: Nanos,
    watch: Option<(u32, Nanos)>,
    watch_name: Option<String>,
    flash: Option<(u64, f64, f64)>,
    t_lo: Nanos,
    bin_w: Nanos,
}

fn pct(n: u64, d: u64) -> f64 {
    if d == 0 {
        0.0
    } else {
        100.0 * n as f64 / d as f64
    }
}

fn fmt_pct(v: f64) -> String {
    if v == 0.0 {
        "0".into()
    } else if v < 0.001 {
        format!("{v:.5}%")
    } else if v < 0.1 {
        format!("{v:.4}%")
    } else {
        format!("{v:.2}%")
    }
}

fn worst(t: &Tally) -> Option<(u32, u32)> {
    let mut best: Option<(u32, u32)> = None;
    for (k, &c) in t.wrong_by_key.iter().enumerate() {
        let better = match best {
            Some((_, b)) => c > b,
            None => true,
        };
        if c > 0 && better {
            best = Some((k as u32, c));
        }
    }
    best
}

#[allow(clippy::too_many_arguments)]
fn render_output(
    c: &Ctxt,
    cands: &[Candidate],
    tallies: &[Tally],
    oracle: &Tally,
    fixed_oracle: &Tally,
    offered: &[u64],
    per_key_requests: &[u32],
    source: &Source,
) -> Output {
    let n = c.requests;
    let first_after = |t: &Tally| -> Option<f64> {
        let (_, from) = c.watch?;
        t.first_deny.map(|d| (d - from) as f64 / SECOND as f64)
    };
    let fmt_first = |v: Option<f64>| match v {
        Some(s) => format!("{s:.3}"),
        None if c.watch.is_some() => "never".into(),
        None => "-".into(),
    };
    let mut table = Table::new([
        "algorithm",
        "memory",
        "false allow",
        "false allow %",
        "false deny",
        "false deny %",
        "wrong %",
        "admitted vs oracle",
        "wrong % vs fixed window",
        "worst key (wrong / requests)",
        "first deny of watched key (s after start)",
    ]);
    let mut rows_json = Vec::new();
    let oracle_first = first_after(oracle);
    let oracle_allowed = oracle.allowed as i64;
    let mut push_row = |name: &str, mem: Option<u64>, t: &Tally, fam: &str| {
        let w = worst(t);
        let worst_s = match w {
            Some((k, wr)) => format!(
                "{} ({} / {})",
                source.name(k),
                wr,
                per_key_requests.get(k as usize).copied().unwrap_or(0)
            ),
            None => "-".into(),
        };
        let wrong = t.false_allow + t.false_deny;
        let fixed_wrong = t.fixed_false_allow + t.fixed_false_deny;
        table.push([
            name.to_string(),
            mem.map(bytes_human).unwrap_or_else(|| "-".into()),
            t.false_allow.to_string(),
            fmt_pct(pct(t.false_allow, n)),
            t.false_deny.to_string(),
            fmt_pct(pct(t.false_deny, n)),
            fmt_pct(pct(wrong, n)),
            format!("{:+}", t.allowed as i64 - oracle_allowed),
            fmt_pct(pct(fixed_wrong, n)),
            worst_s,
            fmt_first(first_after(t)),
        ]);
        rows_json.push(json!({
            "algorithm": name,
            "family": fam,
            "memory_bytes": mem,
            "allowed": t.allowed,
            "false_allow": t.false_allow,
            "false_allow_pct": pct(t.false_allow, n),
            "false_deny": t.false_deny,
            "false_deny_pct": pct(t.false_deny, n),
            "wrong_pct": pct(wrong, n),
            "admitted_minus_oracle": t.allowed as i64 - oracle_allowed,
            "vs_fixed_window": {
                "false_allow": t.fixed_false_allow,
                "false_deny": t.fixed_false_deny,
                "wrong_pct": pct(fixed_wrong, n),
            },
            "worst_key": w.map(|(k, wr)| json!({
                "key": source.name(k),
                "wrong": wr,
                "requests": per_key_requests.get(k as usize).copied().unwrap_or(0),
            })),
            "first_deny_after_s": first_after(t),
        }));
    };
    push_row(
        "exact sliding log (oracle)",
        None,
        oracle,
        "oracle sliding log",
    );
    push_row(
        "exact aligned window (oracle 2)",
        None,
        fixed_oracle,
        "oracle aligned window",
    );
    let mems: Vec<u64> = cands
        .iter()
        .map(|cd| cd.decider.memory(c.keys_seen))
        .collect();
    for ((cd, t), &m) in cands.iter().zip(tallies).zip(&mems) {
        push_row(&cd.name, Some(m), t, cd.family);
    }

    let p = c.p;
    let name = &c.scenario.common.name;
    let mut md = format!("# {name}\n\n");
    if !c.scenario.common.description.is_empty() {
        md.push_str(&format!("{}\n\n", c.scenario.common.description));
    }
    md.push_str(&format!(
        "Policy: at most {} requests per key per {} ms. {} requests ({} in weight) from {} distinct keys over {:.1} s of virtual time; the exact sliding log (counting admitted requests) allowed {} ({}).\n\n",
        p.policy.limit,
        p.policy.interval_ms,
        n,
        c.weight_total,
        c.keys_seen,
        c.duration_ns as f64 / SECOND as f64,
        oracle.allowed,
        fmt_pct(pct(oracle.allowed, n)),
    ));
    md.push_str("False allow = the algorithm allowed a request the exact sliding-log limiter denied; false deny = the reverse. Both oracles count admitted requests only (a denied request leaves no trace), each run on its own. Percentages are of all requests. `admitted vs oracle` = requests admitted minus the oracle's (per-request disagreements on a key far over the limit are mostly phase: both admit about `limit` per interval, at different instants). `wrong % vs fixed window` compares with exact aligned windows instead.\n\n");
    md.push_str(&table.markdown());
    if let (Some((_, from)), Some(wn)) = (c.watch, &c.watch_name) {
        md.push_str(&format!(
            "\nWatched key: {wn}, abusive from {:.3} s; the oracle's first deny came {} s after that.\n",
            from as f64 / SECOND as f64,
            fmt_first(oracle_first)
        ));
    }
    md.push_str("\nMemory: sketches count both windows (2 × hashes × slots × 8 B); exact counters 16 B per key alive in the two windows (peak); keyed limiters keys × the real library's per-key state (x/time/rate 80 B, governor 16 B, uber-go 160 B; tower: the model's state), map overhead not counted.\n");
    md.push_str("\nNotes: `pingora Rate docs` counts every request (denied ones too) in fixed windows that flip on calls and are shared by all keys; `pingora Rate proportional` is the sliding-window approximation (prev · (1 − elapsed fraction) + curr) and observes admitted requests only. `tower RateLimit global` is one instance for all keys, as tower is used: it is not a per-key limiter and its numbers show that. uber-go paces rather than rejects; here a request that would have had to wait is denied.\n");
    if p.compare_cloudflare {
        md.push_str(&cloudflare_section(cands, tallies, n));
    }
    md.push_str("\n## Charts\n\n- `wrong_vs_memory`: wrong decisions (% of requests, vs the sliding log) against memory, log-log.\n");
    if c.watch.is_some() {
        md.push_str("- `watched_timeline`: requests per second of the watched key admitted by each algorithm, against what was offered and what the exact sliding log admitted.\n");
    }

    let mut j = report_head(c.scenario, c.ctx, None);
    j.insert(
        "policy".into(),
        json!({"limit": p.policy.limit, "interval_ms": p.policy.interval_ms}),
    );
    j.insert(
        "source".into(),
        match (&p.workload, &p.trace) {
            (Some(w), _) => json!({"workload": serde_json::to_value(w).unwrap_or_default()}),
            (_, Some(t)) => json!({"trace": t.path, "unit": t.unit}),
            _ => serde_json::Value::Null,
        },
    );
    j.insert(
        "requests".into(),
        json!({
            "lines": n,
            "weight": c.weight_total,
            "keys": c.keys_seen,
            "duration_s": c.duration_ns as f64 / SECOND as f64,
        }),
    );
    j.insert(
        "oracle".into(),
        json!({"counts": "admitted", "primary": "sliding log", "secondary": "aligned fixed window"}),
    );
    if let (Some((_, from)), Some(wn)) = (c.watch, &c.watch_name) {
        j.insert(
            "watched".into(),
            json!({"key": wn, "from_s": from as f64 / SECOND as f64, "flash": c.flash.map(|f| json!({"start_s": f.1, "duration_s": f.2}))}),
        );
    }
    j.insert("rows".into(), serde_json::Value::Array(rows_json));

    let mut charts = Vec::new();
    let mut mem = ChartSpec::new(
        "wrong_vs_memory",
        format!(
            "Wrong decisions vs memory ({} per key per {} ms)",
            p.policy.limit, p.policy.interval_ms
        ),
        "memory (bytes, log scale)",
        "wrong decisions (% of requests, log; 0 drawn at 1e-5)",
    );
    mem.x_log = true;
    mem.y_log = true;
    mem.log_floor = 1e-5;
    mem.legend = Legend::UpperRight;
    let mut fams: Vec<&str> = Vec::new();
    for cd in cands {
        if !fams.contains(&cd.family) {
            fams.push(cd.family);
        }
    }
    for (fi, fam) in fams.iter().enumerate() {
        let mut pts: Vec<(f64, f64, String)> = cands
            .iter()
            .zip(tallies)
            .zip(&mems)
            .filter(|((cd, _), _)| cd.family == *fam)
            .map(|((cd, t), &m)| {
                let label = cd.name.strip_prefix(fam).unwrap_or("").trim().to_string();
                (
                    (m.max(1)) as f64,
                    pct(t.false_allow + t.false_deny, n),
                    label,
                )
            })
            .collect();
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        let style = if pts.len() > 1 {
            SeriesStyle::LinePoints
        } else {
            SeriesStyle::Points
        };
        let mut s = Series::new(*fam, pts.iter().map(|x| (x.0, x.1)).collect(), style);
        if pts.len() > 1 {
            s.point_labels = Some(pts.iter().map(|x| format!(" {}", x.2)).collect());
        }
        s.color = Some(fi);
        mem.series.push(s);
    }
    charts.push(mem);
    if let Some((_, from)) = c.watch {
        let to_s = |b: usize| {
            c.t_lo.saturating_add((b as u64).saturating_mul(c.bin_w)) as f64 / SECOND as f64
        };
        let per_s = SECOND as f64 / c.bin_w as f64;
        let series_of = |bins: &[u64]| -> Vec<(f64, f64)> {
            bins.iter()
                .enumerate()
                .map(|(b, &v)| (to_s(b), v as f64 * per_s))
                .collect()
        };
        let mut tl = ChartSpec::new(
            "watched_timeline",
            format!(
                "Watched key {}: admitted requests per second",
                c.watch_name.clone().unwrap_or_default()
            ),
            "time (s)",
            format!("requests/s in {} ms bins", c.bin_w as f64 / MILLI as f64),
        );
        tl.vlines
            .push((from as f64 / SECOND as f64, "abuse starts".into()));
        let mut s = Series::new("offered", series_of(offered), SeriesStyle::Step);
        s.color = Some(7);
        tl.series.push(s);
        let mut s = Series::new(
            "exact sliding log (truth)",
            series_of(&oracle.bins),
            SeriesStyle::Step,
        );
        s.color = Some(0);
        tl.series.push(s);
        let picks: Vec<usize> = {
            let mut v = Vec::new();
            for fam in &fams {
                if let Some(i) = cands.iter().position(|cd| cd.family == *fam) {
                    if !fam.contains("global") {
                        v.push(i);
                    }
                }
            }
            v
        };
        for (ci, &i) in picks.iter().enumerate() {
            let mut s = Series::new(
                cands[i].name.clone(),
                series_of(&tallies[i].bins),
                SeriesStyle::Step,
            );
            s.color = Some(ci + 1);
            tl.series.push(s);
        }
        let lim = p.policy.limit as f64 * SECOND as f64 / (p.policy.interval_ms * MILLI) as f64;
        let mut s = Series::new(
            format!("policy rate ({lim} /s)"),
            vec![(to_s(0), lim), (to_s(BINS as usize), lim)],
            SeriesStyle::Dashed,
        );
        s.color = Some(6);
        tl.series.push(s);
        charts.push(tl);
    }
    let charts = charts.iter().filter_map(|s| render(s).ok()).collect();
    Output {
        json: serde_json::Value::Object(j),
        console: format!("{n} requests, {} keys\n{}", c.keys_seen, table.text()),
        table_csv: table.csv(),
        table_md: md,
        charts,
        extra_files: Vec::new(),
    }
}

fn cloudflare_section(cands: &[Candidate], tallies: &[Tally], n: u64) -> String {
    let mut s = String::from("\n## Against Cloudflare's published figure\n\nCloudflare (\"How we built rate limiting capable of scaling to millions of domains\", 2017): on 400 million requests from 270,000 distinct sources, the sliding-window approximation wrongly allowed or rate-limited 0.003% of requests, and the approximate rate differed from the real one by 6% on average. The same approximation here:\n\n");
    for (cd, t) in cands.iter().zip(tallies) {
        if cd.family == "pingora Rate proportional" {
            s.push_str(&format!(
                "- {}: {} wrong ({} false allows, {} false denies) of {} requests.\n",
                cd.name,
                fmt_pct(pct(t.false_allow + t.false_deny, n)),
                t.false_allow,
                t.false_deny,
                n
            ));
        }
    }
    s.push_str("\nWhat differs: Cloudflare's approximation runs on exact per-source counters (memcached) with windows aligned per counter; pingora's runs on a count-min sketch (overcounts under collisions) and its windows flip on calls and are shared by all keys, so a key's 'previous window' is whatever the last flip left. Their traffic is real edge traffic where most sources stay far below the limit; ours is synthetic and tuned so that many keys hover near the limit, which is where approximate and exact decisions part. Their 0.003% is over requests of sources that were near enough the threshold to be evaluated, ours over all requests.\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::timed::KeyChoice;

    fn scenario(params: serde_json::Value) -> Scenario {
        let mut v = json!({"name": "t", "kind": "decision_accuracy", "seed": 3});
        if let (Some(m), Some(pm)) = (v.as_object_mut(), params.as_object()) {
            for (k, x) in pm {
                m.insert(k.clone(), x.clone());
            }
        }
        Scenario::parse(std::path::Path::new("t.json"), &v.to_string()).unwrap()
    }

    fn row<'a>(j: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
        j["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["algorithm"] == name)
            .unwrap()
    }

    fn small(duration_s: f64) -> serde_json::Value {
        json!({
            "policy": {"limit": 10, "interval_ms": 1000},
            "shapes": [{"hashes": 4, "slots": 64}],
            "workload": {"type": "mix", "parts": [
                {"type": "poisson", "keys": {"type": "zipf", "keys": 200, "s": 1.1}, "rate": 400.0, "duration_s": duration_s},
                {"type": "flash_crowd", "keys": {"type": "uniform", "keys": 5}, "rate": 5.0,
                 "flash_rate": 100.0, "flash_start_s": 5.0, "flash_duration_s": 3.0, "duration_s": duration_s}
            ]}
        })
    }

    #[test]
    fn exact_counters_beat_a_tiny_sketch_and_oracle_is_self_consistent() {
        let s = scenario(small(20.0));
        let out = run(&s, &RunContext::for_scenario(&s)).unwrap();
        let j = &out.json;
        let o = row(j, "exact sliding log (oracle)");
        assert_eq!(o["false_allow"], 0);
        assert_eq!(o["false_deny"], 0);
        let exact = row(j, "pingora Rate proportional exact")["wrong_pct"]
            .as_f64()
            .unwrap();
        let tiny = row(j, "pingora Rate proportional 4x64")["wrong_pct"]
            .as_f64()
            .unwrap();
        assert!(tiny > exact, "sketch {tiny} vs exact {exact}");
        // The sketch only overcounts: its extra errors are false denies.
        let fd = |n: &str| row(j, n)["false_deny"].as_u64().unwrap();
        assert!(fd("pingora Rate docs 4x64") >= fd("pingora Rate docs exact"));
        // The flash key (id 205) is denied by the oracle within the first
        // interval of its burst (100/s against 10/s).
        let first = o["first_deny_after_s"].as_f64().unwrap();
        assert!(first < 1.0, "{first}");
        assert_eq!(j["watched"]["key"], "205");
        // The global tower instance denies most traffic.
        assert!(
            row(j, "tower RateLimit global")["false_deny_pct"]
                .as_f64()
                .unwrap()
                > 50.0
        );
    }

    #[test]
    fn an_hour_of_virtual_traffic_runs_without_real_time() {
        // 1 hour at 20/s through governor's fake clock: if anything slept
        // on the real clock this would never finish.
        let w = json!({
            "policy": {"limit": 5, "interval_ms": 1000},
            "shapes": [{"hashes": 2, "slots": 16}],
            "workload": {"type": "poisson", "keys": {"type": "uniform", "keys": 3}, "rate": 20.0, "duration_s": 3600.0}
        });
        let s = scenario(w);
        let start = std::time::Instant::now();
        let out = run(&s, &RunContext::for_scenario(&s)).unwrap();
        assert!(start.elapsed() < Duration::from_secs(20));
        let g = row(&out.json, "governor GCRA per key");
        // 3 keys at ~6.7/s against 5/s: governor denies some, and a GCRA
        // with burst = limit is close to the sliding log.
        assert!(g["allowed"].as_u64().unwrap() > 40_000);
        assert!(g["wrong_pct"].as_f64().unwrap() < 30.0);
        assert!(out.json["requests"]["duration_s"].as_f64().unwrap() > 3590.0);
    }

    #[test]
    fn flash_key_is_found_inside_a_mix() {
        let w: TimedWorkload = serde_json::from_value(small(10.0)["workload"].clone()).unwrap();
        assert_eq!(find_flash(&w, 0), Some((205, 5.0, 3.0)));
        let plain = TimedWorkload::Poisson {
            keys: KeyChoice::Uniform { keys: 3 },
            rate: 1.0,
            duration_s: 1.0,
        };
        assert_eq!(find_flash(&plain, 0), None);
    }

    #[test]
    fn limit_zero_is_a_field_error() {
        let mut v = small(1.0);
        v["policy"]["limit"] = json!(0);
        let s = scenario(v);
        let e = run(&s, &RunContext::for_scenario(&s)).err().unwrap();
        assert!(e.message().contains("field policy.limit"), "{e}");
        assert_eq!(e.exit_code(), 2);
    }
}
