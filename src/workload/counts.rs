//! Count workloads: per-key event counts, streamed in a seeded random order.

use super::keys::KeyChoice;
use super::shuffle::{for_each_chunk, Multinomial};
use crate::error::{Error, Result};
use crate::rng::{sim_rng, SimRng};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::path::Path;

/// Largest number of distinct keys a workload may have (the exact oracle keeps
/// one counter per key; this keeps a typo like `1e12` from exhausting memory).
pub const MAX_KEYS: u64 = 100_000_000;
/// Largest number of events a count workload may have.
pub const MAX_EVENTS: u64 = 1 << 40;
/// Largest Zipf exponent: from about 50 on, the second key's share
/// (2^-s) is below one event in 2^40, so every event is the first key's;
/// a larger exponent (1e300) is a typo, not a workload.
pub const MAX_ZIPF_S: f64 = 100.0;

/// How many events each key gets.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum CountWorkload {
    /// Harmonic counts: key i gets `max(floor(top/(i+1)), min)`.
    Harmonic {
        /// Distinct keys.
        keys: u64,
        /// Events of the top key (key 0).
        top: u64,
        /// No key gets fewer than this.
        #[serde(default = "default_min")]
        min: u64,
    },
    /// `events` draws from Zipf(s) over `keys` keys (rank 1 = key 0).
    Zipf {
        /// Distinct keys the distribution ranges over.
        keys: u64,
        /// Events drawn.
        events: u64,
        /// The exponent (s = 0 is uniform, s ≈ 1 is web-like).
        s: f64,
    },
    /// `events` draws, each key equally likely.
    Uniform {
        /// Distinct keys.
        keys: u64,
        /// Events drawn.
        events: u64,
    },
    /// One hot key with `hot_events` events plus `singletons` keys seen once.
    HotKey {
        /// Events of the hot key (key 0).
        hot_events: u64,
        /// Keys seen exactly once.
        singletons: u64,
    },
    /// Per-key counts from a CSV file with header `key,count`.
    Csv {
        /// Path, relative to the scenario file.
        path: String,
    },
}

fn default_min() -> u64 {
    10
}

/// Exact per-key counts (when the shape fixes them) or the sampling recipe.
#[derive(Debug, Clone)]
pub enum KeyCounts {
    /// Every key's count is known before any event is drawn.
    Exact(Vec<u64>),
    /// Each of `events` events is an independent draw of a key from `keys`.
    Sampled {
        /// The key distribution.
        keys: KeyChoice,
        /// Events drawn.
        events: u64,
    },
}

/// A ready-to-stream workload.
#[derive(Debug, Clone)]
pub struct Workload {
    counts: KeyCounts,
    names: Option<Vec<String>>,
    /// A sampled workload's conditional probabilities, built on first use
    /// (16 bytes a key, after the memory checks).
    split: std::sync::OnceLock<std::sync::Arc<Multinomial>>,
}

/// Facts about a workload's keys, as the report prints them.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct WorkloadSummary {
    /// Keys with at least one event.
    pub keys: u64,
    /// Events in all.
    pub events: u64,
    /// Events of the busiest key.
    pub top_key_events: u64,
    /// Keys with exactly one event.
    pub keys_seen_once: u64,
}

impl WorkloadSummary {
    /// The `workload` object of a report: these facts plus the scenario's
    /// workload definition (`shape`).
    pub fn report_json(&self, shape: &CountWorkload) -> serde_json::Value {
        serde_json::json!({
            "keys": self.keys,
            "events": self.events,
            "top_key_events": self.top_key_events,
            "keys_seen_once": self.keys_seen_once,
            "shape": serde_json::to_value(shape).unwrap_or_default(),
        })
    }

    /// Summary of exact per-key counts.
    pub fn of_counts(counts: &[u64]) -> Self {
        let mut s = WorkloadSummary {
            keys: 0,
            events: 0,
            top_key_events: 0,
            keys_seen_once: 0,
        };
        for &c in counts {
            if c > 0 {
                s.keys += 1;
                s.events += c;
                s.top_key_events = s.top_key_events.max(c);
                s.keys_seen_once += u64::from(c == 1);
            }
        }
        s
    }

