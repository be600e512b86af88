//! Exact per-key counters behind the [`FrequencyEstimator`] interface:
//! `Rate`'s collision-free backend in the decision lab, indexed by dense
//! key id (the key bytes are the id's 4 little-endian bytes) so that a
//! counter costs a vector slot, not a hash-map entry.

use crate::model::estimator::{Fault, FrequencyEstimator};

/// Bytes per key of an exact counter (8-byte key id + 8-byte count).
pub const EXACT_COUNTER_BYTES: u64 = 16;

/// Exact per-key counts indexed by dense key id.
///
/// # Examples
/// ```
/// use ratelab::model::estimator::FrequencyEstimator;
/// use ratelab::model::exact::DenseExact;
/// let mut c = DenseExact::default();
/// c.incr(&7u32.to_le_bytes(), 3).unwrap();
/// assert_eq!(c.get(&7u32.to_le_bytes()), 3);
/// assert_eq!(c.get(&8u32.to_le_bytes()), 0);
/// assert_eq!(c.live_keys(), 1);
/// c.reset();
/// assert_eq!(c.live_keys(), 0);
/// ```
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
