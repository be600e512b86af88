//! Which shard owns what: [`Shard`] `i/n`, the key split ([`key_shard`])
//! and `--shard` parsing. A leaf of its own so that the labs that split
//! their work (the decision lab, `size --limit`) can name a shard without
//! importing the shard files' writer and merger, which import them.

/// Shard `index` of `count` (0-based).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// This shard, `0..count`.
    pub index: u32,
    /// How many shards the sweep is split into.
    pub count: u32,
}

impl Shard {
    /// Whether sweep cell `k` belongs to this shard (`k mod count == index`).
    pub fn owns(&self, cell: usize) -> bool {
        cell % self.count as usize == self.index as usize
    }

    /// Whether key `key` (a trace's key, or a workload key's id in
    /// decimal) belongs to this shard: [`key_shard`].
    pub fn owns_key(&self, key: &str) -> bool {
        key_shard(key, self.count) == self.index
    }

    /// `<name>.shard-i-of-n.json`.
    pub fn file_name(&self, scenario: &str) -> String {
        format!("{scenario}.shard-{}-of-{}.json", self.index, self.count)
    }
}

/// Seed of the key split's hash: the bytes of "ratelab" and a zero.
pub const KEY_SPLIT_SEED: u64 = 0x7261_7465_6c61_6200;

/// The shard of `count` a key belongs to: xxh3-64 of the key's bytes with
/// [`KEY_SPLIT_SEED`], modulo `count`. Portable (the same on every machine
/// and build) and the same for every scenario, so logs pre-split by this
/// rule land where `--shard` expects them.
///
/// # Examples
/// ```
/// use ratelab::lab::shard::key_shard;
/// assert_eq!(key_shard("10.0.0.1", 1), 0);
/// assert!(key_shard("10.0.0.1", 4) < 4);
/// ```
pub fn key_shard(key: &str, count: u32) -> u32 {
    let h = xxhash_rust::xxh3::xxh3_64_with_seed(key.as_bytes(), KEY_SPLIT_SEED);
    (h % u64::from(count.max(1))) as u32
}

/// Parses `i/n` (0 <= i < n).
pub fn parse_shard(s: &str) -> std::result::Result<Shard, crate::lab::error::LabError> {
    let err = || crate::lab::error::LabError::Shard {
        text: s.to_string(),
    };
    let (i, n) = s.split_once('/').ok_or_else(err)?;
    let index: u32 = i.trim().parse().map_err(|_| err())?;
    let count: u32 = n.trim().parse().map_err(|_| err())?;
    if count == 0 || index >= count {
        return Err(err());
    }
    Ok(Shard { index, count })
}