    /// The one-line summary printed above a report's table.
    pub fn headline(&self) -> String {
        format!(
            "{} keys, {} events, top key {} events, {} keys seen once",
            self.keys, self.events, self.top_key_events, self.keys_seen_once
        )
    }
}

impl CountWorkload {
    /// Validates and prepares the workload. `scenario` is the scenario file
    /// (for error messages and relative paths); `field` names this workload's
    /// field in it.
    pub fn build(&self, scenario: &Path, field: &str) -> Result<Workload> {
        let err =
            |sub: &str, msg: String| Error::input_at(scenario, format!("field {field}.{sub}"), msg);
        // `value` must be in `1..=max`.
        let check_range = |sub: &str, value: u64, max: u64| -> Result<()> {
            if value == 0 || value > max {
                return Err(err(sub, format!("value {value}: expected 1..={max}")));
            }
            Ok(())
        };
        let check_keys = |keys: u64| check_range("keys", keys, MAX_KEYS);
        let check_events = |events: u64| check_range("events", events, MAX_EVENTS);
        match self {
            CountWorkload::Harmonic { keys, top, min } => {
                check_keys(*keys)?;
                if *top == 0 {
                    return Err(err(
                        "top",
                        "value 0: expected at least 1 event for the top key".into(),
                    ));
                }
                let counts: Vec<u64> = (0..*keys).map(|i| (top / (i + 1)).max(*min)).collect();
                let total = counts.iter().fold(0u64, |a, &c| a.saturating_add(c));
                if total > MAX_EVENTS {
                    return Err(err(
                        "top",
                        format!("{total} events in all: expected at most {MAX_EVENTS}"),
                    ));
                }
                // Every key gets at least `min`: above `top`, the top key
                // is not the busiest and `top` means nothing.
                if min > top {
                    return Err(err(
                        "min",
                        format!(
                            "value {min}: expected at most top ({top}), the busiest key's events"
                        ),
                    ));
                }
                Ok(Workload::from_counts(counts))
            }
            CountWorkload::Zipf { keys, events, s } => {
                check_keys(*keys)?;
                check_events(*events)?;
                if !(0.0..=MAX_ZIPF_S).contains(s) {
                    return Err(err(
                        "s",
                        format!(
                            "value {}: expected a finite exponent >= 0 and <= {MAX_ZIPF_S}",
                            crate::units::shown(*s)
                        ),
                    ));
                }
                Ok(Workload::sampled(
                    KeyChoice::Zipf { keys: *keys, s: *s },
                    *events,
                ))
            }
            CountWorkload::Uniform { keys, events } => {
                check_keys(*keys)?;
                check_events(*events)?;
                Ok(Workload::sampled(
                    KeyChoice::Uniform { keys: *keys },
                    *events,
                ))
            }
            CountWorkload::HotKey {
                hot_events,
                singletons,
            } => {
                if *singletons >= MAX_KEYS {
                    return Err(err(
                        "singletons",
                        format!("value {singletons}: expected < {MAX_KEYS}"),
                    ));
                }
                check_range("hot_events", *hot_events, MAX_EVENTS)?;
                let mut counts = vec![1u64; *singletons as usize + 1];
                counts[0] = *hot_events;
                Ok(Workload::from_counts(counts))
            }
            CountWorkload::Csv { path } => {
                let file = scenario.parent().unwrap_or(Path::new(".")).join(path);
                read_counts_csv(&file)
            }
        }
    }
}

/// Reads `key,count` lines (with that header) into a workload.
pub fn read_counts_csv(file: &Path) -> Result<Workload> {
    let f = std::fs::File::open(file).map_err(|e| Error::io(file, e))?;
    let mut reader = csv::ReaderBuilder::new().has_headers(true).from_reader(
        crate::replay::csvio::LineBounded::new(std::io::BufReader::new(f)),
    );
    let headers = reader
        .headers()
        .map_err(|e| Error::input_at(file, "line 1", e))?
        .clone();
    if headers.len() != 2 || &headers[0] != "key" || &headers[1] != "count" {
        return Err(Error::input_at(
            file,
            "line 1",
            format!(
                "header {:?}: expected `key,count`",
                headers.iter().collect::<Vec<_>>().join(",")
            ),
        ));
    }
    let mut names = Vec::new();
    let mut counts = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut total = 0u64;
    for (i, record) in reader.records().enumerate() {
        let line = i + 2;
        let at_line = |msg: String| Error::input_at(file, format!("line {line}"), msg);
        let record = record.map_err(|e| Error::input_at(file, format!("line {line}"), e))?;
        if record.len() != 2 {
            let msg = format!("{} fields: expected 2 (key,count)", record.len());
            return Err(at_line(msg));
        }
        let key = record[0].to_string();
        let count: u64 = record[1].trim().parse().map_err(|_| {
            at_line(format!(
                "count {:?}: expected a whole number >= 0",
                &record[1]
            ))
        })?;
        if !seen.insert(key.clone()) {
            return Err(at_line(format!("key {key:?} appears twice")));
        }
        total = total.saturating_add(count);
        if total > MAX_EVENTS || names.len() as u64 >= MAX_KEYS {
            let msg = format!("too large: at most {MAX_KEYS} keys and {MAX_EVENTS} events");
            return Err(at_line(msg));
        }
        names.push(key);
        counts.push(count);
    }
    if total == 0 {
        return Err(Error::input_at(
            file,
            "file",
            "no events: expected at least one key with count > 0",
        ));
    }
    Ok(Workload::from_named_counts(names, counts))
}

impl Workload {
    /// A workload of named keys with exact counts (distinct names), ranked by
    /// count (descending), name as the tie-break, so key 0 is the heaviest as
    /// for the generated shapes; keys are hashed by their names.
    pub fn from_named_counts(names: Vec<String>, counts: Vec<u64>) -> Self {
        let mut order: Vec<usize> = (0..names.len().min(counts.len())).collect();
        order.sort_by(|&a, &b| {
            counts[b]
                .cmp(&counts[a])
                .then_with(|| names[a].cmp(&names[b]))
        });
        let ranked_names = order.iter().map(|&i| names[i].clone()).collect();
        let ranked = order.iter().map(|&i| counts[i]).collect();
        Workload {
            counts: KeyCounts::Exact(ranked),
            names: Some(ranked_names),
            split: Default::default(),
        }
    }

    /// A workload with the given exact per-key counts.
    pub fn from_counts(counts: Vec<u64>) -> Self {
        Self {
            counts: KeyCounts::Exact(counts),
            names: None,
            split: Default::default(),
        }
    }

    /// A workload of `events` independent draws from `keys`.
    fn sampled(keys: KeyChoice, events: u64) -> Self {
        Self {
            counts: KeyCounts::Sampled { keys, events },
            names: None,
            split: Default::default(),
        }
    }

    /// The number of key ids (some may get no event in a sampled workload).
    pub fn key_space(&self) -> usize {
        match &self.counts {
            KeyCounts::Exact(c) => c.len(),
            KeyCounts::Sampled { keys, .. } => keys.keys() as usize,
        }
    }

    /// Events per run (fixed for every shape).
    pub fn events(&self) -> u64 {
        match &self.counts {
            KeyCounts::Exact(c) => c.iter().sum(),
            KeyCounts::Sampled { events, .. } => *events,
        }
    }

    /// Exact counts, when the shape fixes them before drawing.
    pub fn exact_counts(&self) -> Option<&[u64]> {
        match &self.counts {
            KeyCounts::Exact(c) => Some(c),
            _ => None,
        }
    }

    /// The key's text: its name from a trace or counts file, else its id in
    /// decimal (a numbered key has no other text; a sketch hashes its id's
    /// eight little-endian bytes, [`Workload::key_bytes`]).
    pub fn key_text(&self, id: usize) -> Cow<'_, str> {
        match self.names.as_ref().and_then(|n| n.get(id)) {
            Some(name) => Cow::Borrowed(name.as_str()),
            None => Cow::Owned(id.to_string()),
        }
    }

    /// The bytes a sketch hashes for key `id`.
    pub fn key_bytes(&self, id: usize) -> Cow<'_, [u8]> {
        match self.names.as_ref().and_then(|n| n.get(id)) {
            Some(name) => Cow::Borrowed(name.as_bytes()),
            None => Cow::Owned((id as u64).to_le_bytes().to_vec()),
        }
    }

    /// `f` of the bytes a sketch hashes for key `id` ([`Workload::key_bytes`]
    /// without an allocation for numbered keys).
    #[inline]
    pub fn with_key<R>(&self, id: usize, f: impl FnOnce(&[u8]) -> R) -> R {
        match self.names.as_ref().and_then(|n| n.get(id)) {
            Some(name) => f(name.as_bytes()),
            None => f(&(id as u64).to_le_bytes()),
        }
    }

    /// The display name of key `id`.
    pub fn key_name(&self, id: usize) -> String {
        match self.names.as_ref().and_then(|n| n.get(id)) {
            Some(name) => name.clone(),
            None => format!("key{id}"),
        }
    }

    /// Every key id's event count in the run seeded by `seed`: the exact
    /// counts, or for a sampled workload its multinomial counts drawn
    /// directly (conditional binomials, O(keys): see [`super::shuffle`]). The
    /// counts of the stream [`Workload::for_each_event`] gives for the same
    /// seed, without drawing it.
    pub fn counts(&self, seed: u64) -> Cow<'_, [u64]> {
        match &self.counts {
            KeyCounts::Exact(c) => Cow::Borrowed(c),
            KeyCounts::Sampled { .. } => Cow::Owned(self.draw_counts(&mut sim_rng(seed))),
        }
    }

    /// A sampled workload's counts from `rng` (the exact counts as they are).
    fn draw_counts(&self, rng: &mut SimRng) -> Vec<u64> {
        match &self.counts {
            KeyCounts::Exact(c) => c.clone(),
            KeyCounts::Sampled { keys, events } => {
                let split = self.split.get_or_init(|| {
                    let n = keys.keys() as usize;
                    std::sync::Arc::new(match keys {
                        KeyChoice::Uniform { .. } => Multinomial::new(n, |_| 1.0),
                        // rank i + 1 has weight (i+1)^-s: the pmf the Zipf sampler draws from
                        KeyChoice::Zipf { s, .. } => {
                            Multinomial::new(n, |i| libm::pow((i + 1) as f64, -*s))
                        }
                    })
                });
                split.draw(rng, *events)
            }
        }
    }

    /// Streams every event (a key id) in the order seeded by `seed`, chunk
    /// by chunk (see [`super::shuffle::for_each_chunk`]): the run's counts
    /// ([`Workload::counts`]) in a uniformly random order. For a sampled
    /// workload that is exactly the distribution of `events` i.i.d. draws.
    /// Memory is O(keys + chunk), never O(events).
    pub fn for_each_chunk(&self, seed: u64, f: impl FnMut(&[u32])) {
        let mut rng: SimRng = sim_rng(seed);
        match &self.counts {
            KeyCounts::Exact(c) => for_each_chunk(c, &mut rng, f),
            KeyCounts::Sampled { .. } => {
                let counts = self.draw_counts(&mut rng);
                for_each_chunk(&counts, &mut rng, f)
            }
        }
    }

    /// Streams every event (a key id) in the order seeded by `seed` (one
    /// call per event of [`Workload::for_each_chunk`]).
    pub fn for_each_event(&self, seed: u64, mut f: impl FnMut(u32)) {
        self.for_each_chunk(seed, |chunk| chunk.iter().for_each(|&k| f(k)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn build(w: CountWorkload) -> Workload {
        w.build(Path::new("s.json"), "workload").unwrap()
    }

    #[test]
    fn harmonic_counts_are_pinned() {
        let w = build(CountWorkload::Harmonic {
            keys: 10_000,
            top: 100_000,
            min: 10,
        });
        let s = WorkloadSummary::of_counts(w.exact_counts().unwrap());
        assert_eq!(s.events, 973_855);
        assert_eq!(s.top_key_events, 100_000);
        assert_eq!(s.keys, 10_000);
        assert_eq!(s.keys_seen_once, 0);
    }

    #[test]
    fn shuffled_stream_has_exact_counts_and_seeded_order() {
        let w = build(CountWorkload::Harmonic {
            keys: 50,
            top: 200,
            min: 1,
        });
        let mut counts = vec![0u64; 50];
        let mut order = Vec::new();
        w.for_each_event(7, |k| {
            counts[k as usize] += 1;
            order.push(k)
        });
        assert_eq!(counts, w.exact_counts().unwrap());
        let mut again = Vec::new();
        w.for_each_event(7, |k| again.push(k));
        assert_eq!(order, again);
        let mut other = Vec::new();
        w.for_each_event(8, |k| other.push(k));
        assert_ne!(order, other);
        // pinned: the first draws of seed 7 (catches an rng/rand upgrade)
        assert_eq!(&order[..6], &PINNED_FIRST_DRAWS);
    }

    // The chunked Fisher-Yates shuffle (workload::shuffle); the Fenwick draw
    // it replaced gave [0, 0, 12, 13, 7, 2].
    const PINNED_FIRST_DRAWS: [u32; 6] = [0, 0, 16, 7, 34, 5];

    #[test]
    fn zipf_is_skewed_and_pinned() {
        let w = build(CountWorkload::Zipf {
            keys: 1000,
            events: 20_000,
            s: 1.1,
        });
        let mut counts = vec![0u64; 1000];
        w.for_each_event(3, |k| counts[k as usize] += 1);
        assert_eq!(counts.iter().sum::<u64>(), 20_000);
        assert!(
            counts[0] > 5 * counts[9],
            "rank 1 must dominate rank 10: {} vs {}",
            counts[0],
            counts[9]
        );
        assert_eq!(counts[0], PINNED_ZIPF_TOP);
    }

    // Multinomial counts by conditional binomials (workload::shuffle); i.i.d.
    // draws with the rejection-inversion sampler gave 3535, rand_distr's 3528.
    // Expected 20,000/H(1000, 1.1) ≈ 3,589, sd ≈ 54.
    const PINNED_ZIPF_TOP: u64 = 3634;

    #[test]
    fn hot_key_and_uniform() {
        let w = build(CountWorkload::HotKey {
            hot_events: 1000,
            singletons: 99,
        });
        let s = WorkloadSummary::of_counts(w.exact_counts().unwrap());
        assert_eq!((s.keys, s.events, s.keys_seen_once), (100, 1099, 99));
        let w = build(CountWorkload::Uniform {
            keys: 10,
            events: 1000,
        });
        let mut counts = [0u64; 10];
        w.for_each_event(1, |k| counts[k as usize] += 1);
        assert!(counts.iter().all(|&c| c > 50));
    }

    #[test]
    fn bad_parameters_are_named() {
        let e = CountWorkload::Zipf {
            keys: 10,
            events: 10,
            s: f64::NAN,
        }
        .build(Path::new("s.json"), "workload")
        .unwrap_err();
        assert_eq!(
            e.message(),
            "s.json: field workload.s: value NaN: expected a finite exponent >= 0 and <= 100"
        );
        let e = CountWorkload::Harmonic {
            keys: 0,
            top: 1,
            min: 1,
        }
        .build(Path::new("s.json"), "workload")
        .unwrap_err();
        assert!(e.message().contains("field workload.keys: value 0"), "{e}");
        // A floor above the top key's count: once taken silently (every
        // key got 200 events, the "top" key too).
        let e = CountWorkload::Harmonic {
            keys: 10,
            top: 100,
            min: 200,
        }
        .build(Path::new("s.json"), "workload")
        .unwrap_err();
        assert_eq!(
            e.message(),
            "s.json: field workload.min: value 200: expected at most top (100), the busiest key's events"
        );
    }

    #[test]
    fn csv_counts_are_read_and_ranked() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.csv");
        std::fs::write(&p, "key,count\n/a,3\n/b,10\n").unwrap();
        let w = read_counts_csv(&p).unwrap();
        assert_eq!(w.exact_counts().unwrap(), &[10, 3]);
        assert_eq!(w.key_name(0), "/b");
        assert_eq!(&*w.key_bytes(1), b"/a");
        std::fs::write(&p, "key,count\n/a,x\n").unwrap();
        let e = read_counts_csv(&p).unwrap_err();
        assert!(
            e.message()
                .ends_with("line 2: count \"x\": expected a whole number >= 0"),
            "{e}"
        );
    }
}
